/*
 * verbs.c - get, list, create, update, patch, apply and delete as REST calls.
 *
 * Each verb builds a path from the kind's table entry, the namespace and the
 * name, serialises the object, and hands the request to kft_kube_do, which
 * owns retries and error mapping. Lists are paged (limit + continue) so that
 * no single answer grows with the cluster; kft_kube_list_each hands items out
 * page by page, and kft_kube_list collects them for callers that want a List.
 */
#include "kube/kube_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/strbuf.h"

#define DEFAULT_PAGE_SIZE 500

static const char *ns_or_default(kft_kube *k, const kft_gvr *gvr, const char *ns)
{
	if (!gvr->namespaced)
		return NULL;
	return ns && *ns ? ns : k->namespace_;
}

static int check_gvr(const kft_gvr *gvr, kft_error *err)
{
	if (!gvr)
		return kft_error_set(err, KFT_EINVAL, "no resource kind given");
	return 0;
}

/* Name and namespace of obj; the name is required unless generateName is
 * allowed and present. */
static int obj_key(kft_kube *k, const kft_gvr *gvr, const json_t *obj, int allow_generate,
                   const char **ns, const char **name, kft_error *err)
{
	json_t *md = json_object_get(obj, "metadata");
	if (!json_is_object(obj) || !json_is_object(md))
		return kft_error_set(err, KFT_EINVAL, "%s: the object has no metadata", gvr->kind);
	*name = json_string_value(json_object_get(md, "name"));
	if ((!*name || !**name) &&
	    !(allow_generate && json_string_value(json_object_get(md, "generateName"))))
		return kft_error_set(err, KFT_EINVAL, "%s: metadata.name: Required value",
		                     gvr->kind);
	if (*name && !**name)
		*name = NULL;
	*ns = ns_or_default(k, gvr, json_string_value(json_object_get(md, "namespace")));
	return 0;
}

static int send_json_stop(kft_kube *k, const char *method, const char *path, const char *ctype,
                          const json_t *body, const atomic_int *stop, json_t **out, kft_error *err)
{
	kft_strbuf text;
	kft_strbuf_init(&text);
	int rc = body ? kft_json_dump(body, &text) : 0;
	if (rc) {
		kft_strbuf_free(&text);
		return kft_error_set(err, rc, "serialising the request body failed%s",
		                     rc == KFT_EINVAL ? ": a string is not UTF-8" : "");
	}
	/* the writer escapes a NUL in a string as "\u0000": the text has none */
	kft_kube_req req = {.method = method,
	                    .path = path,
	                    .content_type = body ? ctype : NULL,
	                    .body = body ? kft_strbuf_str(&text) : NULL,
	                    .body_len = text.len,
	                    .stop = stop};
	rc = kft_kube_do(k, &req, out, err);
	kft_strbuf_free(&text);
	return rc;
}

static int send_json(kft_kube *k, const char *method, const char *path, const char *ctype,
                     const json_t *body, json_t **out, kft_error *err)
{
	return send_json_stop(k, method, path, ctype, body, NULL, out, err);
}

int kft_kube_get(kft_kube *k, const kft_gvr *gvr, const char *ns, const char *name, json_t **out,
                 kft_error *err)
{
	if (out)
		*out = NULL;
	int rc = check_gvr(gvr, err);
	if (rc)
		return rc;
	if (!name)
		return kft_error_set(err, KFT_EINVAL, "get %s: no name given", gvr->kind);
	char *path = kft_kube_path(gvr, ns_or_default(k, gvr, ns), name, NULL, err);
	if (!path)
		return err ? err->code : KFT_EINVAL;
	rc = send_json(k, "GET", path, NULL, NULL, out, err);
	if (rc == 0 && out)
		kft_kube_set_type(*out, gvr);
	free(path);
	return rc;
}

/* The path of one list page. */
static char *page_path(const kft_gvr *gvr, const char *ns, const kft_list_opts *o, const char *cont,
                       kft_error *err)
{
	char *base = kft_kube_path(gvr, ns && *ns ? ns : NULL, NULL, NULL, err);
	if (!base)
		return NULL;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_puts(&b, base);
	free(base);
	if (o && o->label_selector && *o->label_selector)
		kft_kube_query(&b, "labelSelector", o->label_selector);
	if (o && o->field_selector && *o->field_selector)
		kft_kube_query(&b, "fieldSelector", o->field_selector);
	/* a continue token carries its own resourceVersion */
	if (o && o->resource_version && !cont)
		kft_kube_query(&b, "resourceVersion", o->resource_version);
	long limit = o && o->page_size ? o->page_size : DEFAULT_PAGE_SIZE;
	if (limit > 0)
		kft_strbuf_printf(&b, "%climit=%ld", strchr(b.buf, '?') ? '&' : '?', limit);
	if (cont)
		kft_kube_query(&b, "continue", cont);
	char *s = kft_strbuf_detach(&b);
	if (!s)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return s;
}

/* ---- list pages, item by item ---------------------------------------------------------- */

/* A jansson tree costs about eight times its text: a 100-item page of JobSets
 * is ~4 MB as a tree, and a page of 500 ConfigMaps of 1 MB is half a
 * gigabyte as text. So a page is never held whole: its bytes go through a
 * small state machine as curl hands them over. The top-level keys are read
 * by hand; each element of "items" is gathered alone (up to
 * KFT_KUBE_MAX_OBJECT_BYTES) and decoded when its closing brace arrives, so
 * a page of any size costs one object's text and tree.
 *
 * Objects are data: strings may hold "\u0000" (Go's client accepts it, and
 * any user who may create a ConfigMap can store one), so items are decoded
 * with JSON_ALLOW_NUL. An item that cannot be held at all - larger than the
 * bound, or with a NUL in an object key, which jansson cannot represent - is
 * skipped with a warning (kft_kube_set_warning_handler) instead of failing
 * the page: one object must never keep a whole cache from syncing. Text that
 * is not JSON still fails the page: the server is then broken, not an
 * object. */

enum { LS_TAKEN, LS_AGAIN, LS_STOP };

static int ls_fail(kft_kube_list_stream *ls)
{
	ls->state = LS_FAILED;
	ls->rc = KFT_EPARSE;
	return kft_error_set(ls->err, KFT_EPARSE, "%s: the answer is not a List", ls->what);
}

static int ls_stop(kft_kube_list_stream *ls)
{
	ls_fail(ls);
	return LS_STOP;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The role of the key just read: its raw bytes are compared, or decoded
 * first when written with escapes. */
static enum ls_role key_role(const kft_kube_list_stream *ls)
{
	if (ls->key_long)
		return LS_OTHER;
	const char *k = ls->key;
	size_t n = ls->key_len;
	json_t *dec = NULL;
	if (ls->key_escaped) {
		char quoted[KFT_LS_KEY_MAX + 3];
		quoted[0] = '"';
		memcpy(quoted + 1, ls->key, n);
		quoted[n + 1] = '"';
		dec = json_loadb(quoted, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		k = json_string_value(dec);
		n = json_string_length(dec);
	}
	enum ls_role r = LS_OTHER;
	if (k && n == 5 && memcmp(k, "items", 5) == 0)
		r = LS_ITEMS;
	else if (k && n == 8 && memcmp(k, "metadata", 8) == 0)
		r = LS_METADATA;
	json_decref(dec);
	return r;
}

static void ls_skip(kft_kube_list_stream *ls, const char *why)
{
	if (ls->kube)
		kft_kube_warn(ls->kube, "%s: item %zu skipped: %s", ls->what, ls->item_no, why);
}

/* A capture ended: decode it and hand it on. */
static int ls_captured(kft_kube_list_stream *ls)
{
	int rc = 0;
	if (ls->over) {
		char why[96];
		snprintf(why, sizeof(why), "larger than %zu bytes", KFT_KUBE_MAX_OBJECT_BYTES);
		if (!ls->in_item)
			return ls_fail(ls);
		ls_skip(ls, why);
	} else if (ls->buf.failed) {
		ls->state = LS_FAILED;
		return ls->rc = kft_error_set(ls->err, KFT_ENOMEM, "%s: out of memory", ls->what);
	} else {
		json_error_t e;
		json_t *v = json_loadb(ls->buf.buf, ls->buf.len, JSON_ALLOW_NUL, &e);
		if (!v && ls->in_item && kft_kube_unholdable(&e)) {
			ls_skip(ls, e.text);
		} else if (!v) {
			return ls_fail(ls);
		} else if (ls->in_item) {
			rc = ls->on_item(ls->ctx, v); /* an object: the capture began with '{' */
			json_decref(v);
		} else if (ls->role == LS_METADATA) {
			if (!json_is_object(v)) {
				json_decref(v);
				return ls_fail(ls);
			}
			ls->metadata = v;
		} else {
			json_decref(v);
		}
	}
	/* one large object must not pin its buffer for the rest of the page */
	if (ls->buf.cap > (size_t)1024 * 1024)
		kft_strbuf_free(&ls->buf);
	kft_strbuf_reset(&ls->buf);
	if (rc) {
		ls->state = LS_FAILED;
		ls->rc = rc;
		return rc;
	}
	ls->state = ls->in_item ? LS_AFTER_ITEM : LS_AFTER_VALUE;
	return 0;
}

static void ls_begin_capture(kft_kube_list_stream *ls, int in_item)
{
	ls->state = LS_CAPTURE;
	ls->in_item = in_item;
	ls->depth = 0;
	ls->in_str = ls->esc = 0;
	ls->over = 0;
	if (in_item)
		ls->item_no++;
	kft_strbuf_reset(&ls->buf);
}

/* Feeds the bytes of a capture; returns how many it took (the capture may
 * end before the chunk does). */
static size_t ls_capture(kft_kube_list_stream *ls, const char *p, size_t n)
{
	size_t i = 0;
	for (; i < n; i++) {
		char c = p[i];
		if (ls->in_str) {
			if (ls->esc)
				ls->esc = 0;
			else if (c == '\\')
				ls->esc = 1;
			else if (c == '"')
				ls->in_str = 0;
			continue;
		}
		if (c == '"')
			ls->in_str = 1;
		else if (c == '{' || c == '[')
			ls->depth++;
		else if ((c == '}' || c == ']') && --ls->depth == 0) {
			i++;
			break;
		}
	}
	if (!ls->over && ls->buf.len + i > KFT_KUBE_MAX_OBJECT_BYTES) {
		ls->over = 1;
		kft_strbuf_free(&ls->buf);
		kft_strbuf_init(&ls->buf);
	}
	if (!ls->over)
		kft_strbuf_putn(&ls->buf, p, i);
	if (ls->depth == 0)
		ls_captured(ls);
	return i;
}

/* The end of a number or literal. */
static int ls_literal_end(kft_kube_list_stream *ls)
{
	if (ls->role == LS_ITEMS && !(ls->lit_len == 4 && memcmp(ls->lit, "null", 4) == 0))
		return ls_fail(ls);
	if (ls->role == LS_METADATA)
		return ls_fail(ls);
	ls->state = LS_AFTER_VALUE;
	return 0;
}

/* One byte outside captures: LS_TAKEN, LS_AGAIN (read it again in the new
 * state) or LS_STOP (failed). */
static int ls_byte(kft_kube_list_stream *ls, char c)
{
	switch (ls->state) {
	case LS_START:
		if (is_ws(c))
			return LS_TAKEN;
		if (c != '{')
			return ls_stop(ls);
		ls->state = LS_FIRST_KEY;
		return LS_TAKEN;
	case LS_FIRST_KEY:
	case LS_NEXT_KEY:
		if (is_ws(c))
			return LS_TAKEN;
		if (c == '}' && ls->state == LS_FIRST_KEY) {
			ls->state = LS_END;
			return LS_TAKEN;
		}
		if (c != '"')
			return ls_stop(ls);
		ls->state = LS_KEY;
		ls->key_len = 0;
		ls->key_long = ls->key_escaped = ls->esc = 0;
		return LS_TAKEN;
	case LS_KEY:
		if (!ls->esc && c == '"') {
			ls->state = LS_COLON;
			return LS_TAKEN;
		}
		ls->esc = !ls->esc && c == '\\';
		if (c == '\\')
			ls->key_escaped = 1;
		if (ls->key_len < KFT_LS_KEY_MAX)
			ls->key[ls->key_len++] = c;
		else
			ls->key_long = 1;
		return LS_TAKEN;
	case LS_COLON:
		if (is_ws(c))
			return LS_TAKEN;
		if (c != ':')
			return ls_stop(ls);
		ls->role = key_role(ls);
		if (ls->role == LS_METADATA && ls->metadata)
			ls->role = LS_OTHER; /* the first one counts */
		ls->state = LS_VALUE;
		return LS_TAKEN;
	case LS_VALUE:
		if (is_ws(c))
			return LS_TAKEN;
		if (ls->role == LS_ITEMS && c == '[') {
			ls->state = LS_FIRST_ITEM;
		} else if (c == '{' || (c == '[' && ls->role == LS_OTHER)) {
			if (ls->role == LS_ITEMS)
				return ls_stop(ls);
			ls_begin_capture(ls, 0);
			return LS_AGAIN; /* c opens the capture */
		} else if (c == '"' && ls->role == LS_OTHER) {
			ls->state = LS_STRING;
			ls->esc = 0;
		} else if (c == '"' || c == '[' || c == ',' || c == '}' || c == ']' || c == ':') {
			return ls_stop(ls);
		} else {
			ls->state = LS_LITERAL;
			ls->lit[0] = c;
			ls->lit_len = 1;
		}
		return LS_TAKEN;
	case LS_STRING:
		if (!ls->esc && c == '"')
			ls->state = LS_AFTER_VALUE;
		else
			ls->esc = !ls->esc && c == '\\';
		return LS_TAKEN;
	case LS_LITERAL:
		if (c == ',' || c == '}' || c == ']' || is_ws(c)) {
			return ls_literal_end(ls) ? LS_STOP
			                          : LS_AGAIN; /* the delimiter is read again */
		}
		if (ls->lit_len < sizeof(ls->lit))
			ls->lit[ls->lit_len++] = c;
		else
			ls->lit_len = sizeof(ls->lit); /* too long to be "null" */
		return LS_TAKEN;
	case LS_AFTER_VALUE:
		if (is_ws(c))
			return LS_TAKEN;
		if (c == ',')
			ls->state = LS_NEXT_KEY;
		else if (c == '}')
			ls->state = LS_END;
		else
			return ls_stop(ls);
		return LS_TAKEN;
	case LS_FIRST_ITEM:
	case LS_NEXT_ITEM:
		if (is_ws(c))
			return LS_TAKEN;
		if (c == ']' && ls->state == LS_FIRST_ITEM) {
			ls->state = LS_AFTER_VALUE;
			return LS_TAKEN;
		}
		if (c != '{')
			return ls_stop(ls);
		ls_begin_capture(ls, 1);
		return LS_AGAIN;
	case LS_AFTER_ITEM:
		if (is_ws(c))
			return LS_TAKEN;
		if (c == ',')
			ls->state = LS_NEXT_ITEM;
		else if (c == ']')
			ls->state = LS_AFTER_VALUE;
		else
			return ls_stop(ls);
		return LS_TAKEN;
	case LS_END: return is_ws(c) ? 0 : ls_fail(ls);
	case LS_CAPTURE:
	case LS_FAILED: break;
	}
	return ls_stop(ls);
}

void kft_kube_list_stream_init(kft_kube_list_stream *ls, kft_kube *kube, const char *what,
                               int (*on_item)(void *ctx, json_t *item), void *ctx, kft_error *err)
{
	memset(ls, 0, sizeof(*ls));
	ls->kube = kube;
	ls->what = what;
	ls->on_item = on_item;
	ls->ctx = ctx;
	ls->err = err;
	kft_strbuf_init(&ls->buf);
}

int kft_kube_list_stream_feed(kft_kube_list_stream *ls, const char *data, size_t len)
{
	size_t i = 0;
	while (i < len && ls->state != LS_FAILED) {
		if (ls->state == LS_CAPTURE) {
			i += ls_capture(ls, data + i, len - i);
			continue;
		}
		int r = ls_byte(ls, data[i]);
		if (r == LS_TAKEN)
			i++;
		else if (r == LS_STOP)
			break;
	}
	return ls->state == LS_FAILED ? ls->rc : 0;
}

/* Frees what the stream holds, without judging it (the request failed). */
static void ls_release(kft_kube_list_stream *ls)
{
	kft_strbuf_free(&ls->buf);
	json_decref(ls->metadata);
	ls->metadata = NULL;
}

int kft_kube_list_stream_end(kft_kube_list_stream *ls, json_t **metadata)
{
	int rc = ls->rc;
	if (rc == 0 && ls->state == LS_LITERAL)
		rc = ls_literal_end(ls);
	if (rc == 0 && ls->state != LS_END)
		rc = ls_fail(ls);
	kft_strbuf_free(&ls->buf);
	if (rc == 0 && metadata)
		*metadata = ls->metadata;
	else
		json_decref(ls->metadata);
	ls->metadata = NULL;
	return rc;
}

int kft_kube_list_scan(const char *text, size_t len, const char *what,
                       int (*on_item)(void *ctx, json_t *item), void *ctx, json_t **metadata,
                       kft_error *err)
{
	kft_kube_list_stream ls;
	*metadata = NULL;
	kft_kube_list_stream_init(&ls, NULL, what, on_item, ctx, err);
	kft_kube_list_stream_feed(&ls, text ? text : "", text ? len : 0);
	return kft_kube_list_stream_end(&ls, metadata);
}

typedef struct page_ctx {
	const kft_gvr *gvr;
	int (*on_item)(void *, const json_t *);
	void *ctx;
} page_ctx;

static int page_item(void *ctx, json_t *item)
{
	page_ctx *pc = ctx;
	kft_kube_set_type(item, pc->gvr);
	return pc->on_item(pc->ctx, item);
}

static int page_sink(void *ctx, const char *data, size_t len)
{
	return kft_kube_list_stream_feed(ctx, data, len);
}

/* Reads one page as it arrives, handing out its items; keeps its RV and
 * continue token. */
static int take_page(kft_kube *k, const kft_gvr *gvr, const char *path, const kft_list_opts *o,
                     int (*on_item)(void *, const json_t *), void *ctx, char **rv, char **cont,
                     kft_error *err)
{
	char what[160];
	snprintf(what, sizeof(what), "list %s", gvr->resource);
	page_ctx pc = {gvr, on_item, ctx};
	kft_kube_list_stream ls;
	kft_kube_list_stream_init(&ls, k, what, page_item, &pc, err);
	kft_kube_req req = {.method = "GET",
	                    .path = path,
	                    .stop = o ? o->stop : NULL,
	                    .sink = page_sink,
	                    .sink_ctx = &ls,
	                    .accept = o && o->metadata_only ? KFT_KUBE_ACCEPT_META_LIST : NULL};
	json_t *md = NULL;
	int rc = kft_kube_do(k, &req, NULL, err);
	if (rc) {
		ls_release(&ls);
		return rc;
	}
	rc = kft_kube_list_stream_end(&ls, &md);
	if (rc)
		return rc;
	const char *v = json_string_value(json_object_get(md, "resourceVersion"));
	const char *c = json_string_value(json_object_get(md, "continue"));
	free(*rv);
	free(*cont);
	*rv = v ? strdup(v) : strdup("");
	*cont = c && *c ? strdup(c) : NULL;
	rc = (!*rv || (c && *c && !*cont)) ? kft_error_set(err, KFT_ENOMEM, "out of memory") : 0;
	json_decref(md);
	return rc;
}

int kft_kube_list_each(kft_kube *k, const kft_gvr *gvr, const char *ns, const kft_list_opts *opts,
                       int (*on_item)(void *ctx, const json_t *item), void *ctx,
                       char **resource_version, kft_error *err)
{
	char *rv = NULL, *cont = NULL;
	int rc = check_gvr(gvr, err);
	if (resource_version)
		*resource_version = NULL;
	for (int page = 0; rc == 0; page++) {
		if (page == KFT_KUBE_MAX_LIST_PAGES) {
			rc = kft_error_set(err, KFT_ELIMIT, "list %s: more than %d pages",
			                   gvr->resource, KFT_KUBE_MAX_LIST_PAGES);
			break;
		}
		char *path = page_path(gvr, ns, opts, cont, err);
		rc = path ? take_page(k, gvr, path, opts, on_item, ctx, &rv, &cont, err)
		          : KFT_ENOMEM;
		free(path);
		if (rc || !cont)
			break;
	}
	free(cont);
	if (rc == 0 && resource_version)
		*resource_version = rv;
	else
		free(rv);
	return rc;
}

static int collect(void *ctx, const json_t *item)
{
	return json_array_append((json_t *)ctx, (json_t *)item) ? KFT_ENOMEM : 0;
}

int kft_kube_list(kft_kube *k, const kft_gvr *gvr, const char *ns, const kft_list_opts *opts,
                  json_t **out, kft_error *err)
{
	char *rv = NULL;
	char av[256], kind[128];
	*out = NULL;
	int rc = check_gvr(gvr, err);
	if (rc)
		return rc;
	json_t *items = json_array();
	if (!items)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	rc = kft_kube_list_each(k, gvr, ns, opts, collect, items, &rv, err);
	if (rc == KFT_ENOMEM && err && err->code != KFT_ENOMEM)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc) {
		json_decref(items);
		return rc;
	}
	snprintf(kind, sizeof(kind), "%sList", gvr->kind);
	*out = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion",
	                 kft_gvr_api_version(gvr, av, sizeof(av)), "kind", kind, "metadata",
	                 "resourceVersion", rv, "items", items);
	free(rv);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* Sends obj to its own path (or its collection for create). */
static int write_obj(kft_kube *k, const kft_gvr *gvr, const json_t *obj, const char *method,
                     const char *sub, json_t **out, kft_error *err)
{
	const char *ns, *name;
	int create = strcmp(method, "POST") == 0;
	if (out)
		*out = NULL;
	int rc = check_gvr(gvr, err);
	if (!rc)
		rc = obj_key(k, gvr, obj, create, &ns, &name, err);
	if (rc)
		return rc;
	char *path = kft_kube_path(gvr, ns, create ? NULL : name, sub, err);
	if (!path)
		return err ? err->code : KFT_EINVAL;
	rc = send_json(k, method, path, "application/json", obj, out, err);
	free(path);
	if (rc == 0 && out)
		kft_kube_set_type(*out, gvr);
	return rc;
}

int kft_kube_create(kft_kube *k, const kft_gvr *gvr, const json_t *obj, json_t **out,
                    kft_error *err)
{
	return write_obj(k, gvr, obj, "POST", NULL, out, err);
}

int kft_kube_update(kft_kube *k, const kft_gvr *gvr, const json_t *obj, json_t **out,
                    kft_error *err)
{
	return write_obj(k, gvr, obj, "PUT", NULL, out, err);
}

int kft_kube_update_status(kft_kube *k, const kft_gvr *gvr, const json_t *obj, json_t **out,
                           kft_error *err)
{
	return write_obj(k, gvr, obj, "PUT", "status", out, err);
}

static const char *patch_ctype(kft_patch_type t)
{
	switch (t) {
	case KFT_PATCH_MERGE: return "application/merge-patch+json";
	case KFT_PATCH_JSON: return "application/json-patch+json";
	case KFT_PATCH_STRATEGIC: return "application/strategic-merge-patch+json";
	}
	return NULL;
}

/* PATCH with a content type and optional fieldManager/force. */
static int do_patch(kft_kube *k, const kft_gvr *gvr, const char *ns, const char *name,
                    const char *ctype, const json_t *body, const char *sub, const char *manager,
                    int force, json_t **out, kft_error *err)
{
	char *path = kft_kube_path(gvr, ns_or_default(k, gvr, ns), name, sub, err);
	if (!path)
		return err ? err->code : KFT_EINVAL;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_puts(&b, path);
	free(path);
	if (manager)
		kft_kube_query(&b, "fieldManager", manager);
	if (force)
		kft_kube_query(&b, "force", "true");
	int rc = b.failed ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                  : send_json(k, "PATCH", b.buf, ctype, body, out, err);
	kft_strbuf_free(&b);
	if (rc == 0 && out)
		kft_kube_set_type(*out, gvr);
	return rc;
}

int kft_kube_patch(kft_kube *k, const kft_gvr *gvr, const char *ns, const char *name,
                   kft_patch_type type, const json_t *patch, const kft_patch_opts *opts,
                   json_t **out, kft_error *err)
{
	if (out)
		*out = NULL;
	int rc = check_gvr(gvr, err);
	if (rc)
		return rc;
	const char *ctype = patch_ctype(type);
	if (!name || !patch || !ctype)
		return kft_error_set(err, KFT_EINVAL,
		                     "patch %s: name, patch and a patch type are "
		                     "required",
		                     gvr->kind);
	if (type == KFT_PATCH_JSON ? !json_is_array(patch) : !json_is_object(patch))
		return kft_error_set(err, KFT_EINVAL, "patch %s/%s: a %s patch must be a JSON %s",
		                     gvr->kind, name, type == KFT_PATCH_JSON ? "JSON" : "merge",
		                     type == KFT_PATCH_JSON ? "array" : "object");
	return do_patch(k, gvr, ns, name, ctype, patch, opts ? opts->subresource : NULL,
	                opts ? opts->field_manager : NULL, 0, out, err);
}

static int apply(kft_kube *k, const kft_gvr *gvr, const json_t *obj, const char *manager, int force,
                 const char *sub, json_t **out, kft_error *err)
{
	const char *ns, *name;
	if (out)
		*out = NULL;
	int rc = check_gvr(gvr, err);
	if (!rc)
		rc = obj_key(k, gvr, obj, 0, &ns, &name, err);
	if (rc)
		return rc;
	if (!manager || !*manager)
		return kft_error_set(err, KFT_EINVAL, "apply %s/%s: a field manager is required",
		                     gvr->kind, name);
	if (!json_string_value(json_object_get(obj, "apiVersion")) ||
	    !json_string_value(json_object_get(obj, "kind")))
		return kft_error_set(err, KFT_EINVAL,
		                     "apply %s/%s: apiVersion and kind are required", gvr->kind,
		                     name);
	/* JSON is YAML, so the object goes as it is */
	return do_patch(k, gvr, ns, name, "application/apply-patch+yaml", obj, sub, manager, force,
	                out, err);
}

int kft_kube_apply(kft_kube *k, const kft_gvr *gvr, const json_t *obj, const char *field_manager,
                   int force, json_t **out, kft_error *err)
{
	return apply(k, gvr, obj, field_manager, force, NULL, out, err);
}

int kft_kube_apply_status(kft_kube *k, const kft_gvr *gvr, const json_t *obj,
                          const char *field_manager, int force, json_t **out, kft_error *err)
{
	return apply(k, gvr, obj, field_manager, force, "status", out, err);
}

static json_t *delete_body(const kft_delete_opts *o)
{
	static const char *const policy[] = {NULL, "Background", "Foreground", "Orphan"};
	json_t *b = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "DeleteOptions");
	if (!b || !o)
		return b;
	if (o->propagation > KFT_PROPAGATION_DEFAULT && o->propagation <= KFT_PROPAGATION_ORPHAN)
		json_object_set_new(b, "propagationPolicy", json_string(policy[o->propagation]));
	if (o->grace_now)
		json_object_set_new(b, "gracePeriodSeconds", json_integer(0));
	else if (o->grace_period_seconds > 0)
		json_object_set_new(b, "gracePeriodSeconds", json_integer(o->grace_period_seconds));
	if (o->precondition_uid || o->precondition_resource_version) {
		json_t *pre = json_object();
		if (o->precondition_uid)
			json_object_set_new(pre, "uid", json_string(o->precondition_uid));
		if (o->precondition_resource_version)
			json_object_set_new(pre, "resourceVersion",
			                    json_string(o->precondition_resource_version));
		json_object_set_new(b, "preconditions", pre);
	}
	return b;
}

int kft_kube_delete(kft_kube *k, const kft_gvr *gvr, const char *ns, const char *name,
                    const kft_delete_opts *opts, json_t **out, kft_error *err)
{
	if (out)
		*out = NULL;
	int rc = check_gvr(gvr, err);
	if (rc)
		return rc;
	if (!name)
		return kft_error_set(err, KFT_EINVAL, "delete %s: no name given", gvr->kind);
	char *path = kft_kube_path(gvr, ns_or_default(k, gvr, ns), name, NULL, err);
	if (!path)
		return err ? err->code : KFT_EINVAL;
	json_t *body = delete_body(opts);
	json_t *ans = NULL;
	rc = body ? send_json(k, "DELETE", path, "application/json", body, &ans, err)
	          : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	free(path);
	if (rc == 0 && out)
		*out = ans;
	else
		json_decref(ans);
	return rc;
}

int kft_kube_request(kft_kube *k, const char *method, const char *path, const char *content_type,
                     const char *body, size_t body_len, json_t **out, kft_error *err)
{
	if (out)
		*out = NULL;
	if (!method || !path || path[0] != '/')
		return kft_error_set(err, KFT_EINVAL,
		                     "request: a method and a path starting with "
		                     "'/' are required");
	kft_kube_req req = {.method = method,
	                    .path = path,
	                    .content_type = content_type,
	                    .body = body,
	                    .body_len = body ? body_len : 0};
	return kft_kube_do(k, &req, out, err);
}

int kft_kube_stream(kft_kube *k, const char *path,
                    int (*sink)(void *ctx, const char *data, size_t len), void *ctx,
                    const atomic_int *stop, kft_error *err)
{
	if (!path || path[0] != '/' || !sink)
		return kft_error_set(err, KFT_EINVAL,
		                     "stream: a path starting with '/' and a sink "
		                     "are required");
	kft_kube_req req = {
	        .method = "GET", .path = path, .stop = stop, .sink = sink, .sink_ctx = ctx};
	int rc = kft_kube_do(k, &req, NULL, err);
	/* stopped on purpose: the caller asked for the end */
	if (rc == KFT_EUNAVAILABLE && stop && atomic_load(stop))
		rc = 0;
	return rc;
}
