/*
 * httpd.c - the controller manager's two small HTTP servers: health probes
 * (/healthz, /readyz, named as the configuration says) and Prometheus
 * /metrics, each on its own address as controller-runtime serves them.
 *
 * The servers are written here rather than taken from a library because
 * they answer three fixed paths and must stay small: the controller is a
 * static binary that holds to a tenth of upstream's memory, and the HTTP
 * libraries at hand each bring a large TLS library with them.
 *
 * Each server has one thread running a poll() loop over its listening
 * socket, the connections that have sent nothing yet, and the read end of a
 * pipe that stop() writes to; and a pool of at most WORKERS threads. The loop
 * accepts at most MAX_CONNS open connections (the rest wait in the kernel's
 * backlog), closes one that sends nothing within 5 s of its accept, and
 * hands one that becomes readable to a worker, which reads the request head
 * (at most 8 KiB, within those 5 s), answers and closes. Closing after every
 * answer keeps the server stateless; a probe or a scrape is one request per
 * connection anyway. So idle connections hold no worker (the kubelet's
 * probes time out after 3 s, and one silent client used to hold the only
 * thread for 5), and only WORKERS clients that send part of a head and stall
 * can delay a probe, for 5 s at most; the two servers have separate
 * threads, so a stuck scrape never delays a probe. Every wait also watches
 * the pipe, so stop() returns at once even mid-request.
 *
 * After answering we shut our side down and read what the client still
 * sends (bounded in time and bytes) before closing: closing a socket with
 * unread input makes the kernel send a reset, which can destroy the answer
 * before the client reads it, e.g. the 431 for a request head too large.
 *
 * The pool starts with one worker; the poll thread starts another (up to
 * WORKERS, and they stay) only when a connection is handed over while every
 * worker is busy. A server that is probed once in a while keeps one thread,
 * not WORKERS: with four servers (health, metrics, webhooks, status), the
 * twelve idle threads' stacks were about 3% of the controller's memory.
 *
 * The liveness check is controller-runtime's healthz.Ping (always ok); the
 * readiness check says ok once the flag the manager sets after the caches
 * synced is non-zero. Like controller-runtime, "/healthz/" and "/readyz/"
 * prefixes list the individual checks ("[+]ping ok"). Paths are
 * percent-decoded and the query is ignored, as net/http muxes match them.
 *
 * With metrics.secureServing, /metrics is served over TLS through mbedTLS's
 * server API with the certificate manager.c finds or makes (tls.c); its
 * socket callbacks are the same deadline-and-pipe waits. As in upstream
 * v2.3.0, which sets no FilterProvider, the endpoint asks for no
 * authentication.
 *
 * A third kind of server (kft_cm_https_start) serves a caller's handler:
 * the admission webhooks (webhook.c) and the TrainJob status server
 * (statusserver.c). It reads a body of at most the caller's bound after the
 * head (Content-Length only: the API server always sends one; the handler
 * hears of a body refused, to word the refusal its own way), has its own
 * pool of workers, may start before it has a certificate (connections are
 * closed unanswered until then), and its certificate can be
 * replaced while it runs (kft_cm_http_set_tls, for rotation): each
 * connection holds a reference to the TLS configuration it began with, so
 * a swap never pulls one from under a handshake.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "controller/httpd.h"
#include "kftrainer/controller.h"
#include "util/http.h"
#include "util/clock.h"

#define HEAD_MAX         8192
#define HEAD_TIMEOUT_MS  5000
#define WRITE_TIMEOUT_MS 5000
#define LINGER_MS        500
#define LINGER_MAX       (256 * 1024)
#define THREAD_STACK     (256 * 1024)
/* Connections served at once per server, and open at most (the rest wait
 * in the kernel's backlog): a few idle or slow clients cannot starve a
 * probe, and a flood costs at most this much. */
#define WORKERS     4
#define MAX_CONNS   64
#define MAX_WORKERS 16

/* A connection accepted and not yet served. */
typedef struct pending {
	int fd;
	long long deadline; /* accept time + HEAD_TIMEOUT_MS */
} pending;

typedef struct tls_server {
	mbedtls_ssl_config conf;
	int suites[KFT_CM_TLS_SUITES_MAX]; /* the conf points at them */
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	int refs; /* under the server's tls_mu */
} tls_server;

typedef struct server {
	kft_cm_http *h;
	int is_metrics;
	int lfd;
	int wake[2]; /* stop() writes to [1]; every wait polls [0] */
	int running; /* the poll thread exists and must be joined */
	pthread_t thread;
	int port;
	const char *name; /* in messages: "metrics", "health", "webhook" */
	tls_server *tls;  /* the current one; swapped under tls_mu */
	pthread_mutex_t tls_mu;
	/* a handler server's: what it calls, and the largest body it reads */
	kft_cm_http_handler handler;
	void *handler_ctx;
	size_t body_max;
	int tls_required; /* a handler server: never plain, even before a certificate */
	int want_workers; /* at most */
	/* connections accepted and readable, waiting for a worker (a ring) */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pending ready[MAX_CONNS];
	int nready, first;
	int stopping;
	atomic_int open; /* connections accepted and not yet closed */
	pthread_t workers[MAX_WORKERS];
	int nworkers; /* started; changed by the poll thread only (and before it starts) */
	int idle;     /* workers waiting for a connection, under mu */
} server;

struct kft_cm_http {
	server health, metrics, api;
	char liveness[72], readiness[72];
	kft_metrics *m;
	const volatile int *ready;
	pthread_mutex_t reason_mu; /* reason_fn and reason_ctx */
	kft_cm_http_reason_fn reason_fn;
	void *reason_ctx;
};

/* One connection being served. */
typedef struct conn {
	server *s;
	int fd;
	long long deadline; /* CLOCK_MONOTONIC ms */
	mbedtls_ssl_context *ssl;
	char *head;  /* HEAD_MAX + 1: the request head being read (the worker's) */
	char *path;  /* HEAD_MAX + 1: its decoded path */
	size_t read; /* bytes read into head, the head and what followed it */
	size_t head_len;
} conn;

/* An answer. body is freed when owned. */
typedef struct answer {
	int code;
	const char *ctype;
	char *body;
	int owned;
	int head_only;
	size_t len; /* body length when body_len_set (a handler's body may hold NULs) */
	int body_len_set;
} answer;

/* Waits until fd is ready for `events`. 1 ready, 0 when the deadline
 * passed or the server is stopping, -1 on a poll error. */
static int wait_fd(const conn *c, short events)
{
	for (;;) {
		long long left = c->deadline - kft_clock_mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p[2] = {{c->fd, events, 0}, {c->s->wake[0], POLLIN, 0}};
		int n = poll(p, 2, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (p[1].revents)
			return 0;
		if (p[0].revents)
			return 1;
	}
}

/* recv with the connection's deadline: bytes read, 0 at end of input, -1
 * on error, timeout or stop. */
static int raw_recv(const conn *c, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if ((errno != EAGAIN && errno != EWOULDBLOCK) || wait_fd(c, POLLIN) <= 0)
			return -1;
	}
}

/* send with the connection's deadline: bytes sent (> 0) or -1. */
static int raw_send(const conn *c, const void *buf, size_t len)
{
	for (;;) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0)
			return (int)n;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || wait_fd(c, POLLOUT) <= 0)
			return -1;
	}
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	int n = raw_send(ctx, buf, len);
	return n < 0 ? MBEDTLS_ERR_NET_SEND_FAILED : n;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	int n = raw_recv(ctx, buf, len);
	return n < 0 ? MBEDTLS_ERR_NET_RECV_FAILED : n;
}

/* Reads application bytes: count, 0 at end of input, -1 otherwise. */
static int conn_read(const conn *c, char *buf, size_t len)
{
	if (!c->ssl)
		return raw_recv(c, buf, len);
	for (;;) {
		int n = mbedtls_ssl_read(c->ssl, (unsigned char *)buf, len);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			continue;
		if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
			return 0;
		return n < 0 ? -1 : n;
	}
}

static int conn_write(const conn *c, const char *buf, size_t len)
{
	while (len > 0) {
		int n = c->ssl ? mbedtls_ssl_write(c->ssl, (const unsigned char *)buf, len)
		               : raw_send(c, buf, len);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether buf[0..n) can still become a request: no NUL bytes, and an
 * upper-case method of at most 15 letters before the first space. Lets
 * garbage be answered at once instead of after the head timeout. */
static int plausible(const char *buf, size_t n)
{
	if (memchr(buf, '\0', n))
		return 0;
	size_t i = 0;
	while (i < n && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
		i++;
	return i == n || (i > 0 && i < 16 && buf[i] == ' ');
}

/* Reads the request head into c->head, NUL-terminated. 0 when complete,
 * 400 when it cannot be a request, 431 when it does not fit, -1 when the
 * client went away or was too slow. */
static int read_head(conn *c)
{
	size_t n = 0;
	while (n < HEAD_MAX) {
		int r = conn_read(c, c->head + n, HEAD_MAX - n);
		if (r <= 0)
			return -1;
		size_t from = n > 2 ? n - 2 : 0;
		n += (size_t)r;
		size_t end = kft_http_head_end(c->head + from, n - from);
		if (end) {
			c->read = n;
			c->head_len = from + end;
			/* the body's first bytes move past the terminating NUL */
			memmove(c->head + c->head_len + 1, c->head + c->head_len, n - c->head_len);
			c->head[c->head_len] = '\0';
			return plausible(c->head, c->head_len) ? 0 : 400;
		}
		if (!plausible(c->head, n))
			return 400;
	}
	return 431;
}

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 411: return "Length Required";
	case 413: return "Request Entity Too Large";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

/* Writes the status line, headers and (unless HEAD) the body in one buffer,
 * so the answer leaves in as few segments as possible. */
static int send_answer(const conn *c, const answer *a)
{
	char date[64];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	size_t blen = a->body_len_set ? a->len : strlen(a->body);
	char head[512];
	int hl = snprintf(head, sizeof(head),
	                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nX-Content-Type-Options: "
	                  "nosniff\r\nContent-Length: %zu\r\nDate: %s\r\n%sConnection: "
	                  "close\r\n\r\n",
	                  a->code, reason(a->code), a->ctype, blen, date,
	                  a->code != 405  ? ""
	                  : c->s->handler ? "Allow: POST\r\n"
	                                  : "Allow: GET, HEAD\r\n");
	if (hl < 0 || (size_t)hl >= sizeof(head))
		return -1;
	size_t total = (size_t)hl + (a->head_only ? 0 : blen);
	char *out = malloc(total);
	if (!out)
		return -1;
	memcpy(out, head, (size_t)hl);
	if (!a->head_only)
		memcpy(out + hl, a->body, blen);
	int rc = conn_write(c, out, total);
	free(out);
	return rc;
}

static void set_text(answer *a, int code, const char *body)
{
	a->code = code;
	a->ctype = "text/plain; charset=utf-8";
	a->body = (char *)body;
	a->owned = 0;
}

/* "/name" answers "ok"; "/name/" lists the checks. */
static int probe_path(const char *url, const char *name, int *verbose)
{
	size_t n = strlen(name);
	if (url[0] != '/' || strncmp(url + 1, name, n) != 0)
		return 0;
	const char *rest = url + 1 + n;
	*verbose = (*rest == '/');
	return *rest == '\0' || strcmp(rest, "/") == 0;
}

/* Why readiness fails: the manager's words, or controller-runtime's. */
static void not_ready_reason(kft_cm_http *h, char *buf, size_t n)
{
	snprintf(buf, n, "reason withheld");
	pthread_mutex_lock(&h->reason_mu);
	if (h->reason_fn)
		h->reason_fn(h->reason_ctx, buf, n);
	pthread_mutex_unlock(&h->reason_mu);
}

static void probe(kft_cm_http *h, answer *a, const char *check, int ok, int verbose)
{
	char body[1024], why[768] = "";
	if (!verbose && ok) {
		set_text(a, 200, "ok");
		return;
	}
	if (!ok)
		not_ready_reason(h, why, sizeof(why));
	snprintf(body, sizeof(body), "[%c]%s %s%s\n%s check %s\n", ok ? '+' : '-', check,
	         ok ? "ok" : "failed: ", why, "health", ok ? "passed" : "failed");
	char *copy = strdup(body);
	if (!copy) {
		set_text(a, 500, "out of memory\n");
		return;
	}
	set_text(a, ok ? 200 : 500, copy);
	a->owned = 1;
}

/* The answer for a well-formed request: 404 for unknown paths, 405 for
 * known paths with a method other than GET and HEAD. */
static void route(const server *s, const char *method, const char *path, answer *a)
{
	kft_cm_http *h = s->h;
	int verbose = 0, live = 0, ready = 0, metrics = 0;
	if (s->is_metrics)
		metrics = strcmp(path, "/metrics") == 0;
	else if (!(live = probe_path(path, h->liveness, &verbose)))
		ready = probe_path(path, h->readiness, &verbose);
	a->head_only = strcmp(method, "HEAD") == 0;
	if (!live && !ready && !metrics) {
		set_text(a, 404, "404 page not found\n");
		return;
	}
	if (!a->head_only && strcmp(method, "GET") != 0) {
		set_text(a, 405, "405 method not allowed\n");
		return;
	}
	if (live || ready) {
		probe(h, a, live ? "ping" : "readyz", live || (h->ready && *h->ready), verbose);
		return;
	}
	char *text = kft_metrics_render(h->m);
	if (!text) {
		set_text(a, 500, "out of memory\n");
		return;
	}
	set_text(a, 200, text);
	a->owned = 1;
	a->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

/* Reads what the client still sends after our answer, for at most
 * LINGER_MS and LINGER_MAX bytes, so closing does not reset the answer. */
static void linger(conn *c)
{
	char sink[4096];
	size_t total = 0;
	shutdown(c->fd, SHUT_WR);
	c->deadline = kft_clock_mono_ms() + LINGER_MS;
	while (total < LINGER_MAX) {
		int n = raw_recv(c, sink, sizeof(sink));
		if (n <= 0)
			break;
		total += (size_t)n;
	}
}

/* The value of header `name` in a parsed head (kft_http_header over its
 * field lines) into buf; NULL when absent, too long or repeated. */
static const char *header(const char *head, const char *name, char *buf, size_t n)
{
	const char *fields = strchr(head, '\n');
	return fields && kft_http_header(fields + 1, name, buf, n) == 1 ? buf : NULL;
}

int kft_cm_http_body_length(const char *head, size_t max, size_t *len)
{
	char v[32], *end;
	if (header(head, "Transfer-Encoding", v, sizeof(v)) ||
	    !header(head, "Content-Length", v, sizeof(v)))
		return 411;
	if (v[0] < '0' || v[0] > '9')
		return 400;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || errno)
		return errno ? 413 : 400;
	if (n > max)
		return 413;
	*len = (size_t)n;
	return 0;
}

/* Reads a handler server's request body (len bytes, part of them maybe
 * read with the head) into a new NUL-terminated buffer. 0, or -1 when the
 * client went away or was too slow. */
static int read_body(conn *c, size_t len, char **out)
{
	char *b = malloc(len + 1);
	if (!b)
		return -1;
	size_t have = c->read - c->head_len;
	if (have > len)
		have = len; /* a pipelined request: ignored, as we close */
	memcpy(b, c->head + c->head_len + 1, have);
	while (have < len) {
		int r = conn_read(c, b + have, len - have);
		if (r <= 0) {
			free(b);
			return -1;
		}
		have += (size_t)r;
	}
	b[len] = '\0';
	*out = b;
	return 0;
}

/* A handler server's answer to a well-formed head: the handler's, or the
 * server's own for a body it will not read. -1 when the client is gone. */
static int handle(conn *c, const char *method, answer *a)
{
	server *s = c->s;
	size_t len = 0;
	int rc = kft_cm_http_body_length(c->head, s->body_max, &len);
	if (rc == 411 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
		rc = 0; /* no body: the handler answers (405) */
	char *body = NULL;
	if (rc == 0 && read_body(c, len, &body) != 0)
		return -1;
	kft_cm_http_request req = {.method = method,
	                           .path = c->path,
	                           .head = c->head,
	                           .head_len = c->head_len,
	                           .body = body ? body : "",
	                           .len = body ? len : 0,
	                           .refused = rc};
	kft_cm_http_reply rep = {0};
	s->handler(s->handler_ctx, &req, &rep);
	free(body);
	if (!rep.body && rc) {
		set_text(a, rc,
		         rc == 411   ? "411 length required\n"
		         : rc == 413 ? "413 request entity too large\n"
		                     : "400 bad request\n");
		return 0;
	}
	if (!rep.body) {
		set_text(a, 500, "500 internal server error\n");
		return 0;
	}
	a->code = rep.code;
	a->ctype = rep.content_type ? rep.content_type : "application/json";
	a->body = rep.body;
	a->owned = 1;
	a->len = strlen(rep.body);
	a->body_len_set = 1;
	return 0;
}

/* Reads one request from an open connection and answers it. */
static void exchange(conn *c)
{
	server *s = c->s;
	char method[16] = "GET";
	answer a = {0};
	int rc = read_head(c);
	if (rc < 0)
		return; /* gone, or too slow: nothing to answer */
	if (rc == 0)
		rc = kft_http_request_line(c->head, method, c->path);
	if (rc == 431)
		set_text(&a, rc, "431 request header fields too large\n");
	else if (rc == 505)
		set_text(&a, rc, "505 HTTP version not supported\n");
	else if (rc)
		set_text(&a, rc, "400 bad request\n");
	else if (s->handler && handle(c, method, &a) != 0)
		return;
	else if (!s->handler)
		route(s, method, c->path, &a);
	c->deadline = kft_clock_mono_ms() + WRITE_TIMEOUT_MS;
	int sent = send_answer(c, &a);
	if (a.owned)
		free(a.body);
	if (sent == 0 && c->ssl)
		mbedtls_ssl_close_notify(c->ssl);
	if (sent == 0)
		linger(c);
}

static void tls_free(tls_server *t);

/* The server's current TLS configuration, with a reference the caller
 * drops with tls_put. */
static tls_server *tls_get(server *s)
{
	pthread_mutex_lock(&s->tls_mu);
	tls_server *t = s->tls;
	if (t)
		t->refs++;
	pthread_mutex_unlock(&s->tls_mu);
	return t;
}

static void tls_put(server *s, tls_server *t)
{
	pthread_mutex_lock(&s->tls_mu);
	int last = --t->refs == 0;
	pthread_mutex_unlock(&s->tls_mu);
	if (last)
		tls_free(t);
}

static void serve_tls(conn *c)
{
	tls_server *t = tls_get(c->s);
	if (!t) /* a handler server without its certificate yet: closed unanswered */
		return;
	mbedtls_ssl_context ssl;
	mbedtls_ssl_init(&ssl);
	if (mbedtls_ssl_setup(&ssl, &t->conf) == 0) {
		mbedtls_ssl_set_bio(&ssl, c, bio_send, bio_recv, NULL);
		c->ssl = &ssl;
		int rc;
		do
			rc = mbedtls_ssl_handshake(&ssl);
		while (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE);
		if (rc == 0)
			exchange(c);
		c->ssl = NULL;
	}
	mbedtls_ssl_free(&ssl);
	tls_put(c->s, t);
}

static void serve_conn(server *s, const pending *p, char *bufs)
{
	conn c = {.s = s,
	          .fd = p->fd,
	          .deadline = p->deadline,
	          .head = bufs,
	          .path = bufs + HEAD_MAX + 1};
	if (s->tls || s->tls_required)
		serve_tls(&c);
	else
		exchange(&c);
}

/* A worker: serves connections the poll loop found readable, one at a
 * time, until the server stops. */
static void *work(void *arg)
{
	server *s = arg;
	char *bufs = malloc(2 * (HEAD_MAX + 1));
	pthread_mutex_lock(&s->mu);
	for (;;) {
		s->idle++;
		while (!s->stopping && s->nready == 0)
			pthread_cond_wait(&s->cond, &s->mu);
		s->idle--;
		if (s->stopping)
			break;
		pending p = s->ready[s->first];
		s->first = (s->first + 1) % MAX_CONNS;
		s->nready--;
		pthread_mutex_unlock(&s->mu);
		if (bufs)
			serve_conn(s, &p, bufs);
		close(p.fd);
		atomic_fetch_sub(&s->open, 1);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	free(bufs);
	return NULL;
}

static int start_worker(server *s);

/* Hands a readable connection to the workers (there is room: at most
 * MAX_CONNS are open), starting one more when every worker is busy and the
 * pool is not full (a failure there leaves the connection to the others). */
static void dispatch(server *s, const pending *p)
{
	pthread_mutex_lock(&s->mu);
	s->ready[(s->first + s->nready) % MAX_CONNS] = *p;
	s->nready++;
	int more = s->nready > s->idle && s->nworkers < s->want_workers;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (more)
		(void)start_worker(s);
}

/* Sleeps up to ms unless stop() is called; 1 when it was. */
static int nap(server *s, int ms)
{
	struct pollfd p = {s->wake[0], POLLIN, 0};
	return poll(&p, 1, ms) > 0;
}

/* Accepts what the listener holds, while there is room; -1 when stopped
 * meanwhile. */
static int accept_some(server *s, pending *idle, int *nidle)
{
	while (atomic_load(&s->open) < MAX_CONNS) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			/* out of descriptors: the pending connection stays readable,
			 * so wait instead of spinning on it */
			if ((errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			     errno == ENOMEM) &&
			    nap(s, 100))
				return -1;
			return 0;
		}
		atomic_fetch_add(&s->open, 1);
		idle[(*nidle)++] = (pending){fd, kft_clock_mono_ms() + HEAD_TIMEOUT_MS};
	}
	return 0;
}

/* The poll loop: accepts connections (at most MAX_CONNS open) and watches
 * those that have sent nothing yet; one that becomes readable goes to a
 * worker, one silent past the head timeout is closed here. So an idle
 * connection costs a descriptor and holds no worker. */
static void *serve(void *arg)
{
	server *s = arg;
	pending idle[MAX_CONNS];
	struct pollfd p[MAX_CONNS + 2];
	int nidle = 0;
	for (;;) {
		int room = atomic_load(&s->open) < MAX_CONNS;
		long long now = kft_clock_mono_ms(), next = now + 60000;
		p[0] = (struct pollfd){s->wake[0], POLLIN, 0};
		p[1] = (struct pollfd){room ? s->lfd : -1, POLLIN, 0};
		for (int i = 0; i < nidle; i++) {
			p[i + 2] = (struct pollfd){idle[i].fd, POLLIN, 0};
			if (idle[i].deadline < next)
				next = idle[i].deadline;
		}
		/* without room, look again soon: a worker may have closed one */
		int wait = room ? (int)(next > now ? next - now : 0) : 50;
		int n = poll(p, (nfds_t)nidle + 2, wait);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents)
			break;
		now = kft_clock_mono_ms();
		int kept = 0;
		for (int i = 0; i < nidle; i++) {
			if (n > 0 && p[i + 2].revents) {
				dispatch(s, &idle[i]);
			} else if (idle[i].deadline <= now) {
				close(idle[i].fd); /* sent nothing in time */
				atomic_fetch_sub(&s->open, 1);
			} else {
				idle[kept++] = idle[i];
			}
		}
		nidle = kept;
		if (n > 0 && p[1].revents && accept_some(s, idle, &nidle))
			break;
	}
	for (int i = 0; i < nidle; i++)
		close(idle[i].fd);
	return NULL;
}

/* The socket address for a parsed host: "" is every interface (IPv6 with
 * IPv4 mapped in), "localhost" is 127.0.0.1, else an IP literal. */
static int listen_sockaddr(const char *addr, const char *host, int port,
                           struct sockaddr_storage *ss, socklen_t *len, kft_error *err)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	memset(ss, 0, sizeof(*ss));
	if (!host[0]) {
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
	} else if (strcmp(host, "localhost") == 0 || inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		if (strcmp(host, "localhost") == 0)
			a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
	} else {
		return kft_error_set(err, KFT_EINVAL,
		                     "listen address \"%s\": host must be an IP address", addr);
	}
	return 0;
}

/* A listening socket on ss; when every interface was asked for and the
 * kernel has no IPv6, IPv4's wildcard instead. -1 with errno set. */
static int open_listener(struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
	if (fd < 0 && errno == EAFNOSUPPORT && ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) {
		uint16_t port = a6->sin6_port;
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		memset(ss, 0, sizeof(*ss));
		a4->sin_family = AF_INET;
		a4->sin_port = port;
		len = sizeof(*a4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr))
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)ss, len) != 0 || listen(fd, 64) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void tls_free(tls_server *t)
{
	if (!t)
		return;
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_x509_crt_free(&t->crt);
	mbedtls_pk_free(&t->key);
	mbedtls_ctr_drbg_free(&t->drbg);
	mbedtls_entropy_free(&t->entropy);
	free(t);
}

static int tls_fail(int rc, const char *name, const char *what, kft_error *err)
{
	char text[160];
	mbedtls_strerror(rc, text, sizeof(text));
	return kft_error_set(err, KFT_EIO, "%s server TLS: %s: %s", name, what, text);
}

/* Loads the certificate and key and sets TLS 1.<min>..1.2 on t. */
static int tls_load(tls_server *t, const kft_cm_http_tls *cfg, int min, const char *name,
                    kft_error *err)
{
	static const char personal[] = "kftrainer controller server";
	int rc = mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func, &t->entropy,
	                               (const unsigned char *)personal, sizeof(personal) - 1);
	if (rc)
		return tls_fail(rc, name, "seeding the random generator", err);
	if (!cfg->cert_pem ||
	    (rc = mbedtls_x509_crt_parse(&t->crt, (const unsigned char *)cfg->cert_pem,
	                                 strlen(cfg->cert_pem) + 1)) != 0)
		return tls_fail(rc, name, "cannot load the certificate", err);
	if (!cfg->key_pem ||
	    (rc = mbedtls_pk_parse_key(&t->key, (const unsigned char *)cfg->key_pem,
	                               strlen(cfg->key_pem) + 1, NULL, 0)) != 0)
		return tls_fail(rc, name, "cannot load the private key", err);
	if ((rc = mbedtls_pk_check_pair(&t->crt.pk, &t->key)) != 0)
		return tls_fail(rc, name, "the private key is not the certificate's", err);
	if ((rc = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_SERVER,
	                                      MBEDTLS_SSL_TRANSPORT_STREAM,
	                                      MBEDTLS_SSL_PRESET_DEFAULT)) != 0 ||
	    (rc = mbedtls_ssl_conf_own_cert(&t->conf, &t->crt, &t->key)) != 0)
		return tls_fail(rc, name, "configuration", err);
	if ((rc = kft_cm_tls_cipher_suites(cfg->cipher_suites, t->suites, KFT_CM_TLS_SUITES_MAX,
	                                   err)) != 0)
		return rc;
	mbedtls_ssl_conf_ciphersuites(&t->conf, t->suites);
	mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
	mbedtls_ssl_conf_min_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3, min + 1);
	mbedtls_ssl_conf_max_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	                             MBEDTLS_SSL_MINOR_VERSION_3);
	return 0;
}

static int tls_open(const kft_cm_http_tls *cfg, const char *name, tls_server **out, kft_error *err)
{
	*out = NULL;
	int min = kft_cm_tls_min_version(cfg->min_version, err);
	if (min < 0)
		return min;
	tls_server *t = calloc(1, sizeof(*t));
	if (!t)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_x509_crt_init(&t->crt);
	mbedtls_pk_init(&t->key);
	mbedtls_entropy_init(&t->entropy);
	mbedtls_ctr_drbg_init(&t->drbg);
	int rc = tls_load(t, cfg, min, name, err);
	if (rc) {
		tls_free(t);
		return rc;
	}
	t->refs = 1;
	*out = t;
	return 0;
}

/* Starts fn(s) with THREAD_STACK and every signal blocked: the manager
 * takes signals in one thread of its own. */
static int start(pthread_t *t, void *(*fn)(void *), server *s)
{
	pthread_attr_t attr;
	sigset_t all, old;
	if (pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, &attr, fn, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0 ? 0 : -1;
}

/* One more worker (the pool is not full); -1 when it cannot start. Called
 * before the poll thread starts, then by it alone. */
static int start_worker(server *s)
{
	if (start(&s->workers[s->nworkers], work, s) != 0)
		return -1;
	s->nworkers++;
	return 0;
}

/* The first worker, then the poll thread. */
static int start_thread(server *s)
{
	if (start_worker(s) != 0)
		return -1;
	s->running = start(&s->thread, serve, s) == 0;
	return s->running ? 0 : -1;
}

static int start_one(server *s, const char *addr, const kft_cm_http_tls *tls, kft_error *err)
{
	char host[256];
	int port;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int rc = kft_http_parse_listen(addr, host, sizeof(host), &port, err);
	if (rc || (rc = listen_sockaddr(addr, host, port, &ss, &len, err)))
		return rc;
	if (tls && tls->cert_pem && (rc = tls_open(tls, s->name, &s->tls, err)))
		return rc;
	s->lfd = open_listener(&ss, len);
	if (s->lfd < 0)
		return kft_error_set(err, KFT_EIO, "listen tcp %s: %s", addr, strerror(errno));
	s->port = bound_port(s->lfd);
	if (pipe2(s->wake, O_CLOEXEC) != 0 || start_thread(s) != 0)
		return kft_error_set(err, KFT_EIO, "%s server %s: cannot start: %s", s->name, addr,
		                     strerror(errno));
	return 0;
}

static void stop_one(server *s)
{
	if (s->wake[1] >= 0) {
		ssize_t w;
		do
			w = write(s->wake[1], "x", 1);
		while (w < 0 && errno == EINTR);
	}
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (s->running)
		pthread_join(s->thread, NULL);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	for (; s->nready > 0; s->nready--) {
		close(s->ready[s->first].fd);
		s->first = (s->first + 1) % MAX_CONNS;
	}
	if (s->lfd >= 0)
		close(s->lfd);
	for (int i = 0; i < 2; i++)
		if (s->wake[i] >= 0)
			close(s->wake[i]);
	if (s->tls)
		tls_put(s, s->tls);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->tls_mu);
}

static void init_one(server *s, kft_cm_http *h, int is_metrics, const char *name)
{
	s->h = h;
	s->is_metrics = is_metrics;
	s->name = name;
	s->want_workers = WORKERS;
	s->lfd = s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->tls_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static int disabled(const char *addr)
{
	return !addr || !*addr || strcmp(addr, "0") == 0;
}

int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err)
{
	return kft_cm_http_start_tls(health_addr, liveness, readiness, metrics_addr, NULL, m, ready,
	                             out, err);
}

int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *metrics_tls,
                          kft_metrics *m, const volatile int *ready, kft_cm_http **out,
                          kft_error *err)
{
	*out = NULL;
	kft_cm_http *h = calloc(1, sizeof(*h));
	if (!h)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	snprintf(h->liveness, sizeof(h->liveness), "%s", liveness ? liveness : "healthz");
	snprintf(h->readiness, sizeof(h->readiness), "%s", readiness ? readiness : "readyz");
	h->m = m;
	h->ready = ready;
	pthread_mutex_init(&h->reason_mu, NULL);
	init_one(&h->health, h, 0, "health");
	init_one(&h->metrics, h, 1, "metrics");
	init_one(&h->api, h, 0, "webhook");
	int rc = 0;
	if (!disabled(health_addr))
		rc = start_one(&h->health, health_addr, NULL, err);
	if (!rc && !disabled(metrics_addr) && m)
		rc = start_one(&h->metrics, metrics_addr, metrics_tls, err);
	if (rc) {
		kft_cm_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

int kft_cm_http_port(const kft_cm_http *h, int which)
{
	if (!h)
		return 0;
	return which == 2 ? h->api.port : which ? h->metrics.port : h->health.port;
}

void kft_cm_http_stop(kft_cm_http *h)
{
	if (!h)
		return;
	stop_one(&h->health);
	stop_one(&h->metrics);
	stop_one(&h->api);
	pthread_mutex_destroy(&h->reason_mu);
	free(h);
}

void kft_cm_http_set_readiness_reason(kft_cm_http *h, kft_cm_http_reason_fn fn, void *ctx)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->reason_mu);
	h->reason_fn = fn;
	h->reason_ctx = ctx;
	pthread_mutex_unlock(&h->reason_mu);
}

int kft_cm_https_start(const char *addr, const kft_cm_http_tls *tls, size_t body_max, int workers,
                       kft_cm_http_handler fn, void *ctx, kft_cm_http **out, kft_error *err)
{
	*out = NULL;
	if (!tls || !fn)
		return kft_error_set(err, KFT_EINVAL,
		                     "webhook server: TLS and a handler are required");
	kft_cm_http *h = calloc(1, sizeof(*h));
	if (!h)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	pthread_mutex_init(&h->reason_mu, NULL);
	init_one(&h->health, h, 0, "health");
	init_one(&h->metrics, h, 1, "metrics");
	init_one(&h->api, h, 0, "webhook");
	h->api.handler = fn;
	h->api.handler_ctx = ctx;
	h->api.body_max = body_max;
	h->api.tls_required = 1;
	h->api.want_workers = workers < 1 ? 1 : workers > MAX_WORKERS ? MAX_WORKERS : workers;
	int rc = start_one(&h->api, addr, tls, err);
	if (rc) {
		kft_cm_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

int kft_cm_http_set_tls(kft_cm_http *h, const kft_cm_http_tls *tls, kft_error *err)
{
	server *s = &h->api;
	if (!s->handler)
		return kft_error_set(err, KFT_EINVAL, "not a webhook server");
	tls_server *t = NULL;
	int rc = tls_open(tls, s->name, &t, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->tls_mu);
	tls_server *old = s->tls;
	s->tls = t;
	pthread_mutex_unlock(&s->tls_mu);
	if (old)
		tls_put(s, old);
	return 0;
}
