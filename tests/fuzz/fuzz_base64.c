/*
 * fuzz_base64.c - libFuzzer target for src/util/base64.c, which decodes
 * outside input: Secret data and ConfigMap binaryData of rendered and
 * user objects, kubeconfig *-data, JWT parts.
 *
 * For each form (StdEncoding on the input cut at its first NUL,
 * RawURLEncoding on all of it): whatever decodes re-encodes to the input
 * without its line breaks, unless the input's last character carried unused
 * low bits (Go's non-strict decoder ignores them; then decoding the
 * re-encoding gives the same bytes). Any byte string encodes and decodes
 * back to itself. A violation aborts; leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_base64 SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

#define FUZZ_NAME "fuzz_base64"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input without \r and \n, NUL-terminated; the caller frees it. */
static char *without_breaks(const char *s, size_t n)
{
	char *out = malloc(n + 1);
	size_t o = 0;
	if (!out)
		abort();
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\r' && s[i] != '\n')
			out[o++] = s[i];
	out[o] = '\0';
	return out;
}

/* decoded[0..n) came from `text`: its encoding `again` must decode to the
 * same bytes, and equal text unless text's last group had spare bits set. */
static void check_decoded(const char *what, const char *text, const unsigned char *decoded,
                          size_t n, const char *again, int url)
{
	if (!again)
		abort();
	size_t m = 0;
	unsigned char *back = url ? kft_base64url_decode(again, strlen(again), &m)
	                          : (unsigned char *)kft_base64_decode(again, &m);
	if (!back || m != n || memcmp(back, decoded, n) != 0)
		fail(what, "re-encoding does not decode to the same bytes");
	free(back);
	/* Equal but for the last data character, whose spare bits may differ. */
	size_t tl = strlen(text), al = strlen(again), d = tl;
	while (d > 0 && text[d - 1] == '=')
		d--;
	if (tl != al || (d > 0 && memcmp(text, again, d - 1) != 0) ||
	    memcmp(text + d, again + d, tl - d) != 0)
		fail(what, "re-encoding differs from the input beyond its spare bits");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	/* StdEncoding: a C string, as JSON hands it over. */
	size_t cut = strnlen(in, size);
	char *text = without_breaks(in, cut);
	char *z = malloc(cut + 1);
	if (!z)
		abort();
	memcpy(z, in, cut);
	z[cut] = '\0';
	size_t n = 0;
	char *dec = kft_base64_decode(z, &n);
	if (dec) {
		if (dec[n] != '\0')
			fail("std", "decoded data not NUL-terminated");
		char *again = kft_base64_encode(dec, n);
		check_decoded("std", text, (unsigned char *)dec, n, again, 0);
		free(again);
		free(dec);
	}
	free(z);
	free(text);

	/* RawURLEncoding: any bytes. */
	text = without_breaks(in, size);
	unsigned char *udec = kft_base64url_decode(in, size, &n);
	if (udec) {
		size_t el = 0;
		char *again = kft_base64url_encode(udec, n, &el);
		if (again && el != strlen(again))
			fail("url", "encoded length misreported");
		check_decoded("url", text, udec, n, again, 1);
		free(again);
		free(udec);
	}
	free(text);

	/* Any bytes round-trip through both encodings. */
	char *e = kft_base64_encode(data, size);
	dec = e ? kft_base64_decode(e, &n) : NULL;
	if (!dec || n != size || (size && memcmp(dec, data, size) != 0))
		fail("std", "bytes do not round-trip");
	free(dec);
	free(e);
	size_t el;
	e = kft_base64url_encode(data, size, &el);
	udec = e ? kft_base64url_decode(e, el, &n) : NULL;
	if (!udec || n != size || (size && memcmp(udec, data, size) != 0))
		fail("url", "bytes do not round-trip");
	free(udec);
	free(e);
	return 0;
}
