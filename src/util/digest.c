/*
 * digest.c - see digest.h. mbedTLS 2.28's one-shot functions; the SHA-1
 * one is marked deprecated for security use in newer releases, which is not
 * ours (a label's value).
 */
#include <errno.h>
#include <mbedtls/md.h>
#include <mbedtls/sha1.h>
#include <mbedtls/sha256.h>
#include <unistd.h>

#include "util/digest.h"

void kft_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void kft_sha1_hex(const void *data, size_t len, char hex[2 * KFT_SHA1_LEN + 1])
{
	unsigned char md[KFT_SHA1_LEN];
	mbedtls_sha1_ret(len ? data : (const void *)"", len, md);
	kft_hex(md, sizeof(md), hex);
}

void kft_sha256(const void *data, size_t len, unsigned char out[KFT_SHA256_LEN])
{
	mbedtls_sha256_ret(len ? data : (const void *)"", len, out, 0);
}

void kft_sha256_hex(const void *data, size_t len, char hex[2 * KFT_SHA256_LEN + 1])
{
	unsigned char md[KFT_SHA256_LEN];
	kft_sha256(data, len, md);
	kft_hex(md, sizeof(md), hex);
}

int kft_sha256_fd(int fd, char hex[2 * KFT_SHA256_LEN + 1])
{
	mbedtls_sha256_context ctx;
	unsigned char buf[65536], md[KFT_SHA256_LEN];
	int rc = -1;
	mbedtls_sha256_init(&ctx);
	if (lseek(fd, 0, SEEK_SET) != 0 || mbedtls_sha256_starts_ret(&ctx, 0) != 0)
		goto done;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto done;
		if (r == 0)
			break;
		mbedtls_sha256_update_ret(&ctx, buf, (size_t)r);
	}
	if (mbedtls_sha256_finish_ret(&ctx, md) == 0) {
		kft_hex(md, sizeof(md), hex);
		rc = 0;
	}
done:
	mbedtls_sha256_free(&ctx);
	return rc;
}

int kft_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                    unsigned char out[KFT_SHA256_LEN])
{
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	return md && mbedtls_md_hmac(md, key, keylen, msg, len, out) == 0 ? 0 : -1;
}
