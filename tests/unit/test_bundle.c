/*
 * test_bundle.c - the pre-parsed schema bundle (src/api/bundle.h): every
 * embedded tree is exactly what decoding its api/ file gives, the encoding
 * round-trips every value kind (including the number edges), malformed
 * encodings are refused without crashing or leaking, and an object's members
 * are listed without building them (kft_bundle_members, which the built-in
 * schema uses to decode only the definitions a process meets).
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
	        {"O\001\001a\002t", 6},  /* sized member longer than what is left */
	        {"O\001\001a\002tt", 7}, /* sized member with bytes its value leaves */
	        {"O\001\001a\000", 5},   /* sized member with no value */
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

typedef struct listed {
	json_t *members; /* key -> the value decoded from its listed encoding */
	size_t calls;
	size_t stop_at; /* answer 7 at this call (0: never) */
} listed;

static int list_member(const char *key, size_t klen, const unsigned char *value, size_t vlen,
                       void *ctx)
{
	listed *l = ctx;
	if (++l->calls == l->stop_at)
		return 7;
	json_t *v = NULL;
	assert_int_equal(kft_bundle_decode(value, vlen, &v), 0);
	assert_int_equal(json_object_setn_new(l->members, key, klen, v), 0);
	return 0;
}

/* Every embedded file's members, listed, are its decoded tree's members, in
 * order; so are those of each file's definitions (sized 'O' objects) and of
 * an object encoded 'o'. */
static void test_members(void **state)
{
	(void)state;
	for (size_t i = 0; i < kft_api_bundle_count; i++) {
		const struct kft_bundle_file *f = &kft_api_bundle[i];
		assert_int_equal(f->data[0], 'O');
		json_t *tree = NULL;
		assert_int_equal(kft_bundle_decode(f->data, f->len, &tree), 0);
		listed l = {.members = json_object()};
		assert_int_equal(kft_bundle_members(f->data, f->len, list_member, &l), 0);
		char *a = json_dumps(tree, JSON_PRESERVE_ORDER | JSON_COMPACT);
		char *b = json_dumps(l.members, JSON_PRESERVE_ORDER | JSON_COMPACT);
		assert_string_equal(a, b);
		free(a);
		free(b);
		json_decref(l.members);
		json_decref(tree);
	}
	json_t *v =
	        json_pack("{s:{s:{s:i}}, s:[i, s], s:s}", "a", "b", "c", 1, "d", 2, "e", "f", "g");
	kft_strbuf enc;
	kft_strbuf_init(&enc);
	assert_int_equal(kft_bundle_encode(v, &enc), 0);
	listed l = {.members = json_object()};
	/* the root is 'O', and so is "a"; "a"'s "b" is 'o' */
	assert_int_equal(
	        kft_bundle_members((const unsigned char *)enc.buf, enc.len, list_member, &l), 0);
	assert_true(json_equal(l.members, v));
	/* an 'o' object, as deeper ones are encoded: {"c": 1, "d": [true]} */
	static const unsigned char plain[] = "o\002\001ci\002\001da\001t";
	json_t *deep = json_object();
	listed l2 = {.members = deep};
	assert_int_equal(kft_bundle_members(plain, sizeof(plain) - 1, list_member, &l2), 0);
	json_t *want = json_pack("{s:i, s:[b]}", "c", 1, "d", 1);
	assert_true(json_equal(deep, want));
	json_decref(want);
	/* the callback's answer stops the walk */
	listed l3 = {.members = json_object(), .stop_at = 2};
	assert_int_equal(
	        kft_bundle_members((const unsigned char *)enc.buf, enc.len, list_member, &l3), 7);
	assert_int_equal(l3.calls, 2);
	/* not an object, truncated, or with trailing bytes: refused */
	l3.stop_at = 0;
	assert_int_equal(kft_bundle_members((const unsigned char *)"a\000", 2, list_member, &l3),
	                 KFT_EPARSE);
	assert_int_equal(
	        kft_bundle_members((const unsigned char *)enc.buf, enc.len - 1, list_member, &l3),
	        KFT_EPARSE);
	assert_int_equal(kft_bundle_members((const unsigned char *)"O\000n", 3, list_member, &l3),
	                 KFT_EPARSE);
	assert_int_equal(kft_bundle_members(NULL, 0, list_member, &l3), KFT_EPARSE);
	kft_strbuf_free(&enc);
	json_decref(l.members);
	json_decref(deep);
	json_decref(l3.members);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_embedded_trees_match_sources),
	        cmocka_unit_test(test_round_trip_values),
	        cmocka_unit_test(test_refuses_malformed),
	        cmocka_unit_test(test_members),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
