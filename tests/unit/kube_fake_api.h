/*
 * kube_fake_api.h - a small in-process API server for the informer and
 * leader-election unit tests (plain HTTP over libmicrohttpd).
 *
 * It keeps ConfigMaps and Leases the way kube-apiserver does where the
 * tests look: a global resourceVersion counter bumped by every write, an
 * event log that watches replay from any resourceVersion still retained,
 * a compaction point below which a watch gets an ERROR event with code 410,
 * paginated lists (limit/continue), BOOKMARK events for watchers that asked
 * for them, and 409 Conflict on a PUT with a stale resourceVersion.
 *
 * The test drives faults directly: fake_hold() stops delivering events to
 * open watches (changes made meanwhile are "missed"), fake_cut() breaks
 * every open watch connection mid-stream, fake_compact() expires old
 * resourceVersions. Every request is counted so tests can check what the
 * client asked for (e.g. that a re-watch resumed from the last RV).
 *
 * Each connection has its own thread (MHD_USE_THREAD_PER_CONNECTION), so a
 * watch stream may block waiting for events.
 */
#ifndef KFT_TEST_KUBE_FAKE_API_H
#define KFT_TEST_KUBE_FAKE_API_H

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"

#define FAKE_FN            static __attribute__((unused))
#define FAKE_MAX_WATCH_RVS 64

typedef struct fake_event {
	long rv;
	int bookmark; /* only for watchers with allowWatchBookmarks */
	char *line;   /* the JSON line, with its '\n' */
} fake_event;

typedef struct fake_api {
	struct MHD_Daemon *d;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	long rv;
	json_t *objects; /* "ns/name" -> ConfigMap */
	json_t *leases;  /* "ns/name" -> Lease */
	fake_event *log;
	size_t nlog, caplog;
	long compacted; /* watches from an RV below this get 410 */
	int hold, cut_gen, stopping;
	int list_fail_code;  /* answer lists with this HTTP status (0: normal) */
	int watch_fail_code; /* answer watches with this HTTP status (0: normal) */
	int lease_fail_code;
	int lease_delay_ms; /* answer lease requests this late (a hung server) */
	/* request records */
	int lists, list_pages, watches, lease_puts, lease_posts, lease_gets, conflicts;
	char watch_rvs[FAKE_MAX_WATCH_RVS][32];
	char last_label_selector[128];
	int meta_lists, meta_watches; /* asked for PartialObjectMetadata */
} fake_api;

/* One open watch stream. */
typedef struct fake_watch {
	fake_api *f;
	size_t pos; /* next log entry to consider */
	long from_rv;
	int gen, bookmarks, finish;
	int meta; /* send PartialObjectMetadata objects */
	char *pending;
	size_t off, len;
} fake_watch;

/* Upload accumulation for PUT/POST bodies. */
typedef struct fake_upload {
	char *data;
	size_t len;
	int too_big;
} fake_upload;

FAKE_FN char *fake_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

FAKE_FN char *fake_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* Appends an event line to the log and wakes the watchers. Lock held. */
FAKE_FN void fake_log_locked(fake_api *f, const char *type, const json_t *obj, int bookmark)
{
	json_t *ev = json_pack("{s:s,s:O}", "type", type, "object", obj);
	char *body = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (f->nlog == f->caplog) {
		f->caplog = f->caplog ? f->caplog * 2 : 64;
		f->log = realloc(f->log, f->caplog * sizeof(*f->log));
	}
	f->log[f->nlog++] = (fake_event){f->rv, bookmark, fake_strdup_printf("%s\n", body)};
	free(body);
	pthread_cond_broadcast(&f->cond);
}

FAKE_FN const char *fake_meta(const json_t *obj, const char *k)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), k));
}

FAKE_FN void fake_set_rv(json_t *obj, long rv)
{
	char b[32];
	snprintf(b, sizeof(b), "%ld", rv);
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(b));
}

/* Creates or replaces a ConfigMap (the reference to obj is taken). */
FAKE_FN void fake_put(fake_api *f, json_t *obj)
{
	char key[600];
	snprintf(key, sizeof(key), "%s/%s", fake_meta(obj, "namespace"), fake_meta(obj, "name"));
	pthread_mutex_lock(&f->mu);
	int exists = json_object_get(f->objects, key) != NULL;
	f->rv++;
	fake_set_rv(obj, f->rv);
	json_object_set(f->objects, key, obj);
	fake_log_locked(f, exists ? "MODIFIED" : "ADDED", obj, 0);
	pthread_mutex_unlock(&f->mu);
	json_decref(obj);
}

FAKE_FN json_t *fake_configmap(const char *ns, const char *name, const char *app)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[{s:s,s:s}]},s:{s:s}}", "apiVersion",
	                      "v1", "kind", "ConfigMap", "metadata", "name", name, "namespace", ns,
	                      "labels", "app", app, "managedFields", "manager", "kubectl",
	                      "operation", "Apply", "data", "k", "v");
	return o;
}

FAKE_FN void fake_delete(fake_api *f, const char *ns, const char *name)
{
	char key[600];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	pthread_mutex_lock(&f->mu);
	json_t *obj = json_incref(json_object_get(f->objects, key));
	if (obj) {
		json_object_del(f->objects, key);
		f->rv++;
		json_t *copy = json_deep_copy(obj);
		fake_set_rv(copy, f->rv);
		fake_log_locked(f, "DELETED", copy, 0);
		json_decref(copy);
		json_decref(obj);
	}
	pthread_mutex_unlock(&f->mu);
}

/* A BOOKMARK at the current resourceVersion. */
FAKE_FN void fake_bookmark(fake_api *f)
{
	pthread_mutex_lock(&f->mu);
	char b[32];
	snprintf(b, sizeof(b), "%ld", f->rv);
	json_t *bm = json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
	                       "metadata", "resourceVersion", b, "annotations",
	                       "k8s.io/initial-events-end", "true");
	fake_log_locked(f, "BOOKMARK", bm, 1);
	json_decref(bm);
	pthread_mutex_unlock(&f->mu);
}

FAKE_FN void fake_hold(fake_api *f, int on)
{
	pthread_mutex_lock(&f->mu);
	f->hold = on;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

FAKE_FN void fake_cut(fake_api *f)
{
	pthread_mutex_lock(&f->mu);
	f->cut_gen++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

/* Every resourceVersion older than the current one expires. */
FAKE_FN void fake_compact(fake_api *f)
{
	pthread_mutex_lock(&f->mu);
	f->compacted = f->rv;
	pthread_mutex_unlock(&f->mu);
}

FAKE_FN int fake_count(fake_api *f, const int *field)
{
	pthread_mutex_lock(&f->mu);
	int v = *field;
	pthread_mutex_unlock(&f->mu);
	return v;
}

/* ---- HTTP plumbing ----------------------------------------------------- */

/* Whether the request's Accept header asks for this metadata-only form
 * first ("PartialObjectMetadata" or "PartialObjectMetadataList"). */
FAKE_FN int fake_accepts(struct MHD_Connection *c, const char *as)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	char want[96];
	snprintf(want, sizeof(want), "application/json;as=%s;g=meta.k8s.io;v=v1", as);
	return a && strncmp(a, want, strlen(want)) == 0 &&
	       (a[strlen(want)] == ',' || a[strlen(want)] == '\0');
}

/* obj as kube-apiserver sends it to a metadata-only client (new reference). */
FAKE_FN json_t *fake_partial(const json_t *obj)
{
	return json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata", "apiVersion",
	                 "meta.k8s.io/v1", "metadata", json_object_get(obj, "metadata"));
}

/* An event line with its object cut to metadata (malloc'd, with '\n'). */
FAKE_FN char *fake_partial_line(const char *line)
{
	json_t *ev = json_loads(line, 0, NULL);
	json_t *obj = json_object_get(ev, "object");
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (obj && kind && strcmp(kind, "Status") != 0)
		json_object_set_new(ev, "object", fake_partial(obj));
	char *body = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	char *out = fake_strdup_printf("%s\n", body);
	free(body);
	return out;
}

FAKE_FN enum MHD_Result fake_reply(struct MHD_Connection *c, int code, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

FAKE_FN json_t *fake_status(int code, const char *reason, const char *message)
{
	return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
	                 "metadata", "status", "Failure", "message", message, "reason", reason,
	                 "code", code);
}

FAKE_FN ssize_t fake_watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	fake_watch *w = cls;
	fake_api *f = w->f;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		if (w->pending && w->off < w->len) {
			size_t n = w->len - w->off < max ? w->len - w->off : max;
			memcpy(buf, w->pending + w->off, n);
			w->off += n;
			pthread_mutex_unlock(&f->mu);
			return (ssize_t)n;
		}
		free(w->pending);
		w->pending = NULL;
		if (f->stopping || w->gen != f->cut_gen) {
			pthread_mutex_unlock(&f->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		if (w->finish) {
			pthread_mutex_unlock(&f->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (w->from_rv < f->compacted) {
			char msg[128];
			snprintf(msg, sizeof(msg), "too old resource version: %ld (%ld)",
			         w->from_rv, f->compacted);
			json_t *ev = json_pack("{s:s,s:o}", "type", "ERROR", "object",
			                       fake_status(410, "Expired", msg));
			char *line = json_dumps(ev, JSON_COMPACT);
			json_decref(ev);
			w->pending = fake_strdup_printf("%s\n", line);
			free(line);
			w->off = 0;
			w->len = strlen(w->pending);
			w->finish = 1;
			continue;
		}
		if (!f->hold && w->pos < f->nlog) {
			fake_event *e = &f->log[w->pos++];
			if (e->rv < w->from_rv || (e->rv == w->from_rv && !e->bookmark) ||
			    (e->bookmark && !w->bookmarks))
				continue;
			w->pending = w->meta ? fake_partial_line(e->line) : strdup(e->line);
			w->off = 0;
			w->len = strlen(w->pending);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->cond, &f->mu, &ts);
	}
}

FAKE_FN void fake_watch_free(void *cls)
{
	fake_watch *w = cls;
	free(w->pending);
	free(w);
}

FAKE_FN enum MHD_Result fake_start_watch(fake_api *f, struct MHD_Connection *c, const char *rv,
                                         const char *bookmarks)
{
	fake_watch *w = calloc(1, sizeof(*w));
	w->f = f;
	w->meta = fake_accepts(c, "PartialObjectMetadata");
	pthread_mutex_lock(&f->mu);
	f->meta_watches += w->meta;
	if (f->watches < FAKE_MAX_WATCH_RVS)
		snprintf(f->watch_rvs[f->watches], sizeof(f->watch_rvs[0]), "%s", rv ? rv : "");
	f->watches++;
	w->from_rv = rv && rv[0] ? atol(rv) : f->rv;
	w->gen = f->cut_gen;
	w->bookmarks = bookmarks && strcmp(bookmarks, "true") == 0;
	pthread_mutex_unlock(&f->mu);
	struct MHD_Response *r = MHD_create_response_from_callback(
	        MHD_SIZE_UNKNOWN, 4096, fake_watch_read, w, fake_watch_free);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* A page of the list (items sorted by key). Lock held. */
FAKE_FN json_t *fake_list_locked(fake_api *f, const char *ns, long limit, long start)
{
	json_t *keys = json_array(), *items = json_array();
	const char *k;
	json_t *v;
	json_object_foreach(f->objects, k, v)
	{
		if (!ns || strcmp(fake_meta(v, "namespace"), ns) == 0)
			json_array_append_new(keys, json_string(k));
	}
	size_t n = json_array_size(keys);
	/* insertion sort: the tests keep a handful of objects */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(keys, j - 1)),
		                                   json_string_value(json_array_get(keys, j))) > 0;
		     j--) {
			json_t *a = json_incref(json_array_get(keys, j - 1));
			json_array_set(keys, j - 1, json_array_get(keys, j));
			json_array_set_new(keys, j, a);
		}
	long end = limit > 0 && start + limit < (long)n ? start + limit : (long)n;
	for (long i = start; i < end; i++)
		json_array_append(
		        items, json_object_get(f->objects,
		                               json_string_value(json_array_get(keys, (size_t)i))));
	json_decref(keys);
	char rvb[32], cont[32] = "";
	snprintf(rvb, sizeof(rvb), "%ld", f->rv);
	if (end < (long)n)
		snprintf(cont, sizeof(cont), "%ld", end);
	json_t *list =
	        json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "v1", "kind", "ConfigMapList",
	                  "metadata", "resourceVersion", rvb, "items", items);
	if (cont[0])
		json_object_set_new(json_object_get(list, "metadata"), "continue",
		                    json_string(cont));
	return list;
}

FAKE_FN enum MHD_Result fake_configmaps(fake_api *f, struct MHD_Connection *c, const char *ns)
{
	const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
	const char *rv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
	const char *ls = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labelSelector");
	if (ls) {
		pthread_mutex_lock(&f->mu);
		snprintf(f->last_label_selector, sizeof(f->last_label_selector), "%s", ls);
		pthread_mutex_unlock(&f->mu);
	}
	int watch_fail = fake_count(f, &f->watch_fail_code);
	if (watch && watch_fail) {
		pthread_mutex_lock(&f->mu);
		f->watches++;
		pthread_mutex_unlock(&f->mu);
		return fake_reply(
		        c, watch_fail,
		        fake_status(watch_fail, "InternalError", "watch cache not ready"));
	}
	if (watch && (strcmp(watch, "1") == 0 || strcmp(watch, "true") == 0))
		return fake_start_watch(f, c, rv,
		                        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
		                                                    "allowWatchBookmarks"));
	const char *limit = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
	pthread_mutex_lock(&f->mu);
	f->list_pages++;
	if (!cont || !cont[0])
		f->lists++;
	int fail = f->list_fail_code;
	int meta = fake_accepts(c, "PartialObjectMetadataList");
	f->meta_lists += meta;
	json_t *list = fail ? NULL
	                    : fake_list_locked(f, ns, limit ? atol(limit) : 0,
	                                       cont && cont[0] ? atol(cont) : 0);
	pthread_mutex_unlock(&f->mu);
	if (list && meta) {
		json_t *items = json_array(), *it;
		size_t i;
		json_array_foreach(json_object_get(list, "items"), i, it)
		        json_array_append_new(items, fake_partial(it));
		json_object_set_new(list, "items", items);
		json_object_set_new(list, "kind", json_string("PartialObjectMetadataList"));
		json_object_set_new(list, "apiVersion", json_string("meta.k8s.io/v1"));
	}
	if (fail)
		return fake_reply(c, fail,
		                  fake_status(fail, "Forbidden", "configmaps is forbidden"));
	return fake_reply(c, 200, list);
}

/* ---- leases ------------------------------------------------------------- */

FAKE_FN enum MHD_Result fake_lease(fake_api *f, struct MHD_Connection *c, const char *method,
                                   const char *ns, const char *name, const fake_upload *up)
{
	char key[600];
	json_t *body = NULL;
	/* A hung server: hold the answer back, in steps so a stop ends it. */
	for (int waited = 0;
	     waited < fake_count(f, &f->lease_delay_ms) && !fake_count(f, &f->stopping);
	     waited += 20) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (up && up->len) {
		body = json_loadb(up->data, up->len, 0, NULL);
		if (!body)
			return fake_reply(c, 400, fake_status(400, "BadRequest", "bad JSON"));
		name = fake_meta(body, "name") ? fake_meta(body, "name") : name;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, name ? name : "");
	pthread_mutex_lock(&f->mu);
	int fail = f->lease_fail_code;
	json_t *cur = json_object_get(f->leases, key);
	int code = 200;
	json_t *reply = NULL;
	if (fail) {
		code = fail;
		reply = fake_status(fail, "InternalError", "injected failure");
	} else if (strcmp(method, "GET") == 0) {
		f->lease_gets++;
		if (cur) {
			reply = json_deep_copy(cur);
		} else {
			code = 404;
			reply = fake_status(404, "NotFound",
			                    "leases.coordination.k8s.io not found");
		}
	} else if (strcmp(method, "POST") == 0) {
		f->lease_posts++;
		if (cur) {
			code = 409;
			reply = fake_status(409, "AlreadyExists",
			                    "leases.coordination.k8s.io already exists");
		}
	} else if (strcmp(method, "PUT") == 0) {
		f->lease_puts++;
		const char *want = cur ? fake_meta(cur, "resourceVersion") : NULL;
		const char *got = body ? fake_meta(body, "resourceVersion") : NULL;
		if (!cur) {
			code = 404;
			reply = fake_status(404, "NotFound",
			                    "leases.coordination.k8s.io not found");
		} else if (!got || strcmp(want, got) != 0) {
			f->conflicts++;
			code = 409;
			reply = fake_status(
			        409, "Conflict",
			        "Operation cannot be fulfilled on leases.coordination.k8s.io: "
			        "the object has been modified; please apply your changes to "
			        "the latest version and try again");
		}
	}
	if (!reply && body) {
		f->rv++;
		fake_set_rv(body, f->rv);
		json_object_set(f->leases, key, body);
		code = strcmp(method, "POST") == 0 ? 201 : 200;
		reply = json_deep_copy(body);
	}
	pthread_mutex_unlock(&f->mu);
	json_decref(body);
	if (!reply)
		reply = fake_status(405, "MethodNotAllowed", "method not allowed");
	return fake_reply(c, code, reply);
}

/* Routes /api/v1[/namespaces/NS]/configmaps and
 * /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]. */
FAKE_FN enum MHD_Result fake_route(fake_api *f, struct MHD_Connection *c, const char *url,
                                   const char *method, const fake_upload *up)
{
	char ns[256] = "", name[256] = "";
	if (strcmp(url, "/api/v1/configmaps") == 0 && strcmp(method, "GET") == 0)
		return fake_configmaps(f, c, NULL);
	if (sscanf(url, "/api/v1/namespaces/%255[^/]/configmaps", ns) == 1 &&
	    strcmp(method, "GET") == 0)
		return fake_configmaps(f, c, ns);
	int n = sscanf(url, "/apis/coordination.k8s.io/v1/namespaces/%255[^/]/leases/%255[^/]", ns,
	               name);
	if (n >= 1)
		return fake_lease(f, c, method, ns, n == 2 ? name : NULL, up);
	return fake_reply(c, 404,
	                  fake_status(404, "NotFound",
	                              "the server could not find the "
	                              "requested resource"));
}

FAKE_FN enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_size, void **con_cls)
{
	fake_api *f = cls;
	fake_upload *up = *con_cls;
	if (!up) {
		*con_cls = calloc(1, sizeof(fake_upload));
		return MHD_YES;
	}
	if (*upload_size) {
		if (up->len + *upload_size > (1 << 20)) {
			up->too_big = 1;
		} else {
			up->data = realloc(up->data, up->len + *upload_size + 1);
			memcpy(up->data + up->len, upload_data, *upload_size);
			up->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return fake_route(f, c, url, method, up);
}

FAKE_FN void fake_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
	fake_upload *up = *con_cls;
	if (up) {
		free(up->data);
		free(up);
	}
	*con_cls = NULL;
}

/* Starts a server on a free loopback port. */
FAKE_FN fake_api *fake_start(void)
{
	fake_api *f = calloc(1, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->objects = json_object();
	f->leases = json_object();
	f->rv = 100;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
	                        NULL, NULL, fake_handler, f, MHD_OPTION_NOTIFY_COMPLETED,
	                        fake_completed, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	                        MHD_OPTION_END);
	if (!f->d)
		return NULL;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	f->port = info ? info->port : 0;
	return f;
}

FAKE_FN void fake_stop(fake_api *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stopping = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	MHD_stop_daemon(f->d);
	for (size_t i = 0; i < f->nlog; i++)
		free(f->log[i].line);
	free(f->log);
	json_decref(f->objects);
	json_decref(f->leases);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cond);
	free(f);
}

/* Connection settings for f: plain HTTP, no rate limit, few retries.
 * The caller frees them with kft_kube_config_free. */
FAKE_FN kft_kube_config *fake_config(fake_api *f)
{
	kft_kube_config *cfg = NULL;
	kft_error err;
	if (kft_kube_config_new(&cfg, &err) != 0)
		return NULL;
	cfg->server = fake_strdup_printf("http://127.0.0.1:%d", f->port);
	cfg->qps = 0;
	cfg->max_retries = 1;
	return cfg;
}

/* A client for f (see fake_config). */
FAKE_FN kft_kube *fake_client(fake_api *f)
{
	kft_kube_config *cfg = fake_config(f);
	kft_kube *k = NULL;
	kft_error err;
	if (!cfg)
		return NULL;
	if (kft_kube_new(cfg, &k, &err) != 0)
		fprintf(stderr, "kft_kube_new: %s\n", err.message);
	kft_kube_config_free(cfg);
	return k;
}

#endif
