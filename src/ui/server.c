/*
 * server.c - the dashboard's server: the server core (src/http/server.h)
 * with the dashboard's limits and handlers, and what api.c answers through
 * (see ui.h).
 *
 * Answers include streams that last as long as a browser tab is open
 * (server-sent events, a log being followed), so a worker serves one
 * request at a time for as long as it takes, at most MAX_WORKERS at once;
 * one more is answered 503 at once rather than queued behind a stream.
 * Who may ask is decided on the core's poll thread, before a worker is
 * taken (request.c), so idle or unauthenticated sockets never hold one.
 * Every wait of a stream is kft_http_wait, which sees the client going
 * away and the server stopping, so kft_ui_stop returns promptly and a tab
 * closed mid-stream frees its worker within a tick.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui_internal.h"
#include "util/random.h"
#include "util/secret.h"

#define HEAD_MAX    16384
#define TIMEOUT_MS  10000 /* for the head and a body to arrive; for a send */
#define MAX_WORKERS 64
#define STACK_SIZE  (512 * 1024)

struct kft_ui {
	kft_httpd *http;
	kft_httpd_handlers handlers;
	kft_ui_gate gate;
	kft_ui_env env; /* what requests use */
	pthread_mutex_t hooks_mu;
	kft_ui_hooks hooks;
	char *state_dir;
	char token[KFT_UI_TOKEN_MAX + 1];
	char csrf[33];
	char cookie[40];
	char public_origin[300], public_host[256];
	char url[600];
};

/* What every answer carries: the page loads nothing from elsewhere, runs no
 * inline script, is never framed, and nothing is cached. */
#define COMMON_HEADERS                                                                             \
	"X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\n"     \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "       \
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "          \
	"frame-ancestors 'none'\r\n"

/* ---- the handlers ------------------------------------------------------------------ */

static int admit(void *ctx, const kft_http_req *r, kft_http_answer *a)
{
	kft_ui *u = ctx;
	return kft_ui_admit(&u->gate, r, a);
}

static void serve_asset(kft_ui_conn *c)
{
	const char *path = strcmp(c->path, "/") == 0 ? "/index.html" : c->path;
	for (unsigned long i = 0; i < kft_ui_nassets; i++)
		if (strcmp(kft_ui_assets[i].path, path) == 0) {
			kft_ui_respond(c, 200, kft_ui_assets[i].type,
			               (const char *)kft_ui_assets[i].data, kft_ui_assets[i].len,
			               NULL);
			return;
		}
	kft_ui_respond_error(c, 404, "not found");
}

static void serve(void *ctx, kft_http_conn *http, const kft_http_req *r)
{
	kft_ui *u = ctx;
	kft_ui_conn c = {.env = &u->env,
	                 .http = http,
	                 .method = r->head->method,
	                 .path = r->head->path,
	                 .query = r->head->query,
	                 .fields = r->head->fields,
	                 .body = r->body_len ? r->body : NULL,
	                 .body_len = r->body_len};
	if (strncmp(c.path, "/api/", 5) == 0)
		kft_ui_api(&c);
	else if (strcmp(c.method, "GET") == 0 || strcmp(c.method, "HEAD") == 0)
		serve_asset(&c);
	else
		kft_ui_respond_error(&c, 405, "method not allowed");
	kft_local_close(c.local);
}

/* ---- start and stop --------------------------------------------------------------- */

static int set_token(kft_ui *u, const char *token, kft_error *err)
{
	if (!token)
		return kft_random_hex(u->token, 16) == 0
		               ? 0
		               : kft_error_set(err, KFT_EIO, "no random bytes for the token");
	size_t n = strlen(token);
	if (n == 0 || n > KFT_UI_TOKEN_MAX ||
	    strspn(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != n)
		return kft_error_set(err, KFT_EINVAL, "token: 1 to %d letters, digits, '-' or '_'",
		                     KFT_UI_TOKEN_MAX);
	memcpy(u->token, token, n + 1);
	return 0;
}

/* --public-url: "http(s)://host[:port]" and an optional "/"; its origin
 * and host are accepted, and it is the address printed. */
static int set_public_url(kft_ui *u, const char *url, kft_error *err)
{
	const char *rest = strncmp(url, "https://", 8) == 0  ? url + 8
	                   : strncmp(url, "http://", 7) == 0 ? url + 7
	                                                     : NULL;
	size_t hl = rest ? strcspn(rest, "/?#") : 0;
	if (!rest || hl == 0 || hl >= sizeof(u->public_host) ||
	    (rest[hl] && strcmp(rest + hl, "/") != 0) || strpbrk(url, " \t\r\n@"))
		return kft_error_set(err, KFT_EINVAL,
		                     "public URL \"%s\": want http(s)://HOST[:PORT] with no path",
		                     url);
	snprintf(u->public_host, sizeof(u->public_host), "%.*s", (int)hl, rest);
	snprintf(u->public_origin, sizeof(u->public_origin), "%.*s", (int)(rest - url + hl), url);
	u->gate.public_host = u->public_host;
	u->gate.public_origin = u->public_origin;
	return 0;
}

/* The address printed: the public URL's, else the listener's (a wildcard
 * shown as 127.0.0.1), with the token. */
static void set_url(kft_ui *u, const char *listen)
{
	char host[256] = "";
	int port = 0;
	kft_http_parse_listen(listen, host, sizeof(host), &port, NULL);
	if (u->public_origin[0]) {
		snprintf(u->url, sizeof(u->url), "%s/?token=%s", u->public_origin, u->token);
		return;
	}
	const char *shown = !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0
	                            ? "127.0.0.1"
	                            : host;
	bool v6 = strchr(shown, ':') != NULL;
	snprintf(u->url, sizeof(u->url), "http://%s%s%s:%d/?token=%s", v6 ? "[" : "", shown,
	         v6 ? "]" : "", kft_httpd_port(u->http), u->token);
}

static int start_http(kft_ui *u, const char *listen, kft_error *err)
{
	u->handlers = (kft_httpd_handlers){.admit = admit, .serve = serve, .ctx = u};
	kft_httpd_opts o = {.name = "dashboard",
	                    .listen = listen,
	                    .handlers = &u->handlers,
	                    .head_max = HEAD_MAX,
	                    .body_max = KFT_UI_BODY_MAX,
	                    .host_required = true,
	                    .head_timeout_ms = TIMEOUT_MS,
	                    .write_timeout_ms = TIMEOUT_MS,
	                    .workers = MAX_WORKERS,
	                    .queue = -1,
	                    .stack_size = STACK_SIZE,
	                    .headers = COMMON_HEADERS};
	int rc = kft_httpd_start(&o, &u->http, err);
	if (rc)
		return rc;
	u->gate.loopback = kft_httpd_loopback(u->http);
	snprintf(u->cookie, sizeof(u->cookie), "kft_ui_token_%d", kft_httpd_port(u->http));
	set_url(u, listen);
	return 0;
}

int kft_ui_start(const kft_ui_opts *o, kft_ui **out, kft_error *err)
{
	*out = NULL;
	kft_ui *u = calloc(1, sizeof(*u));
	if (!u)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	pthread_mutex_init(&u->hooks_mu, NULL);
	u->hooks = o->hooks;
	u->gate = (kft_ui_gate){.token = u->token, .csrf = u->csrf, .cookie = u->cookie};
	int rc = kft_random_hex(u->csrf, 16) == 0
	                 ? 0
	                 : kft_error_set(err, KFT_EIO, "no random bytes for the CSRF token");
	u->state_dir = o->state_dir ? strdup(o->state_dir) : kft_store_default_dir();
	u->env = (kft_ui_env){.source = o->kube ? &kft_ui_cluster_source : &kft_ui_local_source,
	                      .hooks = &u->hooks,
	                      .hooks_mu = &u->hooks_mu,
	                      .state_dir = u->state_dir,
	                      .csrf = u->csrf};
	if (rc == 0 && !u->state_dir)
		rc = kft_error_set(err, KFT_EINVAL, "no state directory");
	if (rc == 0)
		rc = set_token(u, o->token, err);
	if (rc == 0 && o->public_url)
		rc = set_public_url(u, o->public_url, err);
	if (rc == 0 && o->kube)
		rc = kft_ui_cluster_start(o->kube, o->namespace, &u->env.cluster, err);
	if (rc == 0)
		rc = start_http(u, o->listen ? o->listen : KFT_UI_DEFAULT_LISTEN, err);
	if (rc) {
		kft_ui_stop(u);
		return rc;
	}
	*out = u;
	return 0;
}

const char *kft_ui_url(const kft_ui *u)
{
	return u->url;
}

bool kft_ui_loopback(const kft_ui *u)
{
	return u->gate.loopback;
}

void kft_ui_stop(kft_ui *u)
{
	if (!u)
		return;
	kft_httpd_stop(u->http);
	pthread_mutex_destroy(&u->hooks_mu);
	kft_ui_cluster_stop(u->env.cluster);
	kft_secret_wipe(u->token, sizeof(u->token));
	free(u->state_dir);
	free(u);
}
