/*
 * request.c - what the dashboard reads from a request, without sockets: the
 * head (request line, query, Host, Content-Length), query parameters, the
 * token cookie and the API path's segments. Everything here reads bytes
 * any local process (or, off loopback, anyone) may send, so it is pure and
 * has a fuzz target (tests/fuzz/fuzz_ui_request.c).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ui/ui_internal.h"
#include "util/http.h"

int kft_ui_request_parse(const char *buf, size_t len, kft_ui_request *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->method, "GET");
	r->query = "";
	r->fields = "";
	r->content_length = -1;
	r->head = strndup(buf, len);
	r->path = r->head ? malloc(len + 1) : NULL;
	if (!r->path)
		return 500;
	r->path[0] = '\0';
	if (memchr(buf, '\0', len))
		return 400;
	int rc = kft_http_request_line(r->head, r->method, r->path);
	/* The query is cut off the head's copy of the target, in place. */
	char *target = strchr(r->head, ' ');
	size_t tl = target ? strcspn(target + 1, " \r\n") : 0;
	char *q = target ? memchr(target + 1, '?', tl) : NULL;
	const char *fields = strchr(target ? target + 1 + tl : r->head, '\n');
	r->fields = fields ? fields + 1 : "";
	if (q) {
		target[1 + tl] = '\0';
		r->query = q + 1;
	}
	if (rc)
		return rc;
	if (kft_http_header(r->fields, "Host", r->host, sizeof(r->host)) != 1)
		return 400;
	char cl[32];
	int has = kft_http_header(r->fields, "Content-Length", cl, sizeof(cl));
	if (has < 0)
		return 400;
	if (has == 1) {
		char *end;
		long long v = strtoll(cl, &end, 10);
		if (end == cl || *end || v < 0)
			return 400;
		r->content_length = v;
	}
	return 0;
}

void kft_ui_request_free(kft_ui_request *r)
{
	free(r->head);
	free(r->path);
	r->head = r->path = NULL;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
		return (ch | 0x20) - 'a' + 10;
	return -1;
}

bool kft_ui_query_value(const char *query, const char *name, char *buf, size_t size)
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

bool kft_ui_cookie(const char *fields, const char *name, char *buf, size_t size)
{
	char v[1024];
	size_t nl = strlen(name);
	if (size == 0 || kft_http_header(fields, "Cookie", v, sizeof(v)) != 1)
		return false;
	for (char *p = v; *p;) {
		p += strspn(p, " ;");
		size_t l = strcspn(p, ";");
		if (l > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
			size_t vl = l - nl - 1;
			if (vl >= size)
				return false;
			memcpy(buf, p + nl + 1, vl);
			buf[vl] = '\0';
			return true;
		}
		p += l;
	}
	return false;
}

int kft_ui_split(const char *path, char **copy, char **seg, int max)
{
	int n = 0;
	*copy = strdup(path);
	if (!*copy)
		return -1;
	for (char *p = *copy; *p;) {
		if (n == max)
			return -1; /* more segments than any route has */
		seg[n++] = p;
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	for (int i = 0; i < n; i++)
		if (!*seg[i])
			return -1;
	return n;
}
