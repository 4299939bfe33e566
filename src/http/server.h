/*
 * server.h - the one HTTP/1.1 server core (internal): every server of ours
 * (the controller's probes, metrics, admission webhooks and status server,
 * the dashboard, a local job's status endpoint) is one kft_httpd with its
 * own handlers, limits and optional TLS. See server.c for the design.
 *
 * A request passes three steps:
 *  1. the server's poll thread accepts the connection, completes the TLS
 *     handshake and reads the head, never blocking on a client;
 *  2. `admit`, on that thread, decides from the head alone whether the
 *     request goes on (authentication, routing); a refusal is answered
 *     there, so a client that is not let in never holds a worker. Admitted
 *     requests have their body read, still on the poll thread;
 *  3. `serve`, on one of at most `workers` threads, answers through the
 *     kft_http_respond family, which may stream for as long as the client
 *     stays.
 * Until step 3 a connection holds only a descriptor and a small record;
 * at most `pending` are open, a client that is not our own user (on
 * loopback, the kernel tells whose socket it is) holds at most a quarter of
 * them, and a newcomer pushes out lingering, then strangers', then silent
 * connections first, so idle or slow clients, or another local user's
 * flood, cannot keep our own clients out.
 */
#ifndef KFT_HTTP_SERVER_H
#define KFT_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "http/http.h"
#include "kftrainer/error.h"

typedef struct kft_httpd kft_httpd;
typedef struct kft_http_conn kft_http_conn;

/* A request as a handler sees it; borrowed for the call. */
typedef struct kft_http_req {
	const kft_http_head *head; /* method, path, query, fields, host, length */
	const char *body;          /* NUL-terminated after body_len bytes; "" when none */
	size_t body_len;
	/* 0, or the server's own answer for a body it did not read: 411 (no
	 * Content-Length where one is required, or Transfer-Encoding), 413
	 * (over body_max) */
	int refused;
	bool peer_loopback; /* the client connected from a loopback address */
} kft_http_req;

/* An answer given without a worker (admit's refusal): body is malloc'd
 * (the server frees it) or NULL for "CODE Reason" as text; extra is more
 * header lines, each ending "\r\n" ("" for none). */
typedef struct kft_http_answer {
	int code;
	const char *type; /* NULL: text/plain; charset=utf-8 */
	char *body;
	char extra[512];
} kft_http_answer;

typedef struct kft_httpd_handlers {
	/* On the poll thread, before any worker is taken and before the body
	 * is read: return 0 to let r go on, or fill *a and return non-zero to
	 * answer with it. Must be quick and never block. NULL admits all. */
	int (*admit)(void *ctx, const kft_http_req *r, kft_http_answer *a);
	/* On a worker: answers r through c. Several run at once. */
	void (*serve)(void *ctx, kft_http_conn *c, const kft_http_req *r);
	/* After a certificate directory was looked at and changed (rc 0:
	 * loaded; else err says why the files were refused). NULL: silent. */
	void (*cert_reloaded)(void *ctx, int rc, const kft_error *err);
	void *ctx;
} kft_httpd_handlers;

/* A certificate and key parsed, with the TLS configuration serving them
 * (kft_http_tls_prepare). */
typedef struct kft_http_tls_ctx kft_http_tls_ctx;

/* TLS for a server. Strings are borrowed while kft_httpd_start or
 * kft_httpd_set_tls runs; the server keeps its own parsed copies. */
typedef struct kft_http_tls {
	const char *cert_pem; /* the certificate (chain), PEM; NULL: none yet */
	const char *key_pem;  /* its private key, PEM (RSA or ECDSA, unencrypted) */
	int min_minor; /* the oldest TLS 1.x accepted: 0, 1 or 2 (mbedTLS 2.28 stops at 1.2) */
	/* mbedTLS suite ids ending with 0 (NULL: ECDHE with AES-GCM or
	 * ChaCha20-Poly1305 only, every session forward secret); copied */
	const int *suites;
	/* A directory whose tls.crt and tls.key are looked at every second and
	 * loaded when they appear or change (controller-runtime's certwatcher;
	 * a mounted Secret's symlink swap included): when their text is not the
	 * pair being served. With cert_pem too, that pair is taken as read from
	 * the directory, which is looked at again at once. NULL: none. */
	const char *cert_dir;
	/* The key and certificate were made together in this process (the
	 * local status server's own pair): they are not checked against each
	 * other, a P-256 scalar multiplication (0.7 ms) on a job's start path. */
	bool made_together;
	/* The pair parsed already by kft_http_tls_prepare with these same
	 * settings (a process that knows its pair before it knows it will
	 * serve it: the local supervisor while it waits for its job). Used
	 * instead of cert_pem and key_pem, and taken over by kft_httpd_start or
	 * kft_httpd_set_tls, which free it when they fail. NULL: parse them. */
	kft_http_tls_ctx *prepared;
} kft_http_tls;

#define KFT_HTTP_SUITES_MAX 40

/* The suites a server offers when not told (Go's secure TLS 1.2 list:
 * ECDHE with AES-GCM or ChaCha20-Poly1305), ending with 0. */
const int *kft_http_default_suites(void);

typedef struct kft_httpd_opts {
	const char *name;   /* in messages: "health", "metrics", "webhook", "dashboard" ... */
	const char *listen; /* a Go listen address (":8081", "127.0.0.1:0", "[::1]:8080") */
	const kft_httpd_handlers *handlers;
	const kft_http_tls *tls; /* NULL: plain HTTP */
	size_t head_max;         /* 0: 8 KiB */
	size_t body_max;         /* the largest body read; 0: none is read (nor refused) */
	bool length_required;    /* a POST/PUT/PATCH without Content-Length is 411 */
	bool host_required;      /* a request without Host is 400 */
	int head_timeout_ms;     /* accept to whole request (handshake, head, body); 0: 5 s */
	int write_timeout_ms;    /* one send waiting for the client; 0: 5 s */
	int workers;             /* handlers at once (1..64); 0: 4 */
	/* admitted requests that may wait for a busy worker; beyond, 503. 0:
	 * as many as `pending`; -1: none (a server whose answers are streams,
	 * where waiting could last as long as a stream) */
	int queue;
	int pending;         /* connections before their request is whole; 0: 128 */
	size_t stack_size;   /* of each thread; 0: 256 KiB */
	const char *headers; /* header lines every answer carries ("\r\n" each), or NULL */
} kft_httpd_opts;

/*
 * Binds o->listen and starts the poll thread and the first worker, with
 * every signal blocked in them. With o->tls and no certificate yet, the
 * server starts and closes connections unanswered until kft_httpd_set_tls
 * or the certificate directory gives it one. Errors: KFT_EINVAL (a
 * malformed address or TLS setting), KFT_EIO (the port cannot be bound, or
 * the certificate or key cannot be loaded or do not match; the message
 * names the server), KFT_ENOMEM. *out is set only on success.
 */
int kft_httpd_start(const kft_httpd_opts *o, kft_httpd **out, kft_error *err);

/* The bound port. */
int kft_httpd_port(const kft_httpd *h);

/* Whether the server listens on a loopback address only. */
bool kft_httpd_loopback(const kft_httpd *h);

/* Replaces the certificate and key (rotation): connections already open
 * finish with the old ones. Errors as kft_httpd_start's TLS errors; the old
 * certificate stays on failure. KFT_EINVAL for a plain server. */
int kft_httpd_set_tls(kft_httpd *h, const kft_http_tls *tls, kft_error *err);

/* Parses tls's cert_pem and key_pem and makes the configuration a server
 * started with tls would serve them with, into *out, to hand to that server
 * as tls->prepared (or free with kft_http_tls_free). Errors as
 * kft_httpd_start's TLS errors, the message naming the server `name`. */
int kft_http_tls_prepare(const char *name, const kft_http_tls *tls, kft_http_tls_ctx **out,
                         kft_error *err);

/* Frees a prepared pair no server took. NULL is a no-op. */
void kft_http_tls_free(kft_http_tls_ctx *t);

/* Whether a certificate is loaded (a TLS server started without one). */
bool kft_httpd_has_cert(kft_httpd *h);

/* Stops at once, even mid-request (streams see kft_http_wait return -1),
 * joins every thread, closes every socket and frees h. NULL is a no-op. */
void kft_httpd_stop(kft_httpd *h);

/* ---- answering (from serve, on a worker) --------------------------------------- */

/* A whole answer: status line, Content-Type, Content-Length, the server's
 * headers and extra (header lines ending "\r\n", or NULL), then body unless
 * the request was HEAD. 0, or -1 when the client is gone or too slow (the
 * handler should stop). */
int kft_http_respond(kft_http_conn *c, int code, const char *type, const void *body, size_t len,
                     const char *extra);

/* An answer whose body runs until the connection closes (events, a log
 * being followed): the head only; send the body with kft_http_send. */
int kft_http_stream_start(kft_http_conn *c, const char *type, const char *extra);

/* Sends all of buf, waiting at most the write timeout for the client to
 * read. 0 or -1 as kft_http_respond. */
int kft_http_send(kft_http_conn *c, const void *buf, size_t len);

/* Waits up to ms. 0 when the time passed, -1 when the client closed its
 * side or the server is stopping: a stream's cue to end. */
int kft_http_wait(kft_http_conn *c, int ms);

/* ---- certificate files (shared by every TLS server with a directory) ----------- */

/* What kft_http_cert_pair_changed last saw of a directory's files. */
typedef struct kft_http_cert_seen {
	struct stat crt, key;
	int valid;
} kft_http_cert_seen;

/* Whether dir's tls.crt and tls.key both exist and either is not the file
 * *seen recorded (another inode, size or modification time: a rewrite, or
 * a kubelet's symlink swap of a mounted Secret); when so it records them. */
int kft_http_cert_pair_changed(const char *dir, kft_http_cert_seen *seen);

/* tls.crt and tls.key of dir: new strings the caller frees (the key with
 * kft_secret_free). KFT_ENOTFOUND when they are not both there, KFT_EINVAL
 * when they are not a matching PEM certificate and key mbedTLS can load,
 * KFT_ELIMIT over 1 MiB, KFT_EIO, KFT_ENOMEM. */
int kft_http_cert_pair_load(const char *dir, char **cert_pem, char **key_pem, kft_error *err);

#endif
