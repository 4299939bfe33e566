/*
 * sha1.h - SHA-1 (FIPS 180-4) of a byte string in memory (internal).
 *
 * Only for names, never for security: the local backend must put on each pod
 * the same jobset.sigs.k8s.io/job-key label JobSet's controller computes, the
 * SHA-1 hex digest of "namespace/job-name". Our own few lines do it without
 * setting up OpenSSL 3's provider machinery, which costs a short-lived process
 * more than everything else it hashes.
 */
#ifndef KFT_UTIL_SHA1_H
#define KFT_UTIL_SHA1_H

#include <stddef.h>

#define KFT_SHA1_LEN 20

/* The digest of data[0..len) into out. data may be NULL when len is 0.
 * Never fails; allocates nothing. */
void kft_sha1(const void *data, size_t len, unsigned char out[KFT_SHA1_LEN]);

/* The digest as 40 lowercase hex digits and a NUL, written to hex. */
void kft_sha1_hex(const void *data, size_t len, char hex[2 * KFT_SHA1_LEN + 1]);

#endif
