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
 * signature SHA-256, valid a year, as client-go's helper makes them.
 *
 * mbedTLS 2.28 has no helper for subjectAltName or extendedKeyUsage, so both
 * extensions are written here as DER with its ASN.1 writer. The writer
 * fills a buffer from its end backwards, which is why the last element of a
 * sequence is written first.
 *
 * tls.minVersion is checked here too: mbedTLS 2.28 speaks TLS 1.0 to 1.2,
 * so a configuration that allows only TLS 1.3 cannot be served and is
 * refused before the server starts rather than failing every handshake.
 */
#include <mbedtls/asn1write.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/rsa.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kftrainer/controller.h"

#define CERT_FILE_MAX (1 << 20)
#define VALID_DAYS    365
#define RSA_BITS      2048
#define CERT_PEM_MAX  4096
#define KEY_PEM_MAX   4096

typedef struct rng {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
} rng;

static int rng_open(rng *r)
{
	static const char personal[] = "kftrainer metrics certificate";
	mbedtls_entropy_init(&r->entropy);
	mbedtls_ctr_drbg_init(&r->drbg);
	return mbedtls_ctr_drbg_seed(&r->drbg, mbedtls_entropy_func, &r->entropy,
	                             (const unsigned char *)personal, sizeof(personal) - 1);
}

static void rng_close(rng *r)
{
	mbedtls_ctr_drbg_free(&r->drbg);
	mbedtls_entropy_free(&r->entropy);
}

/* Puts a tag and length in front of the len bytes just written before *p
 * (DER is written backwards): the element's whole length, or a negative
 * mbedTLS error. */
static int wrap(unsigned char **p, unsigned char *buf, size_t len, unsigned char tag)
{
	int r = mbedtls_asn1_write_len(p, buf, len);
	if (r < 0)
		return r;
	len += (size_t)r;
	if ((r = mbedtls_asn1_write_tag(p, buf, tag)) < 0)
		return r;
	return (int)(len + (size_t)r);
}

#define SEQUENCE (MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)

/* GeneralNames { dNSName "localhost", iPAddress 127.0.0.1 } into the end of
 * buf; *der points at it. Returns its length or a negative mbedTLS error. */
static int san_der(unsigned char *buf, size_t size, unsigned char **der)
{
	static const unsigned char ip[4] = {127, 0, 0, 1};
	static const char dns[] = "localhost";
	unsigned char *p = buf + size;
	int ipl = mbedtls_asn1_write_raw_buffer(&p, buf, ip, sizeof(ip));
	if (ipl < 0 || (ipl = wrap(&p, buf, (size_t)ipl, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7)) < 0)
		return ipl;
	int dnl =
	        mbedtls_asn1_write_raw_buffer(&p, buf, (const unsigned char *)dns, sizeof(dns) - 1);
	if (dnl < 0 || (dnl = wrap(&p, buf, (size_t)dnl, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2)) < 0)
		return dnl;
	int all = wrap(&p, buf, (size_t)ipl + (size_t)dnl, SEQUENCE);
	if (all >= 0)
		*der = p;
	return all;
}

/* ExtKeyUsageSyntax { id-kp-serverAuth }, as san_der. */
static int eku_der(unsigned char *buf, size_t size, unsigned char **der)
{
	unsigned char *p = buf + size;
	int r = mbedtls_asn1_write_oid(&p, buf, MBEDTLS_OID_SERVER_AUTH,
	                               MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH));
	if (r >= 0)
		r = wrap(&p, buf, (size_t)r, SEQUENCE);
	if (r >= 0)
		*der = p;
	return r;
}

static int add_der_ext(mbedtls_x509write_cert *c, const char *oid, size_t oid_len, int critical,
                       int (*build)(unsigned char *, size_t, unsigned char **))
{
	unsigned char buf[64], *der = NULL;
	int len = build(buf, sizeof(buf), &der);
	if (len < 0)
		return len;
	return mbedtls_x509write_crt_set_extension(c, oid, oid_len, critical, der, (size_t)len);
}

/* "YYYYMMDDhhmmss" in UTC, `offset` seconds from now. */
static void stamp(char out[16], long long offset)
{
	time_t t = time(NULL) + (time_t)offset;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 16, "%Y%m%d%H%M%S", &tm);
}

/* Serial number, names and validity. 0 or a negative mbedTLS error. */
static int cert_identity(mbedtls_x509write_cert *c, rng *r, mbedtls_mpi *serial)
{
	unsigned char bytes[16];
	char cn[64], from[16], until[16];
	int rc = mbedtls_ctr_drbg_random(&r->drbg, bytes, sizeof(bytes));
	if (rc)
		return rc;
	bytes[0] &= 0x7f; /* DER integers are signed: keep the serial positive */
	bytes[0] |= 0x01; /* and 16 bytes long */
	snprintf(cn, sizeof(cn), "CN=localhost@%lld", (long long)time(NULL));
	stamp(from, -3600);
	stamp(until, (long long)VALID_DAYS * 24 * 3600);
	if ((rc = mbedtls_mpi_read_binary(serial, bytes, sizeof(bytes))) ||
	    (rc = mbedtls_x509write_crt_set_serial(c, serial)) ||
	    (rc = mbedtls_x509write_crt_set_subject_name(c, cn)) ||
	    (rc = mbedtls_x509write_crt_set_issuer_name(c, cn)))
		return rc;
	return mbedtls_x509write_crt_set_validity(c, from, until);
}

/* The extensions of a server certificate for localhost. */
static int cert_extensions(mbedtls_x509write_cert *c)
{
	int rc;
	if ((rc = mbedtls_x509write_crt_set_basic_constraints(c, 0, -1)) ||
	    (rc = mbedtls_x509write_crt_set_key_usage(
	             c, MBEDTLS_X509_KU_DIGITAL_SIGNATURE | MBEDTLS_X509_KU_KEY_ENCIPHERMENT)) ||
	    (rc = mbedtls_x509write_crt_set_subject_key_identifier(c)) ||
	    (rc = add_der_ext(c, MBEDTLS_OID_EXTENDED_KEY_USAGE,
	                      MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE), 0, eku_der)))
		return rc;
	return add_der_ext(c, MBEDTLS_OID_SUBJECT_ALT_NAME,
	                   MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, san_der);
}

/* The self-signed certificate of `key` as PEM in out (CERT_PEM_MAX). */
static int write_cert(mbedtls_pk_context *key, rng *r, unsigned char *out)
{
	mbedtls_x509write_cert c;
	mbedtls_mpi serial;
	mbedtls_x509write_crt_init(&c);
	mbedtls_mpi_init(&serial);
	mbedtls_x509write_crt_set_version(&c, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&c, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&c, key);
	mbedtls_x509write_crt_set_issuer_key(&c, key);
	int rc = cert_identity(&c, r, &serial);
	if (!rc)
		rc = cert_extensions(&c);
	if (!rc)
		rc = mbedtls_x509write_crt_pem(&c, out, CERT_PEM_MAX, mbedtls_ctr_drbg_random,
		                               &r->drbg);
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&c);
	return rc;
}

/* A fresh RSA key and its certificate, both PEM, into the two buffers. */
static int make_pair(rng *r, unsigned char *cert, unsigned char *key)
{
	mbedtls_pk_context pk;
	mbedtls_pk_init(&pk);
	int rc = mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA));
	if (!rc)
		rc = mbedtls_rsa_gen_key(mbedtls_pk_rsa(pk), mbedtls_ctr_drbg_random, &r->drbg,
		                         RSA_BITS, 65537);
	if (!rc)
		rc = write_cert(&pk, r, cert);
	if (!rc)
		rc = mbedtls_pk_write_key_pem(&pk, key, KEY_PEM_MAX);
	mbedtls_pk_free(&pk);
	return rc;
}

int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err)
{
	*cert_pem = *key_pem = NULL;
	rng *r = malloc(sizeof(*r));
	unsigned char *cert = calloc(1, CERT_PEM_MAX), *key = calloc(1, KEY_PEM_MAX);
	int rc = 0, nomem = !r || !cert || !key;
	if (!nomem) {
		rc = rng_open(r);
		if (!rc)
			rc = make_pair(r, cert, key);
		rng_close(r);
	}
	if (!nomem && !rc) {
		*cert_pem = strdup((char *)cert);
		*key_pem = strdup((char *)key);
		nomem = !*cert_pem || !*key_pem;
	}
	if (key)
		mbedtls_platform_zeroize(key, KEY_PEM_MAX);
	free(r);
	free(cert);
	free(key);
	if (!nomem && !rc)
		return 0;
	free(*cert_pem);
	free(*key_pem);
	*cert_pem = *key_pem = NULL;
	if (nomem)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return kft_error_set(err, KFT_EIO,
	                     "failed to generate self-signed certificate for metrics server "
	                     "(mbedTLS error -0x%04x)",
	                     (unsigned)-rc);
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
