/*
 * sshkey.c - ECDSA P-521 key pairs for SSH. See sshkey.h.
 *
 * mbedTLS does the cryptography: the key is drawn with the kernel's CSPRNG
 * (getrandom) as mbedTLS's random source, its PEM writer produces the SEC 1
 * "EC PRIVATE KEY" encoding, and the public point is written as the
 * uncompressed octet string SSH wants. What is left for us is the SSH wire
 * blob of RFC 5656 section 3.1 (three length-prefixed strings: the key type,
 * the curve identifier, the point) and its base64. mbedTLS rather than
 * OpenSSL so that the static controller, which makes these keys for MPI
 * TrainJobs, carries one cryptographic library (docs/controller.md).
 *
 * Every buffer that held the private key is wiped before it is released:
 * the PEM buffer here, and the copy the caller gets by kft_sshkey_free.
 */
#include "util/sshkey.h"

#include "util/random.h"
#include "util/secret.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>
#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>

#define CURVE_SSH "nistp521"
/* An uncompressed P-521 point: 0x04, then X and Y of 66 bytes each. */
#define POINT_LEN 133
/* The PEM of a P-521 SEC 1 key is about 360 bytes. */
#define PEM_MAX 1024

static int mbedtls_failure(kft_error *err, const char *step, int code)
{
	return kft_error_set(err, KFT_EIO, "generating the SSH key: %s failed (mbedTLS -0x%04x)",
	                     step, (unsigned)-code);
}

/* The SEC 1 PEM of the key pair, as a heap string. */
static int private_pem(mbedtls_pk_context *pk, char **out, kft_error *err)
{
	unsigned char buf[PEM_MAX];
	int rc = mbedtls_pk_write_key_pem(pk, buf, sizeof(buf));
	if (rc != 0) {
		kft_secret_wipe(buf, sizeof(buf));
		return mbedtls_failure(err, "writing the private key", rc);
	}
	size_t n = strnlen((const char *)buf, sizeof(buf));
	char *pem = malloc(n + 1);
	if (pem) {
		memcpy(pem, buf, n);
		pem[n] = '\0';
	}
	kft_secret_wipe(buf, sizeof(buf));
	if (!pem)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
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

/* "ecdsa-sha2-nistp521 <base64 blob>\n" for the key's public point. */
static int authorized_key(const mbedtls_ecp_keypair *ec, char **out, kft_error *err)
{
	unsigned char point[POINT_LEN];
	size_t point_len = 0;
	int mrc = mbedtls_ecp_point_write_binary(&ec->grp, &ec->Q, MBEDTLS_ECP_PF_UNCOMPRESSED,
	                                         &point_len, point, sizeof(point));
	if (mrc != 0)
		return mbedtls_failure(err, "reading the public key", mrc);
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
	size_t written = 0;
	if (mbedtls_base64_encode((unsigned char *)line + type_len + 1, b64_len + 1, &written, blob,
	                          n) != 0 ||
	    written != b64_len) {
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

	mbedtls_pk_context pk;
	mbedtls_pk_init(&pk);
	int rc = mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (rc == 0)
		rc = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP521R1, mbedtls_pk_ec(pk),
		                         kft_random_bytes, NULL);
	if (rc != 0) {
		mbedtls_pk_free(&pk);
		return rc == MBEDTLS_ERR_ECP_ALLOC_FAILED || rc == MBEDTLS_ERR_PK_ALLOC_FAILED
		               ? kft_error_set(err, KFT_ENOMEM, "out of memory")
		               : mbedtls_failure(err, "EC key generation on P-521", rc);
	}
	rc = private_pem(&pk, &out->private_pem, err);
	if (rc == 0)
		rc = authorized_key(mbedtls_pk_ec(pk), &out->authorized_key, err);
	mbedtls_pk_free(&pk); /* clears the private scalar */
	if (rc != 0)
		kft_sshkey_free(out);
	return rc;
}

void kft_sshkey_free(kft_sshkey *key)
{
	if (!key)
		return;
	if (key->private_pem) {
		kft_secret_wipe(key->private_pem, strlen(key->private_pem));
		free(key->private_pem);
	}
	free(key->authorized_key);
	key->private_pem = key->authorized_key = NULL;
}
