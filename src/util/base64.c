/*
 * base64.c - unpadded URL-safe base64. See base64.h.
 *
 * Four characters carry three bytes; a tail of two or three characters
 * carries one or two. The decoder walks the input once, skipping line
 * breaks as Go's decoder does, and writes into a buffer sized for the
 * worst case.
 */
#include "util/base64.h"

#include <stdint.h>
#include <stdlib.h>

static int value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	return c == '_' ? 63 : -1;
}

unsigned char *kft_base64url_decode(const char *in, size_t len, size_t *out_len)
{
	unsigned char *out = malloc(len / 4 * 3 + 4);
	uint32_t acc = 0;
	size_t n = 0, chars = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '\r' || c == '\n')
			continue;
		int v = value_of(c);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		if (++chars % 4 == 0) {
			out[n++] = (unsigned char)(acc >> 16);
			out[n++] = (unsigned char)(acc >> 8);
			out[n++] = (unsigned char)acc;
			acc = 0;
		}
	}
	switch (chars % 4) {
	case 1: free(out); return NULL;
	case 2: out[n++] = (unsigned char)(acc >> 4); break;
	case 3:
		out[n++] = (unsigned char)(acc >> 10);
		out[n++] = (unsigned char)(acc >> 2);
		break;
	default: break;
	}
	out[n] = '\0';
	*out_len = n;
	return out;
}

char *kft_base64url_encode(const unsigned char *in, size_t len, size_t *out_len)
{
	static const char alphabet[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char *out = malloc(len / 3 * 4 + 4);
	size_t n = 0, i = 0;
	if (!out)
		return NULL;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[n++] = alphabet[v >> 18];
		out[n++] = alphabet[(v >> 12) & 63];
		out[n++] = alphabet[(v >> 6) & 63];
		out[n++] = alphabet[v & 63];
	}
	if (len - i == 1) {
		out[n++] = alphabet[in[i] >> 2];
		out[n++] = alphabet[(in[i] & 3) << 4];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
		out[n++] = alphabet[v >> 10];
		out[n++] = alphabet[(v >> 4) & 63];
		out[n++] = alphabet[(v & 15) << 2];
	}
	out[n] = '\0';
	if (out_len)
		*out_len = n;
	return out;
}
