/*
 * watch.c - one streaming watch request, parsed as it arrives.
 *
 * The API server answers a watch with a never-ending body: one JSON object
 * per line, {"type": ..., "object": ...}. curl hands us the body in chunks
 * that do not respect line boundaries, so bytes are gathered into a line
 * buffer and each complete line becomes one event. The buffer is bounded: a
 * line longer than KFT_KUBE_MAX_WATCH_EVENT_BYTES is dropped up to its
 * newline, and so is an event whose object has a NUL character in a key
 * (jansson cannot hold one), each with a warning: one object the client
 * cannot hold must not end every watch of its kind, which would keep the
 * cache from ever catching up. NULs in string values are data, and kept.
 *
 * Stopping: returning 0 from the body callback makes curl abandon the
 * transfer, which is how a callback's "stop" and an ERROR event end the
 * watch; the progress callback, which curl calls about once a second even on
 * a silent connection, checks the caller's stop flag. A connection that goes
 * silent for longer than the idle bound is treated as dead (low-speed limit),
 * besides TCP keep-alive.
 *
 * No reconnecting here: whether to relist or resume is the informer's choice.
 */
#include "kube/kube_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

#define MAX_ERROR_BODY   ((size_t)1024 * 1024)
#define DEFAULT_IDLE_SEC 360

typedef struct wstate {
	const kft_gvr *gvr;
	kft_watch_fn fn;
	void *ctx;
	const atomic_int *stop;
	kft_kube *kube; /* its cancel ends the watch like stop */
	CURL *h;
	long code; /* HTTP status, read at the first body byte */
	kft_strbuf line;
	kft_strbuf errbody; /* the body of a non-200 answer, up to MAX_ERROR_BODY */
	int dropping;       /* inside a line too long to keep, until its newline */
	int done;           /* set when the watch must end; result holds why */
	int result;
	kft_error *err;
} wstate;

static int finish_with(wstate *w, int rc)
{
	w->done = 1;
	w->result = rc;
	return rc;
}

static int error_event(wstate *w, json_t *status)
{
	long code = (long)json_integer_value(json_object_get(status, "code"));
	char *text = json_dumps(status, JSON_COMPACT);
	int rc = kft_kube_map_status(code ? code : 500, text, text ? strlen(text) : 0,
	                             "watch ERROR event", w->err);
	free(text);
	return finish_with(w, rc);
}

static int known_type(const char *t)
{
	return strcmp(t, "ADDED") == 0 || strcmp(t, "MODIFIED") == 0 || strcmp(t, "DELETED") == 0 ||
	       strcmp(t, "BOOKMARK") == 0;
}

/* One complete line of the stream. */
static int handle_line(wstate *w, const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && (s[i] == ' ' || s[i] == '\r' || s[i] == '\t'))
		i++;
	if (i == len)
		return 0;
	json_error_t jerr;
	json_t *ev = json_loadb(s, len, JSON_ALLOW_NUL, &jerr);
	if (!ev && kft_kube_unholdable(&jerr)) {
		kft_kube_warn(w->kube, "watch %s: event skipped: %s", w->gvr->resource, jerr.text);
		return 0;
	}
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	int rc;
	if (!ev || !type || !json_is_object(obj))
		rc = finish_with(
		        w, kft_error_set(w->err, KFT_EPARSE, "watch %s: not a watch event: %s",
		                         w->gvr->resource, ev ? "no type or object" : jerr.text));
	else if (strcmp(type, "ERROR") == 0)
		rc = error_event(w, obj);
	else if (!known_type(type))
		rc = finish_with(w, kft_error_set(w->err, KFT_EPARSE,
		                                  "watch %s: unknown event type \"%s\"",
		                                  w->gvr->resource, type));
	else {
		kft_kube_set_type(obj, w->gvr);
		rc = w->fn(w->ctx, type, obj);
		if (rc)
			finish_with(w, rc);
	}
	json_decref(ev);
	return rc;
}

/* Starts dropping the line being read: it is too long to keep. */
static void too_long(wstate *w)
{
	kft_kube_warn(w->kube, "watch %s: event skipped: larger than %zu bytes", w->gvr->resource,
	              KFT_KUBE_MAX_WATCH_EVENT_BYTES);
	w->dropping = 1;
	kft_strbuf_free(&w->line);
	kft_strbuf_init(&w->line);
}

/* Splits data into lines, completing the one held from the last chunk. */
static int feed(wstate *w, const char *data, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t part = nl ? (size_t)(nl - data) : len;
		if (w->dropping && !nl)
			break;
		if (w->dropping) {
			w->dropping = 0;
			data += part + 1;
			len -= part + 1;
			continue;
		}
		if (w->line.len + part > KFT_KUBE_MAX_WATCH_EVENT_BYTES) {
			too_long(w);
			continue;
		}
		if (!nl) {
			kft_strbuf_putn(&w->line, data, part);
			break;
		}
		int rc;
		if (w->line.len == 0) {
			rc = handle_line(w, data, part); /* the common case: no copy */
		} else {
			kft_strbuf_putn(&w->line, data, part);
			rc = w->line.failed ? finish_with(w, kft_error_set(w->err, KFT_ENOMEM,
			                                                   "out of memory"))
			                    : handle_line(w, w->line.buf, w->line.len);
			kft_strbuf_reset(&w->line);
		}
		if (rc || w->done)
			return rc ? rc : -1;
		data += part + 1;
		len -= part + 1;
	}
	if (w->line.failed)
		return finish_with(w, kft_error_set(w->err, KFT_ENOMEM, "out of memory"));
	return 0;
}

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	wstate *w = ctx;
	size_t len = size * n;
	if (w->code == 0)
		curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->code);
	if (w->code != 200) {
		size_t room = MAX_ERROR_BODY - w->errbody.len;
		kft_strbuf_putn(&w->errbody, data, len > room ? room : len);
		return w->errbody.failed ? 0 : len;
	}
	return feed(w, data, len) ? 0 : len;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	wstate *w = ctx;
	return kft_kube_canceled(w->kube, w->stop);
}

static char *watch_path(const kft_gvr *gvr, const char *ns, const kft_watch_opts *o, kft_error *err)
{
	char *base = kft_kube_path(gvr, ns && *ns ? ns : NULL, NULL, NULL, err);
	if (!base)
		return NULL;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s?watch=1", base);
	free(base);
	if (o && o->resource_version && *o->resource_version)
		kft_kube_query(&b, "resourceVersion", o->resource_version);
	if (o && o->label_selector && *o->label_selector)
		kft_kube_query(&b, "labelSelector", o->label_selector);
	if (o && o->field_selector && *o->field_selector)
		kft_kube_query(&b, "fieldSelector", o->field_selector);
	if (o && o->allow_bookmarks)
		kft_kube_query(&b, "allowWatchBookmarks", "true");
	if (o && o->timeout_seconds > 0)
		kft_strbuf_printf(&b, "&timeoutSeconds=%ld", o->timeout_seconds);
	char *s = kft_strbuf_detach(&b);
	if (!s)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return s;
}

static long idle_seconds(const kft_watch_opts *o)
{
	if (o && o->idle_timeout_sec > 0)
		return o->idle_timeout_sec;
	if (o && o->timeout_seconds > 0)
		return o->timeout_seconds + 60;
	return DEFAULT_IDLE_SEC;
}

static void set_stream(wstate *w, const kft_watch_opts *opts, char *errbuf)
{
	CURL *h = w->h;
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, idle_seconds(opts));
	/* a watch idles for minutes with one event at a time: a small receive
	 * buffer per open stream (the line buffer grows for a large event) */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
}

/* A body that ended: cleanly only between events. */
static int stream_end(wstate *w)
{
	if (w->line.len == 0 && !w->dropping)
		return 0;
	return kft_error_set(w->err, KFT_EUNAVAILABLE,
	                     "watch %s: the stream ended in the middle of an event",
	                     w->gvr->resource);
}

/* What the transfer's end means. */
static int outcome(kft_kube *k, wstate *w, CURLcode cc, const char *url, const char *errbuf)
{
	if (w->done)
		return w->result;
	if (kft_kube_canceled(k, w->stop))
		return 0;
	if (cc == CURLE_OK && w->code == 0)
		curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->code);
	if (cc == CURLE_OK && w->code != 200) {
		if (w->code == 401)
			kft_kube_token_expire(k);
		char what[512];
		snprintf(what, sizeof(what), "watch GET %s", url);
		return kft_kube_map_status(w->code, kft_strbuf_str(&w->errbody), w->errbody.len,
		                           what, w->err);
	}
	if (cc == CURLE_OK)
		return stream_end(w);
	return kft_error_set(w->err, KFT_EUNAVAILABLE, "watch %s: %s", w->gvr->resource,
	                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
}

static int run_watch(kft_kube *k, wstate *w, const char *url, const kft_watch_opts *opts)
{
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	w->h = kft_kube_handle_get(k);
	if (!w->h)
		return kft_error_set(w->err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_handle_setup(k, w->h, url, NULL,
	                               opts && opts->metadata_only ? KFT_KUBE_ACCEPT_META : NULL,
	                               &headers, w->err);
	if (rc == 0) {
		set_stream(w, opts, errbuf);
		CURLcode cc = curl_easy_perform(w->h);
		long answered = 0;
		curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &answered);
		kft_kube_observe(k, "GET", answered);
		rc = outcome(k, w, cc, url, errbuf);
	}
	kft_kube_handle_put(k, w->h);
	curl_slist_free_all(headers);
	return rc;
}

int kft_kube_watch(kft_kube *k, const kft_gvr *gvr, const char *ns, const kft_watch_opts *opts,
                   kft_watch_fn on_event, void *ctx, const atomic_int *stop, kft_error *err)
{
	if (!gvr || !on_event)
		return kft_error_set(err, KFT_EINVAL, "watch: a kind and a callback are required");
	char *path = watch_path(gvr, ns, opts, err);
	if (!path)
		return err ? err->code : KFT_ENOMEM;
	kft_strbuf url;
	kft_strbuf_init(&url);
	kft_strbuf_printf(&url, "%s%s", k->server, path);
	if (url.failed) {
		free(path);
		kft_strbuf_free(&url);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	wstate w = {.gvr = gvr, .fn = on_event, .ctx = ctx, .stop = stop, .kube = k, .err = err};
	kft_strbuf_init(&w.line);
	kft_strbuf_init(&w.errbody);
	int rc = kft_kube_rate_wait(k, path, stop) ? 0 : run_watch(k, &w, url.buf, opts);
	free(path);
	kft_strbuf_free(&w.line);
	kft_strbuf_free(&w.errbody);
	kft_strbuf_free(&url);
	return rc;
}

int kft_kube_watch_parse(const kft_gvr *gvr, const char *const *chunks, const size_t *lens,
                         size_t n, kft_watch_fn on_event, void *ctx, kft_error *err)
{
	wstate w = {.gvr = gvr, .fn = on_event, .ctx = ctx, .err = err};
	kft_strbuf_init(&w.line);
	for (size_t i = 0; i < n && !w.done; i++)
		feed(&w, chunks[i], lens[i]);
	int rc = w.done ? w.result : stream_end(&w);
	kft_strbuf_free(&w.line);
	return rc;
}
