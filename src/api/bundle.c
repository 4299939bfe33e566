/*
 * bundle.c - the compact tree encoding the schema bundle is embedded in (see
 * bundle.h for the format and why it exists).
 *
 * The encoder runs at build time (tools/embed.c) on trees our own decoder
 * made; the decoder runs on every process start. The decoder still treats
 * its input as untrusted bytes: every length is checked against what is
 * left, nesting is bounded, and a failure frees whatever was built.
 * Building uses jansson's *_nocheck setters because the keys and strings
 * were valid UTF-8 in the tree that was encoded.
 */
#include "api/bundle.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH   256
#define SIZED_DEPTH 3 /* objects above this depth are encoded 'O' */

/* ---- encoding --------------------------------------------------------------- */

static void put_varint(kft_strbuf *out, uint64_t v)
{
	do {
		unsigned char b = (unsigned char)(v & 0x7f);
		v >>= 7;
		kft_strbuf_putc(out, (char)(v ? b | 0x80 : b));
	} while (v);
}

static void put_bytes(kft_strbuf *out, const char *s, size_t n)
{
	put_varint(out, n);
	kft_strbuf_putn(out, s, n);
}

static int encode(const json_t *v, kft_strbuf *out, int depth);

/* Objects near the root (a file, its definitions, and each definition)
 * carry each member's length ('O'), so kft_bundle_members steps over a
 * member without reading it; deeper ones do not ('o'). */
static int encode_object(const json_t *v, kft_strbuf *out, int depth)
{
	const char *key;
	size_t klen;
	json_t *x;
	bool sized = depth < SIZED_DEPTH;
	kft_strbuf_putc(out, sized ? 'O' : 'o');
	put_varint(out, json_object_size(v));
	json_object_keylen_foreach((json_t *)v, key, klen, x)
	{
		put_bytes(out, key, klen);
		if (!sized) {
			if (encode(x, out, depth + 1) != 0)
				return -1;
			continue;
		}
		kft_strbuf member;
		kft_strbuf_init(&member);
		int rc = encode(x, &member, depth + 1);
		if (rc == 0 && !member.failed)
			put_bytes(out, member.buf, member.len);
		else
			out->failed |= member.failed;
		kft_strbuf_free(&member);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int encode_array(const json_t *v, kft_strbuf *out, int depth)
{
	size_t i;
	json_t *x;
	kft_strbuf_putc(out, 'a');
	put_varint(out, json_array_size(v));
	json_array_foreach(v, i, x) if (encode(x, out, depth + 1) != 0) return -1;
	return 0;
}

static int encode(const json_t *v, kft_strbuf *out, int depth)
{
	char real[40];
	if (depth > MAX_DEPTH)
		return -1;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return encode_object(v, out, depth);
	case JSON_ARRAY: return encode_array(v, out, depth);
	case JSON_STRING:
		kft_strbuf_putc(out, 's');
		put_bytes(out, json_string_value(v), json_string_length(v));
		return 0;
	case JSON_INTEGER: {
		/* Zigzag keeps small negative numbers short. */
		uint64_t u = (uint64_t)json_integer_value(v);
		kft_strbuf_putc(out, 'i');
		put_varint(out, (u << 1) ^ (json_integer_value(v) < 0 ? UINT64_MAX : 0));
		return 0;
	}
	case JSON_REAL:
		/* %.17g reads back as the same double. */
		snprintf(real, sizeof(real), "%.17g", json_real_value(v));
		kft_strbuf_putc(out, 'r');
		put_bytes(out, real, strlen(real));
		return 0;
	case JSON_TRUE: kft_strbuf_putc(out, 't'); return 0;
	case JSON_FALSE: kft_strbuf_putc(out, 'f'); return 0;
	case JSON_NULL: kft_strbuf_putc(out, 'n'); return 0;
	}
	return -1;
}

int kft_bundle_encode(const json_t *value, kft_strbuf *out)
{
	if (!value || encode(value, out, 0) != 0)
		return out->failed ? KFT_ENOMEM : KFT_ELIMIT;
	return out->failed ? KFT_ENOMEM : 0;
}

/* ---- decoding --------------------------------------------------------------- */

typedef struct reader {
	const unsigned char *p, *end;
} reader;

static int get_varint(reader *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		unsigned char b = *r->p++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* A length followed by that many bytes, which must all be there. */
static int get_bytes(reader *r, const char **s, size_t *n)
{
	uint64_t len;
	if (get_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p))
		return -1;
	*s = (const char *)r->p;
	*n = (size_t)len;
	r->p += len;
	return 0;
}

static json_t *decode(reader *r, int depth);

/* A member's value: in an 'O' object, its length and then exactly that many
 * bytes of encoding. */
static json_t *decode_member(reader *r, int depth, bool sized)
{
	const char *val;
	size_t vlen;
	if (!sized)
		return decode(r, depth);
	if (get_bytes(r, &val, &vlen) != 0)
		return NULL;
	reader sub = {(const unsigned char *)val, (const unsigned char *)val + vlen};
	json_t *x = decode(&sub, depth);
	if (x && sub.p != sub.end) {
		json_decref(x);
		return NULL;
	}
	return x;
}

static json_t *decode_object(reader *r, int depth, bool sized)
{
	uint64_t count;
	/* Every member takes at least two bytes (three in 'O'), which bounds
	 * count. */
	if (get_varint(r, &count) != 0 || count > (uint64_t)(r->end - r->p) / (sized ? 3 : 2))
		return NULL;
	json_t *obj = json_object();
	for (uint64_t i = 0; obj && i < count; i++) {
		const char *key;
		size_t klen;
		json_t *x =
		        get_bytes(r, &key, &klen) == 0 ? decode_member(r, depth + 1, sized) : NULL;
		if (!x || json_object_setn_new_nocheck(obj, key, klen, x) != 0) {
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}

static json_t *decode_array(reader *r, int depth)
{
	uint64_t count;
	if (get_varint(r, &count) != 0 || count > (uint64_t)(r->end - r->p))
		return NULL;
	json_t *arr = json_array();
	for (uint64_t i = 0; arr && i < count; i++) {
		if (json_array_append_new(arr, decode(r, depth + 1)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *decode_real(reader *r)
{
	const char *s;
	size_t n;
	char text[40], *end;
	if (get_bytes(r, &s, &n) != 0 || n == 0 || n >= sizeof(text))
		return NULL;
	memcpy(text, s, n);
	text[n] = '\0';
	double d = strtod(text, &end);
	return *end == '\0' ? json_real(d) : NULL;
}

static json_t *decode(reader *r, int depth)
{
	const char *s;
	size_t n;
	uint64_t u;
	if (depth > MAX_DEPTH || r->p >= r->end)
		return NULL;
	switch (*r->p++) {
	case 'o': return decode_object(r, depth, false);
	case 'O': return decode_object(r, depth, true);
	case 'a': return decode_array(r, depth);
	case 's': return get_bytes(r, &s, &n) == 0 ? json_stringn_nocheck(s, n) : NULL;
	case 'i':
		if (get_varint(r, &u) != 0)
			return NULL;
		return json_integer((json_int_t)((u >> 1) ^ (u & 1 ? UINT64_MAX : 0)));
	case 'r': return decode_real(r);
	case 't': return json_true();
	case 'f': return json_false();
	case 'n': return json_null();
	default: return NULL;
	}
}

int kft_bundle_decode(const unsigned char *data, size_t len, json_t **out)
{
	reader r = {data, data + len};
	*out = NULL;
	json_t *v = data ? decode(&r, 0) : NULL;
	if (!v)
		return KFT_EPARSE;
	if (r.p != r.end) {
		json_decref(v);
		return KFT_EPARSE;
	}
	*out = v;
	return 0;
}

/* ---- members without building ----------------------------------------------- */

/* Moves r past one value, building nothing: the decoder's checks, no
 * allocation. */
static int skip(reader *r, int depth)
{
	const char *s;
	size_t n;
	uint64_t u, count;
	if (depth > MAX_DEPTH || r->p >= r->end)
		return -1;
	switch (*r->p++) {
	case 'o':
		if (get_varint(r, &count) != 0 || count > (uint64_t)(r->end - r->p) / 2)
			return -1;
		for (uint64_t i = 0; i < count; i++)
			if (get_bytes(r, &s, &n) != 0 || skip(r, depth + 1) != 0)
				return -1;
		return 0;
	case 'O':
		if (get_varint(r, &count) != 0 || count > (uint64_t)(r->end - r->p) / 3)
			return -1;
		for (uint64_t i = 0; i < count; i++)
			if (get_bytes(r, &s, &n) != 0 || get_bytes(r, &s, &n) != 0)
				return -1;
		return 0;
	case 'a':
		if (get_varint(r, &count) != 0 || count > (uint64_t)(r->end - r->p))
			return -1;
		for (uint64_t i = 0; i < count; i++)
			if (skip(r, depth + 1) != 0)
				return -1;
		return 0;
	case 's': return get_bytes(r, &s, &n);
	case 'r': return get_bytes(r, &s, &n) == 0 && n > 0 && n < 40 ? 0 : -1;
	case 'i': return get_varint(r, &u);
	case 't':
	case 'f':
	case 'n': return 0;
	default: return -1;
	}
}

int kft_bundle_members(const unsigned char *data, size_t len, kft_bundle_member_fn fn, void *ctx)
{
	reader r = {data, data + len};
	uint64_t count;
	if (!data || len == 0)
		return KFT_EPARSE;
	bool sized = *r.p == 'O';
	if ((*r.p++ != 'o' && !sized) || get_varint(&r, &count) != 0 ||
	    count > (uint64_t)(r.end - r.p) / (sized ? 3 : 2))
		return KFT_EPARSE;
	for (uint64_t i = 0; i < count; i++) {
		const char *key, *val;
		size_t klen, vlen;
		if (get_bytes(&r, &key, &klen) != 0)
			return KFT_EPARSE;
		const unsigned char *value = r.p;
		if (sized ? get_bytes(&r, &val, &vlen) != 0 : skip(&r, 1) != 0)
			return KFT_EPARSE;
		if (sized)
			value = (const unsigned char *)val;
		else
			vlen = (size_t)(r.p - value);
		int rc = fn(key, klen, value, vlen, ctx);
		if (rc != 0)
			return rc;
	}
	return r.p == r.end ? 0 : KFT_EPARSE;
}
