/*
 * tls.c - the metrics server's certificate, as controller-runtime finds or
 * makes it when metrics.secureServing is on, done with mbedTLS so the
 * controller needs no other TLS library to serve HTTPS.
 *
 * controller-runtime looks for tls.crt and tls.key in
 * $TMPDIR/k8s-metrics-server/serving-certs and, when they are not both
 * there, serves a self-signed certificate for localhost/127.0.0.1 made at
 * start-up; kube-controller-manager does the same. We follow that (the
 * files are watched for rotation by the server core, as controller-runtime's
 * certwatcher does), with one simplification: the generated certificate
 * signs itself instead of coming with a throw-away CA. The generated key is RSA 2048 and the
 * signature SHA-256, valid a year, as client-go's helper makes them
 * (util/cert.c makes it; the local engine's per-job certificates come from
 * there too).
 *
 * tls.minVersion is checked here too: mbedTLS 2.28 speaks TLS 1.0 to 1.2,
 * so a configuration that allows only TLS 1.3 cannot be served and is
 * refused before the server starts rather than failing every handshake.
 */
#include <mbedtls/pk.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/httpd.h"
#include "controller/controller.h"
#include "util/cert.h"

#define VALID_DAYS 365

int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err)
{
	char cn[64];
	kft_cert c = {0};
	snprintf(cn, sizeof(cn), "CN=localhost@%lld", (long long)time(NULL));
	kft_cert_opts o = {.key_type = KFT_CERT_RSA2048, .subject = cn, .valid_days = VALID_DAYS};
	int rc = kft_cert_make(&o, "failed to generate self-signed certificate for metrics server",
	                       &c, err);
	*cert_pem = c.cert_pem;
	*key_pem = c.key_pem;
	return rc;
}

void kft_cm_metrics_cert_dir(char *buf, size_t n)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(buf, n, "%s/k8s-metrics-server/serving-certs", tmp && *tmp ? tmp : "/tmp");
}

int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err)
{
	char defdir[4000];
	*generated = 0;
	if (!dir) {
		kft_cm_metrics_cert_dir(defdir, sizeof(defdir));
		dir = defdir;
	}
	int rc = kft_http_cert_pair_load(dir, cert_pem, key_pem, err);
	if (rc == KFT_ENOTFOUND) {
		/* not both there: controller-runtime's fallback */
		*generated = 1;
		return kft_cm_self_signed_cert(cert_pem, key_pem, err);
	}
	return rc;
}

int kft_cm_tls_min_version(const char *min_version, kft_error *err)
{
	if (!min_version || !*min_version || strcmp(min_version, "1.2") == 0)
		return 2;
	if (strcmp(min_version, "1.1") == 0)
		return 1;
	if (strcmp(min_version, "1.0") == 0)
		return 0;
	if (strcmp(min_version, "1.3") == 0)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "tls.minVersion: Unsupported value: \"1.3\": the metrics server "
		        "speaks TLS 1.2 at most (mbedTLS %d.%d); set tls.minVersion to "
		        "\"1.2\" or lower, or metrics.secureServing to false",
		        MBEDTLS_VERSION_MAJOR, MBEDTLS_VERSION_MINOR);
	return kft_error_set(err, KFT_EINVAL,
	                     "tls.minVersion: Unsupported value: \"%s\": supported values: "
	                     "\"1.0\", \"1.1\", \"1.2\"",
	                     min_version);
}

/* ---- cipher suites ------------------------------------------------------------------- */

/* Go's crypto/tls names (CipherSuites and InsecureCipherSuites, with the
 * two ChaCha20 aliases Go keeps) and mbedTLS's numbers. TLS 1.3 suites are
 * named so they are accepted, as Go accepts and ignores them (they are not
 * configurable there); RC4 is named so it is refused with a reason. */
#define SUITE_TLS13 (-1)
#define SUITE_NONE  0

static const struct {
	const char *go;
	int id;
} suites[] = {
        {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
         MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
        {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
        {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
         MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
        {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
        {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
         MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
        {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
         MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
        {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
         MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
        {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
         MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
        {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA},
        {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA},
        {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA},
        {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA},
        {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
         MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256},
        {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256},
        {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", MBEDTLS_TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA},
        {"TLS_RSA_WITH_AES_128_GCM_SHA256", MBEDTLS_TLS_RSA_WITH_AES_128_GCM_SHA256},
        {"TLS_RSA_WITH_AES_256_GCM_SHA384", MBEDTLS_TLS_RSA_WITH_AES_256_GCM_SHA384},
        {"TLS_RSA_WITH_AES_128_CBC_SHA", MBEDTLS_TLS_RSA_WITH_AES_128_CBC_SHA},
        {"TLS_RSA_WITH_AES_256_CBC_SHA", MBEDTLS_TLS_RSA_WITH_AES_256_CBC_SHA},
        {"TLS_RSA_WITH_AES_128_CBC_SHA256", MBEDTLS_TLS_RSA_WITH_AES_128_CBC_SHA256},
        {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", MBEDTLS_TLS_RSA_WITH_3DES_EDE_CBC_SHA},
        {"TLS_RSA_WITH_RC4_128_SHA", SUITE_NONE},
        {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", SUITE_NONE},
        {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", SUITE_NONE},
        {"TLS_AES_128_GCM_SHA256", SUITE_TLS13},
        {"TLS_AES_256_GCM_SHA384", SUITE_TLS13},
        {"TLS_CHACHA20_POLY1305_SHA256", SUITE_TLS13},
};

int kft_cm_tls_settings(const char *min_version, const json_t *cipher_suites,
                        int ids[KFT_HTTP_SUITES_MAX], kft_http_tls *out, kft_error *err)
{
	int min = kft_cm_tls_min_version(min_version, err);
	if (min < 0)
		return min;
	int rc = kft_cm_tls_cipher_suites(cipher_suites, ids, KFT_HTTP_SUITES_MAX, err);
	if (rc)
		return rc;
	out->min_minor = min;
	out->suites = ids;
	return 0;
}

int kft_cm_tls_cipher_suites(const json_t *names, int *ids, size_t cap, kft_error *err)
{
	size_t n = 0;
	if (json_array_size(names) == 0) {
		for (const int *d = kft_http_default_suites(); *d; d++)
			if (mbedtls_ssl_ciphersuite_from_id(*d) && n + 1 < cap)
				ids[n++] = *d;
		ids[n] = 0;
		return 0;
	}
	size_t i;
	const json_t *v;
	json_array_foreach(names, i, v)
	{
		const char *name = json_string_value(v);
		size_t k = 0;
		while (k < sizeof(suites) / sizeof(suites[0]) &&
		       !(name && strcmp(suites[k].go, name) == 0))
			k++;
		if (k == sizeof(suites) / sizeof(suites[0]))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "tls.cipherSuites[%zu]: Unsupported value: \"%s\": not a "
			        "cipher suite name of Go's crypto/tls",
			        i, name ? name : "");
		int id = suites[k].id;
		if (id == SUITE_TLS13)
			continue; /* as Go: TLS 1.3 suites are not configurable */
		if (id == SUITE_NONE || !mbedtls_ssl_ciphersuite_from_id(id))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "tls.cipherSuites[%zu]: Unsupported value: \"%s\": the "
			        "metrics server's TLS library (mbedTLS %d.%d) does not "
			        "offer it",
			        i, name, MBEDTLS_VERSION_MAJOR, MBEDTLS_VERSION_MINOR);
		if (n + 1 >= cap)
			return kft_error_set(err, KFT_ELIMIT, "tls.cipherSuites: Too many");
		ids[n++] = id;
	}
	ids[n] = 0;
	if (n == 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "tls.cipherSuites: Invalid value: only TLS 1.3 suites are "
		                     "named, and the metrics server speaks TLS 1.2 at most");
	return 0;
}
