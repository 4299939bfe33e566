/*
 * cert.h - X.509 certificates, made with mbedTLS (internal): the
 * controller's self-signed metrics certificate (src/controller/tls.c), its
 * webhook CA and serving certificate (src/controller/certs.c), and the local
 * status servers' CA and certificate, kept per state directory
 * (src/local/statusserver.c), come from here.
 *
 * A certificate is either a CA (basicConstraints CA:TRUE, keyCertSign) or a
 * server certificate for "localhost" and 127.0.0.1, or for one DNS name
 * (subjectAltName, extendedKeyUsage serverAuth), self-signed or signed by a
 * CA made here.
 * Keys come from the kernel's CSPRNG (util/random.h). Private keys are
 * secrets: kft_cert_free wipes them.
 */
#ifndef KFT_UTIL_CERT_H
#define KFT_UTIL_CERT_H

#include <stdbool.h>
#include <time.h>

#include "kftrainer/error.h"

typedef enum kft_cert_key_type {
	KFT_CERT_RSA2048, /* what client-go's self-signed helper makes */
	KFT_CERT_EC_P256, /* fast to make: a CA and its certificate cost 1.6 ms */
} kft_cert_key_type;

/* PEM strings owned by the struct; free with kft_cert_free. */
typedef struct kft_cert {
	char *cert_pem;
	char *key_pem;
} kft_cert;

typedef struct kft_cert_opts {
	kft_cert_key_type key_type;
	bool is_ca;             /* a CA certificate instead of a localhost server one */
	const kft_cert *issuer; /* NULL: self-signed */
	const char *subject;    /* an X.509 name, "CN=..." */
	int valid_days;         /* from an hour ago, for clocks a little behind */
	/* A server certificate for this DNS name instead of localhost and
	 * 127.0.0.1 (the webhooks' <service>.<namespace>.svc); with
	 * loopback_too, 127.0.0.1 as well. */
	const char *dns_name;
	bool loopback_too;
	long long valid_seconds; /* > 0: overrides valid_days */
} kft_cert_opts;

/* Makes a new key and its certificate as o says. Returns 0, KFT_ENOMEM,
 * KFT_EINVAL (an issuer whose PEM mbedTLS cannot load) or KFT_EIO (an
 * mbedTLS failure, its code in the message, which `what` begins). On error
 * out is left empty. */
int kft_cert_make(const kft_cert_opts *o, const char *what, kft_cert *out, kft_error *err);

/* A P-256 CA as ca says and a certificate it signs as leaf says (their
 * key_type and leaf->issuer are not read), made together: the CA's key
 * signs both and the leaf's key is drawn on its curve, so the four scalar
 * multiplications share one precomputed table, which mbedTLS 2.28 builds
 * anew for every group it loads (0.28 ms each instead of 0.7: about half of
 * a job supervisor's start-up CPU). Returns 0, KFT_ENOMEM or KFT_EIO (what
 * begins the message); on error both are left empty. */
int kft_cert_make_chain(const kft_cert_opts *ca, const kft_cert_opts *leaf, const char *what,
                        kft_cert *ca_out, kft_cert *leaf_out, kft_error *err);

/* Whether a chain kft_cert_make_chain made, kept since, still holds for at
 * least `seconds` more: both certificates parse (one each), the first is a
 * CA and is named as the second's issuer, the second is not a CA, key_pem
 * parses and its public half is the second's, and neither certificate ends
 * sooner. The CA's signature is not verified: this tells a kept chain from a
 * damaged, mixed-up or ageing one, and a scalar multiplication would cost
 * as much as a fifth of making a new chain. NULLs are false. */
bool kft_cert_chain_holds(const char *ca_pem, const char *leaf_pem, const char *key_pem,
                          long long seconds);

/* Whether cert_pem with key_pem is valid from now until `until`, signed by
 * ca_pem (cert_pem itself for a CA) for `name`: the signature verified and
 * the key shown to be the certificate's (two scalar multiplications), the
 * dates judged against now and until rather than the clock. The
 * controller's webhook pair (kft_cm_cert_plan). NULLs are false. */
bool kft_cert_pair_valid(const char *ca_pem, const char *cert_pem, const char *key_pem,
                         const char *name, time_t now, time_t until);

/* Wipes the key and frees both strings; the struct is left empty. */
void kft_cert_free(kft_cert *c);

#endif
