/*
 * yaml_emit.c - prints a JSON tree as YAML, the way kubectl does.
 *
 * The layout is left to libyaml's emitter, the C original of the go-yaml
 * encoder behind `kubectl get -o yaml`: it already writes block style,
 * `key:\n- item` sequences, {} and [] for empty collections, and falls back
 * from plain text to single or double quotes whenever YAML syntax requires
 * it ("a: b", "- x", "#x", leading spaces ...).
 *
 * What libyaml cannot know is how our decoder types unquoted text, so this
 * file decides the requested style of each string:
 *   - double quotes for text that would read back as another type ("true",
 *     "123", "", "~") and, like go-yaml, for text that looks like a timestamp
 *     or a sexagesimal number, and for "<<" (a merge key);
 *   - double quotes for characters a reader would not keep as they are (tabs
 *     and other controls, CR, NEL, the Unicode line and paragraph separators,
 *     a byte order mark): libyaml escapes them there;
 *   - a literal block (| or |-) for other multi-line values, which libyaml
 *     itself turns into double quotes when a block would not read back
 *     exactly (trailing spaces, for instance);
 *   - plain otherwise.
 * Numbers, booleans and null are written as plain text that the decoder
 * reads back as the same type and value.
 *
 * Lines are never folded (libyaml's default folds at 80 columns): long
 * strings stay greppable and the round trip has one less transformation.
 */
#include "util/strbuf.h"
#include "yaml_internal.h"
#include "util/utf8.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

struct printer {
	yaml_emitter_t emitter;
	kft_strbuf out;
	kft_error *err;
};

static int collect(void *context, unsigned char *buffer, size_t size)
{
	kft_strbuf *o = context;
	kft_strbuf_putn(o, (const char *)buffer, size);
	return !o->failed;
}

/* Hands one initialised event to libyaml, which frees it in any case. */
static int emit(struct printer *p, yaml_event_t *event, int initialised)
{
	if (!initialised)
		return kft_error_set(p->err, KFT_ENOMEM, "YAML output: out of memory");
	if (yaml_emitter_emit(&p->emitter, event))
		return 0;
	if (p->emitter.error == YAML_MEMORY_ERROR || p->emitter.error == YAML_WRITER_ERROR)
		return kft_error_set(p->err, KFT_ENOMEM, "YAML output: out of memory");
	return kft_error_set(p->err, KFT_EINVAL, "YAML output: %s",
	                     p->emitter.problem ? p->emitter.problem : "emitter error");
}

/* ---- choosing a style for strings ---- */

/* Characters that must be escaped to survive a round trip. */
static int needs_escapes(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];
		if ((c < 0x20 && c != '\n') || c == 0x7F)
			return 1;
		if (c == 0xC2 && i + 1 < len && s[i + 1] < 0xA0)
			return 1; /* C1 controls, NEL included */
		if (c == 0xE2 && i + 2 < len && s[i + 1] == 0x80 &&
		    (s[i + 2] == 0xA8 || s[i + 2] == 0xA9))
			return 1; /* line and paragraph separators */
		if (c == 0xEF && i + 2 < len &&
		    ((s[i + 1] == 0xBB && s[i + 2] == 0xBF) ||
		     (s[i + 1] == 0xBF && s[i + 2] >= 0xBE)))
			return 1; /* byte order mark, U+FFFE, U+FFFF */
	}
	return 0;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* go-yaml quotes text that starts like a date ("2024-01-31...") since it
 * would resolve as a timestamp; four digits and a dash is enough to quote. */
static int looks_like_timestamp(const unsigned char *s, size_t len)
{
	return len >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
	       s[4] == '-';
}

/* go-yaml also quotes YAML 1.1 base-60 numbers ("1:20"); quote anything
 * made of digits, '_', '.' and at least one ':' after a leading digit. */
static int looks_like_base60(const unsigned char *s, size_t len)
{
	size_t i = len > 0 && (s[0] == '+' || s[0] == '-');
	int colon = 0;

	if (i >= len || !is_digit(s[i]))
		return 0;
	for (; i < len; i++) {
		if (s[i] == ':')
			colon = 1;
		else if (!is_digit(s[i]) && s[i] != '_' && s[i] != '.')
			return 0;
	}
	return colon;
}

static int would_change_type(const char *s, size_t len)
{
	enum kft_yaml_kind kind;

	if (kft_yaml_resolve_plain(s, len, &kind, NULL) < 0 || kind != KFT_YAML_STR)
		return 1;
	if (len == 2 && memcmp(s, "<<", 2) == 0)
		return 1;
	return looks_like_timestamp((const unsigned char *)s, len) ||
	       looks_like_base60((const unsigned char *)s, len);
}

static yaml_scalar_style_t string_style(const char *s, size_t len, int is_key)
{
	if (needs_escapes((const unsigned char *)s, len))
		return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	if (memchr(s, '\n', len))
		return is_key ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_LITERAL_SCALAR_STYLE;
	if (would_change_type(s, len))
		return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	return YAML_PLAIN_SCALAR_STYLE;
}

/* ---- the tree walk ---- */

static int emit_scalar(struct printer *p, const char *text, size_t len, yaml_scalar_style_t style)
{
	yaml_event_t event;
	int ok;

	if (len > INT_MAX)
		return kft_error_set(p->err, KFT_EINVAL, "YAML output: string too long");
	ok = yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)text, (int)len, 1, 1,
	                                  style);
	return emit(p, &event, ok);
}

static int check_utf8(struct printer *p, const char *s, size_t len)
{
	if (!kft_utf8_valid(s, len))
		return kft_error_set(p->err, KFT_EINVAL, "YAML output: string is not valid UTF-8");
	return 0;
}

static int emit_string(struct printer *p, const char *s, size_t len, int is_key)
{
	int rc = check_utf8(p, s, len);

	if (rc < 0)
		return rc;
	if (is_key && memchr(s, '\0', len))
		return kft_error_set(p->err, KFT_EINVAL,
		                     "YAML output: object key contains a NUL character");
	return emit_scalar(p, s, len, string_style(s, len, is_key));
}

static int emit_number_or_word(struct printer *p, const json_t *v)
{
	char buf[KFT_YAML_NUMBER_MAX];
	const char *text = buf;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL: kft_yaml_format_real(json_real_value(v), buf); break;
	case JSON_TRUE: text = "true"; break;
	case JSON_FALSE: text = "false"; break;
	default: text = "null"; break;
	}
	return emit_scalar(p, text, strlen(text), YAML_PLAIN_SCALAR_STYLE);
}

static int emit_value(struct printer *p, const json_t *v, int depth);

static int emit_object(struct printer *p, const json_t *v, int depth)
{
	yaml_event_t event;
	const char *key;
	size_t len;
	json_t *member;
	int rc = emit(p, &event,
	              yaml_mapping_start_event_initialize(&event, NULL, NULL, 1,
	                                                  YAML_BLOCK_MAPPING_STYLE));

	/* jansson's foreach macro takes a non-const object; it does not modify it. */
	json_object_keylen_foreach((json_t *)v, key, len, member)
	{
		if (rc == 0)
			rc = emit_string(p, key, len, 1);
		if (rc == 0)
			rc = emit_value(p, member, depth + 1);
	}
	return rc < 0 ? rc : emit(p, &event, yaml_mapping_end_event_initialize(&event));
}

static int emit_array(struct printer *p, const json_t *v, int depth)
{
	yaml_event_t event;
	size_t i;
	json_t *item;
	int rc = emit(p, &event,
	              yaml_sequence_start_event_initialize(&event, NULL, NULL, 1,
	                                                   YAML_BLOCK_SEQUENCE_STYLE));

	json_array_foreach(v, i, item)
	{
		if (rc == 0)
			rc = emit_value(p, item, depth + 1);
	}
	return rc < 0 ? rc : emit(p, &event, yaml_sequence_end_event_initialize(&event));
}

static int emit_value(struct printer *p, const json_t *v, int depth)
{
	if (depth >= KFT_YAML_EMIT_MAX_DEPTH)
		return kft_error_set(p->err, KFT_ELIMIT, "YAML output: tree deeper than %d levels",
		                     KFT_YAML_EMIT_MAX_DEPTH);
	switch (json_typeof(v)) {
	case JSON_OBJECT: return emit_object(p, v, depth);
	case JSON_ARRAY: return emit_array(p, v, depth);
	case JSON_STRING: return emit_string(p, json_string_value(v), json_string_length(v), 0);
	default: return emit_number_or_word(p, v);
	}
}

static int emit_document(struct printer *p, const json_t *root)
{
	yaml_event_t event;
	int rc;

	rc = emit(p, &event, yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING));
	if (rc == 0)
		rc = emit(p, &event,
		          yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1));
	if (rc == 0)
		rc = emit_value(p, root, 0);
	if (rc == 0)
		rc = emit(p, &event, yaml_document_end_event_initialize(&event, 1));
	if (rc == 0)
		rc = emit(p, &event, yaml_stream_end_event_initialize(&event));
	if (rc == 0 && !yaml_emitter_flush(&p->emitter))
		rc = kft_error_set(p->err, KFT_ENOMEM, "YAML output: out of memory");
	return rc;
}

/* Prints root into a malloc'd string in *text; returns 0 or a kft_status. */
static int emit_text(const json_t *root, kft_error *err, char **text)
{
	struct printer p;
	int rc;

	*text = NULL;
	if (!root)
		return kft_error_set(err, KFT_EINVAL, "YAML output: no tree to print");
	memset(&p, 0, sizeof(p));
	p.err = err;
	if (!yaml_emitter_initialize(&p.emitter))
		return kft_error_set(err, KFT_ENOMEM, "YAML output: out of memory");
	yaml_emitter_set_output(&p.emitter, collect, &p.out);
	yaml_emitter_set_unicode(&p.emitter, 1);
	yaml_emitter_set_indent(&p.emitter, 2);
	yaml_emitter_set_width(&p.emitter, -1);
	yaml_emitter_set_break(&p.emitter, YAML_LN_BREAK);
	rc = emit_document(&p, root);
	yaml_emitter_delete(&p.emitter);
	if (rc == 0 && !p.out.buf)
		kft_strbuf_putn(&p.out, "", 0); /* "" for an empty stream, not NULL */
	if (rc == 0 && p.out.failed)
		rc = kft_error_set(err, KFT_ENOMEM, "YAML output: out of memory");
	if (rc < 0) {
		kft_strbuf_free(&p.out);
		return rc;
	}
	*text = kft_strbuf_detach(&p.out);
	return 0;
}

char *kft_yaml_emit(const json_t *root, kft_error *err)
{
	char *text;
	emit_text(root, err, &text);
	return text;
}

int kft_yaml_emit_file(FILE *out, const json_t *root, int document_marker, kft_error *err)
{
	char *text;
	size_t len;
	int rc;

	if (!out)
		return kft_error_set(err, KFT_EINVAL, "YAML output: no file to write to");
	rc = emit_text(root, err, &text);
	if (rc < 0)
		return rc;
	len = strlen(text);
	if ((document_marker && fputs("---\n", out) == EOF) || fwrite(text, 1, len, out) != len)
		rc = kft_error_set(err, KFT_EIO, "YAML output: write failed");
	free(text);
	return rc;
}
