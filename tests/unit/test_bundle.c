/*
 * test_bundle.c - the pre-parsed schema bundle (src/api/bundle.h): every
 * embedded tree is exactly what decoding its api/ file gives, the encoding
 * round-trips every value kind (including the number edges), and malformed
 * encodings are refused without crashing or leaking.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/bundle.h"
#include "kftrainer/decode.h"
#include "kftrainer/schema.h"

/* Encodes v and decodes it again; fails the test when either step fails. */
static json_t *round_trip(const json_t *v)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	assert_int_equal(kft_bundle_encode(v, &b), 0);
	json_t *back = NULL;
	assert_int_equal(kft_bundle_decode((const unsigned char *)b.buf, b.len, &back), 0);
	kft_strbuf_free(&b);
	return back;
}

/* The built-in bundle is the api/ files, file by file, decoded as the
 * library decodes them at run time. */
static void test_embedded_trees_match_sources(void **state)
{
	(void)state;
	assert_true(kft_api_bundle_count >= 9);
	for (size_t i = 0; i < kft_api_bundle_count; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", KFT_SOURCE_DIR, kft_api_bundle[i].name);
		kft_doc_list docs = {0};
		kft_error err = {0};
		if (kft_decode_file(path, &docs, &err) != 0)
			fail_msg("%s: %s", path, err.message);
		assert_int_equal(docs.count, 1);
		json_t *tree = NULL;
		assert_int_equal(
		        kft_bundle_decode(kft_api_bundle[i].data, kft_api_bundle[i].len, &tree), 0);
		if (!json_equal(tree, docs.items[0].root))
			fail_msg("%s: embedded tree differs from the file", kft_api_bundle[i].name);
		/* Order matters too: iteration order is what CRDs and errors show. */
		char *a = json_dumps(tree, JSON_PRESERVE_ORDER | JSON_COMPACT);
		char *b = json_dumps(docs.items[0].root, JSON_PRESERVE_ORDER | JSON_COMPACT);
		assert_string_equal(a, b);
		free(a);
		free(b);
		json_decref(tree);
		kft_doc_list_free(&docs);
	}
	kft_error err;
	assert_non_null(kft_schema_builtin(&err));
}

static void test_round_trip_values(void **state)
{
	(void)state;
	json_error_t jerr;
	json_t *v = json_loads("{\"i\":[0,1,-1,63,64,-64,-65,9223372036854775807,"
	                       "-9223372036854775807,127,128,300],"
	                       "\"r\":[0.1,-2.5e-300,1e308,3.0],"
	                       "\"s\":[\"\",\"caf\\u00e9\",\"a\\u0000b\"],"
	                       "\"b\":[true,false,null],\"o\":{\"\":{},\"z\":[],\"a\":1}}",
	                       JSON_ALLOW_NUL, &jerr);
	assert_non_null(v);
	json_array_append_new(json_object_get(v, "i"), json_integer(INT64_MIN));
	json_t *back = round_trip(v);
	assert_true(json_equal(v, back));
	/* Strings keep embedded NULs; reals come back bit for bit. */
	assert_int_equal(json_string_length(json_array_get(json_object_get(back, "s"), 2)), 3);
	assert_true(json_real_value(json_array_get(json_object_get(back, "r"), 0)) == 0.1);
	assert_true(json_is_real(json_array_get(json_object_get(back, "r"), 3)));
	json_decref(back);
	json_decref(v);
}

static void test_refuses_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *bytes;
		size_t len;
	} bad[] = {
	        {"", 0},                 /* nothing */
	        {"x", 1},                /* unknown tag */
	        {"s\005ab", 4},          /* string longer than what is left */
	        {"o\001\001a", 4},       /* member without a value */
	        {"o\177", 2},            /* more members than bytes */
	        {"a\002t", 3},           /* array short of items */
	        {"i\200\200", 3},        /* varint never ends */
	        {"tt", 2},               /* trailing bytes */
	        {"r\0031x2", 5},         /* real that is not a number */
	        {"a\001a\001a\001n", 7}, /* fine: nests three deep */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *out = (json_t *)&out; /* must be reset to NULL on failure */
		int rc = kft_bundle_decode((const unsigned char *)bad[i].bytes, bad[i].len, &out);
		if (i == sizeof(bad) / sizeof(bad[0]) - 1) {
			assert_int_equal(rc, 0);
			json_decref(out);
		} else {
			assert_int_equal(rc, KFT_EPARSE);
			assert_null(out);
		}
	}
	/* Nesting beyond the bound is refused, not recursed into. */
	size_t deep = 100000;
	unsigned char *d = malloc(deep * 2 + 1);
	assert_non_null(d);
	for (size_t i = 0; i < deep; i++) {
		d[2 * i] = 'a';
		d[2 * i + 1] = 1;
	}
	d[2 * deep] = 'n';
	json_t *out = NULL;
	assert_int_equal(kft_bundle_decode(d, deep * 2 + 1, &out), KFT_EPARSE);
	assert_null(out);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_embedded_trees_match_sources),
	        cmocka_unit_test(test_round_trip_values),
	        cmocka_unit_test(test_refuses_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
