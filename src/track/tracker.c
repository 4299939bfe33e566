/*
 * tracker.c - a queue of what happened to jobs, sent to MLflow by one
 * thread (see tracker.h).
 *
 * The callers' side only describes and queues: a start becomes a run
 * description (plan.c) at once, in the caller's thread, so a declaration
 * that cannot be read is said where it was made. The thread takes the
 * queue's head and keeps it there until the server has it: a failure a
 * retry may cure (KFT_EUNAVAILABLE) waits with back-off and tries the same
 * call again, so nothing is reordered; any other failure drops that call
 * with a log line. Consecutive reports of one job go out as one log-batch.
 *
 * The thread owns the jobs list (uid -> run); other threads read it under
 * the lock (kft_tracker_run_id). Ended jobs are forgotten past MAX_JOBS.
 */
#include "track/tracker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "track/track.h"
#include "util/clock.h"
#include "util/random.h"

#define DEFAULT_MAX_REPORTS 10000
#define DEFAULT_BACKOFF_MAX 60000
#define MAX_JOBS            1024
#define PARENT_TRIES        8 /* then a trial's run is made without its parent */

typedef enum op_kind { OP_START, OP_REPORT, OP_ARTIFACT, OP_END } op_kind;

typedef struct op {
	struct op *next;
	op_kind kind;
	char *uid;
	kft_track_run run; /* START */
	bool search;       /* START/END of a search's parent run */
	int64_t ms;        /* START: start time; REPORT: its time; END: end time */
	int64_t seq_base;  /* START */
	json_t *json;      /* REPORT: the TrainerStatus; END: a search's best */
	char *rel, *path;  /* ARTIFACT */
	char *status;      /* END */
} op;

typedef struct job {
	struct job *next;
	char *uid;
	kft_track_run run; /* kept until the run exists */
	bool search, has_run, ended;
	char *exp_id, run_id[64], *artifact_uri;
	int64_t start_ms, seq;
	int parent_tries;
} job;

struct kft_tracker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake, idle;
	bool stop, busy;
	size_t in_hand; /* ops at the head the thread is sending */
	op *head, *tail;
	size_t queued, reports, dropped;
	job *jobs; /* the thread's; read by others under mu */
	size_t n_jobs;
	kft_mlflow *m;
	char *default_experiment;
	size_t max_reports;
	int64_t backoff_max_ms;
	int attempt;  /* retries of the head so far */
	bool failing; /* a streak of unavailability was said */
	kft_tracker_log_fn log;
	void *log_ctx;
};

static void say(kft_tracker *t, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void say(kft_tracker *t, int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (!t->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	t->log(t->log_ctx, level, line);
}

static void op_free(op *o)
{
	if (!o)
		return;
	free(o->uid);
	kft_track_run_free(&o->run);
	json_decref(o->json);
	free(o->rel);
	free(o->path);
	free(o->status);
	free(o);
}

/* ---- the callers' side ---------------------------------------------------------- */

/* Drops the oldest report waiting (the caller holds mu). */
static void drop_oldest_report(kft_tracker *t)
{
	size_t i = 0;
	for (op **pp = &t->head; *pp; pp = &(*pp)->next, i++) {
		op *o = *pp;
		/* what the thread is sending stays */
		if (o->kind != OP_REPORT || i < t->in_hand)
			continue;
		*pp = o->next;
		if (t->tail == o) {
			t->tail = t->head;
			while (t->tail && t->tail->next)
				t->tail = t->tail->next;
		}
		t->queued--;
		t->reports--;
		t->dropped++;
		op_free(o);
		return;
	}
}

static void enqueue(kft_tracker *t, op *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&t->mu);
	if (o->kind == OP_REPORT) {
		if (t->reports >= t->max_reports)
			drop_oldest_report(t);
		t->reports++;
	}
	if (t->tail)
		t->tail->next = o;
	else
		t->head = o;
	t->tail = o;
	t->queued++;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->mu);
}

static op *op_new(op_kind kind, const char *uid)
{
	op *o = calloc(1, sizeof(*o));
	if (o && !(o->uid = strdup(uid))) {
		free(o);
		return NULL;
	}
	if (o)
		o->kind = kind;
	return o;
}

void kft_tracker_start(kft_tracker *t, const json_t *trainjob, int64_t start_ms, int64_t seq_base)
{
	kft_track_run run;
	kft_error err = {0};
	if (!t || !kft_track_wanted(trainjob))
		return;
	if (kft_track_run_of_trainjob(trainjob, t->default_experiment, &run, &err) != 0) {
		say(t, 1, "tracking: not tracked: %s", err.message);
		return;
	}
	op *o = op_new(OP_START, run.uid);
	if (!o) {
		kft_track_run_free(&run);
		return;
	}
	o->run = run;
	o->ms = start_ms;
	o->seq_base = seq_base;
	enqueue(t, o);
}

void kft_tracker_start_search(kft_tracker *t, const json_t *optjob, int64_t start_ms)
{
	kft_track_run run;
	kft_error err = {0};
	const char *uid =
	        json_string_value(json_object_get(json_object_get(optjob, "metadata"), "uid"));
	if (!t || !uid || !kft_track_wanted(optjob))
		return;
	if (kft_track_run_of_search(optjob, t->default_experiment, &run, &err) != 0) {
		say(t, 1, "tracking: search not tracked: %s", err.message);
		return;
	}
	op *o = op_new(OP_START, uid);
	if (!o) {
		kft_track_run_free(&run);
		return;
	}
	o->run = run;
	o->search = true;
	o->ms = start_ms;
	enqueue(t, o);
}

void kft_tracker_report(kft_tracker *t, const char *uid, const json_t *ts, int64_t time_ms)
{
	if (!t || !uid || !json_is_object(ts))
		return;
	op *o = op_new(OP_REPORT, uid);
	if (o && !(o->json = json_deep_copy(ts))) {
		op_free(o);
		return;
	}
	if (o)
		o->ms = time_ms;
	enqueue(t, o);
}

void kft_tracker_artifact(kft_tracker *t, const char *uid, const char *rel, const char *path)
{
	if (!t || !uid)
		return;
	op *o = op_new(OP_ARTIFACT, uid);
	if (o && (!(o->rel = strdup(rel)) || !(o->path = strdup(path)))) {
		op_free(o);
		return;
	}
	enqueue(t, o);
}

static void end_op(kft_tracker *t, const char *uid, const json_t *best, const char *status,
                   int64_t end_ms, bool search)
{
	if (!t || !uid || !status)
		return;
	op *o = op_new(OP_END, uid);
	if (o && (!(o->status = strdup(status)) || (best && !(o->json = json_deep_copy(best))))) {
		op_free(o);
		return;
	}
	if (o) {
		o->ms = end_ms;
		o->search = search;
	}
	enqueue(t, o);
}

void kft_tracker_end(kft_tracker *t, const char *uid, const char *status, int64_t end_ms)
{
	end_op(t, uid, NULL, status, end_ms, false);
}

void kft_tracker_end_search(kft_tracker *t, const char *uid, const json_t *best, const char *status,
                            int64_t end_ms)
{
	end_op(t, uid, best, status, end_ms, true);
}

/* ---- jobs ------------------------------------------------------------------------ */

static job *job_find(kft_tracker *t, const char *uid)
{
	for (job *j = t->jobs; j; j = j->next)
		if (strcmp(j->uid, uid) == 0)
			return j;
	return NULL;
}

static void job_free(job *j)
{
	free(j->uid);
	kft_track_run_free(&j->run);
	free(j->exp_id);
	free(j->artifact_uri);
	free(j);
}

/* Forgets the oldest ended job when the list is full (the thread, under mu). */
static void jobs_trim(kft_tracker *t)
{
	job **oldest = NULL;
	if (t->n_jobs < MAX_JOBS)
		return;
	for (job **pp = &t->jobs; *pp; pp = &(*pp)->next)
		if ((*pp)->ended)
			oldest = pp;
	if (!oldest)
		return;
	job *j = *oldest;
	*oldest = j->next;
	t->n_jobs--;
	job_free(j);
}

/* The job of a START op, made or refreshed (its description moves in). */
static job *job_of_start(kft_tracker *t, op *o)
{
	job *j = job_find(t, o->uid);
	if (!j) {
		if (!(j = calloc(1, sizeof(*j))) || !(j->uid = strdup(o->uid))) {
			free(j);
			return NULL;
		}
		pthread_mutex_lock(&t->mu);
		jobs_trim(t);
		j->next = t->jobs;
		t->jobs = j;
		t->n_jobs++;
		pthread_mutex_unlock(&t->mu);
	}
	if (!o->run.uid)
		return j; /* the same start again, after a retry: already taken */
	kft_track_run_free(&j->run);
	j->run = o->run;
	memset(&o->run, 0, sizeof(o->run));
	j->search = o->search;
	j->start_ms = o->ms;
	j->seq = o->seq_base;
	j->ended = false;
	return j;
}

/* ---- the thread: runs ------------------------------------------------------------ */

static int set_run(kft_tracker *t, job *j, json_t *info)
{
	const char *id = json_string_value(json_object_get(info, "run_id"));
	const char *art = json_string_value(json_object_get(info, "artifact_uri"));
	if (!id || strlen(id) >= sizeof(j->run_id))
		return KFT_EPARSE;
	pthread_mutex_lock(&t->mu);
	snprintf(j->run_id, sizeof(j->run_id), "%s", id);
	free(j->artifact_uri);
	j->artifact_uri = art ? strdup(art) : NULL;
	j->has_run = true;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* A trial's parent run id into tags, or KFT_EUNAVAILABLE while the search
 * has none yet (it comes first on a cluster, at its own pace locally). */
static int parent_tag(kft_tracker *t, job *j, json_t *tags, kft_error *err)
{
	json_t *info = NULL;
	if (!j->run.parent)
		return 0;
	int rc = kft_mlflow_run_find(t->m, j->exp_id, KFT_TRACK_TAG_UID, j->run.parent, &info, err);
	if (rc == 0) {
		const char *id = json_string_value(json_object_get(info, "run_id"));
		rc = json_array_append_new(tags, json_pack("{s:s, s:s}", "key",
		                                           KFT_TRACK_TAG_PARENT, "value", id))
		             ? KFT_ENOMEM
		             : 0;
	} else if (rc == KFT_ENOTFOUND && ++j->parent_tries < PARENT_TRIES) {
		rc = kft_error_set(err, KFT_EUNAVAILABLE,
		                   "tracking: the run of %s is not there yet", j->run.parent);
	} else if (rc == KFT_ENOTFOUND) {
		say(t, 1, "tracking: %s: no run of %s in experiment %s; its run has no parent",
		    j->run.name, j->run.parent, j->run.experiment);
		rc = 0;
	}
	json_decref(info);
	return rc;
}

/* Params and tags in batches MLflow takes. */
static int log_lists(kft_tracker *t, job *j, kft_error *err)
{
	json_t *params = j->run.params;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < json_array_size(params); i += KFT_TRACK_BATCH_PARAMS) {
		json_t *part = json_array();
		for (size_t k = i;
		     part && k < i + KFT_TRACK_BATCH_PARAMS && k < json_array_size(params); k++)
			json_array_append(part, json_array_get(params, k));
		rc = part ? kft_mlflow_log_batch(t->m, j->run_id, NULL, part, NULL, err)
		          : kft_error_set(err, KFT_ENOMEM, "out of memory");
		json_decref(part);
	}
	return rc;
}

/* The job's run exists: found by its uid tag, else made (a trial's with
 * its parent). */
static int ensure_run(kft_tracker *t, job *j, kft_error *err)
{
	json_t *info = NULL, *tags = NULL;
	if (j->has_run)
		return 0;
	int rc = j->exp_id ? 0 : kft_mlflow_experiment(t->m, j->run.experiment, &j->exp_id, err);
	const char *key = j->search ? "kftrainer.optimizationjob.uid" : KFT_TRACK_TAG_UID;
	if (rc == 0)
		rc = (tags = json_copy(j->run.tags)) ? parent_tag(t, j, tags, err) : KFT_ENOMEM;
	if (rc == 0)
		rc = kft_mlflow_run_ensure(t->m, j->exp_id, key, j->uid, j->run.name, j->start_ms,
		                           tags, &info, err);
	json_decref(tags);
	if (rc == 0 && (rc = set_run(t, j, info)) != 0)
		rc = kft_error_set(err, rc, "tracking: a run without an id");
	json_decref(info);
	if (rc == 0 && (rc = log_lists(t, j, err)) == 0)
		say(t, 0, "tracking: %s %s is run %s of experiment %s at %s",
		    j->search ? "OptimizationJob" : "TrainJob", j->run.name, j->run_id, j->exp_id,
		    kft_mlflow_uri(t->m));
	return rc;
}

/* Reports at the head, for one job, as one log-batch (the thread holds no
 * lock; *n: how many ops it took). */
static int send_reports(kft_tracker *t, job *j, op *first, size_t *n, kft_error *err)
{
	json_t *metrics = json_array();
	int64_t seq = j->seq;
	*n = 0;
	if (!metrics)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	pthread_mutex_lock(&t->mu);
	for (op *o = first; o && o->kind == OP_REPORT && strcmp(o->uid, first->uid) == 0 &&
	                    json_array_size(metrics) + 258 <= KFT_TRACK_BATCH_METRICS;
	     o = o->next) {
		kft_track_report_metrics(o->json, o->ms, ++seq, metrics);
		(*n)++;
	}
	t->in_hand = *n;
	pthread_mutex_unlock(&t->mu);
	int rc = json_array_size(metrics)
	                 ? kft_mlflow_log_batch(t->m, j->run_id, metrics, NULL, NULL, err)
	                 : 0;
	json_decref(metrics);
	if (rc == 0)
		j->seq = seq;
	return rc;
}

/* A search's best trial: its values as params best.NAME and its metrics as
 * best.NAME. */
static int log_best(kft_tracker *t, job *j, const json_t *best, int64_t ms, kft_error *err)
{
	json_t *params = json_array(), *metrics = json_array(), *v;
	const char *k;
	json_object_foreach(json_object_get(best, "params"), k, v)
	{
		char key[KFT_TRACK_KEY_MAX + 1];
		snprintf(key, sizeof(key), "best.%s", k);
		if (params && json_is_string(v))
			json_array_append_new(params, json_pack("{s:s, s:s}", "key", key, "value",
			                                        json_string_value(v)));
	}
	json_t *ts = json_pack("{s:[]}", "metrics");
	json_object_foreach(json_object_get(best, "metrics"), k, v)
	{
		char key[KFT_TRACK_KEY_MAX + 1];
		snprintf(key, sizeof(key), "best.%s", k);
		if (ts && json_is_string(v))
			json_array_append_new(json_object_get(ts, "metrics"),
			                      json_pack("{s:s, s:s}", "name", key, "value",
			                                json_string_value(v)));
	}
	int rc = params && metrics && ts ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		kft_track_report_metrics(ts, ms, 0, metrics);
	if (rc == 0 && (json_array_size(params) || json_array_size(metrics)))
		rc = kft_mlflow_log_batch(t->m, j->run_id, metrics, params, NULL, err);
	json_decref(params);
	json_decref(metrics);
	json_decref(ts);
	return rc;
}

/* One op at the head (or, for reports, a run of them). *n: ops taken. */
static int process(kft_tracker *t, op *o, size_t *n, kft_error *err)
{
	job *j = o->kind == OP_START ? job_of_start(t, o) : job_find(t, o->uid);
	*n = 1;
	if (!j && o->kind == OP_START)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!j)
		return 0; /* a job no start was seen for (not tracked) */
	int rc = ensure_run(t, j, err);
	if (rc)
		return rc;
	switch (o->kind) {
	case OP_START: return 0;
	case OP_REPORT: return send_reports(t, j, o, n, err);
	case OP_ARTIFACT:
		return j->artifact_uri ? kft_mlflow_artifact_put(t->m, j->artifact_uri, o->rel,
		                                                 o->path, err)
		                       : 0;
	case OP_END:
		if (o->json && (rc = log_best(t, j, o->json, o->ms, err)) != 0)
			return rc;
		if ((rc = kft_mlflow_run_update(t->m, j->run_id, o->status, o->ms, err)) == 0) {
			j->ended = true;
			say(t, 0, "tracking: run %s of %s ended %s", j->run_id, j->run.name,
			    o->status);
		}
		return rc;
	}
	return 0;
}

/* Takes n ops off the head (the thread, after they were handled). */
static void pop(kft_tracker *t, size_t n)
{
	pthread_mutex_lock(&t->mu);
	while (n-- && t->head) {
		op *o = t->head;
		t->head = o->next;
		if (!t->head)
			t->tail = NULL;
		t->queued--;
		if (o->kind == OP_REPORT)
			t->reports--;
		op_free(o);
	}
	t->busy = false;
	t->in_hand = 0;
	pthread_cond_broadcast(&t->idle);
	pthread_mutex_unlock(&t->mu);
}

/* Waits ms, or less when told to stop. */
static void pause_ms(kft_tracker *t, int64_t ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->mu);
	t->busy = false;
	t->in_hand = 0;
	pthread_cond_broadcast(&t->idle);
	while (!t->stop && pthread_cond_timedwait(&t->wake, &t->mu, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&t->mu);
}

static void after_failure(kft_tracker *t, op *o, int rc, const kft_error *err)
{
	if (rc == KFT_EUNAVAILABLE) {
		unsigned char r = 0;
		kft_random_bytes(NULL, &r, 1);
		if (!t->failing)
			say(t, 1,
			    "tracking: %s (will retry with back-off; reports wait, at most %zu)",
			    err->message, t->max_reports);
		t->failing = true;
		pause_ms(t, kft_track_backoff_ms(++t->attempt, t->backoff_max_ms, r / 255.0));
		return;
	}
	say(t, 1, "tracking: %s for %s: dropped: %s",
	    o->kind == OP_START    ? "start"
	    : o->kind == OP_REPORT ? "report"
	    : o->kind == OP_END    ? "end"
	                           : "artifact",
	    o->uid, err->message);
	pop(t, 1);
}

static void *thread_main(void *arg)
{
	kft_tracker *t = arg;
	for (;;) {
		pthread_mutex_lock(&t->mu);
		while (!t->stop && !t->head)
			pthread_cond_wait(&t->wake, &t->mu);
		if (t->stop) {
			pthread_mutex_unlock(&t->mu);
			return NULL;
		}
		op *o = t->head;
		size_t dropped = t->dropped;
		t->dropped = 0;
		t->busy = true;
		t->in_hand = 1;
		pthread_mutex_unlock(&t->mu);
		if (dropped)
			say(t, 1, "tracking: %zu report%s dropped while the server was unavailable",
			    dropped, dropped == 1 ? "" : "s");
		kft_error err = {0};
		size_t n = 1;
		int rc = process(t, o, &n, &err);
		if (rc) {
			after_failure(t, o, rc, &err);
			continue;
		}
		if (t->failing)
			say(t, 0, "tracking: %s reachable again", kft_mlflow_uri(t->m));
		t->failing = false;
		t->attempt = 0;
		pop(t, n);
	}
}

/* ---- life -------------------------------------------------------------------------- */

int kft_tracker_new(const kft_tracker_opts *o, kft_tracker **out, kft_error *err)
{
	*out = NULL;
	kft_tracker *t = calloc(1, sizeof(*t));
	if (!t)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_mlflow_open(&o->mlflow, &t->m, err);
	if (rc) {
		free(t);
		return rc;
	}
	t->default_experiment = o->default_experiment ? strdup(o->default_experiment) : NULL;
	t->max_reports = o->max_reports ? o->max_reports : DEFAULT_MAX_REPORTS;
	t->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : DEFAULT_BACKOFF_MAX;
	t->log = o->log;
	t->log_ctx = o->log_ctx;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->wake, NULL);
	pthread_cond_init(&t->idle, NULL);
	/* the thread takes no signal: the supervisor's signalfd and the
	 * controller's handlers see them all */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t->thread, NULL, thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		kft_mlflow_close(t->m);
		free(t->default_experiment);
		free(t);
		return kft_error_set(err, KFT_EIO, "tracking: cannot start a thread: %s",
		                     strerror(rc));
	}
	*out = t;
	return 0;
}

size_t kft_tracker_flush(kft_tracker *t, int64_t timeout_ms)
{
	if (!t)
		return 0;
	long long end = kft_clock_mono_ms() + timeout_ms;
	pthread_mutex_lock(&t->mu);
	while (t->queued) {
		long long left = end - kft_clock_mono_ms();
		if (left <= 0)
			break;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)(left / 1000);
		until.tv_nsec += (long)(left % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&t->idle, &t->mu, &until);
	}
	size_t left = t->queued;
	pthread_mutex_unlock(&t->mu);
	return left;
}

int kft_tracker_run_id(kft_tracker *t, const char *uid, char *buf, size_t size)
{
	int found = 0;
	if (!t || !uid)
		return 0;
	pthread_mutex_lock(&t->mu);
	for (job *j = t->jobs; j; j = j->next)
		if (strcmp(j->uid, uid) == 0 && j->has_run) {
			snprintf(buf, size, "%s", j->run_id);
			found = 1;
		}
	pthread_mutex_unlock(&t->mu);
	return found;
}

void kft_tracker_free(kft_tracker *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_broadcast(&t->wake);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	if (t->queued)
		say(t, 1, "tracking: %zu calls to %s not made (the server was unavailable)",
		    t->queued, kft_mlflow_uri(t->m));
	while (t->head) {
		op *o = t->head;
		t->head = o->next;
		op_free(o);
	}
	while (t->jobs) {
		job *j = t->jobs;
		t->jobs = j->next;
		job_free(j);
	}
	kft_mlflow_close(t->m);
	free(t->default_experiment);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->wake);
	pthread_cond_destroy(&t->idle);
	free(t);
}
