/*
 * tls.c - TLS for the server core, through mbedTLS's server API: one
 * configuration per certificate, shared by reference among the connections
 * that began under it, replaced whole on rotation; and the one routine that
 * reloads a certificate directory (tls.crt, tls.key) when its files change,
 * which every TLS server with such a directory uses (the controller's
 * webhooks, status server and metrics).
 *
 * Every server offers TLS 1.2 at most (mbedTLS 2.28 has no 1.3) and, unless
 * told otherwise, ECDHE key exchange with AEAD ciphers only, so every
 * session is forward secret. Random bytes come from getrandom(2).
 */
#include <mbedtls/error.h>
#include <mbedtls/ssl_ciphersuites.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/server_internal.h"
#include "util/random.h"
#include "util/secret.h"

#define CERT_FILE_MAX (1 << 20)
#define CHECK_MS      1000

/* Go's secure TLS 1.2 list. RSA key exchange lets whoever gets the key
 * later read every recorded session, and SHA-1 CBC suites are the ones
 * padding-oracle attacks feed on; mbedTLS's own default list has both. The
 * suites of the other key type are skipped in a handshake. */
static const int default_suites[] = {
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        0,
};

const int *kft_http_default_suites(void)
{
	return default_suites;
}

static void ctx_free(kft_http_tls_ctx *t)
{
	if (!t)
		return;
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_x509_crt_free(&t->crt);
	mbedtls_pk_free(&t->key);
	free(t);
}

static int tls_fail(int rc, const char *name, const char *what, kft_error *err)
{
	char text[160];
	mbedtls_strerror(rc, text, sizeof(text));
	return kft_error_set(err, KFT_EIO, "%s server TLS: %s: %s", name, what, text);
}

void kft_http_tls_settings(const kft_http_tls *tls, int *min_minor, int suites[KFT_HTTP_SUITES_MAX])
{
	*min_minor = tls->min_minor < 0 ? 0 : tls->min_minor > 2 ? 2 : tls->min_minor;
	const int *from = tls->suites ? tls->suites : default_suites;
	size_t n = 0;
	memset(suites, 0, KFT_HTTP_SUITES_MAX * sizeof(*suites)); /* compared whole */
	while (from[n] && n + 1 < KFT_HTTP_SUITES_MAX) {
		suites[n] = from[n];
		n++;
	}
}

static int ctx_load(kft_http_tls_ctx *t, const char *name, const char *cert_pem,
                    const char *key_pem, bool check_pair, kft_error *err)
{
	int rc = MBEDTLS_ERR_X509_INVALID_FORMAT;
	if (!cert_pem || (rc = mbedtls_x509_crt_parse(&t->crt, (const unsigned char *)cert_pem,
	                                              strlen(cert_pem) + 1)) != 0)
		return tls_fail(rc, name, "cannot load the certificate", err);
	rc = MBEDTLS_ERR_PK_KEY_INVALID_FORMAT;
	if (!key_pem || (rc = mbedtls_pk_parse_key(&t->key, (const unsigned char *)key_pem,
	                                           strlen(key_pem) + 1, NULL, 0)) != 0)
		return tls_fail(rc, name, "cannot load the private key", err);
	if (check_pair && (rc = mbedtls_pk_check_pair(&t->crt.pk, &t->key)) != 0)
		return tls_fail(rc, name, "the private key is not the certificate's", err);
	if ((rc = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_SERVER,
	                                      MBEDTLS_SSL_TRANSPORT_STREAM,
	                                      MBEDTLS_SSL_PRESET_DEFAULT)) != 0 ||
	    (rc = mbedtls_ssl_conf_own_cert(&t->conf, &t->crt, &t->key)) != 0)
		return tls_fail(rc, name, "configuration", err);
	mbedtls_ssl_conf_ciphersuites(&t->conf, t->suites);
	mbedtls_ssl_conf_rng(&t->conf, kft_random_bytes, NULL);
	mbedtls_ssl_conf_renegotiation(&t->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	mbedtls_ssl_conf_min_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3, t->min_minor + 1);
	mbedtls_ssl_conf_max_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	                             MBEDTLS_SSL_MINOR_VERSION_3);
	return 0;
}

/* A context for the pair under the settings min_minor and suites (as
 * kft_http_tls_settings gives them). */
static int ctx_new(const char *name, int min_minor, const int *suites, const char *cert_pem,
                   const char *key_pem, bool check_pair, kft_http_tls_ctx **out, kft_error *err)
{
	*out = NULL;
	kft_http_tls_ctx *t = calloc(1, sizeof(*t));
	if (!t)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_x509_crt_init(&t->crt);
	mbedtls_pk_init(&t->key);
	t->min_minor = min_minor;
	memcpy(t->suites, suites, sizeof(t->suites));
	int rc = ctx_load(t, name, cert_pem, key_pem, check_pair, err);
	if (rc) {
		ctx_free(t);
		return rc;
	}
	kft_sha256(cert_pem, strlen(cert_pem), t->crt_digest);
	kft_sha256(key_pem, strlen(key_pem), t->key_digest);
	t->refs = 1;
	*out = t;
	return 0;
}

int kft_http_tls_ctx_new(const kft_httpd *s, const char *cert_pem, const char *key_pem,
                         bool check_pair, kft_http_tls_ctx **out, kft_error *err)
{
	return ctx_new(s->name, s->tls_min_minor, s->tls_suites, cert_pem, key_pem, check_pair, out,
	               err);
}

int kft_http_tls_prepare(const char *name, const kft_http_tls *tls, kft_http_tls_ctx **out,
                         kft_error *err)
{
	int min_minor, suites[KFT_HTTP_SUITES_MAX];
	kft_http_tls_settings(tls, &min_minor, suites);
	return ctx_new(name ? name : "http", min_minor, suites, tls->cert_pem, tls->key_pem,
	               !tls->made_together, out, err);
}

void kft_http_tls_free(kft_http_tls_ctx *t)
{
	ctx_free(t);
}

kft_http_tls_ctx *kft_http_tls_get(kft_httpd *s)
{
	pthread_mutex_lock(&s->tls_mu);
	kft_http_tls_ctx *t = s->tls;
	if (t)
		t->refs++;
	pthread_mutex_unlock(&s->tls_mu);
	return t;
}

void kft_http_tls_put(kft_httpd *s, kft_http_tls_ctx *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&s->tls_mu);
	bool last = --t->refs == 0;
	pthread_mutex_unlock(&s->tls_mu);
	if (last)
		ctx_free(t);
}

int kft_httpd_set_tls(kft_httpd *h, const kft_http_tls *tls, kft_error *err)
{
	if (!h->tls_on)
		return kft_error_set(err, KFT_EINVAL, "%s server: not a TLS server", h->name);
	kft_http_tls_ctx *t = tls->prepared;
	if (t && (t->min_minor != h->tls_min_minor ||
	          memcmp(t->suites, h->tls_suites, sizeof(t->suites)) != 0)) {
		ctx_free(t);
		return kft_error_set(err, KFT_EINVAL,
		                     "%s server: the prepared certificate has other TLS settings",
		                     h->name);
	}
	int rc = t ? 0
	           : kft_http_tls_ctx_new(h, tls->cert_pem, tls->key_pem, !tls->made_together, &t,
	                                  err);
	if (rc)
		return rc;
	pthread_mutex_lock(&h->tls_mu);
	kft_http_tls_ctx *old = h->tls;
	h->tls = t;
	pthread_mutex_unlock(&h->tls_mu);
	kft_http_tls_put(h, old);
	return 0;
}

bool kft_httpd_has_cert(kft_httpd *h)
{
	kft_http_tls_ctx *t = kft_http_tls_get(h);
	kft_http_tls_put(h, t);
	return t != NULL;
}

/* ---- certificate files -------------------------------------------------------------- */

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
		kft_secret_wipe(buf, n > CERT_FILE_MAX ? CERT_FILE_MAX : n);
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

/* kft_http_cert_pair_load, checking the pair only when check_if is NULL or
 * the texts are not the pair check_if was made from; *same then says they
 * were (nothing checked). */
static int load_pair(const char *dir, const kft_http_tls_ctx *check_if, char **cert_pem,
                     char **key_pem, bool *same, kft_error *err)
{
	char cert_path[4096], key_path[4096];
	*cert_pem = *key_pem = NULL;
	*same = false;
	snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
	snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
	int rc = read_small(cert_path, cert_pem, err);
	if (rc == 0)
		rc = read_small(key_path, key_pem, err);
	if (rc == KFT_ENOTFOUND)
		kft_error_set(err, rc, "%s and %s: not both there", cert_path, key_path);
	if (rc == 0 && check_if) {
		unsigned char c[KFT_SHA256_LEN], k[KFT_SHA256_LEN];
		kft_sha256(*cert_pem, strlen(*cert_pem), c);
		kft_sha256(*key_pem, strlen(*key_pem), k);
		*same = memcmp(c, check_if->crt_digest, sizeof(c)) == 0 &&
		        memcmp(k, check_if->key_digest, sizeof(k)) == 0;
	}
	if (rc == 0 && !*same && !check_pair(*cert_pem, *key_pem))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "%s and %s: not a PEM certificate and its private key (RSA or "
		                   "ECDSA, unencrypted)",
		                   cert_path, key_path);
	if (rc) {
		free(*cert_pem);
		kft_secret_free(*key_pem);
		*cert_pem = *key_pem = NULL;
	}
	return rc;
}

int kft_http_cert_pair_load(const char *dir, char **cert_pem, char **key_pem, kft_error *err)
{
	bool same;
	return load_pair(dir, NULL, cert_pem, key_pem, &same, err);
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int kft_http_cert_pair_changed(const char *dir, kft_http_cert_seen *seen)
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

/* Loads the directory's pair into the server unless it is the pair being
 * served (*same). 0, or an error (the old certificate stays). */
static int reload_dir(kft_httpd *s, bool *same, kft_error *err)
{
	char *crt = NULL, *key = NULL;
	kft_http_tls_ctx *cur = kft_http_tls_get(s);
	int rc = load_pair(s->cert_dir, cur, &crt, &key, same, err);
	kft_http_tls_put(s, cur);
	if (rc == 0 && !*same) {
		kft_http_tls t = {.cert_pem = crt, .key_pem = key};
		rc = kft_httpd_set_tls(s, &t, err);
	}
	free(crt);
	kft_secret_free(key);
	return rc;
}

void kft_http_tls_check_dir(kft_httpd *s, long long now)
{
	if (!s->cert_dir || now < s->next_cert_check)
		return;
	s->next_cert_check = now + CHECK_MS;
	if (!kft_http_cert_pair_changed(s->cert_dir, &s->seen))
		return;
	kft_error err = {0};
	bool same = false;
	int rc = reload_dir(s, &same, &err);
	if (!same && s->handlers.cert_reloaded)
		s->handlers.cert_reloaded(s->handlers.ctx, rc, &err);
}
