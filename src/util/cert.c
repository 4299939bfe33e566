/*
 * cert.c - key and certificate generation with mbedTLS. See cert.h.
 *
 * mbedTLS 2.28 has no helper for subjectAltName or extendedKeyUsage, so both
 * extensions are written here as DER with its ASN.1 writer. The writer
 * fills a buffer from its end backwards, which is why the last element of a
 * sequence is written first.
 */
#include "util/cert.h"

#include <mbedtls/asn1write.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/rsa.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/random.h"
#include "util/secret.h"

#define RSA_BITS     2048
#define CERT_PEM_MAX 4096
#define KEY_PEM_MAX  4096

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

/* GeneralNames into the end of buf, *der pointing at it: { dNSName
 * "localhost", iPAddress 127.0.0.1 } by default; { dNSName dns } when dns is
 * set, with iPAddress 127.0.0.1 too when loopback. Returns its length or a
 * negative mbedTLS error. */
static int san_der(unsigned char *buf, size_t size, unsigned char **der, const char *dns,
                   bool loopback)
{
	static const unsigned char ip[4] = {127, 0, 0, 1};
	unsigned char *p = buf + size;
	int ipl = 0;
	if (!dns || loopback) {
		ipl = mbedtls_asn1_write_raw_buffer(&p, buf, ip, sizeof(ip));
		if (ipl < 0 ||
		    (ipl = wrap(&p, buf, (size_t)ipl, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7)) < 0)
			return ipl;
	}
	if (!dns)
		dns = "localhost";
	int dnl = mbedtls_asn1_write_raw_buffer(&p, buf, (const unsigned char *)dns, strlen(dns));
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

static int add_der(mbedtls_x509write_cert *c, const char *oid, size_t oid_len, int critical,
                   const unsigned char *der, int len)
{
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
static int cert_identity(mbedtls_x509write_cert *c, const kft_cert_opts *o, const char *issuer,
                         mbedtls_mpi *serial)
{
	unsigned char bytes[16];
	char from[16], until[16];
	int rc = kft_random_bytes(NULL, bytes, sizeof(bytes));
	if (rc)
		return MBEDTLS_ERR_X509_ALLOC_FAILED; /* nothing better to say: no randomness */
	bytes[0] &= 0x7f; /* DER integers are signed: keep the serial positive */
	bytes[0] |= 0x01; /* and 16 bytes long */
	stamp(from, -3600);
	stamp(until,
	      o->valid_seconds > 0 ? o->valid_seconds : (long long)o->valid_days * 24 * 3600);
	if ((rc = mbedtls_mpi_read_binary(serial, bytes, sizeof(bytes))) ||
	    (rc = mbedtls_x509write_crt_set_serial(c, serial)) ||
	    (rc = mbedtls_x509write_crt_set_subject_name(c, o->subject)) ||
	    (rc = mbedtls_x509write_crt_set_issuer_name(c, issuer)))
		return rc;
	return mbedtls_x509write_crt_set_validity(c, from, until);
}

static int ca_extensions(mbedtls_x509write_cert *c)
{
	int rc;
	if ((rc = mbedtls_x509write_crt_set_basic_constraints(c, 1, 0)) ||
	    (rc = mbedtls_x509write_crt_set_key_usage(
	             c, MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN |
	                        MBEDTLS_X509_KU_DIGITAL_SIGNATURE)))
		return rc;
	return mbedtls_x509write_crt_set_subject_key_identifier(c);
}

/* The extensions of a server certificate. */
static int server_extensions(mbedtls_x509write_cert *c, const kft_cert_opts *o)
{
	bool signed_by_ca = o->issuer != NULL;
	unsigned char eku[64], san[600], *eku_at = NULL, *san_at = NULL;
	int ekul = eku_der(eku, sizeof(eku), &eku_at);
	int sanl = o->dns_name && strlen(o->dns_name) > 253
	                   ? MBEDTLS_ERR_X509_BAD_INPUT_DATA
	                   : san_der(san, sizeof(san), &san_at, o->dns_name, o->loopback_too);
	int rc;
	if ((rc = mbedtls_x509write_crt_set_basic_constraints(c, 0, -1)) ||
	    (rc = mbedtls_x509write_crt_set_key_usage(
	             c, MBEDTLS_X509_KU_DIGITAL_SIGNATURE | MBEDTLS_X509_KU_KEY_ENCIPHERMENT)) ||
	    (rc = mbedtls_x509write_crt_set_subject_key_identifier(c)) ||
	    (signed_by_ca && (rc = mbedtls_x509write_crt_set_authority_key_identifier(c))) ||
	    (rc = add_der(c, MBEDTLS_OID_EXTENDED_KEY_USAGE,
	                  MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE), 0, eku_at, ekul)))
		return rc;
	return add_der(c, MBEDTLS_OID_SUBJECT_ALT_NAME,
	               MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, san_at, sanl);
}

/* The certificate of `key`, signed by signer (named issuer), as PEM in out.
 * sign_with, when set, is signer's key in an ECDSA context that signs in its
 * place (the key identifiers are taken from signer: mbedTLS writes no public
 * key from an ECDSA context). */
static int write_cert(const kft_cert_opts *o, mbedtls_pk_context *key, mbedtls_pk_context *signer,
                      mbedtls_pk_context *sign_with, const char *issuer, unsigned char *out)
{
	mbedtls_x509write_cert c;
	mbedtls_mpi serial;
	mbedtls_x509write_crt_init(&c);
	mbedtls_mpi_init(&serial);
	mbedtls_x509write_crt_set_version(&c, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&c, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&c, key);
	mbedtls_x509write_crt_set_issuer_key(&c, signer);
	int rc = cert_identity(&c, o, issuer, &serial);
	if (!rc)
		rc = o->is_ca ? ca_extensions(&c) : server_extensions(&c, o);
	if (sign_with)
		mbedtls_x509write_crt_set_issuer_key(&c, sign_with);
	if (!rc)
		rc = mbedtls_x509write_crt_pem(&c, out, CERT_PEM_MAX, kft_random_bytes, NULL);
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&c);
	return rc;
}

static int gen_key(mbedtls_pk_context *pk, kft_cert_key_type type)
{
	if (type == KFT_CERT_EC_P256) {
		int rc = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
		return rc ? rc
		          : mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*pk),
		                                kft_random_bytes, NULL);
	}
	int rc = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA));
	return rc ? rc
	          : mbedtls_rsa_gen_key(mbedtls_pk_rsa(*pk), kft_random_bytes, NULL, RSA_BITS,
	                                65537);
}

/* The issuer's key and subject name, loaded from its PEM. */
static int load_issuer(const kft_cert *issuer, mbedtls_pk_context *pk, char *name, size_t size)
{
	mbedtls_x509_crt crt;
	mbedtls_x509_crt_init(&crt);
	int rc = mbedtls_x509_crt_parse(&crt, (const unsigned char *)issuer->cert_pem,
	                                strlen(issuer->cert_pem) + 1);
	if (!rc && mbedtls_x509_dn_gets(name, size, &crt.subject) < 0)
		rc = MBEDTLS_ERR_X509_INVALID_NAME;
	if (!rc)
		rc = mbedtls_pk_parse_key(pk, (const unsigned char *)issuer->key_pem,
		                          strlen(issuer->key_pem) + 1, NULL, 0);
	mbedtls_x509_crt_free(&crt);
	return rc;
}

static int make(const kft_cert_opts *o, unsigned char *cert, unsigned char *key, bool *bad_issuer)
{
	mbedtls_pk_context pk, ipk;
	char iname[512];
	mbedtls_pk_init(&pk);
	mbedtls_pk_init(&ipk);
	int rc = 0;
	if (o->issuer && (rc = load_issuer(o->issuer, &ipk, iname, sizeof(iname))) != 0)
		*bad_issuer = true;
	if (!rc)
		rc = gen_key(&pk, o->key_type);
	if (!rc)
		rc = write_cert(o, &pk, o->issuer ? &ipk : &pk, NULL,
		                o->issuer ? iname : o->subject, cert);
	if (!rc)
		rc = mbedtls_pk_write_key_pem(&pk, key, KEY_PEM_MAX);
	mbedtls_pk_free(&pk);
	mbedtls_pk_free(&ipk);
	return rc;
}

/* ---- a CA and the certificate it signs, on one curve table ------------------------------- */

/* The key pair of sign (an ECDSA context) copied into pk as an EC key, which
 * mbedTLS can write out. */
static int ec_key_of(const mbedtls_ecdsa_context *sign, mbedtls_pk_context *pk)
{
	int rc = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	mbedtls_ecp_keypair *k = mbedtls_pk_ec(*pk);
	if (!rc)
		rc = mbedtls_ecp_group_load(&k->grp, sign->grp.id);
	if (!rc)
		rc = mbedtls_mpi_copy(&k->d, &sign->d);
	return rc ? rc : mbedtls_ecp_copy(&k->Q, &sign->Q);
}

/* A new P-256 key drawn on grp (whose table it reuses) into pk. */
static int ec_key_on(mbedtls_ecp_group *grp, mbedtls_pk_context *pk)
{
	int rc = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	mbedtls_ecp_keypair *k = mbedtls_pk_ec(*pk);
	if (!rc)
		rc = mbedtls_ecp_group_load(&k->grp, grp->id);
	return rc ? rc : mbedtls_ecp_gen_keypair(grp, &k->d, &k->Q, kft_random_bytes, NULL);
}

static int make_chain(const kft_cert_opts *ca, const kft_cert_opts *leaf, unsigned char *pem[4])
{
	mbedtls_pk_context sign, ca_pk, leaf_pk;
	mbedtls_pk_init(&sign);
	mbedtls_pk_init(&ca_pk);
	mbedtls_pk_init(&leaf_pk);
	int rc = mbedtls_pk_setup(&sign, mbedtls_pk_info_from_type(MBEDTLS_PK_ECDSA));
	mbedtls_ecdsa_context *ctx = mbedtls_pk_ec(sign);
	if (!rc)
		rc = mbedtls_ecdsa_genkey(ctx, MBEDTLS_ECP_DP_SECP256R1, kft_random_bytes, NULL);
	if (!rc)
		rc = ec_key_of(ctx, &ca_pk);
	if (!rc)
		rc = write_cert(ca, &ca_pk, &ca_pk, &sign, ca->subject, pem[0]);
	if (!rc)
		rc = mbedtls_pk_write_key_pem(&ca_pk, pem[1], KEY_PEM_MAX);
	if (!rc)
		rc = ec_key_on(&ctx->grp, &leaf_pk);
	if (!rc)
		rc = write_cert(leaf, &leaf_pk, &ca_pk, &sign, ca->subject, pem[2]);
	if (!rc)
		rc = mbedtls_pk_write_key_pem(&leaf_pk, pem[3], KEY_PEM_MAX);
	mbedtls_pk_free(&sign);
	mbedtls_pk_free(&ca_pk);
	mbedtls_pk_free(&leaf_pk);
	return rc;
}

/* PEM buffers, one per output, allocated zeroed; false when memory ran out
 * (those made are freed again). */
static bool pems_new(unsigned char **pem, const size_t *size, int n)
{
	bool ok = true;
	for (int i = 0; i < n; i++)
		ok &= (pem[i] = calloc(1, size[i])) != NULL;
	for (int i = 0; !ok && i < n; i++) {
		free(pem[i]);
		pem[i] = NULL;
	}
	return ok;
}

/* With keep, copies each buffer into *dst[i]; then wipes (keys are among
 * them) and frees every buffer. False when a copy ran out of memory. */
static bool pems_done(unsigned char **pem, const size_t *size, char **const *dst, int n, bool keep)
{
	bool ok = true;
	for (int i = 0; i < n; i++) {
		if (keep)
			ok &= (*dst[i] = strdup((char *)pem[i])) != NULL;
		kft_secret_wipe(pem[i], size[i]);
		free(pem[i]);
	}
	return ok;
}

int kft_cert_make_chain(const kft_cert_opts *ca, const kft_cert_opts *leaf, const char *what,
                        kft_cert *ca_out, kft_cert *leaf_out, kft_error *err)
{
	size_t size[4] = {CERT_PEM_MAX, KEY_PEM_MAX, CERT_PEM_MAX, KEY_PEM_MAX};
	unsigned char *pem[4];
	char **dst[4] = {&ca_out->cert_pem, &ca_out->key_pem, &leaf_out->cert_pem,
	                 &leaf_out->key_pem};
	*ca_out = *leaf_out = (kft_cert){0};
	bool mem = pems_new(pem, size, 4);
	int rc = mem ? make_chain(ca, leaf, pem) : 0;
	mem = mem && pems_done(pem, size, dst, 4, rc == 0);
	if (mem && !rc)
		return 0;
	kft_cert_free(ca_out);
	kft_cert_free(leaf_out);
	if (!mem)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return kft_error_set(err, KFT_EIO, "%s (mbedTLS error -0x%04x)", what, (unsigned)-rc);
}

int kft_cert_make(const kft_cert_opts *o, const char *what, kft_cert *out, kft_error *err)
{
	size_t size[2] = {CERT_PEM_MAX, KEY_PEM_MAX};
	unsigned char *pem[2];
	char **dst[2] = {&out->cert_pem, &out->key_pem};
	bool bad_issuer = false;
	*out = (kft_cert){0};
	bool mem = pems_new(pem, size, 2);
	int rc = mem ? make(o, pem[0], pem[1], &bad_issuer) : 0;
	mem = mem && pems_done(pem, size, dst, 2, rc == 0);
	if (mem && !rc)
		return 0;
	kft_cert_free(out);
	if (!mem)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return kft_error_set(err, bad_issuer ? KFT_EINVAL : KFT_EIO, "%s (mbedTLS error -0x%04x)",
	                     what, (unsigned)-rc);
}

void kft_cert_free(kft_cert *c)
{
	if (c->key_pem) {
		kft_secret_wipe(c->key_pem, strlen(c->key_pem));
		free(c->key_pem);
	}
	free(c->cert_pem);
	c->cert_pem = c->key_pem = NULL;
}

/* ---- whether a kept chain or pair still holds ---------------------------------------- */

/* An X.509 time as seconds since the epoch (UTC). */
static long long x509_epoch(const mbedtls_x509_time *t)
{
	struct tm tm = {.tm_year = t->year - 1900,
	                .tm_mon = t->mon - 1,
	                .tm_mday = t->day,
	                .tm_hour = t->hour,
	                .tm_min = t->min,
	                .tm_sec = t->sec};
	return (long long)timegm(&tm);
}

/* The DER of pk's public key, which mbedTLS writes at the end of buf: its
 * start, length in *len; NULL when it cannot be written. */
static const unsigned char *public_der(mbedtls_pk_context *pk, unsigned char *buf, size_t size,
                                       size_t *len)
{
	int n = mbedtls_pk_write_pubkey_der(pk, buf, size);
	if (n <= 0)
		return NULL;
	*len = (size_t)n;
	return buf + size - (size_t)n;
}

static bool parse_crt(mbedtls_x509_crt *crt, const char *pem)
{
	return pem && mbedtls_x509_crt_parse(crt, (const unsigned char *)pem, strlen(pem) + 1) == 0;
}

static bool parse_key(mbedtls_pk_context *pk, const char *pem)
{
	return pem &&
	       mbedtls_pk_parse_key(pk, (const unsigned char *)pem, strlen(pem) + 1, NULL, 0) == 0;
}

bool kft_cert_chain_holds(const char *ca_pem, const char *leaf_pem, const char *key_pem,
                          long long seconds)
{
	mbedtls_x509_crt ca, leaf;
	mbedtls_pk_context key;
	unsigned char a[256], b[256];
	const unsigned char *da = NULL, *db = NULL;
	size_t la = 0, lb = 0;
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&leaf);
	mbedtls_pk_init(&key);
	long long until = (long long)time(NULL) + seconds;
	bool ok = parse_crt(&ca, ca_pem) && !ca.next && parse_crt(&leaf, leaf_pem) && !leaf.next &&
	          parse_key(&key, key_pem);
	ok = ok && ca.ca_istrue && !leaf.ca_istrue && ca.subject_raw.len == leaf.issuer_raw.len &&
	     memcmp(ca.subject_raw.p, leaf.issuer_raw.p, ca.subject_raw.len) == 0 &&
	     x509_epoch(&ca.valid_to) >= until && x509_epoch(&leaf.valid_to) >= until;
	ok = ok && (da = public_der(&leaf.pk, a, sizeof(a), &la)) != NULL &&
	     (db = public_der(&key, b, sizeof(b), &lb)) != NULL && la == lb &&
	     memcmp(da, db, la) == 0;
	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&leaf);
	mbedtls_pk_free(&key);
	return ok;
}

bool kft_cert_pair_valid(const char *ca_pem, const char *cert_pem, const char *key_pem,
                         const char *name, time_t now, time_t until)
{
	mbedtls_x509_crt ca, crt;
	mbedtls_pk_context pk;
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&pk);
	uint32_t flags = 0;
	bool ok = parse_crt(&ca, ca_pem) && parse_crt(&crt, cert_pem) && parse_key(&pk, key_pem) &&
	          mbedtls_pk_check_pair(&crt.pk, &pk) == 0;
	if (ok) {
		mbedtls_x509_crt_verify(&crt, &ca, NULL, name, &flags, NULL, NULL);
		/* the dates are judged below, against `until` */
		flags &= ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE |
		                     MBEDTLS_X509_BADCRL_EXPIRED | MBEDTLS_X509_BADCRL_FUTURE);
		ok = flags == 0 && x509_epoch(&crt.valid_from) <= (long long)now &&
		     x509_epoch(&crt.valid_to) > (long long)until;
	}
	mbedtls_pk_free(&pk);
	mbedtls_x509_crt_free(&crt);
	mbedtls_x509_crt_free(&ca);
	return ok;
}
