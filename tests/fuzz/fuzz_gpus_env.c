/*
 * fuzz_gpus_env.c - libFuzzer target for the local backend's GPU inventory
 * override, $KFTRAINER_GPUS (kft_local_gpus_parse, src/local/gpus.c).
 *
 * The input is the variable's value (cut at its first NUL, as an environment
 * string is). It is either refused with a message naming the variable and an
 * empty list, or accepted as at most 256 distinct devices, each 1-96
 * characters of [A-Za-z0-9-_:./] - so a slice joined with commas is a valid
 * CUDA_VISIBLE_DEVICES value - and a list placed and read back through
 * kft_local_gpus_held_by names the same devices. A violation aborts; leaks
 * are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_gpus_env SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "local/gpus.h"

#define FUZZ_NAME "fuzz_gpus_env"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ids(const kft_local_gpus *g)
{
	if (g->n > KFT_LOCAL_GPUS_MAX)
		fail("more than 256 devices accepted", NULL);
	for (size_t i = 0; i < g->n; i++) {
		size_t n = strlen(g->ids[i]);
		if (n == 0 || n > KFT_LOCAL_GPU_ID_MAX ||
		    strspn(g->ids[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                      "0123456789-_:./") != n)
			fail("a device name outside the allowed form", g->ids[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(g->ids[i], g->ids[j]) == 0)
				fail("a device listed twice", g->ids[i]);
	}
}

/* One pod asking for every device: its slice read back is the whole list. */
static void check_round_trip(const kft_local_gpus *g)
{
	char count[24];
	snprintf(count, sizeof(count), "%zu", g->n);
	json_t *js = json_pack("{s:{s:[{s:s, s:{s:{s:{s:{s:[{s:s, s:{s:{s:s}}}]}}}}}]}}", "spec",
	                       "replicatedJobs", "name", "node", "template", "spec", "template",
	                       "spec", "containers", "name", "node", "resources", "limits",
	                       "nvidia.com/gpu", count);
	json_t *alloc = NULL;
	kft_local_gpus held = {0};
	size_t added = 0;
	kft_error err;
	if (!js || kft_local_gpus_place(js, g, &alloc, &err) != 0 ||
	    kft_local_gpus_held_by(alloc, &held, &added, &err) != 0)
		fail("placing an accepted list failed", NULL);
	if (held.n != g->n)
		fail("the placement does not hold every device", NULL);
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(held.ids[i], g->ids[i]) != 0)
			fail("the placement names another device", held.ids[i]);
	kft_local_gpus_free(&held);
	json_decref(alloc);
	json_decref(js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	if (!text)
		return 0;
	kft_local_gpus g;
	kft_error err = {0};
	int rc = kft_local_gpus_parse(text, &g, &err);
	if (rc != 0) {
		if (g.n || g.ids || !strstr(err.message, KFT_LOCAL_GPUS_ENV))
			fail("a refusal without the variable's name or with devices", err.message);
	} else {
		check_ids(&g);
		if (g.n)
			check_round_trip(&g);
	}
	kft_local_gpus_free(&g);
	free(text);
	return 0;
}
