/*
 * tracking.c - the manager's side of MLflow runs (see tracking.h): what
 * was already said of each job, so that reconciles, which run many times,
 * start and end a run once, and the tracker's lines in the manager's log.
 */
#include "controller/tracking.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "framework/conditions.h"
#include "track/track.h"
#include "track/tracker.h"
#include "util/rfc3339.h"

#define LOG_NAME  "tracking"
#define MAX_SEEN  8192
#define ST_OPEN   1
#define ST_CLOSED 2

typedef struct seen {
	char *key, *uid;
	int state;
	bool search; /* an OptimizationJob's parent run */
} seen;

struct kft_cm_tracking {
	kft_tracker *tracker;
	kft_logger *lg;
	int64_t started_ms; /* when the manager started */
	pthread_mutex_t mu;
	seen *items;
	size_t n;
};

static int64_t now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void to_log(void *ctx, int level, const char *message)
{
	kft_cm_tracking *t = ctx;
	KFT_LOG(t->lg, level ? KFT_LOG_WARN : KFT_LOG_INFO, LOG_NAME, message, NULL);
}

int kft_cm_tracking_new(const kft_cm_config *cfg, kft_logger *lg, kft_cm_tracking **out,
                        kft_error *err)
{
	kft_tracker_opts o = {.log = to_log};
	*out = NULL;
	kft_mlflow_opts_from_env(NULL, &o.mlflow);
	if (cfg->mlflow_tracking_uri)
		o.mlflow.uri = cfg->mlflow_tracking_uri;
	if (!o.mlflow.uri)
		return 0;
	o.default_experiment = cfg->mlflow_experiment
	                               ? cfg->mlflow_experiment
	                               : kft_mlflow_env(NULL, "MLFLOW_EXPERIMENT_NAME");
	kft_cm_tracking *t = calloc(1, sizeof(*t));
	if (!t)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	t->lg = lg;
	t->started_ms = now_ms();
	o.log_ctx = t;
	pthread_mutex_init(&t->mu, NULL);
	int rc = kft_tracker_new(&o, &t->tracker, err);
	if (rc) {
		pthread_mutex_destroy(&t->mu);
		free(t);
		return rc;
	}
	KFT_LOG(lg, KFT_LOG_INFO, LOG_NAME, "Tracking runs in MLflow",
	        json_pack("{s:s}", "trackingURI", o.mlflow.uri));
	*out = t;
	return 0;
}

/* ---- what was said ------------------------------------------------------------------ */

static seen *find(kft_cm_tracking *t, const char *uid)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->items[i].uid, uid) == 0)
			return &t->items[i];
	return NULL;
}

/* Makes room by forgetting the oldest closed entry (or the oldest). */
static void forget_one(kft_cm_tracking *t)
{
	size_t victim = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->items[i].state == ST_CLOSED) {
			victim = i;
			break;
		}
	free(t->items[victim].key);
	free(t->items[victim].uid);
	memmove(&t->items[victim], &t->items[victim + 1], (t->n - victim - 1) * sizeof(seen));
	t->n--;
}

/* The entry of uid, made when new (state 0); NULL on ENOMEM. Under mu. */
static seen *entry(kft_cm_tracking *t, const char *key, const char *uid)
{
	seen *s = find(t, uid);
	if (s)
		return s;
	if (t->n == MAX_SEEN)
		forget_one(t);
	if (!t->items && !(t->items = calloc(MAX_SEEN, sizeof(seen))))
		return NULL;
	s = &t->items[t->n];
	*s = (seen){.key = strdup(key), .uid = strdup(uid)};
	if (!s->key || !s->uid) {
		free(s->key);
		free(s->uid);
		return NULL;
	}
	t->n++;
	return s;
}

static const char *meta(const json_t *obj, const char *k)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), k));
}

static void key_of(const json_t *obj, char *key, size_t size)
{
	const char *ns = meta(obj, "namespace");
	snprintf(key, size, "%s/%s", ns ? ns : "default",
	         meta(obj, "name") ? meta(obj, "name") : "");
}

static int64_t created_ms(const json_t *obj)
{
	int64_t ms = 0;
	const char *c = meta(obj, "creationTimestamp");
	return c && kft_rfc3339_parse_ms(c, &ms, NULL) == 0 ? ms : now_ms();
}

/* When a finished object's Complete or Failed condition came. */
static int64_t finished_ms(const json_t *obj)
{
	const json_t *st = json_object_get(obj, "status");
	const json_t *c = kft_condition_find(st, KFT_CONDITION_COMPLETE);
	if (!c || !kft_condition_is_true(st, KFT_CONDITION_COMPLETE))
		c = kft_condition_find(st, KFT_CONDITION_FAILED);
	int64_t ms = 0;
	const char *at = json_string_value(json_object_get(c, "lastTransitionTime"));
	return at && kft_rfc3339_parse_ms(at, &ms, NULL) == 0 ? ms : now_ms();
}

/* Starts obj's run once; false when obj finished long before we started
 * (nothing is said of it then). Under mu. */
static bool opened(kft_cm_tracking *t, seen *s, const json_t *obj, bool search)
{
	if (s->state)
		return s->state == ST_OPEN;
	s->search = search;
	if (kft_track_end_status(obj, false) &&
	    finished_ms(obj) < t->started_ms - KFT_CM_TRACKING_LATE_MS) {
		s->state = ST_CLOSED;
		return false;
	}
	if (search)
		kft_tracker_start_search(t->tracker, obj, created_ms(obj));
	else
		kft_tracker_start(t->tracker, obj, created_ms(obj), 0);
	s->state = ST_OPEN;
	return true;
}

static void follow(kft_cm_tracking *t, const json_t *obj, const json_t *report, bool search,
                   const json_t *best)
{
	char key[600];
	const char *uid = meta(obj, "uid");
	if (!t || !uid || !kft_track_wanted(obj))
		return;
	key_of(obj, key, sizeof(key));
	pthread_mutex_lock(&t->mu);
	seen *s = entry(t, key, uid);
	if (s && opened(t, s, obj, search)) {
		const char *end = kft_track_end_status(obj, false);
		if (report)
			kft_tracker_report(t->tracker, uid, report, now_ms());
		if (end && !report) {
			if (search)
				kft_tracker_end_search(t->tracker, uid, best, end, now_ms());
			else
				kft_tracker_end(t->tracker, uid, end, now_ms());
			s->state = ST_CLOSED;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

void kft_cm_tracking_trainjob(kft_cm_tracking *t, const json_t *job)
{
	follow(t, job, NULL, false, NULL);
}

void kft_cm_tracking_report(kft_cm_tracking *t, const json_t *job, const json_t *ts)
{
	follow(t, job, ts, false, NULL);
}

/* status.result as the parent run's best: its parameters. */
static json_t *best_of(const json_t *opt)
{
	const json_t *result = json_object_get(json_object_get(opt, "status"), "result"), *p;
	json_t *best = result ? json_pack("{s:{}, s:{}}", "params", "metrics") : NULL;
	size_t i;
	json_array_foreach(best ? json_object_get(result, "parameters") : NULL, i, p)
	{
		const char *k = json_string_value(json_object_get(p, "name"));
		if (k)
			json_object_set(json_object_get(best, "params"), k,
			                json_object_get(p, "value"));
	}
	return best;
}

void kft_cm_tracking_optimization(kft_cm_tracking *t, const json_t *opt)
{
	json_t *best = t ? best_of(opt) : NULL;
	follow(t, opt, NULL, true, best);
	json_decref(best);
}

void kft_cm_tracking_gone(kft_cm_tracking *t, const char *key)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++)
		if (t->items[i].state == ST_OPEN && !t->items[i].search &&
		    strcmp(t->items[i].key, key) == 0) {
			kft_tracker_end(t->tracker, t->items[i].uid, "KILLED", now_ms());
			t->items[i].state = ST_CLOSED;
		}
	pthread_mutex_unlock(&t->mu);
}

void kft_cm_tracking_free(kft_cm_tracking *t, int64_t timeout_ms)
{
	if (!t)
		return;
	kft_tracker_flush(t->tracker, timeout_ms);
	kft_tracker_free(t->tracker);
	for (size_t i = 0; i < t->n; i++) {
		free(t->items[i].key);
		free(t->items[i].uid);
	}
	free(t->items);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
