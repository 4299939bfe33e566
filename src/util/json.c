/*
 * json.c - small lookups over jansson trees, and a compact JSON writer; see
 * json.h.
 */
#include "util/json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kftrainer/error.h"
#include "util/utf8.h"

json_t *kft_json_find(const json_t *array, const char *key, const char *value)
{
	size_t i;
	json_t *e;
	json_array_foreach(array, i, e)
	{
		const char *v = json_string_value(json_object_get(e, key));
		if (v && strcmp(v, value) == 0)
			return e;
	}
	return NULL;
}

/* ---- writing -------------------------------------------------------------------- */

static inline void put(kft_strbuf *b, const char *s, size_t n)
{
	char *p = kft_strbuf_room(b, n);
	if (p) {
		memcpy(p, s, n);
		kft_strbuf_grew(b, n);
	}
}

static inline void put1(kft_strbuf *b, char c)
{
	char *p = kft_strbuf_room(b, 1);
	if (p) {
		*p = c;
		kft_strbuf_grew(b, 1);
	}
}

/* A byte a string holds as it is: printable ASCII but the quote and the
 * backslash. */
static inline int plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* How many bytes from u on (of n) are plain: eight at a time while no byte
 * of the eight is under 0x20, from 0x80 up, a quote or a backslash (the
 * word tests only tell whether such a byte is there; the bytes after the
 * last clean word are looked at one by one). */
static size_t plain_run(const unsigned char *u, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, q, bs;
		memcpy(&x, u + i, 8);
		q = x ^ (ones * '"');
		bs = x ^ (ones * '\\');
		if ((x & high) | ((x - ones * 0x20) & ~x & high) | ((q - ones) & ~q & high) |
		    ((bs - ones) & ~bs & high))
			break;
	}
	while (i < n && plain(u[i]))
		i++;
	return i;
}

/* A string or key, quoted, with jansson's escapes: the two-character ones
 * it knows, \u00XX (upper-case hex) for the other control characters, and
 * every other byte as is once the UTF-8 it belongs to is valid. */
static int put_string(kft_strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	put1(b, '"');
	for (;;) {
		size_t run = i;
		i += plain_run(u + i, n - i);
		put(b, s + run, i - run);
		if (i == n)
			break;
		unsigned char c = u[i];
		if (c >= 0x80) {
			size_t len = kft_utf8_sequence(u + i, n - i);
			if (!len)
				return KFT_EINVAL;
			put(b, s + i, len);
			i += len;
			continue;
		}
		char esc[6] = {'\\', 0, '0', '0', hex[c >> 4], hex[c & 15]};
		size_t elen = 2;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default: esc[1] = 'u', elen = 6;
		}
		put(b, esc, elen);
		i++;
	}
	put1(b, '"');
	return 0;
}

static void put_integer(kft_strbuf *b, json_int_t v)
{
	char digits[24], *p = digits + sizeof(digits);
	unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		*--p = (char)('0' + m % 10);
		m /= 10;
	} while (m);
	if (v < 0)
		*--p = '-';
	put(b, p, (size_t)(digits + sizeof(digits) - p));
}

/* As jansson writes a real: %.17g, ".0" when that reads as an integer, and
 * the exponent without its '+' or leading zeros ("1e+20" is "1e20"). */
static void put_real(kft_strbuf *b, double v)
{
	char text[40];
	int n = snprintf(text, sizeof(text) - 2, "%.17g", v);
	if (n <= 0 || (size_t)n >= sizeof(text) - 2) {
		b->failed = 1;
		return;
	}
	size_t len = (size_t)n;
	char *e = strchr(text, 'e');
	if (!e && !strchr(text, '.')) {
		memcpy(text + len, ".0", 3);
		len += 2;
	}
	if (e) {
		char *start = e + 1, *end = e + 2;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, len - (size_t)(end - text) + 1);
			len -= (size_t)(end - start);
		}
	}
	put(b, text, len);
}

static int dump(const json_t *v, kft_strbuf *b, int depth)
{
	if (depth > KFT_JSON_DUMP_MAX_DEPTH)
		return KFT_EINVAL;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *key;
		size_t klen;
		json_t *x;
		char sep = '{';
		json_object_keylen_foreach((json_t *)v, key, klen, x)
		{
			put1(b, sep);
			sep = ',';
			int rc = put_string(b, key, klen);
			put1(b, ':');
			if (rc == 0)
				rc = dump(x, b, depth + 1);
			if (rc)
				return rc;
		}
		put(b, sep == '{' ? "{}" : "}", sep == '{' ? 2 : 1);
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		put1(b, '[');
		for (size_t i = 0; i < n; i++) {
			if (i)
				put1(b, ',');
			int rc = dump(json_array_get(v, i), b, depth + 1);
			if (rc)
				return rc;
		}
		put1(b, ']');
		return 0;
	}
	case JSON_STRING: return put_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER: put_integer(b, json_integer_value(v)); return 0;
	case JSON_REAL: put_real(b, json_real_value(v)); return 0;
	case JSON_TRUE: put(b, "true", 4); return 0;
	case JSON_FALSE: put(b, "false", 5); return 0;
	case JSON_NULL: put(b, "null", 4); return 0;
	}
	return KFT_EINVAL;
}

int kft_json_dump(const json_t *v, kft_strbuf *out)
{
	int rc = v ? dump(v, out, 0) : KFT_EINVAL;
	return rc ? rc : out->failed ? KFT_ENOMEM : 0;
}
