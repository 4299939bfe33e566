/*
 * httpd.h - the manager's health and metrics servers, and the TLS settings
 * every server of the manager takes from its Configuration (internal to
 * src/controller/ and its tests). The servers themselves are the one core
 * (src/http/server.h); the webhooks (webhook.c) and the status server
 * (statusserver.c) are its handlers too.
 */
#ifndef KFT_CONTROLLER_HTTPD_H
#define KFT_CONTROLLER_HTTPD_H

#include <jansson.h>
#include <stddef.h>

#include "controller/controller.h"
#include "controller/metrics.h"
#include "http/server.h"

/* ---- health and metrics ------------------------------------------------------------ */

typedef struct kft_cm_http kft_cm_http;

/* The metrics server's TLS, as the Configuration gives it. Borrowed; only
 * read while kft_cm_http_start_tls runs. */
typedef struct kft_cm_http_tls {
	const char *cert_pem;    /* the server certificate (chain), PEM */
	const char *key_pem;     /* its private key, PEM (RSA or ECDSA, unencrypted) */
	const char *min_version; /* tls.minVersion, "1.0".."1.2"; NULL or "" is 1.2 */
	/* tls.cipherSuites: an array of Go cipher suite names; NULL or empty:
	 * ECDHE with AEAD only (see kft_cm_tls_cipher_suites) */
	const json_t *cipher_suites;
	/* where cert_pem and key_pem came from (tls.crt, tls.key), watched for
	 * rotation as controller-runtime's certwatcher does; NULL: generated */
	const char *cert_dir;
} kft_cm_http_tls;

/*
 * Starts a server on a health address serving /<liveness> (always "ok") and
 * /<readiness> ("ok" once *ready is non-zero, else 500), and one on a
 * metrics address serving /metrics (over HTTPS when metrics_tls is
 * non-NULL), each on the server core. GET and HEAD; other methods on those
 * paths get 405, other paths 404; each connection is closed after one
 * answer. Addresses are Go listen strings (":8081", "127.0.0.1:0",
 * "[::1]:8080"); "0" or "" skips that server. A port 0 picks a free port
 * (see kft_cm_http_port). KFT_EINVAL for a malformed address or TLS
 * setting (the message names tls.minVersion or tls.cipherSuites), KFT_EIO
 * when the port cannot be bound or the certificate and key cannot be
 * loaded. m and ready are borrowed and must outlive the servers. *out is
 * set only on success; free it with kft_cm_http_stop.
 */
int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *metrics_tls,
                          kft_metrics *m, const volatile int *ready, kft_cm_http **out,
                          kft_error *err);
/* kft_cm_http_start_tls with plain HTTP metrics. */
int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err);

/*
 * What a failing readiness probe says after "[-]readyz failed: ": fn writes
 * at most n bytes (NUL included) into buf, e.g. which caches have not
 * synced and why. Called from the server's threads while the ready flag is
 * zero; set or clear it at any time (NULL fn: "reason withheld", as
 * controller-runtime says).
 */
typedef void (*kft_cm_http_reason_fn)(void *ctx, char *buf, size_t n);
void kft_cm_http_set_readiness_reason(kft_cm_http *h, kft_cm_http_reason_fn fn, void *ctx);

/* The bound port of the health (which=0) or metrics (which=1) server, 0
 * when none. */
int kft_cm_http_port(const kft_cm_http *h, int which);
/* Stops both servers (at once, even mid-request), closes every socket and
 * frees h. NULL is a no-op. */
void kft_cm_http_stop(kft_cm_http *h);

/* ---- TLS settings (tls.c) ------------------------------------------------------------ */

/*
 * The server core's TLS settings for tls.minVersion and tls.cipherSuites:
 * out->min_minor and out->suites (pointing into suites, which the caller
 * keeps while out is used). Errors as kft_cm_tls_min_version and
 * kft_cm_tls_cipher_suites.
 */
int kft_cm_tls_settings(const char *min_version, const json_t *cipher_suites,
                        int suites[KFT_HTTP_SUITES_MAX], kft_http_tls *out, kft_error *err);

/*
 * A self-signed server certificate for localhost and 127.0.0.1 (RSA 2048,
 * SHA-256, a year), as controller-runtime's metrics server falls back to,
 * made with mbedTLS. *cert_pem and *key_pem are new strings the caller
 * frees (both NULL on error). KFT_ENOMEM, or KFT_EIO for an mbedTLS failure.
 */
int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err);

/* controller-runtime's metrics certificate directory:
 * $TMPDIR/k8s-metrics-server/serving-certs. */
void kft_cm_metrics_cert_dir(char *buf, size_t n);

/*
 * The metrics server's certificate: tls.crt and tls.key from dir (NULL:
 * kft_cm_metrics_cert_dir) when both exist, else a self-signed one
 * (*generated = 1). Strings are new; the caller frees them. Errors:
 * KFT_EINVAL (files that are not a matching PEM certificate and key mbedTLS
 * can load), KFT_EIO, KFT_ELIMIT (over 1 MiB), KFT_ENOMEM.
 */
int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err);

/*
 * tls.minVersion as the minor number x of TLS 1.x the servers accept at
 * least: 0, 1 or 2 (NULL or "" is 2, Go's server default). "1.3" is
 * refused with KFT_EINVAL naming tls.minVersion: the servers' TLS (mbedTLS
 * 2.28) stops at TLS 1.2, so such a configuration could serve no client.
 * Any other string is KFT_EINVAL too.
 */
int kft_cm_tls_min_version(const char *min_version, kft_error *err);

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

#endif
