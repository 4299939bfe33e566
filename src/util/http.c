/*
 * http.c - request head helpers shared by our HTTP servers; see http.h.
 */
#include "util/http.h"

#include <stdlib.h>
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

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* The target's path, percent-decoded, query dropped, into out. 0 or 400. */
static int decode_path(const char *t, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len && t[i] != '?' && t[i] != '#'; i++) {
		if (t[i] != '%') {
			out[o++] = t[i];
			continue;
		}
		int hi = i + 2 < len ? hexval(t[i + 1]) : -1, lo = hi >= 0 ? hexval(t[i + 2]) : -1;
		if (lo < 0 || (hi == 0 && lo == 0))
			return 400;
		out[o++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[o] = '\0';
	return 0;
}

/* Header lines are "name: value"; anything else is a malformed request. */
static int check_fields(const char *p)
{
	while (*p && *p != '\r' && *p != '\n') {
		size_t name = strcspn(p, ":\r\n");
		if (name == 0 || p[name] != ':')
			return 400;
		for (size_t i = 0; i < name; i++)
			if (p[i] <= ' ' || p[i] == 0x7f)
				return 400;
		p += strcspn(p, "\n");
		if (*p)
			p++;
	}
	return 0;
}

int kft_http_request_line(const char *head, char method[16], char *path)
{
	const char *p = head;
	size_t ml = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
	if (ml == 0 || ml > 15 || p[ml] != ' ')
		return 400;
	memcpy(method, p, ml);
	method[ml] = '\0';
	const char *target = p + ml + 1;
	size_t tl = strcspn(target, " \r\n");
	const char *version = target + tl;
	if (tl == 0 || *version != ' ' || target[0] != '/')
		return 400;
	version++;
	size_t vl = strcspn(version, "\r\n");
	if (vl != 8 || strncmp(version, "HTTP/", 5) != 0)
		return 400;
	if (strncmp(version, "HTTP/1.1", 8) != 0 && strncmp(version, "HTTP/1.0", 8) != 0)
		return 505;
	const char *fields = version + vl;
	fields += strspn(fields, "\r");
	if (*fields == '\n')
		fields++;
	int rc = check_fields(fields);
	return rc ? rc : decode_path(target, tl, path);
}

int kft_http_parse_listen(const char *addr, char *hostbuf, size_t hostsize, int *port,
                          kft_error *err)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return kft_error_set(err, KFT_EINVAL,
		                     "listen address \"%s\": missing port in address", addr);
	const char *h = addr;
	size_t hl = (size_t)(colon - addr);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= hostsize)
		return kft_error_set(err, KFT_EINVAL, "listen address \"%s\": host too long", addr);
	memcpy(hostbuf, h, hl);
	hostbuf[hl] = '\0';
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || p < 0 || p > 65535)
		return kft_error_set(err, KFT_EINVAL, "listen address \"%s\": invalid port", addr);
	*port = (int)p;
	return 0;
}
