/*
 * base64.c - Go's StdEncoding and RawURLEncoding (see base64.h).
 *
 * One encoder and one decoder, told the alphabet and whether '=' pads.
 * Decoding gathers the alphabet's characters (line breaks dropped) into
 * groups of four: with padding, only the last group may end in one or two
 * '=' and every group is whole; without, a last group of two or three
 * characters carries one or two bytes.
 */
#include "util/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct encoding {
	const char *alphabet; /* 64 characters */
	int padded;
} encoding;

static const encoding std_encoding = {
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 1};
static const encoding raw_url_encoding = {
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 0};

static char *encode(const encoding *enc, const unsigned char *p, size_t len, size_t *out_len)
{
	if (len > SIZE_MAX / 4 * 3 - 3)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	const char *a = enc->alphabet;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = a[v >> 18 & 63];
		*o++ = a[v >> 12 & 63];
		*o++ = a[v >> 6 & 63];
		*o++ = a[v & 63];
	}
	if (i < len) {
		int two = i + 1 < len;
		uint32_t v = (uint32_t)p[i] << 16 | (two ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = a[v >> 18 & 63];
		*o++ = a[v >> 12 & 63];
		if (two)
			*o++ = a[v >> 6 & 63];
		else if (enc->padded)
			*o++ = '=';
		if (enc->padded)
			*o++ = '=';
	}
	*o = '\0';
	if (out_len)
		*out_len = (size_t)(o - out);
	return out;
}

static int value_of(const encoding *enc, unsigned char c)
{
	const char *at = c ? memchr(enc->alphabet, c, 64) : NULL;
	return at ? (int)(at - enc->alphabet) : -1;
}

static unsigned char *decode(const encoding *enc, const char *in, size_t n, size_t *out_len)
{
	unsigned char *out = malloc(n / 4 * 3 + 4);
	if (!out)
		return NULL;
	size_t o = 0;
	uint32_t v = 0;
	int k = 0, pad = 0, ended = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '\r' || c == '\n')
			continue;
		if (ended) /* nothing after a padded group */
			goto bad;
		if (c == '=' && enc->padded && k >= 2) { /* '=' only third or fourth */
			pad++;
		} else {
			int x = value_of(enc, c);
			if (x < 0 || pad)
				goto bad;
			v |= (uint32_t)x << (18 - 6 * k);
		}
		if (++k < 4)
			continue;
		out[o++] = (unsigned char)(v >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(v >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)v;
		ended = pad > 0;
		k = 0;
		v = 0;
	}
	if (k != 0) { /* a last group cut short: whole groups only when padded */
		if (enc->padded || k == 1)
			goto bad;
		out[o++] = (unsigned char)(v >> 16);
		if (k == 3)
			out[o++] = (unsigned char)(v >> 8);
	}
	out[o] = '\0';
	*out_len = o;
	return out;
bad:
	free(out);
	return NULL;
}

char *kft_base64_encode(const void *data, size_t len)
{
	return encode(&std_encoding, data, len, NULL);
}

char *kft_base64_decode(const char *in, size_t *out_len)
{
	return (char *)decode(&std_encoding, in, strlen(in), out_len);
}

unsigned char *kft_base64url_decode(const char *in, size_t len, size_t *out_len)
{
	return decode(&raw_url_encoding, in, len, out_len);
}

char *kft_base64url_encode(const unsigned char *in, size_t len, size_t *out_len)
{
	return encode(&raw_url_encoding, in, len, out_len);
}

/* ---- validating as Go reports it -------------------------------------------- */

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static int is_newline(unsigned char c)
{
	return c == '\n' || c == '\r';
}

/* One 4-character quantum from s[*si]; Go's decodeQuantum. Returns -1 when
 * fine (*decoded gets the bytes it yields, *done when input ended), else the
 * offset Go's CorruptInputError names. */
static long b64_quantum(const unsigned char *s, size_t n, size_t *si, size_t *decoded, int *done)
{
	for (size_t j = 0; j < 4; j++) {
		if (*si == n) {
			if (j == 0) {
				*done = 1;
				return -1;
			}
			return (long)(*si - j); /* padding is required */
		}
		unsigned char c = s[(*si)++];
		if (b64_value(c) >= 0)
			continue;
		if (is_newline(c)) {
			j--; /* wraps to SIZE_MAX at j == 0; the loop's j++ brings it back */
			continue;
		}
		if (c != '=' || j < 2)
			return (long)(*si - 1);
		if (j == 2) { /* "==" expected, the first one read */
			while (*si < n && is_newline(s[*si]))
				(*si)++;
			if (*si == n)
				return (long)n;
			if (s[*si] != '=')
				return (long)(*si - 1);
			(*si)++;
		}
		while (*si < n && is_newline(s[*si]))
			(*si)++;
		if (*si < n)
			return (long)*si; /* trailing garbage */
		*decoded += j - 1;
		*done = 1;
		return -1;
	}
	*decoded += 3;
	return -1;
}

long kft_base64_check(const char *s, size_t n, size_t *decoded)
{
	size_t si = 0;
	int done = 0;
	*decoded = 0;
	while (!done) {
		long bad = b64_quantum((const unsigned char *)s, n, &si, decoded, &done);
		if (bad >= 0)
			return bad;
	}
	return -1;
}
