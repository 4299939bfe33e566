/*
 * cluster.c - the dashboard's job source when it serves a cluster's
 * TrainJobs (`kftrainer ui --kubeconfig`): the same documents the local
 * source builds from the store, built from the API server (see
 * ui_internal.h, docs/ui.md).
 *
 * Informers (kube_cache.h) keep TrainJobs, JobSets, the JobSets' Jobs and
 * Pods (by the label jobset.sigs.k8s.io/jobset-name) and Events of the
 * namespace (or of all) in memory, so the list and a job page, which the
 * page refreshes every second, cost the API server nothing; YAML, runtimes
 * and logs are asked for when wanted. events.k8s.io/v1 and core/v1 Events
 * are one resource served twice: the core view shows both (an
 * events.k8s.io Event's note, regarding and eventTime are its message,
 * involvedObject and eventTime there), so it is the one watched.
 *
 * The metrics history is what this process saw: every distinct
 * status.trainerStatus of a TrainJob (upstream's TrainJobStatus: progress,
 * remaining seconds, metrics, lastUpdatedTime) is recorded with the time it
 * arrived, at most KFT_UI_HISTORY_MAX per job (the oldest go first), and
 * forgotten with the job. A cluster keeps only the latest.
 *
 * A pod is addressed as the local engine's are, by step and index: its
 * replicated job (jobset.sigs.k8s.io/replicatedjob-name) and its place
 * among the step's pods ordered by job index and completion index. A pod
 * the Job controller replaced counts as a restart of its place; the newest
 * pod of a place is the one shown and whose log is read.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "kube/kube_cache.h"
#include "ui/ui_internal.h"
#include "util/strbuf.h"

#define SYNC_TIMEOUT_S 30.0
#define OTHERS_SYNC_S  5.0 /* for all the other kinds together */
#define JOBSET_LABEL   "jobset.sigs.k8s.io/jobset-name"
#define RJOB_LABEL     "jobset.sigs.k8s.io/replicatedjob-name"
#define JOBIDX_LABEL   "jobset.sigs.k8s.io/job-index"
#define COMPLETION_IDX "batch.kubernetes.io/job-completion-index"
#define EVENTS_MAX     200
#define TAIL_LINES     10000

enum { INF_TRAINJOBS, INF_JOBSETS, INF_JOBS, INF_PODS, INF_EVENTS, INF_N };

struct kft_ui_cluster {
	kft_kube *kube;
	char *ns; /* NULL: all namespaces */
	kft_informer *inf[INF_N];
	pthread_mutex_t mu; /* history, seq */
	json_t *history;    /* "ns/name" -> [{"id", "recorded", "trainerStatus"}] */
	long long seq;
};

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static const char *label(const json_t *o, const char *key)
{
	return json_string_value(
	        json_object_get(json_object_get(json_object_get(o, "metadata"), "labels"), key));
}

/* ---- the history of reports ---------------------------------------------------- */

static void job_key(const json_t *job, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", str_at(job, "metadata", "namespace") ?: "",
	         str_at(job, "metadata", "name") ?: "");
}

static void record(kft_ui_cluster *cl, const json_t *job)
{
	const json_t *ts = json_object_get(json_object_get(job, "status"), "trainerStatus");
	char key[512], now[40];
	if (!json_is_object(ts) || json_object_size(ts) == 0)
		return;
	job_key(job, key, sizeof(key));
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	pthread_mutex_lock(&cl->mu);
	json_t *list = json_object_get(cl->history, key);
	if (!list) {
		list = json_array();
		json_object_set_new(cl->history, key, list);
	}
	const json_t *last = json_array_get(list, json_array_size(list) - 1);
	if (list && !json_equal(json_object_get(last, "trainerStatus"), ts)) {
		json_array_append_new(list,
		                      json_pack("{s:I, s:s, s:O}", "id", (json_int_t)++cl->seq,
		                                "recorded", now, "trainerStatus", ts));
		while (json_array_size(list) > KFT_UI_HISTORY_MAX)
			json_array_remove(list, 0);
	}
	pthread_mutex_unlock(&cl->mu);
}

static void on_add(void *ctx, const json_t *obj, int initial)
{
	(void)initial;
	record(ctx, obj);
}

static void on_update(void *ctx, const json_t *old, const json_t *obj)
{
	(void)old;
	record(ctx, obj);
}

static void on_delete(void *ctx, const json_t *obj, int unknown)
{
	(void)unknown;
	kft_ui_cluster *cl = ctx;
	char key[512];
	job_key(obj, key, sizeof(key));
	pthread_mutex_lock(&cl->mu);
	json_object_del(cl->history, key);
	pthread_mutex_unlock(&cl->mu);
}

static json_t *metrics(kft_ui_conn *c, const char *ns, const char *name, long long after,
                       kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	char key[512];
	json_t *job = NULL;
	if (kft_informer_get(cl->inf[INF_TRAINJOBS], ns, name, &job) != 0) {
		kft_error_set(err, KFT_ENOTFOUND, "trainjobs.trainer.kubeflow.org \"%s\" not found",
		              name);
		return NULL;
	}
	json_decref(job);
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	json_t *out = json_array();
	pthread_mutex_lock(&cl->mu);
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(cl->history, key), i,
	                   r) if (json_integer_value(json_object_get(r, "id")) > after)
	        json_array_append(out, r);
	pthread_mutex_unlock(&cl->mu);
	return json_pack("{s:o}", "items", out);
}

static long long last_report(kft_ui_cluster *cl, const char *ns, const char *name)
{
	char key[512];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	pthread_mutex_lock(&cl->mu);
	const json_t *list = json_object_get(cl->history, key);
	long long id = json_integer_value(
	        json_object_get(json_array_get(list, json_array_size(list) - 1), "id"));
	pthread_mutex_unlock(&cl->mu);
	return id;
}

/* ---- indexes ------------------------------------------------------------------------ */

/* "ns/jobset" of an object labelled with its JobSet. */
static int index_jobset(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	(void)ctx;
	const char *js = label(obj, JOBSET_LABEL);
	char key[512];
	if (!js)
		return 0;
	snprintf(key, sizeof(key), "%s/%s", str_at(obj, "metadata", "namespace") ?: "", js);
	return kft_index_keys_add(keys, key);
}

/* "ns/name" of what an Event is about. */
static int index_involved(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	(void)ctx;
	const json_t *io = json_object_get(obj, "involvedObject");
	const char *name = json_string_value(json_object_get(io, "name"));
	const char *ns = json_string_value(json_object_get(io, "namespace"));
	char key[512];
	if (!name)
		return 0;
	snprintf(key, sizeof(key), "%s/%s", ns ? ns : str_at(obj, "metadata", "namespace") ?: "",
	         name);
	return kft_index_keys_add(keys, key);
}

static json_t *by_index(kft_ui_cluster *cl, int which, const char *index, const char *ns,
                        const char *name)
{
	char key[512];
	json_t *out = NULL;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (kft_informer_by_index(cl->inf[which], index, key, &out, NULL) != 0)
		out = json_array();
	return out;
}

/* ---- start and stop ------------------------------------------------------------------ */

static const kft_gvr *gvr_of(int which)
{
	switch (which) {
	case INF_TRAINJOBS: return kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainJob");
	case INF_JOBSETS: return kft_gvr_lookup("jobset.x-k8s.io/v1alpha2", "JobSet");
	case INF_JOBS: return kft_gvr_lookup("batch/v1", "Job");
	case INF_PODS: return kft_gvr_lookup("v1", "Pod");
	default: return kft_gvr_lookup("v1", "Event");
	}
}

int kft_ui_cluster_start(kft_kube *kube, const char *ns, kft_ui_cluster **out, kft_error *err)
{
	*out = NULL;
	kft_ui_cluster *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	pthread_mutex_init(&cl->mu, NULL);
	cl->kube = kube;
	cl->ns = ns && *ns ? strdup(ns) : NULL;
	cl->history = json_object();
	int rc = cl->history && (!ns || !*ns || cl->ns)
	                 ? 0
	                 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < INF_N; i++) {
		kft_informer_opts o = {.gvr = gvr_of(i), .namespace = cl->ns};
		if (i == INF_JOBS || i == INF_PODS)
			o.label_selector = JOBSET_LABEL;
		rc = kft_informer_new(kube, &o, &cl->inf[i], err);
		if (rc == 0 && (i == INF_JOBS || i == INF_PODS))
			rc = kft_informer_add_index(cl->inf[i], "jobset", index_jobset, NULL, err);
		if (rc == 0 && i == INF_EVENTS)
			rc = kft_informer_add_index(cl->inf[i], "involved", index_involved, NULL,
			                            err);
		if (rc == 0 && i == INF_TRAINJOBS) {
			kft_informer_handlers h = {on_add, on_update, on_delete, cl};
			rc = kft_informer_add_handlers(cl->inf[i], &h, err);
		}
		if (rc == 0)
			rc = kft_informer_start(cl->inf[i], err);
	}
	/* TrainJobs must be readable; the rest is shown when it comes (a
	 * cluster without JobSet, or RBAC that hides Events, still has jobs). */
	if (rc == 0 && kft_informer_wait_synced(cl->inf[INF_TRAINJOBS], SYNC_TIMEOUT_S, err) != 0)
		rc = kft_error_set(err, KFT_EUNAVAILABLE, "cannot list TrainJobs: %s",
		                   err->message);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; rc == 0 && i < INF_N; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		double left = OTHERS_SYNC_S - (double)(t.tv_sec - t0.tv_sec) -
		              (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
		if (left > 0)
			kft_informer_wait_synced(cl->inf[i], left, NULL);
	}
	if (rc) {
		kft_ui_cluster_stop(cl);
		return rc;
	}
	*out = cl;
	return 0;
}

void kft_ui_cluster_stop(kft_ui_cluster *cl)
{
	if (!cl)
		return;
	for (int i = 0; i < INF_N; i++)
		kft_informer_stop(cl->inf[i]);
	for (int i = 0; i < INF_N; i++)
		kft_informer_free(cl->inf[i]);
	json_decref(cl->history);
	pthread_mutex_destroy(&cl->mu);
	free(cl->ns);
	free(cl);
}

static const char *scope(kft_ui_conn *c)
{
	return kft_ui_cluster_of(c)->ns;
}

/* The namespace a TrainJob naming none is taken to be in. */
static const char *default_namespace(const kft_ui_cluster *cl)
{
	return cl->ns ? cl->ns : kft_kube_namespace(cl->kube);
}

/* ---- pods ---------------------------------------------------------------------------- */

static int int_label(const json_t *pod, const char *key)
{
	const char *v = label(pod, key);
	if (!v)
		v = json_string_value(json_object_get(
		        json_object_get(json_object_get(pod, "metadata"), "annotations"), key));
	return v ? atoi(v) : 0;
}

static int pod_order(const void *a, const void *b)
{
	const json_t *pa = *(json_t *const *)a, *pb = *(json_t *const *)b;
	int c = strcmp(label(pa, RJOB_LABEL) ?: "", label(pb, RJOB_LABEL) ?: "");
	if (!c)
		c = int_label(pa, JOBIDX_LABEL) - int_label(pb, JOBIDX_LABEL);
	if (!c)
		c = int_label(pa, COMPLETION_IDX) - int_label(pb, COMPLETION_IDX);
	if (!c)
		c = strcmp(str_at(pa, "metadata", "creationTimestamp") ?: "",
		           str_at(pb, "metadata", "creationTimestamp") ?: "");
	return c;
}

static bool same_place(const json_t *a, const json_t *b)
{
	return strcmp(label(a, RJOB_LABEL) ?: "", label(b, RJOB_LABEL) ?: "") == 0 &&
	       int_label(a, JOBIDX_LABEL) == int_label(b, JOBIDX_LABEL) &&
	       int_label(a, COMPLETION_IDX) == int_label(b, COMPLETION_IDX);
}

/* The first container's terminated state (now, else last). */
static const json_t *terminated(const json_t *pod, long long *restarts)
{
	const json_t *t = NULL;
	size_t i;
	const json_t *cs;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i,
	                   cs)
	{
		*restarts += json_integer_value(json_object_get(cs, "restartCount"));
		const json_t *now = json_object_get(json_object_get(cs, "state"), "terminated");
		const json_t *before =
		        json_object_get(json_object_get(cs, "lastState"), "terminated");
		if (!t)
			t = now ? now : before;
	}
	return t;
}

/* The JobSet's pods, one row per place (see the top), in order; with
 * pods_out, the newest pod of each place too (same order). */
static json_t *pod_rows(kft_ui_cluster *cl, const char *ns, const char *name, json_t **pods_out)
{
	json_t *pods = by_index(cl, INF_PODS, "jobset", ns, name);
	size_t n = json_array_size(pods);
	const json_t **v = calloc(n ? n : 1, sizeof(*v));
	json_t *rows = json_array(), *newest = json_array();
	for (size_t i = 0; v && i < n; i++)
		v[i] = json_array_get(pods, i);
	if (v)
		qsort(v, n, sizeof(*v), pod_order);
	const char *step_before = "";
	int index = -1;
	for (size_t i = 0; v && i < n; i++) {
		if (i + 1 < n && same_place(v[i], v[i + 1]))
			continue; /* an older pod of the same place */
		long long replaced = 0, restarts = 0;
		for (size_t j = i; j > 0 && same_place(v[j - 1], v[i]); j--)
			replaced++;
		const json_t *p = v[i];
		const char *step = label(p, RJOB_LABEL) ?: "";
		index = strcmp(step, step_before) == 0 ? index + 1 : 0;
		step_before = step;
		const json_t *st = json_object_get(p, "status");
		const json_t *t = terminated(p, &restarts);
		const char *phase = json_string_value(json_object_get(st, "phase")) ?: "Pending";
		if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
			phase = "Terminating";
		json_array_append_new(
		        rows,
		        json_pack(
		                "{s:s?, s:s, s:i, s:s, s:I, s:I, s:i, s:s?, s:s?, s:s?, s:s?, s:b}",
		                "pod", str_at(p, "metadata", "name"), "step", step, "index", index,
		                "state", phase, "restarts", (json_int_t)(restarts + replaced),
		                "exitCode",
		                (json_int_t)json_integer_value(json_object_get(t, "exitCode")),
		                "signal", (int)json_integer_value(json_object_get(t, "signal")),
		                "reason",
		                json_string_value(json_object_get(t, "reason"))
		                        ?: json_string_value(json_object_get(st, "reason")),
		                "message",
		                json_string_value(json_object_get(t, "message"))
		                        ?: json_string_value(json_object_get(st, "message")),
		                "started", json_string_value(json_object_get(st, "startTime")),
		                "finished", json_string_value(json_object_get(t, "finishedAt")),
		                "log",
		                json_object_get(json_object_get(p, "spec"), "nodeName") != NULL));
		json_array_append(newest, (json_t *)p);
	}
	free(v);
	json_decref(pods);
	if (pods_out)
		*pods_out = newest;
	else
		json_decref(newest);
	return rows;
}

/* ---- rows ---------------------------------------------------------------------------- */

static bool condition_true(const json_t *obj, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
			return true;
	}
	return false;
}

/* The words `kftrainer get` uses for a local job, from the cluster's
 * objects: Terminating, Complete, Failed, Suspended, Running (a pod
 * running or a JobSet reporting active Jobs), else Created. */
static const char *phase(const json_t *job, const json_t *jobset, const json_t *rows)
{
	if (json_object_get(json_object_get(job, "metadata"), "deletionTimestamp"))
		return "Terminating";
	if (condition_true(job, "Complete"))
		return "Complete";
	if (condition_true(job, "Failed"))
		return "Failed";
	if (condition_true(job, "Suspended"))
		return "Suspended";
	size_t i;
	const json_t *r;
	json_array_foreach(rows, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "state")) ?: "", "Running") == 0)
			return "Running";
	}
	json_array_foreach(
	        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus"), i, r)
	{
		if (json_integer_value(json_object_get(r, "active")) > 0)
			return "Running";
	}
	return "Created";
}

static json_t *row_of(kft_ui_cluster *cl, const json_t *job, json_t **rows_out)
{
	const char *ns = str_at(job, "metadata", "namespace") ?: "";
	const char *name = str_at(job, "metadata", "name") ?: "";
	json_t *jobset = NULL, *rows = pod_rows(cl, ns, name, NULL);
	kft_informer_get(cl->inf[INF_JOBSETS], ns, name, &jobset);
	const json_t *nn = json_object_get(json_object_get(json_object_get(job, "spec"), "trainer"),
	                                   "numNodes");
	char nodes[32] = "-";
	long long restarts = 0;
	size_t i, node_pods = 0;
	const json_t *r;
	json_array_foreach(rows, i, r)
	{
		restarts += json_integer_value(json_object_get(r, "restarts"));
		if (strcmp(json_string_value(json_object_get(r, "step")) ?: "", "node") == 0)
			node_pods++;
	}
	if (json_is_integer(nn))
		snprintf(nodes, sizeof(nodes), "%" JSON_INTEGER_FORMAT, json_integer_value(nn));
	else if (node_pods)
		snprintf(nodes, sizeof(nodes), "%zu", node_pods);
	json_t *row =
	        kft_ui_row(job, json_pack("{s:s, s:s, s:I}", "status", phase(job, jobset, rows),
	                                  "nodes", nodes, "restarts", (json_int_t)restarts));
	json_decref(jobset);
	if (rows_out)
		*rows_out = rows;
	else
		json_decref(rows);
	return row;
}

static json_t *jobs(kft_ui_conn *c, kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	json_t *jobs = NULL, *rows = json_array();
	if (!rows || kft_informer_list(cl->inf[INF_TRAINJOBS], cl->ns, &jobs) != 0) {
		json_decref(rows);
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	size_t i;
	const json_t *job;
	json_array_foreach(jobs, i, job) json_array_append_new(rows, row_of(cl, job, NULL));
	json_decref(jobs);
	return json_pack("{s:o}", "items", rows);
}

/* ---- one job ---------------------------------------------------------------------------- */

static const char *event_time(const json_t *e)
{
	const char *t = json_string_value(json_object_get(e, "lastTimestamp"));
	if (!t)
		t = json_string_value(
		        json_object_get(json_object_get(e, "series"), "lastObservedTime"));
	if (!t)
		t = json_string_value(json_object_get(e, "eventTime"));
	return t ? t : str_at(e, "metadata", "creationTimestamp") ?: "";
}

static int event_order(const void *a, const void *b)
{
	return strcmp(event_time(*(json_t *const *)a), event_time(*(json_t *const *)b));
}

static void add_events(kft_ui_cluster *cl, json_t *into, const char *ns, const char *name)
{
	json_t *evs = by_index(cl, INF_EVENTS, "involved", ns, name);
	json_array_extend(into, evs);
	json_decref(evs);
}

/* Events about the TrainJob, its JobSet, Jobs and pods, oldest first, the
 * last EVENTS_MAX. */
static json_t *job_events(kft_ui_cluster *cl, const char *ns, const char *name)
{
	json_t *all = json_array(), *jobs = by_index(cl, INF_JOBS, "jobset", ns, name),
	       *pods = by_index(cl, INF_PODS, "jobset", ns, name);
	size_t i;
	const json_t *o;
	add_events(cl, all, ns, name); /* the TrainJob and its JobSet share the name */
	json_array_foreach(jobs, i, o) add_events(cl, all, ns, str_at(o, "metadata", "name") ?: "");
	json_array_foreach(pods, i, o) add_events(cl, all, ns, str_at(o, "metadata", "name") ?: "");
	json_decref(jobs);
	json_decref(pods);
	size_t n = json_array_size(all);
	json_t **v = calloc(n ? n : 1, sizeof(*v)), *out = json_array();
	for (i = 0; v && i < n; i++)
		v[i] = json_array_get(all, i);
	if (v)
		qsort(v, n, sizeof(*v), event_order);
	for (i = n > EVENTS_MAX ? n - EVENTS_MAX : 0; v && i < n; i++) {
		json_t *e = json_deep_copy(v[i]);
		/* events.k8s.io's fields in the core view's names the page reads */
		if (e && !json_object_get(e, "message") && json_object_get(e, "note"))
			json_object_set(e, "message", json_object_get(e, "note"));
		if (e && !json_object_get(e, "lastTimestamp"))
			json_object_set_new(e, "lastTimestamp", json_string(event_time(v[i])));
		json_array_append_new(out, e);
	}
	free(v);
	json_decref(all);
	return out;
}

static json_t *job(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	json_t *job = NULL, *jobset = NULL, *rows = NULL;
	if (kft_informer_get(cl->inf[INF_TRAINJOBS], ns, name, &job) != 0) {
		kft_error_set(err, KFT_ENOTFOUND, "trainjobs.trainer.kubeflow.org \"%s\" not found",
		              name);
		return NULL;
	}
	json_t *row = row_of(cl, job, &rows);
	kft_informer_get(cl->inf[INF_JOBSETS], ns, name, &jobset);
	json_t *objects = json_array();
	if (jobset)
		json_array_append(objects, jobset);
	json_t *doc = json_pack("{s:o, s:O, s:o, s:o, s:o, s:I}", "row", row, "trainjob", job,
	                        "pods", rows, "steps", kft_ui_step_commands(objects), "events",
	                        job_events(cl, ns, name), "lastReport",
	                        (json_int_t)last_report(cl, ns, name));
	json_decref(objects);
	json_decref(jobset);
	json_decref(job);
	if (!doc)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return doc;
}

/* Secrets and ConfigMaps the TrainJob owns (by uid), appended to out. */
static void owned(kft_ui_cluster *cl, const char *kind, const char *ns, const char *uid,
                  json_t *out)
{
	json_t *list = NULL;
	if (!uid || kft_kube_list(cl->kube, kft_gvr_lookup("v1", kind), ns, NULL, &list, NULL) != 0)
		return;
	size_t i, k;
	json_t *o;
	const json_t *ref;
	json_array_foreach(json_object_get(list, "items"), i, o)
	{
		json_array_foreach(
		        json_object_get(json_object_get(o, "metadata"), "ownerReferences"), k, ref)
		{
			if (strcmp(json_string_value(json_object_get(ref, "uid")) ?: "", uid) ==
			    0) {
				json_object_del(json_object_get(o, "metadata"), "managedFields");
				json_array_append(out, o);
				break;
			}
		}
	}
	json_decref(list);
}

static int objects(kft_ui_conn *c, const char *ns, const char *name, json_t **out, kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	json_t *job = NULL, *jobset = NULL, *o = json_array();
	*out = NULL;
	if (!o || kft_informer_get(cl->inf[INF_TRAINJOBS], ns, name, &job) != 0) {
		json_decref(o);
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "trainjobs.trainer.kubeflow.org \"%s\" not found", name);
	}
	json_array_append(o, job);
	if (kft_informer_get(cl->inf[INF_JOBSETS], ns, name, &jobset) == 0)
		json_array_append_new(o, jobset);
	json_t *jobs = by_index(cl, INF_JOBS, "jobset", ns, name), *pods = NULL;
	json_decref(pod_rows(cl, ns, name, &pods));
	json_array_extend(o, jobs);
	json_array_extend(o, pods);
	json_decref(jobs);
	json_decref(pods);
	const char *uid = str_at(job, "metadata", "uid");
	owned(cl, "ConfigMap", ns, uid, o);
	owned(cl, "Secret", ns, uid, o);
	json_decref(job);
	/* copies (the cache's trees are shared, and the caller redacts), with
	 * apiVersion and kind first as kubectl shows them */
	*out = json_array();
	size_t i;
	const json_t *obj;
	json_array_foreach(o, i, obj)
	{
		json_t *copy =
		        json_pack("{s:O?, s:O?}", "apiVersion", json_object_get(obj, "apiVersion"),
		                  "kind", json_object_get(obj, "kind"));
		json_t *rest = json_deep_copy(obj);
		json_object_update_missing(copy, rest);
		json_decref(rest);
		json_array_append_new(*out, copy);
	}
	json_decref(o);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- actions and runtimes ------------------------------------------------------------------- */

static int action(kft_ui_conn *c, const char *ns, const char *name, const char *verb,
                  kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	const kft_gvr *g = gvr_of(INF_TRAINJOBS);
	bool suspend = strcmp(verb, "suspend") == 0;
	if (suspend || strcmp(verb, "resume") == 0) {
		json_t *patch = json_pack("{s:{s:b}}", "spec", "suspend", suspend);
		int rc = kft_kube_patch(cl->kube, g, ns, name, KFT_PATCH_MERGE, patch, NULL, NULL,
		                        err);
		json_decref(patch);
		return rc;
	}
	if (strcmp(verb, "delete") == 0)
		return kft_kube_delete(cl->kube, g, ns, name, NULL, NULL, err);
	return kft_error_set(err, KFT_ENOTFOUND, "no such action");
}

static int append_items(kft_ui_cluster *cl, const kft_gvr *g, const char *ns, json_t *out,
                        kft_error *err)
{
	json_t *list = NULL;
	int rc = kft_kube_list(cl->kube, g, ns, NULL, &list, err);
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(list, "items"), i, o)
	{
		json_object_del(json_object_get(o, "metadata"), "managedFields");
		json_array_append(out, o);
	}
	json_decref(list);
	return rc;
}

static int list_runtimes(kft_ui_cluster *cl, json_t **out, kft_error *err)
{
	*out = json_array();
	int rc = append_items(
	        cl, kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime"), NULL,
	        *out, err);
	if (rc == 0)
		rc = append_items(
		        cl, kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainingRuntime"),
		        cl->ns, *out, err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

/* The ClusterTrainingRuntimes and the namespace's TrainingRuntimes. */
static int runtimes(kft_ui_conn *c, json_t **out, char **problems)
{
	kft_error err = {0};
	*problems = NULL;
	int rc = list_runtimes(kft_ui_cluster_of(c), out, &err);
	if (rc)
		*problems = strdup(err.message);
	return rc;
}

/* Rendered as the API server would resolve it: in the namespace the server
 * watches unless the TrainJob names one, against the cluster's runtimes,
 * through the verb's render_with hook (none: no preview). */
static int render(kft_ui_conn *c, json_t *trainjob, json_t **out, char **problems)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	json_t *meta = json_object_get(trainjob, "metadata"), *list = NULL;
	*out = NULL;
	*problems = NULL;
	if (!h->render_with) {
		*problems = strdup("no preview against a cluster");
		return KFT_ENOTFOUND;
	}
	if (json_is_object(meta) && !json_object_get(meta, "namespace"))
		json_object_set_new(meta, "namespace", json_string(default_namespace(cl)));
	int rc = runtimes(c, &list, problems);
	if (rc == 0) {
		kft_ui_hooks_lock(c);
		rc = h->render_with(h->ctx, trainjob, list, out, problems);
		kft_ui_hooks_unlock(c);
	}
	json_decref(list);
	return rc;
}

/* ---- logs ------------------------------------------------------------------------------------ */

typedef struct log_stream {
	kft_ui_log *out;
	atomic_int stop;
	atomic_int done;
} log_stream;

static int log_sink(void *ctx, const char *data, size_t len)
{
	log_stream *s = ctx;
	return kft_ui_log_write(s->out, data, len) == 0 ? 0 : KFT_EIO;
}

/* Watches the client while the log streams: its leaving (or the server
 * stopping) ends a follow that has nothing to send. */
static void *log_guard(void *arg)
{
	log_stream *s = arg;
	while (!atomic_load(&s->done))
		if (kft_ui_wait(s->out->c, 200) != 0) {
			atomic_store(&s->stop, 1);
			break;
		}
	return NULL;
}

/* The newest pod of step/index (a new reference), or NULL. */
static json_t *pod_at(kft_ui_cluster *cl, const kft_ui_log_req *r)
{
	json_t *pods = NULL, *rows = pod_rows(cl, r->ns, r->name, &pods), *pod = NULL;
	size_t i;
	const json_t *row;
	json_array_foreach(rows, i, row)
	{
		if (strcmp(json_string_value(json_object_get(row, "step")) ?: "", r->step) == 0 &&
		    json_integer_value(json_object_get(row, "index")) == r->index)
			pod = json_incref(json_array_get(pods, i));
	}
	json_decref(rows);
	json_decref(pods);
	return pod;
}

/* The pod's log subresource path for r (its first container). */
static void log_path(const json_t *pod, const kft_ui_log_req *r, kft_strbuf *path)
{
	const char *container = json_string_value(json_object_get(
	        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0),
	        "name"));
	kft_strbuf_printf(path, "/api/v1/namespaces/%s/pods/%s/log?container=%s", r->ns,
	                  str_at(pod, "metadata", "name") ?: "", container ? container : "");
	if (r->follow)
		kft_strbuf_puts(path, "&follow=true");
	if (r->tail) /* the API server tails by lines, not bytes */
		kft_strbuf_printf(path, "&tailLines=%d", TAIL_LINES);
}

static int send_log(kft_ui_conn *c, const kft_ui_log_req *r, kft_ui_log *out, kft_error *err)
{
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	json_t *pod = pod_at(cl, r);
	if (!pod)
		return kft_error_set(err, KFT_ENOTFOUND, "no such pod");
	kft_strbuf path;
	kft_strbuf_init(&path);
	log_path(pod, r, &path);
	json_decref(pod);
	log_stream s = {.out = out};
	pthread_t guard;
	bool guarded = r->follow && pthread_create(&guard, NULL, log_guard, &s) == 0;
	int rc = path.failed ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                     : kft_kube_stream(cl->kube, kft_strbuf_str(&path), log_sink, &s,
	                                       &s.stop, err);
	atomic_store(&s.done, 1);
	if (guarded)
		pthread_join(guard, NULL);
	kft_strbuf_free(&path);
	if (rc && !out->started && rc != KFT_ENOTFOUND)
		err->code = rc = KFT_EUNAVAILABLE; /* the API server's failure: 503, its words */
	return out->started ? 0 : rc;
}

const kft_ui_source kft_ui_cluster_source = {
        .mode = "cluster",
        .scope = scope,
        .jobs = jobs,
        .job = job,
        .objects = objects,
        .metrics = metrics,
        .action = action,
        .runtimes = runtimes,
        .render = render,
        .log = send_log,
};
