/*
 * schema.c - loading the api/ schema bundle, defaulting and validating
 * objects against it, and expanding it into CRDs. See kftrainer/schema.h.
 *
 * A schema node is looked at through a "view": the node itself plus the
 * definitions its `$ref` chain points to, searched in that order. That keeps
 * the parsed bundle at its source size (the fully expanded CRDs are several
 * times larger) and makes "siblings of $ref override the definition" fall out
 * of the lookup order.
 *
 * Error wording follows the API server: schema failures are converted from
 * kube-openapi's messages ("X in body should be ...") into field errors the
 * way apiextensions-apiserver does, so `kftrainer validate` prints what
 * `kubectl apply` would.
 */
#include "kftrainer/schema.h"

#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/bundle.h"
#include "api/cel_rules.h"
#include "kftrainer/decode.h"
#include "util/cache_map.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#define MAX_LAYERS 8
#define MAX_DEPTH  128

static const char TIME_DEF[] = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";

/* A compiled `pattern`. Entries are never moved or freed before the schema,
 * so a pointer to one stays valid while other threads add entries. */
struct regex_entry {
	const char *pattern; /* borrowed from the schema tree */
	regex_t re;
	int ok; /* regcomp succeeded */
	struct regex_entry *next;
};

/* One of the built-in bundle's definitions, decoded on first use: a process
 * validating a TrainJob meets about 100 of the bundle's definitions, and
 * building every tree was the CLI's largest start-up cost (bundle.h). */
typedef struct lazy_def {
	char *name;
	const char *file;          /* the bundle file defining it */
	const unsigned char *data; /* its encoding, in the bundle */
	size_t len;
	json_t *_Atomic tree; /* NULL until decoded; then kept to the schema's end */
	/* Its own keys, read at the index, so defaulting an absent field need
	 * not build the definition (chain_default): */
	bool has_default; /* a "default" (or keys that could not be read) */
	char *ref;        /* its "$ref", or NULL */
} lazy_def;

struct kft_schema {
	json_t *definitions; /* name -> schema (a schema loaded from text) */
	lazy_def *lazy;      /* or these, in the bundle's order (the built-in) */
	lazy_def **by_name;  /* the same, sorted by name */
	size_t nlazy;
	pthread_mutex_t lazy_lock; /* decoding one */
	json_t *kinds_json;        /* array of kinds: entries */
	kft_kind_info *kinds;
	size_t nkinds;
	/* Patterns are compiled on first use: a process validating a few
	 * objects meets a handful of the bundle's patterns, and compiling all of
	 * them cost more than the rest of a short run's validation. */
	pthread_mutex_t regex_lock;
	struct regex_entry *regexes;
};

/* ---- definitions ------------------------------------------------------ */

static int by_name_cmp(const void *a, const void *b)
{
	return strcmp((*(lazy_def *const *)a)->name, (*(lazy_def *const *)b)->name);
}

static lazy_def *lazy_find(const kft_schema *s, const char *name)
{
	lazy_def key = {.name = (char *)name}, *k = &key;
	lazy_def **hit =
	        s->by_name ? bsearch(&k, s->by_name, s->nlazy, sizeof(*s->by_name), by_name_cmp)
	                   : NULL;
	return hit ? *hit : NULL;
}

/* The tree of d, decoded now if this is its first use (under the schema's
 * lock; any thread may ask). NULL only when memory runs out. */
static const json_t *lazy_tree(const kft_schema *s, lazy_def *d)
{
	json_t *t = atomic_load_explicit(&d->tree, memory_order_acquire);
	if (t)
		return t;
	pthread_mutex_lock((pthread_mutex_t *)&s->lazy_lock);
	t = atomic_load_explicit(&d->tree, memory_order_relaxed);
	if (!t && kft_bundle_decode(d->data, d->len, &t) == 0)
		atomic_store_explicit(&d->tree, t, memory_order_release);
	pthread_mutex_unlock((pthread_mutex_t *)&s->lazy_lock);
	return t;
}

/* The definition called name, or NULL. */
static const json_t *def_get(const kft_schema *s, const char *name)
{
	if (!s->lazy)
		return json_object_get(s->definitions, name);
	lazy_def *d = lazy_find(s, name);
	return d ? lazy_tree(s, d) : NULL;
}

static bool def_exists(const kft_schema *s, const char *name)
{
	return s->lazy ? lazy_find(s, name) != NULL : json_object_get(s->definitions, name) != NULL;
}

/* ---- views over $ref chains ------------------------------------------- */

typedef struct view {
	const json_t *layer[MAX_LAYERS];
	int n;
	int time; /* the chain passes through the Time definition */
} view;

static int view_of(const kft_schema *s, const json_t *node, view *v)
{
	v->n = 0;
	v->time = 0;
	while (node) {
		if (v->n == MAX_LAYERS)
			return -1;
		v->layer[v->n++] = node;
		const char *ref = json_string_value(json_object_get(node, "$ref"));
		if (!ref)
			return 0;
		if (strcmp(ref, TIME_DEF) == 0)
			v->time = 1;
		node = def_get(s, ref);
		if (!node)
			return -1;
	}
	return 0;
}

static const json_t *view_get(const view *v, const char *key)
{
	for (int i = 0; i < v->n; i++) {
		const json_t *x = json_object_get(v->layer[i], key);
		if (x)
			return x;
	}
	return NULL;
}

static const char *view_str(const view *v, const char *key)
{
	return json_string_value(view_get(v, key));
}

static int view_true(const view *v, const char *key)
{
	return json_is_true(view_get(v, key));
}

/* ---- loading ---------------------------------------------------------- */

static int add_definitions(kft_schema *s, const char *file, json_t *root, kft_error *err)
{
	json_t *defs = json_object_get(root, "definitions");
	if (!defs)
		return 0;
	if (!json_is_object(defs))
		return kft_error_set(err, KFT_EINVAL, "%s: definitions must be a mapping", file);
	const char *name;
	json_t *def;
	json_object_foreach(defs, name, def)
	{
		if (json_object_get(s->definitions, name))
			return kft_error_set(err, KFT_EINVAL, "%s: definition %s is defined twice",
			                     file, name);
		if (json_object_set(s->definitions, name, def) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	return 0;
}

static int add_kinds(kft_schema *s, const char *file, json_t *root, kft_error *err)
{
	json_t *kinds = json_object_get(root, "kinds");
	if (!kinds)
		return 0;
	if (!json_is_array(kinds) || json_array_extend(s->kinds_json, kinds) != 0)
		return kft_error_set(err, KFT_EINVAL, "%s: kinds must be a list", file);
	return 0;
}

static int parse_file(const char *name, const char *data, size_t len, json_t **out, kft_error *err)
{
	kft_doc_list docs = {0};
	int rc = kft_decode(data, len, name, &docs, err);
	if (rc != 0)
		return rc;
	if (docs.count != 1 || !json_is_object(docs.items[0].root)) {
		kft_doc_list_free(&docs);
		return kft_error_set(err, KFT_EINVAL, "%s: expected one mapping", name);
	}
	*out = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return 0;
}

static const char *kind_field(const json_t *k, const char *key)
{
	const char *v = json_string_value(json_object_get(k, key));
	return v ? v : "";
}

static int index_kinds(kft_schema *s, kft_error *err)
{
	s->nkinds = json_array_size(s->kinds_json);
	s->kinds = calloc(s->nkinds ? s->nkinds : 1, sizeof(*s->kinds));
	if (!s->kinds)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nkinds; i++) {
		const json_t *k = json_array_get(s->kinds_json, i);
		kft_kind_info *ki = &s->kinds[i];
		ki->group = kind_field(k, "group");
		ki->version = kind_field(k, "version");
		ki->kind = kind_field(k, "kind");
		ki->list_kind = kind_field(k, "listKind");
		ki->plural = kind_field(k, "plural");
		ki->singular = kind_field(k, "singular");
		ki->namespaced = strcmp(kind_field(k, "scope"), "Cluster") != 0;
		ki->definition = kind_field(k, "schema");
		ki->entry = k;
		if (!*ki->kind || !def_exists(s, ki->definition))
			return kft_error_set(err, KFT_EINVAL,
			                     "kind %s: schema definition \"%s\" not found",
			                     ki->kind, ki->definition);
	}
	return 0;
}

/* The compiled form of pattern, compiled now if this is its first use;
 * NULL when it does not compile (or memory runs out). Thread-safe. */
static const struct regex_entry *regex_for(kft_schema *s, const char *pattern)
{
	pthread_mutex_lock(&s->regex_lock);
	struct regex_entry *e = s->regexes;
	while (e && e->pattern != pattern && strcmp(e->pattern, pattern) != 0)
		e = e->next;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		e->pattern = pattern;
		e->ok = regcomp(&e->re, pattern, REG_EXTENDED | REG_NOSUB) == 0;
		e->next = s->regexes;
		s->regexes = e;
	}
	pthread_mutex_unlock(&s->regex_lock);
	return e;
}

/* Compiles every `pattern` up front, so a schema given as text (whose
 * patterns nobody checked) is refused at load when one does not compile.
 * The built-in bundle's patterns were checked when it was built. */
static int compile_patterns(kft_schema *s, const json_t *node, size_t depth, kft_error *err)
{
	if (depth > MAX_DEPTH)
		return kft_error_set(err, KFT_ELIMIT, "schema nested too deeply");
	if (json_is_array(node)) {
		size_t i;
		const json_t *x;
		json_array_foreach(node, i,
		                   x) if (compile_patterns(s, x, depth + 1, err) != 0) return -1;
		return 0;
	}
	if (!json_is_object(node))
		return 0;
	const char *pattern = json_string_value(json_object_get(node, "pattern"));
	if (pattern) {
		const struct regex_entry *e = regex_for(s, pattern);
		if (!e)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		if (!e->ok)
			return kft_error_set(err, KFT_EINVAL, "schema pattern %s does not compile",
			                     pattern);
	}
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)node, key, x)
	{
		if (strcmp(key, "default") != 0 && strcmp(key, "enum") != 0 &&
		    compile_patterns(s, x, depth + 1, err) != 0)
			return -1;
	}
	return 0;
}

static kft_schema *schema_new(kft_error *err)
{
	kft_schema *s = calloc(1, sizeof(*s));
	if (!s) {
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->regex_lock, NULL);
	pthread_mutex_init(&s->lazy_lock, NULL);
	s->definitions = json_object();
	s->kinds_json = json_array();
	if (!s->definitions || !s->kinds_json) {
		kft_schema_free(s);
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	return s;
}

/* Takes one file's definitions and kinds into s (root is borrowed). */
static int schema_add(kft_schema *s, const char *name, json_t *root, kft_error *err)
{
	int rc = add_definitions(s, name, root, err);
	return rc == 0 ? add_kinds(s, name, root, err) : rc;
}

int kft_schema_load(const char *const *names, const char *const *datas, const size_t *lens,
                    size_t nfiles, kft_schema **out, kft_error *err)
{
	*out = NULL;
	kft_schema *s = schema_new(err);
	if (!s)
		return err ? err->code : KFT_ENOMEM;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < nfiles; i++) {
		json_t *root = NULL;
		rc = parse_file(names[i], datas[i], lens[i], &root, err);
		if (rc == 0)
			rc = schema_add(s, names[i], root, err);
		json_decref(root);
	}
	if (rc == 0)
		rc = index_kinds(s, err);
	if (rc == 0)
		rc = compile_patterns(s, s->definitions, 0, err) == 0 ? 0 : err ? err->code : -1;
	if (rc != 0) {
		kft_schema_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void kft_schema_free(kft_schema *s)
{
	if (!s)
		return;
	while (s->regexes) {
		struct regex_entry *e = s->regexes;
		s->regexes = e->next;
		if (e->ok)
			regfree(&e->re);
		free(e);
	}
	pthread_mutex_destroy(&s->regex_lock);
	for (size_t i = 0; i < s->nlazy; i++) {
		json_decref(atomic_load_explicit(&s->lazy[i].tree, memory_order_relaxed));
		free(s->lazy[i].name);
		free(s->lazy[i].ref);
	}
	free(s->lazy);
	free(s->by_name);
	pthread_mutex_destroy(&s->lazy_lock);
	free(s->kinds);
	json_decref(s->definitions);
	json_decref(s->kinds_json);
	free(s);
}

static kft_schema *builtin;
static kft_error builtin_err;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

/* A bundle file's members: its definitions are indexed (lazy_def), its
 * kinds decoded; the rest is not the schema's. */
typedef struct bundle_walk {
	kft_schema *s;
	const char *file;
	size_t cap;
} bundle_walk;

/* One of a definition's own keys: notes "default" and "$ref". */
static int definition_key(const char *key, size_t klen, const unsigned char *value, size_t vlen,
                          void *ctx)
{
	lazy_def *d = ctx;
	if (klen == 7 && memcmp(key, "default", 7) == 0)
		d->has_default = true;
	if (klen != 4 || memcmp(key, "$ref", 4) != 0)
		return 0;
	json_t *ref = NULL;
	int rc = kft_bundle_decode(value, vlen, &ref);
	if (rc == 0 && json_is_string(ref) && !(d->ref = strdup(json_string_value(ref))))
		rc = KFT_ENOMEM;
	if (rc == 0 && !d->ref)
		d->has_default = true; /* a $ref that is not a name: judged when built */
	json_decref(ref);
	return rc;
}

static int index_definition(const char *key, size_t klen, const unsigned char *value, size_t vlen,
                            void *ctx)
{
	bundle_walk *w = ctx;
	kft_schema *s = w->s;
	if (s->nlazy == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		lazy_def *g = realloc(s->lazy, cap * sizeof(*g));
		if (!g)
			return KFT_ENOMEM;
		s->lazy = g;
		w->cap = cap;
	}
	lazy_def *d = &s->lazy[s->nlazy];
	*d = (lazy_def){.file = w->file, .data = value, .len = vlen};
	atomic_init(&d->tree, NULL);
	if (!(d->name = strndup(key, klen)))
		return KFT_ENOMEM;
	s->nlazy++;
	int rc = kft_bundle_members(value, vlen, definition_key, d);
	if (rc == KFT_ENOMEM)
		return rc;
	if (rc != 0) /* not an object with readable keys: judged when built */
		d->has_default = true;
	return 0;
}

static int bundle_member(const char *key, size_t klen, const unsigned char *value, size_t vlen,
                         void *ctx)
{
	bundle_walk *w = ctx;
	if (klen == 11 && memcmp(key, "definitions", 11) == 0)
		return kft_bundle_members(value, vlen, index_definition, w);
	json_t *kinds = NULL;
	if (klen != 5 || memcmp(key, "kinds", 5) != 0)
		return 0;
	int rc = kft_bundle_decode(value, vlen, &kinds);
	if (rc == 0 && (!json_is_array(kinds) || json_array_extend(w->s->kinds_json, kinds) != 0))
		rc = KFT_EPARSE;
	json_decref(kinds);
	return rc;
}

/* Sorts the index by name; a name defined twice is an error, as in
 * add_definitions. */
static int sort_definitions(kft_schema *s, kft_error *err)
{
	s->by_name = malloc((s->nlazy ? s->nlazy : 1) * sizeof(*s->by_name));
	if (!s->by_name)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nlazy; i++)
		s->by_name[i] = &s->lazy[i];
	qsort(s->by_name, s->nlazy, sizeof(*s->by_name), by_name_cmp);
	for (size_t i = 1; i < s->nlazy; i++)
		if (strcmp(s->by_name[i - 1]->name, s->by_name[i]->name) == 0)
			return kft_error_set(err, KFT_EINVAL, "%s: definition %s is defined twice",
			                     s->by_name[i]->file, s->by_name[i]->name);
	return 0;
}

int kft_schema_load_bundle(const struct kft_bundle_file *files, size_t n, kft_schema **out,
                           kft_error *err)
{
	*out = NULL;
	kft_schema *s = schema_new(err);
	int rc = s ? 0 : KFT_ENOMEM;
	bundle_walk w = {.s = s};
	for (size_t i = 0; rc == 0 && i < n; i++) {
		w.file = files[i].name;
		rc = kft_bundle_members(files[i].data, files[i].len, bundle_member, &w);
		if (rc != 0)
			rc = rc == KFT_ENOMEM ? kft_error_set(err, KFT_ENOMEM, "out of memory")
			                      : kft_error_set(err, KFT_EINVAL,
			                                      "%s: embedded tree is malformed",
			                                      files[i].name);
	}
	if (rc == 0 && !s->lazy && !(s->lazy = calloc(1, sizeof(*s->lazy))))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory"); /* lazy, and empty */
	if (rc == 0)
		rc = sort_definitions(s, err);
	if (rc == 0)
		rc = index_kinds(s, err);
	if (rc != 0) {
		kft_schema_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* The built-in schema, from the bundle compiled in. The bundle's files come
 * as trees already (bundle.h), checked at build time for what parse_file
 * and compile_patterns check. */
static void load_builtin(void)
{
	kft_schema_load_bundle(kft_api_bundle, kft_api_bundle_count, &builtin, &builtin_err);
}

const kft_schema *kft_schema_builtin(kft_error *err)
{
	pthread_once(&builtin_once, load_builtin);
	if (!builtin && err)
		*err = builtin_err;
	return builtin;
}

const kft_kind_info *kft_schema_find_kind(const kft_schema *s, const char *api_version,
                                          const char *kind)
{
	if (!api_version || !kind)
		return NULL;
	for (size_t i = 0; i < s->nkinds; i++) {
		const kft_kind_info *k = &s->kinds[i];
		size_t glen = strlen(k->group);
		if (strcmp(k->kind, kind) == 0 && strncmp(api_version, k->group, glen) == 0 &&
		    api_version[glen] == '/' && strcmp(api_version + glen + 1, k->version) == 0)
			return k;
	}
	return NULL;
}

size_t kft_schema_kind_count(const kft_schema *s)
{
	return s->nkinds;
}

const kft_kind_info *kft_schema_kind_at(const kft_schema *s, size_t i)
{
	return i < s->nkinds ? &s->kinds[i] : NULL;
}

const json_t *kft_schema_definition(const kft_schema *s, const char *name)
{
	return def_get(s, name);
}

/* ---- defaulting ------------------------------------------------------- */

static void default_node(const kft_schema *s, const json_t *schema, json_t *value, int depth);

/* The default the view of node would give (its first layer's "default"),
 * or NULL; NULL too when its $ref chain does not resolve within MAX_LAYERS,
 * as view_of would refuse it. A built-in definition is built only when it
 * has a default of its own: an absent field of a pod template need not
 * build Affinity or SecurityContext to learn they give none. */
static const json_t *chain_default(const kft_schema *s, const json_t *node)
{
	const json_t *found = NULL;
	const char *ref = NULL;
	for (int n = 0; n < MAX_LAYERS; n++) {
		if (node) { /* a layer at hand */
			if (!found)
				found = json_object_get(node, "default");
			ref = json_string_value(json_object_get(node, "$ref"));
		}
		if (!ref)
			return found; /* the chain ends here */
		lazy_def *d = s->lazy ? lazy_find(s, ref) : NULL;
		node = NULL;
		if (s->lazy && !d)
			return NULL; /* unresolved: view_of refuses the chain */
		if (!s->lazy || (!found && d->has_default)) {
			if (!(node = def_get(s, ref)))
				return NULL;
		} else {
			ref = d->ref; /* its keys are known: on by name */
		}
	}
	return NULL; /* more layers than a view holds */
}

static void default_object(const kft_schema *s, const view *v, json_t *obj, int depth)
{
	const json_t *props = view_get(v, "properties");
	const char *key;
	json_t *x;
	void *tmp;
	/* Nulls of non-nullable fields are pruned first, so they get defaults. */
	json_object_foreach_safe(obj, tmp, key, x)
	{
		const json_t *ps = json_object_get(props, key);
		if (json_is_null(x) && ps) {
			view pv;
			if (view_of(s, ps, &pv) == 0 && !view_true(&pv, "nullable"))
				json_object_del(obj, key);
		}
	}
	json_object_foreach((json_t *)props, key, x)
	{
		const json_t *def = json_object_get(obj, key) ? NULL : chain_default(s, x);
		if (def)
			json_object_set_new(obj, key, json_deep_copy(def));
	}
	const json_t *addl = view_get(v, "additionalProperties");
	json_object_foreach(obj, key, x)
	{
		const json_t *ps = json_object_get(props, key);
		if (ps)
			default_node(s, ps, x, depth + 1);
		else if (json_is_object(addl))
			default_node(s, addl, x, depth + 1);
	}
}

static void default_node(const kft_schema *s, const json_t *schema, json_t *value, int depth)
{
	view v;
	if (depth > MAX_DEPTH || view_of(s, schema, &v) != 0)
		return;
	if (json_is_object(value)) {
		default_object(s, &v, value, depth);
	} else if (json_is_array(value)) {
		const json_t *items = view_get(&v, "items");
		size_t i;
		json_t *x;
		if (items)
			json_array_foreach(value, i, x) default_node(s, items, x, depth + 1);
	}
}

void kft_schema_default(const kft_schema *s, const kft_kind_info *kind, json_t *obj)
{
	default_node(s, def_get(s, kind->definition), obj, 0);
}

/* ---- validation ------------------------------------------------------- */

/* One walk over an object: either the structural checks or (rules set) only
 * the CEL rules, which the API server evaluates in a pass of its own once
 * the structural checks found nothing blocking. */
typedef struct vctx {
	const kft_schema *s;
	kft_field_errors *errs;
	kft_strbuf path;
	int rules;
} vctx;

static const char *path_of(vctx *c)
{
	return kft_strbuf_str(&c->path);
}

static void path_push_key(vctx *c, const char *key)
{
	if (c->path.len)
		kft_strbuf_putc(&c->path, '.');
	kft_strbuf_puts(&c->path, key);
}

static void path_pop(vctx *c, size_t len)
{
	c->path.len = len;
	if (c->path.buf)
		c->path.buf[len] = '\0';
}

/* An error in kube-openapi's wording ("PATH in body ..."), converted to a
 * field error the way apiextensions-apiserver converts it. */
static void body_error(vctx *c, kft_field_error_type type, const json_t *value, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static void body_error(vctx *c, kft_field_error_type type, const json_t *value, const char *fmt,
                       ...)
{
	kft_strbuf d;
	kft_strbuf_init(&d); /* Status is validated by the status subresource, whose messages name
	                      * paths from inside status. */
	const char *bp = path_of(c);
	if (strncmp(bp, "status.", 7) == 0)
		bp += 7;
	kft_strbuf_printf(&d, "%s in body ", bp);
	char *tail = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&tail, fmt, ap) < 0)
		tail = NULL;
	va_end(ap);
	if (tail)
		kft_strbuf_puts(&d, tail);
	free(tail);
	char *detail = kft_strbuf_detach(&d);
	char *rendered = value ? kft_render_value(value) : NULL;
	kft_field_errors_add_rendered(c->errs, type, path_of(c), rendered, detail);
	free(rendered);
	free(detail);
}

static int is_integral(const json_t *v)
{
	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	double d = json_real_value(v);
	return d == (double)(long long)d && d > -9.3e18 && d < 9.3e18;
}

/* Returns 1 when the value has the schema's type (or the schema has none). */
static int type_matches(const view *v, const json_t *value)
{
	if (view_true(v, "x-kubernetes-int-or-string"))
		return json_is_string(value) || is_integral(value);
	const char *type = view_str(v, "type");
	if (!type)
		return 1;
	if (strcmp(type, "object") == 0)
		return json_is_object(value);
	if (strcmp(type, "array") == 0)
		return json_is_array(value);
	if (strcmp(type, "string") == 0)
		return json_is_string(value);
	if (strcmp(type, "integer") == 0)
		return is_integral(value);
	if (strcmp(type, "number") == 0)
		return json_is_number(value);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(value);
	return 0;
}

static const regex_t *find_regex(const kft_schema *s, const char *pattern)
{
	/* The cache is the one mutable part of a schema; regex_for locks it. */
	const struct regex_entry *e = regex_for((kft_schema *)s, pattern);
	return e && e->ok ? &e->re : NULL;
}

/* Whether t is a whole "YYYY-MM-DD" date with a real day of its month (Go's
 * time.Parse with layout "2006-01-02", which kube-openapi's IsDate uses). */
static int is_full_date(const char *t, size_t n)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (n != 10 || t[4] != '-' || t[7] != '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && !isdigit((unsigned char)t[i]))
			return 0;
	int y = atoi(t), m = (t[5] - '0') * 10 + (t[6] - '0'), d = (t[8] - '0') * 10 + (t[9] - '0');
	if (m < 1 || m > 12 || d < 1)
		return 0;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return d <= days[m - 1] + (m == 2 && leap);
}

/* "z", or "+hh:mm" / "-hh:mm" (digits only), and nothing after. */
static int is_zone(const char *p)
{
	if (*p == 'z')
		return p[1] == '\0';
	return (*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
	       isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
	       isdigit((unsigned char)p[5]) && p[6] == '\0';
}

/* kube-openapi's IsDateTime (strfmt), which the API server applies to
 * format: date-time: the lower-cased text split at 't'; the first piece a
 * full date; the second "hh:mm:ss", then optionally any one character and
 * one or more digits (its pattern's unescaped '.', so "14:00:00,5" passes),
 * then "z" or a numeric offset; hours at most 23, minutes and seconds at
 * most 59. A third piece after another 't' is ignored, as there. */
static int is_rfc3339(const char *t)
{
	size_t len = strlen(t);
	if (len < 4 || len > 256)
		return 0;
	char low[257];
	for (size_t i = 0; i <= len; i++)
		low[i] = (char)tolower((unsigned char)t[i]);
	char *t1 = strchr(low, 't');
	if (!t1 || !is_full_date(low, (size_t)(t1 - low)))
		return 0;
	char *p = t1 + 1, *t2 = strchr(p, 't');
	if (t2)
		*t2 = '\0';
	for (int i = 0; i < 8; i++)
		if (i == 2 || i == 5 ? p[i] != ':' : !isdigit((unsigned char)p[i]))
			return 0;
	if (strncmp(p, "23", 2) > 0 || strncmp(p + 3, "59", 2) > 0 || strncmp(p + 6, "59", 2) > 0)
		return 0;
	p += 8;
	if (is_zone(p))
		return 1;
	/* "any character": one UTF-8 sequence, never a newline */
	if (!*p || *p == '\n')
		return 0;
	p++;
	while ((*p & 0xC0) == 0x80)
		p++;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	return is_zone(p);
}

static void check_enum(vctx *c, const view *v, const json_t *value)
{
	const json_t *en = view_get(v, "enum");
	if (!json_is_array(en))
		return;
	size_t i;
	const json_t *x;
	json_array_foreach(en, i, x) if (json_equal((json_t *)x, (json_t *)value)) return;
	kft_strbuf d;
	kft_strbuf_init(&d);
	kft_strbuf_puts(&d, "supported values: ");
	json_array_foreach(en, i, x)
	{
		char *q = json_is_string(x) ? kft_go_quote(json_string_value(x))
		                            : json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
		char *qq = (q && !json_is_string(x)) ? kft_go_quote(q) : NULL;
		kft_strbuf_printf(&d, "%s%s", i ? ", " : "", qq ? qq : q ? q : "");
		free(q);
		free(qq);
	}
	char *detail = kft_strbuf_detach(&d);
	char *rendered = kft_render_value(value);
	kft_field_errors_add_rendered(c->errs, KFT_FIELD_NOT_SUPPORTED, path_of(c), rendered,
	                              detail);
	free(rendered);
	free(detail);
}

static void check_string(vctx *c, const view *v, const json_t *value)
{
	const char *str = json_string_value(value);
	if (!str)
		return;
	const json_t *maxl = view_get(v, "maxLength"), *minl = view_get(v, "minLength");
	size_t len = kft_utf8_length(str);
	if (json_is_integer(maxl) && (json_int_t)len > json_integer_value(maxl)) {
		json_int_t m = json_integer_value(maxl);
		kft_field_errors_add(c->errs, KFT_FIELD_TOO_LONG, path_of(c), NULL,
		                     "may not be more than %" JSON_INTEGER_FORMAT " %s", m,
		                     m == 1 ? "byte" : "bytes");
	}
	if (json_is_integer(minl) && (json_int_t)len < json_integer_value(minl))
		body_error(c, KFT_FIELD_INVALID, value,
		           "should be at least %" JSON_INTEGER_FORMAT " chars long",
		           json_integer_value(minl));
	const char *pattern = view_str(v, "pattern");
	const regex_t *re = pattern ? find_regex(c->s, pattern) : NULL;
	if (re && regexec(re, str, 0, NULL, 0) != 0)
		body_error(c, KFT_FIELD_INVALID, value, "should match '%s'", pattern);
	const char *format = view_str(v, "format");
	if ((v->time || (format && strcmp(format, "date-time") == 0)) && !is_rfc3339(str)) {
		char *q = kft_go_quote(str);
		body_error(c, KFT_FIELD_INVALID, value, "must be of type date-time: %s",
		           q ? q : "");
		free(q);
	}
}

static void check_number(vctx *c, const view *v, const json_t *value)
{
	double d = json_number_value(value);
	const json_t *min = view_get(v, "minimum"), *max = view_get(v, "maximum");
	int exmin = view_true(v, "exclusiveMinimum"), exmax = view_true(v, "exclusiveMaximum");
	char *b;
	if (min && (exmin ? d <= json_number_value(min) : d < json_number_value(min))) {
		b = kft_render_value(min);
		body_error(c, KFT_FIELD_INVALID, value, "should be greater than %s%s",
		           exmin ? "" : "or equal to ", b ? b : "");
		free(b);
	}
	if (max && (exmax ? d >= json_number_value(max) : d > json_number_value(max))) {
		b = kft_render_value(max);
		body_error(c, KFT_FIELD_INVALID, value, "should be less than %s%s",
		           exmax ? "" : "or equal to ", b ? b : "");
		free(b);
	}
	const char *format = view_str(v, "format");
	if (format && strcmp(format, "int32") == 0 && (d < -2147483648.0 || d > 2147483647.0))
		body_error(c, KFT_FIELD_INVALID, value, "must be of type int32");
}

static void validate_node(vctx *c, const json_t *schema, const json_t *value, const json_t *old,
                          int depth);

/* ---- list-type map and set: identity by canonical JSON ----------------- */

/* The members of a map-list item its keys name (absent ones left out), or
 * NULL when the item is not an object or a key name is not a string: such
 * an item equals nothing. Caller decrefs. */
static json_t *key_members(const json_t *item, const json_t *keys)
{
	if (!json_is_object(item))
		return NULL;
	json_t *kv = json_object();
	size_t k;
	const json_t *key;
	json_array_foreach(keys, k, key)
	{
		const char *name = json_string_value(key);
		json_t *x = name ? json_object_get(item, name) : NULL;
		if (!name) {
			json_decref(kv);
			return NULL;
		}
		if (x)
			json_object_set(kv, name, x);
	}
	return kv;
}

/* An item's identity in a list-type list, as text: for a map, its key
 * members; for a set (keys NULL), the whole item. Compact JSON with sorted
 * members, so equal values give equal text, as apiextensions-apiserver
 * compares the json.Marshal of compound items. NULL when the item has none
 * (key_members). Caller frees. */
static char *list_identity(const json_t *item, const json_t *keys)
{
	if (!keys)
		return json_dumps(item, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_t *kv = key_members(item, keys);
	char *text = kv ? json_dumps(kv, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(kv);
	return text;
}

/* The items of a list-type list by identity: each identity's first item
 * and how many items share it. One pass, so a list of n items costs n
 * lookups, not n * n comparisons. */
typedef struct list_index {
	kft_cache_map map;  /* identity -> list_seen */
	const json_t *keys; /* the map keys, NULL for a set */
} list_index;

typedef struct list_seen {
	const json_t *first;
	size_t count;
} list_seen;

static void list_index_free(list_index *ix)
{
	kft_cache_map_iter it;
	for (kft_cache_map_entry *e = kft_cache_map_first(&ix->map, &it); e;
	     e = kft_cache_map_next(&ix->map, &it))
		free(e->value);
	kft_cache_map_clear(&ix->map);
}

/* Counts item under its identity; returns its record (NULL for an item
 * without one, or out of memory). */
static list_seen *list_index_add(list_index *ix, const json_t *item)
{
	char *id = list_identity(item, ix->keys);
	int created = 0;
	kft_cache_map_entry *e = id ? kft_cache_map_upsert(&ix->map, id, &created) : NULL;
	free(id);
	if (!e || (created && !(e->value = calloc(1, sizeof(list_seen))))) {
		if (e)
			kft_cache_map_remove(&ix->map, e->key);
		return NULL;
	}
	list_seen *seen = e->value;
	if (!seen->count++)
		seen->first = item;
	return seen;
}

/* The old list's item with the same keys (the first, as a scan finds it),
 * or NULL. */
static const json_t *list_index_find(const list_index *ix, const json_t *item)
{
	char *id = list_identity(item, ix->keys);
	const list_seen *seen = id ? kft_cache_map_get(&ix->map, id) : NULL;
	free(id);
	return seen ? seen->first : NULL;
}

/* The list-type checks of one array: a Duplicate error at the second item
 * of each identity (upstream's listtype validation reports "the first
 * non-unique appearance", once however many follow), and for a map, each
 * item's counterpart in the old list for the transition rules. */
typedef struct list_check {
	int map;           /* x-kubernetes-list-type map, with keys */
	int set;           /* x-kubernetes-list-type set */
	list_index seen;   /* this list's items so far */
	list_index before; /* the old list's items (map, with an old list) */
} list_check;

static void list_check_init(list_check *lc, const view *v, const json_t *old)
{
	const char *type = view_str(v, "x-kubernetes-list-type");
	const json_t *keys = view_get(v, "x-kubernetes-list-map-keys");
	memset(lc, 0, sizeof(*lc));
	lc->map = type && strcmp(type, "map") == 0 && json_is_array(keys);
	lc->set = type && strcmp(type, "set") == 0;
	lc->seen.keys = lc->before.keys = lc->map ? keys : NULL;
	size_t i;
	const json_t *item;
	if (lc->map && json_is_array(old))
		json_array_foreach(old, i, item) list_index_add(&lc->before, item);
}

static void list_check_free(list_check *lc)
{
	list_index_free(&lc->seen);
	list_index_free(&lc->before);
}

/* Checks the item at the current path; returns its old counterpart. */
static const json_t *list_check_item(vctx *c, list_check *lc, const json_t *item)
{
	if (!c->rules && (lc->map || lc->set)) {
		const list_seen *seen = list_index_add(&lc->seen, item);
		if (seen && seen->count == 2) {
			json_t *shown = lc->map ? key_members(item, lc->seen.keys)
			                        : json_incref((json_t *)item);
			kft_field_errors_add(c->errs, KFT_FIELD_DUPLICATE, path_of(c), shown, NULL);
			json_decref(shown);
		}
	}
	return lc->map && lc->before.map.count ? list_index_find(&lc->before, item) : NULL;
}

static void validate_array(vctx *c, const view *v, const json_t *value, const json_t *old,
                           int depth)
{
	size_t n = json_array_size(value);
	const json_t *maxi = view_get(v, "maxItems"), *mini = view_get(v, "minItems");
	if (c->rules)
		maxi = mini = NULL;
	if (json_is_integer(maxi) && (json_int_t)n > json_integer_value(maxi)) {
		json_int_t m = json_integer_value(maxi);
		json_t *count = json_integer((json_int_t)n);
		kft_field_errors_add(c->errs, KFT_FIELD_TOO_MANY, path_of(c), count,
		                     "must have at most %" JSON_INTEGER_FORMAT " %s", m,
		                     m == 1 ? "item" : "items");
		json_decref(count);
	}
	if (json_is_integer(mini) && (json_int_t)n < json_integer_value(mini)) {
		json_t *count = json_integer((json_int_t)n);
		body_error(c, KFT_FIELD_INVALID, count,
		           "should have at least %" JSON_INTEGER_FORMAT " items",
		           json_integer_value(mini));
		json_decref(count);
	}
	const json_t *items = view_get(v, "items");
	list_check lc;
	list_check_init(&lc, v, old);
	size_t base = c->path.len;
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(value, i);
		kft_strbuf_printf(&c->path, "[%zu]", i);
		const json_t *old_item = list_check_item(c, &lc, item);
		if (items)
			validate_node(c, items, item, old_item, depth + 1);
		path_pop(c, base);
	}
	list_check_free(&lc);
}

static void validate_object(vctx *c, const view *v, const json_t *value, const json_t *old,
                            int depth)
{
	const json_t *props = view_get(v, "properties");
	const json_t *addl = view_get(v, "additionalProperties");
	size_t base = c->path.len;
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)value, key, x)
	{
		const json_t *ps = json_object_get(props, key);
		const json_t *old_x = json_is_object(old) ? json_object_get(old, key) : NULL;
		/* The root's metadata is an ObjectMeta, which the API server checks
		 * with its own rules (kftrainer/objectmeta.h), not the schema. */
		if (depth == 0 && strcmp(key, "metadata") == 0)
			continue;
		if (ps) {
			path_push_key(c, key);
			view pv;
			if (!(json_is_null(x) && view_of(c->s, ps, &pv) == 0 &&
			      !view_true(&pv, "nullable")))
				validate_node(c, ps, x, old_x, depth + 1);
		} else if (json_is_object(addl)) {
			path_push_key(c, key); /* kube-openapi names map values "path.key" */
			validate_node(c, addl, x, old_x, depth + 1);
		}
		path_pop(c, base);
	}
	if (c->rules)
		return;
	const json_t *req = view_get(v, "required");
	size_t i;
	json_array_foreach(req, i, x)
	{
		const char *name = json_string_value(x);
		const json_t *got = name ? json_object_get(value, name) : NULL;
		if (name && (!got || json_is_null(got))) {
			path_push_key(c, name);
			kft_field_errors_add(c->errs, KFT_FIELD_REQUIRED, path_of(c), NULL, NULL);
			path_pop(c, base);
		}
	}
	const json_t *minp = view_get(v, "minProperties"), *maxp = view_get(v, "maxProperties");
	json_t *count = json_integer((json_int_t)json_object_size(value));
	if (json_is_integer(minp) && json_integer_value(count) < json_integer_value(minp))
		body_error(c, KFT_FIELD_INVALID, count,
		           "should have at least %" JSON_INTEGER_FORMAT " properties",
		           json_integer_value(minp));
	if (json_is_integer(maxp) && json_integer_value(count) > json_integer_value(maxp))
		kft_field_errors_add(c->errs, KFT_FIELD_TOO_MANY, path_of(c), count,
		                     "must have at most %" JSON_INTEGER_FORMAT " items",
		                     json_integer_value(maxp));
	json_decref(count);
}

/* A failed rule as apiextensions-apiserver reports it: the value itself for
 * scalars and no value for objects and lists; an evaluation error names
 * the schema's type and the rule's message (or text). */
static void rule_error(vctx *c, const view *v, const json_t *value, int outcome, const char *text,
                       const char *msg)
{
	const char *what = msg && *msg ? msg : text;
	if (outcome == KFT_CEL_NO_OVERLOAD) {
		const char *type = view_str(v, "type");
		json_t *t = json_string(type ? type : "");
		kft_field_errors_add(c->errs, KFT_FIELD_INVALID, path_of(c), t,
		                     "'no such overload': call arguments did not match a "
		                     "supported operator, function or macro signature for rule: %s",
		                     what);
		json_decref(t);
		return;
	}
	const json_t *shown = json_is_object(value) || json_is_array(value) ? NULL : value;
	if (msg && *msg)
		kft_field_errors_add(c->errs, KFT_FIELD_INVALID, path_of(c), shown, "%s", msg);
	else
		kft_field_errors_add(c->errs, KFT_FIELD_INVALID, path_of(c), shown,
		                     "failed rule: %s", text);
}

static void validate_rules(vctx *c, const view *v, const json_t *value, const json_t *old)
{
	for (int l = 0; l < v->n; l++) {
		const json_t *rules = json_object_get(v->layer[l], "x-kubernetes-validations");
		size_t i;
		const json_t *r;
		json_array_foreach(rules, i, r)
		{
			const char *text = json_string_value(json_object_get(r, "rule"));
			const char *msg = json_string_value(json_object_get(r, "message"));
			const kft_cel_rule *impl = text ? kft_cel_rule_find(text) : NULL;
			if (!impl) {
				kft_field_errors_add(c->errs, KFT_FIELD_INTERNAL, path_of(c), NULL,
				                     "no implementation for validation rule %s",
				                     text ? text : "(missing)");
				continue;
			}
			if (impl->transition && !old)
				continue;
			int ok = impl->check(value, old);
			if (ok == 1)
				continue;
			rule_error(c, v, value, ok, text, msg);
		}
	}
}

/* A type error in kube-openapi's words. A fraction where an integer is
 * wanted, and a number where int-or-string is wanted, draw the extra lines
 * its format and anyOf checkers add. */
static void type_error(vctx *c, const view *v, const json_t *value)
{
	const char *got = kft_json_type_name(value);
	const char *want = view_str(v, "type");
	const char *format = view_str(v, "format");
	json_t *empty = json_string("");
	if (view_true(v, "x-kubernetes-int-or-string")) {
		json_t *t = json_string(got);
		body_error(c, KFT_FIELD_TYPE_INVALID, t, "must be of type integer,string: \"%s\"",
		           got);
		kft_field_errors_add(c->errs, KFT_FIELD_INVALID, "<nil>", empty,
		                     "\"%s\" must validate at least one schema (anyOf)",
		                     path_of(c));
		if (json_is_number(value)) {
			body_error(c, KFT_FIELD_TYPE_INVALID, t, "must be of type integer: \"%s\"",
			           got);
			kft_field_errors_add(
			        c->errs, KFT_FIELD_INVALID, "<nil>", empty,
			        "Checked value must be of type integer (default format) "
			        "in %s",
			        path_of(c));
		}
		json_decref(t);
	} else if (want && strcmp(want, "integer") == 0 && json_is_real(value)) {
		json_t *t = json_string("float64");
		body_error(c, KFT_FIELD_TYPE_INVALID, t, "must be of type %s: \"float64\"",
		           format ? format : "integer");
		if (format)
			kft_field_errors_add(c->errs, KFT_FIELD_INVALID, "<nil>", empty,
			                     "Checked value must be of type integer with format %s "
			                     "in %s",
			                     format, path_of(c));
		else
			kft_field_errors_add(
			        c->errs, KFT_FIELD_INVALID, "<nil>", empty,
			        "Checked value must be of type integer (default format) "
			        "in %s",
			        path_of(c));
		json_decref(t);
	} else {
		json_t *t = json_string(got);
		body_error(c, KFT_FIELD_TYPE_INVALID, t, "must be of type %s: \"%s\"",
		           want ? want : "object", got);
		json_decref(t);
	}
	json_decref(empty);
}

static void validate_node(vctx *c, const json_t *schema, const json_t *value, const json_t *old,
                          int depth)
{
	view v;
	if (depth > MAX_DEPTH || view_of(c->s, schema, &v) != 0) {
		kft_field_errors_add(c->errs, KFT_FIELD_INTERNAL, path_of(c), NULL,
		                     "schema reference cannot be resolved");
		return;
	}
	if (json_is_null(value) && view_true(&v, "nullable"))
		return;
	if (!type_matches(&v, value)) {
		if (!c->rules)
			type_error(c, &v, value);
		return;
	}
	if (!c->rules) {
		check_enum(c, &v, value);
		if (json_is_string(value))
			check_string(c, &v, value);
		else if (json_is_number(value))
			check_number(c, &v, value);
	}
	if (json_is_array(value))
		validate_array(c, &v, value, old, depth);
	else if (json_is_object(value))
		validate_object(c, &v, value, old, depth);
	if (c->rules)
		validate_rules(c, &v, value, old);
}

static void walk(const kft_schema *s, const kft_kind_info *kind, const json_t *obj,
                 const json_t *old_obj, kft_field_errors *errs, int rules)
{
	vctx c = {.s = s, .errs = errs, .rules = rules};
	kft_strbuf_init(&c.path);
	validate_node(&c, def_get(s, kind->definition), obj, old_obj, 0);
	kft_strbuf_free(&c.path);
}

void kft_schema_validate(const kft_schema *s, const kft_kind_info *kind, const json_t *obj,
                         const json_t *old_obj, kft_field_errors *errs)
{
	walk(s, kind, obj, old_obj, errs, 0);
}

void kft_schema_validate_rules(const kft_schema *s, const kft_kind_info *kind, const json_t *obj,
                               const json_t *old_obj, kft_field_errors *errs)
{
	walk(s, kind, obj, old_obj, errs, 1);
}

/* ---- strict decoding: unknown fields ------------------------------------- */

/* Mirrors the API server's pruning: a key the schema has no place for is an
 * unknown field, also where a list or scalar was expected (a mapping given
 * for a list reports each of its keys) and in items of a list whose schema
 * names no item type. The root's metadata is ObjectMeta's business. */
static void unknown_walk(vctx *c, const json_t *schema, const json_t *value, int depth)
{
	view v = {.n = 0};
	if (depth > MAX_DEPTH || (schema && view_of(c->s, schema, &v) != 0))
		return;
	if (view_true(&v, "x-kubernetes-preserve-unknown-fields") && !view_get(&v, "properties"))
		return;
	size_t base = c->path.len;
	if (json_is_array(value)) {
		const json_t *items = view_get(&v, "items");
		size_t i;
		const json_t *x;
		json_array_foreach(value, i, x)
		{
			kft_strbuf_printf(&c->path, "[%zu]", i);
			unknown_walk(c, items, x, depth + 1);
			path_pop(c, base);
		}
		return;
	}
	if (!json_is_object(value))
		return;
	const json_t *props = view_get(&v, "properties");
	const json_t *addl = view_get(&v, "additionalProperties");
	int preserve = view_true(&v, "x-kubernetes-preserve-unknown-fields");
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)value, key, x)
	{
		if (depth == 0 && strcmp(key, "metadata") == 0)
			continue;
		const json_t *ps = json_object_get(props, key);
		path_push_key(c, key);
		if (ps)
			unknown_walk(c, ps, x, depth + 1);
		else if (json_is_object(addl))
			unknown_walk(c, addl, x, depth + 1);
		else if (!preserve)
			kft_field_errors_add(c->errs, KFT_FIELD_UNKNOWN, path_of(c), NULL, NULL);
		path_pop(c, base);
	}
}

size_t kft_schema_check_unknown(const kft_schema *s, const kft_kind_info *kind, const json_t *obj,
                                kft_field_errors *errs)
{
	size_t before = errs->count;
	vctx c = {.s = s, .errs = errs};
	kft_strbuf_init(&c.path);
	unknown_walk(&c, def_get(s, kind->definition), obj, 0);
	kft_strbuf_free(&c.path);
	return errs->count - before;
}

/* ---- expansion (CRDs) -------------------------------------------------- */

static json_t *expand_node(const kft_schema *s, const json_t *node, int depth, kft_error *err);

static json_t *expand_value(const kft_schema *s, const char *key, const json_t *x, int depth,
                            kft_error *err)
{
	if (strcmp(key, "properties") == 0 && json_is_object(x)) {
		json_t *out = json_object();
		const char *k;
		const json_t *p;
		json_object_foreach((json_t *)x, k, p)
		{
			json_t *e = expand_node(s, p, depth + 1, err);
			if (!e) {
				json_decref(out);
				return NULL;
			}
			json_object_set_new(out, k, e);
		}
		return out;
	}
	if ((strcmp(key, "items") == 0 || strcmp(key, "additionalProperties") == 0) &&
	    json_is_object(x))
		return expand_node(s, x, depth + 1, err);
	return json_deep_copy(x);
}

static json_t *expand_node(const kft_schema *s, const json_t *node, int depth, kft_error *err)
{
	if (depth > MAX_DEPTH) {
		kft_error_set(err, KFT_ELIMIT, "schema too deep or cyclic");
		return NULL;
	}
	json_t *out;
	const char *ref = json_string_value(json_object_get(node, "$ref"));
	if (ref) {
		const json_t *def = def_get(s, ref);
		if (!def) {
			kft_error_set(err, KFT_ENOTFOUND, "$ref to undefined definition %s", ref);
			return NULL;
		}
		out = expand_node(s, def, depth + 1, err);
	} else {
		out = json_object();
	}
	if (!out)
		return NULL;
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)node, key, x)
	{
		if (strcmp(key, "$ref") == 0)
			continue;
		json_t *e = expand_value(s, key, x, depth, err);
		if (!e) {
			json_decref(out);
			return NULL;
		}
		json_t *prev = json_object_get(out, key);
		if (strcmp(key, "x-kubernetes-validations") == 0 && json_is_array(prev))
			json_array_extend(prev, e), json_decref(e);
		else
			json_object_set_new(out, key, e);
	}
	return out;
}

json_t *kft_schema_expand(const kft_schema *s, const char *name, kft_error *err)
{
	const json_t *def = def_get(s, name);
	if (!def) {
		kft_error_set(err, KFT_ENOTFOUND, "no definition named %s", name);
		return NULL;
	}
	return expand_node(s, def, 0, err);
}

static void copy_if(json_t *dst, const char *dkey, const json_t *src, const char *skey)
{
	json_t *x = json_object_get(src, skey);
	if (x)
		json_object_set_new(dst, dkey, json_deep_copy(x));
}

json_t *kft_schema_crd(const kft_schema *s, const kft_kind_info *k, kft_error *err)
{
	json_t *schema = kft_schema_expand(s, k->definition, err);
	if (!schema)
		return NULL;
	char name[512];
	snprintf(name, sizeof(name), "%s.%s", k->plural, k->group);
	json_t *names = json_pack("{s:s, s:s, s:s, s:s}", "kind", k->kind, "listKind", k->list_kind,
	                          "plural", k->plural, "singular", k->singular);
	copy_if(names, "shortNames", k->entry, "shortNames");
	copy_if(names, "categories", k->entry, "categories");
	json_t *version =
	        json_pack("{s:s, s:b, s:b}", "name", k->version, "served", 1, "storage", 1);
	copy_if(version, "additionalPrinterColumns", k->entry, "additionalPrinterColumns");
	json_object_set_new(version, "schema", json_pack("{s:o}", "openAPIV3Schema", schema));
	copy_if(version, "subresources", k->entry, "subresources");
	json_t *crd =
	        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:o, s:s, s:[o]}}", "apiVersion",
	                  "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
	                  "name", name, "spec", "group", k->group, "names", names, "scope",
	                  k->namespaced ? "Namespaced" : "Cluster", "versions", version);
	if (!crd)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return crd;
}

static void collect_rules(const json_t *node, json_t *out, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	if (json_is_array(node)) {
		size_t i;
		const json_t *x;
		json_array_foreach(node, i, x) collect_rules(x, out, depth + 1);
		return;
	}
	if (!json_is_object(node))
		return;
	const json_t *rules = json_object_get(node, "x-kubernetes-validations");
	size_t i;
	const json_t *r;
	json_array_foreach(rules, i, r)
	{
		const char *text = json_string_value(json_object_get(r, "rule"));
		if (!text || !kft_cel_rule_find(text))
			json_array_append_new(out, json_string(text ? text : "(missing rule)"));
	}
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)node, key, x)
	{
		if (strcmp(key, "default") != 0 && strcmp(key, "enum") != 0)
			collect_rules(x, out, depth + 1);
	}
}

json_t *kft_schema_unimplemented_rules(const kft_schema *s)
{
	json_t *out = json_array();
	if (!s->lazy)
		collect_rules(s->definitions, out, 0);
	for (size_t i = 0; i < s->nlazy; i++)
		collect_rules(lazy_tree(s, &s->lazy[i]), out, 1);
	return out;
}
