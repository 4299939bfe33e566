/*
 * reconcilers.c - the three reconcilers against the API server: TrainJob
 * (upstream v2.3.0 pkg/controller/trainjob_controller.go with the runtime
 * lookup of pkg/runtime/core) and the two runtime kinds.
 *
 * Everything is read from the informer caches (as controller-runtime's
 * client reads from its cache); only writes go to the API server: the
 * runtime snapshot and the children by server-side apply (field manager
 * "trainer", forced), the status by a merge patch on the status
 * subresource, the JobSet deletion on a missed deadline, events.
 *
 * A child is applied only when what we would send differs from the cached
 * object (kft_cm_apply_is_noop) or from what this process applied last
 * (a hash per object in a bounded table): a reconcile of an unchanged
 * TrainJob costs no write at all. What an apply answers is put in the
 * child's cache at once (kft_informer_supply), so the next reconcile reads
 * neither the child nor a runtime snapshot from the API server.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_internal.h"
#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "kftrainer/validation.h"
#include "util/strbuf.h"
#include "util/rfc3339.h"

#define APPLIED_MAX (1u << 20)

/* ---- small helpers ---------------------------------------------------------------- */

static const char *meta(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(json_object_get(obj, "metadata"), key);
	return json_is_string(v) ? json_string_value(v) : "";
}

static json_t *kobj(const json_t *obj)
{
	return json_pack("{s:s, s:s}", "name", meta(obj, "name"), "namespace",
	                 meta(obj, "namespace"));
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

/* ---- the applied-hash table -------------------------------------------------------- */

static size_t slot_of(const kft_cm_applied *a, uint64_t key)
{
	size_t i = (size_t)key & (a->cap - 1);
	while (a->keys[i] && a->keys[i] != key)
		i = (i + 1) & (a->cap - 1);
	return i;
}

static int applied_grow(kft_cm_applied *a)
{
	size_t cap = a->cap ? a->cap * 2 : 1024;
	if (cap > APPLIED_MAX) {
		memset(a->keys, 0, a->cap * sizeof(*a->keys));
		a->n = 0;
		return 0;
	}
	kft_cm_applied b = {.cap = cap};
	b.keys = calloc(cap, sizeof(*b.keys));
	b.hashes = calloc(cap, sizeof(*b.hashes));
	if (!b.keys || !b.hashes) {
		free(b.keys);
		free(b.hashes);
		return -1;
	}
	for (size_t i = 0; i < a->cap; i++)
		if (a->keys[i]) {
			size_t s = slot_of(&b, a->keys[i]);
			b.keys[s] = a->keys[i];
			b.hashes[s] = a->hashes[i];
			b.n++;
		}
	free(a->keys);
	free(a->hashes);
	a->keys = b.keys;
	a->hashes = b.hashes;
	a->cap = cap;
	a->n = b.n;
	return 0;
}

static uint64_t applied_get(kft_cm_applied *a, uint64_t key)
{
	pthread_mutex_lock(&a->mu);
	uint64_t h = a->cap ? a->hashes[slot_of(a, key)] : 0;
	pthread_mutex_unlock(&a->mu);
	return h;
}

static void applied_put(kft_cm_applied *a, uint64_t key, uint64_t hash)
{
	pthread_mutex_lock(&a->mu);
	if ((a->n + 1) * 4 >= a->cap * 3 && applied_grow(a) != 0) {
		pthread_mutex_unlock(&a->mu);
		return; /* out of memory: we only lose an optimisation */
	}
	size_t s = slot_of(a, key);
	if (!a->keys[s])
		a->n++;
	a->keys[s] = key;
	a->hashes[s] = hash;
	pthread_mutex_unlock(&a->mu);
}

void kft_cm_applied_free(kft_cm_applied *a)
{
	free(a->keys);
	free(a->hashes);
	a->keys = a->hashes = NULL;
	a->n = a->cap = 0;
}

/* The applied table's key of one object: apiVersion/kind/namespace/name. */
static uint64_t object_key(const json_t *obj)
{
	const json_t *av = json_object_get(obj, "apiVersion"), *k = json_object_get(obj, "kind");
	uint64_t h = fnv1a(json_is_string(av) ? json_string_value(av) : "", 1469598103934665603ULL);
	h = fnv1a("/", h);
	h = fnv1a(json_is_string(k) ? json_string_value(k) : "", h);
	h = fnv1a("/", h);
	h = fnv1a(meta(obj, "namespace"), h);
	h = fnv1a("/", h);
	return fnv1a(meta(obj, "name"), h);
}

/* ---- cache lookups -------------------------------------------------------------- */

/* The informer that caches the child of kind gvr named name: the one kept
 * for that name alone (the webhook certificate Secret, whole) if any, else
 * the kind's; NULL when the kind is not watched. */
static kft_informer *child_informer(const kft_cm *cm, const kft_gvr *gvr, const char *name)
{
	kft_informer *kind = NULL;
	for (size_t i = 0; gvr && i < cm->n_children; i++) {
		const kft_cm_child *c = &cm->children[i];
		if (c->gvr != gvr)
			continue;
		if (!c->only_name)
			kind = kind ? kind : c->inf;
		else if (name && strcmp(c->only_name, name) == 0)
			return c->inf;
	}
	return kind;
}

/* A child from its informer's cache, which also holds each apply's answer
 * (kft_informer_supply): a reconcile right after an apply sees the child
 * before its watch event arrives. */
json_t *kft_cm_lookup(void *self, const char *api_version, const char *kind, const char *ns,
                      const char *name)
{
	kft_cm *cm = self;
	const kft_gvr *gvr = kft_gvr_lookup(api_version, kind);
	kft_informer *inf = child_informer(cm, gvr, name);
	json_t *obj = NULL;
	if (!inf || kft_informer_get(inf, gvr->namespaced ? ns : NULL, name, &obj) != 0)
		return NULL;
	return obj;
}

/* ---- the runtime a TrainJob builds from ------------------------------------------- */

static int from_snapshot(kft_cm *cm, const json_t *job, int cluster, json_t **rt, kft_error *err)
{
	char name[320];
	json_t *cm_obj = NULL;
	snprintf(name, sizeof(name), "%s%s", meta(job, "name"), KFT_CM_SNAPSHOT_SUFFIX);
	*rt = NULL;
	if (!cm->configmaps ||
	    kft_informer_get(cm->configmaps, meta(job, "namespace"), name, &cm_obj) != 0)
		return KFT_ENOTFOUND;
	kft_error e = {0};
	int rc = 0;
	if (!json_object_get(cm_obj, "data")) {
		/* Cached as metadata (listed or changed since we last read it):
		 * read it whole once, and keep it. */
		json_decref(cm_obj);
		cm_obj = NULL;
		rc = kft_kube_get(cm->kube, kft_gvr_lookup("v1", "ConfigMap"),
		                  meta(job, "namespace"), name, &cm_obj, &e);
		if (rc == KFT_ENOTFOUND)
			return rc;
		if (rc == 0)
			kft_informer_supply(cm->configmaps, cm_obj);
	}
	if (rc == 0)
		rc = kft_cm_snapshot_runtime(job, cm_obj, rt, &e);
	json_decref(cm_obj);
	if (rc)
		return kft_error_set(err, rc, "%s: %s",
		                     cluster ? "getting runtime snapshot"
		                             : "unable to get runtime snapshot",
		                     e.message);
	return 0;
}

static int from_cache(kft_cm *cm, const json_t *job, int cluster, json_t **rt, kft_error *err)
{
	const json_t *ref = json_object_get(json_object_get(job, "spec"), "runtimeRef");
	const json_t *n = json_object_get(ref, "name");
	const char *name = json_is_string(n) ? json_string_value(n) : "";
	int rc = cluster ? kft_informer_get(cm->cluster_runtimes, NULL, name, rt)
	                 : kft_informer_get(cm->runtimes, meta(job, "namespace"), name, rt);
	if (rc == 0)
		return 0;
	if (cluster)
		return kft_error_set(
		        err, KFT_ENOTFOUND,
		        "not found ClusterTrainingRuntime specified in TrainJob: "
		        "clustertrainingruntimes.trainer.kubeflow.org \"%s\" not found",
		        name);
	return kft_error_set(err, KFT_ENOTFOUND,
	                     "TrainingRuntime specified in TrainJob is not found: "
	                     "trainingruntimes.trainer.kubeflow.org \"%s\" not found",
	                     name);
}

static int apply_one(kft_cm *cm, const json_t *obj, kft_error *err);

/* The runtime from the TrainJob's snapshot, else from the cache, which is
 * then snapshotted (upstream's NewObjects). */
static int job_runtime(kft_cm *cm, const json_t *job, json_t **rt, kft_error *err)
{
	const json_t *kind = json_object_get(
	        json_object_get(json_object_get(job, "spec"), "runtimeRef"), "kind");
	int cluster = !json_is_string(kind) ||
	              strcmp(json_string_value(kind), KFT_KIND_CLUSTER_RUNTIME) == 0;
	int rc = from_snapshot(cm, job, cluster, rt, err);
	if (rc != KFT_ENOTFOUND)
		return rc;
	if ((rc = from_cache(cm, job, cluster, rt, err)))
		return rc;
	kft_error e = {0};
	json_t *snap = kft_cm_snapshot_configmap(job, *rt, &e);
	rc = snap ? apply_one(cm, snap, &e) : e.code;
	json_decref(snap);
	if (rc) {
		json_decref(*rt);
		*rt = NULL;
		return kft_error_set(
		        err, rc,
		        "creating runtime snapshot: applying runtime snapshot ConfigMap: "
		        "%s",
		        e.message);
	}
	return 0;
}

/* ---- applying children -------------------------------------------------------------- */

static int apply_one(kft_cm *cm, const json_t *obj, kft_error *err)
{
	const kft_gvr *gvr = kft_gvr_of(obj);
	if (!gvr)
		return kft_error_set(err, KFT_EINVAL, "no known resource for apiVersion %s kind %s",
		                     json_string_value(json_object_get(obj, "apiVersion")),
		                     json_string_value(json_object_get(obj, "kind")));
	char *canon = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	if (!canon)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	uint64_t key = object_key(obj), hash = fnv1a(canon, 1469598103934665603ULL);
	free(canon);
	uint64_t last = applied_get(&cm->applied, key);
	json_t *live = kft_cm_lookup(cm, json_string_value(json_object_get(obj, "apiVersion")),
	                             gvr->kind, meta(obj, "namespace"), meta(obj, "name"));
	int by_version = kft_cm_metadata_kind(obj);
	int skip = 0;
	if (live && kft_cm_trimmed_kind(obj)) {
		/* The cache keeps little of it: compare what it keeps, and trust
		 * the rest only when this process applied exactly this before --
		 * for ConfigMaps and Secrets, which nobody else writes, only while
		 * the object is still at the version that apply made. */
		json_t *proj = json_deep_copy(obj);
		if (proj)
			kft_cm_trim_projection(proj);
		uint64_t want = by_version ? fnv1a(meta(live, "resourceVersion"), hash) : hash;
		skip = proj && last == want && kft_cm_apply_is_noop(proj, live);
		json_decref(proj);
	} else if (live) {
		skip = (last == 0 || last == hash) && kft_cm_apply_is_noop(obj, live);
	}
	json_decref(live);
	if (skip)
		return 0;
	json_t *out = NULL;
	int rc = kft_kube_apply(cm->kube, gvr, obj, KFT_CM_FIELD_MANAGER, 1, &out, err);
	if (rc == 0)
		applied_put(&cm->applied, key,
		            by_version ? fnv1a(meta(out, "resourceVersion"), hash) : hash);
	/* The object as written goes to its cache at once: the TrainJob's next
	 * reconcile, often sooner than the watch event, finds it there instead
	 * of reading it from the API server (and finds a runtime snapshot's
	 * body, which the ConfigMap watch does not carry). */
	kft_informer *inf = rc == 0 && out ? child_informer(cm, gvr, meta(out, "name")) : NULL;
	if (inf)
		kft_informer_supply(inf, out);
	json_decref(out);
	return rc;
}

static int build_and_apply(kft_cm *cm, const json_t *job, kft_error *err)
{
	json_t *rt = NULL, *objects = NULL;
	int rc = job_runtime(cm, job, &rt, err);
	if (rc)
		return rc;
	rc = kft_framework_build(cm->fw, &cm->backend, job, rt, &objects, err);
	json_decref(rt);
	size_t i;
	json_t *obj;
	json_array_foreach(objects, i, obj)
	{
		if (rc)
			break;
		rc = apply_one(cm, obj, err);
	}
	json_decref(objects);
	return rc;
}

/* ---- TrainJob ------------------------------------------------------------------------ */

static void record_failure(kft_cm *cm, const json_t *stored, const kft_error *e)
{
	char *msg = kft_trainjob_reconcile_failed_message(e->message);
	kft_error ee = {0};
	/* Upstream's recorder is the events.k8s.io one: Eventf(trainJob, nil,
	 * Warning, reason, "Reconciling", message). */
	kft_event_v1 ev = {.regarding = stored,
	                   .type = "Warning",
	                   .reason = KFT_EVENT_RESOURCES_CREATION_FAILED,
	                   .action = KFT_CM_EVENT_ACTION,
	                   .note = msg,
	                   .controller = KFT_CM_TRAINJOB_RECORDER};
	if (msg && kft_kube_event_v1(cm->kube, &ev, &ee) != 0)
		KFT_LOG(cm->lg, -2, "trainjob-controller", "Failed to record an event",
		        json_pack("{s:o, s:s}", "trainJob", kobj(stored), "error", ee.message));
	free(msg);
}

static void delete_jobset(kft_cm *cm, const json_t *job)
{
	const kft_gvr *gvr = kft_gvr_lookup("jobset.x-k8s.io/v1alpha2", "JobSet");
	kft_error e = {0};
	int rc = gvr ? kft_kube_delete(cm->kube, gvr, meta(job, "namespace"), meta(job, "name"),
	                               NULL, NULL, &e)
	             : KFT_ENOTFOUND;
	if (rc && rc != KFT_ENOTFOUND)
		KFT_LOG(cm->lg, -2, "trainjob-controller",
		        "Failed to delete JobSet after deadline exceeded",
		        json_pack("{s:o, s:s}", "trainJob", kobj(job), "error", e.message));
}

static void write_status(kft_cm *cm, const json_t *job, const json_t *patch, kft_cm_outcome *out)
{
	const kft_gvr *gvr = kft_gvr_lookup(KFT_API_VERSION, KFT_KIND_TRAINJOB);
	kft_patch_opts po = {.subresource = "status"};
	kft_error e = {0};
	int rc = kft_kube_patch(cm->kube, gvr, meta(job, "namespace"), meta(job, "name"),
	                        KFT_PATCH_MERGE, patch, &po, NULL, &e);
	if (rc && rc != KFT_ENOTFOUND) /* deleted meanwhile: nothing left to report */
		kft_cm_outcome_error(out, &e);
}

/* Without admission webhooks a TrainJob reaches the manager unchecked. With
 * out-of-tree plugins configured, every plugin's CustomValidation (the
 * built-ins' included, as the webhook runs them) runs before the TrainJob is
 * built, and a refused one gets Failed=True, reason ValidationFailed (ours:
 * upstream refuses at admission instead), its message the field errors as
 * `kftrainer validate` prints them, joined by "; "; nothing is applied.
 * Returns 1 when refused, 0 when the job may be built, or -1 with err set. */
static int refused_by_plugins(kft_cm *cm, json_t *job, const char *now, kft_error *err)
{
	if (json_array_size(cm->cfg->plugins) == 0)
		return 0;
	json_t *rt = NULL;
	if (job_runtime(cm, job, &rt, err) != 0)
		return 0; /* the build reports a missing runtime, as ever */
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	int rc = kft_framework_validate(cm->fw, &cm->backend, rt, NULL, job, &errs, err);
	json_decref(rt);
	kft_strbuf msg;
	kft_strbuf_init(&msg);
	for (size_t i = 0; rc == 0 && i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		if (i)
			kft_strbuf_puts(&msg, "; ");
		kft_strbuf_puts(&msg, line ? line : "(no memory)");
		free(line);
	}
	int refused = rc == 0 && errs.count > 0;
	if (refused &&
	    kft_trainjob_set_failed(job, kft_strbuf_str(&msg) ? kft_strbuf_str(&msg) : "",
	                            KFT_CM_REASON_VALIDATION_FAILED, now, err) != 0)
		rc = -1;
	kft_strbuf_free(&msg);
	kft_field_errors_free(&errs);
	return rc ? -1 : refused;
}

static void run_trainjob(kft_cm *cm, const json_t *stored, json_t *job, kft_cm_outcome *out)
{
	char now[32];
	kft_cm_plan plan;
	kft_error e = {0};
	kft_rfc3339_now(now);
	if (kft_cm_trainjob_begin(job, now, &plan, &e) != 0) {
		kft_cm_outcome_error(out, &e);
		return;
	}
	if (plan.skip) {
		const json_t *mb = json_object_get(json_object_get(job, "spec"), "managedBy");
		KFT_LOG(cm->lg, -2, "trainjob-controller",
		        "Skipping TrainJob managed by a custom controller",
		        json_pack("{s:o, s:s}", "trainJob", kobj(job), "managedBy",
		                  json_is_string(mb) ? json_string_value(mb) : ""));
		return;
	}
	if (plan.error) {
		kft_error ue = {.code = KFT_EINVAL};
		snprintf(ue.message, sizeof(ue.message), "%s", plan.error);
		kft_cm_outcome_error(out, &ue);
	}
	int refused = plan.build ? refused_by_plugins(cm, job, now, &e) : 0;
	if (refused < 0) {
		kft_cm_outcome_error(out, &e);
		plan.build = 0;
	} else if (refused) {
		plan.build = 0;
	}
	kft_error_clear(&e);
	if (plan.build && build_and_apply(cm, job, &e) != 0) {
		record_failure(cm, stored, &e);
		kft_cm_outcome_error(out, &e);
	}
	kft_error_clear(&e);
	if (kft_cm_trainjob_finish(job, stored, plan.error || refused ? NULL : cm->fw, &cm->backend,
	                           now, &plan, &e) != 0)
		kft_cm_outcome_error(out, &e);
	if (plan.delete_jobset)
		delete_jobset(cm, job);
	if (plan.status_patch)
		write_status(cm, job, plan.status_patch, out);
	if (out->result != KFT_RESULT_ERROR && plan.requeue_after_ms > 0) {
		out->result = KFT_RESULT_REQUEUE_AFTER;
		out->requeue_after_ms = plan.requeue_after_ms;
	}
	kft_cm_plan_free(&plan);
}

void kft_cm_reconcile_trainjob(kft_cm *cm, const char *key, const char *reconcile_id,
                               kft_cm_outcome *out)
{
	(void)reconcile_id;
	json_t *stored = NULL;
	out->result = KFT_RESULT_SUCCESS;
	if (kft_informer_get_by_key(cm->trainjobs, key, &stored) != 0) {
		kft_cm_tracking_gone(cm->tracking, key);
		return; /* deleted: the children go with it (owner references) */
	}
	json_t *job = json_deep_copy(stored);
	if (!job) {
		kft_cm_outcome_error(out, &(kft_error){KFT_ENOMEM, "out of memory"});
		json_decref(stored);
		return;
	}
	KFT_LOG(cm->lg, -2, NULL, "Reconciling TrainJob",
	        json_pack("{s:s, s:s, s:o}", "controller", KFT_CM_TRAINJOB_CONTROLLER,
	                  "reconcileID", reconcile_id, "trainJob", kobj(stored)));
	run_trainjob(cm, stored, job, out);
	kft_cm_tracking_trainjob(cm->tracking, job);
	kft_cm_export_trainjob(cm, stored, out);
	json_decref(job);
	json_decref(stored);
}

/* ---- runtimes ------------------------------------------------------------------------- */

/* The RuntimeInUseFinalizer gate: count the TrainJobs referencing this
 * runtime through the TrainJob informer's runtime index. */
static int in_use_patch(kft_cm *cm, const char *kind, const char *key, const json_t *rt,
                        json_t **patch, kft_error *err)
{
	char value[KFT_CACHE_KEY_MAX + 64];
	size_t n = 0;
	snprintf(value, sizeof(value), "%s/%s", kind, key);
	/* a count, not the objects: the cache would decode every TrainJob */
	int rc = kft_informer_index_count(cm->trainjobs, KFT_CM_INDEX_RUNTIME, value, &n, err);
	if (rc == 0)
		rc = kft_cm_runtime_in_use_patch(rt, n, patch, err);
	return rc;
}

static void reconcile_runtime(kft_cm *cm, kft_informer *inf, const char *kind, const char *key,
                              const char *reconcile_id, kft_cm_outcome *out)
{
	json_t *rt = NULL, *patch = NULL;
	out->result = KFT_RESULT_SUCCESS;
	if (kft_informer_get_by_key(inf, key, &rt) != 0)
		return;
	char msg[64];
	snprintf(msg, sizeof(msg), "Reconciling %s", kind);
	KFT_LOG(cm->lg, -2, NULL, msg,
	        json_pack("{s:s, s:s}", "reconcileID", reconcile_id, "runtime", key));
	kft_error e = {0};
	int rc = (cm->cfg->features & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER)
	                 ? in_use_patch(cm, kind, key, rt, &patch, &e)
	                 : kft_cm_runtime_finalizer_patch(rt, &patch, &e);
	if (rc != 0)
		kft_cm_outcome_error(out, &e);
	else if (patch &&
	         kft_kube_patch(cm->kube, kft_gvr_lookup(KFT_API_VERSION, kind),
	                        meta(rt, "namespace"), meta(rt, "name"), KFT_PATCH_MERGE, patch,
	                        NULL, NULL, &e) != 0 &&
	         e.code != KFT_ENOTFOUND)
		kft_cm_outcome_error(out, &e);
	json_decref(patch);
	json_decref(rt);
}

void kft_cm_reconcile_runtime(kft_cm *cm, const char *key, const char *reconcile_id,
                              kft_cm_outcome *out)
{
	reconcile_runtime(cm, cm->runtimes, KFT_KIND_RUNTIME, key, reconcile_id, out);
}

void kft_cm_reconcile_cluster_runtime(kft_cm *cm, const char *key, const char *reconcile_id,
                                      kft_cm_outcome *out)
{
	reconcile_runtime(cm, cm->cluster_runtimes, KFT_KIND_CLUSTER_RUNTIME, key, reconcile_id,
	                  out);
}
