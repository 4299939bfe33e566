/*
 * test_http.c - the one HTTP/1.1 server core (src/http/): the request
 * parser every server reads heads with, and the connection model over real
 * sockets, plain and TLS.
 *
 * Sources:
 *   "net/http"   Go's server, which controller-runtime's probe, metrics and
 *                webhook servers and upstream's status server run on: a
 *                Content-Length of digits only (else 400 "bad Content-Length"),
 *                given once; Host given once; 431 for a head too large;
 *                405/404 wording is the handlers'; Connection: close answers
 *   "RFC 6265"   Cookie: one field of "name=value" pairs joined by "; ", a
 *                name may repeat (two paths, two servers on one host)
 *   issue 24.2   70 idle sockets must not deny an authenticated client;
 *                issue 23.1: authentication before a slot is held
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/server.h"
#include "util/cert.h"

#include "cert_dir_fixture.h"

/* ---- the parser --------------------------------------------------------------------- */

static int parse(const char *text, kft_http_head *h)
{
	return kft_http_head_parse(text, strlen(text), h);
}

static void test_head_parse(void **state)
{
	(void)state;
	kft_http_head h;
	assert_int_equal(parse("POST /a%20b?x=1&token=t HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"
	                       "Content-Length: 12\r\nX-A:  v \r\n\r\n",
	                       &h),
	                 0);
	assert_string_equal(h.method, "POST");
	assert_string_equal(h.path, "/a b");
	assert_string_equal(h.query, "x=1&token=t");
	assert_string_equal(h.host, "127.0.0.1:80");
	assert_int_equal(h.content_length, 12);
	assert_false(h.chunked);
	char v[16];
	assert_int_equal(kft_http_header(h.fields, "x-a", v, sizeof(v)), 1);
	assert_string_equal(v, "v");
	kft_http_head_free(&h);
	assert_int_equal(parse("GET / HTTP/1.0\n\n", &h), 0); /* bare LF, no Host */
	assert_int_equal(h.content_length, -1);
	assert_string_equal(h.host, "");
	kft_http_head_free(&h);
	assert_int_equal(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &h), 0);
	assert_true(h.chunked);
	kft_http_head_free(&h);
	static const struct {
		const char *head;
		int code;
	} bad[] = {
	        {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
	        {"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
	        {"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400},
	        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400},
	        {"POST / HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n", 400},
	        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
	        {"GET / HTTP/2.0\r\n\r\n", 505},
	        {"get / HTTP/1.1\r\n\r\n", 400},
	        {"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400},
	        {"GET /%00 HTTP/1.1\r\n\r\n", 400},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i].head, &h) != bad[i].code)
			fail_msg("head %s", bad[i].head);
		kft_http_head_free(&h);
	}
	/* a NUL byte anywhere in the head */
	assert_int_equal(kft_http_head_parse("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 23, &h), 400);
	kft_http_head_free(&h);
}

static bool equals_v(const char *value, size_t len, void *ctx)
{
	return kft_http_secret_equal(value, len, ctx);
}

static void test_query_cookie_secret(void **state)
{
	(void)state;
	char buf[16];
	assert_true(kft_http_query_value("a=1&token=x%2By+z", "token", buf, sizeof(buf)));
	assert_string_equal(buf, "x+y z");
	assert_false(kft_http_query_value("a=%00", "a", buf, sizeof(buf)));
	assert_false(kft_http_query_value("a=0123456789abcdefg", "a", buf, sizeof(buf)));
	assert_true(kft_http_query_value("flag", "flag", buf, sizeof(buf)));
	assert_string_equal(buf, "");
	/* a Cookie field longer than 1 KiB, the cookie twice, two Cookie fields */
	char fields[4096];
	char pad[2048];
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	snprintf(fields, sizeof(fields),
	         "Cookie: big=%s; tok=old\r\nCookie: x=1; tok=right\r\nHost: h\r\n\r\n", pad);
	assert_true(kft_http_cookie_matches(fields, "tok", equals_v, "right"));
	assert_true(kft_http_cookie_matches(fields, "tok", equals_v, "old"));
	assert_false(kft_http_cookie_matches(fields, "tok", equals_v, "righ"));
	assert_false(kft_http_cookie_matches(fields, "to", equals_v, "k=right"));
	assert_false(kft_http_cookie_matches("Host: h\r\n\r\n", "tok", equals_v, "right"));
	assert_true(kft_http_secret_equal("abc", 3, "abc"));
	assert_false(kft_http_secret_equal("abcd", 3, "abcd"));
	assert_false(kft_http_secret_equal("abc", 3, "abcd"));
	assert_false(kft_http_secret_equal("", 0, "a"));
	assert_string_equal(kft_http_reason(413), "Request Entity Too Large");
	assert_string_equal(kft_http_reason(431), "Request Header Fields Too Large");
	assert_string_equal(kft_http_reason(599), "Internal Server Error");
}

/* ---- a server --------------------------------------------------------------------------- */

typedef struct fixture {
	kft_httpd *h;
	kft_httpd_handlers handlers;
	pthread_mutex_t mu;
	int streams; /* serve calls streaming now */
	int served;
	int reloads; /* cert_reloaded calls that loaded a pair */
} fixture;

/* admit: "/private" needs "Authorization: Bearer sesame". */
static int admit(void *ctx, const kft_http_req *r, kft_http_answer *a)
{
	(void)ctx;
	char v[64];
	if (strncmp(r->head->path, "/private", 8) != 0)
		return 0;
	if (kft_http_header(r->head->fields, "Authorization", v, sizeof(v)) == 1 &&
	    strcmp(v, "Bearer sesame") == 0)
		return 0;
	a->code = 401;
	a->body = strdup("who are you?");
	return 1;
}

/* /stream holds its worker until the client goes or the server stops;
 * /echo answers the body; anything else "ok". */
static void serve(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	fixture *f = ctx;
	pthread_mutex_lock(&f->mu);
	f->served++;
	pthread_mutex_unlock(&f->mu);
	if (strstr(r->head->path, "/stream")) {
		pthread_mutex_lock(&f->mu);
		f->streams++;
		pthread_mutex_unlock(&f->mu);
		kft_http_stream_start(c, "text/plain", NULL);
		while (kft_http_send(c, "tick\n", 5) == 0 && kft_http_wait(c, 50) == 0)
			;
		pthread_mutex_lock(&f->mu);
		f->streams--;
		pthread_mutex_unlock(&f->mu);
		return;
	}
	if (strcmp(r->head->path, "/echo") == 0) {
		kft_http_respond(c, 200, "application/octet-stream", r->body, r->body_len, NULL);
		return;
	}
	kft_http_respond(c, 200, NULL, "ok", 2, NULL);
}

static void reloaded(void *ctx, int rc, const kft_error *err)
{
	fixture *f = ctx;
	(void)err;
	pthread_mutex_lock(&f->mu);
	f->reloads += rc == 0;
	pthread_mutex_unlock(&f->mu);
}

static int reloads_of(fixture *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->reloads;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void start(fixture *f, kft_httpd_opts *o)
{
	kft_error err = {0};
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->handlers = (kft_httpd_handlers){
	        .admit = admit, .serve = serve, .cert_reloaded = reloaded, .ctx = f};
	o->name = "test";
	if (!o->listen)
		o->listen = "127.0.0.1:0";
	o->handlers = &f->handlers;
	if (kft_httpd_start(o, &f->h, &err) != 0)
		fail_msg("start: %s", err.message);
}

static void stop(fixture *f)
{
	kft_httpd_stop(f->h);
	pthread_mutex_destroy(&f->mu);
}

static int connect_to(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = {10, 0}; /* a test that hangs fails instead */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends req and returns what comes back until the server closes. */
static char *exchange(int port, const char *req, size_t len)
{
	static char out[16384];
	int fd = connect_to(port);
	assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(out) - 1 && (n = recv(fd, out + got, sizeof(out) - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return out;
}

static char *ask(int port, const char *req)
{
	return exchange(port, req, strlen(req));
}

static int status_of(const char *answer)
{
	return strncmp(answer, "HTTP/1.1 ", 9) == 0 ? atoi(answer + 9) : -1;
}

static const char *body_of(const char *answer)
{
	const char *b = strstr(answer, "\r\n\r\n");
	return b ? b + 4 : "";
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* Whether the server has not closed fd (nothing to read, no end of input). */
static bool still_open(int fd)
{
	char ch;
	errno = 0;
	return recv(fd, &ch, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

#define GET_PRIVATE "GET /private HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sesame\r\n\r\n"

/* 70 idle sockets, more than the dashboard's 64 connection threads and the
 * controller's 64 open connections used to allow: an authenticated client
 * is answered at once, while every idle one is still open (its answer did
 * not wait for their head timeouts). Then 300, more than the server keeps
 * pending: newcomers push out the idle ones, and the client still gets in. */
static void test_idle_sockets(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {.workers = 2};
	int fds = count_fds();
	start(&f, &o);
	int port = kft_httpd_port(f.h), idle[300];
	for (int i = 0; i < 70; i++)
		idle[i] = connect_to(port);
	const char *ans = ask(port, GET_PRIVATE);
	assert_int_equal(status_of(ans), 200);
	assert_string_equal(body_of(ans), "ok");
	for (int i = 0; i < 70; i++)
		assert_true(still_open(idle[i]));
	for (int i = 70; i < 300; i++)
		idle[i] = connect_to(port);
	ans = ask(port, GET_PRIVATE);
	assert_int_equal(status_of(ans), 200);
	/* the newest idle ones are still held; the oldest were pushed out */
	assert_true(still_open(idle[299]));
	char ch;
	assert_true(recv(idle[0], &ch, 1, 0) <= 0);
	for (int i = 0; i < 300; i++)
		close(idle[i]);
	stop(&f);
	assert_int_equal(count_fds(), fds);
}

/* In a child running as another user: opens `n` connections to port and
 * writes to out how many of the first `n - keep` the server closed while
 * the last `keep` stayed open; with n 0, floods (a new connection every
 * millisecond, holding 64: four times the server's places each 16 ms)
 * until killed. */
static void stranger(int port, int n, int keep, int out)
{
	if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
		_exit(2);
	int fds[64] = {0}, k = 0;
	for (int i = 0; n == 0 || i < n; i++) {
		if (fds[k % 64] > 0)
			close(fds[k % 64]);
		fds[k++ % 64] = connect_to(port);
		if (n == 0)
			poll(NULL, 0, 1);
	}
	unsigned char closed = 0;
	for (int i = 0; i < n - keep; i++) {
		char ch;
		closed += recv(fds[i], &ch, 1, 0) == 0;
	}
	for (int i = n - keep; i < n; i++)
		closed += !still_open(fds[i]) ? 100 : 0;
	_exit(write(out, &closed, 1) == 1 ? 0 : 3);
}

/* Another local user (the kernel tells whose socket a loopback client is):
 * it holds at most a quarter of the pending places, pushing out its own
 * oldest beyond that, and its flood never pushes out our own user's client.
 * Needs root to become another user. */
static void test_strangers(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	fixture f;
	/* a head timeout far beyond the test, so only pushing out closes ours */
	kft_httpd_opts o = {.pending = 16, .workers = 1, .head_timeout_ms = 120000};
	start(&f, &o);
	int port = kft_httpd_port(f.h), p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0)
		stranger(port, 10, 4, p[1]);
	unsigned char closed = 0;
	assert_int_equal(read(p[0], &closed, 1), 1);
	assert_int_equal(closed, 6); /* 10 opened, 4 (a quarter of 16) kept */
	int status;
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
	pid = fork();
	if (pid == 0)
		stranger(port, 0, 0, p[1]);
	int own[12];
	for (int i = 0; i < 12; i++)
		own[i] = connect_to(port);
	for (int i = 0; i < 10; i++) {
		const char *a = ask(port, GET_PRIVATE);
		if (status_of(a) != 200)
			fail_msg("request %d: %.200s", i, a);
	}
	for (int i = 0; i < 12; i++) {
		assert_true(still_open(own[i])); /* the flood pushed out none of ours */
		close(own[i]);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(p[0]);
	close(p[1]);
	stop(&f);
}

/* Clients that send part of a head, or a head and part of a body, hold no
 * worker: with one worker, four of each stall and a request still passes. */
static void test_slow_clients(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {.workers = 1, .body_max = 1024};
	start(&f, &o);
	int port = kft_httpd_port(f.h), slow[8];
	for (int i = 0; i < 8; i++) {
		slow[i] = connect_to(port);
		const char *part =
		        i % 2 ? "GET /priv" : "POST /echo HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc";
		assert_int_equal(send(slow[i], part, strlen(part), MSG_NOSIGNAL),
		                 (ssize_t)strlen(part));
	}
	const char *ans = ask(port, GET_PRIVATE);
	assert_int_equal(status_of(ans), 200);
	for (int i = 0; i < 8; i++) {
		assert_true(still_open(slow[i]));
		close(slow[i]);
	}
	stop(&f);
}

/* A refusal is answered on the poll thread: with the only worker held by a
 * stream, an unauthenticated request still gets its 401, and an admitted
 * one a 503 (no queue), not a wait behind the stream. */
static void test_admit_without_worker(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {.workers = 1, .queue = -1};
	start(&f, &o);
	int port = kft_httpd_port(f.h);
	int s = connect_to(port);
	const char *req = "GET /stream HTTP/1.1\r\n\r\n";
	assert_int_equal(send(s, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	char buf[256];
	assert_true(recv(s, buf, sizeof(buf), 0) > 0); /* the stream's head: it holds the worker */
	const char *ans = ask(port, "GET /private HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(ans), 401);
	assert_string_equal(body_of(ans), "who are you?");
	ans = ask(port, GET_PRIVATE);
	assert_int_equal(status_of(ans), 503);
	assert_non_null(strstr(ans, "Retry-After: 1\r\n"));
	close(s); /* the stream notices and frees its worker */
	for (int tries = 0; tries < 500; tries++) {
		ans = ask(port, GET_PRIVATE);
		if (status_of(ans) == 200)
			break;
		poll(NULL, 0, 10);
	}
	assert_int_equal(status_of(ans), 200);
	stop(&f);
}

/* Bodies: read whole (several segments), refused past body_max (413) or
 * chunked (411), 411 without a length where one is required. */
static void test_bodies(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {.body_max = 100000, .length_required = true};
	start(&f, &o);
	int port = kft_httpd_port(f.h);
	static char req[120000];
	int n = snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\n");
	for (int i = 0; i < 100000; i++)
		req[n + i] = (char)('a' + i % 26);
	const char *ans = exchange(port, req, (size_t)n + 100000);
	assert_int_equal(status_of(ans), 200);
	assert_non_null(strstr(ans, "Content-Length: 100000\r\n"));
	assert_int_equal(strncmp(body_of(ans), "abcdefghijklmnopqrstuvwxyzabc", 29), 0);
	ans = ask(port, "POST /echo HTTP/1.1\r\nContent-Length: 100001\r\n\r\n");
	assert_int_equal(status_of(ans), 413);
	assert_string_equal(body_of(ans), "413 Request Entity Too Large");
	ans = ask(port, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_int_equal(status_of(ans), 411);
	ans = ask(port, "POST /echo HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(ans), 411);
	ans = ask(port, "HEAD /x HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(ans), 200);
	assert_string_equal(body_of(ans), ""); /* HEAD: the length, not the body */
	assert_non_null(strstr(ans, "Content-Length: 2\r\n"));
	stop(&f);
}

/* Heads: 431 past head_max, 400 for garbage at once, 400 without Host
 * where it is required; each answer closes the connection. */
static void test_heads(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {.head_max = 1024, .host_required = true};
	start(&f, &o);
	int port = kft_httpd_port(f.h);
	static char big[2048];
	int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX: ");
	memset(big + n, 'x', sizeof(big) - (size_t)n);
	assert_int_equal(status_of(exchange(port, big, sizeof(big))), 431);
	assert_int_equal(status_of(ask(port, "\x16\x03\x01\x00")), 400);
	const char *ans = ask(port, "GET / HTTP/1.1\r\n\r\n");
	assert_int_equal(status_of(ans), 400);
	assert_non_null(strstr(ans, "Connection: close\r\n"));
	assert_int_equal(status_of(ask(port, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")), 200);
	stop(&f);
}

/* stop() with a stream open and a client mid-head returns at once; the
 * stream's waits see it. */
static void test_stop_mid_stream(void **state)
{
	(void)state;
	fixture f;
	kft_httpd_opts o = {0};
	start(&f, &o);
	int port = kft_httpd_port(f.h);
	int s = connect_to(port), half = connect_to(port);
	const char *req = "GET /stream HTTP/1.1\r\n\r\n";
	assert_int_equal(send(s, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	assert_int_equal(send(half, "GET /x", 6, MSG_NOSIGNAL), 6);
	char buf[256];
	assert_true(recv(s, buf, sizeof(buf), 0) > 0);
	stop(&f); /* joins the worker: its stream ended */
	assert_int_equal(f.streams, 0);
	while (recv(s, buf, sizeof(buf), 0) > 0)
		;
	char ch;
	assert_true(recv(half, &ch, 1, 0) <= 0);
	close(s);
	close(half);
}

/* ---- TLS ------------------------------------------------------------------------------- */

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return size * n;
}

/* The subject of the certificate curl saw on an HTTPS GET, "" on failure. */
static void https_subject(int port, char *subject, size_t n)
{
	char url[64];
	struct curl_certinfo *ci = NULL;
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/x", port);
	subject[0] = '\0';
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK &&
	    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200 &&
	    curl_easy_getinfo(c, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci && ci->num_of_certs)
		for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next)
			if (strncmp(s->data, "Subject:", 8) == 0)
				snprintf(subject, n, "%s", s->data + 8);
	curl_easy_cleanup(c);
}

static kft_cert make_cert(const char *subject)
{
	kft_cert c = {0};
	kft_error err;
	kft_cert_opts o = {.key_type = KFT_CERT_EC_P256, .subject = subject, .valid_days = 1};
	assert_int_equal(kft_cert_make(&o, "test", &c, &err), 0);
	return c;
}

/* Asks port for its certificate's subject until it is want (6 s at most);
 * the last answer is left in subject. */
static void await_subject(int port, const char *want, char *subject, size_t size)
{
	subject[0] = '\0';
	for (int tries = 0; tries < 300; tries++) {
		https_subject(port, subject, size);
		if (strcmp(subject, want) == 0)
			return;
		poll(NULL, 0, 20);
	}
}

/* TLS through the core: idle sockets cost no handshake state and deny
 * nothing; a plain-HTTP client is dropped; the certificate directory is
 * reloaded when its files change (controller-runtime's certwatcher). */
static void test_tls(void **state)
{
	(void)state;
	char dir[] = "/tmp/kft-http-XXXXXX", subject[256];
	assert_non_null(mkdtemp(dir));
	kft_cert one = make_cert("CN=one"), two = make_cert("CN=two");
	cert_dir_put(dir, &one);
	fixture f;
	kft_http_tls tls = {.min_minor = 2, .cert_dir = dir};
	kft_httpd_opts o = {.tls = &tls};
	start(&f, &o);
	int port = kft_httpd_port(f.h), idle[70];
	assert_true(kft_httpd_has_cert(f.h));
	for (int i = 0; i < 70; i++)
		idle[i] = connect_to(port);
	https_subject(port, subject, sizeof(subject));
	assert_string_equal(subject, "CN = one");
	assert_int_equal(status_of(ask(port, "GET / HTTP/1.1\r\n\r\n")), -1);
	cert_dir_put(dir, &two);
	await_subject(port, "CN = two", subject, sizeof(subject));
	assert_string_equal(subject, "CN = two");
	for (int i = 0; i < 70; i++) {
		assert_true(still_open(idle[i]));
		close(idle[i]);
	}
	stop(&f);
	kft_cert_free(&one);
	kft_cert_free(&two);
	cert_dir_remove(dir);
}

/* A pair given with its directory was read from the directory before the
 * server started; the files may have changed in between (a kubelet's
 * swap, cert-manager's renewal right after the start: cluster check 93 lost
 * that race). The server looks at the directory at once and loads what it
 * holds when that is another pair; the pair it was given is not loaded
 * again. */
static void test_tls_dir_since(void **state)
{
	(void)state;
	char dir[] = "/tmp/kft-http-XXXXXX", subject[256];
	assert_non_null(mkdtemp(dir));
	kft_cert one = make_cert("CN=one"), two = make_cert("CN=two");
	cert_dir_put(dir, &one);
	fixture f;
	kft_http_tls tls = {
	        .min_minor = 2, .cert_dir = dir, .cert_pem = one.cert_pem, .key_pem = one.key_pem};
	kft_httpd_opts o = {.tls = &tls};
	start(&f, &o);
	https_subject(kft_httpd_port(f.h), subject, sizeof(subject));
	assert_string_equal(subject, "CN = one");
	/* The poll thread looks at the directory in its first round, before the
	 * handshake that answered: a reload would have been counted by now. */
	assert_int_equal(reloads_of(&f), 0); /* the same pair: not loaded again */
	stop(&f);
	cert_dir_put(dir, &two); /* changed after "one" was read */
	start(&f, &o);
	await_subject(kft_httpd_port(f.h), "CN = two", subject, sizeof(subject));
	assert_string_equal(subject, "CN = two");
	assert_int_equal(reloads_of(&f), 1);
	stop(&f);
	kft_cert_free(&one);
	kft_cert_free(&two);
	cert_dir_remove(dir);
}

/* A TLS server without a certificate yet closes connections unanswered;
 * a bad pair is refused naming the server. */
static void test_tls_no_cert(void **state)
{
	(void)state;
	fixture f;
	kft_http_tls tls = {.min_minor = 2};
	kft_httpd_opts o = {.tls = &tls};
	start(&f, &o);
	assert_false(kft_httpd_has_cert(f.h));
	char subject[64];
	https_subject(kft_httpd_port(f.h), subject, sizeof(subject));
	assert_string_equal(subject, "");
	kft_cert one = make_cert("CN=one"), two = make_cert("CN=two");
	kft_http_tls bad = {.cert_pem = one.cert_pem, .key_pem = two.key_pem};
	kft_error err = {0};
	assert_int_equal(kft_httpd_set_tls(f.h, &bad, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "test server TLS: the private key is not the"));
	kft_http_tls good = {.cert_pem = one.cert_pem, .key_pem = one.key_pem};
	assert_int_equal(kft_httpd_set_tls(f.h, &good, &err), 0);
	https_subject(kft_httpd_port(f.h), subject, sizeof(subject));
	assert_string_equal(subject, "CN = one");
	stop(&f);
	kft_cert_free(&one);
	kft_cert_free(&two);
}

/* A pair parsed ahead (kft_http_tls_prepare, as the local supervisor does
 * while it waits for its job) is served as given, with the settings it was
 * prepared for; the server takes it over, so one it cannot use is freed
 * with the error (the ASan twin would report a leak). */
static void test_tls_prepared(void **state)
{
	(void)state;
	kft_cert one = make_cert("CN=one");
	kft_error err = {0};
	char subject[64];
	kft_http_tls tls = {.cert_pem = one.cert_pem, .key_pem = one.key_pem, .min_minor = 2};
	assert_int_equal(kft_http_tls_prepare("test", &tls, &tls.prepared, &err), 0);
	tls.cert_pem = tls.key_pem = NULL; /* the prepared pair alone */
	fixture f;
	kft_httpd_opts o = {.tls = &tls};
	start(&f, &o);
	assert_true(kft_httpd_has_cert(f.h));
	https_subject(kft_httpd_port(f.h), subject, sizeof(subject));
	assert_string_equal(subject, "CN = one");
	stop(&f);

	kft_http_tls other = {.cert_pem = one.cert_pem, .key_pem = one.key_pem, .min_minor = 0};
	assert_int_equal(kft_http_tls_prepare("test", &other, &tls.prepared, &err), 0);
	kft_httpd *h = NULL;
	o.listen = "127.0.0.1:0";
	assert_int_equal(kft_httpd_start(&o, &h, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "test server: the prepared certificate has other TLS"));
	assert_null(h);
	assert_int_equal(kft_http_tls_prepare("test", &other, &tls.prepared, &err), 0);
	o.listen = "127.0.0.1:not-a-port";
	assert_int_equal(kft_httpd_start(&o, &h, &err), KFT_EINVAL);
	assert_null(h);
	kft_http_tls bad = {.cert_pem = one.cert_pem, .key_pem = "no key", .min_minor = 2};
	assert_int_equal(kft_http_tls_prepare("test", &bad, &tls.prepared, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "test server TLS: cannot load the private key"));
	assert_null(tls.prepared);
	kft_cert_free(&one);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_head_parse),      cmocka_unit_test(test_query_cookie_secret),
	        cmocka_unit_test(test_idle_sockets),    cmocka_unit_test(test_strangers),
	        cmocka_unit_test(test_slow_clients),    cmocka_unit_test(test_admit_without_worker),
	        cmocka_unit_test(test_bodies),          cmocka_unit_test(test_heads),
	        cmocka_unit_test(test_stop_mid_stream), cmocka_unit_test(test_tls),
	        cmocka_unit_test(test_tls_no_cert),     cmocka_unit_test(test_tls_dir_since),
	        cmocka_unit_test(test_tls_prepared),
	};
	int rc = cmocka_run_group_tests_name("http", tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
