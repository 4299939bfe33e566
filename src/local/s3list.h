/*
 * s3list.h - an S3 ListObjectsV2 reply, read (internal to src/local).
 *
 * The s3:// initializers fetch every object under a prefix, as upstream's
 * (OpenDAL's recursive list). The reply is XML from a server we do not
 * control, so reading it is bounded and fuzzed (tests/fuzz/fuzz_s3_list.c):
 * the object keys of each <Contents> (entities decoded), whether the list is
 * <IsTruncated>, and the <NextContinuationToken> to ask for the rest. Nothing
 * else of the document is looked at.
 */
#ifndef KFT_LOCAL_S3LIST_H
#define KFT_LOCAL_S3LIST_H

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

#endif
