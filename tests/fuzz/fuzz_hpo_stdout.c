/*
 * fuzz_hpo_stdout.c - libFuzzer target for Katib's StdOut metrics filter
 * (kft_hpo_stdout_line, src/hpo/metrics.c), which reads every line a
 * trial's primary node prints.
 *
 * Every match must lie inside the line, in order and without overlap; its
 * name must be one or more of [A-Za-z0-9_|-] followed (after blanks) by
 * '=', and its value only the characters a number is written with. A
 * violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_hpo_stdout SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"

#define FUZZ_NAME "fuzz_hpo_stdout"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct scan {
	const char *line;
	size_t len;
	const char *last_end;
} scan;

static void check(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen)
{
	scan *s = ctx;
	if (name < s->last_end || nlen == 0 || value + vlen > s->line + s->len ||
	    value < name + nlen)
		fail("a match outside the line, overlapping, or with an empty name", NULL);
	for (size_t i = 0; i < nlen; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_|-",
		            name[i]) ||
		    name[i] == '\0')
			fail("a name character outside [\\w|-]", NULL);
	for (size_t i = 0; i < vlen; i++)
		if (!strchr("0123456789+-.eE", value[i]) || value[i] == '\0')
			fail("a value character no number is written with", NULL);
	const char *eq = name + nlen;
	while (eq < value && *eq != '=')
		eq++;
	if (eq == value)
		fail("no '=' between name and value", NULL);
	s->last_end = value + vlen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	scan s = {(const char *)data, size, (const char *)data};
	kft_hpo_stdout_line((const char *)data, size, check, &s);
	return 0;
}
