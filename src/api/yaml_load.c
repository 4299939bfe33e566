/*
 * yaml_load.c - builds JSON trees from libyaml's event stream.
 *
 * libyaml's document loader would build its own node graph first and has no
 * bounds; instead we read parser events (scalar, alias, start/end of a
 * mapping or sequence) and build json_t values directly on an explicit stack
 * of open collections. The stack is a fixed array of KFT_DECODE_MAX_DEPTH
 * frames, so deep input is an error, never deep recursion.
 *
 * Every finished value is "placed" into the innermost open collection: added
 * to a sequence, or, in a mapping, taken as the next key or as the value for
 * the pending key. Keys are turned into strings as sigs.k8s.io/yaml does
 * (1 -> "1", true -> "true") and checked for duplicates as they arrive.
 *
 * Anchors map a name to a finished value plus the number of nodes in it and
 * its height. An alias inserts a deep copy, so the returned tree never
 * shares subtrees (callers may edit it freely); the node count and height
 * are charged before copying, which is what stops alias bombs cheaply.
 *
 * A "<<" key merges a mapping (or a sequence of mappings) into the current
 * one: merged keys never override keys written in the mapping, in either
 * order, and earlier sources win over later ones. The mapping's frame
 * remembers which keys came from a merge so an explicit key may replace
 * them, while two explicit copies of a key are an error.
 */
#include "yaml_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define MERGE_TAG "tag:yaml.org,2002:merge"

struct frame {
	json_t *node;       /* the object or array being filled (owned) */
	char *anchor;       /* name to register when the collection ends, or NULL */
	yaml_mark_t start;  /* where the collection starts */
	size_t first_node;  /* loader nodes count before this collection */
	int height;         /* 1 + the tallest child's height */
	json_t *merged;     /* mappings: keys that came from "<<", or NULL */
	char *key;          /* mappings: the key waiting for its value */
	size_t key_len;     /*   ... its length */
	yaml_mark_t key_at; /*   ... where it was written */
	int key_is_merge;   /*   ... it was "<<" */
	int awaiting_value; /*   ... a key has been read */
};

struct loader {
	yaml_parser_t parser;
	yaml_event_t event;
	const char *data;
	const char *source;
	struct frame frames[KFT_DECODE_MAX_DEPTH];
	int depth;
	json_t *anchors; /* name -> [value, nodes, height] */
	json_t *root;    /* the current document's finished root */
	yaml_mark_t root_mark;
	size_t nodes;
	int aliased; /* an alias was expanded in this stream */
	kft_doc_list *list;
	kft_error *err;
};

static int fail(struct loader *l, kft_status code, yaml_mark_t mark, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int fail(struct loader *l, kft_status code, yaml_mark_t mark, const char *fmt, ...)
{
	char message[KFT_ERROR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return kft_error_set(l->err, code, "%s:%zu:%zu: %s", l->source, mark.line + 1,
	                     mark.column + 1, message);
}

static int out_of_memory(struct loader *l)
{
	return kft_error_set(l->err, KFT_ENOMEM, "%s: out of memory", l->source);
}

/* "tag:yaml.org,2002:int" reads better as "!!int" in messages. */
struct tag_text {
	char text[80];
};

static struct tag_text short_tag(const char *tag)
{
	static const char prefix[] = "tag:yaml.org,2002:";
	struct tag_text t;

	if (strncmp(tag, prefix, sizeof(prefix) - 1) == 0)
		snprintf(t.text, sizeof(t.text), "!!%s", tag + sizeof(prefix) - 1);
	else
		snprintf(t.text, sizeof(t.text), "%s", tag);
	return t;
}

static int charge_nodes(struct loader *l, size_t n, yaml_mark_t mark)
{
	l->nodes += n;
	if (l->nodes <= KFT_DECODE_MAX_NODES)
		return 0;
	if (l->aliased)
		return fail(l, KFT_ELIMIT, mark,
		            "document expands to too many nodes (alias bomb?): more than %d",
		            KFT_DECODE_MAX_NODES);
	return fail(l, KFT_ELIMIT, mark, "more than %d values in one input", KFT_DECODE_MAX_NODES);
}

static int register_anchor(struct loader *l, const char *name, json_t *value, size_t nodes,
                           int height)
{
	json_t *entry = json_array();

	if (!entry)
		return out_of_memory(l);
	if (json_array_append(entry, value) < 0 ||
	    json_array_append_new(entry, json_integer((json_int_t)nodes)) < 0 ||
	    json_array_append_new(entry, json_integer(height)) < 0) {
		json_decref(entry);
		return out_of_memory(l);
	}
	/* A later anchor of the same name replaces this one, as YAML says. */
	return json_object_set_new(l->anchors, name, entry) < 0 ? out_of_memory(l) : 0;
}

/* ---- keys ---- */

/* The string form sigs.k8s.io/yaml gives a scalar used as a mapping key. */
static int key_text(struct loader *l, const json_t *v, yaml_mark_t mark, char **out, size_t *len)
{
	char buf[KFT_YAML_NUMBER_MAX];
	const char *text = buf;

	switch (json_typeof(v)) {
	case JSON_STRING:
		text = json_string_value(v);
		*len = json_string_length(v);
		break;
	case JSON_INTEGER:
		*len = (size_t)snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT,
		                        json_integer_value(v));
		break;
	case JSON_REAL:
		kft_yaml_format_key_real(json_real_value(v), buf);
		*len = strlen(buf);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		text = json_is_true(v) ? "true" : "false";
		*len = strlen(text);
		break;
	case JSON_NULL: return fail(l, KFT_EINVAL, mark, "mapping key must not be null");
	default: return fail(l, KFT_EINVAL, mark, "mapping key must be a scalar");
	}
	if (memchr(text, '\0', *len))
		return fail(l, KFT_EINVAL, mark, "mapping key contains a NUL character");
	*out = malloc(*len + 1);
	if (!*out)
		return out_of_memory(l);
	memcpy(*out, text, *len);
	(*out)[*len] = '\0';
	return 0;
}

static int take_key(struct loader *l, struct frame *f, json_t *v, int is_merge, yaml_mark_t mark)
{
	char shown[KFT_KEY_TEXT_MAX];
	int rc = key_text(l, v, mark, &f->key, &f->key_len);

	json_decref(v);
	if (rc < 0)
		return rc;
	f->key_is_merge = is_merge;
	f->key_at = mark;
	f->awaiting_value = 1;
	if (is_merge || !json_object_getn(f->node, f->key, f->key_len))
		return 0;
	if (f->merged && json_object_getn(f->merged, f->key, f->key_len))
		return 0; /* an explicit key replaces a merged one */
	kft_describe_key(f->key, f->key_len, shown);
	return fail(l, KFT_EINVAL, mark, "key %s already set in map", shown);
}

/* ---- merges ---- */

static int merge_mapping(struct loader *l, struct frame *f, json_t *src)
{
	const char *key;
	size_t len;
	json_t *value;

	json_object_keylen_foreach(src, key, len, value)
	{
		if (json_object_getn(f->node, key, len))
			continue;
		if (!f->merged && !(f->merged = json_object()))
			return out_of_memory(l);
		if (json_object_setn(f->node, key, len, value) < 0 ||
		    json_object_setn_new(f->merged, key, len, json_true()) < 0)
			return out_of_memory(l);
	}
	return 0;
}

static int merge_value(struct loader *l, struct frame *f, json_t *v, yaml_mark_t mark)
{
	size_t i;
	json_t *item;

	if (json_is_object(v))
		return merge_mapping(l, f, v);
	if (!json_is_array(v))
		return fail(l, KFT_EINVAL, mark,
		            "map merge requires map or sequence of maps as the value");
	json_array_foreach(v, i, item)
	{
		int rc;
		if (!json_is_object(item))
			return fail(l, KFT_EINVAL, mark,
			            "map merge requires map or sequence of maps as the value");
		rc = merge_mapping(l, f, item);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- placing values ---- */

static int put_member(struct loader *l, struct frame *f, json_t *v)
{
	int rc = 0;

	if (f->key_is_merge) {
		rc = merge_value(l, f, v, f->key_at);
		json_decref(v);
	} else {
		if (f->merged)
			json_object_deln(f->merged, f->key, f->key_len);
		if (json_object_setn_new(f->node, f->key, f->key_len, v) < 0)
			rc = out_of_memory(l);
	}
	free(f->key);
	f->key = NULL;
	f->awaiting_value = 0;
	return rc;
}

/* Adds a finished value (ownership taken) of the given height to the
 * innermost open collection, or makes it the document's root. `is_merge`
 * says the value is a plain "<<", a merge marker when used as a key. */
static int place(struct loader *l, json_t *v, int height, int is_merge, yaml_mark_t mark)
{
	struct frame *f;

	if (l->depth == 0) {
		json_decref(l->root);
		l->root = v;
		l->root_mark = mark;
		return 0;
	}
	f = &l->frames[l->depth - 1];
	if (json_is_array(f->node)) {
		if (f->height < height + 1)
			f->height = height + 1;
		return json_array_append_new(f->node, v) < 0 ? out_of_memory(l) : 0;
	}
	if (!f->awaiting_value)
		return take_key(l, f, v, is_merge, mark);
	/* Merged members sit at the same level as the merge value's members. */
	if (f->height < height + !f->key_is_merge)
		f->height = height + !f->key_is_merge;
	return put_member(l, f, v);
}

/* ---- scalars ---- */

static int nonfinite(struct loader *l, const char *text)
{
	return fail(l, KFT_EINVAL, l->event.start_mark,
	            "%.40s cannot be represented in JSON (no infinity or NaN)", text);
}

static const char *kind_tag(enum kft_yaml_kind kind)
{
	switch (kind) {
	case KFT_YAML_NULL: return "!!null";
	case KFT_YAML_BOOL: return "!!bool";
	case KFT_YAML_INT: return "!!int";
	case KFT_YAML_FLOAT:
	case KFT_YAML_NONFINITE: return "!!float";
	case KFT_YAML_STR: break;
	}
	return "!!str";
}

static int tag_accepts(const char *tag, enum kft_yaml_kind kind)
{
	if (strcmp(tag, YAML_INT_TAG) == 0)
		return kind == KFT_YAML_INT;
	if (strcmp(tag, YAML_FLOAT_TAG) == 0)
		return kind == KFT_YAML_FLOAT || kind == KFT_YAML_INT || kind == KFT_YAML_NONFINITE;
	if (strcmp(tag, YAML_BOOL_TAG) == 0)
		return kind == KFT_YAML_BOOL;
	return kind == KFT_YAML_NULL;
}

/* A scalar with one of the typed tags: resolved like plain text, then
 * checked against the tag (an integer tagged !!float becomes a real). */
static int typed_scalar(struct loader *l, const char *tag, json_t **out)
{
	const char *text = (const char *)l->event.data.scalar.value;
	size_t len = l->event.data.scalar.length;
	enum kft_yaml_kind kind;

	if (kft_yaml_resolve_plain(text, len, &kind, out) < 0)
		return out_of_memory(l);
	if (!tag_accepts(tag, kind)) {
		json_decref(*out);
		*out = NULL;
		return fail(l, KFT_EINVAL, l->event.start_mark, "cannot decode %s `%.60s` as a %s",
		            kind_tag(kind), text, short_tag(tag).text);
	}
	if (kind == KFT_YAML_NONFINITE)
		return nonfinite(l, text);
	if (strcmp(tag, YAML_FLOAT_TAG) == 0 && json_is_integer(*out)) {
		json_t *real = json_real((double)json_integer_value(*out));
		json_decref(*out);
		*out = real;
		if (!real)
			return out_of_memory(l);
	}
	return 0;
}

static int is_typed_tag(const char *tag)
{
	return strcmp(tag, YAML_INT_TAG) == 0 || strcmp(tag, YAML_FLOAT_TAG) == 0 ||
	       strcmp(tag, YAML_BOOL_TAG) == 0 || strcmp(tag, YAML_NULL_TAG) == 0;
}

static int scalar_value(struct loader *l, json_t **out)
{
	yaml_char_t *raw_tag = l->event.data.scalar.tag;
	const char *tag = raw_tag ? (const char *)raw_tag : NULL;
	const char *text = (const char *)l->event.data.scalar.value;
	size_t len = l->event.data.scalar.length;
	enum kft_yaml_kind kind;

	*out = NULL;
	if (!tag && l->event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		if (kft_yaml_resolve_plain(text, len, &kind, out) < 0)
			return out_of_memory(l);
		return kind == KFT_YAML_NONFINITE ? nonfinite(l, text) : 0;
	}
	if (tag && is_typed_tag(tag))
		return typed_scalar(l, tag, out);
	/* Quoted text, "!" (YAML's "not resolved") and !!str are strings; so is
	 * !!merge, which only matters as a key. */
	if (tag && strcmp(tag, "!") != 0 && strcmp(tag, YAML_STR_TAG) != 0 &&
	    strcmp(tag, MERGE_TAG) != 0)
		return fail(l, KFT_EINVAL, l->event.start_mark, "unsupported tag %s on a scalar",
		            short_tag(tag).text);
	*out = json_stringn(text, len);
	return *out ? 0 : out_of_memory(l);
}

static int is_merge_key(const yaml_event_t *e)
{
	const char *tag = (const char *)e->data.scalar.tag;
	int untyped = tag ? strcmp(tag, "!") == 0 || strcmp(tag, MERGE_TAG) == 0
	                  : e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	return untyped && e->data.scalar.length == 2 && memcmp(e->data.scalar.value, "<<", 2) == 0;
}

static int on_scalar(struct loader *l)
{
	yaml_event_t *e = &l->event;
	json_t *v;
	int rc = scalar_value(l, &v);

	if (rc == 0)
		rc = charge_nodes(l, 1, e->start_mark);
	if (rc == 0 && e->data.scalar.anchor)
		rc = register_anchor(l, (const char *)e->data.scalar.anchor, v, 1, 0);
	if (rc < 0) {
		json_decref(v);
		return rc;
	}
	return place(l, v, 0, is_merge_key(e), e->start_mark);
}

static int on_alias(struct loader *l)
{
	const char *name = (const char *)l->event.data.alias.anchor;
	json_t *entry = json_object_get(l->anchors, name);
	json_t *copy;
	int height, rc;

	if (!entry)
		return fail(l, KFT_EINVAL, l->event.start_mark, "unknown anchor '%.60s' referenced",
		            name);
	l->aliased = 1;
	height = (int)json_integer_value(json_array_get(entry, 2));
	if (l->depth + height > KFT_DECODE_MAX_DEPTH)
		return fail(l, KFT_ELIMIT, l->event.start_mark, "nesting deeper than %d levels",
		            KFT_DECODE_MAX_DEPTH);
	rc = charge_nodes(l, (size_t)json_integer_value(json_array_get(entry, 1)),
	                  l->event.start_mark);
	if (rc < 0)
		return rc;
	copy = json_deep_copy(json_array_get(entry, 0));
	if (!copy)
		return out_of_memory(l);
	return place(l, copy, height, 0, l->event.start_mark);
}

/* ---- collections ---- */

static int check_collection_tag(struct loader *l, const char *tag, int is_map)
{
	const char *own = is_map ? YAML_MAP_TAG : YAML_SEQ_TAG;

	if (!tag || strcmp(tag, "!") == 0 || strcmp(tag, own) == 0)
		return 0;
	return fail(l, KFT_EINVAL, l->event.start_mark, "unsupported tag %s on a %s",
	            short_tag(tag).text, is_map ? "mapping" : "sequence");
}

static char *copy_text(const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = malloc(n);
	return copy ? memcpy(copy, s, n) : NULL;
}

static int open_collection(struct loader *l, int is_map)
{
	yaml_event_t *e = &l->event;
	yaml_char_t *tag = is_map ? e->data.mapping_start.tag : e->data.sequence_start.tag;
	yaml_char_t *anchor = is_map ? e->data.mapping_start.anchor : e->data.sequence_start.anchor;
	struct frame *f;
	int rc = check_collection_tag(l, (const char *)tag, is_map);

	if (rc < 0)
		return rc;
	if (l->depth > 0 && json_is_object(l->frames[l->depth - 1].node) &&
	    !l->frames[l->depth - 1].awaiting_value)
		return fail(l, KFT_EINVAL, e->start_mark, "mapping key must be a scalar");
	if (l->depth >= KFT_DECODE_MAX_DEPTH)
		return fail(l, KFT_ELIMIT, e->start_mark, "nesting deeper than %d levels",
		            KFT_DECODE_MAX_DEPTH);
	f = &l->frames[l->depth];
	memset(f, 0, sizeof(*f));
	f->first_node = l->nodes;
	f->start = e->start_mark;
	f->height = 1;
	rc = charge_nodes(l, 1, e->start_mark);
	if (rc < 0)
		return rc;
	f->node = is_map ? json_object() : json_array();
	if (anchor)
		f->anchor = copy_text((const char *)anchor);
	if (!f->node || (anchor && !f->anchor)) {
		json_decref(f->node);
		free(f->anchor);
		return out_of_memory(l);
	}
	l->depth++;
	return 0;
}

static void release_frame(struct frame *f)
{
	json_decref(f->node);
	json_decref(f->merged);
	free(f->anchor);
	free(f->key);
	memset(f, 0, sizeof(*f));
}

static int close_collection(struct loader *l)
{
	struct frame *f = &l->frames[l->depth - 1];
	json_t *v = json_incref(f->node);
	int height = f->height;
	yaml_mark_t start = f->start;
	int rc = 0;

	if (f->anchor)
		rc = register_anchor(l, f->anchor, v, l->nodes - f->first_node, height);
	release_frame(f);
	l->depth--;
	if (rc < 0) {
		json_decref(v);
		return rc;
	}
	return place(l, v, height, 0, start);
}

/* ---- documents and the event loop ---- */

static int finish_document(struct loader *l)
{
	json_t *root = l->root;
	yaml_mark_t mark = l->root_mark;

	l->root = NULL;
	json_object_clear(l->anchors);
	if (!root || json_is_null(root)) {
		json_decref(root);
		return 0;
	}
	return kft_doc_list_push(l->list, root, (int)mark.line + 1, (int)mark.column + 1, l->source,
	                         l->err);
}

static int handle_event(struct loader *l)
{
	switch (l->event.type) {
	case YAML_DOCUMENT_START_EVENT: json_object_clear(l->anchors); return 0;
	case YAML_DOCUMENT_END_EVENT: return finish_document(l);
	case YAML_SCALAR_EVENT: return on_scalar(l);
	case YAML_ALIAS_EVENT: return on_alias(l);
	case YAML_SEQUENCE_START_EVENT: return open_collection(l, 0);
	case YAML_MAPPING_START_EVENT: return open_collection(l, 1);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return close_collection(l);
	default: return 0;
	}
}

static int parser_failure(struct loader *l)
{
	yaml_parser_t *p = &l->parser;
	int line, column;

	if (p->error == YAML_MEMORY_ERROR)
		return out_of_memory(l);
	if (p->error == YAML_READER_ERROR) {
		kft_text_position(l->data, p->problem_offset, &line, &column);
		return kft_error_set(l->err, KFT_EPARSE, "%s:%d:%d: %s", l->source, line, column,
		                     p->problem ? p->problem : "cannot read input");
	}
	if (p->context)
		return kft_error_set(l->err, KFT_EPARSE,
		                     "%s:%zu:%zu: %s (%s at line %zu column %zu)", l->source,
		                     p->problem_mark.line + 1, p->problem_mark.column + 1,
		                     p->problem ? p->problem : "syntax error", p->context,
		                     p->context_mark.line + 1, p->context_mark.column + 1);
	return fail(l, KFT_EPARSE, p->problem_mark, "%s", p->problem ? p->problem : "syntax error");
}

static int run(struct loader *l)
{
	for (;;) {
		int rc, done;
		if (!yaml_parser_parse(&l->parser, &l->event))
			return parser_failure(l);
		rc = handle_event(l);
		done = l->event.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&l->event);
		if (rc < 0 || done)
			return rc;
	}
}

int kft_yaml_load(const char *data, size_t len, const char *source, kft_doc_list *list,
                  kft_error *err)
{
	struct loader *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return kft_error_set(err, KFT_ENOMEM, "%s: out of memory", source);
	l->data = data;
	l->source = source;
	l->list = list;
	l->err = err;
	l->anchors = json_object();
	if (!l->anchors || !yaml_parser_initialize(&l->parser)) {
		json_decref(l->anchors);
		free(l);
		return kft_error_set(err, KFT_ENOMEM, "%s: out of memory", source);
	}
	yaml_parser_set_input_string(&l->parser, (const unsigned char *)data, len);
	yaml_parser_set_encoding(&l->parser, YAML_UTF8_ENCODING);
	rc = run(l);
	while (l->depth > 0)
		release_frame(&l->frames[--l->depth]);
	json_decref(l->root);
	json_decref(l->anchors);
	yaml_parser_delete(&l->parser);
	free(l);
	return rc;
}
