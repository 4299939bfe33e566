/*
 * base64.c - standard base64, as Go's StdEncoding (see base64.h).
 *
 * Decoding gathers the alphabet's characters (line breaks dropped) into
 * groups of four; only the last group may end in one or two '='. Go's
 * non-strict decoder ignores the unused low bits of a final group, and so
 * does this one.
 */
#include "util/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *kft_base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = alphabet[v >> 6 & 63];
		*o++ = alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

char *kft_base64_decode(const char *in, size_t *out_len)
{
	size_t n = strlen(in), o = 0;
	char *out = malloc(n / 4 * 3 + 4);
	if (!out)
		return NULL;
	unsigned char group[4];
	int k = 0, pad = 0, ended = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '\r' || c == '\n')
			continue;
		if (i == n) {
			if (k != 0) /* a group cut short */
				goto bad;
			break;
		}
		if (ended) /* nothing after a padded group */
			goto bad;
		if (c == '=') {
			if (k < 2) /* "=" may stand only third or fourth */
				goto bad;
			pad++;
		} else if (pad || value_of(c) < 0) {
			goto bad;
		}
		group[k++] = c;
		if (k < 4)
			continue;
		uint32_t v = 0;
		for (int j = 0; j < 4; j++)
			v = v << 6 | (uint32_t)(group[j] == '=' ? 0 : value_of(group[j]));
		out[o++] = (char)(v >> 16);
		if (pad < 2)
			out[o++] = (char)(v >> 8);
		if (pad < 1)
			out[o++] = (char)v;
		ended = pad > 0;
		k = 0;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
bad:
	free(out);
	return NULL;
}
