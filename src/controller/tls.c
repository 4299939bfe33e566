/*
 * tls.c - the metrics server's certificate, as controller-runtime finds or
 * makes it when metrics.secureServing is on, done with mbedTLS so the
 * controller needs no other TLS library to serve HTTPS.
 *
 * controller-runtime looks for tls.crt and tls.key in
 * $TMPDIR/k8s-metrics-server/serving-certs and, when they are not both
 * there, serves a self-signed certificate for localhost/127.0.0.1 made at
 * start-up; kube-controller-manager does the same. We follow that, with two
 * simplifications: the files are read once (controller-runtime watches them
 * for rotation), and the generated certificate signs itself instead of
 * coming with a throw-away CA. The generated key is RSA 2048 and the
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
#include "kftrainer/controller.h"
#include "util/cert.h"

#define CERT_FILE_MAX (1 << 20)
#define VALID_DAYS    365

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

/* Reads a whole file of at most CERT_FILE_MAX bytes. KFT_ENOTFOUND when it
 * does not exist. */
static int read_small(const char *path, char **out, kft_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return KFT_ENOTFOUND;
	char *buf = malloc(CERT_FILE_MAX + 1);
	size_t n = buf ? fread(buf, 1, CERT_FILE_MAX + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!buf)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (bad || n > CERT_FILE_MAX) {
		free(buf);
		return kft_error_set(err, bad ? KFT_EIO : KFT_ELIMIT, "%s: %s", path,
		                     bad ? "cannot read it" : "larger than 1 MiB");
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* Whether the two PEM texts are a certificate (chain) and the first
 * certificate's private key, as mbedTLS will load them to serve. */
static int check_pair(const char *cert_pem, const char *key_pem)
{
	mbedtls_x509_crt crt;
	mbedtls_pk_context pk;
	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&pk);
	int ok = mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert_pem,
	                                strlen(cert_pem) + 1) == 0 &&
	         mbedtls_pk_parse_key(&pk, (const unsigned char *)key_pem, strlen(key_pem) + 1,
	                              NULL, 0) == 0 &&
	         mbedtls_pk_check_pair(&crt.pk, &pk) == 0;
	mbedtls_pk_free(&pk);
	mbedtls_x509_crt_free(&crt);
	return ok;
}

int kft_cm_cert_pair_load(const char *dir, char **cert_pem, char **key_pem, kft_error *err)
{
	char cert_path[4096], key_path[4096];
	*cert_pem = *key_pem = NULL;
	snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
	snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
	int rc = read_small(cert_path, cert_pem, err);
	if (rc == 0)
		rc = read_small(key_path, key_pem, err);
	if (rc == KFT_ENOTFOUND)
		kft_error_set(err, rc, "%s and %s: not both there", cert_path, key_path);
	if (rc == 0 && !check_pair(*cert_pem, *key_pem))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "%s and %s: not a PEM certificate and its private key (RSA or "
		                   "ECDSA, unencrypted)",
		                   cert_path, key_path);
	if (rc) {
		free(*cert_pem);
		free(*key_pem);
		*cert_pem = *key_pem = NULL;
	}
	return rc;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int kft_cm_cert_pair_changed(const char *dir, kft_cm_cert_seen *seen)
{
	char crt[4096], key[4096];
	struct stat cs, ks;
	snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	if (stat(crt, &cs) != 0 || stat(key, &ks) != 0)
		return 0;
	if (seen->valid && same_file(&cs, &seen->crt) && same_file(&ks, &seen->key))
		return 0;
	seen->crt = cs;
	seen->key = ks;
	seen->valid = 1;
	return 1;
}

int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err)
{
	char defdir[4000];
	*generated = 0;
	if (!dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(defdir, sizeof(defdir), "%s/k8s-metrics-server/serving-certs",
		         tmp && *tmp ? tmp : "/tmp");
		dir = defdir;
	}
	int rc = kft_cm_cert_pair_load(dir, cert_pem, key_pem, err);
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

/* The default: forward secrecy (ECDHE) and AEAD only, Go's secure TLS 1.2
 * list. RSA key exchange lets whoever gets the key later read every
 * recorded session, and SHA-1 CBC suites are the ones padding-oracle
 * attacks feed on; mbedTLS's own default list has both. */
static const int default_suites[] = {
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
};

int kft_cm_tls_cipher_suites(const json_t *names, int *ids, size_t cap, kft_error *err)
{
	size_t n = 0;
	if (json_array_size(names) == 0) {
		for (size_t i = 0; i < sizeof(default_suites) / sizeof(default_suites[0]); i++)
			if (mbedtls_ssl_ciphersuite_from_id(default_suites[i]) && n + 1 < cap)
				ids[n++] = default_suites[i];
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
