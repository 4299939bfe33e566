/*
 * test_schema_lazy.c - the built-in schema decodes each definition on first
 * use (src/api/schema.c, lazy_tree), and any thread may be the first: the
 * controller's webhook workers validate at once. Here four threads validate
 * every shipped runtime (deepspeed, jax, mlx, torch, the torchtune ones,
 * xgboost) at the same time in a process that has decoded no definition yet,
 * and each must find exactly what one thread finds alone afterwards, when
 * every definition they meet is decoded. A test process of its own, so the
 * first use is really the first. Run under ASan too (its _asan twin).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/decode.h"
#include "kftrainer/schema.h"
#include "util/strbuf.h"

#define THREADS 4

static const char *const runtimes[] = {
        "deepspeed-distributed.yaml",  "jax-distributed.yaml",       "mlx-distributed.yaml",
        "torch-distributed.yaml",      "torchtune-llama3.2-1b.yaml", "torchtune-llama3.2-3b.yaml",
        "torchtune-qwen2.5-1.5b.yaml", "xgboost-distributed.yaml",
};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

static json_t *docs[NRUNTIMES];

/* What validating, defaulting and the unknown-field walk say of every
 * runtime, as one string (defaulting works on a copy). */
static char *findings(void)
{
	kft_error err = {0};
	const kft_schema *s = kft_schema_builtin(&err);
	kft_strbuf out;
	kft_strbuf_init(&out);
	for (size_t i = 0; s && i < NRUNTIMES; i++) {
		const json_t *obj = docs[i];
		const kft_kind_info *k = kft_schema_find_kind(
		        s, json_string_value(json_object_get(obj, "apiVersion")),
		        json_string_value(json_object_get(obj, "kind")));
		if (!k) {
			kft_strbuf_printf(&out, "%s: no kind\n", runtimes[i]);
			continue;
		}
		kft_field_errors errs;
		kft_field_errors_init(&errs);
		json_t *copy = json_deep_copy(obj);
		kft_schema_default(s, k, copy);
		kft_schema_validate(s, k, copy, NULL, &errs);
		kft_schema_check_unknown(s, k, copy, &errs);
		char *dump = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
		kft_strbuf_printf(&out, "%s: %zu errors, defaulted %s\n", runtimes[i], errs.count,
		                  dump ? dump : "?");
		for (size_t e = 0; e < errs.count; e++)
			kft_strbuf_printf(&out, "  %s %s\n", errs.items[e].field,
			                  errs.items[e].detail ? errs.items[e].detail : "");
		free(dump);
		json_decref(copy);
		kft_field_errors_free(&errs);
	}
	return kft_strbuf_detach(&out);
}

static void *worker(void *arg)
{
	(void)arg;
	return findings();
}

static void test_first_use_from_many_threads(void **state)
{
	(void)state;
	for (size_t i = 0; i < NRUNTIMES; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/manifests/runtimes/%s", KFT_SOURCE_DIR,
		         runtimes[i]);
		kft_doc_list list = {0};
		kft_error err = {0};
		if (kft_decode_file(path, &list, &err) != 0)
			fail_msg("%s: %s", path, err.message);
		assert_int_equal(list.count, 1);
		docs[i] = json_incref(list.items[0].root);
		kft_doc_list_free(&list);
	}
	pthread_t t[THREADS];
	char *got[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], (void **)&got[i]), 0);
	char *alone = findings();
	assert_non_null(alone);
	assert_non_null(strstr(alone, "torch-distributed.yaml: 0 errors"));
	for (int i = 0; i < THREADS; i++) {
		assert_non_null(got[i]);
		assert_string_equal(got[i], alone);
		free(got[i]);
	}
	free(alone);
	for (size_t i = 0; i < NRUNTIMES; i++)
		json_decref(docs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_first_use_from_many_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
