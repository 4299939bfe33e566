/*
 * fuzz_duration.c - libFuzzer target for Go's duration syntax
 * (kft_duration_parse_ms, src/util/duration.c), which reads the
 * controller's Configuration and CLI flags.
 *
 * The input, cut at its first NUL, is either refused (KFT_EINVAL, the
 * output untouched) or accepted as at most Go's range (about 292 years
 * either way); an accepted value written back as "<ms>ms" parses to the same
 * value. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_duration SECONDS=300`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/error.h"
#include "util/duration.h"

#define FUZZ_NAME "fuzz_duration"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = as_cstring(data, size);
	int64_t ms = INT64_MIN;
	int rc = kft_duration_parse_ms(s, &ms);
	if (rc != 0 && rc != KFT_EINVAL)
		fail("a status other than KFT_EINVAL", s);
	if (rc != 0 && ms != INT64_MIN)
		fail("a refused duration changed the output", s);
	if (rc == 0) {
		if (ms > 9223372036855LL || ms < -9223372036855LL)
			fail("a duration beyond Go's range accepted", s);
		char again[32];
		int64_t back = INT64_MIN;
		snprintf(again, sizeof(again), "%lldms", (long long)ms);
		if (kft_duration_parse_ms(again, &back) != 0 || back != ms)
			fail("the value written back parses differently", again);
	}
	free(s);
	return 0;
}
