/*
 * server_internal.h - what the server core's files share (internal to
 * src/http): the server and connection records, the TLS context, and the
 * I/O steps (conn.c), TLS (tls.c) and listening sockets (listen.c) the
 * poll thread and workers (server.c) are built from.
 */
#ifndef KFT_HTTP_SERVER_INTERNAL_H
#define KFT_HTTP_SERVER_INTERNAL_H

#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>

#include "http/server.h"
#include "util/digest.h"

/* One parsed certificate and key with the mbedTLS configuration serving
 * them; shared by every connection that began under it (refs, under the
 * server's tls_mu), so a rotation never pulls one from under a handshake. */
struct kft_http_tls_ctx {
	mbedtls_ssl_config conf;
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	int min_minor;
	int suites[KFT_HTTP_SUITES_MAX];
	int refs;
	/* SHA-256 of the PEM texts it was made from: a directory's files that
	 * hold the same pair are not loaded again */
	unsigned char crt_digest[KFT_SHA256_LEN], key_digest[KFT_SHA256_LEN];
};

/* Where a connection is. The poll thread moves it through IDLE (nothing
 * received: no TLS state allocated yet), HANDSHAKE, HEAD, BODY, then hands
 * it to a worker (SERVING); or answers it itself (WRITE). Either way it
 * ends in LINGER: our side shut, the client's last bytes read off before
 * closing, so a reset cannot destroy an answer it has not read. */
typedef enum conn_state {
	C_IDLE,
	C_HANDSHAKE,
	C_HEAD,
	C_BODY,
	C_SERVING,
	C_WRITE,
	C_LINGER,
} conn_state;

struct kft_http_conn {
	kft_httpd *srv;
	int fd;
	conn_state st;
	long long accepted, deadline; /* CLOCK_MONOTONIC ms */
	bool got_bytes;               /* the client has sent something */
	bool want_write;              /* what the non-blocking step last waited for */
	bool paused;                  /* a body waiting for the server's body budget */
	bool loopback;
	struct in6_addr peer; /* IPv4 mapped */
	long uid;             /* the loopback client's user, -1 when not known */
	kft_http_tls_ctx *tls;
	mbedtls_ssl_context *ssl;
	char *in; /* the head, then the body after its NUL */
	size_t in_len, in_cap;
	size_t need; /* head + body bytes, once the head is read */
	kft_http_head head;
	bool head_parsed;
	kft_http_req req;
	char *out; /* an answer the poll thread writes */
	size_t out_len, out_off;
	size_t lingered;
	struct kft_http_conn *next; /* in a queue */
};

struct kft_httpd {
	kft_httpd_opts o; /* strings below are copies */
	kft_httpd_handlers handlers;
	char *name, *headers, *cert_dir;
	int lfd, port;
	bool loopback;
	int diag_fd;  /* sock_diag, to learn a loopback client's user */
	long own_uid; /* ours: a loopback client of this user is our own */
	int wake[2];  /* the poll thread's doorbell: stop, and connections back from workers */
	int stop[2];  /* written once at stop, never read: every wait polls [0] */
	atomic_bool stopping;
	pthread_t poller;
	bool polling;
	/* the poll thread's own */
	kft_http_conn **conns;
	size_t nconns, conns_cap;
	atomic_size_t body_bytes; /* bodies being read, past their head buffers */
	long long next_cert_check;
	kft_http_cert_seen seen;
	/* TLS: the current context, swapped under tls_mu */
	bool tls_on;
	int tls_min_minor;
	int tls_suites[KFT_HTTP_SUITES_MAX];
	kft_http_tls_ctx *tls;
	pthread_mutex_t tls_mu;
	/* workers: requests waiting, connections coming back */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	kft_http_conn *ready, *ready_tail, *done;
	int nready, busy, nworkers; /* busy: serving now */
	pthread_t *workers;
};

/* ---- conn.c: bytes in and out --------------------------------------------------- */

/* Non-blocking: bytes read (> 0), 0 at the end of input, -1 on an error,
 * -2 when it would block (c->want_write says for what). */
int kft_http_conn_read_nb(kft_http_conn *c, char *buf, size_t len);
/* Non-blocking: bytes written (> 0), -1 on an error, -2 would block. */
int kft_http_conn_write_nb(kft_http_conn *c, const char *buf, size_t len);
/* A non-blocking handshake step: 0 done, -2 would block, -1 failed. */
int kft_http_conn_handshake(kft_http_conn *c);
/* Sets up TLS on c with the server's current context; -1 when it has none
 * or on failure. */
int kft_http_conn_tls_begin(kft_http_conn *c);
/* Sends close_notify once (best effort) and frees c's TLS state. */
void kft_http_conn_tls_end(kft_http_conn *c);
/* The bytes of a whole answer: status line, the server's headers, extra,
 * then body (not for HEAD); malloc'd, its length in *len. len < 0 leaves
 * Content-Length out (a stream). NULL on ENOMEM. */
char *kft_http_answer_bytes(const kft_httpd *s, int code, const char *type, const char *extra,
                            long long len, const void *body, bool head_only, size_t *out_len);

/* ---- tls.c ------------------------------------------------------------------------- */

/* The oldest TLS 1.x minor and the suites (0-ended) a server started
 * with tls offers. */
void kft_http_tls_settings(const kft_http_tls *tls, int *min_minor,
                           int suites[KFT_HTTP_SUITES_MAX]);
/* check_pair: whether the key must be shown to be the certificate's. */
int kft_http_tls_ctx_new(const kft_httpd *s, const char *cert_pem, const char *key_pem,
                         bool check_pair, kft_http_tls_ctx **out, kft_error *err);
/* The server's current context with a reference (NULL when none). */
kft_http_tls_ctx *kft_http_tls_get(kft_httpd *s);
void kft_http_tls_put(kft_httpd *s, kft_http_tls_ctx *t);
/* Looks at the certificate directory when due (poll thread). */
void kft_http_tls_check_dir(kft_httpd *s, long long now);

/* ---- listen.c ----------------------------------------------------------------------- */

/* A listening, non-blocking socket for a Go listen address; its port and
 * whether it is loopback-only. KFT_EINVAL or KFT_EIO naming the server. */
int kft_http_listen(const char *name, const char *addr, int *fd, int *port, bool *loopback,
                    kft_error *err);
/* Whether a peer's address (IPv4 mapped into IPv6) is loopback. */
bool kft_http_addr_loopback(const struct in6_addr *a);

/* ---- peer.c ------------------------------------------------------------------------- */

/* A sock_diag socket (-1 when the kernel has none). */
int kft_http_diag_open(void);
/* The user owning the client end of the accepted connection fd from peer,
 * or -1 when it cannot be told. */
long kft_http_peer_uid(int diag_fd, int fd, const struct sockaddr_storage *peer);

#endif
