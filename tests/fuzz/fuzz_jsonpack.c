/*
 * fuzz_jsonpack.c - libFuzzer target for src/util/jsonpack.c, which packs
 * the JSON text of every object the controller's informers cache (objects
 * from the API server, so outside input) and unpacks it on each read.
 *
 * Any byte string packs to at most twice its length, without a NUL, and
 * unpacks to itself; unpacking the input itself (bytes kft_jsonpack did
 * not make) writes exactly the length it reports. A violation aborts;
 * overruns are AddressSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_jsonpack SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonpack.h"

#define FUZZ_NAME "fuzz_jsonpack"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	size_t p = kft_jsonpack(in, size, NULL);
	if (p > 2 * size)
		fail("pack", "packed length over twice the input's");
	char *packed = malloc(p ? p : 1);
	if (!packed)
		abort();
	if (kft_jsonpack(in, size, packed) != p)
		fail("pack", "the two passes disagree on the length");
	if (memchr(packed, '\0', p))
		fail("pack", "a NUL in the packed form");
	size_t u = kft_jsonpack_unpack(packed, p, NULL);
	char *back = malloc(u ? u : 1);
	if (!back)
		abort();
	if (kft_jsonpack_unpack(packed, p, back) != u || u != size ||
	    (size && memcmp(back, in, size) != 0))
		fail("unpack", "does not give the input back");
	free(back);
	free(packed);

	u = kft_jsonpack_unpack(in, size, NULL);
	back = malloc(u ? u : 1);
	if (!back)
		abort();
	if (kft_jsonpack_unpack(in, size, back) != u)
		fail("unpack", "the two passes disagree on the length");
	free(back);
	return 0;
}
