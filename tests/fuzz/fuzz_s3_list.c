/*
 * fuzz_s3_list.c - libFuzzer target for S3's ListObjectsV2 reply reader
 * (kft_s3_list_parse, src/local/s3list.c), which reads what an S3 endpoint
 * answers the s3:// initializers.
 *
 * The input is read as a reply: accepted or refused with KFT_EPARSE,
 * KFT_ELIMIT or KFT_ENOMEM and a message; an accepted one has non-empty keys
 * of at most KFT_S3_KEY_MAX bytes with no NUL, and a token only of bounded
 * length. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_s3_list SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/error.h"
#include "local/s3list.h"

#define FUZZ_NAME "fuzz_s3_list"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kft_s3_list l;
	kft_error err = {0};
	int rc = kft_s3_list_parse((const char *)data, size, &l, &err);
	if (rc != 0 && rc != KFT_EPARSE && rc != KFT_ELIMIT && rc != KFT_ENOMEM)
		fail("an unexpected status", NULL);
	if (rc != 0 && !err.message[0])
		fail("a refusal without a message", NULL);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		size_t n = strlen(l.keys[i]);
		if (n == 0 || n > KFT_S3_KEY_MAX)
			fail("a key empty or over the bound", l.keys[i]);
	}
	if (rc == 0 && l.next_token && strlen(l.next_token) > KFT_S3_KEY_MAX)
		fail("a token over the bound", l.next_token);
	kft_s3_list_free(&l);
	return 0;
}
