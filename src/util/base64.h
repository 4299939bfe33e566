/*
 * base64.h - standard base64 (RFC 4648, "+/" and '=' padding) as Go's
 * encoding/base64.StdEncoding reads and writes it (internal).
 *
 * Every base64 kftrainer meets is a Kubernetes []byte field in JSON - Secret
 * data, ConfigMap binaryData, kubeconfig *-data - which the API server and
 * client-go decode with StdEncoding: padding required, line breaks (\r, \n)
 * skipped, anything else refused. One decoder for all of them, so the local
 * engine, the kubeconfig reader and the plugins accept exactly what the
 * cluster accepts.
 */
#ifndef KFT_UTIL_BASE64_H
#define KFT_UTIL_BASE64_H

#include <stddef.h>

/* The encoding of data[0..len) (padded, no line breaks), NUL-terminated;
 * the caller frees it (and wipes it first when the data was secret). NULL
 * when out of memory. data may be NULL when len is 0. */
char *kft_base64_encode(const void *data, size_t len);

/* The bytes `in` (NUL-terminated) encodes, NUL-terminated too (the data may
 * hold NULs: *out_len is its length). NULL when `in` is not StdEncoding
 * (a character outside the alphabet, missing or misplaced padding, a group
 * cut short) or when out of memory. */
char *kft_base64_decode(const char *in, size_t *out_len);

#endif
