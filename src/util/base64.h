/*
 * base64.h - unpadded URL-safe base64 (RFC 4648 section 5), as Go's
 * base64.RawURLEncoding reads and writes it (internal): JWT parts and JWK members.
 */
#ifndef KFT_UTIL_BASE64_H
#define KFT_UTIL_BASE64_H

#include <stddef.h>

/* Decodes len characters of in (any bytes) into a new buffer of *out_len
 * bytes plus a NUL the caller frees. As Go: '\r' and '\n' are skipped, '='
 * and anything outside the alphabet are refused, so is a length of 1 mod 4;
 * unused trailing bits may be set. NULL when refused or out of memory. */
unsigned char *kft_base64url_decode(const char *in, size_t len, size_t *out_len);

/* Encodes len bytes, unpadded, into a new NUL-terminated string of
 * *out_len characters (out_len may be NULL) the caller frees; NULL when out
 * of memory. */
char *kft_base64url_encode(const unsigned char *in, size_t len, size_t *out_len);

#endif
