/*
 * kube_check.c - the kube client (src/kube/kube.h) against the real
 * kube-apiserver of the cluster tier, driven by t/70-kube-client.sh.
 *
 * Usage: kube_check NAMESPACE   (KUBECONFIG names the cluster, as `up` exports)
 *
 * Each check prints one "PASS: name" or "FAIL: name: why" line, as
 * t/common.sh does; the exit status is 0 when every check passed. Checks
 * build on each other (the ConfigMap created first is updated, patched,
 * applied, watched and deleted), so a failure early on may fail later ones
 * too; each still prints its own line.
 *
 * What it pins, from the API server's documented behaviour: a PUT with a
 * stale resourceVersion is 409 Conflict; a second create is 409
 * AlreadyExists; server-side apply by a second field manager conflicts
 * unless forced, and forcing moves ownership (managedFields); the status
 * subresource of a TrainJob takes only .status; a watch from a list's
 * resourceVersion sees exactly the later changes, and with
 * allowWatchBookmarks a bookmark arrives before timeoutSeconds ends it
 * (apiserver cacher: "pretimeout" bookmark 2 s before the deadline, sent
 * only when the resource version moved past the watch's last event); a
 * delete precondition on a wrong uid is 409.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"

#define CHECK_WHAT "kube client"
#include "check_common.h"

static const char *ns;
static kft_kube *kube;

static const kft_gvr *gvr(const char *av, const char *kind)
{
	return kft_gvr_lookup(av, kind);
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);
	return json_string_value(b ? json_object_get(v, b) : v);
}

static const char *rv_of(const json_t *obj)
{
	return str_at(obj, "metadata", "resourceVersion");
}

static json_t *configmap(const char *name, const char *key, const char *value)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
	                 "ConfigMap", "metadata", "name", name, "namespace", ns, "labels",
	                 "kube-check", "yes", "data", key, value);
}

/* create, get, list, duplicate create */
static json_t *check_create_get_list(const kft_gvr *cm)
{
	kft_error err;
	json_t *created = NULL, *got = NULL, *list = NULL;
	json_t *obj = configmap("cm1", "a", "1");
	int rc = kft_kube_create(kube, cm, obj, &created, &err);
	report(rc == 0 && rv_of(created), "create a ConfigMap", "%d %s", rc, err.message);
	rc = kft_kube_get(kube, cm, ns, "cm1", &got, &err);
	report(rc == 0 && strcmp(str_at(got, "data", "a"), "1") == 0, "get it back", "%d %s", rc,
	       err.message);
	json_decref(got);
	kft_list_opts lo = {.label_selector = "kube-check=yes", .page_size = 1};
	json_t *second = configmap("cm2", "b", "2");
	kft_kube_create(kube, cm, second, NULL, NULL);
	json_decref(second);
	rc = kft_kube_list(kube, cm, ns, &lo, &list, &err);
	report(rc == 0 && json_array_size(json_object_get(list, "items")) == 2 && rv_of(list) &&
	               *rv_of(list),
	       "list by label, one item per page", "%d %s", rc, err.message);
	json_decref(list);
	rc = kft_kube_create(kube, cm, obj, NULL, &err);
	report(rc == KFT_EEXIST && strstr(err.message, "already exists"),
	       "a second create is AlreadyExists", "%d %s", rc, err.message);
	json_decref(obj);
	return created;
}

/* update with the current RV, then with the stale one */
static void check_update_conflict(const kft_gvr *cm, json_t *created)
{
	kft_error err;
	json_t *upd = json_deep_copy(created), *out = NULL;
	json_object_set_new(json_object_get(upd, "data"), "a", json_string("2"));
	int rc = kft_kube_update(kube, cm, upd, &out, &err);
	report(rc == 0 && strcmp(rv_of(out), rv_of(created)) != 0,
	       "update with the current "
	       "resourceVersion",
	       "%d %s", rc, err.message);
	json_decref(out);
	json_object_set_new(json_object_get(upd, "data"), "a", json_string("3"));
	rc = kft_kube_update(kube, cm, upd, NULL, &err);
	report(rc == KFT_ECONFLICT && strstr(err.message, "the object has been modified"),
	       "update with a stale resourceVersion is a conflict", "%d %s", rc, err.message);
	json_decref(upd);
}

static void check_patch(const kft_gvr *cm)
{
	kft_error err;
	json_t *patch = json_pack("{s:{s:s}}", "data", "patched", "yes"), *out = NULL;
	int rc = kft_kube_patch(kube, cm, ns, "cm1", KFT_PATCH_MERGE, patch, NULL, &out, &err);
	report(rc == 0 && strcmp(str_at(out, "data", "patched"), "yes") == 0 &&
	               strcmp(str_at(out, "data", "a"), "2") == 0,
	       "merge patch", "%d %s", rc, err.message);
	json_decref(out);
	json_decref(patch);
	json_t *jp = json_pack("[{s:s, s:s}]", "op", "remove", "path", "/data/patched");
	rc = kft_kube_patch(kube, cm, ns, "cm1", KFT_PATCH_JSON, jp, NULL, &out, &err);
	report(rc == 0 && !str_at(out, "data", "patched"), "JSON patch", "%d %s", rc, err.message);
	json_decref(out);
	json_decref(jp);
}

/* Which manager owns data.KEY according to managedFields. */
static int manager_owns(const json_t *obj, const char *manager, const char *key)
{
	char field[128];
	snprintf(field, sizeof(field), "f:%s", key);
	size_t i;
	json_t *mf;
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "managedFields"), i,
	                   mf)
	{
		const char *m = json_string_value(json_object_get(mf, "manager"));
		json_t *data = json_object_get(json_object_get(mf, "fieldsV1"), "f:data");
		if (m && strcmp(m, manager) == 0 && json_object_get(data, field))
			return 1;
	}
	return 0;
}

static void check_apply(const kft_gvr *cm)
{
	kft_error err;
	json_t *out = NULL;
	json_t *a = configmap("cm-ssa", "owned", "by-a");
	int rc = kft_kube_apply(kube, cm, a, "kube-check-a", 0, &out, &err);
	report(rc == 0 && manager_owns(out, "kube-check-a", "owned"),
	       "server-side apply creates, the field manager owns the field", "%d %s", rc,
	       err.message);
	json_decref(out);
	json_t *b = configmap("cm-ssa", "owned", "by-b");
	rc = kft_kube_apply(kube, cm, b, "kube-check-b", 0, NULL, &err);
	report(rc == KFT_ECONFLICT && strstr(err.message, "kube-check-a"),
	       "a second manager's apply conflicts", "%d %s", rc, err.message);
	rc = kft_kube_apply(kube, cm, b, "kube-check-b", 1, &out, &err);
	report(rc == 0 && strcmp(str_at(out, "data", "owned"), "by-b") == 0 &&
	               manager_owns(out, "kube-check-b", "owned") &&
	               !manager_owns(out, "kube-check-a", "owned"),
	       "forced apply takes ownership", "%d %s", rc, err.message);
	json_decref(out);
	json_decref(a);
	json_decref(b);
}

static json_t *condition(const char *type, const char *reason)
{
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", "True", "reason",
	                 reason, "message", "set by kube_check", "lastTransitionTime", now);
}

static void check_trainjob_status(void)
{
	const kft_gvr *tjg = gvr("trainer.kubeflow.org/v1alpha1", "TrainJob");
	kft_error err;
	json_t *tj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}, s:b}}", "apiVersion",
	                       "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
	                       "name", "tj", "namespace", ns, "spec", "runtimeRef", "name",
	                       "torch-distributed", "suspend", 1);
	json_t *created = NULL, *out = NULL;
	int rc = kft_kube_create(kube, tjg, tj, &created, &err);
	report(rc == 0, "create a TrainJob", "%d %s", rc, err.message);
	if (rc == 0) {
		json_object_set_new(
		        created, "status",
		        json_pack("{s:[o]}", "conditions", condition("Suspended", "Suspended")));
		/* a spec change sent to /status is ignored by the server */
		json_object_set_new(json_object_get(created, "spec"), "suspend", json_false());
		rc = kft_kube_update_status(kube, tjg, created, &out, &err);
		json_t *c0 = json_array_get(
		        json_object_get(json_object_get(out, "status"), "conditions"), 0);
		report(rc == 0 && strcmp(str_at(c0, "type", NULL), "Suspended") == 0 &&
		               json_is_true(
		                       json_object_get(json_object_get(out, "spec"), "suspend")),
		       "update_status sets .status only", "%d %s", rc, err.message);
		json_decref(out);
	}
	json_t *st = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[o]}}", "apiVersion",
	                       "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
	                       "name", "tj", "namespace", ns, "status", "conditions",
	                       condition("Complete", "JobSetCompleted"));
	rc = kft_kube_apply_status(kube, tjg, st, "kube-check-status", 1, &out, &err);
	json_t *conds = json_object_get(json_object_get(out, "status"), "conditions");
	int found = 0;
	for (size_t i = 0; i < json_array_size(conds); i++)
		found |= strcmp(str_at(json_array_get(conds, i), "type", NULL), "Complete") == 0;
	report(rc == 0 && found, "server-side apply of the status subresource", "%d %s", rc,
	       err.message);
	json_decref(out);
	json_decref(st);
	json_decref(created);
	json_decref(tj);
}

typedef struct watch_run {
	const kft_gvr *gvr;
	char rv[64];
	int added, modified, deleted, bookmarks, other;
	int rc;
	kft_error err;
	pthread_mutex_t mu;
	pthread_cond_t cond;
} watch_run;

static int on_event(void *ctx, const char *type, const json_t *obj)
{
	watch_run *w = ctx;
	const char *name = str_at(obj, "metadata", "name");
	if (strcmp(type, "BOOKMARK") == 0)
		w->bookmarks++;
	else if (!name || strcmp(name, "watched") != 0)
		w->other++;
	else if (strcmp(type, "ADDED") == 0) {
		pthread_mutex_lock(&w->mu);
		w->added++;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->mu);
	} else if (strcmp(type, "MODIFIED") == 0)
		w->modified++;
	else if (strcmp(type, "DELETED") == 0)
		w->deleted++;
	return 0;
}

static void *watch_thread(void *p)
{
	watch_run *w = p;
	kft_watch_opts o = {.resource_version = w->rv,
	                    .label_selector = "kube-check-watch=yes",
	                    .allow_bookmarks = 1,
	                    .timeout_seconds = 6};
	w->rc = kft_kube_watch(kube, w->gvr, ns, &o, on_event, w, NULL, &w->err);
	pthread_mutex_lock(&w->mu);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void check_watch(const kft_gvr *cm)
{
	watch_run w = {
	        .gvr = cm, .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	kft_error err;
	json_t *list = NULL, *made = NULL;
	kft_list_opts lo = {.field_selector = "metadata.name=watched"};
	if (kft_kube_list(kube, cm, ns, &lo, &list, &err)) {
		report(0, "watch from a list's resourceVersion", "list: %s", err.message);
		return;
	}
	snprintf(w.rv, sizeof(w.rv), "%s", rv_of(list));
	json_decref(list);
	pthread_t t;
	pthread_create(&t, NULL, watch_thread, &w);
	json_t *obj = configmap("watched", "x", "1");
	json_object_set_new(json_object_get(json_object_get(obj, "metadata"), "labels"),
	                    "kube-check-watch", json_string("yes"));
	int rc = kft_kube_create(kube, cm, obj, &made, &err);
	json_t *patch = json_pack("{s:{s:s}}", "data", "x", "2");
	/* Go on once the watch is surely registered (it delivered ADDED): the
	 * hidden change below must come after that to show as progress. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&w.mu);
	while (w.added == 0 && pthread_cond_timedwait(&w.cond, &w.mu, &until) == 0)
		;
	pthread_mutex_unlock(&w.mu);
	if (rc == 0)
		rc = kft_kube_patch(kube, cm, ns, "watched", KFT_PATCH_MERGE, patch, NULL, NULL,
		                    &err);
	if (rc == 0)
		rc = kft_kube_delete(kube, cm, ns, "watched", NULL, NULL, &err);
	/* A bookmark carries progress: the server sends one only when the
	 * resource's resourceVersion moved past the watch's last event. A change
	 * the label selector hides moves it without an event here. */
	json_t *hidden = json_pack("{s:{s:s}}", "data", "moved", "on");
	if (rc == 0)
		rc = kft_kube_patch(kube, cm, ns, "cm2", KFT_PATCH_MERGE, hidden, NULL, NULL, &err);
	json_decref(hidden);
	pthread_join(t, NULL);
	report(rc == 0 && w.rc == 0 && w.added == 1 && w.modified == 1 && w.deleted == 1 &&
	               w.other == 0,
	       "watch from a list's resourceVersion sees ADDED, MODIFIED, DELETED",
	       "writes %d (%s); watch %d (%s); added %d modified %d deleted %d other %d", rc,
	       rc ? err.message : "", w.rc, w.rc ? w.err.message : "", w.added, w.modified,
	       w.deleted, w.other);
	report(w.bookmarks >= 1, "watch with allowWatchBookmarks gets a BOOKMARK", "%d bookmarks",
	       w.bookmarks);
	json_decref(patch);
	json_decref(obj);
	json_decref(made);
}

static void check_event(const json_t *involved)
{
	const kft_gvr *ev = gvr("v1", "Event");
	kft_error err;
	json_t *list = NULL;
	int rc = kft_kube_event(kube, involved, "Normal", "KubeCheck", "checked by kube_check",
	                        "kube-check", &err);
	if (rc == 0)
		rc = kft_kube_event(kube, involved, "Normal", "KubeCheck", "checked by kube_check",
		                    "kube-check", &err);
	kft_list_opts lo = {.field_selector = "involvedObject.name=cm1,reason=KubeCheck"};
	if (rc == 0)
		rc = kft_kube_list(kube, ev, ns, &lo, &list, &err);
	json_t *e = json_array_get(json_object_get(list, "items"), 0);
	report(rc == 0 && json_array_size(json_object_get(list, "items")) == 1 &&
	               json_integer_value(json_object_get(e, "count")) == 2 &&
	               strcmp(str_at(e, "source", "component"), "kube-check") == 0 &&
	               str_at(e, "involvedObject", "uid"),
	       "an event is recorded, and a repeat counted on it", "%d %s; %zu events", rc,
	       err.message, json_array_size(json_object_get(list, "items")));
	json_decref(list);
}

static void check_delete(const kft_gvr *cm, const json_t *created)
{
	kft_error err;
	json_t *out = NULL;
	kft_delete_opts wrong = {.propagation = KFT_PROPAGATION_BACKGROUND,
	                         .precondition_uid = "00000000-0000-0000-0000-000000000000"};
	int rc = kft_kube_delete(kube, cm, ns, "cm1", &wrong, NULL, &err);
	report(rc == KFT_ECONFLICT && strstr(err.message, "the UID in the precondition"),
	       "delete with a wrong uid precondition is refused", "%d %s", rc, err.message);
	kft_delete_opts right = wrong;
	right.precondition_uid = str_at(created, "metadata", "uid");
	rc = kft_kube_delete(kube, cm, ns, "cm1", &right, NULL, &err);
	int gone = kft_kube_get(kube, cm, ns, "cm1", &out, &err);
	report(rc == 0 && gone == KFT_ENOTFOUND && strstr(err.message, "not found"),
	       "delete, then get is NotFound", "%d %d %s", rc, gone, err.message);
	json_decref(out);
}

static void check_misc(void)
{
	kft_error err;
	json_t *out = NULL;
	int rc = kft_kube_get(kube, gvr("v1", "Namespace"), NULL, ns, &out, &err);
	report(rc == 0 && strcmp(str_at(out, "metadata", "name"), ns) == 0,
	       "get a cluster-scoped object", "%d %s", rc, err.message);
	json_decref(out);
	rc = kft_kube_request(kube, "GET", "/version", NULL, NULL, 0, &out, &err);
	report(rc == 0 && str_at(out, "gitVersion", NULL), "a raw request (/version)", "%d %s", rc,
	       err.message);
	json_decref(out);
}

int main(int argc, char **argv)
{
	kft_kube_config *cfg = NULL;
	kft_error err;
	if (argc != 2) {
		fprintf(stderr, "usage: kube_check NAMESPACE\n");
		return 2;
	}
	ns = argv[1];
	int rc = kft_kube_config_load(NULL, NULL, &cfg, &err);
	if (rc == 0)
		rc = kft_kube_new(cfg, &kube, &err);
	report(rc == 0, "load KUBECONFIG and connect", "%s", err.message);
	kft_kube_config_free(cfg);
	if (rc)
		return 1;
	const kft_gvr *cm = gvr("v1", "ConfigMap");
	json_t *created = check_create_get_list(cm);
	if (created) {
		check_update_conflict(cm, created);
		check_patch(cm);
		check_apply(cm);
		check_trainjob_status();
		check_watch(cm);
		check_event(created);
		check_delete(cm, created);
	}
	check_misc();
	json_decref(created);
	kft_kube_free(kube);
	return failures ? 1 : 0;
}
