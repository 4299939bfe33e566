/*
 * fuzz_hpo_settings.c - libFuzzer target for the algorithm settings an
 * OptimizationJob's annotations carry (kft_hpo_settings_parse,
 * src/hpo/spec.c: "name=value,name=value", as Katib takes settings).
 *
 * The input, cut at its first NUL, is either refused with KFT_EINVAL and a
 * message naming the annotation, or accepted with every value it set
 * within its setting's bounds. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_hpo_settings SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"

#define FUZZ_NAME "fuzz_hpo_settings"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define UNSET (-424242)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = as_cstring(data, size);
	long long a = UNSET, b = UNSET;
	const kft_hpo_setting table[] = {{"min_trials_required", 1, 1000000, &a},
	                                 {"start_step", 1, 1000000, &b}};
	kft_error err = {0};
	int rc = kft_hpo_settings_parse(s, table, 2, "metadata.annotations[x]", "medianstop", &err);
	if (rc != 0 && rc != KFT_EINVAL)
		fail("a status other than KFT_EINVAL", s);
	if (rc != 0 && strncmp(err.message, "metadata.annotations[x]: ", 25) != 0)
		fail("a refusal that does not name the annotation", err.message);
	if (rc == 0 &&
	    ((a != UNSET && (a < 1 || a > 1000000)) || (b != UNSET && (b < 1 || b > 1000000))))
		fail("a value out of its bounds accepted", s);
	free(s);
	return 0;
}
