/*
 * optplan.c - the OptimizationJob controller's decision, pure (see
 * optimization.h). Everything it needs of an OptimizationJob's semantics
 * is src/hpo's, shared with the local engine; this file maps the cluster's
 * facts (TrainJobs in the cache, their status.trainerStatus) onto it.
 */
#include "controller/optimization.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"
#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "util/rfc3339.h"

/* A trial not seen in the cache this long after it was created is gone. */
#define CACHE_GRACE_MS 30000

static const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

int kft_cm_optimization_key(const json_t *trainjob, char *buf, size_t size)
{
	const json_t *labels = json_object_get(json_object_get(trainjob, "metadata"), "labels");
	const char *owner = json_string_value(json_object_get(labels, KFT_HPO_LABEL_JOB));
	const char *ns = meta_str(trainjob, "namespace");
	if (!owner || !*owner)
		return -1;
	int n = snprintf(buf, size, "%s/%s", ns ? ns : "default", owner);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

void kft_cm_opt_plan_free(kft_cm_opt_plan *p)
{
	json_decref(p->status);
	json_decref(p->create);
	json_decref(p->stop);
	json_decref(p->events);
	memset(p, 0, sizeof(*p));
}

/* ---- the working state --------------------------------------------------------- */

typedef struct work {
	const kft_hpo_spec *spec;
	const json_t *opt, *jobs;
	const char *now;
	int64_t now_ms;
	json_t *status, *trials;
	kft_cm_opt_plan *out;
} work;

static void event(work *w, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void event(work *w, const char *type, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(w->out->events, json_pack("{s:s, s:s, s:s}", "type", type, "reason",
	                                                reason, "message", msg));
}

static const json_t *job_named(const work *w, const char *name)
{
	size_t i;
	const json_t *j;
	json_array_foreach(w->jobs, i, j)
	{
		const char *n = meta_str(j, "name");
		if (n && strcmp(n, name) == 0)
			return j;
	}
	return NULL;
}

static void end_trial(work *w, json_t *t, kft_hpo_outcome outcome, const char *message)
{
	kft_hpo_trial_end(w->spec, t, outcome, message, w->now);
	const char *state = json_string_value(json_object_get(t, "state"));
	const char *v = kft_hpo_objective_value(w->spec, t);
	int bad = strcmp(state, KFT_HPO_FAILED) == 0 || strcmp(state, KFT_HPO_UNAVAILABLE) == 0;
	char reason[48];
	snprintf(reason, sizeof(reason), "Trial%s", state);
	event(w, bad ? "Warning" : "Normal", reason, "Trial %s %s%s%s%s%s",
	      json_string_value(json_object_get(t, "name")), state, v ? ": " : "",
	      v ? w->spec->objective : "", v ? "=" : "", v ? v : "");
}

/* ---- adopting trials the status does not know ---------------------------------------- */

/* A trial TrainJob whose index is past the status (created just before the
 * controller stopped, its status write lost): its entry is rebuilt from
 * its labels and parameters annotation. Trials are adopted in index order,
 * and only the next index, so status.trials stays in trial order. */
static void adopt(work *w)
{
	for (;;) {
		size_t next = json_array_size(w->trials);
		char *name = kft_hpo_trial_name(w->spec->name, next);
		const json_t *job = name ? job_named(w, name) : NULL;
		json_t *params = NULL;
		const json_t *ann =
		        json_object_get(json_object_get(job, "metadata"), "annotations");
		const char *text = json_string_value(json_object_get(ann, KFT_HPO_ANN_PARAMETERS));
		if (text)
			params = json_loads(text, 0, NULL);
		json_t *t = job && json_is_array(params)
		                    ? kft_hpo_trial_new(name, params, NULL, w->now)
		                    : NULL;
		free(name);
		json_decref(params);
		if (!t)
			return;
		json_object_set_new(t, "state", json_string(KFT_HPO_RUNNING));
		json_array_append_new(w->trials, t);
	}
}

/* ---- following running trials ------------------------------------------------------- */

/* What tells a report from the one counted before it: its time (to the
 * second) and a digest of its metrics. */
static void report_id(const json_t *ts, char *buf, size_t size)
{
	char *text = json_dumps(json_object_get(ts, "metrics"), JSON_COMPACT | JSON_SORT_KEYS);
	uint64_t h = 1469598103934665603ULL;
	for (const char *p = text ? text : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	free(text);
	snprintf(buf, size, "%.40s/%016llx",
	         json_string_value(json_object_get(ts, "lastUpdatedTime")) ?: "",
	         (unsigned long long)h);
}

/* Folds the trial's new report in; 1 when the median rule stops it. */
static int fold_report(work *w, json_t *t, const json_t *job)
{
	const json_t *ts = json_object_get(json_object_get(job, "status"), "trainerStatus");
	char id[80];
	int stop = 0;
	if (!ts)
		return 0;
	report_id(ts, id, sizeof(id));
	const char *seen = json_string_value(json_object_get(t, "lastReportTime"));
	if (seen && strcmp(seen, id) == 0)
		return 0;
	json_object_set_new(t, "lastReportTime", json_string(id));
	size_t i;
	const json_t *m;
	json_array_foreach(json_object_get(ts, "metrics"), i, m)
	{
		const char *name = json_string_value(json_object_get(m, "name"));
		const char *value = json_string_value(json_object_get(m, "value"));
		if (name && value && kft_hpo_observe(w->spec, t, name, value) == 1)
			stop = 1;
	}
	return stop;
}

static int64_t age_ms(const work *w, const json_t *t)
{
	int64_t then = 0;
	const char *ts = json_string_value(json_object_get(t, "creationTimestamp"));
	if (!ts || kft_rfc3339_parse_ms(ts, &then, NULL) != 0)
		return CACHE_GRACE_MS;
	return w->now_ms - then;
}

static void follow(work *w, json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const json_t *job = job_named(w, name);
	if (!job) {
		if (age_ms(w, t) < CACHE_GRACE_MS) {
			w->out->requeue_after_ms = 1000; /* created, not in the cache yet */
			return;
		}
		end_trial(w, t, KFT_HPO_JOB_FAILED, "its TrainJob was deleted");
		return;
	}
	if (fold_report(w, t, job)) {
		json_array_append_new(w->out->stop, json_string(name));
		end_trial(w, t, KFT_HPO_JOB_EARLY_STOP,
		          "median stopping: its best objective is worse than the median rule's");
		return;
	}
	const json_t *st = json_object_get(job, "status");
	const json_t *failed = kft_condition_find(st, KFT_CONDITION_FAILED);
	if (kft_condition_is_true(st, KFT_CONDITION_COMPLETE))
		end_trial(w, t, KFT_HPO_JOB_COMPLETE, NULL);
	else if (kft_condition_is_true(st, KFT_CONDITION_FAILED))
		end_trial(w, t, KFT_HPO_JOB_FAILED,
		          json_string_value(json_object_get(failed, "message")));
}

/* ---- new trials --------------------------------------------------------------------- */

static json_t *owner_ref(const json_t *opt)
{
	return json_pack("[{s:s, s:s, s:s?, s:s?, s:b, s:b}]", "apiVersion", KFT_API_VERSION,
	                 "kind", KFT_KIND_OPTIMIZATIONJOB, "name", meta_str(opt, "name"), "uid",
	                 meta_str(opt, "uid"), "controller", 1, "blockOwnerDeletion", 1);
}

static int create_trial(work *w, size_t index, int64_t seed, kft_error *err)
{
	json_t *params = NULL, *job = NULL;
	char *name = kft_hpo_trial_name(w->spec->name, index);
	char *rule = kft_hpo_median_rule(w->spec, w->trials);
	int rc = name ? kft_hpo_suggest(w->spec, w->trials, seed, index, &params, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_hpo_trial_job(w->spec, name, index, params, &job, err);
	json_t *t = rc == 0 ? kft_hpo_trial_new(name, params, rule, w->now) : NULL;
	if (rc == 0 && !t)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0) {
		json_object_set_new(t, "state", json_string(KFT_HPO_RUNNING));
		json_object_set_new(json_object_get(job, "metadata"), "ownerReferences",
		                    owner_ref(w->opt));
		json_array_append_new(w->trials, t);
		json_array_append(w->out->create, job);
	}
	json_decref(job);
	json_decref(params);
	free(name);
	free(rule);
	return rc;
}

/* The search is over: running trials are stopped (Killed). */
static void finish(work *w, const kft_hpo_plan *plan)
{
	size_t i;
	json_t *t;
	json_array_foreach(w->trials, i, t)
	{
		const char *state = json_string_value(json_object_get(t, "state"));
		if (strcmp(state, KFT_HPO_RUNNING) != 0 && strcmp(state, KFT_HPO_PENDING) != 0)
			continue;
		json_array_append(w->out->stop, json_object_get(t, "name"));
		end_trial(w, t, KFT_HPO_JOB_KILLED, "the OptimizationJob ended");
	}
	kft_condition_set(w->status, plan->finish, KFT_CONDITION_TRUE, plan->reason, plan->message,
	                  w->now, NULL);
	event(w, strcmp(plan->finish, KFT_CONDITION_FAILED) == 0 ? "Warning" : "Normal",
	      plan->reason, "%s", plan->message);
}

static int step(work *w, int64_t seed, kft_error *err)
{
	size_t i;
	json_t *t;
	if (!kft_condition_find(w->status, KFT_HPO_CONDITION_CREATED))
		kft_condition_set(w->status, KFT_HPO_CONDITION_CREATED, KFT_CONDITION_TRUE,
		                  KFT_HPO_REASON_CREATED, "OptimizationJob is created", w->now,
		                  NULL);
	if (kft_condition_is_true(w->status, KFT_CONDITION_COMPLETE) ||
	    kft_condition_is_true(w->status, KFT_CONDITION_FAILED))
		return 0; /* over: nothing more to do */
	adopt(w);
	json_array_foreach(w->trials, i, t)
	{
		const char *state = json_string_value(json_object_get(t, "state"));
		if (state && strcmp(state, KFT_HPO_RUNNING) == 0)
			follow(w, t);
	}
	kft_hpo_plan plan;
	kft_hpo_plan_next(w->spec, w->status, &plan);
	if (plan.finish)
		finish(w, &plan);
	int rc = 0;
	for (size_t k = 0; rc == 0 && !plan.finish && k < plan.create; k++)
		rc = create_trial(w, json_array_size(w->trials), seed, err);
	return rc ? rc : kft_hpo_set_result(w->spec, w->status);
}

int kft_cm_optimization_plan(const json_t *opt, const json_t *jobs, const char *now, int64_t seed,
                             kft_cm_opt_plan *out, kft_error *err)
{
	kft_hpo_spec spec;
	memset(out, 0, sizeof(*out));
	int rc = kft_hpo_spec_parse(opt, &spec, err);
	if (rc)
		return rc;
	const json_t *old = json_object_get(opt, "status");
	work w = {.spec = &spec, .opt = opt, .jobs = jobs, .now = now, .out = out};
	w.status = old ? json_deep_copy(old) : json_object();
	out->create = json_array();
	out->stop = json_array();
	out->events = json_array();
	kft_rfc3339_parse_ms(now, &w.now_ms, NULL);
	if (w.status && !json_is_array(json_object_get(w.status, "trials")))
		json_object_set_new(w.status, "trials", json_array());
	w.trials = json_object_get(w.status, "trials");
	rc = !w.status || !out->create || !out->stop || !out->events || !w.trials
	             ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	             : step(&w, spec.has_seed ? spec.seed : seed, err);
	if (rc == 0 && (!old || !json_equal(w.status, (json_t *)old)))
		out->status = json_incref(w.status);
	json_decref(w.status);
	kft_hpo_spec_free(&spec);
	if (rc)
		kft_cm_opt_plan_free(out);
	return rc;
}
