/*
 * base64.h - base64 as Go's encoding/base64 reads and writes it (internal),
 * in the two forms kftrainer meets:
 *
 *   StdEncoding (RFC 4648 section 4, "+/", '=' padding): every Kubernetes
 *   []byte field in JSON - Secret data, ConfigMap binaryData, kubeconfig
 *   *-data - which the API server and client-go decode strictly: padding
 *   required, line breaks (\r, \n) skipped, anything else refused.
 *
 *   RawURLEncoding (section 5, "-_", no padding): JWT parts and JWK members.
 *
 * One decoder and one encoder serve both, so the local engine, the
 * kubeconfig reader, the plugins and the controller accept exactly what Go
 * accepts. Go's non-strict decoders ignore the unused low bits of a final
 * group, and so do these.
 */
#ifndef KFT_UTIL_BASE64_H
#define KFT_UTIL_BASE64_H

#include <stddef.h>

/* StdEncoding of data[0..len) (padded, no line breaks), NUL-terminated;
 * the caller frees it (and wipes it first when the data was secret). NULL
 * when out of memory. data may be NULL when len is 0. */
char *kft_base64_encode(const void *data, size_t len);

/* The bytes `in` (NUL-terminated, StdEncoding) encodes, NUL-terminated too
 * (the data may hold NULs: *out_len is its length). NULL when `in` is not
 * StdEncoding (a character outside the alphabet, missing or misplaced
 * padding, a group cut short) or when out of memory. */
char *kft_base64_decode(const char *in, size_t *out_len);

/* RawURLEncoding: decodes len characters of in (any bytes) into a new
 * buffer of *out_len bytes plus a NUL the caller frees. '\r' and '\n' are
 * skipped; '=' and anything outside the alphabet are refused, so is a
 * length of 1 mod 4. NULL when refused or out of memory. */
unsigned char *kft_base64url_decode(const char *in, size_t len, size_t *out_len);

/* RawURLEncoding of len bytes, unpadded, into a new NUL-terminated string
 * of *out_len characters (out_len may be NULL) the caller frees; NULL when
 * out of memory. */
char *kft_base64url_encode(const unsigned char *in, size_t len, size_t *out_len);

/* Checks s[0..n) as StdEncoding the way Go's decoder walks it (decodeQuantum):
 * -1 when valid, with *decoded its decoded length, else the byte offset Go's
 * CorruptInputError names ("illegal base64 data at input byte N"), which
 * the API server's messages quote. */
long kft_base64_check(const char *s, size_t n, size_t *decoded);

#endif
