/*
 * conn.c - a connection's bytes: plain or through TLS, non-blocking steps
 * for the poll thread, and the waits with deadlines that workers answer
 * through (kft_http_respond, streams). Sockets are always non-blocking;
 * a worker's wait polls the socket and the server's stop pipe, so stopping
 * the server ends every wait at once.
 */
#include <errno.h>
#include <mbedtls/net_sockets.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "http/server_internal.h"
#include "util/clock.h"

/* ---- non-blocking steps ---------------------------------------------------------------- */

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	kft_http_conn *c = ctx;
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
	if (n >= 0)
		return (int)n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
	               ? MBEDTLS_ERR_SSL_WANT_WRITE
	               : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	kft_http_conn *c = ctx;
	ssize_t n = recv(c->fd, buf, len, 0);
	if (n >= 0)
		return (int)n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
	               ? MBEDTLS_ERR_SSL_WANT_READ
	               : MBEDTLS_ERR_NET_RECV_FAILED;
}

/* An mbedTLS result as a step's: -2 (would block; want_write set), -1. */
static int tls_would_block(kft_http_conn *c, int rc)
{
	if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
		c->want_write = rc == MBEDTLS_ERR_SSL_WANT_WRITE;
		return -2;
	}
	return -1;
}

int kft_http_conn_read_nb(kft_http_conn *c, char *buf, size_t len)
{
	if (c->ssl) {
		int n = mbedtls_ssl_read(c->ssl, (unsigned char *)buf, len);
		if (n >= 0)
			return n;
		return n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ? 0 : tls_would_block(c, n);
	}
	ssize_t n = recv(c->fd, buf, len, 0);
	if (n >= 0)
		return (int)n;
	c->want_write = false;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -2 : -1;
}

int kft_http_conn_write_nb(kft_http_conn *c, const char *buf, size_t len)
{
	if (c->ssl) {
		int n = mbedtls_ssl_write(c->ssl, (const unsigned char *)buf, len);
		return n > 0 ? n : tls_would_block(c, n);
	}
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
	if (n > 0)
		return (int)n;
	c->want_write = true;
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? -2 : -1;
}

int kft_http_conn_handshake(kft_http_conn *c)
{
	int rc = mbedtls_ssl_handshake(c->ssl);
	return rc == 0 ? 0 : tls_would_block(c, rc);
}

int kft_http_conn_tls_begin(kft_http_conn *c)
{
	c->tls = kft_http_tls_get(c->srv);
	if (!c->tls)
		return -1; /* no certificate yet: closed unanswered */
	c->ssl = malloc(sizeof(*c->ssl));
	if (!c->ssl)
		return -1;
	mbedtls_ssl_init(c->ssl);
	if (mbedtls_ssl_setup(c->ssl, &c->tls->conf) != 0)
		return -1;
	mbedtls_ssl_set_bio(c->ssl, c, bio_send, bio_recv, NULL);
	return 0;
}

void kft_http_conn_tls_end(kft_http_conn *c)
{
	if (c->ssl) {
		if (c->st == C_SERVING || c->st == C_WRITE)
			(void)mbedtls_ssl_close_notify(c->ssl);
		mbedtls_ssl_free(c->ssl);
		free(c->ssl);
		c->ssl = NULL;
	}
	kft_http_tls_put(c->srv, c->tls);
	c->tls = NULL;
}

/* ---- answers ----------------------------------------------------------------------------- */

char *kft_http_answer_bytes(const kft_httpd *s, int code, const char *type, const char *extra,
                            long long len, const void *body, bool head_only, size_t *out_len)
{
	char date[64], length[48] = "";
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (len >= 0)
		snprintf(length, sizeof(length), "Content-Length: %lld\r\n", len);
	char *head = NULL;
	int hl = asprintf(&head,
	                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%sDate: %s\r\n"
	                  "X-Content-Type-Options: nosniff\r\nConnection: close\r\n%s%s\r\n",
	                  code, kft_http_reason(code), type ? type : "text/plain; charset=utf-8",
	                  length, date, s->headers ? s->headers : "", extra ? extra : "");
	if (hl < 0)
		return NULL;
	size_t blen = body && len > 0 && !head_only ? (size_t)len : 0;
	char *out = blen ? realloc(head, (size_t)hl + blen) : head;
	if (!out) {
		free(head);
		return NULL;
	}
	if (blen)
		memcpy(out + hl, body, blen);
	*out_len = (size_t)hl + blen;
	return out;
}

/* ---- a worker's waits --------------------------------------------------------------------- */

/* Waits for fd to be ready for events until deadline (ms, monotonic). 1
 * ready, 0 timed out, stopping or a poll error. */
static int wait_io(kft_http_conn *c, short events, long long deadline)
{
	for (;;) {
		long long left = deadline - kft_clock_mono_ms();
		if (left <= 0 || atomic_load(&c->srv->stopping))
			return 0;
		struct pollfd p[2] = {{c->fd, events, 0}, {c->srv->stop[0], POLLIN, 0}};
		int n = poll(p, 2, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return 0;
		if (p[0].revents)
			return 1;
	}
}

int kft_http_send(kft_http_conn *c, const void *buf, size_t len)
{
	const char *p = buf;
	long long deadline = kft_clock_mono_ms() + c->srv->o.write_timeout_ms;
	while (len > 0) {
		int n = kft_http_conn_write_nb(c, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 || !wait_io(c, c->want_write ? POLLOUT : POLLIN, deadline))
			return -1;
	}
	return 0;
}

static bool head_only(const kft_http_conn *c)
{
	return strcmp(c->head.method, "HEAD") == 0;
}

int kft_http_respond(kft_http_conn *c, int code, const char *type, const void *body, size_t len,
                     const char *extra)
{
	size_t n = 0;
	char *bytes = kft_http_answer_bytes(c->srv, code, type, extra, (long long)len, body,
	                                    head_only(c), &n);
	int rc = bytes ? kft_http_send(c, bytes, n) : -1;
	free(bytes);
	return rc;
}

int kft_http_stream_start(kft_http_conn *c, const char *type, const char *extra)
{
	size_t n = 0;
	char *bytes = kft_http_answer_bytes(c->srv, 200, type, extra, -1, NULL, true, &n);
	int rc = bytes ? kft_http_send(c, bytes, n) : -1;
	free(bytes);
	return rc;
}

int kft_http_wait(kft_http_conn *c, int ms)
{
	long long deadline = kft_clock_mono_ms() + ms;
	for (;;) {
		if (atomic_load(&c->srv->stopping))
			return -1;
		long long left = deadline - kft_clock_mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p[2] = {{c->fd, POLLIN | POLLRDHUP, 0}, {c->srv->stop[0], POLLIN, 0}};
		int n = poll(p, 2, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && p[1].revents))
			return -1;
		if (n > 0 && p[0].revents) {
			/* A stream's client sends nothing more: input is its close
			 * (or junk we drop); either way, read it off. */
			char junk[256];
			int r = kft_http_conn_read_nb(c, junk, sizeof(junk));
			if (r == 0 || r == -1 || (p[0].revents & (POLLHUP | POLLERR | POLLRDHUP)))
				return -1;
		}
	}
}
