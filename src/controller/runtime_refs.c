/*
 * runtime_refs.c - how TrainJobs, runtimes and the objects around them
 * refer to each other, for the watches that requeue one kind when another
 * changes, and the resource-in-use finalizer of kftrainer's
 * RuntimeInUseFinalizer gate (Trainer v2.2's behaviour).
 *
 * These are pure functions of JSON objects so that they can be tested
 * without an API server; manager.c wires them into informer indexes and
 * handlers, reconcilers.c into the runtime reconcile.
 */
#include <stdio.h>
#include <string.h>

#include "cm_internal.h"
#include "kftrainer/constants.h"

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(json_object_get(obj, a), b);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int kft_cm_trainjob_runtime_key(const json_t *job, char *buf, size_t size)
{
	const json_t *ref = json_object_get(json_object_get(job, "spec"), "runtimeRef");
	const json_t *g = json_object_get(ref, "apiGroup"), *k = json_object_get(ref, "kind");
	const json_t *n = json_object_get(ref, "name");
	/* Upstream compares pointers to values: an unset apiGroup or kind
	 * matches neither kind (the CRD defaults both, so that is rare). */
	if (!json_is_string(g) || strcmp(json_string_value(g), KFT_GROUP) != 0 ||
	    !json_is_string(k) || !json_is_string(n) || !*json_string_value(n))
		return KFT_ENOTFOUND;
	const char *kind = json_string_value(k), *name = json_string_value(n);
	const char *ns = str_at(job, "metadata", "namespace");
	int len;
	if (strcmp(kind, KFT_KIND_RUNTIME) == 0)
		len = snprintf(buf, size, "%s/%s/%s", KFT_KIND_RUNTIME, ns ? ns : "", name);
	else if (strcmp(kind, KFT_KIND_CLUSTER_RUNTIME) == 0)
		len = snprintf(buf, size, "%s/%s", KFT_KIND_CLUSTER_RUNTIME, name);
	else
		return KFT_ENOTFOUND;
	return len < 0 || (size_t)len >= size ? KFT_ELIMIT : 0;
}

int kft_cm_trainjob_suspended(const json_t *job)
{
	return json_is_true(json_object_get(json_object_get(job, "spec"), "suspend"));
}

static int has_string(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	}
	return 0;
}

/* spec.template.spec.replicatedJobs[].template.spec.template.spec.runtimeClassName */
json_t *kft_cm_runtime_class_names(const json_t *runtime)
{
	json_t *out = json_array();
	const json_t *tmpl = json_object_get(json_object_get(runtime, "spec"), "template");
	const json_t *rjobs = json_object_get(json_object_get(tmpl, "spec"), "replicatedJobs");
	size_t i;
	const json_t *rj;
	json_array_foreach(rjobs, i, rj)
	{
		const json_t *job_spec = json_object_get(json_object_get(rj, "template"), "spec");
		const json_t *pod = json_object_get(json_object_get(job_spec, "template"), "spec");
		const json_t *rc = json_object_get(pod, "runtimeClassName");
		if (!out || !json_is_string(rc) || has_string(out, json_string_value(rc)))
			continue;
		if (json_array_append(out, (json_t *)rc) != 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static int being_deleted(const json_t *obj)
{
	const json_t *ts = json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp");
	return json_is_string(ts) && *json_string_value(ts);
}

/* metadata.finalizers with ours added (add) or removed (!add). */
static json_t *finalizers_with(const json_t *fins, int add)
{
	json_t *out = json_array();
	size_t i;
	const json_t *f;
	json_array_foreach(fins, i, f)
	{
		if (!out)
			break;
		if (json_is_string(f) &&
		    strcmp(json_string_value(f), KFT_CM_RESOURCE_IN_USE_FINALIZER) == 0)
			continue;
		if (json_array_append(out, (json_t *)f) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	if (out && add &&
	    json_array_append_new(out, json_string(KFT_CM_RESOURCE_IN_USE_FINALIZER))) {
		json_decref(out);
		out = NULL;
	}
	return out;
}

int kft_cm_runtime_in_use_patch(const json_t *runtime, size_t in_use, json_t **patch,
                                kft_error *err)
{
	*patch = NULL;
	const json_t *fins = json_object_get(json_object_get(runtime, "metadata"), "finalizers");
	int has = has_string(fins, KFT_CM_RESOURCE_IN_USE_FINALIZER);
	int deleting = being_deleted(runtime);
	int add = !has && in_use > 0 && !deleting;
	int remove = has && deleting && in_use == 0;
	if (!add && !remove)
		return 0;
	json_t *list = finalizers_with(fins, add);
	if (!list)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	/* As client.MergeFrom writes it: an emptied list is null (omitempty). */
	if (json_array_size(list) == 0) {
		json_decref(list);
		list = json_null();
	}
	*patch = json_pack("{s:{s:o}}", "metadata", "finalizers", list);
	return *patch ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}
