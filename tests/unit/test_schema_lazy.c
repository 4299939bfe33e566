/*
 * test_schema_lazy.c - the built-in schema decodes each definition on first
 * use (src/api/schema.c, lazy_tree), and any thread may be the first: the
 * controller's webhook workers validate at once. Here four threads validate
 * every shipped runtime (deepspeed, jax, mlx, torch, the torchtune ones,
 * xgboost) at the same time in a process that has decoded no definition yet,
 * and each must find exactly what one thread finds alone afterwards, when
 * every definition they meet is decoded. A test process of its own, so the
 * first use is really the first. Run under ASan too (its _asan twin).
 *
 * And the lazy schema judges as the eager one does: the api/ files loaded
 * as text (kft_schema_load builds every definition) and the built-in bundle
 * default, validate and find unknown fields alike in every runtime, every
 * example TrainJob and every object of the validate tier (valid and
 * invalid), including the defaults of absent fields, which the built-in
 * schema finds without building definitions that have none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/bundle.h"
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

/* What validating, defaulting and the unknown-field walk say of objs[0..n)
 * under s, as one string (defaulting works on a copy). */
static char *findings_of(const kft_schema *s, json_t *const *objs, size_t n,
                         const char *const *labels)
{
	kft_strbuf out;
	kft_strbuf_init(&out);
	for (size_t i = 0; s && i < n; i++) {
		const json_t *obj = objs[i];
		const kft_kind_info *k = kft_schema_find_kind(
		        s, json_string_value(json_object_get(obj, "apiVersion")),
		        json_string_value(json_object_get(obj, "kind")));
		if (!k) {
			kft_strbuf_printf(&out, "%s: no kind\n", labels ? labels[i] : "?");
			continue;
		}
		kft_field_errors errs;
		kft_field_errors_init(&errs);
		json_t *copy = json_deep_copy(obj);
		kft_schema_default(s, k, copy);
		kft_schema_validate(s, k, copy, NULL, &errs);
		kft_schema_check_unknown(s, k, copy, &errs);
		char *dump = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
		kft_strbuf_printf(&out, "%s: %zu errors, defaulted %s\n", labels ? labels[i] : "?",
		                  errs.count, dump ? dump : "?");
		for (size_t e = 0; e < errs.count; e++)
			kft_strbuf_printf(&out, "  %d %s %s %s\n", (int)errs.items[e].type,
			                  errs.items[e].field,
			                  errs.items[e].value ? errs.items[e].value : "-",
			                  errs.items[e].detail ? errs.items[e].detail : "");
		free(dump);
		json_decref(copy);
		kft_field_errors_free(&errs);
	}
	return kft_strbuf_detach(&out);
}

static char *findings(void)
{
	kft_error err = {0};
	return findings_of(kft_schema_builtin(&err), docs, NRUNTIMES, runtimes);
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

/* Appends every document of every .yaml file in dir (under the source
 * tree) to *objs. */
static void add_dir(const char *dir, json_t ***objs, size_t *n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", KFT_SOURCE_DIR, dir);
	DIR *d = opendir(path);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		char file[1400];
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		kft_doc_list list = {0};
		kft_error err = {0};
		if (kft_decode_file(file, &list, &err) != 0)
			continue; /* the validate tier has files that do not decode */
		for (size_t i = 0; i < list.count; i++) {
			*objs = realloc(*objs, (*n + 1) * sizeof(**objs));
			(*objs)[(*n)++] = json_incref(list.items[i].root);
		}
		kft_doc_list_free(&list);
	}
	closedir(d);
}

static void test_same_as_eager(void **state)
{
	(void)state;
	const char *names[64], *datas[64];
	size_t lens[64], nfiles = kft_api_bundle_count;
	assert_true(nfiles <= 64);
	for (size_t i = 0; i < nfiles; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", KFT_SOURCE_DIR, kft_api_bundle[i].name);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		char *buf = malloc(1 << 20);
		lens[i] = fread(buf, 1, 1 << 20, f);
		fclose(f);
		names[i] = kft_api_bundle[i].name;
		datas[i] = buf;
	}
	kft_schema *eager = NULL;
	kft_error err = {0};
	if (kft_schema_load(names, datas, lens, nfiles, &eager, &err) != 0)
		fail_msg("%s", err.message);
	json_t **objs = NULL;
	size_t n = 0;
	add_dir("manifests/runtimes", &objs, &n);
	add_dir("examples/trainjobs", &objs, &n);
	add_dir("tests/validate/valid", &objs, &n);
	add_dir("tests/validate/invalid", &objs, &n);
	assert_true(n > 100);
	char *want = findings_of(eager, objs, n, NULL);
	char *got = findings_of(kft_schema_builtin(&err), objs, n, NULL);
	if (getenv("KFT_TEST_SHOW"))
		fputs(want, stderr);
	assert_non_null(want);
	assert_non_null(got);
	assert_string_equal(got, want);
	/* not vacuous: errors were found, and absent fields were defaulted */
	assert_non_null(strstr(want, "in body must be of type integer"));
	assert_non_null(strstr(want, "\"protocol\":\"TCP\"")); /* a port's default */
	free(want);
	free(got);
	for (size_t i = 0; i < n; i++)
		json_decref(objs[i]);
	free(objs);
	for (size_t i = 0; i < nfiles; i++)
		free((char *)datas[i]);
	kft_schema_free(eager);
}

/* Defaults of absent fields through $ref chains, lazy and eager alike: a
 * default on the field itself wins over its definition's; one found through
 * a definition that has none of its own; none from a definition without
 * one; none through a chain that does not resolve or is longer than a view
 * holds (view_of refuses both). */
static const char CHAINS[] =
        "kinds:\n"
        "- {group: example.com, version: v1, kind: Widget, listKind: WidgetList,\n"
        "   plural: widgets, singular: widget, scope: Namespaced, schema: Widget}\n"
        "definitions:\n"
        "  Widget:\n"
        "    type: object\n"
        "    properties:\n"
        "      apiVersion: {type: string}\n"
        "      kind: {type: string}\n"
        "      own: {default: 5, $ref: Nine}\n"
        "      nine: {$ref: Nine}\n"
        "      through: {$ref: Plain}\n"
        "      none: {$ref: Str}\n"
        "      broken: {$ref: Missing}\n"
        "      brokenlater: {default: 1, $ref: ToMissing}\n"
        "      long: {$ref: L1}\n"
        "      longown: {default: own, $ref: L1}\n"
        "      fits: {$ref: L2}\n"
        "  Nine: {default: 9}\n"
        "  Plain: {description: no default here, $ref: Deep}\n"
        "  Deep: {type: object, default: {k: deep}}\n"
        "  Str: {type: string}\n"
        "  ToMissing: {$ref: Missing}\n"
        "  L1: {$ref: L2}\n"
        "  L2: {$ref: L3}\n"
        "  L3: {$ref: L4}\n"
        "  L4: {$ref: L5}\n"
        "  L5: {$ref: L6}\n"
        "  L6: {$ref: L7}\n"
        "  L7: {$ref: L8}\n"
        "  L8: {default: far}\n";

static void test_defaults_through_chains(void **state)
{
	(void)state;
	const char *names[] = {"chains.yaml"}, *datas[] = {CHAINS};
	size_t lens[] = {sizeof(CHAINS) - 1};
	kft_schema *eager = NULL, *lazy = NULL;
	kft_error err = {0};
	assert_int_equal(kft_schema_load(names, datas, lens, 1, &eager, &err), 0);
	kft_doc_list list = {0};
	assert_int_equal(kft_decode(CHAINS, sizeof(CHAINS) - 1, "chains.yaml", &list, &err), 0);
	kft_strbuf enc;
	kft_strbuf_init(&enc);
	assert_int_equal(kft_bundle_encode(list.items[0].root, &enc), 0);
	struct kft_bundle_file f = {"chains.yaml", (const unsigned char *)enc.buf, enc.len};
	assert_int_equal(kft_schema_load_bundle(&f, 1, &lazy, &err), 0);
	json_t *obj = json_pack("{s:s, s:s}", "apiVersion", "example.com/v1", "kind", "Widget");
	char *a = findings_of(eager, &obj, 1, NULL), *b = findings_of(lazy, &obj, 1, NULL);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "\"fits\":\"far\""));
	assert_non_null(strstr(a, "\"nine\":9"));
	assert_non_null(strstr(a, "\"own\":5"));
	assert_non_null(strstr(a, "\"through\":{\"k\":\"deep\"}"));
	assert_null(strstr(a, "\"none\""));
	assert_null(strstr(a, "\"broken\""));
	assert_null(strstr(a, "\"brokenlater\""));
	assert_null(strstr(a, "\"long\""));
	assert_null(strstr(a, "\"longown\""));
	free(a);
	free(b);
	json_decref(obj);
	kft_schema_free(lazy);
	kft_schema_free(eager);
	kft_strbuf_free(&enc);
	kft_doc_list_free(&list);
	/* a bundle that is not an encoded object, or defines a name twice */
	struct kft_bundle_file bad = {"bad", (const unsigned char *)"a\000", 2};
	assert_int_equal(kft_schema_load_bundle(&bad, 1, &lazy, &err), KFT_EINVAL);
	assert_null(lazy);
	json_t *one = json_pack("{s:{s:{}}}", "definitions", "X");
	kft_strbuf_init(&enc);
	assert_int_equal(kft_bundle_encode(one, &enc), 0);
	struct kft_bundle_file twice[] = {{"a", (const unsigned char *)enc.buf, enc.len},
	                                  {"b", (const unsigned char *)enc.buf, enc.len}};
	assert_int_equal(kft_schema_load_bundle(twice, 2, &lazy, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "definition X is defined twice"));
	kft_strbuf_free(&enc);
	json_decref(one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_first_use_from_many_threads),
	        cmocka_unit_test(test_same_as_eager),
	        cmocka_unit_test(test_defaults_through_chains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
