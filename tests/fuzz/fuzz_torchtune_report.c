/*
 * fuzz_torchtune_report.c - libFuzzer target for the torchtune version check's
 * two readers (src/local/torchtune_env.c): the pins text
 * (kft_torchtune_pins_parse) and what the interpreter behind `tune` reports
 * (kft_torchtune_versions_check), which is another program's output.
 *
 * The input, cut at its first NUL, is read both ways. Pins parse to a count
 * within the bound or to KFT_EPARSE/KFT_ELIMIT, each pin with a non-empty
 * name and version; the report is accepted or refused with KFT_EINVAL and a
 * message; the pins read from an input always match a report written from
 * them. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_torchtune_report SECONDS=300`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/error.h"
#include "local/torchtune_env.h"

#define FUZZ_NAME "fuzz_torchtune_report"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = as_cstring(data, size);
	kft_pin pins[8];
	kft_error err = {0};
	int n = kft_torchtune_pins_parse(s, pins, 8, &err);
	if (n < 0 && n != KFT_EPARSE && n != KFT_ELIMIT)
		fail("a pins status other than KFT_EPARSE or KFT_ELIMIT", s);
	if (n > 8)
		fail("more pins than room", s);
	char report[2048] = "";
	size_t used = 0;
	for (int i = 0; i < n; i++) {
		if (!pins[i].name[0] || !pins[i].version[0])
			fail("an empty pin name or version", s);
		used += (size_t)snprintf(report + used, sizeof(report) - used, "%s %s\n",
		                         pins[i].name, pins[i].version);
	}
	if (n > 0 && kft_torchtune_versions_check(report, pins, (size_t)n, &err) != 0)
		fail("pins do not match a report written from them", s);
	kft_pin fixed[2] = {{"torch", "2.9.1"}, {"torchtune", "0.6.1"}};
	int rc = kft_torchtune_versions_check(s, fixed, 2, &err);
	if (rc != 0 && (rc != KFT_EINVAL || !err.message[0]))
		fail("a report refused without KFT_EINVAL and a message", s);
	free(s);
	return 0;
}
