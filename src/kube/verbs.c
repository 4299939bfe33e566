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
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (body && !text)
		return kft_error_set(err, KFT_ENOMEM, "serialising the request body failed");
	kft_kube_req req = {method, path, body ? ctype : NULL, text, text ? strlen(text) : 0,
	                    stop,   NULL};
	int rc = kft_kube_do(k, &req, out, err);
	free(text);
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
 * is ~4 MB as a tree. So a page is walked as text: the top-level keys are
 * read by hand, and each item is decoded alone with JSON_DISABLE_EOF_CHECK,
 * which stops after the value and says how many bytes it took. */

typedef struct scanner {
	const char *p;
	size_t n, i;
} scanner;

static void skip_ws(scanner *s)
{
	while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' ||
	                       s->p[s->i] == '\r'))
		s->i++;
}

static int eat(scanner *s, char c)
{
	skip_ws(s);
	if (s->i < s->n && s->p[s->i] == c) {
		s->i++;
		return 1;
	}
	return 0;
}

/* A string token (escapes skipped, not decoded): its raw bytes between the
 * quotes in *start and *len. 0, or -1 when unterminated. */
static int raw_string(scanner *s, const char **start, size_t *len)
{
	if (!eat(s, '"'))
		return -1;
	size_t b = s->i;
	while (s->i < s->n && s->p[s->i] != '"')
		s->i += s->p[s->i] == '\\' ? 2 : 1;
	if (s->i >= s->n)
		return -1;
	*start = s->p + b;
	*len = s->i - b;
	s->i++;
	return 0;
}

/* One object or array value, decoded; NULL when it is not one. */
static json_t *container(scanner *s)
{
	skip_ws(s);
	if (s->i >= s->n || (s->p[s->i] != '{' && s->p[s->i] != '['))
		return NULL;
	json_error_t e;
	json_t *v = json_loadb(s->p + s->i, s->n - s->i, JSON_DISABLE_EOF_CHECK, &e);
	if (v)
		s->i += (size_t)e.position;
	return v;
}

/* Skips a value of a key we do not read: a string, a container or a literal. */
static int skip_value(scanner *s)
{
	skip_ws(s);
	if (s->i < s->n && s->p[s->i] == '"') {
		const char *b;
		size_t l;
		return raw_string(s, &b, &l);
	}
	json_t *v = container(s);
	if (v) {
		json_decref(v);
		return 0;
	}
	size_t b = s->i; /* a number or literal ends at the next delimiter */
	while (s->i < s->n && s->p[s->i] != ',' && s->p[s->i] != '}' && s->p[s->i] != ']' &&
	       s->p[s->i] != ' ' && s->p[s->i] != '\t' && s->p[s->i] != '\r' && s->p[s->i] != '\n')
		s->i++;
	return s->i > b ? 0 : -1;
}

static int scan_items(scanner *s, int (*on_item)(void *, json_t *), void *ctx)
{
	skip_ws(s);
	if (s->n - s->i >= 4 && strncmp(s->p + s->i, "null", 4) == 0) {
		s->i += 4;
		return 0;
	}
	if (!eat(s, '['))
		return -1;
	if (eat(s, ']'))
		return 0;
	do {
		json_t *item = container(s);
		if (!json_is_object(item)) {
			json_decref(item);
			return -1;
		}
		int rc = on_item(ctx, item);
		json_decref(item);
		if (rc)
			return rc;
	} while (eat(s, ','));
	return eat(s, ']') ? 0 : -1;
}

int kft_kube_list_scan(const char *text, size_t len, const char *what,
                       int (*on_item)(void *ctx, json_t *item), void *ctx, json_t **metadata,
                       kft_error *err)
{
	scanner s = {text ? text : "", text ? len : 0, 0};
	*metadata = NULL;
	int rc = eat(&s, '{') ? 0 : -1, closed = rc == 0 && eat(&s, '}');
	if (rc == 0 && !closed)
		do {
			const char *key;
			size_t kl;
			if ((rc = raw_string(&s, &key, &kl)) != 0 ||
			    (rc = eat(&s, ':') ? 0 : -1) != 0)
				break;
			if (kl == 5 && strncmp(key, "items", 5) == 0) {
				rc = scan_items(&s, on_item, ctx);
			} else if (kl == 8 && strncmp(key, "metadata", 8) == 0 && !*metadata) {
				*metadata = container(&s);
				rc = json_is_object(*metadata) ? 0 : -1;
			} else {
				rc = skip_value(&s);
			}
		} while (rc == 0 && eat(&s, ','));
	if (rc == 0 && !closed && !eat(&s, '}'))
		rc = -1;
	skip_ws(&s);
	if (rc == 0 && s.i != s.n)
		rc = -1;
	if (rc == -1) {
		json_decref(*metadata);
		*metadata = NULL;
		return kft_error_set(err, KFT_EPARSE, "%s: the answer is not a List", what);
	}
	return rc;
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

/* Hands out one page's items; keeps RV and continue token. */
static int take_page(const kft_gvr *gvr, const kft_kube_body *page,
                     int (*on_item)(void *, const json_t *), void *ctx, char **rv, char **cont,
                     kft_error *err)
{
	char what[160];
	snprintf(what, sizeof(what), "list %s", gvr->resource);
	page_ctx pc = {gvr, on_item, ctx};
	json_t *md = NULL;
	int rc = kft_kube_list_scan(page->data, page->len, what, page_item, &pc, &md, err);
	if (rc) {
		json_decref(md);
		return rc;
	}
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
		kft_kube_body text = {0};
		kft_kube_req req = {.method = "GET",
		                    .path = path,
		                    .stop = opts ? opts->stop : NULL,
		                    .raw = &text};
		rc = path ? kft_kube_do(k, &req, NULL, err) : KFT_ENOMEM;
		free(path);
		if (rc == 0)
			rc = take_page(gvr, &text, on_item, ctx, &rv, &cont, err);
		free(text.data);
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
	kft_kube_req req = {method, path, content_type, body, body ? body_len : 0, NULL, NULL};
	return kft_kube_do(k, &req, out, err);
}
