/*
 * pctenc.h - percent-encoding as SigV4 and URLs want it (internal): every
 * byte outside RFC 3986's unreserved set (A-Z a-z 0-9 - . _ ~) as %XX in
 * upper-case hex, '/' kept or not. One home for S3 keys and query values
 * (local/sigv4.c, local/s3.c) and MLflow's paths and queries
 * (track/mlflow.c).
 */
#ifndef KFT_UTIL_PCTENC_H
#define KFT_UTIL_PCTENC_H

#include <stdbool.h>
#include <stddef.h>

/* Encodes the NUL-terminated in into out (size bytes, NUL-terminated).
 * Returns 0, or -1 when it does not fit (out then holds a prefix). */
int kft_pct_encode(const char *in, bool keep_slash, char *out, size_t size);

#endif
