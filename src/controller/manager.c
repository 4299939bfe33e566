/*
 * manager.c - kft_cm_run: the controller manager's life, in the order
 * controller-runtime's manager follows.
 *
 *   1. health and metrics servers up (always, leader or not);
 *   2. informers for TrainJobs, both runtime kinds and the child kinds the
 *      plugins' watch_kinds name (a kind whose API the server does not
 *      serve is skipped with an error line, as upstream's plugins do), plus
 *      ConfigMaps for the runtime snapshots; with a PodGroup kind served,
 *      LimitRanges and RuntimeClasses (metadata only) whose changes requeue
 *      suspended TrainJobs, found through indexes of TrainJobs by runtime
 *      and of runtimes by runtimeClassName; these two never hold back
 *      readiness;
 *   3. with leader election, campaign for the Lease; the caches fill
 *      meanwhile, the reconcilers wait for leadership;
 *   4. once every cache synced (at most 2 minutes, controller-runtime's
 *      CacheSyncTimeout) /readyz turns ok, and the leader starts the
 *      workers of the three controllers;
 *   5. SIGTERM/SIGINT: queues shut down, workers finish the reconcile they
 *      are in and exit (the rest is relisted by whoever runs next), informers
 *      stop, the Lease is released, servers stop; exit 0. Losing the Lease
 *      ends the run with an error instead, so the Deployment restarts us.
 *
 * Signals are blocked in every thread and taken by one thread with sigwait,
 * from before the first API call: it cancels the client's calls at once, so
 * a SIGTERM during a start-up stuck on an unreachable server is not held up
 * by retries. The main thread polls for it every 100 ms, with the leader
 * state and the cache sync, and every 5 s writes the counts of event series
 * that went quiet (kft_kube_events_flush).
 *
 * With the RuntimeInUseFinalizer gate, every TrainJob event also queues its
 * runtime (a second later) for the runtime controllers, as Trainer v2.2's
 * TrainJob watchers did.
 *
 * Where the API server serves OptimizationJobs (upstream master's kind), a
 * fourth controller runs them (optimization.c); a trial TrainJob's events
 * queue its OptimizationJob, found by label through a TrainJob index.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_internal.h"
#include "hpo/hpo.h"
#include "util/secret.h"
#include "kftrainer/constants.h"

#define CACHE_SYNC_TIMEOUT_S 120
#define SA_NAMESPACE_FILE    "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* What start-up last said of one informer's failures (report_failures). */
typedef struct failure_seen {
	uint64_t errors;
	char last[256];
	struct timespec logged;
} failure_seen;

typedef struct run_state {
	kft_leader *leader;
	atomic_int leading;
	int workers_started;
	struct timespec started;
	failure_seen failures[4 + KFT_CM_MAX_CHILD_KINDS];
} run_state;

/* ---- informer handlers --------------------------------------------------------------- */

static void enqueue_key(kft_workqueue *q, const json_t *obj)
{
	char key[KFT_CACHE_KEY_MAX];
	if (kft_cache_key(obj, key, sizeof(key)) == 0)
		kft_workqueue_add(q, key);
}

static void log_trainjob_event(kft_cm *cm, const char *what, const json_t *obj)
{
	const json_t *md = json_object_get(obj, "metadata");
	KFT_LOG(cm->lg, KFT_LOG_INFO, "trainjob-controller", what,
	        json_pack("{s:{s:O?, s:O?}}", "trainJob", "name", json_object_get(md, "name"),
	                  "namespace", json_object_get(md, "namespace")));
}

/* The RuntimeInUseFinalizer gate: a TrainJob's create, update (its new
 * state) and delete (its last state) look at its runtime again a second
 * later, as Trainer v2.2's TrainJob watchers did. */
static void notify_runtime(kft_cm *cm, const json_t *job)
{
	char key[KFT_CACHE_KEY_MAX + 64];
	if (!(cm->cfg->features & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER) ||
	    kft_cm_trainjob_runtime_key(job, key, sizeof(key)) != 0)
		return;
	/* "TrainingRuntime/ns/name" -> queue key "ns/name"; cluster: "name". */
	const char *slash = strchr(key, '/');
	int cluster =
	        strncmp(key, KFT_KIND_CLUSTER_RUNTIME "/", sizeof(KFT_KIND_CLUSTER_RUNTIME)) == 0;
	kft_workqueue_add_after(cm->ctl[cluster ? 2 : 1].queue, slash + 1, 1.0);
}

/* A trial's change looks at its OptimizationJob again. */
static void notify_optimization(kft_cm *cm, const json_t *job)
{
	char key[KFT_CACHE_KEY_MAX];
	if (cm->optjobs && kft_cm_optimization_key(job, key, sizeof(key)) == 0)
		kft_workqueue_add(cm->ctl[KFT_CM_OPTIMIZATION].queue, key);
}

static void trainjob_add(void *ctx, const json_t *obj, int initial)
{
	kft_cm *cm = ctx;
	char key[KFT_CACHE_KEY_MAX];
	log_trainjob_event(cm, "TrainJob create event", obj);
	/* What the first list finds waits behind what changes after it, as
	 * controller-runtime's priority queue orders them. */
	if (kft_cache_key(obj, key, sizeof(key)) == 0)
		(initial ? kft_workqueue_add_low : kft_workqueue_add)(cm->ctl[0].queue, key);
	notify_runtime(cm, obj);
	notify_optimization(cm, obj);
}

static void trainjob_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	kft_cm *cm = ctx;
	(void)old_obj;
	log_trainjob_event(cm, "TrainJob update event", new_obj);
	enqueue_key(cm->ctl[0].queue, new_obj);
	notify_runtime(cm, new_obj);
	notify_optimization(cm, new_obj);
}

static void trainjob_delete(void *ctx, const json_t *obj, int unknown)
{
	kft_cm *cm = ctx;
	(void)unknown;
	log_trainjob_event(cm, "TrainJob delete event", obj);
	enqueue_key(cm->ctl[0].queue, obj);
	notify_runtime(cm, obj);
	notify_optimization(cm, obj);
}

/* Children enqueue the TrainJob that controls them (EnqueueRequestForOwner
 * with OnlyControllerOwner). A child's change (a JobSet's status, mostly)
 * queues its TrainJob behind the TrainJobs that changed themselves: in a
 * burst of new TrainJobs each gets its JobSet and first status before the
 * earlier ones' JobSet status is copied (the API server and the client's
 * rate limit serve the first ones first). A child that appears or goes is
 * queued as ever. */
static void enqueue_owner(kft_cm *cm, const json_t *obj, int low)
{
	char key[KFT_CACHE_KEY_MAX];
	if (obj && kft_cache_controller_owner_key(obj, KFT_GROUP, KFT_KIND_TRAINJOB, key,
	                                          sizeof(key)) == 0)
		(low ? kft_workqueue_add_low : kft_workqueue_add)(cm->ctl[0].queue, key);
}

static void child_add(void *ctx, const json_t *obj, int initial)
{
	enqueue_owner(ctx, obj, initial);
}

static void child_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	enqueue_owner(ctx, old_obj, 1);
	enqueue_owner(ctx, new_obj, 1);
}

static void child_delete(void *ctx, const json_t *obj, int unknown)
{
	(void)unknown;
	enqueue_owner(ctx, obj, 0);
}

static void runtime_add(void *ctx, const json_t *obj, int initial)
{
	(void)initial;
	enqueue_key(ctx, obj);
}

static void runtime_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	enqueue_key(ctx, new_obj);
}

/* ---- the PodGroup plugins' LimitRange and RuntimeClass watches ------------------------- */

static void requeue_suspended(kft_cm *cm, const json_t *jobs)
{
	size_t i;
	const json_t *job;
	json_array_foreach(jobs, i, job)
	{
		if (kft_cm_trainjob_suspended(job))
			enqueue_key(cm->ctl[0].queue, job);
	}
}

/* A LimitRange changed: the suspended TrainJobs of its namespace (the
 * PodGroup's minResources depend on the namespace's defaults). */
static void limit_range_changed(kft_cm *cm, const json_t *lr)
{
	const json_t *ns = json_object_get(json_object_get(lr, "metadata"), "namespace");
	json_t *jobs = NULL;
	if (json_is_string(ns) &&
	    kft_informer_list(cm->trainjobs, json_string_value(ns), &jobs) == 0)
		requeue_suspended(cm, jobs);
	json_decref(jobs);
}

static void requeue_runtime_users(kft_cm *cm, const char *kind, const json_t *runtimes)
{
	size_t i;
	const json_t *rt;
	json_array_foreach(runtimes, i, rt)
	{
		char key[KFT_CACHE_KEY_MAX], value[KFT_CACHE_KEY_MAX + 64];
		json_t *jobs = NULL;
		if (kft_cache_key(rt, key, sizeof(key)) != 0)
			continue;
		snprintf(value, sizeof(value), "%s/%s", kind, key);
		if (kft_informer_by_index(cm->trainjobs, KFT_CM_INDEX_RUNTIME, value, &jobs,
		                          NULL) == 0)
			requeue_suspended(cm, jobs);
		json_decref(jobs);
	}
}

/* A RuntimeClass changed: the suspended TrainJobs whose runtime's pods use
 * it (the PodGroup adds the RuntimeClass's pod overhead). Upstream matches
 * TrainingRuntimes to TrainJobs by name in any namespace; the index here
 * matches namespace and name, which requeues a subset of upstream's
 * TrainJobs that contains every one whose PodGroup can change. */
static void runtime_class_changed(kft_cm *cm, const json_t *rc)
{
	const json_t *name = json_object_get(json_object_get(rc, "metadata"), "name");
	if (!json_is_string(name))
		return;
	json_t *rts = NULL, *crts = NULL;
	if (kft_informer_by_index(cm->runtimes, KFT_CM_INDEX_RUNTIME_CLASS, json_string_value(name),
	                          &rts, NULL) == 0)
		requeue_runtime_users(cm, KFT_KIND_RUNTIME, rts);
	if (kft_informer_by_index(cm->cluster_runtimes, KFT_CM_INDEX_RUNTIME_CLASS,
	                          json_string_value(name), &crts, NULL) == 0)
		requeue_runtime_users(cm, KFT_KIND_CLUSTER_RUNTIME, crts);
	json_decref(rts);
	json_decref(crts);
}

static void lr_add(void *ctx, const json_t *obj, int initial)
{
	(void)initial;
	limit_range_changed(ctx, obj);
}

static void lr_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	limit_range_changed(ctx, new_obj);
}

static void lr_delete(void *ctx, const json_t *obj, int unknown)
{
	(void)unknown;
	limit_range_changed(ctx, obj);
}

static void rc_add(void *ctx, const json_t *obj, int initial)
{
	(void)initial;
	runtime_class_changed(ctx, obj);
}

static void rc_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	(void)old_obj;
	runtime_class_changed(ctx, new_obj);
}

static void rc_delete(void *ctx, const json_t *obj, int unknown)
{
	(void)unknown;
	runtime_class_changed(ctx, obj);
}

/* Only the name and namespace of these objects matter here. */
static void keep_metadata(json_t *obj, void *ctx)
{
	(void)ctx;
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(obj, tmp, k, v)
	{
		if (strcmp(k, "metadata") != 0 && strcmp(k, "apiVersion") != 0 &&
		    strcmp(k, "kind") != 0)
			json_object_del(obj, k);
	}
	json_t *md = json_object_get(obj, "metadata");
	json_object_del(md, "annotations");
	json_object_del(md, "labels");
}

/* ---- informers ------------------------------------------------------------------------- */

static int new_informer(kft_cm *cm, const kft_gvr *gvr, const kft_informer_handlers *h, int trim,
                        kft_informer **out, kft_error *err)
{
	/* Small list pages: a page is parsed whole before it is trimmed, so
	 * the page size bounds the peak memory of a (re)list. */
	kft_informer_opts o = {.gvr = gvr, .page_size = 100};
	if (trim) {
		o.transform = kft_cm_trim_object;
		o.transform_ctx = cm;
		/* ConfigMaps and Secrets: metadata only (trim.c) */
		o.metadata_only = !gvr->group[0] && (strcmp(gvr->kind, "ConfigMap") == 0 ||
		                                     strcmp(gvr->kind, "Secret") == 0);
	}
	int rc = kft_informer_new(cm->kube, &o, out, err);
	if (rc == 0)
		rc = kft_informer_add_handlers(*out, h, err);
	return rc;
}

/* Whether the API server serves this kind (discovery of its group/version):
 * 0 only when it answers that it does not. */
static int served(kft_cm *cm, const kft_gvr *gvr)
{
	if (!gvr->group[0])
		return 1;
	char path[256];
	json_t *list = NULL;
	snprintf(path, sizeof(path), "/apis/%s/%s", gvr->group, gvr->version);
	int rc = kft_kube_request(cm->kube, "GET", path, NULL, NULL, 0, &list, NULL);
	if (rc == KFT_ENOTFOUND)
		return 0;
	if (rc != 0)
		return 1; /* cannot tell now: watch it; its informer retries until it syncs */
	int found = 0;
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(list, "resources"), i, r)
	{
		const json_t *name = json_object_get(r, "name");
		if (json_is_string(name) && strcmp(json_string_value(name), gvr->resource) == 0)
			found = 1;
	}
	json_decref(list);
	return found;
}

static int child_known(const kft_cm *cm, const kft_gvr *gvr)
{
	for (size_t i = 0; i < cm->n_children; i++)
		if (cm->children[i].gvr == gvr)
			return 1;
	return 0;
}

static int add_child(kft_cm *cm, const char *api_kind, kft_error *err)
{
	const char *slash = strrchr(api_kind, '/');
	char av[128];
	if (!slash || (size_t)(slash - api_kind) >= sizeof(av))
		return 0;
	snprintf(av, sizeof(av), "%.*s", (int)(slash - api_kind), api_kind);
	const kft_gvr *gvr = kft_gvr_lookup(av, slash + 1);
	if (!gvr)
		KFT_LOG_ERR(cm->lg, NULL,
		            "A plugin asks to watch a kind this manager has no resource for; not "
		            "watching it",
		            "unknown kind",
		            json_pack("{s:s, s:s}", "apiVersion", av, "kind", slash + 1));
	if (!gvr || child_known(cm, gvr))
		return 0;
	if (!served(cm, gvr)) {
		KFT_LOG_ERR(cm->lg, NULL,
		            "CRDs must be installed in advance; not watching this kind",
		            "the API server does not serve it",
		            json_pack("{s:s, s:s}", "apiVersion", av, "kind", slash + 1));
		return 0;
	}
	if (cm->n_children == KFT_CM_MAX_CHILD_KINDS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d child kinds to watch",
		                     KFT_CM_MAX_CHILD_KINDS);
	kft_informer_handlers h = {child_add, child_update, child_delete, cm};
	kft_cm_child *c = &cm->children[cm->n_children];
	int rc = new_informer(cm, gvr, &h, 1, &c->inf, err);
	if (rc)
		return rc;
	c->gvr = gvr;
	cm->n_children++;
	if (strcmp(gvr->kind, "ConfigMap") == 0 && !gvr->group[0])
		cm->configmaps = c->inf;
	return 0;
}

static int index_runtime(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	char key[KFT_CACHE_KEY_MAX + 64];
	(void)ctx;
	if (kft_cm_trainjob_runtime_key(obj, key, sizeof(key)) != 0)
		return 0;
	return kft_index_keys_add(keys, key);
}

static int index_runtime_class(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	(void)ctx;
	json_t *names = kft_cm_runtime_class_names(obj);
	if (!names)
		return KFT_ENOMEM;
	int rc = 0;
	size_t i;
	const json_t *n;
	json_array_foreach(names, i, n)
	{
		if (!rc)
			rc = kft_index_keys_add(keys, json_string_value(n));
	}
	json_decref(names);
	return rc;
}

static int index_optimization(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	char key[KFT_CACHE_KEY_MAX];
	(void)ctx;
	return kft_cm_optimization_key(obj, key, sizeof(key)) == 0 ? kft_index_keys_add(keys, key)
	                                                           : 0;
}

static int add_indexes(kft_cm *cm, kft_error *err)
{
	int rc = kft_informer_add_index(cm->trainjobs, KFT_CM_INDEX_RUNTIME, index_runtime, NULL,
	                                err);
	if (!rc)
		rc = kft_informer_add_index(cm->trainjobs, KFT_CM_INDEX_OPTIMIZATION,
		                            index_optimization, NULL, err);
	if (!rc)
		rc = kft_informer_add_index(cm->runtimes, KFT_CM_INDEX_RUNTIME_CLASS,
		                            index_runtime_class, NULL, err);
	if (!rc)
		rc = kft_informer_add_index(cm->cluster_runtimes, KFT_CM_INDEX_RUNTIME_CLASS,
		                            index_runtime_class, NULL, err);
	return rc;
}

/* An informer of a kind the plugins need to hear about, cached as metadata. */
static int add_watch(kft_cm *cm, const char *av, const char *kind, const kft_informer_handlers *h,
                     kft_error *err)
{
	const kft_gvr *gvr = kft_gvr_lookup(av, kind);
	if (!gvr || child_known(cm, gvr))
		return 0;
	if (cm->n_children == KFT_CM_MAX_CHILD_KINDS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d child kinds to watch",
		                     KFT_CM_MAX_CHILD_KINDS);
	kft_informer_opts o = {
	        .gvr = gvr, .page_size = 100, .transform = keep_metadata, .metadata_only = 1};
	kft_cm_child *c = &cm->children[cm->n_children];
	int rc = kft_informer_new(cm->kube, &o, &c->inf, err);
	if (rc == 0)
		rc = kft_informer_add_handlers(c->inf, h, err);
	if (rc) {
		kft_informer_free(c->inf);
		c->inf = NULL;
		return rc;
	}
	c->gvr = gvr;
	c->optional = 1;
	cm->n_children++;
	return 0;
}

/* The webhook certificate Secret, whole, by name in every namespace (as
 * the TrainJobStatus plugin reads it), beside the metadata-only informer
 * of every Secret. Only when some plugin watches Secrets at all. */
static int add_cert_secret(kft_cm *cm, kft_error *err)
{
	const kft_gvr *gvr = kft_gvr_lookup("v1", "Secret");
	if (!gvr || !child_known(cm, gvr) || !cm->cfg->cert_webhook_secret)
		return 0;
	if (cm->n_children == KFT_CM_MAX_CHILD_KINDS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d child kinds to watch",
		                     KFT_CM_MAX_CHILD_KINDS);
	char selector[320];
	snprintf(selector, sizeof(selector), "metadata.name=%s", cm->cfg->cert_webhook_secret);
	kft_informer_opts o = {.gvr = gvr, .page_size = 100, .field_selector = selector};
	kft_cm_child *c = &cm->children[cm->n_children];
	int rc = kft_informer_new(cm->kube, &o, &c->inf, err);
	if (rc)
		return rc;
	c->gvr = gvr;
	c->only_name = cm->cfg->cert_webhook_secret;
	cm->n_children++;
	return 0;
}

/* Upstream's coscheduling and volcano plugins add LimitRange and
 * RuntimeClass watches when their PodGroup kind is served. */
static int add_podgroup_watches(kft_cm *cm, kft_error *err)
{
	int podgroups = 0;
	for (size_t i = 0; i < cm->n_children; i++)
		podgroups |= strcmp(cm->children[i].gvr->kind, "PodGroup") == 0;
	if (!podgroups)
		return 0;
	kft_informer_handlers lr = {lr_add, lr_update, lr_delete, cm};
	kft_informer_handlers rc = {rc_add, rc_update, rc_delete, cm};
	int r = add_watch(cm, "v1", "LimitRange", &lr, err);
	if (!r)
		r = add_watch(cm, "node.k8s.io/v1", "RuntimeClass", &rc, err);
	return r;
}

static void optjob_add(void *ctx, const json_t *obj, int initial)
{
	kft_cm *cm = ctx;
	char key[KFT_CACHE_KEY_MAX];
	if (kft_cache_key(obj, key, sizeof(key)) == 0)
		(initial ? kft_workqueue_add_low
		         : kft_workqueue_add)(cm->ctl[KFT_CM_OPTIMIZATION].queue, key);
}

static void optjob_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	kft_cm *cm = ctx;
	(void)old_obj;
	enqueue_key(cm->ctl[KFT_CM_OPTIMIZATION].queue, new_obj);
}

/* OptimizationJobs, where the API server serves them (their CRD is
 * installed); otherwise their controller does not run. */
static int add_optjobs(kft_cm *cm, kft_error *err)
{
	const kft_gvr *gvr = kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_OPTIMIZATIONJOB);
	if (!served(cm, gvr)) {
		KFT_LOG(cm->lg, KFT_LOG_INFO, "setup",
		        "OptimizationJobs are not served (no CRD); their controller does not run",
		        NULL);
		return 0;
	}
	kft_informer_handlers h = {optjob_add, optjob_update, NULL, cm};
	return new_informer(cm, gvr, &h, 0, &cm->optjobs, err);
}

static int setup_informers(kft_cm *cm, kft_error *err)
{
	kft_informer_handlers tj = {trainjob_add, trainjob_update, trainjob_delete, cm};
	kft_informer_handlers rt = {runtime_add, runtime_update, NULL, cm->ctl[1].queue};
	kft_informer_handlers crt = {runtime_add, runtime_update, NULL, cm->ctl[2].queue};
	int rc = new_informer(cm, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB), &tj, 1,
	                      &cm->trainjobs, err);
	if (!rc)
		rc = new_informer(cm, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_RUNTIME), &rt, 1,
		                  &cm->runtimes, err);
	if (!rc)
		rc = new_informer(cm, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_CLUSTER_RUNTIME),
		                  &crt, 1, &cm->cluster_runtimes, err);
	if (!rc)
		rc = add_indexes(cm, err);
	if (!rc)
		rc = add_optjobs(cm, err);
	for (size_t p = 0; !rc && p < kft_framework_plugin_count(cm->fw); p++) {
		const char *const *kinds = kft_framework_plugin_at(cm->fw, p)->watch_kinds;
		for (size_t k = 0; !rc && kinds && kinds[k]; k++)
			rc = add_child(cm, kinds[k], err);
	}
	/* The runtime snapshots are ConfigMaps, whatever the plugins watch. */
	if (!rc)
		rc = add_child(cm, "v1/ConfigMap", err);
	if (!rc)
		rc = add_cert_secret(cm, err);
	if (!rc)
		rc = add_podgroup_watches(cm, err);
	return rc;
}

static int start_informers(kft_cm *cm, kft_error *err)
{
	kft_informer *all[4] = {cm->trainjobs, cm->runtimes, cm->cluster_runtimes, cm->optjobs};
	int rc = 0;
	for (size_t i = 0; !rc && i < 4; i++)
		if (all[i])
			rc = kft_informer_start(all[i], err);
	for (size_t i = 0; !rc && i < cm->n_children; i++)
		rc = kft_informer_start(cm->children[i].inf, err);
	return rc;
}

static int all_synced(kft_cm *cm)
{
	if (!kft_informer_has_synced(cm->trainjobs) || !kft_informer_has_synced(cm->runtimes) ||
	    !kft_informer_has_synced(cm->cluster_runtimes) ||
	    (cm->optjobs && !kft_informer_has_synced(cm->optjobs)))
		return 0;
	for (size_t i = 0; i < cm->n_children; i++)
		if (!cm->children[i].optional && !kft_informer_has_synced(cm->children[i].inf))
			return 0;
	return 1;
}

/* One informer the manager runs, with its kind for messages. */
typedef struct watched {
	kft_informer *inf;
	const kft_gvr *gvr;
	int optional;
} watched;

/* Every informer, the three of the controllers first; 0 before they exist. */
static size_t all_watched(kft_cm *cm, watched *out)
{
	if (!cm->trainjobs)
		return 0;
	out[0] = (watched){cm->trainjobs, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB), 0};
	out[1] = (watched){cm->runtimes, kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_RUNTIME), 0};
	out[2] = (watched){cm->cluster_runtimes,
	                   kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_CLUSTER_RUNTIME), 0};
	size_t n = 3;
	if (cm->optjobs)
		out[n++] = (watched){cm->optjobs,
		                     kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_OPTIMIZATIONJOB), 0};
	for (size_t i = 0; i < cm->n_children; i++)
		out[n++] = (watched){cm->children[i].inf, cm->children[i].gvr,
		                     cm->children[i].optional};
	return n;
}

static void resource_name(const kft_gvr *gvr, char *buf, size_t n)
{
	if (!gvr)
		snprintf(buf, n, "?");
	else if (gvr->group[0])
		snprintf(buf, n, "%s.%s", gvr->resource, gvr->group);
	else
		snprintf(buf, n, "%s", gvr->resource);
}

/* /readyz's reason while not ready: the caches not synced yet, each with
 * its last failure, so a probe says what start-up waits for. Called from
 * the health server's threads; the informers outlive the hook (teardown
 * clears it first), and has_synced and stats are thread-safe. */
static void readiness_reason(void *ctx, char *buf, size_t n)
{
	kft_cm *cm = ctx;
	if (all_synced(cm) && !kft_cm_webhooks_ready(cm->webhooks, buf, n))
		return;
	watched w[4 + KFT_CM_MAX_CHILD_KINDS];
	size_t count = all_watched(cm, w), used = 0;
	used = (size_t)snprintf(buf, n, "caches not synced:");
	for (size_t i = 0; i < count && used < n; i++) {
		if (w[i].optional || kft_informer_has_synced(w[i].inf))
			continue;
		char res[160];
		kft_informer_stats st;
		kft_informer_stats_get(w[i].inf, &st);
		resource_name(w[i].gvr, res, sizeof(res));
		used += (size_t)snprintf(buf + used, n - used, " %s (%s)", res,
		                         st.last_error[0] ? st.last_error : "listing");
	}
}

/* /readyz's reason before the informers exist. */
static void discovering_reason(void *ctx, char *buf, size_t n)
{
	(void)ctx;
	snprintf(buf, n,
	         "starting: asking the API server which kinds it serves (the log says "
	         "why it waits)");
}

/* Logs an informer's list or watch failure as soon as it happens (a
 * forbidden list, a refused connection, a bad token...), once per new
 * message or every 30 s while it repeats, so a start-up that waits says
 * why instead of timing out in silence. */
static void report_failures(kft_cm *cm, run_state *rs)
{
	watched w[4 + KFT_CM_MAX_CHILD_KINDS];
	size_t count = all_watched(cm, w);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (size_t i = 0; i < count; i++) {
		failure_seen *f = &rs->failures[i];
		kft_informer_stats st;
		kft_informer_stats_get(w[i].inf, &st);
		if (st.errors == f->errors)
			continue;
		f->errors = st.errors;
		if (strcmp(f->last, st.last_error) == 0 && now.tv_sec - f->logged.tv_sec < 30)
			continue;
		snprintf(f->last, sizeof(f->last), "%s", st.last_error);
		f->logged = now;
		char res[160];
		resource_name(w[i].gvr, res, sizeof(res));
		KFT_LOG_ERR(cm->lg, "cache", "Failed to watch", st.last_error,
		            json_pack("{s:s, s:b}", "resource", res, "synced",
		                      kft_informer_has_synced(w[i].inf)));
	}
}

/* Says which optional watches are not working yet (typically: no RBAC
 * permission to list them); they keep retrying on their own. */
static void log_unsynced_optional(kft_cm *cm)
{
	for (size_t i = 0; i < cm->n_children; i++) {
		const kft_cm_child *c = &cm->children[i];
		if (!c->optional || kft_informer_has_synced(c->inf))
			continue;
		KFT_LOG_ERR(cm->lg, NULL,
		            "Watch not synced; starting without it: suspended TrainJobs are not "
		            "requeued on its changes until it syncs",
		            "the list has not succeeded yet (RBAC needs list and watch on it)",
		            json_pack("{s:s, s:s}", "group", c->gvr->group, "resource",
		                      c->gvr->resource));
	}
}

/* ---- controllers ------------------------------------------------------------------------ */

static int setup_controllers(kft_cm *cm, kft_error *err)
{
	static const char *const names[KFT_CM_N_CONTROLLERS] = {
	        KFT_CM_TRAINJOB_CONTROLLER, KFT_CM_RUNTIME_CONTROLLER,
	        KFT_CM_CLUSTER_RUNTIME_CONTROLLER, KFT_CM_OPTIMIZATION_CONTROLLER};
	const kft_cm_reconcile_fn fns[KFT_CM_N_CONTROLLERS] = {
	        kft_cm_reconcile_trainjob, kft_cm_reconcile_runtime,
	        kft_cm_reconcile_cluster_runtime, kft_cm_reconcile_optimization};
	/* searches are few: the TrainJob workers' count serves them too */
	const int workers[KFT_CM_N_CONTROLLERS] = {
	        cm->cfg->trainjob_workers, cm->cfg->runtime_workers,
	        cm->cfg->cluster_runtime_workers, cm->cfg->trainjob_workers};
	for (int i = 0; i < KFT_CM_N_CONTROLLERS; i++) {
		kft_cm_controller *c = &cm->ctl[i];
		c->name = names[i];
		c->reconcile = fns[i];
		c->cm = cm;
		c->workers = workers[i] < 1                    ? 1
		             : workers[i] > KFT_CM_MAX_WORKERS ? KFT_CM_MAX_WORKERS
		                                               : workers[i];
		int rc = kft_workqueue_new(NULL, &c->queue, err);
		if (rc)
			return rc;
		if (kft_metrics_add_controller(cm->metrics, c->name, c->workers) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	kft_metrics_set_queue_sampler(cm->metrics, kft_cm_queue_sampler, cm);
	return 0;
}

/* ---- leader election ------------------------------------------------------------------- */

static void on_started(void *ctx)
{
	run_state *rs = ctx;
	atomic_store(&rs->leading, 1);
}

static void on_stopped(void *ctx)
{
	run_state *rs = ctx;
	atomic_store(&rs->leading, 2);
}

/* The Lease's namespace: the configuration's, else the pod's, else the
 * kubeconfig context's (running outside a cluster). */
static void lease_namespace(const kft_cm *cm, char *buf, size_t size)
{
	if (cm->cfg->le_resource_namespace) {
		snprintf(buf, size, "%s", cm->cfg->le_resource_namespace);
		return;
	}
	FILE *f = fopen(SA_NAMESPACE_FILE, "r");
	if (f) {
		size_t n = fread(buf, 1, size - 1, f);
		fclose(f);
		buf[n] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
		if (buf[0])
			return;
	}
	snprintf(buf, size, "%s", kft_kube_namespace(cm->kube));
}

static int start_leader(kft_cm *cm, run_state *rs, kft_error *err)
{
	char ns[256];
	lease_namespace(cm, ns, sizeof(ns));
	kft_leader_opts o = {
	        .namespace = ns,
	        .name = cm->cfg->le_resource_name,
	        .lease_duration_s = (double)cm->cfg->le_lease_ms / 1000.0,
	        .renew_deadline_s = (double)cm->cfg->le_renew_ms / 1000.0,
	        .retry_period_s = (double)cm->cfg->le_retry_ms / 1000.0,
	        .release_on_cancel = 1,
	        .on_started_leading = on_started,
	        .on_stopped_leading = on_stopped,
	        .ctx = rs,
	};
	int rc = kft_leader_new(cm->kube, &o, &rs->leader, err);
	if (rc == 0)
		rc = kft_leader_start(rs->leader, err);
	if (rc == 0)
		KFT_LOG(cm->lg, KFT_LOG_INFO, NULL, "attempting to acquire leader lease",
		        json_pack("{s:s, s:s, s:s}", "namespace", ns, "name",
		                  cm->cfg->le_resource_name, "identity",
		                  kft_leader_identity(rs->leader)));
	return rc;
}

/* ---- setup and teardown ---------------------------------------------------------------- */

static int connect_api(kft_cm *cm, const kft_cm_flags *flags, kft_error *err)
{
	kft_kube_config *kc = NULL;
	int rc = kft_kube_config_default(flags->kubeconfig, NULL, &kc, err);
	if (rc)
		return rc;
	kc->qps = cm->cfg->qps;
	kc->burst = cm->cfg->burst;
	/* clientConnection's qps/burst hold for each kind on its own in
	 * upstream (controller-runtime builds a limiter per REST client) */
	kc->rate_per_resource = 1;
	rc = kft_kube_new(kc, &cm->kube, err);
	KFT_LOG(cm->lg, KFT_LOG_INFO, "setup", "Creating manager",
	        json_pack("{s:f, s:i}", "qps", cm->cfg->qps, "burst", cm->cfg->burst));
	kft_kube_config_free(kc);
	return rc;
}

static int metrics_enabled(const char *addr)
{
	return addr && *addr && strcmp(addr, "0") != 0;
}

/* The probes, and /metrics over HTTPS when metrics.secureServing (the
 * default), with the certificate controller-runtime would use. */
static int start_http(kft_cm *cm, kft_cm_http **http, kft_error *err)
{
	const kft_cm_config *cfg = cm->cfg;
	char dir[4000], *cert = NULL, *key = NULL;
	kft_cm_http_tls tls = {.min_version = cfg->tls_min_version,
	                       .cipher_suites = cfg->tls_cipher_suites};
	int secure = cfg->metrics_secure_serving && metrics_enabled(cfg->metrics_bind_address);
	int generated = 0;
	if (secure) {
		int rc = kft_cm_tls_min_version(cfg->tls_min_version, err);
		if (rc < 0)
			return rc;
		kft_cm_metrics_cert_dir(dir, sizeof(dir));
		rc = kft_cm_metrics_cert(dir, &cert, &key, &generated, err);
		if (rc)
			return rc;
		tls.cert_pem = cert;
		tls.key_pem = key;
		tls.cert_dir = generated ? NULL : dir;
	}
	int rc = kft_cm_http_start_tls(cfg->health_bind_address, cfg->liveness_endpoint,
	                               cfg->readiness_endpoint, cfg->metrics_bind_address,
	                               secure ? &tls : NULL, cm->metrics, &cm->ready, http, err);
	free(cert); /* the server keeps its own parsed copies */
	kft_secret_free(key);
	if (rc == 0 && metrics_enabled(cfg->metrics_bind_address))
		KFT_LOG(cm->lg, KFT_LOG_INFO, "controller-runtime.metrics",
		        "Serving metrics server",
		        json_pack("{s:s, s:b, s:b}", "bindAddress", cfg->metrics_bind_address,
		                  "secure", secure, "selfSignedCertificate", generated));
	return rc;
}

static void count_request(void *ctx, const char *method, long code)
{
	kft_metrics_request(ctx, method, code);
}

/* rest_client_requests_total: every exchange with the API server, labelled
 * with its host[:port] as client-go labels it. */
static void count_requests(kft_cm *cm)
{
	const char *url = kft_kube_server(cm->kube);
	const char *host = strstr(url, "://");
	host = host ? host + 3 : url;
	char buf[128];
	snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(host, "/"), host);
	kft_metrics_set_client_host(cm->metrics, buf);
	kft_kube_set_observer(cm->kube, count_request, cm->metrics);
}

/* What the client tells of without failing (kube.h): an object it skipped
 * because it cannot hold it (the caches go on without it), a request it
 * retries (a refused connection at start-up). This line is how anyone
 * learns of either. */
static void kube_warning(void *ctx, const char *message)
{
	kft_cm *cm = ctx;
	KFT_LOG_ERR(cm->lg, "client", "API client warning", message, NULL);
}

/* The Configuration's plugins (or --plugin's), after the built-ins, in
 * order: their WatchExtension kinds are watched, their CustomValidation
 * runs before a TrainJob is built (reconcilers.c), their Build points shape
 * the children and their PostExecution points the status, exactly as in the
 * CLI. A file that cannot be loaded stops start-up, naming it. */
static int load_plugins(kft_cm *cm, kft_error *err)
{
	size_t i;
	const json_t *p;
	json_array_foreach(cm->cfg->plugins, i, p)
	{
		const char *path = json_string_value(p);
		int rc = kft_framework_load_plugin(cm->fw, path, err);
		if (rc)
			return rc;
		const kft_plugin *pl =
		        kft_framework_plugin_at(cm->fw, kft_framework_plugin_count(cm->fw) - 1);
		KFT_LOG(cm->lg, KFT_LOG_INFO, "setup", "Loaded plugin",
		        json_pack("{s:s, s:s}", "plugin", pl->name, "path", path));
	}
	return 0;
}

/* After connect_api: the rest of start-up, which may wait on the server. */
static int setup(kft_cm *cm, kft_cm_http **http, kft_error *err)
{
	int rc = kft_framework_new(cm->cfg->features, &cm->fw, err);
	if (!rc)
		rc = load_plugins(cm, err);
	if (!rc && !(cm->metrics = kft_metrics_new()))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc)
		return rc;
	count_requests(cm);
	kft_kube_set_warning_handler(cm->kube, kube_warning, cm);
	kft_cm_backend_init(&cm->backend, kft_cm_lookup, cm);
	if ((rc = start_http(cm, http, err)))
		return rc;
	kft_cm_http_set_readiness_reason(*http, discovering_reason, NULL);
	KFT_LOG(cm->lg, KFT_LOG_INFO, "setup",
	        "Probe endpoints are configured on healthz and readyz",
	        json_pack("{s:i, s:i}", "healthPort", kft_cm_http_port(*http, 0), "metricsPort",
	                  kft_cm_http_port(*http, 1)));
	if ((rc = setup_controllers(cm, err)) || (rc = setup_informers(cm, err)))
		return rc;
	return 0;
}

static void *stop_informer(void *arg)
{
	kft_informer_stop(arg);
	return NULL;
}

/* Each stop waits for its watch to notice; stopping them side by side
 * keeps shutdown as short as the slowest one. */
static void stop_informers(kft_cm *cm)
{
	kft_informer *all[4 + KFT_CM_MAX_CHILD_KINDS] = {cm->trainjobs, cm->runtimes,
	                                                 cm->cluster_runtimes, cm->optjobs};
	pthread_t threads[4 + KFT_CM_MAX_CHILD_KINDS];
	int started[4 + KFT_CM_MAX_CHILD_KINDS] = {0};
	size_t n = 4;
	for (size_t i = 0; i < cm->n_children; i++)
		all[n++] = cm->children[i].inf;
	for (size_t i = 0; i < n; i++)
		if (all[i])
			started[i] = pthread_create(&threads[i], NULL, stop_informer, all[i]) == 0;
	for (size_t i = 0; i < n; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		kft_informer_free(all[i]);
	}
}

static void teardown(kft_cm *cm, run_state *rs, kft_cm_http *http)
{
	atomic_store(&cm->stop, 1);
	/* Requests in flight, retry backoffs and rate-limiter waits end now. */
	kft_kube_cancel(cm->kube, 1);
	for (int i = 0; i < KFT_CM_N_CONTROLLERS; i++)
		kft_cm_workers_stop(&cm->ctl[i]);
	kft_cm_webhooks_stop(cm->webhooks);
	KFT_LOG(cm->lg, KFT_LOG_INFO, NULL, "Stopping and waiting for caches", NULL);
	stop_informers(cm);
	/* The leader's lease release below must still reach the server. */
	kft_kube_cancel(cm->kube, 0);
	if (rs->leader)
		KFT_LOG(cm->lg, KFT_LOG_INFO, NULL,
		        "Stopping and waiting for leader election runnables", NULL);
	if (rs->leader) {
		kft_leader_stop(rs->leader);
		kft_leader_free(rs->leader);
	}
	kft_cm_status_stop(cm->status);
	kft_cm_http_stop(http);
	KFT_LOG(cm->lg, KFT_LOG_INFO, NULL, "Wait completed, proceeding to shutdown the manager",
	        NULL);
	for (int i = 0; i < KFT_CM_N_CONTROLLERS; i++)
		kft_workqueue_free(cm->ctl[i].queue);
	kft_metrics_free(cm->metrics);
	kft_framework_free(cm->fw);
	kft_kube_free(cm->kube);
	kft_cm_applied_free(&cm->applied);
	pthread_mutex_destroy(&cm->applied.mu);
}

/* ---- the main loop --------------------------------------------------------------------- */

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* One turn between signals: readiness, then workers once we may lead. */
static int tick(kft_cm *cm, run_state *rs, kft_error *err)
{
	report_failures(cm, rs);
	if (!cm->ready) {
		char why[128];
		if (!all_synced(cm) || !kft_cm_webhooks_ready(cm->webhooks, why, sizeof(why))) {
			if (elapsed_s(&rs->started) > CACHE_SYNC_TIMEOUT_S)
				return kft_error_set(err, KFT_EUNAVAILABLE,
				                     "failed to wait for caches to sync: timed out "
				                     "after %d s",
				                     CACHE_SYNC_TIMEOUT_S);
			return 0;
		}
		cm->ready = 1;
		log_unsynced_optional(cm);
		malloc_trim(0); /* hand back what parsing the initial lists used */
		KFT_LOG(cm->lg, KFT_LOG_INFO, NULL, "Caches synced; ready", NULL);
	}
	int leading = rs->leader ? atomic_load(&rs->leading) : 1;
	if (leading == 2)
		return kft_error_set(err, KFT_EUNAVAILABLE, "leader election lost");
	for (int i = 0; leading == 1 && !rs->workers_started && i < KFT_CM_N_CONTROLLERS; i++) {
		if (i == KFT_CM_OPTIMIZATION && !cm->optjobs)
			continue;
		int rc = kft_cm_workers_start(&cm->ctl[i], err);
		if (rc)
			return rc;
	}
	if (leading == 1)
		rs->workers_started = 1;
	return 0;
}

/* SIGTERM and SIGINT are taken by one thread from the start, so a signal
 * that arrives while start-up still waits on an unreachable API server
 * (discovery and the first lists retry for minutes) cancels those calls at
 * once; Kubernetes kills a pod 30 s after SIGTERM by default. */
typedef struct sig_watch {
	pthread_t thread;
	sigset_t set;
	pthread_mutex_t mu;
	kft_kube *kube; /* cancelled when the signal comes; set once it exists */
	int sig;        /* the signal taken, 0 none */
	int leaving;    /* kft_cm_run is done: the next wake-up ends the thread */
} sig_watch;

static void *watch_signals(void *arg)
{
	sig_watch *w = arg;
	for (;;) {
		int sig = 0;
		if (sigwait(&w->set, &sig) != 0)
			return NULL;
		pthread_mutex_lock(&w->mu);
		int leaving = w->leaving;
		if (!leaving && !w->sig) {
			w->sig = sig;
			if (w->kube)
				kft_kube_cancel(w->kube, 1);
		}
		pthread_mutex_unlock(&w->mu);
		if (leaving)
			return NULL;
	}
}

static void sig_watch_kube(sig_watch *w, kft_kube *kube)
{
	pthread_mutex_lock(&w->mu);
	w->kube = kube;
	if (w->sig && kube)
		kft_kube_cancel(kube, 1);
	pthread_mutex_unlock(&w->mu);
}

static int sig_watch_taken(sig_watch *w)
{
	pthread_mutex_lock(&w->mu);
	int sig = w->sig;
	pthread_mutex_unlock(&w->mu);
	return sig;
}

static void sig_watch_end(sig_watch *w)
{
	pthread_mutex_lock(&w->mu);
	w->leaving = 1;
	w->kube = NULL;
	pthread_mutex_unlock(&w->mu);
	pthread_kill(w->thread, SIGTERM); /* blocked everywhere: only sigwait sees it */
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
}

static int loop(kft_cm *cm, run_state *rs, sig_watch *w, kft_error *err)
{
	for (unsigned turn = 1;; turn++) {
		/* Every 5 s: the counts of event series that went quiet. */
		if (turn % 50 == 0)
			kft_kube_events_flush(cm->kube, 0, NULL);
		struct timespec wait = {0, 100 * 1000 * 1000};
		nanosleep(&wait, NULL);
		int sig = sig_watch_taken(w);
		if (sig == SIGTERM || sig == SIGINT) {
			KFT_LOG(cm->lg, KFT_LOG_INFO, NULL,
			        "Stopping and waiting for non leader election runnables",
			        json_pack("{s:s}", "signal",
			                  sig == SIGTERM ? "SIGTERM" : "SIGINT"));
			return 0;
		}
		int rc = tick(cm, rs, err);
		if (rc)
			return rc;
	}
}

int kft_cm_run(const kft_cm_flags *flags, const kft_cm_config *cfg, kft_logger *lg, kft_error *err)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	kft_cm cm;
	run_state rs;
	kft_cm_http *http = NULL;
	memset(&cm, 0, sizeof(cm));
	memset(&rs, 0, sizeof(rs));
	cm.cfg = cfg;
	cm.lg = lg;
	pthread_mutex_init(&cm.applied.mu, NULL);
	clock_gettime(CLOCK_MONOTONIC, &rs.started);
	sig_watch w = {.set = set};
	pthread_mutex_init(&w.mu, NULL);
	if (pthread_create(&w.thread, NULL, watch_signals, &w) != 0) {
		pthread_mutex_destroy(&w.mu);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return kft_error_set(err, KFT_ENOMEM, "cannot start the signal thread");
	}
	int rc = connect_api(&cm, flags, err);
	sig_watch_kube(&w, cm.kube);
	if (!rc)
		rc = setup(&cm, &http, err);
	if (!rc)
		rc = start_informers(&cm, err);
	/* upstream: statusserver.SetupServer when the TrainJobStatus gate is on;
	 * it serves on every replica, leader or not */
	if (!rc && (cfg->features & KFT_FEATURE_TRAINJOB_STATUS))
		rc = kft_cm_status_start(cfg, flags->kubeconfig, lg, &cm.status, err);
	if (!rc)
		rc = kft_cm_webhooks_start(&cm, &cm.webhooks, err);
	if (!rc)
		kft_cm_http_set_readiness_reason(http, readiness_reason, &cm);
	if (!rc && cfg->leader_elect)
		rc = start_leader(&cm, &rs, err);
	if (!rc) {
		KFT_LOG(lg, KFT_LOG_INFO, "setup", "Starting manager", NULL);
		rc = loop(&cm, &rs, &w, err);
	}
	if (rc && sig_watch_taken(&w)) {
		/* start-up cut short by SIGTERM/SIGINT: a clean stop, not a failure */
		KFT_LOG(lg, KFT_LOG_INFO, "setup", "Start-up interrupted by a signal",
		        json_pack("{s:s}", "reason", err ? err->message : ""));
		rc = 0;
	}
	sig_watch_end(&w);
	kft_cm_http_set_readiness_reason(http, NULL, NULL);
	teardown(&cm, &rs, http);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
