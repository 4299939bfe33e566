/*
 * tracking.c - the supervisor's side of a local job's MLflow run (see
 * tracking.h): settings from the job's own environment, the tracker's
 * lines into the supervisor's log, the end status, the logs as artifacts,
 * and a bounded wait at the end so a briefly unavailable server still
 * gets the last reports.
 */
#include "local/tracking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "framework/conditions.h"
#include "track/track.h"
#include "util/envnum.h"
#include "util/rfc3339.h"

static void to_log(void *ctx, int level, const char *message)
{
	(void)ctx;
	fprintf(stderr, "kftrainer supervise: %s%s\n", level ? "warning: " : "", message);
}

static int64_t now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static const char *meta_str(const json_t *tj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(tj, "metadata"), key));
}

/* A whole number up to max in environment variable name (the supervisor's),
 * else dflt; a value that is not one is named in the log. */
static unsigned long long env_setting(const char *name, unsigned long long max,
                                      unsigned long long dflt)
{
	unsigned long long n = dflt;
	bool bad = false;
	kft_env_whole(name, max, &n, &bad);
	if (bad) {
		char msg[200];
		snprintf(msg, sizeof(msg),
		         "tracking: %s is not a whole number up to %llu; the default is used", name,
		         max);
		to_log(NULL, 1, msg);
	}
	return n;
}

/* How many reports wait while the server is down (0: the tracker's default). */
static size_t max_reports(void)
{
	return (size_t)env_setting("KFTRAINER_TRACKING_MAX_REPORTS", 10000000, 0);
}

/* A tracker for obj when env names a server and obj wants a run. */
static kft_tracker *tracker_for(const json_t *obj, char *const *env)
{
	kft_tracker_opts o = {.log = to_log, .max_reports = max_reports()};
	kft_tracker *t = NULL;
	kft_error err = {0};
	kft_mlflow_opts_from_env(env, &o.mlflow);
	if (!o.mlflow.uri || !kft_track_wanted(obj))
		return NULL;
	o.default_experiment = kft_mlflow_env(env, "MLFLOW_EXPERIMENT_NAME");
	if (kft_tracker_new(&o, &t, &err) != 0)
		to_log(NULL, 1, err.message);
	return t;
}

/* When obj was created, else now. */
static int64_t start_of(const json_t *obj)
{
	int64_t start = 0;
	const char *created = meta_str(obj, "creationTimestamp");
	return created && kft_rfc3339_parse_ms(created, &start, NULL) == 0 ? start : now_ms();
}

kft_tracker *kft_local_tracking_open(kft_store *s, const json_t *tj, char *const *env)
{
	json_t *reports = NULL;
	kft_tracker *t = tracker_for(tj, env);
	if (!t)
		return NULL;
	const char *ns = meta_str(tj, "namespace"), *name = meta_str(tj, "name");
	if (kft_store_reports(s, ns, name, 0, &reports, NULL) != 0)
		reports = NULL;
	kft_tracker_start(t, tj, start_of(tj), (int64_t)json_array_size(reports));
	json_decref(reports);
	return t;
}

void kft_local_tracking_report(kft_tracker *t, const json_t *tj, const json_t *ts)
{
	if (t)
		kft_tracker_report(t, meta_str(tj, "uid"), ts, now_ms());
}

/* Each pod's log as logs/STEP-INDEX.log. */
static void queue_logs(kft_tracker *t, kft_store *s, const json_t *tj)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	if (kft_store_pods(s, meta_str(tj, "namespace"), meta_str(tj, "name"), &recs, &n, NULL) !=
	    0)
		return;
	for (size_t i = 0; i < n; i++) {
		char rel[512];
		if (!recs[i].log_path)
			continue;
		snprintf(rel, sizeof(rel), "logs/%s-%d.log", recs[i].step, recs[i].index);
		kft_tracker_artifact(t, meta_str(tj, "uid"), rel, recs[i].log_path);
	}
	kft_pod_records_free(recs, n);
}

/* Whether the job is gone or going (a delete stopped the loop). */
static bool deleted(kft_store *s, const json_t *tj)
{
	kft_job_info info = {0};
	int rc =
	        kft_store_job_info(s, meta_str(tj, "namespace"), meta_str(tj, "name"), &info, NULL);
	bool gone = rc == KFT_ENOTFOUND || (rc == 0 && info.deleting);
	kft_job_info_free(&info);
	return gone;
}

/* Waits (bounded) for what is queued, then frees t. */
static void drain(kft_tracker *t)
{
	unsigned long long secs =
	        env_setting("KFTRAINER_TRACKING_DRAIN", 86400, KFT_LOCAL_TRACKING_DRAIN_S);
	if (kft_tracker_flush(t, (int64_t)secs * 1000))
		to_log(NULL, 1, "tracking: gave up waiting for the tracking server");
	kft_tracker_free(t);
}

void kft_local_tracking_close(kft_tracker *t, kft_store *s, const json_t *tj)
{
	if (!t)
		return;
	const char *status = kft_track_end_status(tj, deleted(s, tj));
	kft_track_run run;
	if (status && kft_track_run_of_trainjob(tj, NULL, &run, NULL) == 0) {
		if (run.log_artifacts)
			queue_logs(t, s, tj);
		kft_track_run_free(&run);
	}
	if (status)
		kft_tracker_end(t, meta_str(tj, "uid"), status, now_ms());
	drain(t);
}

kft_tracker *kft_local_tracking_open_search(const json_t *opt, char *const *env)
{
	kft_tracker *t = tracker_for(opt, env);
	if (t)
		kft_tracker_start_search(t, opt, start_of(opt));
	return t;
}

void kft_local_tracking_close_search(kft_tracker *t, const json_t *opt, const json_t *best,
                                     bool deleted)
{
	if (!t)
		return;
	/* an OptimizationJob ends by the same condition types as a TrainJob */
	const char *status = kft_track_end_status(opt, deleted);
	if (status)
		kft_tracker_end_search(t, meta_str(opt, "uid"), best, status, now_ms());
	drain(t);
}
