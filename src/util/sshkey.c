/*
 * sshkey.c - ECDSA P-521 key pairs for SSH. See sshkey.h.
 *
 * OpenSSL does all the cryptography: EVP_PKEY_Q_keygen draws the key from
 * its CSPRNG, the PEM writer produces the traditional SEC 1 encoding, and
 * the public point comes out of the key's "encoded-pub-key" parameter as the
 * uncompressed octet string SSH wants. What is left for us is the SSH wire
 * blob of RFC 5656 section 3.1 (three length-prefixed strings: the key type,
 * the curve identifier, the point) and its base64.
 *
 * Every buffer that held the private key is wiped before it is released:
 * OpenSSL's memory BIO clears its own buffer when freed, and our copy is
 * cleared by kft_sshkey_free.
 */
#include "util/sshkey.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#define CURVE_OPENSSL "P-521"
#define CURVE_SSH     "nistp521"
/* An uncompressed P-521 point: 0x04, then X and Y of 66 bytes each. */
#define POINT_LEN 133

/* Fills err with the step that failed and OpenSSL's reason (which names the
 * operation, never key bytes), then clears OpenSSL's error queue so later
 * calls start clean. */
static int openssl_failure(kft_error *err, const char *step)
{
	char reason[256] = "unknown error";
	unsigned long code = ERR_peek_last_error();
	if (code)
		ERR_error_string_n(code, reason, sizeof(reason));
	ERR_clear_error();
	return kft_error_set(err, KFT_EIO, "generating the SSH key: %s failed: %s", step, reason);
}

/* The traditional PEM of pkey's private key, as a heap string. */
static int private_pem(EVP_PKEY *pkey, char **out, kft_error *err)
{
	BIO *bio = BIO_new(BIO_s_mem());
	if (!bio)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!PEM_write_bio_PrivateKey_traditional(bio, pkey, NULL, NULL, 0, NULL, NULL)) {
		BIO_free(bio);
		return openssl_failure(err, "writing the private key");
	}
	BUF_MEM *mem = NULL;
	BIO_get_mem_ptr(bio, &mem);
	char *pem = mem ? malloc(mem->length + 1) : NULL;
	if (!pem) {
		BIO_free(bio);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	memcpy(pem, mem->data, mem->length);
	pem[mem->length] = '\0';
	BIO_free(bio); /* a memory BIO wipes its buffer as it frees it */
	*out = pem;
	return 0;
}

static size_t put_string(unsigned char *p, const void *s, size_t n)
{
	p[0] = (unsigned char)(n >> 24);
	p[1] = (unsigned char)(n >> 16);
	p[2] = (unsigned char)(n >> 8);
	p[3] = (unsigned char)n;
	memcpy(p + 4, s, n);
	return 4 + n;
}

/* "ecdsa-sha2-nistp521 <base64 blob>\n" for pkey's public point. */
static int authorized_key(EVP_PKEY *pkey, char **out, kft_error *err)
{
	unsigned char point[POINT_LEN + 1];
	size_t point_len = 0;
	if (!EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point,
	                                     sizeof(point), &point_len))
		return openssl_failure(err, "reading the public key");
	if (point_len != POINT_LEN || point[0] != 0x04)
		return kft_error_set(err, KFT_EIO, "generating the SSH key: unexpected public key");

	const char *type = KFT_SSHKEY_TYPE;
	unsigned char blob[3 * 4 + sizeof(KFT_SSHKEY_TYPE) + sizeof(CURVE_SSH) + POINT_LEN];
	size_t n = put_string(blob, type, strlen(type));
	n += put_string(blob + n, CURVE_SSH, strlen(CURVE_SSH));
	n += put_string(blob + n, point, point_len);

	size_t type_len = strlen(type);
	size_t b64_len = 4 * ((n + 2) / 3);
	char *line = malloc(type_len + 1 + b64_len + 2);
	if (!line)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	memcpy(line, type, type_len);
	line[type_len] = ' ';
	int written = EVP_EncodeBlock((unsigned char *)line + type_len + 1, blob, (int)n);
	if (written < 0 || (size_t)written != b64_len) {
		free(line);
		return kft_error_set(err, KFT_EIO, "generating the SSH key: base64 failed");
	}
	memcpy(line + type_len + 1 + b64_len, "\n", 2);
	*out = line;
	return 0;
}

int kft_sshkey_generate(kft_sshkey *out, kft_error *err)
{
	if (!out)
		return kft_error_set(err, KFT_EINVAL, "kft_sshkey_generate: out is NULL");
	out->private_pem = out->authorized_key = NULL;

	EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", CURVE_OPENSSL);
	if (!pkey)
		return openssl_failure(err, "EC key generation on " CURVE_OPENSSL);
	int rc = private_pem(pkey, &out->private_pem, err);
	if (rc == 0)
		rc = authorized_key(pkey, &out->authorized_key, err);
	EVP_PKEY_free(pkey); /* clears the private scalar */
	if (rc != 0)
		kft_sshkey_free(out);
	return rc;
}

void kft_sshkey_free(kft_sshkey *key)
{
	if (!key)
		return;
	if (key->private_pem) {
		OPENSSL_cleanse(key->private_pem, strlen(key->private_pem));
		free(key->private_pem);
	}
	free(key->authorized_key);
	key->private_pem = key->authorized_key = NULL;
}
