/*
 * s3list.h - an S3 ListObjectsV2 reply, read (internal to src/local).
 *
 * The s3:// initializers fetch every object under a prefix, as upstream's
 * (OpenDAL's recursive list). The reply is XML from a server we do not
 * control, so reading it is bounded and fuzzed (tests/fuzz/fuzz_s3_list.c):
 * the object keys of each <Contents> (entities decoded), whether the list is
 * <IsTruncated>, and the <NextContinuationToken> to ask for the rest. Nothing
 * else of the document is looked at. kft_s3_xml_value reads one value of
 * another reply with the same rules.
 */
#ifndef KFT_LOCAL_S3LIST_H
#define KFT_LOCAL_S3LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "kftrainer/error.h"

#define KFT_S3_KEY_MAX  1024   /* S3's own limit on a key, in bytes */
#define KFT_S3_KEYS_MAX 100000 /* per reply; S3 sends at most 1,000 */

typedef struct kft_s3_list {
	char **keys; /* n object keys, each malloc'd, in the reply's order */
	size_t n;
	int truncated;    /* <IsTruncated>true</IsTruncated> */
	char *next_token; /* <NextContinuationToken>, malloc'd, or NULL */
} kft_s3_list;

/* Reads len bytes of a ListObjectsV2 reply into *out (kft_s3_list_free it,
 * also after an error). Errors: KFT_EPARSE (no ListBucketResult, an element
 * not closed, a bad entity, an empty key, a NUL), KFT_ELIMIT (a key or
 * token over KFT_S3_KEY_MAX bytes, more than KFT_S3_KEYS_MAX keys),
 * KFT_ENOMEM. */
int kft_s3_list_parse(const char *xml, size_t len, kft_s3_list *out, kft_error *err);

void kft_s3_list_free(kft_s3_list *l);

/* Whether b[0..n) is a bucket name S3 takes: 3-63 characters of a-z 0-9 . -
 * (pure, here so that what checks names links no signer: the controller's
 * export-to check, the initializers, the exporter). */
bool kft_s3_bucket_ok(const char *b, size_t n);

/* The text of the first <NAME>...</NAME> element of any S3 reply (an
 * UploadId, an error's Code), entities decoded, into out (size bytes).
 * Returns 1 when found, 0 when not (not closed, over out's size or
 * KFT_S3_KEY_MAX bytes, holding markup or a NUL, or NAME over 60 bytes). */
int kft_s3_xml_value(const char *xml, size_t len, const char *name, char *out, size_t size);

#endif
