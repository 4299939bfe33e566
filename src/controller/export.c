/*
 * export.c - a completed TrainJob's model export on a cluster: the Job
 * src/track/exportjob.c builds, created once, followed until it ends, its
 * outcome written as the TrainJob's ModelExported condition, and the
 * TrainJob held by a finalizer until the model is out (docs/tracking.md).
 *
 * The Job is looked at with a GET on each reconcile of such a TrainJob
 * (requeued every EXPORT_POLL_MS while it runs) rather than through an
 * informer of every Job in the cluster: only TrainJobs that export have
 * one, for a short while. Deleting a failed export Job is how a user asks
 * for another try.
 */
#include <stdlib.h>
#include <string.h>

#include "controller/cm_internal.h"
#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "track/track.h"
#include "util/rfc3339.h"

#define EXPORT_POLL_MS 10000
#define FIELD_MANAGER  "kftrainer-export"

static const char *meta(const json_t *obj, const char *k)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), k));
}

static bool has_finalizer(const json_t *job)
{
	const json_t *list = json_object_get(json_object_get(job, "metadata"), "finalizers"), *f;
	size_t i;
	json_array_foreach(list, i, f)
	{
		if (json_string_value(f) && strcmp(json_string_value(f), KFT_TRACK_FINALIZER) == 0)
			return true;
	}
	return false;
}

/* Adds or removes our finalizer with a merge patch of the whole list,
 * guarded by the resourceVersion the list was read at. */
static int set_finalizer(kft_cm *cm, const json_t *job, bool on, kft_error *err)
{
	const json_t *list = json_object_get(json_object_get(job, "metadata"), "finalizers"), *f;
	json_t *next = json_array();
	size_t i;
	json_array_foreach(list, i, f)
	{
		if (!json_string_value(f) || strcmp(json_string_value(f), KFT_TRACK_FINALIZER) != 0)
			json_array_append(next, (json_t *)f);
	}
	if (on)
		json_array_append_new(next, json_string(KFT_TRACK_FINALIZER));
	json_t *patch = json_pack("{s:{s:o, s:s}}", "metadata", "finalizers", next,
	                          "resourceVersion", meta(job, "resourceVersion"));
	int rc =
	        patch ? kft_kube_patch(cm->kube, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB),
	                               meta(job, "namespace"), meta(job, "name"), KFT_PATCH_MERGE,
	                               patch, NULL, NULL, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(patch);
	return rc;
}

/* The ModelExported condition, applied to the status alone (the conditions
 * list is keyed by type: nothing else of the status is touched). */
static int set_condition(kft_cm *cm, const json_t *job, const kft_track_export_state *s,
                         kft_error *err)
{
	const json_t *old =
	        kft_condition_find(json_object_get(job, "status"), KFT_TRACK_CONDITION_EXPORTED);
	const char *msg = json_string_value(json_object_get(old, "message"));
	if (old && strcmp(json_string_value(json_object_get(old, "status")), s->status) == 0 &&
	    msg && strcmp(msg, s->message) == 0)
		return 0;
	char now[32];
	kft_rfc3339_now(now);
	json_t *st = json_object();
	int rc = kft_condition_set(st, KFT_TRACK_CONDITION_EXPORTED, s->status, s->reason,
	                           s->message, now, err);
	json_t *obj =
	        rc ? NULL
	           : json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion", KFT_API_VERSION,
	                       "kind", KFT_KIND_TRAINJOB, "metadata", "name", meta(job, "name"),
	                       "namespace", meta(job, "namespace"), "status", st);
	if (obj)
		rc = kft_kube_apply_status(cm->kube,
		                           kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB), obj,
		                           FIELD_MANAGER, 1, NULL, err);
	json_decref(obj);
	json_decref(st);
	return rc;
}

/* The exporter container's termination message (its last words), from the
 * Job's newest pod; NULL when none. */
static char *termination_message(kft_cm *cm, const json_t *xjob)
{
	char sel[300];
	json_t *pods = NULL;
	char *out = NULL;
	snprintf(sel, sizeof(sel), "job-name=%s", meta(xjob, "name"));
	kft_list_opts o = {.label_selector = sel};
	if (kft_kube_list(cm->kube, kft_gvr_lookup("v1", "Pod"), meta(xjob, "namespace"), &o, &pods,
	                  NULL) != 0)
		return NULL;
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(pods, "items"), i, p)
	{
		const json_t *cs =
		        json_object_get(json_object_get(p, "status"), "containerStatuses");
		const char *m = json_string_value(json_object_get(
		        json_object_get(json_object_get(json_array_get(cs, 0), "state"),
		                        "terminated"),
		        "message"));
		if (m && *m) {
			free(out);
			out = strdup(m);
		}
	}
	json_decref(pods);
	return out;
}

/* Creates the export Job and takes the finalizer. */
static int start_export(kft_cm *cm, const json_t *job, kft_error *err)
{
	/* read whole: the cache keeps a JobSet without its pod templates (trim.c) */
	json_t *jobset = NULL;
	if (kft_kube_get(cm->kube, kft_gvr_lookup("jobset.x-k8s.io/v1alpha2", "JobSet"),
	                 meta(job, "namespace"), meta(job, "name"), &jobset, err) != 0)
		return err->code;
	kft_track_export_cfg cfg = {.image = cm->cfg->export_image,
	                            .tracking_uri = cm->cfg->mlflow_tracking_uri,
	                            .experiment = cm->cfg->mlflow_experiment};
	json_t *xjob = NULL;
	int rc = kft_track_export_job(job, jobset, &cfg, &xjob, err);
	if (rc == 0 && !has_finalizer(job))
		rc = set_finalizer(cm, job, true, err);
	if (rc == 0)
		rc = kft_kube_apply(cm->kube, kft_gvr_lookup("batch/v1", "Job"), xjob,
		                    FIELD_MANAGER, 1, NULL, err);
	json_decref(xjob);
	json_decref(jobset);
	return rc;
}

void kft_cm_export_trainjob(kft_cm *cm, const json_t *job, kft_cm_outcome *out)
{
	const json_t *st = json_object_get(job, "status");
	const char *to = json_string_value(
	        json_object_get(json_object_get(json_object_get(job, "metadata"), "annotations"),
	                        KFT_TRACK_ANN_EXPORT_TO));
	kft_error e = {0};
	if (!to || kft_condition_is_true(st, KFT_TRACK_CONDITION_EXPORTED)) {
		/* exported, or the user took export-to away: the output is free */
		if (has_finalizer(job) && set_finalizer(cm, job, false, &e) != 0)
			kft_cm_outcome_error(out, &e);
		return;
	}
	if (!cm->cfg->export_image || !kft_condition_is_true(st, KFT_CONDITION_COMPLETE))
		return;
	char *name = kft_track_export_job_name(meta(job, "name"));
	json_t *xjob = NULL;
	int rc = name ? kft_kube_get(cm->kube, kft_gvr_lookup("batch/v1", "Job"),
	                             meta(job, "namespace"), name, &xjob, &e)
	              : kft_error_set(&e, KFT_ENOMEM, "out of memory");
	free(name);
	if (rc == KFT_ENOTFOUND)
		rc = start_export(cm, job, &e);
	kft_track_export_state s = {0};
	if (rc == 0) {
		char *term =
		        xjob && (kft_condition_is_true(json_object_get(xjob, "status"), "Failed") ||
		                 kft_condition_is_true(json_object_get(xjob, "status"), "Complete"))
		                ? termination_message(cm, xjob)
		                : NULL;
		rc = kft_track_export_observe(job, xjob, term, &s);
		free(term);
	}
	if (rc == 0)
		rc = set_condition(cm, job, &s, &e);
	if (rc == 0 && s.done && s.status[0] == 'T')
		rc = set_finalizer(cm, job, false, &e);
	if (rc)
		kft_cm_outcome_error(out, &e);
	else if (!s.done && out->result == KFT_RESULT_SUCCESS) {
		out->result = KFT_RESULT_REQUEUE_AFTER;
		out->requeue_after_ms = EXPORT_POLL_MS;
	}
	free(s.message);
	json_decref(xjob);
}
