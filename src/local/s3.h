/*
 * s3.h - one S3 bucket as the s3:// initializers and the model exporter
 * reach it (internal): where it lives, the credentials, the signed headers
 * of a request (SigV4, sigv4.c), and uploads: one PUT, or a multipart
 * upload for a large file.
 *
 * The rules are upstream's initializers' (the AWS SDK's environment):
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (none: an
 * anonymous request), AWS_REGION else AWS_DEFAULT_REGION else us-east-1,
 * AWS_ENDPOINT_URL (a non-AWS server, addressed path-style). The few XML
 * values read from replies go through s3list.h's bounded, fuzzed reader.
 */
#ifndef KFT_LOCAL_S3_H
#define KFT_LOCAL_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kftrainer/error.h"
#include "local/fetch.h"
#include "local/s3list.h"

/* Where a bucket lives: the URL prefix to put the object path after, the
 * Host header value that is signed and sent, and the canonical path prefix. */
typedef struct kft_s3_target {
	char base[600];  /* scheme://authority */
	char host[512];  /* authority */
	char prefix[80]; /* "" (virtual-hosted) or "/BUCKET" (path-style) */
} kft_s3_target;

/* One bucket with its endpoint and credentials (strings borrowed from the
 * environment). */
typedef struct kft_s3 {
	kft_s3_target t;
	kft_aws_credentials c;
	const char *bucket;
} kft_s3;

/* Room for the headers of one signed request, and the lines to send. */
typedef struct kft_s3_headers {
	char buf[5][2200];
	const char *lines[6]; /* NULL-terminated */
} kft_s3_headers;

/* The bucket (3-63 characters of a-z 0-9 . -) from this process's
 * environment. Errors: KFT_EINVAL (the bucket name, an endpoint that is not
 * http(s)://HOST[:PORT]). */
int kft_s3_open(const char *bucket, kft_s3 *out, kft_error *err);

/* An endpoint (may be NULL: AWS) and region give the target of bucket. */
int kft_s3_target_for(const char *endpoint, const char *region, const char *bucket,
                      kft_s3_target *t, kft_error *err);

/* The header lines of one request of METHOD path?query (path and query in
 * canonical form; query NULL: none), payload unsigned: signed when an
 * access key is known, else none (anonymous). */
int kft_s3_sign(const kft_s3 *s, const char *method, const char *path, const char *query,
                kft_s3_headers *h, kft_error *err);

/* A query value as SigV4's canonical query encodes it: every byte outside
 * A-Z a-z 0-9 - . _ ~ as %XX, "/" included. -1 when it does not fit. */
int kft_s3_query_encode(const char *v, char *out, size_t cap);

/* Files at or under this size go in one PUT; larger ones in parts of this
 * size (S3 takes parts of 5 MiB to 5 GiB, at most 10,000). */
#define KFT_S3_PART_DEFAULT ((uint64_t)64 << 20)
#define KFT_S3_PART_MIN     ((uint64_t)5 << 20)
#define KFT_S3_PARTS_MAX    10000

/* Uploads the local file `path` as object `key`: one PUT when it is at most
 * part_size bytes (0: KFT_S3_PART_DEFAULT), else a multipart upload
 * (CreateMultipartUpload, UploadPart each part_size bytes, grown so there
 * are at most KFT_S3_PARTS_MAX, CompleteMultipartUpload; aborted on any
 * failure, so no parts are left behind). Errors name the object and the
 * server's Code: KFT_ENOTFOUND (no such bucket), KFT_EDENIED (403),
 * KFT_EUNAVAILABLE (cannot connect, 5xx), KFT_EIO (reading the file, other
 * replies), KFT_EPARSE (a reply without what it must hold). */
int kft_s3_put_file(const kft_s3 *s, const char *key, const char *path, uint64_t part_size,
                    kft_error *err);

#endif
