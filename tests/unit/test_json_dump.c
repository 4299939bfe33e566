/*
 * test_json_dump.c - src/util/json.c's kft_json_dump, the store's JSON
 * writer: it must write exactly what jansson's json_dumps(JSON_COMPACT |
 * JSON_ENCODE_ANY) writes (the store's rows were written by json_dumps
 * before, and are read back by jansson's parser), refuse a string or key
 * that is not UTF-8, and stop at a depth bound.
 *
 * The differential runs over hand-picked edge cases (every control
 * character, quotes and backslashes, NUL inside a string and a key,
 * multi-byte UTF-8, the integer extremes, reals jansson writes with ".0" or
 * an exponent it trims) and over random trees built with a fixed seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/error.h"
#include "util/json.h"

/* Both writers on v: ours must give json_dumps' bytes. */
static void same_as_jansson(const json_t *v)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_non_null(want);
	assert_int_equal(kft_json_dump(v, &b), 0);
	if (strlen(want) != b.len || memcmp(want, b.buf, b.len) != 0)
		fail_msg("kft_json_dump wrote\n%s\njson_dumps wrote\n%s", kft_strbuf_str(&b), want);
	free(want);
	kft_strbuf_free(&b);
}

static void test_scalars(void **state)
{
	(void)state;
	static const double reals[] = {0.0,
	                               -0.0,
	                               0.1,
	                               1.0,
	                               -2.5,
	                               1e20,
	                               1e21,
	                               1e-5,
	                               1e-7,
	                               1e300,
	                               -1e-300,
	                               123456789012345678.0,
	                               3.14159265358979,
	                               2.2250738585072014e-308,
	                               5e-324,
	                               1.7976931348623157e308};
	static const json_int_t ints[] = {0,         1,        -1, 9, 10, -10, 1234567890123,
	                                  INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof(reals) / sizeof(*reals); i++) {
		json_t *r = json_real(reals[i]);
		same_as_jansson(r);
		json_decref(r);
	}
	for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++) {
		json_t *n = json_integer(ints[i]);
		same_as_jansson(n);
		json_decref(n);
	}
	json_t *all = json_pack("[n,b,b,{},[],s,s]", 1, 0, "", "plain text");
	same_as_jansson(all);
	json_decref(all);
}

static void test_strings(void **state)
{
	(void)state;
	char every[256];
	for (int c = 1; c < 128; c++)
		every[c - 1] = (char)c;
	every[127] = '\0';
	json_t *v = json_object();
	json_object_set_new(v, "ascii", json_string(every));
	json_object_set_new(v, "nul", json_stringn("a\0b", 3));
	json_object_setn_new(v, "key\0with nul", 12, json_true());
	json_object_set_new(v, "quote\"back\\slash/", json_string("\"\\/\b\f\n\r\t\x7f"));
	json_object_set_new(v, "utf8", json_string("é, 日本, 🚀, \xe2\x80\xa8"));
	json_object_set_new(v, "\x01\x1f", json_string("\x1f"));
	same_as_jansson(v);
	json_decref(v);
}

/* Strings json_string would refuse, made with the nocheck setters (as a
 * decoder that trusts its input does): both writers refuse such a value.
 * Such a key json_dumps writes as a lone quote (jansson 2.14 ignores the
 * key's error), text its own parser refuses; ours refuses it instead. */
static void test_not_utf8(void **state)
{
	(void)state;
	static const char *bad[] = {"\xff", "a\xc3", "\xed\xa0\x80", "\xc0\xaf",
	                            "\xf4\x90\x80\x80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		kft_strbuf b;
		kft_strbuf_init(&b);
		json_t *s = json_string_nocheck(bad[i]);
		assert_null(json_dumps(s, JSON_ENCODE_ANY));
		assert_int_equal(kft_json_dump(s, &b), KFT_EINVAL);
		json_t *o = json_object();
		json_object_set_new_nocheck(o, bad[i], json_null());
		char *broken = json_dumps(o, JSON_ENCODE_ANY);
		json_t *back = broken ? json_loads(broken, JSON_DECODE_ANY, NULL) : NULL;
		assert_null(back);
		free(broken);
		assert_int_equal(kft_json_dump(o, &b), KFT_EINVAL);
		json_decref(s);
		json_decref(o);
		kft_strbuf_free(&b);
	}
}

static void test_depth(void **state)
{
	(void)state;
	json_t *root = json_array(), *at = root;
	for (int i = 0; i < KFT_JSON_DUMP_MAX_DEPTH; i++) {
		json_t *next = json_array();
		json_array_append_new(at, next);
		at = next;
	}
	kft_strbuf b;
	kft_strbuf_init(&b);
	assert_int_equal(kft_json_dump(root, &b), 0); /* the bound itself */
	json_array_append_new(at, json_array());
	kft_strbuf_reset(&b);
	assert_int_equal(kft_json_dump(root, &b), KFT_EINVAL);
	assert_int_equal(kft_json_dump(NULL, &b), KFT_EINVAL);
	json_decref(root);
	kft_strbuf_free(&b);
}

/* ---- random trees ------------------------------------------------------- */

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Up to 12 characters from ASCII (controls included), NUL, and a few
 * multi-byte sequences. */
static json_t *random_string(char *buf)
{
	static const char *pieces[] = {"é", "日", "🚀", "\"", "\\", "/", "\x7f"};
	size_t len = 0, n = next() % 13;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next() % 10;
		if (r < 7) {
			buf[len++] = (char)(next() % 128);
		} else {
			const char *p = pieces[next() % (sizeof(pieces) / sizeof(*pieces))];
			memcpy(buf + len, p, strlen(p));
			len += strlen(p);
		}
	}
	return json_stringn(buf, len);
}

static json_t *random_tree(int depth)
{
	char buf[64];
	switch (next() % (depth > 4 ? 6 : 8)) {
	case 0: return json_null();
	case 1: return json_boolean(next() % 2);
	case 2: return json_integer((json_int_t)next() >> (next() % 64));
	case 3: {
		uint64_t bits = next();
		double d;
		memcpy(&d, &bits, sizeof(d));
		json_t *r = json_real(d); /* NULL for NaN and infinities */
		return r ? r : json_real((double)(int64_t)next() / 1e6);
	}
	case 4:
	case 5: return random_string(buf);
	case 6: {
		json_t *a = json_array();
		for (int i = (int)(next() % 5); i > 0; i--)
			json_array_append_new(a, random_tree(depth + 1));
		return a;
	}
	default: {
		json_t *o = json_object();
		for (int i = (int)(next() % 5); i > 0; i--) {
			json_t *k = random_string(buf);
			json_object_setn_new(o, json_string_value(k), json_string_length(k),
			                     random_tree(depth + 1));
			json_decref(k);
		}
		return o;
	}
	}
}

static void test_random_trees(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		json_t *t = random_tree(0);
		assert_non_null(t);
		same_as_jansson(t);
		json_decref(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_scalars),      cmocka_unit_test(test_strings),
	        cmocka_unit_test(test_not_utf8),     cmocka_unit_test(test_depth),
	        cmocka_unit_test(test_random_trees),
	};
	return cmocka_run_group_tests_name("json_dump", tests, NULL, NULL);
}
