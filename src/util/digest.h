/*
 * digest.h - hashes over mbedTLS, the one crypto library (internal): SHA-1
 * for names (the JobSet job-key label, never for security), SHA-256 of
 * memory and of files (initializer downloads' checksums), HMAC-SHA256
 * (SigV4's key chain), and lowercase hex. Every function here either never
 * fails or returns 0 / -1 as said.
 */
#ifndef KFT_UTIL_DIGEST_H
#define KFT_UTIL_DIGEST_H

#include <stddef.h>

#define KFT_SHA1_LEN   20
#define KFT_SHA256_LEN 32

/* in[0..n) as 2n lowercase hex digits and a NUL, into out. */
void kft_hex(const unsigned char *in, size_t n, char *out);

/* The SHA-1 digest of data[0..len) (data may be NULL when len is 0) as 40
 * hex digits: jobset.sigs.k8s.io/job-key, as JobSet's controller computes
 * it. Never fails. */
void kft_sha1_hex(const void *data, size_t len, char hex[2 * KFT_SHA1_LEN + 1]);

/* SHA-256 of data[0..len) into out, or as 64 hex digits. Never fail. */
void kft_sha256(const void *data, size_t len, unsigned char out[KFT_SHA256_LEN]);
void kft_sha256_hex(const void *data, size_t len, char hex[2 * KFT_SHA256_LEN + 1]);

/* SHA-256 of the whole file behind fd (read from its start) as 64 hex
 * digits. 0, or -1 when it cannot be read (errno set). */
int kft_sha256_fd(int fd, char hex[2 * KFT_SHA256_LEN + 1]);

/* HMAC-SHA256 of msg[0..len) under key[0..keylen) into out. 0, or -1 when
 * mbedTLS refuses (out of memory). */
int kft_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
                    unsigned char out[KFT_SHA256_LEN]);

#endif
