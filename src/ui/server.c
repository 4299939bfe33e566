/*
 * server.c - the dashboard's HTTP server: sockets, threads, the request
 * head, who may ask, and the writing of answers (see ui.h).
 *
 * The request line is parsed by the controller's parser (kft_http_request_line)
 * and fields are read with util/http.h, the same code the local status
 * endpoint uses; what differs from the controller's probe server is the
 * connection model. Its answers are one short write; ours include streams
 * that last as long as a browser tab is open (server-sent events, a log being
 * followed). So here one thread accepts, and each connection gets a thread
 * of its own, at most MAX_CONNS at once (one more is answered 503 at once).
 * Every wait is a poll() bounded in time that also notices the client going
 * away and the server stopping, so kft_ui_stop returns promptly and a tab
 * closed mid-stream frees its thread within a tick. Each connection answers
 * one request and closes (Connection: close): the page opens few of them
 * and state stays out of the server.
 *
 * Who may ask: the Host must name the server when it listens on loopback
 * (a page elsewhere cannot reach it through a name it controls, DNS
 * rebinding); on any other address a token is required, as a bearer token,
 * the kft_ui_token cookie, or ?token= on the page's first load (answered
 * with the cookie and a redirect that drops it from the address bar).
 * Actions are POSTs with the per-server CSRF token in X-KFT-CSRF (a header a
 * cross-site form cannot set, and a cross-origin script could only set after
 * a CORS preflight we never answer) and an Origin, when sent, that is ours.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ui/ui_internal.h"
#include "util/http.h"
#include "util/random.h"
#include "util/clock.h"

#define HEAD_MAX     16384
#define HEAD_TIMEOUT 10000 /* ms for the head and a body to arrive */
#define SEND_TIMEOUT 10000 /* ms a send may wait for the client to read */
#define MAX_CONNS    64
#define TOKEN_COOKIE "kft_ui_token"

struct kft_ui {
	int lfd;
	int wake[2];
	pthread_t acceptor;
	bool accepting;
	atomic_bool stopping;
	pthread_mutex_t mu; /* active, and the cond */
	pthread_cond_t idle;
	int active;
	pthread_mutex_t hooks_mu;
	kft_ui_hooks hooks;
	kft_ui_cluster *cluster; /* cluster mode, else NULL */
	char *state_dir;
	char token[65]; /* "" when none is needed */
	char csrf[33];
	char url[512];
	int port;
	bool loopback;
};

static void hex_token(char *out, size_t bytes)
{
	unsigned char raw[32];
	if (bytes > sizeof(raw))
		bytes = sizeof(raw);
	kft_random_bytes(NULL, raw, bytes);
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* Equal without telling by the time taken where they differ. */
static bool same_secret(const char *given, const char *want)
{
	size_t gl = strlen(given), wl = strlen(want);
	unsigned char diff = gl != wl;
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(given[i < gl ? i : 0] ^ want[i]);
	return diff == 0;
}

/* ---- waiting and writing ---------------------------------------------------- */

/* Waits for fd (events) until deadline; 1 ready, 0 timed out or stopping. */
static int wait_for(kft_ui_conn *c, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - kft_clock_mono_ms();
		if (left <= 0 || atomic_load(&c->ui->stopping))
			return 0;
		struct pollfd p[2] = {{c->fd, events, 0}, {c->ui->wake[0], POLLIN, 0}};
		int n = poll(p, 2, (int)(left > 1000 ? 1000 : left));
		if (n < 0 && errno != EINTR)
			return 0;
		if (n > 0 && p[1].revents)
			return 0;
		if (n > 0 && p[0].revents)
			return 1;
	}
}

int kft_ui_send(kft_ui_conn *c, const void *buf, size_t len)
{
	const char *p = buf;
	long long deadline = kft_clock_mono_ms() + SEND_TIMEOUT;
	while (len > 0) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
		    !wait_for(c, POLLOUT, deadline))
			return -1;
	}
	return 0;
}

int kft_ui_wait(kft_ui_conn *c, int ms)
{
	long long deadline = kft_clock_mono_ms() + ms;
	for (;;) {
		if (atomic_load(&c->ui->stopping))
			return -1;
		long long left = deadline - kft_clock_mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p[2] = {{c->fd, POLLIN | POLLRDHUP, 0}, {c->ui->wake[0], POLLIN, 0}};
		int n = poll(p, 2, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && p[1].revents))
			return -1;
		if (n > 0 && p[0].revents) {
			/* A client of a stream sends nothing more: input is its close
			 * (or junk we drop); either way, read it off. */
			char junk[256];
			ssize_t r = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
			    (p[0].revents & (POLLHUP | POLLERR | POLLRDHUP)))
				return -1;
		}
	}
}

static const char *reason(int code)
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
	case 413: return "Payload Too Large";
	case 422: return "Unprocessable Entity";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

/* What every answer carries: the page loads nothing from elsewhere, runs no
 * inline script, is never framed, and no type is guessed from content. */
#define COMMON_HEADERS                                                                             \
	"Connection: close\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"        \
	"Referrer-Policy: no-referrer\r\nCache-Control: no-store\r\n"                              \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "       \
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "          \
	"frame-ancestors 'none'\r\n"

static int send_head(kft_ui_conn *c, int code, const char *type, long long len, const char *extra)
{
	char head[1024], length[48] = "";
	if (len >= 0)
		snprintf(length, sizeof(length), "Content-Length: %lld\r\n", len);
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s" COMMON_HEADERS, code,
	                 reason(code), type, length);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -1;
	if (kft_ui_send(c, head, (size_t)n) != 0)
		return -1;
	if (extra && kft_ui_send(c, extra, strlen(extra)) != 0)
		return -1;
	return kft_ui_send(c, "\r\n", 2);
}

int kft_ui_respond(kft_ui_conn *c, int code, const char *type, const char *body, size_t len,
                   const char *extra)
{
	if (send_head(c, code, type, (long long)len, extra) != 0)
		return -1;
	return len && strcmp(c->method, "HEAD") != 0 ? kft_ui_send(c, body, len) : 0;
}

int kft_ui_respond_json(kft_ui_conn *c, int code, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text)
		return kft_ui_respond(c, 500, "text/plain; charset=utf-8", "out of memory\n", 14,
		                      NULL);
	int rc = kft_ui_respond(c, code, "application/json", text, strlen(text), NULL);
	free(text);
	return rc;
}

int kft_ui_respond_error(kft_ui_conn *c, int code, const char *message)
{
	return kft_ui_respond_json(c, code, json_pack("{s:s}", "error", message ? message : ""));
}

int kft_ui_start_stream(kft_ui_conn *c, const char *type, const char *extra)
{
	return send_head(c, 200, type, -1, extra);
}

/* ---- the request ------------------------------------------------------------- */

bool kft_ui_query(const kft_ui_conn *c, const char *name, char *buf, size_t size)
{
	return kft_ui_query_value(c->query, name, buf, size);
}

/* Reads the head into buf (HEAD_MAX + 1). Its length, 0 when the client went
 * away or was too slow, -431 when it does not fit. Bytes read past the head
 * (a body's start) stay in buf; *got says how many were read in all. */
static long read_head(kft_ui_conn *c, char *buf, size_t *got, long long deadline)
{
	size_t n = 0;
	while (n < HEAD_MAX) {
		ssize_t r = recv(c->fd, buf + n, HEAD_MAX - n, MSG_DONTWAIT);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			    !wait_for(c, POLLIN, deadline))
				return 0;
			continue;
		}
		n += (size_t)r;
		size_t end = kft_http_head_end(buf, n);
		if (end) {
			*got = n;
			return (long)end;
		}
	}
	return -431;
}

static int read_body(kft_ui_conn *c, const char *have, size_t nhave, size_t want,
                     long long deadline)
{
	c->body = malloc(want + 1);
	if (!c->body)
		return -1;
	size_t n = nhave < want ? nhave : want;
	memcpy(c->body, have, n);
	while (n < want) {
		ssize_t r = recv(c->fd, c->body + n, want - n, MSG_DONTWAIT);
		if (r == 0)
			return -1;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			    !wait_for(c, POLLIN, deadline))
				return -1;
			continue;
		}
		n += (size_t)r;
	}
	c->body[want] = '\0';
	c->body_len = want;
	return 0;
}

/* The Host field names this server (loopback listeners only: elsewhere the
 * token is the gate). */
static bool host_ok(const kft_ui *u, const char *host)
{
	if (!u->loopback)
		return true;
	static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t l = strlen(names[i]);
		if (strncasecmp(host, names[i], l) == 0 &&
		    (host[l] == '\0' || (host[l] == ':' && atoi(host + l + 1) == u->port)))
			return true;
	}
	return false;
}

/* The token the request carries: bearer, cookie or query; "" when none. */
static void given_token(const kft_ui_conn *c, char *buf, size_t size)
{
	char v[1024];
	buf[0] = '\0';
	if (kft_http_header(c->fields, "Authorization", v, sizeof(v)) == 1 &&
	    strncasecmp(v, "Bearer ", 7) == 0) {
		if (strlen(v + 7) < size)
			memcpy(buf, v + 7, strlen(v + 7) + 1);
		return;
	}
	if (kft_ui_cookie(c->fields, TOKEN_COOKIE, buf, size))
		return;
	if (!kft_ui_query(c, "token", buf, size))
		buf[0] = '\0';
}

/* 0 when the request may go on; else the code it was refused with (the
 * answer is sent). */
static int authorise(kft_ui_conn *c, const char *host)
{
	kft_ui *u = c->ui;
	if (!host_ok(u, host)) {
		kft_ui_respond_error(c, 403, "unknown Host: use the address kftrainer ui printed");
		return 403;
	}
	if (u->token[0]) {
		char tok[128], q[128];
		given_token(c, tok, sizeof(tok));
		if (!same_secret(tok, u->token)) {
			const char *msg = "401 Unauthorized: open the address kftrainer ui printed "
			                  "(it carries the token)\n";
			kft_ui_respond(c, 401, "text/plain; charset=utf-8", msg, strlen(msg), NULL);
			return 401;
		}
		if (strcmp(c->method, "GET") == 0 && strcmp(c->path, "/") == 0 &&
		    kft_ui_query(c, "token", q, sizeof(q))) {
			char extra[256];
			snprintf(extra, sizeof(extra),
			         "Location: /\r\nSet-Cookie: " TOKEN_COOKIE
			         "=%s; Path=/; HttpOnly; SameSite=Strict\r\n",
			         u->token);
			kft_ui_respond(c, 303, "text/plain; charset=utf-8", "", 0, extra);
			return 303;
		}
	}
	if (strcmp(c->method, "POST") != 0)
		return 0;
	char csrf[64], origin[512], want[600];
	snprintf(want, sizeof(want), "http://%s", host);
	if (kft_http_header(c->fields, "X-KFT-CSRF", csrf, sizeof(csrf)) != 1 ||
	    !same_secret(csrf, u->csrf)) {
		kft_ui_respond_error(c, 403, "missing or wrong X-KFT-CSRF token");
		return 403;
	}
	int has_origin = kft_http_header(c->fields, "Origin", origin, sizeof(origin));
	if (has_origin < 0 || (has_origin == 1 && strcmp(origin, want) != 0)) {
		kft_ui_respond_error(c, 403, "cross-origin request refused");
		return 403;
	}
	return 0;
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

static void answer(kft_ui_conn *c, char *buf)
{
	size_t got = 0;
	long long deadline = kft_clock_mono_ms() + HEAD_TIMEOUT;
	long end = read_head(c, buf, &got, deadline);
	if (end == -431) {
		kft_ui_respond(c, 431, "text/plain; charset=utf-8", "", 0, NULL);
		return;
	}
	if (end <= 0)
		return;
	kft_ui_request r;
	int rc = kft_ui_request_parse(buf, (size_t)end, &r);
	memcpy(c->method, r.method, sizeof(c->method));
	c->path = r.path;
	r.path = NULL; /* the connection's now */
	c->query = r.query;
	c->fields = r.fields;
	if (!c->path) {
		kft_ui_request_free(&r);
		return;
	}
	if (rc) {
		kft_ui_respond(c, rc, "text/plain; charset=utf-8", "", 0, NULL);
	} else if (authorise(c, r.host) == 0) {
		long long want = r.content_length > 0 ? r.content_length : 0;
		if (want > KFT_UI_BODY_MAX)
			kft_ui_respond_error(c, 413, "request body too large");
		else if (want > 0 &&
		         read_body(c, buf + end, got - (size_t)end, (size_t)want, deadline) != 0)
			;
		else if (strncmp(c->path, "/api/", 5) == 0)
			kft_ui_api(c);
		else if (strcmp(c->method, "GET") == 0 || strcmp(c->method, "HEAD") == 0)
			serve_asset(c);
		else
			kft_ui_respond_error(c, 405, "method not allowed");
	}
	kft_ui_request_free(&r);
}

/* Closes our side after reading what the client still sends, so the kernel
 * does not reset the connection under an answer the client has not read. */
static void linger_close(int fd)
{
	char junk[4096];
	shutdown(fd, SHUT_WR);
	long long deadline = kft_clock_mono_ms() + 500;
	while (kft_clock_mono_ms() < deadline) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		if (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			break;
	}
	close(fd);
}

static void *conn_main(void *arg)
{
	kft_ui_conn *c = arg;
	kft_ui *u = c->ui;
	char *buf = malloc(HEAD_MAX + 1);
	if (buf)
		answer(c, buf);
	free(buf);
	free(c->path);
	free(c->body);
	kft_local_close(c->local);
	linger_close(c->fd);
	free(c);
	pthread_mutex_lock(&u->mu);
	if (--u->active == 0)
		pthread_cond_broadcast(&u->idle);
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

static void take(kft_ui *u, int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
	                           "Connection: close\r\n\r\n";
	pthread_mutex_lock(&u->mu);
	bool room = u->active < MAX_CONNS;
	if (room)
		u->active++;
	pthread_mutex_unlock(&u->mu);
	kft_ui_conn *c = room ? calloc(1, sizeof(*c)) : NULL;
	pthread_attr_t attr;
	pthread_t t;
	if (c) {
		c->ui = u;
		c->fd = fd;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 512 * 1024);
		int rc = pthread_create(&t, &attr, conn_main, c);
		pthread_attr_destroy(&attr);
		if (rc == 0)
			return;
		free(c);
	}
	if (room) {
		pthread_mutex_lock(&u->mu);
		u->active--;
		pthread_mutex_unlock(&u->mu);
	}
	if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* nothing more to tell a client we cannot serve */
	}
	close(fd);
}

static void *accept_main(void *arg)
{
	kft_ui *u = arg;
	while (!atomic_load(&u->stopping)) {
		struct pollfd p[2] = {{u->lfd, POLLIN, 0}, {u->wake[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			take(u, fd);
		else if (errno == EMFILE || errno == ENFILE)
			poll(NULL, 0, 100); /* out of descriptors: let streams end first */
	}
	return NULL;
}

/* ---- for api.c ------------------------------------------------------------------ */

kft_local *kft_ui_local(kft_ui_conn *c, kft_error *err)
{
	if (!c->local && kft_local_open(c->ui->state_dir, NULL, &c->local, err) != 0)
		c->local = NULL;
	return c->local;
}

const kft_ui_hooks *kft_ui_hooks_of(const kft_ui_conn *c)
{
	return &c->ui->hooks;
}

void kft_ui_hooks_lock(kft_ui_conn *c)
{
	pthread_mutex_lock(&c->ui->hooks_mu);
}

void kft_ui_hooks_unlock(kft_ui_conn *c)
{
	pthread_mutex_unlock(&c->ui->hooks_mu);
}

kft_ui_cluster *kft_ui_cluster_of(const kft_ui_conn *c)
{
	return c->ui->cluster;
}

const char *kft_ui_csrf(const kft_ui_conn *c)
{
	return c->ui->csrf;
}

/* ---- start and stop --------------------------------------------------------------- */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

static int bind_listen(kft_ui *u, const char *listen_addr, kft_error *err)
{
	char host[256], portbuf[16];
	int port;
	int rc = kft_http_parse_listen(listen_addr, host, sizeof(host), &port, err);
	if (rc)
		return rc;
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
	                         .ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
	                *res = NULL;
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	else
		hints.ai_flags |= AI_NUMERICHOST;
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	if (getaddrinfo(*host ? host : NULL, portbuf, &hints, &res) != 0 || !res)
		return kft_error_set(err, KFT_EINVAL,
		                     "listen address \"%s\": the host must be an IP address",
		                     listen_addr);
	u->loopback = *host && is_loopback(res->ai_addr);
	u->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (u->lfd >= 0)
		setsockopt(u->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (u->lfd < 0 || bind(u->lfd, res->ai_addr, res->ai_addrlen) != 0 ||
	    listen(u->lfd, 128) != 0) {
		rc = kft_error_set(err, KFT_EIO, "listen on %s: %s", listen_addr, strerror(errno));
		freeaddrinfo(res);
		return rc;
	}
	freeaddrinfo(res);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(u->lfd, (struct sockaddr *)&ss, &sl);
	u->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                         : ((struct sockaddr_in *)&ss)->sin_port);
	const char *shown = !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0
	                            ? "127.0.0.1"
	                            : host;
	bool v6 = strchr(shown, ':') != NULL;
	snprintf(u->url, sizeof(u->url), "http://%s%s%s:%d/", v6 ? "[" : "", shown, v6 ? "]" : "",
	         u->port);
	return 0;
}

int kft_ui_start(const kft_ui_opts *o, kft_ui **out, kft_error *err)
{
	*out = NULL;
	kft_ui *u = calloc(1, sizeof(*u));
	if (!u)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	u->lfd = -1;
	u->wake[0] = u->wake[1] = -1;
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->idle, NULL);
	pthread_mutex_init(&u->hooks_mu, NULL);
	u->hooks = o->hooks;
	u->state_dir = o->state_dir ? strdup(o->state_dir) : kft_store_default_dir();
	int rc = u->state_dir ? 0 : kft_error_set(err, KFT_EINVAL, "no state directory");
	if (rc == 0)
		rc = bind_listen(u, o->listen ? o->listen : KFT_UI_DEFAULT_LISTEN, err);
	if (rc == 0 && pipe2(u->wake, O_CLOEXEC | O_NONBLOCK) != 0)
		rc = kft_error_set(err, KFT_EIO, "pipe: %s", strerror(errno));
	hex_token(u->csrf, 16);
	if (rc == 0 && o->token && *o->token) {
		if (strlen(o->token) >= sizeof(u->token) ||
		    strspn(o->token, "0123456789abcdefABCDEF"
		                     "-_") != strlen(o->token))
			rc = kft_error_set(err, KFT_EINVAL,
			                   "token: at most 64 letters, digits, '-' or '_'");
		else
			snprintf(u->token, sizeof(u->token), "%s", o->token);
	} else if (rc == 0 && !u->loopback) {
		hex_token(u->token, 16);
	}
	if (rc == 0 && u->token[0]) {
		size_t l = strlen(u->url);
		snprintf(u->url + l, sizeof(u->url) - l, "?token=%s", u->token);
	}
	if (rc == 0 && o->kube)
		rc = kft_ui_cluster_start(o->kube, o->namespace, &u->cluster, err);
	if (rc == 0 && pthread_create(&u->acceptor, NULL, accept_main, u) != 0)
		rc = kft_error_set(err, KFT_EIO, "cannot start a thread");
	if (rc) {
		kft_ui_stop(u);
		return rc;
	}
	u->accepting = true;
	*out = u;
	return 0;
}

const char *kft_ui_url(const kft_ui *u)
{
	return u->url;
}

const char *kft_ui_token(const kft_ui *u)
{
	return u->token[0] ? u->token : NULL;
}

void kft_ui_stop(kft_ui *u)
{
	if (!u)
		return;
	atomic_store(&u->stopping, true);
	if (u->wake[1] >= 0 && write(u->wake[1], "x", 1) < 0) {
		/* the pipe is non-blocking and never full: nothing to do */
	}
	if (u->accepting)
		pthread_join(u->acceptor, NULL);
	pthread_mutex_lock(&u->mu);
	while (u->active > 0)
		pthread_cond_wait(&u->idle, &u->mu);
	pthread_mutex_unlock(&u->mu);
	if (u->lfd >= 0)
		close(u->lfd);
	if (u->wake[0] >= 0)
		close(u->wake[0]);
	if (u->wake[1] >= 0)
		close(u->wake[1]);
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->hooks_mu);
	kft_ui_cluster_stop(u->cluster);
	free(u->state_dir);
	free(u);
}
