/*
 * request.c - who may ask the dashboard, decided from a request's head
 * alone (the server core asks on its poll thread, before a worker is
 * taken), and the API path's segments. Everything here reads bytes any
 * local process (or, off loopback, anyone) may send, so it is pure and has
 * a fuzz target (tests/fuzz/fuzz_ui_request.c).
 *
 * The rules, in order:
 *  - on a loopback listener, the Host must be a loopback name (any port: an
 *    SSH tunnel forwards another local port here) or the --public-url's
 *    host; a page elsewhere cannot reach the server through a name it
 *    controls (DNS rebinding);
 *  - the token, on every address (the state directory is 0700: the
 *    dashboard must not hand another local user what it hides), as a
 *    bearer token, the token cookie (any of them, in a Cookie field of any
 *    length: a proxy or another server on the host may add its own) or
 *    ?token=. Each is looked at: a proxy's own Authorization hides nothing.
 *    A page load with ?token= is answered with the cookie and a redirect
 *    that drops it from the address bar, as Jupyter does;
 *  - an action (POST) carries the per-server CSRF token in X-KFT-CSRF (a
 *    header a cross-site form cannot set, and a cross-origin script could
 *    only set after a CORS preflight we never answer) and an Origin, when
 *    sent, that is ours: http://HOST, https://HOST behind a TLS-terminating
 *    proxy that says so (X-Forwarded-Proto: https), or the --public-url.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ui/ui_internal.h"

/* The name part of a Host value ("name", "name:port", "[v6]:port"). */
static size_t host_name_len(const char *host)
{
	if (host[0] == '[') {
		const char *close = strchr(host, ']');
		return close ? (size_t)(close - host) + 1 : strlen(host);
	}
	return strcspn(host, ":");
}

static bool host_ok(const kft_ui_gate *g, const char *host)
{
	static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
	if (!g->loopback)
		return true;
	if (g->public_host && strcasecmp(host, g->public_host) == 0)
		return true;
	size_t l = host_name_len(host);
	const char *port = host + l;
	if (*port &&
	    (port[0] != ':' || !port[1] || strspn(port + 1, "0123456789") != strlen(port + 1)))
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == l && strncasecmp(host, names[i], l) == 0)
			return true;
	return false;
}

static bool token_matches(const char *value, size_t len, void *ctx)
{
	return kft_http_secret_equal(value, len, ((const kft_ui_gate *)ctx)->token);
}

/* Whether any of the request's credentials is the token. */
static bool has_token(const kft_ui_gate *g, const kft_http_head *h)
{
	const char *pos = h->fields, *v;
	size_t len;
	if (!g->token[0])
		return false; /* no token was made: nobody */
	while (kft_http_field_next(&pos, "Authorization", &v, &len))
		if (len > 7 && strncasecmp(v, "Bearer ", 7) == 0 &&
		    token_matches(v + 7, len - 7, (void *)g))
			return true;
	if (kft_http_cookie_matches(h->fields, g->cookie, token_matches, (void *)g))
		return true;
	char q[KFT_UI_TOKEN_MAX + 2];
	return kft_http_query_value(h->query, "token", q, sizeof(q)) &&
	       token_matches(q, strlen(q), (void *)g);
}

/* The request came to us over HTTPS, as a TLS-terminating proxy says. */
static bool forwarded_https(const kft_http_head *h)
{
	char proto[32];
	if (kft_http_header(h->fields, "X-Forwarded-Proto", proto, sizeof(proto)) != 1)
		return false;
	proto[strcspn(proto, ", ")] = '\0'; /* the first hop's, in a list */
	return strcasecmp(proto, "https") == 0;
}

static bool origin_ok(const kft_ui_gate *g, const kft_http_head *h, const char *origin)
{
	char want[300];
	if (g->public_origin && strcasecmp(origin, g->public_origin) == 0)
		return true;
	snprintf(want, sizeof(want), "%s://%s", forwarded_https(h) ? "https" : "http", h->host);
	return strcasecmp(origin, want) == 0;
}

static int refuse_json(kft_http_answer *a, int code, const char *message)
{
	json_t *doc = json_pack("{s:s}", "error", message);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	*a = (kft_http_answer){.code = code, .type = "application/json", .body = text};
	return code;
}

/* The first load with ?token=: the cookie, and the address without it. */
static int to_cookie(const kft_ui_gate *g, const kft_http_head *h, kft_http_answer *a)
{
	bool secure = forwarded_https(h) ||
	              (g->public_origin && strncasecmp(g->public_origin, "https:", 6) == 0);
	*a = (kft_http_answer){.code = 303, .body = strdup("")};
	snprintf(a->extra, sizeof(a->extra),
	         "Location: /\r\nSet-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict%s\r\n",
	         g->cookie, g->token, secure ? "; Secure" : "");
	return 303;
}

static int check_action(const kft_ui_gate *g, const kft_http_head *h, kft_http_answer *a)
{
	char csrf[64], origin[512];
	if (kft_http_header(h->fields, "X-KFT-CSRF", csrf, sizeof(csrf)) != 1 ||
	    !kft_http_secret_equal(csrf, strlen(csrf), g->csrf))
		return refuse_json(a, 403, "missing or wrong X-KFT-CSRF token");
	int has_origin = kft_http_header(h->fields, "Origin", origin, sizeof(origin));
	if (has_origin < 0 || (has_origin == 1 && !origin_ok(g, h, origin)))
		return refuse_json(a, 403, "cross-origin request refused");
	return 0;
}

int kft_ui_admit(const kft_ui_gate *g, const kft_http_req *r, kft_http_answer *a)
{
	const kft_http_head *h = r->head;
	char q[KFT_UI_TOKEN_MAX + 2];
	if (!host_ok(g, h->host))
		return refuse_json(a, 403, "unknown Host: use the address kftrainer ui printed");
	if (!has_token(g, h)) {
		*a = (kft_http_answer){
		        .code = 401,
		        .body = strdup("401 Unauthorized: open the address kftrainer "
		                       "ui printed (it carries the token)\n")};
		return 401;
	}
	if (strcmp(h->method, "GET") == 0 && strcmp(h->path, "/") == 0 &&
	    kft_http_query_value(h->query, "token", q, sizeof(q)))
		return to_cookie(g, h, a);
	if (strcmp(h->method, "POST") == 0 && check_action(g, h, a))
		return a->code;
	if (r->refused == 413)
		return refuse_json(a, 413, "request body too large");
	return 0;
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
