/*
 * http.c - request head helpers shared by our HTTP servers; see http.h.
 */
#include "util/http.h"

#include <string.h>
#include <strings.h>

size_t kft_http_head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

int kft_http_header(const char *fields, const char *name, char *buf, size_t size)
{
	size_t nl = strlen(name);
	int found = 0;
	for (const char *p = fields; *p && *p != '\r' && *p != '\n';) {
		const char *eol = strchr(p, '\n');
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1, *end = p + ll;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
				end--;
			if (found || (size_t)(end - v) >= size)
				return -1;
			memcpy(buf, v, (size_t)(end - v));
			buf[end - v] = '\0';
			found = 1;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	return found;
}
