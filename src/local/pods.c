/*
 * pods.c - a local job's pods as the API server would list them.
 *
 * On a cluster, `kubectl get pods -l jobset.sigs.k8s.io/jobset-name=NAME`
 * and the Kubeflow SDK's get_job (its steps, their status, device and pod
 * name) read Pods. Locally a pod is a store record (step, index, state,
 * restarts, exit) beside the JobSet it comes from, so the Pod is put
 * together from both: metadata and spec as the Job controller would create
 * them from the rendered template (podspec.h), status from the record as the
 * kubelet would report it for the one container the engine runs.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/quantity.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "local/podspec.h"
#include "util/json.h"

static int completions_of(const json_t *rjob)
{
	kft_rjob_counts c;
	kft_rjob_counts_of(rjob, &c);
	return c.completions < 1 ? 1 : c.completions > 1000000 ? 1000000 : (int)c.completions;
}

/* The kubelet's state of the container: waiting, running or terminated. */
static json_t *container_state(const kft_pod_record *r)
{
	if (strcmp(r->state, "Running") == 0)
		return json_pack("{s:{s:s*}}", "running", "startedAt", r->started);
	if (strcmp(r->state, "Pending") == 0)
		return json_pack("{s:{s:s}}", "waiting", "reason",
		                 r->reason ? r->reason : "ContainerCreating");
	json_t *t = json_pack("{s:i, s:s, s:s*, s:s*, s:s*}", "exitCode", r->exit_code, "reason",
	                      r->reason ? r->reason : r->state, "message", r->message, "startedAt",
	                      r->started, "finishedAt", r->finished);
	if (t && r->signal)
		json_object_set_new(t, "signal", json_integer(r->signal));
	return json_pack("{s:o*}", "terminated", t);
}

static json_t *pod_status(const kft_pod_record *r, const char *container, const json_t *spec)
{
	bool running = strcmp(r->state, "Running") == 0;
	const char *image = NULL;
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(spec, "containers"), i, c)
	{
		if (container &&
		    strcmp(json_string_value(json_object_get(c, "name")) ?: "", container) == 0)
			image = json_string_value(json_object_get(c, "image"));
	}
	json_t *cs = json_pack("{s:s*, s:s*, s:b, s:b, s:i, s:o*}", "name", container, "image",
	                       image, "ready", running, "started", running, "restartCount",
	                       r->restarts, "state", container_state(r));
	return json_pack("{s:s, s:s*, s:s, s:s, s:[o*]}", "phase", r->state, "startTime",
	                 r->started, "hostIP", "127.0.0.1", "podIP", "127.0.0.1",
	                 "containerStatuses", cs);
}

/* The API server hands out a Pod's quantities in canonical string form
 * ("2", "500m", "1Gi") whatever the manifest said (2, 0.5): so does this. */
static void canonical_quantities(json_t *podspec)
{
	static const char *const lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		const json_t *c;
		size_t i;
		json_array_foreach(json_object_get(podspec, lists[l]), i, c)
		{
			static const char *const kinds[] = {"limits", "requests"};
			for (size_t k = 0; k < 2; k++) {
				/* best effort: a value that is no quantity stays as given */
				kft_quantity_canonical_list(
				        json_object_get(json_object_get(c, "resources"), kinds[k]),
				        NULL);
			}
		}
	}
}

static json_t *pod_of(const json_t *jobset, const kft_pod_record *r, int restart_attempt,
                      kft_error *err)
{
	const json_t *rjob =
	        kft_json_find(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"),
	                      "name", r->step);
	if (!rjob)
		return NULL; /* a record of a replicated job the JobSet no longer has */
	int c = completions_of(rjob);
	json_t *pod = NULL;
	if (kft_pod_object(jobset, r->step, r->index / c, r->index % c, restart_attempt, &pod,
	                   err) != 0)
		return NULL;
	const char *container = kft_pod_main_container(rjob, r->step);
	json_t *meta = json_object_get(pod, "metadata");
	canonical_quantities(json_object_get(pod, "spec"));
	if (r->started)
		json_object_set_new(meta, "creationTimestamp", json_string(r->started));
	json_t *status = pod_status(r, container, json_object_get(pod, "spec"));
	if (!status || json_object_set_new(pod, "status", status) != 0) {
		json_decref(pod);
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	return pod;
}

static const json_t *stored_jobset(const json_t *objects)
{
	const json_t *o;
	size_t i;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (kind && strcmp(kind, "JobSet") == 0)
			return o;
	}
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	const char *x = json_string_value(
	        json_object_get(json_object_get(*(json_t *const *)a, "metadata"), "name"));
	const char *y = json_string_value(
	        json_object_get(json_object_get(*(json_t *const *)b, "metadata"), "name"));
	return strcmp(x ? x : "", y ? y : "");
}

/* items in metadata.name order, as the API server lists objects (by key):
 * the SDK's steps come out in the same order locally as on a cluster. */
static void sort_by_name(json_t *items)
{
	size_t n = json_array_size(items);
	json_t **v = n ? malloc(n * sizeof(*v)) : NULL;
	if (!v)
		return; /* unsorted, still whole */
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(items, i));
	qsort(v, n, sizeof(*v), by_name);
	json_array_clear(items);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(items, v[i]);
	free(v);
}

int kft_local_pods(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	json_t *objects = NULL, *job = NULL, *items = json_array();
	*out = NULL;
	int rc = items ? kft_local_get(l, ns, name, &job, err)
	               : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_store_job_objects(kft_local_store(l), ns, name, &objects, err);
	if (rc == 0)
		rc = kft_store_pods(kft_local_store(l), ns, name, &recs, &n, err);
	const json_t *jobset = stored_jobset(objects);
	for (size_t i = 0; rc == 0 && jobset && i < n; i++) {
		kft_error perr = {0};
		json_t *pod = pod_of(jobset, &recs[i], 0, &perr);
		if (pod)
			json_array_append_new(items, pod);
		else if (perr.code == KFT_ENOMEM)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (rc == 0) {
		sort_by_name(items);
		*out = json_pack("{s:s, s:s, s:{}, s:O}", "apiVersion", "v1", "kind", "PodList",
		                 "metadata", "items", items);
		if (!*out)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	kft_pod_records_free(recs, n);
	json_decref(objects);
	json_decref(job);
	json_decref(items);
	return rc;
}

/* The replicated job of the trainer: labelled so, else named "node". */
static const json_t *trainer_rjob(const json_t *jobset, const char *want)
{
	const json_t *rj, *named = NULL;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i,
	                   rj)
	{
		const char *name = json_string_value(json_object_get(rj, "name"));
		const char *anc = json_string_value(json_object_get(
		        json_object_get(
		                json_object_get(json_object_get(rj, "template"), "metadata"),
		                "labels"),
		        KFT_LABEL_ANCESTOR));
		if (want ? name && strcmp(name, want) == 0
		         : anc && strcmp(anc, KFT_ANCESTOR_TRAINER) == 0)
			return rj;
		if (name && strcmp(name, KFT_CONTAINER_NODE) == 0)
			named = rj;
	}
	return want ? NULL : named;
}

static int mapped(const kft_podspec *spec, const char *path, char **out, kft_error *err)
{
	const kft_mount *best = NULL;
	size_t best_len = 0;
	char listed[1024] = "";
	size_t used = 0;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const char *mp = spec->mounts[i].mount_path;
		size_t n = strlen(mp);
		if (used < sizeof(listed))
			used += (size_t)snprintf(listed + used, sizeof(listed) - used, "%s%s",
			                         used ? ", " : "", mp);
		if (n > best_len && strncmp(path, mp, n) == 0 && (!path[n] || path[n] == '/')) {
			best = &spec->mounts[i];
			best_len = n;
		}
	}
	if (!best)
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "%s is on no volume of pod %s (its mount paths: %s)", path,
		                     spec->pod_name, used ? listed : "none");
	return asprintf(out, "%s%s", best->host_path, path + best_len) < 0
	               ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	               : 0;
}

int kft_local_host_path(kft_local *l, const char *ns, const char *name, const char *rjob,
                        const char *path, char **out, kft_error *err)
{
	json_t *objects = NULL, *job = NULL;
	*out = NULL;
	if (!path || path[0] != '/')
		return kft_error_set(err, KFT_EINVAL, "%s: want an absolute path",
		                     path ? path : "");
	int rc = kft_local_get(l, ns, name, &job, err);
	if (rc == 0)
		rc = kft_store_job_objects(kft_local_store(l), ns, name, &objects, err);
	const json_t *jobset = stored_jobset(objects);
	const json_t *rj = jobset ? trainer_rjob(jobset, rjob) : NULL;
	const char *rname = json_string_value(json_object_get(rj, "name"));
	char *dir = kft_local_job_dir(l, ns, name);
	if (rc == 0 && !rname)
		rc = kft_error_set(err, KFT_ENOTFOUND, "TrainJob %s has no replicated job %s", name,
		                   rjob ? rjob : "for the trainer");
	else if (rc == 0 && !dir)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0) {
		kft_podspec spec;
		const kft_podspec_defaults d = {.dry = 1, .view = 1, .native = 1};
		rc = kft_podspec_build_with(jobset, objects, rname, 0, 0,
		                            kft_pod_main_container(rj, rname), dir, &d, &spec, err);
		if (rc == 0)
			rc = mapped(&spec, path, out, err);
		kft_podspec_free(&spec);
	}
	free(dir);
	json_decref(objects);
	json_decref(job);
	return rc;
}
