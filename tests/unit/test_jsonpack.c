/*
 * test_jsonpack.c - the packed form of cached objects' JSON text
 * (src/util/jsonpack.c, used by the informer caches).
 *
 * Every fragment packs to its one-byte code; the text of a TrainJob, its
 * JobSet and its runtime snapshot ConfigMap as the controller's caches keep
 * them packs to well under two thirds of its size and back; control bytes
 * and NULs (which compact JSON never holds) round-trip through the escape,
 * and a packed string never holds a NUL; random byte strings round-trip;
 * unpacking bytes kft_jsonpack did not make stays within the length it
 * reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "util/jsonpack.h"

/* Packs and unpacks s[0..n); returns the packed length. */
static size_t round_trip(const char *s, size_t n)
{
	size_t p = kft_jsonpack(s, n, NULL);
	assert_true(p <= 2 * n);
	char *packed = malloc(p + 1), *back = NULL;
	assert_non_null(packed);
	packed[p] = 'X';
	assert_int_equal(kft_jsonpack(s, n, packed), p);
	assert_int_equal(packed[p], 'X'); /* nothing written past it */
	assert_null(memchr(packed, '\0', p));
	size_t u = kft_jsonpack_unpack(packed, p, NULL);
	assert_int_equal(u, n);
	back = malloc(u + 1);
	assert_non_null(back);
	back[u] = 'X';
	assert_int_equal(kft_jsonpack_unpack(packed, p, back), u);
	assert_int_equal(back[u], 'X');
	assert_memory_equal(back, s, n);
	free(back);
	free(packed);
	return p;
}

static void test_fragments(void **state)
{
	(void)state;
	unsigned int n = 0;
	for (unsigned int c = 1; kft_jsonpack_fragment(c); c++, n++) {
		const char *f = kft_jsonpack_fragment(c);
		char out[2];
		assert_int_equal(kft_jsonpack(f, strlen(f), out), 1);
		assert_int_equal((unsigned char)out[0], c);
		/* and with text around it */
		char buf[512];
		int len = snprintf(buf, sizeof(buf), "ab%sxy", f);
		assert_int_equal(round_trip(buf, (size_t)len), 5);
	}
	assert_true(n >= 20 && n < 0x1f);
	assert_null(kft_jsonpack_fragment(0));
}

/* As the caches keep them: no managedFields, apiVersion and kind left out,
 * JobSet and ConfigMap trimmed, the snapshot's data shared (not here). */
static const char *const cached[] = {
        "{\"metadata\":{\"creationTimestamp\":\"2026-11-26T03:46:31Z\",\"generation\":1,"
        "\"name\":\"burst-00010\",\"namespace\":\"bench-ours-w5\",\"resourceVersion\":\"62624\","
        "\"uid\":\"6203701d-bbbd-4746-a668-be70cf4fa78c\"},\"spec\":{\"runtimeRef\":{"
        "\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":\"ClusterTrainingRuntime\",\"name\":"
        "\"torch-distributed\"},\"suspend\":true,\"trainer\":{\"command\":[\"torchrun\","
        "\"train.py\"],\"image\":\"example.invalid/train:1\",\"numNodes\":2,"
        "\"resourcesPerNode\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}},\"status\":{"
        "\"conditions\":[{\"lastTransitionTime\":\"2026-11-26T03:46:31Z\",\"message\":"
        "\"TrainJob is suspended\",\"reason\":\"Suspended\",\"status\":\"True\",\"type\":"
        "\"Suspended\"}]}}",
        "{\"metadata\":{\"name\":\"burst-00010\",\"namespace\":\"bench-ours-w5\","
        "\"ownerReferences\":[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
        "\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"TrainJob\",\"name\":"
        "\"burst-00010\",\"uid\":\"6203701d-bbbd-4746-a668-be70cf4fa78c\"}],"
        "\"resourceVersion\":\"62882\"},\"spec\":{\"suspend\":true},\"status\":{"
        "\"replicatedJobsStatus\":[{\"active\":0,\"failed\":0,\"name\":\"node\",\"ready\":0,"
        "\"succeeded\":0,\"suspended\":1}]}}",
        "{\"metadata\":{\"name\":\"burst-00010-runtime-snapshot\",\"namespace\":"
        "\"bench-ours-w5\",\"resourceVersion\":\"62607\",\"ownerReferences\":[{\"apiVersion\":"
        "\"trainer.kubeflow.org/v1alpha1\",\"kind\":"
        "\"TrainJob\",\"name\":\"burst-00010\",\"uid\":\"6203701d-bbbd-4746-a668-be70cf4fa78c\","
        "\"controller\":true,\"blockOwnerDeletion\":true}]}}",
};

static void test_cached_objects(void **state)
{
	(void)state;
	size_t plain = 0, packed = 0;
	for (size_t i = 0; i < sizeof(cached) / sizeof(cached[0]); i++) {
		size_t n = strlen(cached[i]), p = round_trip(cached[i], n);
		assert_true(p < n);
		plain += n;
		packed += p;
	}
	print_message("cached objects: %zu bytes packed to %zu\n", plain, packed);
	assert_true(packed * 3 < plain * 2);
}

static void test_control_bytes(void **state)
{
	(void)state;
	char all[64];
	for (int i = 0; i < 64; i++)
		all[i] = (char)i; /* NUL, every control byte, then some text */
	assert_int_equal(round_trip(all, sizeof(all)), 64 + 32);
	round_trip("", 0);
	round_trip("\x1f", 1);
	round_trip("\x1f\x1f\x01", 3);
}

static void test_random(void **state)
{
	(void)state;
	unsigned int seed = (unsigned int)time(NULL);
	srand(seed);
	print_message("seed %u\n", seed);
	char buf[300];
	for (int r = 0; r < 2000; r++) {
		size_t n = (size_t)rand() % sizeof(buf);
		for (size_t i = 0; i < n; i++) {
			/* mostly bytes of fragments, so they match partly and wholly */
			int k = rand() % 4;
			const char *f = kft_jsonpack_fragment(1 + (unsigned int)rand() % 20);
			buf[i] = k == 0 ? (char)(rand() % 256) : f[(size_t)rand() % strlen(f)];
		}
		if (r % 10 == 0 && n > 40)
			memcpy(buf + 3, kft_jsonpack_fragment(1), 30); /* a partial match */
		round_trip(buf, n);
	}
	/* unpacking what kft_jsonpack did not make stays within its length */
	for (int r = 0; r < 2000; r++) {
		size_t n = (size_t)rand() % 64;
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)(rand() % 40);
		size_t u = kft_jsonpack_unpack(buf, n, NULL);
		char *out = malloc(u + 1);
		assert_non_null(out);
		assert_int_equal(kft_jsonpack_unpack(buf, n, out), u);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fragments),
	        cmocka_unit_test(test_cached_objects),
	        cmocka_unit_test(test_control_bytes),
	        cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
