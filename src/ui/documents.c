/*
 * documents.c - what the two job sources' documents share, so the page
 * sees the same shapes whichever it shows: a jobs-list row's TrainJob
 * columns, each step's commands, and Secrets redacted (see ui_internal.h).
 */
#include <string.h>

#include "ui/ui_internal.h"
#include "util/json.h"

json_t *kft_ui_row(const json_t *job, json_t *cells)
{
	if (!cells)
		return NULL;
	const json_t *meta = json_object_get(job, "metadata");
	const json_t *ts = json_object_get(json_object_get(job, "status"), "trainerStatus");
	const json_t *ref = json_object_get(json_object_get(job, "spec"), "runtimeRef");
	json_object_set(cells, "namespace", json_object_get(meta, "namespace"));
	json_object_set(cells, "name", json_object_get(meta, "name"));
	json_object_set(cells, "created", json_object_get(meta, "creationTimestamp"));
	json_object_set(cells, "runtime", json_object_get(ref, "name"));
	json_object_set(cells, "progress", json_object_get(ts, "progressPercentage"));
	json_object_set(cells, "remaining", json_object_get(ts, "estimatedRemainingSeconds"));
	json_object_set(cells, "reported", json_object_get(ts, "lastUpdatedTime"));
	return cells;
}

/* One step's containers (initContainers, then containers) into out. */
static void step_containers(const json_t *rjob, json_t *out)
{
	const json_t *pod = json_object_get(
	        json_object_get(json_object_get(json_object_get(rjob, "template"), "spec"),
	                        "template"),
	        "spec");
	static const char *const lists[] = {"initContainers", "containers"};
	size_t k;
	const json_t *ct;
	for (size_t li = 0; li < 2; li++)
		json_array_foreach(json_object_get(pod, lists[li]), k, ct)
		{
			json_array_append_new(
			        out, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "step",
			                       json_object_get(rjob, "name"), "container",
			                       json_object_get(ct, "name"), "image",
			                       json_object_get(ct, "image"), "command",
			                       json_object_get(ct, "command"), "args",
			                       json_object_get(ct, "args"), "workingDir",
			                       json_object_get(ct, "workingDir")));
		}
}

json_t *kft_ui_step_commands(const json_t *objects)
{
	json_t *out = json_array();
	const json_t *rjobs =
	        json_object_get(json_object_get(kft_json_find(objects, "kind", "JobSet"), "spec"),
	                        "replicatedJobs");
	size_t i;
	const json_t *r;
	json_array_foreach(rjobs, i, r) step_containers(r, out);
	return out;
}

/* Secrets' values replaced: the page shows that a key exists, never what
 * it holds. kubectl apply keeps a copy of the whole Secret, values
 * included, in an annotation: that goes too. */
void kft_ui_redact(json_t *objects)
{
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (!kind || strcmp(kind, "Secret") != 0)
			continue;
		json_t *ann = json_object_get(json_object_get(o, "metadata"), "annotations");
		if (json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration"))
			json_object_set_new(ann, "kubectl.kubernetes.io/last-applied-configuration",
			                    json_string("<redacted>"));
		static const char *const fields[] = {"data", "stringData"};
		for (size_t f = 0; f < 2; f++) {
			json_t *m = json_object_get(o, fields[f]);
			const char *k;
			json_t *v;
			json_object_foreach(m, k, v)
			        json_object_set_new(m, k, json_string("<redacted>"));
		}
	}
}
