/*
 * pctenc.c - percent-encoding (see pctenc.h).
 */
#include "util/pctenc.h"

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int kft_pct_encode(const char *in, bool keep_slash, char *out, size_t size)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t o = 0;
	if (!size)
		return -1;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		bool keep = unreserved(*p) || (keep_slash && *p == '/');
		if (o + (keep ? 1 : 3) >= size) {
			out[o] = '\0';
			return -1;
		}
		if (keep) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = digits[*p >> 4];
			out[o++] = digits[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}
