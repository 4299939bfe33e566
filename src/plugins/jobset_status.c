/*
 * jobset_status.c - the JobSet plugin's PostExecution points: the
 * TrainJob's status read back from its JobSet (upstream v2.3.0 jobset.go
 * Status).
 *
 * TrainJobStatus copies status.replicatedJobsStatus into the TrainJob's
 * jobsStatus, one entry per replicated job with its ready, succeeded,
 * failed, active and suspended counts (a JobSet without any leaves no
 * jobsStatus, nor does one that counts no Job yet while the TrainJob has no
 * jobsStatus: see set_jobs_status). TerminalCondition turns the JobSet's
 * Completed=True condition into the TrainJob's Complete, or its Failed=True
 * into Failed, keeping reason, message, lastTransitionTime and
 * observedGeneration as the JobSet wrote them (upstream copies the whole
 * condition and renames it). Upstream sets both when both are true; a
 * JobSet never has both, and we report Complete first, as upstream sets it
 * first.
 *
 * A JobSet that is gone is no news for a TrainJob that has finished (its
 * TTL may have removed it). For one still running, upstream's lookup fails
 * and the reconcile is retried; TrainJobStatus returns KFT_ENOTFOUND then,
 * with the API server's wording, and leaves the status alone.
 */
#include <string.h>

#include "kftrainer/constants.h"
#include "plugins/builtin.h"
#include "plugins/jobset_internal.h"
#include "util/json.h"

#define JOBSET_COMPLETED  "Completed"
#define JOBSET_FAILED     "Failed"
#define TRAINJOB_COMPLETE "Complete"
#define TRAINJOB_FAILED   "Failed"
#define CONDITION_TRUE    "True"

static int condition_true(const json_t *conditions, const char *type)
{
	const char *s = json_string_value(
	        json_object_get(kft_json_find(conditions, "type", type), "status"));
	return s && strcmp(s, CONDITION_TRUE) == 0;
}

/* Complete=True or Failed=True on the TrainJob itself. */
static int trainjob_finished(const kft_trainjob *job)
{
	const json_t *conds = json_object_get(json_object_get(job->obj, "status"), "conditions");
	return condition_true(conds, TRAINJOB_COMPLETE) || condition_true(conds, TRAINJOB_FAILED);
}

static json_int_t count_of(const json_t *rs, const char *key)
{
	const json_t *v = json_object_get(rs, key);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* A replicated job's counts, in the order jobsStatus lists them. */
static const char *const job_counts[] = {"ready", "succeeded", "failed", "active", "suspended"};
#define N_COUNTS (sizeof(job_counts) / sizeof(job_counts[0]))

/* One jobsStatus entry; the JobSet's counts are plain integers, so each
 * is present (0 when the JobSet omits it). */
static json_t *job_status(const json_t *rs)
{
	json_t *js = json_object();
	const char *name = json_string_value(json_object_get(rs, "name"));
	if (js && name && *name && json_object_set_new(js, "name", json_string(name)) != 0) {
		json_decref(js);
		return NULL;
	}
	for (size_t i = 0; js && i < N_COUNTS; i++) {
		if (json_object_set_new(js, job_counts[i],
		                        json_integer(count_of(rs, job_counts[i]))) != 0) {
			json_decref(js);
			return NULL;
		}
	}
	return js;
}

/* Whether any of the five counts of any entry is not zero. */
static int counts_any(const json_t *list)
{
	size_t i;
	const json_t *rs;
	json_array_foreach(list, i, rs)
	{
		for (size_t k = 0; k < N_COUNTS; k++)
			if (count_of(rs, job_counts[k]) != 0)
				return 1;
	}
	return 0;
}

static int set_jobs_status(json_t *status, const json_t *jobset, kft_error *err)
{
	const json_t *list =
	        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus");
	/* The JobSet controller's first status is written before it counts the
	 * Jobs it has just created: every count zero. A TrainJob without
	 * jobsStatus keeps none until a count shows: the zeros say nothing its
	 * absence does not, and copying them costs a status write (and a watch
	 * event to every watcher) per TrainJob, with the counted status right
	 * behind. Upstream copies them whenever its reconcile falls between the
	 * two statuses. Later zeros (a restart's new Jobs) are copied as ever. */
	if (!json_object_get(status, "jobsStatus") && !counts_any(list))
		return 0;
	json_t *out = json_array();
	size_t i;
	const json_t *rs;
	json_array_foreach(list, i, rs)
	{
		json_t *one = out ? job_status(rs) : NULL;
		if (!one || json_array_append_new(out, one) != 0) {
			json_decref(out);
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
	}
	if (!out)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (json_array_size(out) == 0) {
		json_decref(out);
		json_object_del(status, "jobsStatus");
		return 0;
	}
	return json_object_set_new(status, "jobsStatus", out) == 0
	               ? 0
	               : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

int kft_jobset_status(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t *status,
                      kft_error *err)
{
	if (!job)
		return 0;
	json_t *jobset = kft_jobset_get(ctx, job);
	if (!jobset)
		return trainjob_finished(job)
		               ? 0
		               : kft_error_set(err, KFT_ENOTFOUND,
		                               "jobsets.jobset.x-k8s.io \"%s\" not found",
		                               job->name);
	int rc = set_jobs_status(status, jobset, err);
	json_decref(jobset);
	return rc;
}

/* The JobSet's condition renamed `type`, its fields in metav1.Condition's
 * order. */
static json_t *renamed_condition(const json_t *c, const char *type)
{
	static const char *const rest[] = {"status", "observedGeneration", "lastTransitionTime",
	                                   "reason", "message"};
	json_t *out = json_pack("{s:s}", "type", type);
	for (size_t i = 0; out && i < 5; i++) {
		const json_t *v = json_object_get(c, rest[i]);
		if (v && json_object_set(out, rest[i], (json_t *)v) != 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

int kft_jobset_terminal_condition(const kft_plugin_ctx *ctx, const kft_trainjob *job,
                                  json_t **condition, kft_error *err)
{
	*condition = NULL;
	if (!job)
		return 0;
	json_t *jobset = kft_jobset_get(ctx, job);
	const json_t *conds = json_object_get(json_object_get(jobset, "status"), "conditions");
	const char *type = condition_true(conds, JOBSET_COMPLETED) ? TRAINJOB_COMPLETE
	                   : condition_true(conds, JOBSET_FAILED)  ? TRAINJOB_FAILED
	                                                           : NULL;
	const json_t *from =
	        !type ? NULL
	              : kft_json_find(conds, "type",
	                              strcmp(type, TRAINJOB_COMPLETE) == 0 ? JOBSET_COMPLETED
	                                                                   : JOBSET_FAILED);
	int rc = 0;
	if (from && !(*condition = renamed_condition(from, type)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(jobset);
	return rc;
}
