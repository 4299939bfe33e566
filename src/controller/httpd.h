/*
 * httpd.h - the manager's HTTP servers (health, metrics, the HTTPS handler server of the webhooks
 * and the status server) and their TLS settings (internal to src/controller/ and its tests).
 */
#ifndef KFT_CONTROLLER_HTTPD_H
#define KFT_CONTROLLER_HTTPD_H

#include <jansson.h>
#include <stddef.h>
#include <sys/stat.h>

#include "kftrainer/controller.h"
#include "controller/metrics.h"
#include "util/http.h"

/* ---- health and metrics HTTP server ---------------------------------------- */

typedef struct kft_cm_http kft_cm_http;

/*
 * Starts HTTP/1.1 servers (our own, one thread each; see src/controller/
 * httpd.c) on a health address serving /<liveness> (always "ok") and
 * /<readiness> ("ok" once *ready is non-zero, else 500), and a metrics
 * address serving /metrics. GET and HEAD; other methods on those paths get
 * 405, other paths 404; each connection is closed after one answer.
 * Addresses are Go listen strings (":8081", "127.0.0.1:0", "[::1]:8080");
 * "0" or "" skips that server. A port 0 picks a free port (see
 * kft_cm_http_port). KFT_EINVAL for a malformed address, KFT_EIO when the
 * port cannot be bound. m and ready are borrowed and must outlive the server.
 * *out is set only on success; free it with kft_cm_http_stop.
 */
int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err);
/* TLS for the metrics server. The strings are borrowed and only read while
 * kft_cm_http_start_tls runs (the server keeps its own parsed copies). */
typedef struct kft_cm_http_tls {
	const char *cert_pem;    /* the server certificate (chain), PEM */
	const char *key_pem;     /* its private key, PEM (RSA or ECDSA, unencrypted) */
	const char *min_version; /* tls.minVersion, "1.0".."1.2"; NULL or "" is 1.2 */
	/* tls.cipherSuites: an array of Go cipher suite names; NULL or empty:
	 * ECDHE with AEAD only (see kft_cm_tls_cipher_suites) */
	const json_t *cipher_suites;
} kft_cm_http_tls;

/*
 * kft_cm_http_start, with /metrics served over HTTPS (mbedTLS, TLS 1.2 at
 * most) when metrics_tls is non-NULL. KFT_EINVAL when min_version is not
 * one kft_cm_tls_min_version accepts (the message names tls.minVersion);
 * KFT_EIO also when the certificate or key cannot be loaded or do not match.
 */
int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *metrics_tls,
                          kft_metrics *m, const volatile int *ready, kft_cm_http **out,
                          kft_error *err);

/*
 * What a failing readiness probe says after "[-]readyz failed: ": fn writes
 * at most n bytes (NUL included) into buf, e.g. which caches have not
 * synced and why. Called from the server's threads while the ready flag is
 * zero; set or clear it at any time (NULL fn: "reason withheld", as
 * controller-runtime says).
 */
typedef void (*kft_cm_http_reason_fn)(void *ctx, char *buf, size_t n);
void kft_cm_http_set_readiness_reason(kft_cm_http *h, kft_cm_http_reason_fn fn, void *ctx);

/*
 * A self-signed server certificate for localhost and 127.0.0.1 (RSA 2048,
 * SHA-256, a year), as controller-runtime's metrics server falls back to,
 * made with mbedTLS. *cert_pem and *key_pem are new strings the caller
 * frees (both NULL on error). KFT_ENOMEM, or KFT_EIO for an mbedTLS failure.
 */
int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err);

/*
 * The metrics server's certificate: tls.crt and tls.key from dir (NULL:
 * $TMPDIR/k8s-metrics-server/serving-certs, controller-runtime's default)
 * when both exist, else a self-signed one (*generated = 1). Strings are new;
 * the caller frees them. Errors: KFT_EINVAL (files that are not a matching
 * PEM certificate and key mbedTLS can load), KFT_EIO, KFT_ELIMIT (over
 * 1 MiB), KFT_ENOMEM.
 */
int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err);

/*
 * tls.crt and tls.key of dir as kft_cm_metrics_cert reads them, without
 * the fallback: KFT_ENOTFOUND when they are not both there.
 */
int kft_cm_cert_pair_load(const char *dir, char **cert_pem, char **key_pem, kft_error *err);

/* What kft_cm_cert_pair_changed last saw of a directory's tls.crt and tls.key. */
typedef struct kft_cm_cert_seen {
	struct stat crt, key;
	int valid;
} kft_cm_cert_seen;

/*
 * Whether dir's tls.crt and tls.key both exist and either is not the file
 * *seen recorded (another inode, size or modification time: a file
 * rewritten, or a kubelet's symlink swap of a mounted Secret); when so it
 * records them. The certificate watchers (webhook.c, statusserver.c) call
 * it each second and load the pair when it answers 1.
 */
int kft_cm_cert_pair_changed(const char *dir, kft_cm_cert_seen *seen);

/*
 * tls.minVersion as the minor number x of TLS 1.x the metrics server
 * accepts at least: 0, 1 or 2 (NULL or "" is 2, Go's server default).
 * "1.3" is refused with KFT_EINVAL naming tls.minVersion: the server's TLS
 * (mbedTLS 2.28) stops at TLS 1.2, so such a configuration could serve no
 * client. Any other string is KFT_EINVAL too.
 */
int kft_cm_tls_min_version(const char *min_version, kft_error *err);

/* The most cipher suites kft_cm_tls_cipher_suites writes, with the 0 that
 * ends them. */
#define KFT_CM_TLS_SUITES_MAX 40

/*
 * tls.cipherSuites as mbedTLS suite numbers: names (an array of strings,
 * Go's crypto/tls names as controller-runtime takes them; NULL or empty for
 * the default) into ids[0..cap), ended by 0. The default is forward-secret
 * AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305), Go's secure
 * TLS 1.2 list. TLS 1.3 names are accepted and skipped, as Go does.
 * KFT_EINVAL naming tls.cipherSuites[i] for a name Go does not know or
 * mbedTLS does not offer (RC4), or when no TLS 1.2 suite remains.
 */
int kft_cm_tls_cipher_suites(const json_t *names, int *ids, size_t cap, kft_error *err);

/* ---- a handler server over HTTPS (the admission webhooks) --------------- */

/* One request as a handler sees it. body is NUL-terminated after len bytes
 * (it may hold NULs itself). Everything is borrowed for the call. */
typedef struct kft_cm_http_request {
	const char *method;
	const char *path; /* percent-decoded, without the query */
	const char *head; /* the whole head, request line to blank line, NUL-terminated */
	size_t head_len;
	const char *body; /* "" when refused */
	size_t len;
	int refused; /* 0, or the server's own answer for a body it would not read:
	              * 411, 413 or 400 (a reply body of NULL keeps it) */
} kft_cm_http_request;

/* A handler's answer: body is malloc'd (the server frees it); NULL makes a
 * 500. content_type NULL is application/json. */
typedef struct kft_cm_http_reply {
	int code;
	const char *content_type;
	char *body;
} kft_cm_http_reply;

/* Called from the server's worker threads, several at once. */
typedef void (*kft_cm_http_handler)(void *ctx, const kft_cm_http_request *req,
                                    kft_cm_http_reply *out);

/*
 * Starts an HTTPS server on addr (a Go listen string) calling fn for every
 * request with a well-formed head: with its Content-Length body of at most
 * body_max bytes (GET and HEAD without one too), or with `refused` set and no
 * body for a body it will not read (411 without a length or with
 * Transfer-Encoding, 413 past body_max, 400 for a bad length), which the
 * server answers itself unless fn replies; 400/431/505 for a malformed head
 * never reach fn. Connections as the health server's (a poll loop over up to
 * 64, one request each) with `workers` threads (1..16). tls is required; a
 * NULL tls->cert_pem starts the server without a certificate, closing
 * connections unanswered until kft_cm_http_set_tls gives it one. Errors as
 * kft_cm_http_start_tls. Stop with kft_cm_http_stop.
 */
int kft_cm_https_start(const char *addr, const kft_cm_http_tls *tls, size_t body_max, int workers,
                       kft_cm_http_handler fn, void *ctx, kft_cm_http **out, kft_error *err);

/* Replaces a handler server's certificate and key (rotation): connections
 * already open finish with the old ones. Errors as kft_cm_https_start's TLS
 * errors; the old certificate stays on failure. */
int kft_cm_http_set_tls(kft_cm_http *h, const kft_cm_http_tls *tls, kft_error *err);

/* A request head's body length: 0 with *len set, 411 when it has no
 * Content-Length or has Transfer-Encoding, 413 past max, 400 when the
 * length is not a decimal number. */
int kft_cm_http_body_length(const char *head, size_t max, size_t *len);

/* The bound port of the health (which=0), metrics (which=1) or handler
 * (which=2) server, 0 when none. */
int kft_cm_http_port(const kft_cm_http *h, int which);
/* Stops both servers (at once, even mid-request: no wait for a client),
 * joins their threads, closes every socket and frees h. NULL is a no-op. */
void kft_cm_http_stop(kft_cm_http *h);

#endif
