/*
 * decode.c - from bytes to JSON trees: the front door of the decoder.
 *
 * kft_decode does the checks that are the same for YAML and JSON before any
 * parser sees the bytes: the size bound, an optional UTF-8 byte order mark,
 * valid UTF-8 and no NUL bytes (so every later error is about syntax, and
 * parsers never meet bytes they would misreport). It then sends the text to
 * one of two readers, chosen the way kubectl chooses: text whose first
 * significant byte is '{' or '[' is JSON, anything else is YAML
 * (yaml_load.c).
 *
 * JSON is parsed by jansson one value at a time, so several concatenated
 * objects form a stream like YAML documents. jansson accepts nesting far
 * deeper than we want and does not cap the number of values, so a cheap
 * scan over the text enforces our depth and size bounds first, pointing at
 * the exact bracket that goes too deep.
 *
 * Positions are reported as 1-based line and column, columns in characters,
 * computed from byte offsets only when needed (errors and document starts).
 */
#include "yaml_internal.h"
#include "util/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL)

static int fail_at_offset(kft_error *err, kft_status code, const char *source, const char *text,
                          size_t offset, const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));

static int fail_at_offset(kft_error *err, kft_status code, const char *source, const char *text,
                          size_t offset, const char *fmt, ...)
{
	char message[KFT_ERROR_MESSAGE_MAX];
	int line, column;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	kft_text_position(text, offset, &line, &column);
	return kft_error_set(err, code, "%s:%d:%d: %s", source, line, column, message);
}

static int check_text(const char *data, size_t len, const char *source, kft_error *err)
{
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0;

	while (i < len) {
		size_t n;
		if (s[i] == 0)
			return fail_at_offset(err, KFT_EPARSE, source, data, i,
			                      "NUL byte in input");
		n = kft_utf8_sequence(s + i, len - i);
		if (n == 0)
			return fail_at_offset(err, KFT_EPARSE, source, data, i,
			                      "invalid UTF-8 (byte 0x%02x)", s[i]);
		i += n;
	}
	return 0;
}

static size_t skip_json_space(const char *data, size_t len, size_t i)
{
	while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
		i++;
	return i;
}

static int is_word_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '.' || c == '+' || c == '-';
}

/* Counts values and checks nesting in JSON text without building anything.
 * A string counts as a value unless a ':' follows it (then it was a key);
 * numbers and literals count once at their first character. */
static int json_prescan(const char *d, size_t len, const char *source, kft_error *err)
{
	size_t values = 0;
	int depth = 0, in_string = 0, string_just_ended = 0;

	for (size_t i = 0; i < len; i++) {
		char c = d[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0, string_just_ended = 1;
			continue;
		}
		if (c == ':' && string_just_ended)
			values--;
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			string_just_ended = 0;
		if (c == '{' || c == '[') {
			values++;
			if (++depth > KFT_DECODE_MAX_DEPTH)
				return fail_at_offset(err, KFT_ELIMIT, source, d, i,
				                      "nesting deeper than %d levels",
				                      KFT_DECODE_MAX_DEPTH);
		} else if (c == '}' || c == ']') {
			depth -= depth > 0;
		} else if (c == '"') {
			values++;
			in_string = 1;
		} else if (c && strchr("-0123456789tfn", c) &&
		           (i == 0 || !is_word_char(d[i - 1]))) {
			values++;
		}
		if (values > KFT_DECODE_MAX_NODES)
			return fail_at_offset(err, KFT_ELIMIT, source, d, i,
			                      "more than %d values in one input",
			                      KFT_DECODE_MAX_NODES);
	}
	return 0;
}

/* jansson stops right after a duplicated key's closing quote, at `close`;
 * walk back to the opening quote: the first '"' that is not escaped, i.e.
 * not preceded by an odd run of backslashes. Returns `close` if none. */
static size_t find_key_start(const char *d, size_t start, size_t close)
{
	for (size_t q = close; q-- > start;) {
		size_t slashes = 0;
		if (d[q] != '"')
			continue;
		while (q - slashes > start && d[q - 1 - slashes] == '\\')
			slashes++;
		if (slashes % 2 == 0)
			return q;
	}
	return close;
}

static int json_duplicate_key(const char *d, size_t start, size_t end, const char *source,
                              kft_error *err)
{
	char shown[KFT_KEY_TEXT_MAX];
	size_t close = end > start && d[end - 1] == '"' ? end - 1 : end;
	size_t q = close < end ? find_key_start(d, start, close) : end;
	json_t *key = q < close ? json_loadb(d + q, end - q, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
	                        : NULL;

	if (!json_is_string(key)) {
		json_decref(key);
		return fail_at_offset(err, KFT_EINVAL, source, d, end, "duplicate key");
	}
	kft_describe_key(json_string_value(key), json_string_length(key), shown);
	json_decref(key);
	return fail_at_offset(err, KFT_EINVAL, source, d, q, "key %s already set in map", shown);
}

static int json_failure(const char *d, size_t len, size_t start, const json_error_t *jerr,
                        const char *source, kft_error *err)
{
	size_t at = start + (jerr->position > 0 ? (size_t)jerr->position : 0);

	if (at > len)
		at = len;
	if (json_error_code(jerr) == json_error_out_of_memory)
		return kft_error_set(err, KFT_ENOMEM, "%s: out of memory", source);
	if (json_error_code(jerr) == json_error_duplicate_key)
		return json_duplicate_key(d, start, at, source, err);
	return fail_at_offset(err, KFT_EPARSE, source, d, at, "%s", jerr->text);
}

static int decode_json(const char *d, size_t len, const char *source, kft_doc_list *out,
                       kft_error *err)
{
	kft_text_cursor cursor = {0, 1, 1, 0};
	size_t at;
	int rc = json_prescan(d, len, source, err);

	for (at = skip_json_space(d, len, 0); rc == 0 && at < len;
	     at = skip_json_space(d, len, at)) {
		json_error_t jerr;
		json_t *value = json_loadb(d + at, len - at, JSON_FLAGS, &jerr);
		if (!value)
			return json_failure(d, len, at, &jerr, source, err);
		kft_text_cursor_advance(&cursor, d, at);
		rc = kft_doc_list_push(out, value, cursor.line, cursor.column, source, err);
		at += (size_t)jerr.position;
	}
	return rc;
}

static int decode_text(const char *data, size_t len, const char *source, kft_doc_list *out,
                       kft_error *err)
{
	size_t first;
	int rc;

	if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
		data += 3;
		len -= 3;
	}
	rc = check_text(data, len, source, err);
	if (rc < 0)
		return rc;
	first = skip_json_space(data, len, 0);
	if (first < len && (data[first] == '{' || data[first] == '['))
		rc = decode_json(data, len, source, out, err);
	else
		rc = kft_yaml_load(data, len, source, out, err);
	if (rc == 0 && out->count == 0)
		rc = kft_error_set(err, KFT_EINVAL, "%s: empty input: no objects found", source);
	return rc;
}

int kft_decode(const char *data, size_t len, const char *source, kft_doc_list *out, kft_error *err)
{
	int rc;

	if (!source)
		source = "-";
	if (!out)
		return kft_error_set(err, KFT_EINVAL, "%s: no list to decode into", source);
	out->items = NULL;
	out->count = 0;
	if (!data && len > 0)
		return kft_error_set(err, KFT_EINVAL, "%s: no data", source);
	if (len > KFT_DECODE_MAX_INPUT_BYTES)
		return kft_error_set(err, KFT_ELIMIT, "%s: input is larger than %zu bytes (64 MiB)",
		                     source, KFT_DECODE_MAX_INPUT_BYTES);
	rc = decode_text(len ? data : "", len, source, out, err);
	if (rc < 0)
		kft_doc_list_free(out);
	return rc;
}

/* Reads all of f into a malloc'd buffer, failing once it holds more than
 * the input bound, so a huge file costs at most one byte past the bound. */
static int read_all(FILE *f, const char *path, char **buf, size_t *len, kft_error *err)
{
	size_t cap = 0, n = 0;
	char *data = NULL;

	for (;;) {
		if (n == cap) {
			size_t want = cap ? 2 * cap : 64 * 1024;
			char *grown;
			if (want > KFT_DECODE_MAX_INPUT_BYTES + 1)
				want = KFT_DECODE_MAX_INPUT_BYTES + 1;
			grown = realloc(data, want);
			if (!grown) {
				free(data);
				return kft_error_set(err, KFT_ENOMEM, "%s: out of memory", path);
			}
			data = grown;
			cap = want;
		}
		size_t got = fread(data + n, 1, cap - n, f);
		n += got;
		if (n > KFT_DECODE_MAX_INPUT_BYTES) {
			free(data);
			return kft_error_set(err, KFT_ELIMIT,
			                     "%s: input is larger than %zu bytes (64 MiB)", path,
			                     KFT_DECODE_MAX_INPUT_BYTES);
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;
		free(data);
		return kft_error_set(err, KFT_EIO, "%s: read failed: %s", path, strerror(e));
	}
	*buf = data;
	*len = n;
	return 0;
}

int kft_decode_file(const char *path, kft_doc_list *out, kft_error *err)
{
	int from_stdin;
	FILE *f;
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (!out)
		return kft_error_set(err, KFT_EINVAL, "no list to decode into");
	out->items = NULL;
	out->count = 0;
	if (!path)
		return kft_error_set(err, KFT_EINVAL, "no file name given");
	from_stdin = strcmp(path, "-") == 0;
	f = from_stdin ? stdin : fopen(path, "rb");
	if (!f)
		return kft_error_set(err, KFT_EIO, "%s: %s", path, strerror(errno));
	rc = read_all(f, path, &data, &len, err);
	if (!from_stdin)
		fclose(f);
	if (rc == 0)
		rc = kft_decode(data, len, path, out, err);
	free(data);
	return rc;
}
