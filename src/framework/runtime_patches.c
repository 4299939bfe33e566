/*
 * runtime_patches.c - a TrainJob's spec.runtimePatches merged into its
 * runtime's JobSet template, the way upstream v2.3.0 does it.
 *
 * Each patch goes through two steps, both of which Go performs implicitly.
 *
 * 1. Reduce the patch to its typed shape. Upstream decodes the patch into
 *    Go structs (JobSetSpecPatch ... PodSpecPatch, ContainerPatch) and
 *    encodes it again before merging. So fields those types lack vanish;
 *    empty lists and maps vanish (omitempty); a few zero values vanish (an
 *    env var's empty value, a mount's readOnly: false); and a missing
 *    required string comes back as "". The `sanitize_*` functions walk a
 *    table of the patch types and do the same. A value of the wrong JSON
 *    type is refused with its path, where Go's decoder would have failed.
 *    Core/v1 values inside (volume sources, affinity, security contexts,
 *    tolerations) are taken as they are, minus nulls and "$" directives.
 *
 * 2. Apply the reduced patch as a Kubernetes strategic merge patch against
 *    the JobSetSpec schema (apimachinery strategicpatch, IgnoreUnmatchedNulls),
 *    walking the same table: each field of the patch types carries its Go
 *    patchStrategy / patchMergeKey tags beside its encoding.
 *    Objects merge key by key. A list whose Go field is tagged
 *    patchStrategy=merge merges by its patchMergeKey, or as a set when its
 *    items are scalars. Every other list is replaced. The merged list is
 *    ordered as strategicpatch orders it: the items the patch names come in
 *    the patch's order, and each untouched original item is put back just
 *    before the first patched item it preceded in the original.
 *
 * Afterwards the replicated jobs go back to the runtime's order with a
 * stable sort on each name's original position. A name the runtime lacks
 * counts as position 0, as in upstream's sort.
 *
 * One difference is known: when a scalar set (metadata finalizers) already
 * repeats a value, strategicpatch's in-place dedupe can write through a Go
 * slice it shares with the original list and so shuffle the order it then
 * sorts by. We keep the first of each value and the documented order.
 */
#include "framework/runtime_patches.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/decode.h"

/* ---- error paths ---------------------------------------------------------- */

/* The field path an error names, grown and shrunk as the walk descends. */
typedef struct path {
	char buf[512];
	size_t len;
} path;

static size_t path_push(path *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static size_t path_push(path *p, const char *fmt, ...)
{
	size_t old = p->len;
	if (old + 1 >= sizeof(p->buf))
		return old;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(p->buf + old, sizeof(p->buf) - old, fmt, ap);
	va_end(ap);
	if (n > 0)
		p->len = old + (size_t)n < sizeof(p->buf) ? old + (size_t)n : sizeof(p->buf) - 1;
	return old;
}

static void path_pop(path *p, size_t old)
{
	p->len = old;
	p->buf[old] = '\0';
}

static int fail(kft_error *err, int code, const path *p, const char *what)
{
	return kft_error_set(err, code, "%s: %s", p->buf, what);
}

static int oom(kft_error *err)
{
	return kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- JSON values as Go's encoding/json sees them ---------------------------- */

/* Go decodes JSON into interface{} values of these kinds: every number is a
 * float64 and both booleans are one type, which is what the merge compares. */
typedef enum go_kind { GO_NULL, GO_BOOL, GO_NUMBER, GO_STRING, GO_ARRAY, GO_OBJECT } go_kind;

static go_kind kind_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return GO_OBJECT;
	case JSON_ARRAY: return GO_ARRAY;
	case JSON_STRING: return GO_STRING;
	case JSON_INTEGER:
	case JSON_REAL: return GO_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE: return GO_BOOL;
	default: return GO_NULL;
	}
}

static int go_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal((json_t *)a, (json_t *)b);
}

static int core_copy(const json_t *v, int depth, path *p, kft_error *err, json_t **out);

static int copy_members(json_t *dst, const json_t *src, int depth, path *p, kft_error *err)
{
	const char *k;
	json_t *x;
	json_object_foreach((json_t *)src, k, x)
	{
		if (json_is_null(x) || k[0] == '$')
			continue;
		json_t *c;
		int rc = core_copy(x, depth + 1, p, err, &c);
		if (rc != 0)
			return rc;
		if (json_object_set_new(dst, k, c) != 0)
			return oom(err);
	}
	return 0;
}

static int copy_items(json_t *dst, const json_t *src, int depth, path *p, kft_error *err)
{
	size_t i;
	json_t *x;
	json_array_foreach(src, i, x)
	{
		if (json_is_null(x))
			continue;
		json_t *c;
		int rc = core_copy(x, depth + 1, p, err, &c);
		if (rc != 0)
			return rc;
		if (json_array_append_new(dst, c) != 0)
			return oom(err);
	}
	return 0;
}

/* *out = a deep copy of v without null members, null items or "$" directive
 * keys: what survives Go's typed decoding of a core/v1 value. */
static int core_copy(const json_t *v, int depth, path *p, kft_error *err, json_t **out)
{
	*out = NULL;
	if (depth > KFT_DECODE_MAX_DEPTH)
		return fail(err, KFT_ELIMIT, p, "nested too deeply");
	if (!json_is_object(v) && !json_is_array(v)) {
		*out = json_deep_copy(v);
		return *out ? 0 : oom(err);
	}
	json_t *c = json_is_object(v) ? json_object() : json_array();
	if (!c)
		return oom(err);
	int rc = json_is_object(v) ? copy_members(c, v, depth, p, err)
	                           : copy_items(c, v, depth, p, err);
	if (rc != 0) {
		json_decref(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* ---- step 1: the patch in its typed shape ---------------------------------- */

/* How a Go field of the patch types encodes. */
typedef enum shape_kind {
	SH_STR,         /* string: always encoded, "" when absent */
	SH_STR_OMIT,    /* string,omitempty: dropped when "" */
	SH_STR_PTR,     /* *string: kept when present, even "" */
	SH_INT_PTR,     /* *int64 */
	SH_BOOL_OMIT,   /* bool,omitempty: dropped when false */
	SH_STR_MAP,     /* map[string]string,omitempty */
	SH_STR_LIST,    /* []string,omitempty */
	SH_STRUCT,      /* *struct: kept when present, even {} */
	SH_STRUCT_LIST, /* []struct,omitempty */
	SH_CORE,        /* *core/v1 struct, taken as it is */
	SH_CORE_LIST,   /* []core/v1 struct,omitempty */
	SH_REST,        /* every member not listed, taken as core/v1 values */
} shape_kind;

/* How a list merges in step 2: Go's patchStrategy / patchMergeKey tags on
 * the target type (JobSetSpec down to a container). Unmarked lists are
 * replaced; objects always merge key by key. */
typedef enum patch_strategy { PATCH_REPLACE, PATCH_MERGE } patch_strategy;

/* One Go field of the patch types: its encoding (step 1) and, for lists,
 * its merge strategy (step 2), so both steps walk this one table. */
typedef struct shape {
	const char *name;
	shape_kind kind;
	const struct shape *sub; /* SH_STRUCT: its fields; SH_STRUCT_LIST: its items' */
	patch_strategy patch;    /* lists: PATCH_MERGE is patchStrategy=merge */
	const char *merge_key;   /* PATCH_MERGE on a list of structs: patchMergeKey */
	int not_omitempty;       /* the target's list encodes even when empty (it merges) */
} shape;

/* A list of structs tagged patchStrategy=merge, patchMergeKey=key. */
#define KEYED(key) .patch = PATCH_MERGE, .merge_key = key

/* metav1.ObjectMeta as the CRD's embedded metadata schema keeps it. */
static const shape meta_shape[] = {
        {.name = "name", .kind = SH_STR_OMIT},
        {.name = "namespace", .kind = SH_STR_OMIT},
        {.name = "labels", .kind = SH_STR_MAP},
        {.name = "annotations", .kind = SH_STR_MAP},
        {.name = "finalizers", .kind = SH_STR_LIST, .patch = PATCH_MERGE},
        {.name = NULL},
};

static const shape env_shape[] = {
        {.name = "name", .kind = SH_STR},
        {.name = "value", .kind = SH_STR_OMIT},
        {.name = "valueFrom", .kind = SH_CORE},
        {.name = NULL},
};

static const shape mount_shape[] = {
        {.name = "name", .kind = SH_STR},
        {.name = "readOnly", .kind = SH_BOOL_OMIT},
        {.name = "recursiveReadOnly", .kind = SH_STR_PTR},
        {.name = "mountPath", .kind = SH_STR},
        {.name = "subPath", .kind = SH_STR_OMIT},
        {.name = "mountPropagation", .kind = SH_STR_PTR},
        {.name = "subPathExpr", .kind = SH_STR_OMIT},
        {.name = NULL},
};

static const shape container_patch_shape[] = {
        {.name = "name", .kind = SH_STR_OMIT},
        {.name = "env", .kind = SH_STRUCT_LIST, .sub = env_shape, KEYED("name")},
        {.name = "volumeMounts", .kind = SH_STRUCT_LIST, .sub = mount_shape, KEYED("mountPath")},
        {.name = "securityContext", .kind = SH_CORE},
        {.name = NULL},
};

static const shape volume_shape[] = {
        {.name = "name", .kind = SH_STR},
        {.name = "*", .kind = SH_REST},
        {.name = NULL},
};

static const shape local_ref_shape[] = {{.name = "name", .kind = SH_STR_OMIT}, {.name = NULL}};
static const shape gate_shape[] = {{.name = "name", .kind = SH_STR}, {.name = NULL}};

static const shape pod_spec_patch_shape[] = {
        {.name = "serviceAccountName", .kind = SH_STR_PTR},
        {.name = "volumes", .kind = SH_STRUCT_LIST, .sub = volume_shape, KEYED("name")},
        {.name = "initContainers",
         .kind = SH_STRUCT_LIST,
         .sub = container_patch_shape,
         KEYED("name")},
        {.name = "containers",
         .kind = SH_STRUCT_LIST,
         .sub = container_patch_shape,
         KEYED("name"),
         .not_omitempty = 1},
        {.name = "imagePullSecrets", .kind = SH_STRUCT_LIST, .sub = local_ref_shape, KEYED("name")},
        {.name = "securityContext", .kind = SH_CORE},
        {.name = "nodeSelector", .kind = SH_STR_MAP},
        {.name = "affinity", .kind = SH_CORE},
        {.name = "tolerations", .kind = SH_CORE_LIST},
        {.name = "schedulingGates", .kind = SH_STRUCT_LIST, .sub = gate_shape, KEYED("name")},
        {.name = "terminationGracePeriodSeconds", .kind = SH_INT_PTR},
        {.name = NULL},
};

static const shape pod_template_patch_shape[] = {
        {.name = "metadata", .kind = SH_STRUCT, .sub = meta_shape},
        {.name = "spec", .kind = SH_STRUCT, .sub = pod_spec_patch_shape},
        {.name = NULL},
};

static const shape job_spec_patch_shape[] = {
        {.name = "template", .kind = SH_STRUCT, .sub = pod_template_patch_shape},
        {.name = NULL},
};

static const shape job_template_patch_shape[] = {
        {.name = "metadata", .kind = SH_STRUCT, .sub = meta_shape},
        {.name = "spec", .kind = SH_STRUCT, .sub = job_spec_patch_shape},
        {.name = NULL},
};

static const shape rjob_patch_shape[] = {
        {.name = "name", .kind = SH_STR_OMIT},
        {.name = "template", .kind = SH_STRUCT, .sub = job_template_patch_shape},
        {.name = NULL},
};

static const shape jobset_spec_patch_shape[] = {
        {.name = "replicatedJobs", .kind = SH_STRUCT_LIST, .sub = rjob_patch_shape, KEYED("name")},
        {.name = NULL},
};

static int sanitize_struct(const json_t *in, const shape *fields, int depth, path *p,
                           kft_error *err, json_t **out);

/* Sets out[name] = v, taking the reference. */
static int put(json_t *out, const char *name, json_t *v, kft_error *err)
{
	return v && json_object_set_new(out, name, v) == 0 ? 0 : oom(err);
}

static int sanitize_string(json_t *out, const shape *f, const json_t *v, path *p, kft_error *err)
{
	if (!v)
		return f->kind == SH_STR ? put(out, f->name, json_string(""), err) : 0;
	if (!json_is_string(v))
		return fail(err, KFT_EINVAL, p, "must be a string");
	if (f->kind == SH_STR_OMIT && json_string_length(v) == 0)
		return 0;
	return put(out, f->name, json_deep_copy(v), err);
}

/* map[string]string: a null value decodes to "", anything but a string is
 * refused, and an empty map is omitted. */
static int sanitize_string_map(json_t *out, const shape *f, const json_t *v, path *p,
                               kft_error *err)
{
	if (!json_is_object(v))
		return fail(err, KFT_EINVAL, p, "must be an object of strings");
	if (json_object_size(v) == 0)
		return 0;
	json_t *m = json_object();
	if (!m)
		return oom(err);
	const char *k;
	json_t *x;
	json_object_foreach((json_t *)v, k, x)
	{
		if (!json_is_string(x) && !json_is_null(x)) {
			json_decref(m);
			return fail(err, KFT_EINVAL, p, "must be an object of strings");
		}
		if (json_object_set_new(m, k, json_string(json_string_value(x) ?: "")) != 0) {
			json_decref(m);
			return oom(err);
		}
	}
	return put(out, f->name, m, err);
}

/* []string, by the same rules. */
static int sanitize_string_list(json_t *out, const shape *f, const json_t *v, path *p,
                                kft_error *err)
{
	if (!json_is_array(v))
		return fail(err, KFT_EINVAL, p, "must be a list of strings");
	if (json_array_size(v) == 0)
		return 0;
	json_t *l = json_array();
	if (!l)
		return oom(err);
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x)
	{
		if (!json_is_string(x) && !json_is_null(x)) {
			json_decref(l);
			return fail(err, KFT_EINVAL, p, "must be a list of strings");
		}
		if (json_array_append_new(l, json_string(json_string_value(x) ?: "")) != 0) {
			json_decref(l);
			return oom(err);
		}
	}
	return put(out, f->name, l, err);
}

/* One item of a list of structs (or of core/v1 objects when f->sub is
 * NULL). A null item decodes to the zero struct. */
static int sanitize_item(const shape *f, const json_t *x, int depth, path *p, kft_error *err,
                         json_t **out)
{
	*out = NULL;
	if (!json_is_null(x) && !json_is_object(x))
		return fail(err, KFT_EINVAL, p, "must be an object");
	json_t *zero = json_is_null(x) ? json_object() : NULL;
	if (json_is_null(x) && !zero)
		return oom(err);
	const json_t *in = zero ? zero : x;
	int rc = f->kind == SH_STRUCT_LIST ? sanitize_struct(in, f->sub, depth + 1, p, err, out)
	                                   : core_copy(in, depth + 1, p, err, out);
	json_decref(zero);
	return rc;
}

static int sanitize_list(json_t *out, const shape *f, const json_t *v, int depth, path *p,
                         kft_error *err)
{
	if (!json_is_array(v))
		return fail(err, KFT_EINVAL, p, "must be a list");
	if (json_array_size(v) == 0)
		return 0;
	json_t *l = json_array();
	if (!l)
		return oom(err);
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x)
	{
		size_t mark = path_push(p, "[%zu]", i);
		json_t *item;
		int rc = sanitize_item(f, x, depth, p, err, &item);
		path_pop(p, mark);
		if (rc == 0 && json_array_append_new(l, item) != 0)
			rc = oom(err);
		if (rc != 0) {
			json_decref(l);
			return rc;
		}
	}
	return put(out, f->name, l, err);
}

static int sanitize_field(json_t *out, const shape *f, const json_t *v, int depth, path *p,
                          kft_error *err)
{
	if (json_is_null(v))
		v = NULL;
	if (f->kind == SH_STR || f->kind == SH_STR_OMIT || f->kind == SH_STR_PTR)
		return sanitize_string(out, f, v, p, err);
	if (!v)
		return 0;
	json_t *c = NULL;
	int rc;
	switch (f->kind) {
	case SH_INT_PTR:
		if (!json_is_integer(v))
			return fail(err, KFT_EINVAL, p, "must be an integer");
		return put(out, f->name, json_deep_copy(v), err);
	case SH_BOOL_OMIT:
		if (!json_is_boolean(v))
			return fail(err, KFT_EINVAL, p, "must be a boolean");
		return json_is_true(v) ? put(out, f->name, json_true(), err) : 0;
	case SH_STR_MAP: return sanitize_string_map(out, f, v, p, err);
	case SH_STR_LIST: return sanitize_string_list(out, f, v, p, err);
	case SH_STRUCT:
		rc = sanitize_struct(v, f->sub, depth + 1, p, err, &c);
		return rc ? rc : put(out, f->name, c, err);
	case SH_CORE:
		if (!json_is_object(v))
			return fail(err, KFT_EINVAL, p, "must be an object");
		rc = core_copy(v, depth + 1, p, err, &c);
		return rc ? rc : put(out, f->name, c, err);
	case SH_STRUCT_LIST:
	case SH_CORE_LIST: return sanitize_list(out, f, v, depth, p, err);
	default: return 0;
	}
}

static const shape *find_shape(const shape *fields, const char *name)
{
	for (; fields && fields->name; fields++)
		if (strcmp(fields->name, name) == 0)
			return fields;
	return NULL;
}

/* The members no listed field names, kept as core/v1 values (SH_REST). */
static int sanitize_rest(json_t *out, const json_t *in, const shape *fields, int depth, path *p,
                         kft_error *err)
{
	const char *k;
	json_t *x;
	json_object_foreach((json_t *)in, k, x)
	{
		if (find_shape(fields, k) || json_is_null(x) || k[0] == '$')
			continue;
		size_t mark = path_push(p, ".%s", k);
		json_t *c;
		int rc = core_copy(x, depth + 1, p, err, &c);
		path_pop(p, mark);
		if (rc == 0)
			rc = put(out, k, c, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* *out = the struct `in` reduced to `fields`, in the Go type's field order. */
static int sanitize_struct(const json_t *in, const shape *fields, int depth, path *p,
                           kft_error *err, json_t **out)
{
	*out = NULL;
	if (depth > KFT_DECODE_MAX_DEPTH)
		return fail(err, KFT_ELIMIT, p, "nested too deeply");
	if (!json_is_object(in))
		return fail(err, KFT_EINVAL, p, "must be an object");
	json_t *o = json_object();
	if (!o)
		return oom(err);
	int rc = 0, rest = 0;
	for (const shape *f = fields; rc == 0 && f->name; f++) {
		if (f->kind == SH_REST) {
			rest = 1;
			continue;
		}
		size_t mark = path_push(p, ".%s", f->name);
		rc = sanitize_field(o, f, json_object_get(in, f->name), depth, p, err);
		path_pop(p, mark);
	}
	if (rc == 0 && rest)
		rc = sanitize_rest(o, in, fields, depth, p, err);
	if (rc != 0) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

/* ---- step 2: strategic merge against JobSetSpec ---------------------------- */

/* The merge strategies are the shape table's (PATCH_MERGE, merge_key): the
 * reduced patch holds only the fields step 1 kept, so only they can merge. A
 * member the table does not name (inside core/v1 values) merges
 * generically: objects key by key, lists replaced. */

static int merge_object(json_t *orig, const json_t *patch, const shape *fields, int depth, path *p,
                        kft_error *err);

/* Merge keys compared as Go's typed encoding shows them: every merge key
 * of these types is a plain string or integer field, so an item without one
 * carries "" or 0. */
static int key_equal(const json_t *a, const json_t *b)
{
	if (a && b)
		return go_equal(a, b);
	const json_t *v = a ? a : b;
	if (!v)
		return 1;
	return (json_is_string(v) && json_string_length(v) == 0) ||
	       (json_is_number(v) && json_number_value(v) == 0);
}

/* Position of `item` in `list`: the first entry with an equal merge key
 * (or an equal value, for scalar sets), else -1. */
static long index_in(const json_t *list, const json_t *item, const char *key)
{
	size_t i;
	const json_t *x;
	json_array_foreach(list, i, x)
	{
		if (!key ? go_equal(x, item)
		         : key_equal(json_object_get(x, key), json_object_get(item, key)))
			return (long)i;
	}
	return -1;
}

/* All items share one kind, and none is a list (strategicpatch refuses
 * both). */
static int item_kind(const json_t *a, const json_t *b, go_kind *out, path *p, kft_error *err)
{
	const json_t *lists[2] = {a, b};
	int seen = 0;
	for (int l = 0; l < 2; l++) {
		size_t i;
		const json_t *x;
		json_array_foreach(lists[l], i, x)
		{
			go_kind k = kind_of(x);
			if (k == GO_ARRAY)
				return fail(err, KFT_EINVAL, p, "lists of lists are not supported");
			if (seen && k != *out)
				return fail(err, KFT_EINVAL, p,
				            "list element types are not identical");
			*out = k;
			seen = 1;
		}
	}
	return 0;
}

static int require_keys(const json_t *list, const char *key, path *p, kft_error *err)
{
	size_t i;
	const json_t *x;
	json_array_foreach(list, i, x)
	{
		if (!json_object_get(x, key)) {
			char what[128];
			snprintf(what, sizeof(what),
			         "an item does not contain declared merge key: %s", key);
			return fail(err, KFT_EINVAL, p, what);
		}
	}
	return 0;
}

/* A scalar set: the original's items then the patch's, each value once
 * (repeats within the original go too, as in upstream's dedupe). */
static int merged_set(const json_t *orig, const json_t *patch, json_t *set)
{
	const json_t *both[2] = {orig, patch};
	for (int l = 0; l < 2; l++) {
		size_t i;
		json_t *x;
		json_array_foreach(both[l], i, x)
		{
			if (index_in(set, x, NULL) < 0 && json_array_append(set, x) != 0)
				return KFT_ENOMEM;
		}
	}
	return 0;
}

/* Keyed items: the original's, each merged in place with the first patch
 * item of the same key, then the patch items whose key is new (a repeated
 * new key merges into the first of its kind). */
static int merged_keyed(json_t *merged, const json_t *patch, const char *key,
                        const shape *item_fields, int depth, path *p, kft_error *err)
{
	size_t i;
	json_t *x;
	json_array_foreach(patch, i, x)
	{
		size_t mark = path_push(p, "[%zu]", i);
		long at = index_in(merged, x, key);
		int rc;
		if (at >= 0) {
			rc = merge_object(json_array_get(merged, (size_t)at), x, item_fields,
			                  depth + 1, p, err);
		} else {
			json_t *c = json_deep_copy(x);
			rc = c && json_array_append_new(merged, c) == 0 ? 0 : oom(err);
		}
		path_pop(p, mark);
		if (rc != 0)
			return rc;
	}
	return 0;
}

typedef struct ranked {
	json_t *item; /* borrowed */
	long rank;
} ranked;

/* Insertion sort: stable, and the lists are short. */
static void sort_ranked(ranked *r, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		ranked cur = r[i];
		size_t j = i;
		for (; j > 0 && r[j - 1].rank > cur.rank; j--)
			r[j] = r[j - 1];
		r[j] = cur;
	}
}

/* strategicpatch's mergeSortedSlice: weave the untouched original items
 * (`left`) into the patched ones (`right`) by their original positions. */
static int weave(json_t *out, const ranked *left, size_t nl, const ranked *right, size_t nr,
                 const json_t *orig, const char *key)
{
	size_t i = 0, j = 0;
	while (i < nl || j < nr) {
		int take_left = j >= nr;
		if (i < nl && j < nr) {
			long li = index_in(orig, left[i].item, key);
			long ri = index_in(orig, right[j].item, key);
			take_left = li >= 0 && ri >= 0 && li < ri;
		}
		json_t *x = take_left ? left[i++].item : right[j++].item;
		if (json_array_append(out, x) != 0)
			return KFT_ENOMEM;
	}
	return 0;
}

/* Orders `merged` as strategicpatch does and stores it into `orig`. */
static int order_merged(json_t *orig, const json_t *patch, json_t *merged, const char *key,
                        kft_error *err)
{
	size_t n = json_array_size(merged), nl = 0, nr = 0;
	ranked *left = calloc(n ? n : 1, sizeof(*left));
	ranked *right = calloc(n ? n : 1, sizeof(*right));
	json_t *out = json_array();
	int rc = (left && right && out) ? 0 : KFT_ENOMEM;
	size_t i;
	json_t *x;
	json_array_foreach(merged, i, x)
	{
		if (rc != 0)
			break;
		long in_patch = index_in(patch, x, key);
		if (in_patch >= 0)
			right[nr++] = (ranked){x, in_patch};
		else
			left[nl++] = (ranked){x, index_in(orig, x, key)};
	}
	if (rc == 0) {
		sort_ranked(left, nl);
		sort_ranked(right, nr);
		rc = weave(out, left, nl, right, nr, orig, key);
	}
	if (rc == 0 && (json_array_clear(orig) != 0 || json_array_extend(orig, out) != 0))
		rc = KFT_ENOMEM;
	free(left);
	free(right);
	json_decref(out);
	return rc == 0 ? 0 : oom(err);
}

/* strategicpatch's mergeSlice for a list tagged patchStrategy=merge, with
 * `key` its patchMergeKey (NULL: a set of scalars). `orig` is updated in
 * place. */
static int merge_list(json_t *orig, const json_t *patch, const char *key, const shape *item_fields,
                      int depth, path *p, kft_error *err)
{
	if (json_array_size(orig) == 0 && json_array_size(patch) == 0)
		return 0;
	go_kind kind = GO_NULL;
	int rc = item_kind(orig, patch, &kind, p, err);
	if (rc != 0)
		return rc;
	if (kind == GO_OBJECT && !key)
		return fail(err, KFT_EINVAL, p, "cannot merge lists without merge key");
	if (kind != GO_OBJECT && key)
		return fail(err, KFT_EINVAL, p, "items of a list merged by key must be objects");
	/* Only the patch can lack a key: its omitempty fields (a container's
	 * name) vanish when empty, the original's plain ones do not. */
	if (key && (rc = require_keys(patch, key, p, err)) != 0)
		return rc;
	json_t *merged = json_array();
	if (!merged)
		return oom(err);
	if (!key)
		rc = merged_set(orig, patch, merged) == 0 ? 0 : oom(err);
	else if (json_array_extend(merged, orig) != 0)
		rc = oom(err);
	else
		rc = merged_keyed(merged, patch, key, item_fields, depth, p, err);
	if (rc == 0)
		rc = order_merged(orig, patch, merged, key, err);
	json_decref(merged);
	return rc;
}

static int merge_member(json_t *orig, const char *k, const json_t *pv, const shape *f, int depth,
                        path *p, kft_error *err)
{
	json_t *ov = json_object_get(orig, k);
	if (json_is_null(pv)) {
		json_object_del(orig, k);
		return 0;
	}
	/* Go encodes an omitempty list that is empty as no list at all, and the
	 * patch's list then replaces it instead of merging (repeats stay). */
	int absent =
	        !ov || (json_is_array(ov) && json_array_size(ov) == 0 && !(f && f->not_omitempty));
	if (absent || kind_of(ov) != kind_of(pv)) {
		json_t *c = json_deep_copy(pv);
		return c && json_object_set_new(orig, k, c) == 0 ? 0 : oom(err);
	}
	if (json_is_object(ov))
		return merge_object(ov, pv, f && f->kind == SH_STRUCT ? f->sub : NULL, depth + 1, p,
		                    err);
	if (json_is_array(ov) && f && f->patch == PATCH_MERGE)
		return merge_list(ov, pv, f->merge_key, f->sub, depth + 1, p, err);
	json_t *c = json_deep_copy(pv);
	return c && json_object_set_new(orig, k, c) == 0 ? 0 : oom(err);
}

/* strategicpatch's mergeMap: `patch` into `orig`, in place. */
static int merge_object(json_t *orig, const json_t *patch, const shape *fields, int depth, path *p,
                        kft_error *err)
{
	if (depth > KFT_DECODE_MAX_DEPTH)
		return fail(err, KFT_ELIMIT, p, "nested too deeply");
	const char *k;
	json_t *pv;
	json_object_foreach((json_t *)patch, k, pv)
	{
		size_t mark = path_push(p, ".%s", k);
		int rc = merge_member(orig, k, pv, find_shape(fields, k), depth, p, err);
		path_pop(p, mark);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- the runtime patches, one after another --------------------------------- */

/* obj[key] as an object, created when absent or null. NULL when it has
 * another type or memory ran out. */
static json_t *ensure_object(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (v && !json_is_null(v))
		return json_is_object(v) ? v : NULL;
	v = json_object();
	if (!v || json_object_set_new(obj, key, v) != 0)
		return NULL;
	return v;
}

/* One patch's JobSet-level labels or annotations over the template's. */
static int merge_string_map(json_t *tmpl, const json_t *meta, const char *which, kft_error *err)
{
	const json_t *add = json_object_get(meta, which);
	if (json_object_size(add) == 0)
		return 0;
	json_t *m = ensure_object(tmpl, "metadata");
	json_t *into = m ? ensure_object(m, which) : NULL;
	if (!into)
		return kft_error_set(err, KFT_EINVAL,
		                     "spec.template.metadata.%s: must be an object", which);
	return json_object_update(into, (json_t *)add) == 0 ? 0 : oom(err);
}

static int merge_metadata(json_t *tmpl, const json_t *meta, path *p, kft_error *err)
{
	json_t *clean;
	int rc = sanitize_struct(meta, meta_shape, 0, p, err, &clean);
	if (rc == 0)
		rc = merge_string_map(tmpl, clean, "labels", err);
	if (rc == 0)
		rc = merge_string_map(tmpl, clean, "annotations", err);
	json_decref(clean);
	return rc;
}

static int merge_spec(json_t *tmpl, const json_t *spec, path *p, kft_error *err)
{
	json_t *clean;
	int rc = sanitize_struct(spec, jobset_spec_patch_shape, 0, p, err, &clean);
	if (rc != 0)
		return rc;
	json_t *target = ensure_object(tmpl, "spec");
	rc = target ? merge_object(target, clean, jobset_spec_patch_shape, 0, p, err)
	            : kft_error_set(err, KFT_EINVAL, "spec.template.spec: must be an object");
	json_decref(clean);
	return rc;
}

/* patch.trainingRuntimeSpec.template, or NULL when a level is absent. */
static int patch_template(const json_t *patch, path *p, kft_error *err, const json_t **out)
{
	static const char *const levels[] = {"trainingRuntimeSpec", "template"};
	*out = NULL;
	if (!json_is_object(patch))
		return fail(err, KFT_EINVAL, p, "must be an object");
	const json_t *t = patch;
	for (size_t l = 0; t && l < 2; l++) {
		path_push(p, ".%s", levels[l]);
		const json_t *v = json_object_get(t, levels[l]);
		if (v && !json_is_null(v) && !json_is_object(v))
			return fail(err, KFT_EINVAL, p, "must be an object");
		t = json_is_object(v) ? v : NULL;
	}
	*out = t;
	return 0;
}

static int merge_one(json_t *tmpl, const json_t *patch, size_t i, kft_error *err)
{
	path p = {.len = 0};
	path_push(&p, "spec.runtimePatches[%zu]", i);
	const json_t *t;
	int rc = patch_template(patch, &p, err, &t);
	if (rc != 0 || !t)
		return rc;
	const json_t *meta = json_object_get(t, "metadata");
	const json_t *spec = json_object_get(t, "spec");
	size_t mark = path_push(&p, ".metadata");
	if (meta && !json_is_null(meta))
		rc = merge_metadata(tmpl, meta, &p, err);
	path_pop(&p, mark);
	path_push(&p, ".spec");
	if (rc == 0 && spec && !json_is_null(spec))
		rc = merge_spec(tmpl, spec, &p, err);
	return rc;
}

/* name -> position of the runtime's replicated jobs (a later duplicate
 * wins, as when upstream fills its map). */
static json_t *rjob_positions(const json_t *rjobs)
{
	json_t *pos = json_object();
	size_t i;
	json_t *r;
	json_array_foreach(rjobs, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name")) ?: "";
		if (pos && json_object_set_new(pos, name, json_integer((json_int_t)i)) != 0) {
			json_decref(pos);
			pos = NULL;
		}
	}
	return pos;
}

static int restore_rjob_order(json_t *rjobs, const json_t *pos, kft_error *err)
{
	size_t n = json_array_size(rjobs);
	if (n < 2)
		return 0;
	ranked *r = calloc(n, sizeof(*r));
	json_t *out = json_array();
	int rc = (r && out) ? 0 : KFT_ENOMEM;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_t *x = json_array_get(rjobs, i);
		const char *name = json_string_value(json_object_get(x, "name")) ?: "";
		const json_t *at = json_object_get(pos, name);
		r[i] = (ranked){x, at ? (long)json_integer_value(at) : 0};
	}
	if (rc == 0) {
		sort_ranked(r, n);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = json_array_append(out, r[i].item) == 0 ? 0 : KFT_ENOMEM;
	}
	if (rc == 0 && (json_array_clear(rjobs) != 0 || json_array_extend(rjobs, out) != 0))
		rc = KFT_ENOMEM;
	free(r);
	json_decref(out);
	return rc == 0 ? 0 : oom(err);
}

int kft_runtime_patches_merge(json_t *tmpl, const json_t *runtime_patches, kft_error *err)
{
	if (!runtime_patches || json_is_null(runtime_patches))
		return 0;
	if (!json_is_object(tmpl))
		return kft_error_set(err, KFT_EINVAL, "spec.template: must be an object");
	if (!json_is_array(runtime_patches))
		return kft_error_set(err, KFT_EINVAL, "spec.runtimePatches: must be a list");
	if (json_array_size(runtime_patches) > KFT_RUNTIME_PATCHES_MAX)
		return kft_error_set(err, KFT_ELIMIT,
		                     "spec.runtimePatches: must have at most %d items",
		                     KFT_RUNTIME_PATCHES_MAX);
	const json_t *spec = json_object_get(tmpl, "spec");
	json_t *pos = rjob_positions(json_object_get(spec, "replicatedJobs"));
	if (!pos)
		return oom(err);
	int rc = 0;
	size_t i;
	const json_t *patch;
	json_array_foreach(runtime_patches, i, patch)
	{
		if ((rc = merge_one(tmpl, patch, i, err)) != 0)
			break;
	}
	json_t *rjobs = json_object_get(json_object_get(tmpl, "spec"), "replicatedJobs");
	if (rc == 0 && json_is_array(rjobs))
		rc = restore_rjob_order(rjobs, pos, err);
	json_decref(pos);
	return rc;
}
