/*
 * reconcile.c - the TrainJob and runtime reconcilers' decisions, as pure
 * functions over JSON objects so they are tested without an API server.
 *
 * A TrainJob reconcile (upstream v2.3.0 pkg/controller/trainjob_controller.go)
 * is: leave it alone when spec.managedBy names another controller; clear a
 * Failed condition (unless DeadlineExceeded); fail it when its runtime kind
 * is not one we serve; otherwise, unless finished, build and apply the
 * children; set Suspended/Resumed; adopt the status the framework computes
 * from the children; enforce activeDeadlineSeconds; and send the status as a
 * merge patch against what was read (upstream's client.MergeFrom on the
 * status subresource, not SSA). kft_cm_trainjob_begin and
 * kft_cm_trainjob_finish are the two halves around the apply, which needs
 * the API server and lives in the manager.
 *
 * The runtime snapshot (upstream's KEP-2599, pkg/runtime/core/snapshot.go)
 * is a ConfigMap "<trainjob>-runtime-snapshot" holding the runtime as YAML:
 * a TrainJob keeps building from the runtime it started with even when the
 * runtime is changed or deleted afterwards.
 *
 * kft_cm_apply_is_noop lets the manager skip a server-side apply whose
 * every field the live object already has: upstream applies every time and
 * lets the server find nothing to do; we save the round trip.
 */
#include <stdlib.h>
#include <string.h>

#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "controller/reconcile.h"
#include "controller/controller.h"
#include "kftrainer/decode.h"

#define MAX_COMPARE_DEPTH 200

/* ---- backend --------------------------------------------------------------------- */

typedef struct lookup_self {
	kft_cm_lookup_fn fn;
	void *self;
} lookup_self;

static const char *uid_of(void *self, const json_t *trainjob)
{
	(void)self;
	const json_t *uid = json_object_get(json_object_get(trainjob, "metadata"), "uid");
	return json_is_string(uid) && *json_string_value(uid) ? json_string_value(uid) : NULL;
}

/* The Kubernetes backend, one of the three (render, local, Kubernetes;
 * docs/architecture.md, "Backends"): default addressing, ports and status
 * endpoint, children from the caches, the TrainJob's own UID. */
void kft_cm_backend_init(kft_backend *b, kft_cm_lookup_fn lookup, void *self)
{
	memset(b, 0, sizeof(*b));
	b->name = "kubernetes";
	b->self = self;
	b->get_object = lookup;
	b->trainjob_uid = uid_of;
}

/* ---- apply no-op detection -------------------------------------------------------- */

static int numbers_equal(const json_t *a, const json_t *b)
{
	return json_number_value(a) == json_number_value(b);
}

static int subset(const json_t *want, const json_t *have, int depth)
{
	if (depth > MAX_COMPARE_DEPTH || !have)
		return 0;
	if (json_is_number(want) && json_is_number(have))
		return numbers_equal(want, have);
	if (json_typeof(want) != json_typeof(have))
		/* An empty list/map we send is what the server omits. */
		return (json_is_array(want) && json_array_size(want) == 0 && json_is_null(have)) ||
		       (json_is_object(want) && json_object_size(want) == 0 && json_is_null(have));
	if (json_is_object(want)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)want, k, v)
		{
			const json_t *h = json_object_get(have, k);
			if (!h) {
				/* null, {} and [] we send leave nothing on the server */
				if (json_is_null(v) ||
				    (json_is_object(v) && json_object_size(v) == 0) ||
				    (json_is_array(v) && json_array_size(v) == 0))
					continue;
				return 0;
			}
			if (!subset(v, h, depth + 1))
				return 0;
		}
		return 1;
	}
	if (json_is_array(want)) {
		if (json_array_size(want) != json_array_size(have))
			return 0;
		for (size_t i = 0; i < json_array_size(want); i++)
			if (!subset(json_array_get(want, i), json_array_get(have, i), depth + 1))
				return 0;
		return 1;
	}
	return json_equal((json_t *)want, (json_t *)have);
}

int kft_cm_apply_is_noop(const json_t *desired, const json_t *live)
{
	if (!json_is_object(desired) || !json_is_object(live))
		return 0;
	return subset(desired, live, 0);
}

/* ---- merge patch ------------------------------------------------------------------ */

static json_t *diff(const json_t *from, const json_t *to, int depth);

static int diff_members(json_t *patch, const json_t *from, const json_t *to, int depth)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)from, k, v)
	{
		if (!json_object_get(to, k) && json_object_set_new(patch, k, json_null()))
			return -1;
	}
	json_object_foreach((json_t *)to, k, v)
	{
		const json_t *old = json_object_get(from, k);
		if (old && json_equal((json_t *)old, v))
			continue;
		json_t *d = old ? diff(old, v, depth + 1) : json_deep_copy(v);
		if (!d || json_object_set_new(patch, k, d))
			return -1;
	}
	return 0;
}

static json_t *diff(const json_t *from, const json_t *to, int depth)
{
	if (!json_is_object(from) || !json_is_object(to) || depth > MAX_COMPARE_DEPTH)
		return json_deep_copy(to);
	json_t *patch = json_object();
	if (!patch || diff_members(patch, from, to, depth)) {
		json_decref(patch);
		return NULL;
	}
	return patch;
}

json_t *kft_cm_merge_patch(const json_t *from, const json_t *to)
{
	if (!to)
		return json_null();
	return diff(from, to, 0);
}

/* ---- runtime snapshot ----------------------------------------------------------- */

/* A copy of v with every object's keys in byte order (sigs.k8s.io/yaml
 * marshals through a Go map, which sorts them). */
static json_t *sorted_copy(const json_t *v, int depth)
{
	if (depth > MAX_COMPARE_DEPTH)
		return NULL;
	if (json_is_array(v)) {
		json_t *out = json_array();
		for (size_t i = 0; out && i < json_array_size(v); i++)
			if (json_array_append_new(out,
			                          sorted_copy(json_array_get(v, i), depth + 1))) {
				json_decref(out);
				return NULL;
			}
		return out;
	}
	if (!json_is_object(v))
		return json_deep_copy(v);
	size_t n = json_object_size(v), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	json_t *out = keys ? json_object() : NULL;
	const char *k;
	json_t *item;
	json_object_foreach((json_t *)v, k, item) keys[i++] = k;
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
			const char *t = keys[b];
			keys[b] = keys[b - 1];
			keys[b - 1] = t;
		}
	for (i = 0; out && i < n; i++) {
		json_t *c = sorted_copy(json_object_get(v, keys[i]), depth + 1);
		if (!c || json_object_set_new(out, keys[i], c)) {
			json_decref(out);
			out = NULL;
		}
	}
	free(keys);
	return out;
}

static const char *meta_str(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(json_object_get(obj, "metadata"), key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_t *snapshot_owner(const json_t *trainjob)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", KFT_API_VERSION, "kind",
	                 KFT_KIND_TRAINJOB, "name", meta_str(trainjob, "name"), "uid",
	                 meta_str(trainjob, "uid"), "controller", 1, "blockOwnerDeletion", 1);
}

static char *snapshot_yaml(const json_t *runtime, kft_error *err)
{
	json_t *copy = json_deep_copy(runtime);
	json_t *md = copy ? json_object_get(copy, "metadata") : NULL;
	if (json_is_object(md))
		json_object_del(md, "managedFields");
	json_t *sorted = copy ? sorted_copy(copy, 0) : NULL;
	json_decref(copy);
	if (!sorted) {
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	char *yaml = kft_yaml_emit(sorted, err);
	json_decref(sorted);
	return yaml;
}

json_t *kft_cm_snapshot_configmap(const json_t *trainjob, const json_t *runtime, kft_error *err)
{
	const char *name = meta_str(trainjob, "name"), *ns = meta_str(trainjob, "namespace");
	if (!name || !meta_str(trainjob, "uid")) {
		kft_error_set(err, KFT_EINVAL, "runtime snapshot: the TrainJob has no name or uid");
		return NULL;
	}
	char cm_name[320];
	snprintf(cm_name, sizeof(cm_name), "%s%s", name, KFT_CM_SNAPSHOT_SUFFIX);
	char *yaml = snapshot_yaml(runtime, err);
	if (!yaml)
		return NULL;
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:s?, s:[o]}, s:{s:s}}", "apiVersion", "v1",
	                       "kind", "ConfigMap", "metadata", "name", cm_name, "namespace", ns,
	                       "ownerReferences", snapshot_owner(trainjob), "data",
	                       KFT_CM_SNAPSHOT_DATA_KEY, yaml);
	free(yaml);
	if (!cm)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return cm;
}

/* Whether the ConfigMap's controller ownerReference has this uid. */
static int controlled_by(const json_t *obj, const char *uid)
{
	const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t i;
	const json_t *ref;
	json_array_foreach(refs, i, ref)
	{
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		const json_t *u = json_object_get(ref, "uid");
		return uid && json_is_string(u) && strcmp(json_string_value(u), uid) == 0;
	}
	return 0;
}

static const char *str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

/* upstream's check that the snapshot is of the runtime spec.runtimeRef names */
static int check_snapshot_ref(const json_t *trainjob, const json_t *rt, kft_error *err)
{
	const json_t *ref = json_object_get(json_object_get(trainjob, "spec"), "runtimeRef");
	const json_t *kind = json_object_get(ref, "kind"),
	             *group = json_object_get(ref, "apiGroup");
	const char *rt_name = str_or(json_object_get(json_object_get(rt, "metadata"), "name"), "");
	const char *rt_kind = str_or(json_object_get(rt, "kind"), "");
	const char *av = str_or(json_object_get(rt, "apiVersion"), "");
	const char *slash = strchr(av, '/');
	char rt_group[256];
	snprintf(rt_group, sizeof(rt_group), "%.*s", slash ? (int)(slash - av) : 0, av);
	int bad = (json_is_string(kind) && strcmp(json_string_value(kind), rt_kind) != 0) ||
	          (json_is_string(group) && strcmp(json_string_value(group), rt_group) != 0) ||
	          strcmp(str_or(json_object_get(ref, "name"), ""), rt_name) != 0;
	if (!bad)
		return 0;
	return kft_error_set(err, KFT_EINVAL,
	                     "invalid runtime snapshot: the snapshot refers to the wrong runtime: "
	                     "expecting a runtime with name, api group and kind of \"%s\", \"%s\", "
	                     "\"%s\" but found runtime with name, api group and kind of \"%s\", "
	                     "\"%s\", \"%s\"",
	                     str_or(json_object_get(ref, "name"), ""), str_or(group, "<any>"),
	                     str_or(kind, "<any>"), rt_name, rt_group, rt_kind);
}

int kft_cm_snapshot_runtime(const json_t *trainjob, const json_t *configmap, json_t **runtime,
                            kft_error *err)
{
	*runtime = NULL;
	if (!controlled_by(configmap, meta_str(trainjob, "uid")))
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid runtime snapshot: a snapshot configmap exists but is "
		                     "owned by another object");
	const json_t *text =
	        json_object_get(json_object_get(configmap, "data"), KFT_CM_SNAPSHOT_DATA_KEY);
	if (!json_is_string(text))
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid runtime snapshot: snapshot ConfigMap missing \"%s\" "
		                     "data key",
		                     KFT_CM_SNAPSHOT_DATA_KEY);
	kft_doc_list docs = {0};
	kft_error derr = {0};
	if (kft_decode(json_string_value(text), json_string_length(text), "snapshot", &docs,
	               &derr) != 0 ||
	    docs.count != 1 || !json_is_object(docs.items[0].root)) {
		kft_doc_list_free(&docs);
		return kft_error_set(
		        err, KFT_EINVAL,
		        "invalid runtime snapshot: unable to unmarshal the snapshot: %s",
		        derr.message[0] ? derr.message : "not one object");
	}
	json_t *rt = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	int rc = check_snapshot_ref(trainjob, rt, err);
	if (rc) {
		json_decref(rt);
		return rc;
	}
	*runtime = rt;
	return 0;
}

/* ---- the TrainJob reconcile ------------------------------------------------------- */

void kft_cm_plan_free(kft_cm_plan *p)
{
	if (!p)
		return;
	json_decref(p->status_patch);
	free(p->error);
	memset(p, 0, sizeof(*p));
}

static int runtime_supported(const char *key)
{
	return strcmp(key, KFT_KIND_RUNTIME "." KFT_GROUP) == 0 ||
	       strcmp(key, KFT_KIND_CLUSTER_RUNTIME "." KFT_GROUP) == 0;
}

int kft_cm_trainjob_begin(json_t *job, const char *now, kft_cm_plan *plan, kft_error *err)
{
	memset(plan, 0, sizeof(*plan));
	if (kft_trainjob_is_managed_externally(job)) {
		plan->skip = 1;
		return 0;
	}
	kft_trainjob_clear_failed(job);
	char *key = kft_trainjob_runtime_key(job);
	if (!key)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = 0;
	if (!runtime_supported(key)) {
		size_t n = strlen(key) + 32;
		plan->error = malloc(n);
		if (!plan->error)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		else {
			snprintf(plan->error, n, "unsupported runtime: %s", key);
			rc = kft_trainjob_set_unsupported_runtime(job, now, err);
		}
	} else if (!kft_trainjob_is_finished(job)) {
		plan->build = 1;
	}
	free(key);
	return rc;
}

/* A copy without empty objects and lists, and NULL when nothing is left:
 * Go omits them, and equality.Semantic treats nil and empty as equal, so a
 * status of {} is no status at all (and the CRD refuses an empty one). */
static json_t *pruned(const json_t *v, int depth)
{
	if (!v || depth > MAX_COMPARE_DEPTH)
		return NULL;
	if (json_is_array(v))
		return json_array_size(v) ? json_deep_copy(v) : NULL;
	if (!json_is_object(v))
		return json_deep_copy(v);
	json_t *out = json_object();
	const char *k;
	json_t *item;
	json_object_foreach((json_t *)v, k, item)
	{
		json_t *c = pruned(item, depth + 1);
		if (c && json_object_set_new(out, k, c)) {
			json_decref(out);
			return NULL;
		}
	}
	if (out && json_object_size(out) == 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static int status_patch(const json_t *stored, const json_t *job, kft_cm_plan *plan, kft_error *err)
{
	json_t *before = pruned(json_object_get(stored, "status"), 0);
	json_t *after = pruned(json_object_get(job, "status"), 0);
	int rc = 0;
	if ((before || after) && !(before && after && json_equal(before, after))) {
		json_t *d = after ? kft_cm_merge_patch(before, after) : json_null();
		plan->status_patch = d ? json_pack("{s:o}", "status", d) : NULL;
		if (!plan->status_patch)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	json_decref(before);
	json_decref(after);
	return rc;
}

int kft_cm_trainjob_finish(json_t *job, const json_t *stored, const kft_framework *fw,
                           const kft_backend *backend, const char *now, kft_cm_plan *plan,
                           kft_error *err)
{
	int rc = kft_trainjob_set_suspended(job, now, err);
	if (rc)
		return rc;
	if (fw) {
		json_t *status = NULL;
		rc = kft_framework_status(fw, backend, job, now, &status, err);
		if (rc)
			return rc;
		if ((rc = kft_trainjob_adopt_status(job, status, now, err)))
			return rc;
	}
	kft_deadline_state st = KFT_DEADLINE_NONE;
	int64_t after_ms = 0;
	if ((rc = kft_trainjob_reconcile_deadline(job, now, &st, &after_ms, err)))
		return rc;
	plan->delete_jobset = (st == KFT_DEADLINE_EXCEEDED);
	plan->requeue_after_ms = (st == KFT_DEADLINE_PENDING) ? after_ms : 0;
	return status_patch(stored, job, plan, err);
}

/* ---- runtimes ------------------------------------------------------------------- */

int kft_cm_runtime_finalizer_patch(const json_t *runtime, json_t **patch, kft_error *err)
{
	*patch = NULL;
	const json_t *fins = json_object_get(json_object_get(runtime, "metadata"), "finalizers");
	if (!json_is_array(fins))
		return 0;
	json_t *kept = json_array();
	int found = 0;
	size_t i;
	const json_t *f;
	json_array_foreach(fins, i, f)
	{
		if (json_is_string(f) &&
		    strcmp(json_string_value(f), KFT_CM_RESOURCE_IN_USE_FINALIZER) == 0)
			found = 1;
		else if (kept && json_array_append(kept, (json_t *)f))
			break;
	}
	if (!found || !kept) {
		json_decref(kept);
		return kept ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	/* As client.MergeFrom writes it: an emptied list is null (Go omitempty). */
	*patch = json_pack("{s:{s:o}}", "metadata", "finalizers",
	                   json_array_size(kept) ? kept : (json_decref(kept), json_null()));
	return *patch ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}
