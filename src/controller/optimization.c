/*
 * optimization.c - the OptimizationJob controller's reconcile (see
 * optimization.h): the OptimizationJob and its trials from the caches,
 * the decision (optplan.c), then its writes in an order that survives a
 * crash at any point: trial TrainJobs are created first (each fed to the
 * TrainJob cache at once, so the next reconcile sees it), trials to stop
 * are suspended, and the status is written last with the cached
 * resourceVersion (a conflict requeues). A crash before the status write
 * loses nothing: the next reconcile adopts the trials it finds.
 */
#include <stdio.h>
#include <string.h>

#include "cm_internal.h"
#include "hpo/hpo.h"
#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "util/random.h"
#include "util/rfc3339.h"

static const char *meta(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(json_object_get(obj, "metadata"), key);
	return json_is_string(v) ? json_string_value(v) : "";
}

static void fail_with(kft_cm_outcome *out, const kft_error *e)
{
	if (out->result == KFT_RESULT_ERROR)
		return;
	out->result = KFT_RESULT_ERROR;
	out->err = *e;
	out->conflict = e->code == KFT_ECONFLICT;
}

static void record(kft_cm *cm, const json_t *opt, const char *type, const char *reason,
                   const char *note)
{
	kft_error e = {0};
	kft_event_v1 ev = {.regarding = opt,
	                   .type = type,
	                   .reason = reason,
	                   .action = KFT_CM_EVENT_ACTION,
	                   .note = note,
	                   .controller = KFT_CM_OPTIMIZATION_RECORDER};
	if (kft_kube_event_v1(cm->kube, &ev, &e) != 0)
		KFT_LOG(cm->lg, -2, "optimizationjob-controller", "Failed to record an event",
		        json_pack("{s:s, s:s}", "optimizationJob", meta(opt, "name"), "error",
		                  e.message));
}

/* The trial in status whose name is name gets Failed with the creation's
 * error (a TrainJob the API server refuses will not be accepted later). */
static void creation_refused(const json_t *opt, json_t *status, const char *name, const char *why,
                             const char *now)
{
	kft_hpo_spec spec;
	json_t *t = kft_hpo_trial_find(status, name);
	if (t && kft_hpo_spec_parse(opt, &spec, NULL) == 0) {
		kft_hpo_trial_end(&spec, t, KFT_HPO_JOB_CREATE_ERROR, why, now);
		kft_hpo_spec_free(&spec);
	}
}

/* Creates the plan's trials; an existing one (ours, created before a
 * restart) is adopted by the next reconcile. Returns -1 to stop (a
 * transient error: retried, status not written). */
static int create_trials(kft_cm *cm, const json_t *opt, kft_cm_opt_plan *plan, const char *now,
                         kft_cm_outcome *out)
{
	const kft_gvr *gvr = kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB);
	size_t i;
	const json_t *job;
	json_array_foreach(plan->create, i, job)
	{
		json_t *made = NULL;
		kft_error e = {0};
		int rc = kft_kube_create(cm->kube, gvr, job, &made, &e);
		if (rc == 0) {
			kft_informer_supply(cm->trainjobs, made);
			record(cm, opt, "Normal", "TrialCreated", meta(job, "name"));
		} else if (rc == KFT_EINVAL || rc == KFT_EDENIED) {
			creation_refused(opt, plan->status, meta(job, "name"), e.message, now);
			record(cm, opt, "Warning", KFT_HPO_REASON_CREATE_FAIL, e.message);
		} else if (rc != KFT_EEXIST) {
			fail_with(out, &e);
			json_decref(made);
			return -1;
		}
		json_decref(made);
	}
	return 0;
}

static void stop_trials(kft_cm *cm, const json_t *opt, const json_t *names, kft_cm_outcome *out)
{
	const kft_gvr *gvr = kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB);
	json_t *patch = json_pack("{s:{s:b}}", "spec", "suspend", 1);
	size_t i;
	const json_t *n;
	json_array_foreach(names, i, n)
	{
		kft_error e = {0};
		int rc = kft_kube_patch(cm->kube, gvr, meta(opt, "namespace"), json_string_value(n),
		                        KFT_PATCH_MERGE, patch, NULL, NULL, &e);
		if (rc && rc != KFT_ENOTFOUND)
			fail_with(out, &e);
	}
	json_decref(patch);
}

static void write_status(kft_cm *cm, const json_t *opt, json_t *status, kft_cm_outcome *out)
{
	const kft_gvr *gvr = kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_OPTIMIZATIONJOB);
	json_t *obj = json_deep_copy(opt), *saved = NULL;
	kft_error e = {0};
	json_object_set(obj, "status", status);
	int rc = kft_kube_update_status(cm->kube, gvr, obj, &saved, &e);
	if (rc == 0)
		kft_informer_supply(cm->optjobs, saved);
	else if (rc != KFT_ENOTFOUND)
		fail_with(out, &e);
	json_decref(saved);
	json_decref(obj);
}

/* A spec the decision cannot read (no webhook stopped it): Failed, once. */
static void refuse(kft_cm *cm, const json_t *opt, const kft_error *why, const char *now,
                   kft_cm_outcome *out)
{
	json_t *status = json_deep_copy(json_object_get(opt, "status"));
	if (!status)
		status = json_object();
	if (!kft_condition_is_true(status, KFT_CONDITION_FAILED)) {
		kft_condition_set(status, KFT_CONDITION_FAILED, KFT_CONDITION_TRUE,
		                  KFT_CM_REASON_VALIDATION_FAILED, why->message, now, NULL);
		record(cm, opt, "Warning", KFT_CM_REASON_VALIDATION_FAILED, why->message);
		write_status(cm, opt, status, out);
	}
	json_decref(status);
}

static int64_t fresh_seed(void)
{
	uint64_t r = 0;
	kft_random_bytes(NULL, (unsigned char *)&r, sizeof(r));
	return (int64_t)(r >> 1);
}

void kft_cm_reconcile_optimization(kft_cm *cm, const char *key, const char *reconcile_id,
                                   kft_cm_outcome *out)
{
	json_t *opt = NULL, *jobs = NULL;
	kft_cm_opt_plan plan;
	kft_error e = {0};
	char now[32];
	out->result = KFT_RESULT_SUCCESS;
	if (kft_informer_get_by_key(cm->optjobs, key, &opt) != 0)
		return; /* deleted: its trials go with it (owner references) */
	if (json_object_get(json_object_get(opt, "metadata"), "deletionTimestamp")) {
		json_decref(opt);
		return;
	}
	KFT_LOG(cm->lg, -2, NULL, "Reconciling OptimizationJob",
	        json_pack("{s:s, s:s, s:s}", "controller", KFT_CM_OPTIMIZATION_CONTROLLER,
	                  "reconcileID", reconcile_id, "optimizationJob", key));
	kft_rfc3339_now(now);
	int rc = kft_informer_by_index(cm->trainjobs, KFT_CM_INDEX_OPTIMIZATION, key, &jobs, &e);
	if (rc == 0)
		rc = kft_cm_optimization_plan(opt, jobs, now, fresh_seed(), &plan, &e);
	if (rc == KFT_EINVAL) {
		refuse(cm, opt, &e, now, out);
	} else if (rc) {
		fail_with(out, &e);
	} else if (create_trials(cm, opt, &plan, now, out) == 0) {
		stop_trials(cm, opt, plan.stop, out);
		size_t i;
		const json_t *ev;
		json_array_foreach(plan.events, i, ev)
		        record(cm, opt, json_string_value(json_object_get(ev, "type")),
		               json_string_value(json_object_get(ev, "reason")),
		               json_string_value(json_object_get(ev, "message")));
		if (plan.status)
			write_status(cm, opt, plan.status, out);
		if (out->result == KFT_RESULT_SUCCESS && plan.requeue_after_ms > 0) {
			out->result = KFT_RESULT_REQUEUE_AFTER;
			out->requeue_after_ms = plan.requeue_after_ms;
		}
	}
	if (rc == 0)
		kft_cm_opt_plan_free(&plan);
	json_decref(jobs);
	json_decref(opt);
}
