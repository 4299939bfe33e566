/*
 * fuzz_envnum.c - libFuzzer target for the whole-number knobs read from the
 * environment (kft_env_whole, src/util/envnum.c: KFTRAINER_TRACKING_DRAIN,
 * KFTRAINER_TRACKING_MAX_REPORTS, KFTRAINER_EXPORT_PART_SIZE).
 *
 * The input, cut at its first NUL, is the variable's value. Empty: not
 * taken and not bad. Otherwise either taken - only decimal digits, at most
 * the bound, and the value written back parses to the same - or refused as
 * bad with the output untouched. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_envnum SECONDS=300`.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/envnum.h"

#define FUZZ_NAME "fuzz_envnum"
#include "fuzz_common.h"

#define VAR   "KFT_FUZZ_ENVNUM"
#define BOUND 10000000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = as_cstring(data, size);
	if (setenv(VAR, s, 1) != 0)
		abort();
	unsigned long long n = 12345678901ULL;
	bool bad = false, taken = kft_env_whole(VAR, BOUND, &n, &bad);
	if (!*s && (taken || bad))
		fail("an empty value was taken or called bad", s);
	if (*s && taken == bad)
		fail("a value neither taken nor bad (or both)", s);
	if (!taken && n != 12345678901ULL)
		fail("a value not taken changed the output", s);
	if (taken) {
		if (n > BOUND || strspn(s, "0123456789") != strlen(s))
			fail("a value beyond the bound or with other characters taken", s);
		char again[32];
		unsigned long long back = 0;
		snprintf(again, sizeof(again), "%llu", n);
		setenv(VAR, again, 1);
		if (!kft_env_whole(VAR, BOUND, &back, &bad) || back != n)
			fail("the value written back parses differently", again);
	}
	free(s);
	return 0;
}
