/*
 * tls.c - the metrics server's certificate, as controller-runtime finds or
 * makes it when metrics.secureServing is on.
 *
 * controller-runtime looks for tls.crt and tls.key in
 * $TMPDIR/k8s-metrics-server/serving-certs and, when they are not both
 * there, serves a self-signed certificate for localhost/127.0.0.1 made at
 * start-up; kube-controller-manager does the same. We follow that, with two
 * simplifications: the files are read once (controller-runtime watches them
 * for rotation), and the generated certificate signs itself instead of
 * coming with a throw-away CA. Both are RSA 2048 / SHA-256, valid a year.
 *
 * The TLS versions allowed follow tls.minVersion; otherwise TLS 1.2 and 1.3,
 * the Go server default. They are written as a GnuTLS priority string
 * because libmicrohttpd speaks TLS through GnuTLS.
 */
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kftrainer/controller.h"

#define CERT_FILE_MAX (1 << 20)
#define VALID_DAYS    365

/* The PEM text a BIO holds, NUL-terminated, or NULL. */
static char *bio_text(BIO *b)
{
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (out) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
	}
	return out;
}

static int add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	int ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* Fills x as a self-signed server certificate for localhost. 1 on success. */
static int fill_cert(X509 *x, EVP_PKEY *key)
{
	unsigned char serial[16];
	char cn[64];
	if (RAND_bytes(serial, sizeof(serial)) != 1)
		return 0;
	serial[0] &= 0x7f; /* a positive serial number */
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	snprintf(cn, sizeof(cn), "localhost@%lld", (long long)time(NULL));
	X509_NAME *name = X509_get_subject_name(x);
	return ok && X509_set_version(x, 2) &&
	       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
	                                  -1, 0) &&
	       X509_set_issuer_name(x, name) && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
	       X509_gmtime_adj(X509_getm_notAfter(x), (long)VALID_DAYS * 24 * 3600) &&
	       X509_set_pubkey(x, key) && add_ext(x, NID_basic_constraints, "critical,CA:FALSE") &&
	       add_ext(x, NID_key_usage, "critical,digitalSignature,keyEncipherment") &&
	       add_ext(x, NID_ext_key_usage, "serverAuth") &&
	       add_ext(x, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") &&
	       X509_sign(x, key, EVP_sha256()) > 0;
}

int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err)
{
	*cert_pem = *key_pem = NULL;
	EVP_PKEY *key = EVP_RSA_gen(2048);
	X509 *x = X509_new();
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	int ok = key && x && cb && kb && fill_cert(x, key) && PEM_write_bio_X509(cb, x) &&
	         PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL);
	if (ok) {
		*cert_pem = bio_text(cb);
		*key_pem = bio_text(kb);
		ok = *cert_pem && *key_pem;
	}
	BIO_free(cb);
	BIO_free(kb);
	X509_free(x);
	EVP_PKEY_free(key);
	if (ok)
		return 0;
	free(*cert_pem);
	free(*key_pem);
	*cert_pem = *key_pem = NULL;
	return kft_error_set(err, KFT_ENOMEM,
	                     "failed to generate self-signed certificate for metrics server");
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

/* Whether the two PEM texts are a certificate and its private key. */
static int check_pair(const char *cert_pem, const char *key_pem)
{
	BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
	X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	int ok = x && k && X509_check_private_key(x, k) == 1;
	X509_free(x);
	EVP_PKEY_free(k);
	BIO_free(cb);
	BIO_free(kb);
	return ok;
}

int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err)
{
	char cert_path[4096], key_path[4096], defdir[4000];
	*cert_pem = *key_pem = NULL;
	*generated = 0;
	if (!dir) {
		const char *tmp = getenv("TMPDIR");
		snprintf(defdir, sizeof(defdir), "%s/k8s-metrics-server/serving-certs",
		         tmp && *tmp ? tmp : "/tmp");
		dir = defdir;
	}
	snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
	snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
	int rc = read_small(cert_path, cert_pem, err);
	if (rc == 0)
		rc = read_small(key_path, key_pem, err);
	if (rc == KFT_ENOTFOUND) {
		/* not both there: controller-runtime's fallback */
		free(*cert_pem);
		*cert_pem = NULL;
		*generated = 1;
		return kft_cm_self_signed_cert(cert_pem, key_pem, err);
	}
	if (rc == 0 && !check_pair(*cert_pem, *key_pem))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "%s and %s: not a PEM certificate and its private key",
		                   cert_path, key_path);
	if (rc) {
		free(*cert_pem);
		free(*key_pem);
		*cert_pem = *key_pem = NULL;
	}
	return rc;
}

const char *kft_cm_tls_priorities(const char *min_version)
{
	if (!min_version || !*min_version || strcmp(min_version, "1.2") == 0)
		return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
	if (strcmp(min_version, "1.3") == 0)
		return "NORMAL:-VERS-ALL:+VERS-TLS1.3";
	if (strcmp(min_version, "1.1") == 0)
		return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:+VERS-TLS1.1";
	return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0";
}
