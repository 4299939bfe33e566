/*
 * parse.c - reading a request head, the same way for every server of ours;
 * see http.h. Nothing here trusts its input: lengths are bounded by the
 * caller's buffer, values are copied only into buffers whose size is
 * checked, and a field that could be read two ways (given twice) is refused.
 */
#include "http/http.h"

#include <stdio.h>
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

bool kft_http_field_next(const char **pos, const char *name, const char **value, size_t *len)
{
	size_t nl = strlen(name);
	for (const char *p = *pos; p && *p && *p != '\r' && *p != '\n';) {
		const char *eol = strchr(p, '\n');
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		const char *next = eol ? eol + 1 : p + ll;
		if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1, *end = p + ll;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
				end--;
			*value = v;
			*len = (size_t)(end - v);
			*pos = next;
			return true;
		}
		p = next;
	}
	*pos = NULL;
	return false;
}

int kft_http_header(const char *fields, const char *name, char *buf, size_t size)
{
	const char *pos = fields, *v;
	size_t len;
	int found = 0;
	while (kft_http_field_next(&pos, name, &v, &len)) {
		if (found || len >= size)
			return -1;
		memcpy(buf, v, len);
		buf[len] = '\0';
		found = 1;
	}
	return found;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
		return (ch | 0x20) - 'a' + 10;
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

/* ---- the whole head -------------------------------------------------------------- */

/* A Content-Length as Go's server reads it: decimal digits only, at most 18
 * of them (so it fits). -1 when it is anything else. */
static long long parse_length(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
		return -1;
	long long v = 0;
	for (; *s; s++)
		v = v * 10 + (*s - '0');
	return v;
}

/* Cuts the query off the target in the head's own copy: the request line
 * stays "METHOD PATH" and query points past the '?'. */
static void split_query(kft_http_head *h)
{
	char *target = strchr(h->text, ' ');
	size_t tl = target ? strcspn(target + 1, " \r\n") : 0;
	char *q = target ? memchr(target + 1, '?', tl) : NULL;
	const char *fields = strchr(target ? target + 1 + tl : h->text, '\n');
	h->fields = fields ? fields + 1 : "";
	if (q) {
		target[1 + tl] = '\0';
		h->query = q + 1;
	}
}

static int head_fields(kft_http_head *h)
{
	char cl[32];
	if (kft_http_header(h->fields, "Host", h->host, sizeof(h->host)) < 0)
		return 400;
	int has = kft_http_header(h->fields, "Content-Length", cl, sizeof(cl));
	if (has < 0 || (has == 1 && (h->content_length = parse_length(cl)) < 0))
		return 400;
	const char *pos = h->fields, *v;
	size_t len;
	h->chunked = kft_http_field_next(&pos, "Transfer-Encoding", &v, &len);
	return 0;
}

int kft_http_head_parse(const char *buf, size_t len, kft_http_head *h)
{
	memset(h, 0, sizeof(*h));
	strcpy(h->method, "GET");
	h->query = "";
	h->fields = "";
	h->content_length = -1;
	h->len = len;
	h->text = strndup(buf, len);
	h->path = h->text ? malloc(len + 2) : NULL;
	if (!h->path)
		return 500;
	strcpy(h->path, "/");
	if (memchr(buf, '\0', len))
		return 400;
	int rc = kft_http_request_line(h->text, h->method, h->path);
	split_query(h);
	if (rc)
		return rc;
	return head_fields(h);
}

void kft_http_head_free(kft_http_head *h)
{
	free(h->text);
	free(h->path);
	h->text = h->path = NULL;
}

/* ---- query parameters, cookies, secrets -------------------------------------------- */

bool kft_http_query_value(const char *query, const char *name, char *buf, size_t size)
{
	size_t nl = strlen(name);
	if (size == 0)
		return false;
	for (const char *p = query; p && *p;) {
		size_t pl = strcspn(p, "&");
		if (pl >= nl && strncmp(p, name, nl) == 0 && (pl == nl || p[nl] == '=')) {
			size_t o = 0;
			for (size_t i = nl + (pl > nl); i < pl; i++) {
				char ch = p[i];
				if (ch == '+')
					ch = ' ';
				else if (ch == '%' && i + 2 < pl + 1 && hexval(p[i + 1]) >= 0 &&
				         hexval(p[i + 2]) >= 0) {
					ch = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
					i += 2;
				}
				if (o + 1 >= size || ch == '\0')
					return false;
				buf[o++] = ch;
			}
			buf[o] = '\0';
			return true;
		}
		p += pl;
		if (*p)
			p++;
	}
	return false;
}

/* Whether the "name=value" pairs of one Cookie value v[0..len) hold name
 * with a value match accepts. */
static bool cookie_pairs_match(const char *v, size_t len, const char *name,
                               bool (*match)(const char *, size_t, void *), void *ctx)
{
	size_t nl = strlen(name);
	const char *end = v + len;
	while (v < end) {
		while (v < end && (*v == ' ' || *v == ';'))
			v++;
		const char *semi = memchr(v, ';', (size_t)(end - v));
		size_t l = semi ? (size_t)(semi - v) : (size_t)(end - v);
		if (l > nl && strncmp(v, name, nl) == 0 && v[nl] == '=' &&
		    match(v + nl + 1, l - nl - 1, ctx))
			return true;
		v += l;
	}
	return false;
}

bool kft_http_cookie_matches(const char *fields, const char *name,
                             bool (*match)(const char *value, size_t len, void *ctx), void *ctx)
{
	const char *pos = fields, *v;
	size_t len;
	while (kft_http_field_next(&pos, "Cookie", &v, &len))
		if (cookie_pairs_match(v, len, name, match, ctx))
			return true;
	return false;
}

bool kft_http_secret_equal(const char *given, size_t len, const char *want)
{
	size_t wl = strlen(want);
	unsigned char diff = (unsigned char)(len != wl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < len ? given[i] : 0));
	return diff == 0;
}

const char *kft_http_reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 303: return "See Other";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Request Entity Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}
