/*
 * fuzz_bundle.c - libFuzzer target for the schema bundle's decoder
 * (src/api/bundle.c: kft_bundle_decode, and kft_bundle_members, which the
 * built-in schema walks to decode only the definitions a process meets).
 * The bundle is made at build time, but its decoder treats it as untrusted
 * bytes, and this holds it to that.
 *
 * Promises: a tree that decodes encodes again to bytes that decode to a
 * tree with the same encoding; when the input decodes to an object, listing
 * its members succeeds, and setting them one by one, each decoded, into an
 * empty object makes an object with the same encoding (a repeated key
 * replaces, as in the decoder); a listing fails only with KFT_EPARSE. A
 * violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_bundle SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/bundle.h"

#define FUZZ_NAME "fuzz_bundle"
#include "fuzz_common.h"

/* Whether a and b encode to the same bytes. Trees are compared this way, not
 * with json_equal, which looks keys up as C strings and so finds a key with
 * a NUL in it in no object, not even its own. */
static int same(const json_t *a, const json_t *b)
{
	kft_strbuf x, y;
	kft_strbuf_init(&x);
	kft_strbuf_init(&y);
	int eq = a && b && kft_bundle_encode(a, &x) == 0 && kft_bundle_encode(b, &y) == 0 &&
	         x.len == y.len && memcmp(x.buf, y.buf, x.len) == 0;
	kft_strbuf_free(&x);
	kft_strbuf_free(&y);
	return eq;
}

/* Sets each listed member into an object, as the decoder does; a member
 * whose value does not decode leaves it NULL. */
static int member(const char *key, size_t klen, const unsigned char *value, size_t vlen, void *ctx)
{
	json_t **rebuilt = ctx, *v = NULL;
	if (*rebuilt && (kft_bundle_decode(value, vlen, &v) != 0 ||
	                 json_object_setn_new_nocheck(*rebuilt, key, klen, v) != 0)) {
		json_decref(*rebuilt);
		*rebuilt = NULL;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *tree = NULL;
	if (kft_bundle_decode(data, size, &tree) == 0) {
		kft_strbuf again;
		kft_strbuf_init(&again);
		json_t *back = NULL;
		if (kft_bundle_encode(tree, &again) != 0 ||
		    kft_bundle_decode((const unsigned char *)again.buf, again.len, &back) != 0 ||
		    !same(tree, back))
			fail("a decoded tree does not survive encoding and decoding again", NULL);
		json_decref(back);
		kft_strbuf_free(&again);
	}
	json_t *rebuilt = json_object();
	int rc = kft_bundle_members(data, size, member, &rebuilt);
	if (json_is_object(tree) && (rc != 0 || !same(tree, rebuilt)))
		fail("an object's listed members do not make the object", NULL);
	json_decref(rebuilt);
	if (rc != 0 && rc != KFT_EPARSE)
		fail("a listing failed with something other than KFT_EPARSE", NULL);
	json_decref(tree);
	return 0;
}
