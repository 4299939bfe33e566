/*
 * test_kube_informer.c - the list+watch cache (src/kube/informer.c) against
 * an in-process API server (kube_fake_api.h) and the real REST client.
 *
 * Behaviour pinned (client-go tools/cache reflector.go, shared_informer.go,
 * thread_safe_store.go, as controller-runtime uses them):
 *   - list (paginated) then watch from the list's resourceVersion with
 *     allowWatchBookmarks=true; has_synced once the first list is in;
 *   - ADDED/MODIFIED/DELETED update the cache and reach the handlers with
 *     old and new objects; BOOKMARK only moves the resourceVersion;
 *   - an expired resourceVersion (ERROR 410) relists and the differences
 *     are delivered: vanished objects as deletes with an unknown final
 *     state (DeletedFinalStateUnknown), changed ones as updates;
 *   - a cut connection is re-watched from the last resourceVersion seen,
 *     without a new list;
 *   - indexes answer by value and follow updates.
 * managedFields is dropped from cached objects (our memory goal).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/kube_cache.h"
#include "kube_fake_api.h"

/* ---- what the handlers saw ----------------------------------------------- */

#define REC_MAX 512

typedef struct recorder {
	pthread_mutex_t mu;
	char lines[REC_MAX][160];
	int n;
} recorder;

static void rec_add(recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec_add(recorder *r, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&r->mu);
	if (r->n < REC_MAX) {
		va_start(ap, fmt);
		vsnprintf(r->lines[r->n++], sizeof(r->lines[0]), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->mu);
}

static const char *rv_of(const json_t *o)
{
	const char *rv = fake_meta(o, "resourceVersion");
	return rv ? rv : "?";
}

static void on_add(void *ctx, const json_t *obj, int initial)
{
	char key[KFT_CACHE_KEY_MAX];
	kft_cache_key(obj, key, sizeof(key));
	rec_add(ctx, "add %s%s", key, initial ? " initial" : "");
	if (json_object_get(json_object_get(obj, "metadata"), "managedFields"))
		rec_add(ctx, "managedFields kept on %s", key);
}

static void on_update(void *ctx, const json_t *old_obj, const json_t *new_obj)
{
	char key[KFT_CACHE_KEY_MAX];
	kft_cache_key(new_obj, key, sizeof(key));
	rec_add(ctx, "update %s %s->%s", key, rv_of(old_obj), rv_of(new_obj));
}

static void on_delete(void *ctx, const json_t *obj, int unknown)
{
	char key[KFT_CACHE_KEY_MAX];
	kft_cache_key(obj, key, sizeof(key));
	rec_add(ctx, "delete %s%s", key, unknown ? " final-state-unknown" : "");
}

static int rec_has(recorder *r, const char *line)
{
	pthread_mutex_lock(&r->mu);
	int found = 0;
	for (int i = 0; i < r->n && !found; i++)
		found = strcmp(r->lines[i], line) == 0;
	pthread_mutex_unlock(&r->mu);
	return found;
}

static int rec_count_prefix(recorder *r, const char *prefix)
{
	pthread_mutex_lock(&r->mu);
	int n = 0;
	for (int i = 0; i < r->n; i++)
		n += strncmp(r->lines[i], prefix, strlen(prefix)) == 0;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static void rec_dump(recorder *r)
{
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->n; i++)
		fprintf(stderr, "  seen: %s\n", r->lines[i]);
	pthread_mutex_unlock(&r->mu);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits up to 10 s for the handlers to have seen `line`. */
static void wait_line(recorder *r, const char *line)
{
	for (int i = 0; i < 1000; i++) {
		if (rec_has(r, line))
			return;
		sleep_ms(10);
	}
	rec_dump(r);
	fail_msg("handlers never saw \"%s\"", line);
}

/* ---- fixture --------------------------------------------------------------- */

typedef struct fx {
	fake_api *f;
	kft_kube *kube;
	kft_informer *inf;
	recorder rec;
} fx;

/* An index on the "app" label. */
static int index_app(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	const char *app = json_string_value(json_object_get(
	        json_object_get(json_object_get(obj, "metadata"), "labels"), "app"));
	return app ? kft_index_keys_add(keys, app) : 0;
}

static int setup(void **state)
{
	fx *x = calloc(1, sizeof(*x));
	pthread_mutex_init(&x->rec.mu, NULL);
	x->f = fake_start();
	assert_non_null(x->f);
	x->kube = fake_client(x->f);
	assert_non_null(x->kube);
	/* Three in "a" (more than a page of 2), one in "b". */
	fake_put(x->f, fake_configmap("a", "one", "web"));
	fake_put(x->f, fake_configmap("a", "two", "web"));
	fake_put(x->f, fake_configmap("a", "three", "db"));
	fake_put(x->f, fake_configmap("b", "four", "web"));
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	fx *x = *state;
	kft_informer_free(x->inf);
	kft_kube_free(x->kube);
	fake_stop(x->f);
	pthread_mutex_destroy(&x->rec.mu);
	free(x);
	return 0;
}

static void start_informer_kept(fx *x, const char *ns, int keep_trees)
{
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .namespace = ns,
	                       .page_size = 2,
	                       .max_backoff_s = 0.2,
	                       .keep_trees = keep_trees};
	assert_non_null(o.gvr);
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	assert_int_equal(kft_informer_add_index(x->inf, "app", index_app, NULL, &err), 0);
	assert_int_equal(
	        kft_informer_add_index(x->inf, "namespace", kft_index_namespace, NULL, &err), 0);
	assert_int_equal(kft_informer_add_index(x->inf, "app", index_app, NULL, &err), KFT_EINVAL);
	kft_informer_handlers h = {on_add, on_update, on_delete, &x->rec};
	assert_int_equal(kft_informer_add_handlers(x->inf, &h, &err), 0);
	assert_int_equal(kft_informer_has_synced(x->inf), 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	if (kft_informer_wait_synced(x->inf, 10, &err) != 0)
		fail_msg("not synced: %s", err.message);
	assert_int_equal(kft_informer_has_synced(x->inf), 1);
	/* After start, the set of indexes and handlers is fixed. */
	assert_int_equal(kft_informer_add_handlers(x->inf, &h, &err), KFT_EINVAL);
	assert_int_equal(kft_informer_start(x->inf, &err), KFT_EINVAL);
}

/* The default: objects stored as compact text. */
static void start_informer(fx *x, const char *ns)
{
	start_informer_kept(x, ns, 0);
}

/* How many objects by_index finds; index_count must agree without
 * decoding them. */
static size_t by_index_count(kft_informer *inf, const char *index, const char *value)
{
	json_t *arr = NULL;
	kft_error err;
	size_t counted = 99;
	assert_int_equal(kft_informer_by_index(inf, index, value, &arr, &err), 0);
	size_t n = json_array_size(arr);
	json_decref(arr);
	assert_int_equal(kft_informer_index_count(inf, index, value, &counted, &err), 0);
	assert_int_equal(counted, n);
	return n;
}

/* Waits until the watch is open (the informer asked for it). */
static void wait_watches(fx *x, int n)
{
	for (int i = 0; i < 1000 && fake_count(x->f, &x->f->watches) < n; i++)
		sleep_ms(10);
	assert_true(fake_count(x->f, &x->f->watches) >= n);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_initial_sync(void **state)
{
	fx *x = *state;
	start_informer(x, NULL);
	/* Paginated: 4 objects in pages of 2 is 2 requests for one list. */
	assert_int_equal(fake_count(x->f, &x->f->lists), 1);
	assert_int_equal(fake_count(x->f, &x->f->list_pages), 2);
	assert_true(rec_has(&x->rec, "add a/one initial"));
	assert_true(rec_has(&x->rec, "add b/four initial"));
	assert_int_equal(rec_count_prefix(&x->rec, "add "), 4);
	assert_int_equal(rec_count_prefix(&x->rec, "managedFields"), 0);

	json_t *o = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "two", &o), 0);
	assert_string_equal(fake_meta(o, "name"), "two");
	assert_null(json_object_get(json_object_get(o, "metadata"), "managedFields"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "data"), "k")),
	                    "v");
	json_decref(o);
	assert_int_equal(kft_informer_get(x->inf, "a", "nope", &o), KFT_ENOTFOUND);
	assert_null(o);
	assert_int_equal(kft_informer_get_by_key(x->inf, "b/four", &o), 0);
	json_decref(o);

	json_t *all = NULL;
	assert_int_equal(kft_informer_list(x->inf, NULL, &all), 0);
	assert_int_equal(json_array_size(all), 4);
	json_decref(all);
	assert_int_equal(kft_informer_list(x->inf, "a", &all), 0);
	assert_int_equal(json_array_size(all), 3);
	json_decref(all);

	assert_int_equal(by_index_count(x->inf, "app", "web"), 3);
	assert_int_equal(by_index_count(x->inf, "app", "db"), 1);
	assert_int_equal(by_index_count(x->inf, "app", "none"), 0);
	assert_int_equal(by_index_count(x->inf, "namespace", "b"), 1);
	json_t *arr = NULL;
	kft_error err;
	assert_int_equal(kft_informer_by_index(x->inf, "nosuch", "x", &arr, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "nosuch"));
	size_t counted = 7;
	assert_int_equal(kft_informer_index_count(x->inf, "nosuch", "x", &counted, &err),
	                 KFT_ENOTFOUND);
	assert_int_equal(counted, 0);

	kft_informer_stats st;
	kft_informer_stats_get(x->inf, &st);
	assert_int_equal(st.objects, 4);
	assert_int_equal(st.lists, 1);
	assert_string_equal(st.resource_version, "104");
	/* The watch starts from the list's resourceVersion. */
	wait_watches(x, 1);
	assert_string_equal(x->f->watch_rvs[0], "104");
}

static void test_watch_events_and_bookmark(void **state)
{
	fx *x = *state;
	start_informer(x, NULL);
	wait_watches(x, 1);
	fake_put(x->f, fake_configmap("a", "five", "db"));
	wait_line(&x->rec, "add a/five");
	json_t *changed = fake_configmap("a", "one", "db"); /* web -> db */
	fake_put(x->f, changed);
	wait_line(&x->rec, "update a/one 101->106");
	fake_delete(x->f, "a", "two");
	wait_line(&x->rec, "delete a/two");

	json_t *o = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "two", &o), KFT_ENOTFOUND);
	assert_int_equal(kft_informer_get(x->inf, "a", "one", &o), 0);
	assert_string_equal(rv_of(o), "106");
	json_decref(o);
	/* Indexes follow: one moved from web to db, two is gone. */
	assert_int_equal(by_index_count(x->inf, "app", "web"), 1);
	assert_int_equal(by_index_count(x->inf, "app", "db"), 3);

	fake_bookmark(x->f);
	kft_informer_stats st;
	for (int i = 0; i < 1000; i++) {
		kft_informer_stats_get(x->inf, &st);
		if (st.bookmarks)
			break;
		sleep_ms(10);
	}
	assert_int_equal(st.bookmarks, 1);
	assert_int_equal(st.events, 3);
	assert_string_equal(st.resource_version, "107");
	/* No handler runs for a bookmark. */
	assert_int_equal(rec_count_prefix(&x->rec, "update"), 1);
}

static void test_relist_after_gone(void **state)
{
	fx *x = *state;
	start_informer(x, NULL);
	wait_watches(x, 1);
	/* While the watch is stalled, one object goes, one changes, one comes;
	 * then history is compacted and the connection breaks. */
	fake_hold(x->f, 1);
	fake_delete(x->f, "a", "three");
	fake_put(x->f, fake_configmap("b", "four", "db"));
	fake_put(x->f, fake_configmap("b", "six", "web"));
	fake_compact(x->f);
	fake_cut(x->f);
	fake_hold(x->f, 0);
	wait_line(&x->rec, "delete a/three final-state-unknown");
	wait_line(&x->rec, "update b/four 104->106");
	wait_line(&x->rec, "add b/six");
	kft_informer_stats st;
	kft_informer_stats_get(x->inf, &st);
	assert_true(st.gone >= 1);
	assert_int_equal(st.lists, 2);
	assert_int_equal(st.objects, 4);
	assert_int_equal(fake_count(x->f, &x->f->lists), 2);
	/* Unchanged objects make no event on relist. */
	assert_int_equal(rec_count_prefix(&x->rec, "update a/one"), 0);
	assert_int_equal(by_index_count(x->inf, "app", "db"), 1);
	json_t *o = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "three", &o), KFT_ENOTFOUND);
	/* And the informer watches again from the new list. */
	fake_put(x->f, fake_configmap("a", "seven", "web"));
	wait_line(&x->rec, "add a/seven");
}

static void test_reconnect_resumes_from_last_rv(void **state)
{
	fx *x = *state;
	start_informer(x, "a");
	wait_watches(x, 1);
	fake_put(x->f, fake_configmap("a", "five", "web"));
	wait_line(&x->rec, "add a/five");
	fake_bookmark(x->f); /* rv 105 */
	for (int i = 0; i < 1000; i++) {
		kft_informer_stats st;
		kft_informer_stats_get(x->inf, &st);
		if (st.bookmarks)
			break;
		sleep_ms(10);
	}
	fake_cut(x->f);
	/* A change made while the connection is down is not lost: the
	 * re-watch from RV 105 replays it. */
	fake_put(x->f, fake_configmap("a", "six", "db"));
	wait_line(&x->rec, "add a/six");
	wait_watches(x, 2);
	assert_string_equal(x->f->watch_rvs[1], "105");
	assert_int_equal(fake_count(x->f, &x->f->lists), 1);
	kft_informer_stats st;
	kft_informer_stats_get(x->inf, &st);
	assert_int_equal(st.lists, 1);
	assert_true(st.errors >= 1);
	assert_true(strlen(st.last_error) > 0);
	/* Namespaced informer: objects of "b" never appear. */
	assert_int_equal(rec_count_prefix(&x->rec, "add b/"), 0);
}

static void set_field(fx *x, int *field, int v)
{
	pthread_mutex_lock(&x->f->mu);
	*field = v;
	pthread_mutex_unlock(&x->f->mu);
}

static void test_relist_after_repeated_watch_failures(void **state)
{
	/* Watches that keep failing (a server whose watch cache lags after a
	 * restart) end in a fresh list rather than retrying the same RV
	 * forever; a change made meanwhile arrives through that list. */
	fx *x = *state;
	start_informer(x, NULL);
	wait_watches(x, 1);
	set_field(x, &x->f->watch_fail_code, 500);
	fake_hold(x->f, 1);
	fake_put(x->f, fake_configmap("a", "five", "web"));
	fake_cut(x->f);
	/* The cut watch may itself count as the first failure (it ended within a
	 * second, empty), so the relist can come after 3 watches: wait for the
	 * watch after it too. */
	for (int i = 0; i < 1000 && (fake_count(x->f, &x->f->lists) < 2 ||
	                             fake_count(x->f, &x->f->watches) < 4);
	     i++)
		sleep_ms(10);
	/* At least 2: while watches keep failing, relists repeat. */
	assert_true(fake_count(x->f, &x->f->lists) >= 2);
	assert_true(fake_count(x->f, &x->f->watches) >= 4); /* 1 + 3 failed */
	wait_line(&x->rec, "add a/five");
	kft_informer_stats st;
	kft_informer_stats_get(x->inf, &st);
	assert_int_equal(st.gone, 0);
	assert_true(st.errors >= 3);
	assert_non_null(strstr(st.last_error, "watch"));
	set_field(x, &x->f->watch_fail_code, 0);
	fake_hold(x->f, 0);
	fake_put(x->f, fake_configmap("a", "six", "web"));
	wait_line(&x->rec, "add a/six");
}

static void test_not_synced_when_denied(void **state)
{
	fx *x = *state;
	set_field(x, &x->f->list_fail_code, 403);
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"), .max_backoff_s = 0.1};
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 0.1, &err), KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "not started"));
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 0.5, &err), KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "timed out"));
	assert_non_null(strstr(err.message, "forbidden"));
	assert_int_equal(kft_informer_has_synced(x->inf), 0);
	assert_true(fake_count(x->f, &x->f->lists) >= 2); /* retried */
	/* Permission granted: the next retry syncs. */
	set_field(x, &x->f->list_fail_code, 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 10, &err), 0);
	/* Stopping ends the thread promptly even mid-watch; the cache stays. */
	kft_informer_stop(x->inf);
	kft_informer_stop(x->inf);
	json_t *cm = NULL;
	assert_int_equal(kft_informer_get(x->inf, "b", "four", &cm), 0);
	json_decref(cm);
}

static void transform_drop_data(json_t *obj, void *ctx)
{
	json_object_del(obj, "data");
	(*(int *)ctx)++;
}

static void test_transform_and_selector(void **state)
{
	fx *x = *state;
	int calls = 0;
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .label_selector = "app=web",
	                       .transform = transform_drop_data,
	                       .transform_ctx = &calls};
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 10, &err), 0);
	/* The selector reaches the server (the fake does not filter). */
	assert_string_equal(x->f->last_label_selector, "app=web");
	assert_true(calls >= 4);
	json_t *cm = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "one", &cm), 0);
	assert_null(json_object_get(cm, "data"));
	json_decref(cm);
}

static const char *data_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(json_object_get(o, "data"), k));
}

/* A metadata-only informer asks the server for PartialObjectMetadata in its
 * lists and watches (kube-apiserver's metadata transformation, as
 * client-go's metadata informers do) and caches each object typed as its
 * kind, without a body. A whole object the caller supplies at the cached
 * resourceVersion is kept, also when the watch event of that version
 * arrives; the next version replaces it with metadata again. */
static void test_metadata_only(void **state)
{
	fx *x = *state;
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .page_size = 2,
	                       .max_backoff_s = 0.2,
	                       .metadata_only = 1};
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	kft_informer_handlers h = {on_add, on_update, on_delete, &x->rec};
	assert_int_equal(kft_informer_add_handlers(x->inf, &h, &err), 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 10, &err), 0);
	wait_watches(x, 1);
	assert_true(fake_count(x->f, &x->f->meta_lists) >= 2); /* two pages */
	assert_true(fake_count(x->f, &x->f->meta_watches) >= 1);
	json_t *cm = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "one", &cm), 0);
	assert_string_equal(json_string_value(json_object_get(cm, "kind")), "ConfigMap");
	assert_string_equal(json_string_value(json_object_get(cm, "apiVersion")), "v1");
	assert_null(json_object_get(cm, "data"));
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_object_get(cm, "metadata"), "labels"), "app")),
	        "web");
	json_decref(cm);

	/* Whole at the cached version: kept. Another version: refused. */
	json_t *whole = fake_configmap("a", "one", "web");
	json_object_set_new(json_object_get(whole, "metadata"), "resourceVersion",
	                    json_string("101"));
	assert_int_equal(kft_informer_supply(x->inf, whole), 0);
	json_object_set_new(json_object_get(whole, "metadata"), "resourceVersion",
	                    json_string("99"));
	assert_int_equal(kft_informer_supply(x->inf, whole), 1);
	json_decref(whole);
	assert_int_equal(kft_informer_get(x->inf, "a", "one", &cm), 0);
	assert_string_equal(data_of(cm, "k"), "v");
	json_decref(cm);

	/* A new object supplied before its watch event (a write's answer):
	 * the metadata event of the same version keeps the body. */
	json_t *fresh = fake_configmap("a", "five", "db");
	fake_hold(x->f, 1);
	fake_put(x->f, json_incref(fresh)); /* rv 105 */
	assert_int_equal(kft_informer_supply(x->inf, fresh), 0);
	json_decref(fresh);
	fake_hold(x->f, 0);
	fake_put(x->f, fake_configmap("b", "marker", "db"));
	wait_line(&x->rec, "add b/marker");
	assert_int_equal(kft_informer_get(x->inf, "a", "five", &cm), 0);
	assert_string_equal(data_of(cm, "k"), "v");
	json_decref(cm);

	/* The next version comes as metadata: the body is gone. */
	fake_put(x->f, fake_configmap("a", "five", "web"));
	wait_line(&x->rec, "update a/five 105->107");
	assert_int_equal(kft_informer_get(x->inf, "a", "five", &cm), 0);
	assert_null(json_object_get(cm, "data"));
	json_decref(cm);

	/* An object without a resourceVersion is no version of anything. */
	assert_int_equal(kft_informer_supply(x->inf, fresh = fake_configmap("a", "x", "web")),
	                 KFT_EINVAL);
	json_decref(fresh);
}

/* Compact storage (the default) decodes a private tree per read, equal to
 * what a kept tree gives; keep_trees hands every reader the same tree. The
 * watch then updates both the same way. */
static void test_storage_modes(void **state)
{
	fx *x = *state;
	for (int keep = 0; keep <= 1; keep++) {
		start_informer_kept(x, NULL, keep);
		json_t *a = NULL, *b = NULL;
		assert_int_equal(kft_informer_get(x->inf, "a", "one", &a), 0);
		assert_int_equal(kft_informer_get(x->inf, "a", "one", &b), 0);
		assert_true(json_equal(a, b));
		assert_true(keep ? a == b : a != b);
		assert_string_equal(rv_of(a), "101");
		assert_string_equal(
		        json_string_value(json_object_get(json_object_get(a, "data"), "k")), "v");
		json_decref(a);
		json_decref(b);
		kft_informer_free(x->inf);
		x->inf = NULL;
	}
}

/* A ConfigMap whose data is `big` (a value over the informer's sharing
 * threshold) plus a per-object key. */
static json_t *big_configmap(const char *ns, const char *name, const char *big)
{
	json_t *o = fake_configmap(ns, name, "web");
	json_t *data = json_object_get(o, "data");
	json_object_set_new(data, "runtime", json_string(big));
	return o;
}

/* Many ConfigMaps carrying the same large data (the runtime snapshots of
 * TrainJobs made from one runtime) are stored with that data once; every
 * read still gives each object whole and as the server sent it, and a
 * change to one leaves the others alone. */
static void test_shared_members(void **state)
{
	fx *x = *state;
	char big[2048], other[2048];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(other, big, sizeof(other));
	other[0] = 'z';
	fake_put(x->f, big_configmap("a", "s1", big));
	fake_put(x->f, big_configmap("a", "s2", big));
	fake_put(x->f, big_configmap("b", "s3", other));
	start_informer(x, NULL);
	wait_watches(x, 1);
	fake_put(x->f, big_configmap("b", "s4", big)); /* arrives by the watch */
	wait_line(&x->rec, "add b/s4");

	const char *keys[] = {"a/s1", "a/s2", "b/s3", "b/s4"};
	for (size_t i = 0; i < 4; i++) {
		json_t *o = NULL;
		assert_int_equal(kft_informer_get_by_key(x->inf, keys[i], &o), 0);
		assert_string_equal(data_of(o, "runtime"), i == 2 ? other : big);
		assert_string_equal(data_of(o, "k"), "v");
		assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "v1");
		assert_string_equal(json_string_value(json_object_get(o, "kind")), "ConfigMap");
		assert_string_equal(fake_meta(o, "name"), keys[i] + 2);
		json_decref(o);
	}

	/* s1 changes and s2 goes: s4 still reads the shared data. */
	fake_put(x->f, big_configmap("a", "s1", other));
	fake_delete(x->f, "a", "s2");
	wait_line(&x->rec, "delete a/s2");
	json_t *o = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "s1", &o), 0);
	assert_string_equal(data_of(o, "runtime"), other);
	json_decref(o);
	assert_int_equal(kft_informer_get(x->inf, "b", "s4", &o), 0);
	assert_string_equal(data_of(o, "runtime"), big);
	json_decref(o);
	/* The handlers got the old version of s1 with its own data. */
	assert_true(rec_has(&x->rec, "update a/s1 105->109"));
}

static void count_calls(json_t *obj, void *ctx)
{
	(void)obj;
	(*(int *)ctx)++;
}

/* A relist copies in only the objects whose resourceVersion the cache does
 * not have (the transform runs on each copy): a relist of a large, mostly
 * unchanged cache does not hold a second copy of it. */
static void test_relist_copies_only_changes(void **state)
{
	fx *x = *state;
	int calls = 0;
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .page_size = 2,
	                       .transform = count_calls,
	                       .transform_ctx = &calls};
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	kft_informer_handlers h = {on_add, on_update, on_delete, &x->rec};
	assert_int_equal(kft_informer_add_handlers(x->inf, &h, &err), 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 10, &err), 0);
	wait_watches(x, 1);
	assert_int_equal(calls, 4);
	fake_hold(x->f, 1);
	fake_put(x->f, fake_configmap("b", "four", "db"));
	fake_compact(x->f);
	fake_cut(x->f);
	fake_hold(x->f, 0);
	wait_line(&x->rec, "update b/four 104->105");
	assert_int_equal(fake_count(x->f, &x->f->lists), 2);
	assert_int_equal(calls, 5);
	json_t *cm = NULL;
	assert_int_equal(kft_informer_get(x->inf, "a", "one", &cm), 0);
	assert_string_equal(rv_of(cm), "101");
	json_decref(cm);
}

/* ---- keys ---------------------------------------------------------------- */

static void test_keys(void **state)
{
	char buf[KFT_CACHE_KEY_MAX];
	json_t *o = json_pack("{s:{s:s,s:s}}", "metadata", "name", "n", "namespace", "ns");
	assert_int_equal(kft_cache_key(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ns/n");
	assert_int_equal(kft_cache_key(o, buf, 4), KFT_ELIMIT);
	json_decref(o);
	o = json_pack("{s:{s:s}}", "metadata", "name", "cluster-thing");
	assert_int_equal(kft_cache_key(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "cluster-thing");
	json_decref(o);
	o = json_pack("{s:{}}", "metadata");
	assert_int_equal(kft_cache_key(o, buf, sizeof(buf)), KFT_EINVAL);
	json_decref(o);

	/* The controller owner of a JobSet: a TrainJob, by group and kind. */
	o = json_pack("{s:{s:s,s:s,s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:b}]}}", "metadata",
	              "name", "js", "namespace", "team", "ownerReferences", "apiVersion", "v1",
	              "kind", "ConfigMap", "name", "other", "uid", "u1", "apiVersion",
	              "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "name", "job", "uid",
	              "u2", "controller", 1);
	assert_int_equal(kft_cache_controller_owner_key(o, "trainer.kubeflow.org", "TrainJob", buf,
	                                                sizeof(buf)),
	                 0);
	assert_string_equal(buf, "team/job");
	assert_int_equal(kft_cache_controller_owner_key(o, "", "ConfigMap", buf, sizeof(buf)),
	                 KFT_ENOTFOUND); /* not the controller */
	assert_int_equal(
	        kft_cache_controller_owner_key(o, "jobset.x-k8s.io", "TrainJob", buf, sizeof(buf)),
	        KFT_ENOTFOUND);
	json_decref(o);
}

/* Index functions see kft_index_keys only through kft_index_keys_add; the
 * owner-uid index is checked through an informer in test_owner_index. */
static void test_owner_index(void **state)
{
	fx *x = *state;
	json_t *cm = fake_configmap("a", "owned", "web");
	json_object_set_new(json_object_get(cm, "metadata"), "ownerReferences",
	                    json_pack("[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]", "apiVersion", "v1",
	                              "kind", "Secret", "name", "s", "uid", "uid-1", "apiVersion",
	                              "v1", "kind", "Secret", "name", "t", "uid", "uid-2"));
	fake_put(x->f, cm);
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap")};
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	assert_int_equal(kft_informer_add_index(x->inf, "owner", kft_index_owner_uid, NULL, &err),
	                 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	assert_int_equal(kft_informer_wait_synced(x->inf, 10, &err), 0);
	assert_int_equal(by_index_count(x->inf, "owner", "uid-1"), 1);
	assert_int_equal(by_index_count(x->inf, "owner", "uid-2"), 1);
	assert_int_equal(by_index_count(x->inf, "owner", "uid-3"), 0);
	wait_watches(x, 1);
	fake_delete(x->f, "a", "owned");
	/* While the delete is on its way the two lookups in by_index_count may
	 * straddle it; poll with one lookup, then check both agree. */
	size_t left = 1;
	for (int i = 0; i < 1000 && left; i++) {
		assert_int_equal(kft_informer_index_count(x->inf, "owner", "uid-1", &left, &err),
		                 0);
		if (left)
			sleep_ms(10);
	}
	assert_int_equal(by_index_count(x->inf, "owner", "uid-1"), 0);
}

/* A ConfigMap whose data value k holds n bytes of v (NULs included). */
static json_t *configmap_bytes(const char *ns, const char *name, const char *v, size_t n)
{
	json_t *o = fake_configmap(ns, name, "web");
	json_object_set_new(json_object_get(o, "data"), "k", json_stringn(v, n));
	return o;
}

static void assert_value(kft_informer *inf, const char *ns, const char *name, const char *v,
                         size_t n)
{
	json_t *o = NULL;
	assert_int_equal(kft_informer_get(inf, ns, name, &o), 0);
	const json_t *k = json_object_get(json_object_get(o, "data"), "k");
	assert_int_equal(json_string_length(k), n);
	assert_memory_equal(json_string_value(k), v, n);
	json_decref(o);
}

/* "\u0000" in a string is valid JSON; the API server stores it (any user
 * who may create a ConfigMap can) and Go's client decodes it. It reached
 * every list and watch of the kind and failed them all, so the cache never
 * synced. Now the object is cached as the server holds it, NULs included,
 * whether it comes in a list page or a watch event, and a relist keeps it. */
static void test_nul_in_strings(void **state)
{
	fx *x = *state;
	static const char v1[] = "a\0b", v2[] = "\0\0x";
	fake_put(x->f, configmap_bytes("a", "nul", v1, 3));
	start_informer(x, NULL);
	assert_value(x->inf, "a", "nul", v1, 3);
	assert_value(x->inf, "a", "one", "v", 1);
	wait_watches(x, 1);
	fake_put(x->f, configmap_bytes("b", "nul2", v2, 3));
	wait_line(&x->rec, "add b/nul2");
	assert_value(x->inf, "b", "nul2", v2, 3);
	/* a relist reads both again */
	fake_hold(x->f, 1);
	fake_put(x->f, configmap_bytes("a", "nul", v2, 3));
	fake_compact(x->f);
	fake_cut(x->f);
	fake_hold(x->f, 0);
	wait_line(&x->rec, "update a/nul 105->107");
	assert_value(x->inf, "a", "nul", v2, 3);
	assert_int_equal(fake_count(x->f, &x->f->lists), 2);
}

/* A list page is not bounded as a whole: 70 ConfigMaps of 1 MiB in one page
 * (more than the 64 MiB that a whole response may hold) sync, read as they
 * arrive. Go's client reads such a page too. */
static void test_list_page_over_64_mib(void **state)
{
	fx *x = *state;
	size_t n = (size_t)1024 * 1024;
	char *big = malloc(n + 1);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	big[n] = '\0';
	for (int i = 0; i < 70; i++) {
		char name[16];
		snprintf(name, sizeof(name), "big%02d", i);
		fake_put(x->f, configmap_bytes("c", name, big, n));
	}
	kft_error err;
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .namespace = "c",
	                       .max_backoff_s = 0.2}; /* page size: 500, so one page */
	assert_int_equal(kft_informer_new(x->kube, &o, &x->inf, &err), 0);
	assert_int_equal(kft_informer_start(x->inf, &err), 0);
	if (kft_informer_wait_synced(x->inf, 60, &err) != 0)
		fail_msg("not synced: %s", err.message);
	assert_int_equal(fake_count(x->f, &x->f->list_pages), 1);
	kft_informer_stats st;
	kft_informer_stats_get(x->inf, &st);
	assert_int_equal(st.objects, 70);
	assert_value(x->inf, "c", "big69", big, n);
	free(big);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_initial_sync),
	        T(test_watch_events_and_bookmark),
	        T(test_relist_after_gone),
	        T(test_reconnect_resumes_from_last_rv),
	        T(test_relist_after_repeated_watch_failures),
	        T(test_not_synced_when_denied),
	        T(test_transform_and_selector),
	        T(test_owner_index),
	        T(test_metadata_only),
	        T(test_storage_modes),
	        T(test_shared_members),
	        T(test_relist_copies_only_changes),
	        T(test_nul_in_strings),
	        T(test_list_page_over_64_mib),
	        cmocka_unit_test(test_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
