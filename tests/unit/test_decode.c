/*
 * test_decode.c - unit tests for include/kftrainer/decode.h: YAML and JSON
 * decoding as kubectl does it, the bounds on untrusted input, error
 * positions, and the YAML printer's layout, quoting and round trip.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkstemp, ftruncate, pwrite */
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kftrainer/decode.h"

/* ---- helpers ---- */

static kft_doc_list decode_ok(const char *text)
{
	kft_doc_list docs;
	kft_error err = {0};
	int rc = kft_decode(text, strlen(text), "in", &docs, &err);
	if (rc != 0)
		fail_msg("decoding %s failed: %s", text, err.message);
	return docs;
}

/* The single document of `text`. */
static json_t *decode_one(const char *text)
{
	kft_doc_list docs = decode_ok(text);
	json_t *root;

	assert_int_equal(docs.count, 1);
	root = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return root;
}

static void expect_error_n(const char *text, size_t len, kft_status code, const char *message)
{
	kft_doc_list docs = {(kft_doc *)1, 99};
	kft_error err = {0};
	int rc = kft_decode(text, len, "in", &docs, &err);

	assert_int_equal(rc, code);
	assert_int_equal(err.code, code);
	assert_string_equal(err.message, message);
	assert_null(docs.items);
	assert_int_equal(docs.count, 0);
}

static void expect_error(const char *text, kft_status code, const char *message)
{
	expect_error_n(text, strlen(text), code, message);
}

/* Decodes "v: <yaml>" and compares v with the JSON text `want`. */
static void expect_decoded(const char *yaml, const char *want)
{
	char text[256];
	json_t *root, *expected = json_loads(want, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	assert_non_null(expected);
	snprintf(text, sizeof(text), "v: %s\n", yaml);
	root = decode_one(text);
	if (!json_equal(json_object_get(root, "v"), expected)) {
		char *got = json_dumps(json_object_get(root, "v"), JSON_ENCODE_ANY);
		fail_msg("v: %s decoded to %s, want %s", yaml, got, want);
	}
	json_decref(root);
	json_decref(expected);
}

static void expect_key(const char *yaml, const char *key)
{
	json_t *root = decode_one(yaml);
	if (!json_object_get(root, key))
		fail_msg("%s has no key \"%s\"", yaml, key);
	assert_int_equal(json_object_size(root), 1);
	json_decref(root);
}

static char *emit_ok(const json_t *tree)
{
	kft_error err = {0};
	char *text = kft_yaml_emit(tree, &err);
	if (!text)
		fail_msg("emit failed: %s", err.message);
	return text;
}

/* Prints tree, decodes the output and requires an equal tree back. */
static void expect_round_trip(const json_t *tree)
{
	char *text = emit_ok(tree);
	kft_doc_list docs;
	kft_error err = {0};

	if (kft_decode(text, strlen(text), "out", &docs, &err) != 0)
		fail_msg("printed YAML does not decode: %s\n%s", err.message, text);
	if (docs.count != 1 || !json_equal(docs.items[0].root, tree)) {
		char *want = json_dumps(tree, JSON_ENCODE_ANY);
		fail_msg("round trip changed the tree %s; printed:\n%s", want, text);
	}
	kft_doc_list_free(&docs);
	free(text);
}

/* Emits {"v": s} and compares the output with want. */
static void expect_emitted_string(const char *s, const char *want)
{
	json_t *tree = json_pack("{s:s}", "v", s);
	char *text = emit_ok(tree);

	assert_string_equal(text, want);
	expect_round_trip(tree);
	free(text);
	json_decref(tree);
}

/* ---- scalar resolution ---- */

static void test_nulls_and_booleans(void **state)
{
	static const char *nulls[] = {"null", "Null", "NULL", "~", ""};
	static const char *trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
	                              "on",   "On",   "ON",   "y",   "Y"};
	static const char *falses[] = {"false", "False", "FALSE", "no", "No", "NO",
	                               "off",   "Off",   "OFF",   "n",  "N"};
	(void)state;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		expect_decoded(nulls[i], "null");
	for (size_t i = 0; i < sizeof(trues) / sizeof(trues[0]); i++)
		expect_decoded(trues[i], "true");
	for (size_t i = 0; i < sizeof(falses) / sizeof(falses[0]); i++)
		expect_decoded(falses[i], "false");
	expect_decoded("yES", "\"yES\"");
	expect_decoded("tRUE", "\"tRUE\"");
	expect_decoded("nULL", "\"nULL\"");
	expect_decoded("\"true\"", "\"true\"");
	expect_decoded("'null'", "\"null\"");
}

static void test_integers(void **state)
{
	(void)state;
	expect_decoded("0", "0");
	expect_decoded("123", "123");
	expect_decoded("-17", "-17");
	expect_decoded("+5", "5");
	expect_decoded("0x1F", "31");
	expect_decoded("-0x10", "-16");
	expect_decoded("0o17", "15");
	expect_decoded("017", "15");
	expect_decoded("0b101", "5");
	expect_decoded("-0b101", "-5");
	expect_decoded("1_000", "1000");
	expect_decoded("9223372036854775807", "9223372036854775807");
	expect_decoded("-9223372036854775808", "-9223372036854775808");
	/* Out of int64 range: a real when the text is a valid number. */
	expect_decoded("9223372036854775808", "9223372036854775808.0");
	expect_decoded("18446744073709551615", "18446744073709551615.0");
	expect_decoded("-9223372036854775809", "-9223372036854775809.0");
	/* ... and a string otherwise, as go-yaml does. */
	expect_decoded("0x1FFFFFFFFFFFFFFFF", "\"0x1FFFFFFFFFFFFFFFF\"");
	expect_decoded("0x", "\"0x\"");
	expect_decoded("'123'", "\"123\"");
}

static void test_reals_and_strings(void **state)
{
	(void)state;
	expect_decoded("1.5", "1.5");
	expect_decoded("1.0", "1.0");
	expect_decoded("1e3", "1000.0");
	expect_decoded("-2.5E-3", "-0.0025");
	expect_decoded(".5", "0.5");
	expect_decoded("+.5", "0.5");
	expect_decoded("1.", "1.0");
	expect_decoded("089", "89.0"); /* not octal, so go-yaml reads a decimal real */
	expect_decoded("1e400", "\"1e400\"");
	expect_decoded("1.2.3", "\"1.2.3\"");
	expect_decoded("-x", "\"-x\"");
	expect_decoded("2024-01-01", "\"2024-01-01\"");
	expect_decoded("1:20", "\"1:20\"");
	expect_decoded("yes please", "\"yes please\"");
	expect_decoded("0x1p3", "\"0x1p3\"");
	expect_decoded("._5", "\"._5\"");
	expect_decoded("\"1.5\"", "\"1.5\"");
	expect_decoded("|\n  a\n  b", "\"a\\nb\\n\"");
	expect_decoded(">-\n  a\n  b", "\"a b\"");
}

static void test_nonfinite_rejected(void **state)
{
	(void)state;
	expect_error("a: 1\nb: .inf\n", KFT_EINVAL,
	             "in:2:4: .inf cannot be represented in JSON (no infinity or NaN)");
	expect_error("- -.Inf\n", KFT_EINVAL,
	             "in:1:3: -.Inf cannot be represented in JSON (no infinity or NaN)");
	expect_error("x: .NaN", KFT_EINVAL,
	             "in:1:4: .NaN cannot be represented in JSON (no infinity or NaN)");
	expect_decoded("'.inf'", "\".inf\"");
}

static void test_tags(void **state)
{
	(void)state;
	expect_decoded("!!str 12", "\"12\"");
	expect_decoded("!!str true", "\"true\"");
	expect_decoded("!!int \"12\"", "12");
	expect_decoded("!!float 1", "1.0");
	expect_decoded("!!float '2.5'", "2.5");
	expect_decoded("!!bool yes", "true");
	expect_decoded("!!null ~", "null");
	expect_decoded("! 12", "\"12\"");
	expect_decoded("!!map {a: 1}", "{\"a\": 1}");
	expect_decoded("!!seq [1]", "[1]");
	expect_error("v: !!int abc", KFT_EINVAL, "in:1:4: cannot decode !!str `abc` as a !!int");
	expect_error("v: !!bool 1", KFT_EINVAL, "in:1:4: cannot decode !!int `1` as a !!bool");
	expect_error("v: !!null x", KFT_EINVAL, "in:1:4: cannot decode !!str `x` as a !!null");
	expect_error("v: !foo x", KFT_EINVAL, "in:1:4: unsupported tag !foo on a scalar");
	expect_error("v: !!binary aGk=", KFT_EINVAL,
	             "in:1:4: unsupported tag !!binary on a scalar");
	expect_error("v: !!seq {}", KFT_EINVAL, "in:1:4: unsupported tag !!seq on a mapping");
	expect_error("v: !!map x", KFT_EINVAL, "in:1:4: unsupported tag !!map on a scalar");
	expect_error("v: !!float .inf", KFT_EINVAL,
	             "in:1:4: .inf cannot be represented in JSON (no infinity or NaN)");
}

/* ---- mappings ---- */

static void test_keys_become_strings(void **state)
{
	(void)state;
	expect_key("1: a", "1");
	expect_key("0x10: a", "16");
	expect_key("true: a", "true");
	expect_key("yes: a", "true");
	expect_key("on: a", "true");
	expect_key("Off: a", "false");
	expect_key("1.5: a", "1.5");
	expect_key("0.1: a", "0.1");
	expect_key("1e6: a", "1e+06");
	expect_key("100000: a", "100000");
	expect_key("\"1\": a", "1");
	expect_key("!!str yes: a", "yes");
	expect_error("~: a", KFT_EINVAL, "in:1:1: mapping key must not be null");
	expect_error("? [a]\n: b", KFT_EINVAL, "in:1:3: mapping key must be a scalar");
	expect_error("? {a: 1}\n: b", KFT_EINVAL, "in:1:3: mapping key must be a scalar");
	expect_error("a: &m {x: 1}\n*m : 2", KFT_EINVAL, "in:2:1: mapping key must be a scalar");
	expect_error("\"a\\0b\": 1", KFT_EINVAL, "in:1:1: mapping key contains a NUL character");
}

static void test_duplicate_keys(void **state)
{
	(void)state;
	expect_error("a: 1\nb: 2\na: 3\n", KFT_EINVAL, "in:3:1: key \"a\" already set in map");
	expect_error("x:\n  k: 1\n  'k': 2\n", KFT_EINVAL, "in:3:3: key \"k\" already set in map");
	expect_error("x: {a: 1, b: 2, b: 3}", KFT_EINVAL, "in:1:17: key \"b\" already set in map");
	expect_error("1: a\n\"1\": b", KFT_EINVAL, "in:2:1: key \"1\" already set in map");
	expect_error("{\"a\": 1,\n \"a\": 2}", KFT_EINVAL, "in:2:2: key \"a\" already set in map");
	expect_error("[{\"q\\\"\\\\\": 1, \"q\\\"\\\\\": 2}]", KFT_EINVAL,
	             "in:1:15: key \"q\\\"\\\\\" already set in map");
	expect_error("{\"\": 1, \"\": 2}", KFT_EINVAL, "in:1:9: key \"\" already set in map");
}

static void test_anchors_and_aliases(void **state)
{
	json_t *root;
	(void)state;

	root = decode_one("a: &x {k: [1, 2]}\nb: *x\nc: &s hello\nd: *s\n");
	assert_true(json_equal(json_object_get(root, "a"), json_object_get(root, "b")));
	assert_string_equal(json_string_value(json_object_get(root, "d")), "hello");
	/* Aliases are copies: changing one must not change the other. */
	assert_ptr_not_equal(json_object_get(root, "a"), json_object_get(root, "b"));
	json_array_append_new(json_object_get(json_object_get(root, "b"), "k"), json_integer(3));
	assert_int_equal(json_array_size(json_object_get(json_object_get(root, "a"), "k")), 2);
	json_decref(root);

	expect_error("a: 1\nb: *nope\n", KFT_EINVAL, "in:2:4: unknown anchor 'nope' referenced");
	/* Anchors are scoped to their document. */
	expect_error("a: &x 1\n---\nb: *x\n", KFT_EINVAL, "in:3:4: unknown anchor 'x' referenced");
	/* A collection cannot contain an alias to itself. */
	expect_error("a: &x [*x]\n", KFT_EINVAL, "in:1:8: unknown anchor 'x' referenced");
}

static void test_merge_keys(void **state)
{
	json_t *root, *want;
	(void)state;

	root = decode_one("base: &b {x: 1, y: 2}\n"
	                  "m1: {<<: *b, x: 9}\n"
	                  "m2: {x: 9, <<: *b}\n"
	                  "m3: {<<: [{x: 1}, {x: 2, z: 3}]}\n"
	                  "m4:\n  <<: {p: 1}\n  q: 2\n");
	want = json_loads("{\"base\": {\"x\": 1, \"true\": 2},"
	                  " \"m1\": {\"x\": 9, \"true\": 2},"
	                  " \"m2\": {\"x\": 9, \"true\": 2},"
	                  " \"m3\": {\"x\": 1, \"z\": 3},"
	                  " \"m4\": {\"p\": 1, \"q\": 2}}",
	                  0, NULL);
	assert_true(json_equal(root, want));
	json_decref(root);
	json_decref(want);

	expect_key("'<<': 1", "<<");
	expect_error("a:\n  <<: 5\n", KFT_EINVAL,
	             "in:2:3: map merge requires map or sequence of maps as the value");
	expect_error("a:\n  <<: [[1]]\n", KFT_EINVAL,
	             "in:2:3: map merge requires map or sequence of maps as the value");
	/* Merged keys may be overridden once, not twice. */
	expect_error("b: &b {x: 1}\nm: {<<: *b, x: 2, x: 3}", KFT_EINVAL,
	             "in:2:19: key \"x\" already set in map");
}

/* ---- streams ---- */

static void test_multi_document_stream(void **state)
{
	kft_doc_list docs;
	(void)state;

	docs = decode_ok("# lead\na: 1\n---\n---\n# only a comment\n---\n~\n--- \n  b: 2\n...\n");
	assert_int_equal(docs.count, 2);
	assert_int_equal(docs.items[0].line, 2);
	assert_int_equal(docs.items[1].line, 9);
	assert_int_equal(json_integer_value(json_object_get(docs.items[1].root, "b")), 2);
	kft_doc_list_free(&docs);
	kft_doc_list_free(&docs); /* a freed list stays empty and safe */
	assert_null(docs.items);
	kft_doc_list_free(NULL);

	docs = decode_ok("- a\n- b\n---\nplain text\n");
	assert_int_equal(docs.count, 2);
	assert_true(json_is_array(docs.items[0].root));
	assert_string_equal(json_string_value(docs.items[1].root), "plain text");
	kft_doc_list_free(&docs);
}

static void test_json_input(void **state)
{
	kft_doc_list docs;
	json_t *root;
	(void)state;

	docs = decode_ok(
	        "\n  {\"a\": 12345678901234, \"b\": 1.0, \"c\": \"yes\"}{\"d\": []}\n\n[1]\n");
	assert_int_equal(docs.count, 3);
	assert_int_equal(docs.items[0].line, 2);
	assert_int_equal(docs.items[2].line, 4);
	root = docs.items[0].root;
	assert_true(json_is_integer(json_object_get(root, "a")));
	assert_true(json_integer_value(json_object_get(root, "a")) == 12345678901234LL);
	assert_true(json_is_real(json_object_get(root, "b")));
	assert_string_equal(json_string_value(json_object_get(root, "c")), "yes");
	kft_doc_list_free(&docs);

	root = decode_one("\xEF\xBB\xBF{\"bom\": true}");
	assert_true(json_is_true(json_object_get(root, "bom")));
	json_decref(root);

	expect_error("{\"a\": 1,\n  \"b\" 2}", KFT_EPARSE, "in:2:8: ':' expected near '2'");
	expect_error("{\"a\": 1}\n{\"a\": [1, 2}", KFT_EPARSE, "in:2:13: ']' expected near '}'");
	expect_error("{\"a\": 1} 7", KFT_EPARSE, "in:1:11: '[' or '{' expected near '7'");
	expect_error("[1, 2", KFT_EPARSE, "in:1:6: ']' expected near end of file");
}

/* ---- untrusted input ---- */

static void test_encoding_errors(void **state)
{
	(void)state;
	expect_error("a: 1\nb: x\xFFy\n", KFT_EPARSE, "in:2:5: invalid UTF-8 (byte 0xff)");
	expect_error("a: \xC0\xAF", KFT_EPARSE, "in:1:4: invalid UTF-8 (byte 0xc0)");
	expect_error("a: \xED\xA0\x80", KFT_EPARSE, "in:1:4: invalid UTF-8 (byte 0xed)");
	expect_error("a: \xE2\x82", KFT_EPARSE, "in:1:4: invalid UTF-8 (byte 0xe2)");
	expect_error("{\"k\": \"\xF5\x80\x80\x80\"}", KFT_EPARSE,
	             "in:1:8: invalid UTF-8 (byte 0xf5)");
	expect_error_n("a: b\0c", 6, KFT_EPARSE, "in:1:5: NUL byte in input");
	expect_error("é: \x01", KFT_EPARSE, "in:1:4: control characters are not allowed");
	expect_decoded("\"caf\\u00e9 \\t\"", "\"caf\\u00e9 \\t\"");
	expect_decoded("\"a\\0b\"", "\"a\\u0000b\"");
}

static void test_empty_input(void **state)
{
	static const char *empties[] = {"",      "  \n\n",       "# just a comment\n",
	                                "---\n", "--- ~\n...\n", "\xEF\xBB\xBF"};
	(void)state;
	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++)
		expect_error(empties[i], KFT_EINVAL, "in: empty input: no objects found");
	expect_error_n(NULL, 0, KFT_EINVAL, "in: empty input: no objects found");
}

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_error("a: b: c\n", KFT_EPARSE,
	             "in:1:5: mapping values are not allowed in this context");
	expect_error(
	        "a: 1\nb: \"open\n", KFT_EPARSE,
	        "in:3:1: found unexpected end of stream (while scanning a quoted scalar at line 2 "
	        "column 4)");
	expect_error(
	        "a:\n  - 1\n  b: 2\n", KFT_EPARSE,
	        "in:3:3: did not find expected '-' indicator (while parsing a block collection at "
	        "line 2 column 3)");
}

static char *repeat(const char *unit, int times, const char *tail)
{
	size_t n = strlen(unit), t = strlen(tail);
	char *s = malloc(n * (size_t)times + t + 1);

	assert_non_null(s);
	for (int i = 0; i < times; i++)
		memcpy(s + n * (size_t)i, unit, n);
	memcpy(s + n * (size_t)times, tail, t + 1);
	return s;
}

static void test_depth_limit(void **state)
{
	char *text, *open, *close;
	json_t *root;
	(void)state;

	open = repeat("[", KFT_DECODE_MAX_DEPTH, "");
	close = repeat("]", KFT_DECODE_MAX_DEPTH, "");
	text = malloc(strlen(open) * 2 + 8);
	sprintf(text, "%s%s", open, close);
	root = decode_one(text); /* exactly the limit, JSON */
	json_decref(root);
	sprintf(text, "x: %s%s", open, close);
	expect_error(text, KFT_ELIMIT, "in:1:103: nesting deeper than 100 levels");
	sprintf(text, "[%s%s]", open, close);
	expect_error(text, KFT_ELIMIT, "in:1:101: nesting deeper than 100 levels");
	free(text);
	free(open);
	free(close);

	/* Block style, and far deeper than the limit: an error, not a crash. */
	text = repeat("- ", 100000, "x\n");
	expect_error(text, KFT_ELIMIT, "in:1:201: nesting deeper than 100 levels");
	free(text);

	/* An alias may not carry a tree past the limit either. */
	open = repeat("[", 60, "");
	close = repeat("]", 60, "");
	text = malloc(strlen(open) * 4 + 64);
	sprintf(text, "a: &deep %s%s\nb: %s*deep%s\n", open, close, open, close);
	expect_error(text, KFT_ELIMIT, "in:2:64: nesting deeper than 100 levels");
	free(text);
	free(open);
	free(close);
}

static void test_alias_bomb(void **state)
{
	char text[2048];
	size_t n = 0;
	kft_error err = {0};
	kft_doc_list docs;
	(void)state;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "a0: &a0 [lol, lol, lol, lol, lol]\n");
	for (int i = 1; i < 12; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
		                      "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i - 1,
		                      i - 1, i - 1, i - 1, i - 1);
	assert_int_equal(kft_decode(text, n, "in", &docs, &err), KFT_ELIMIT);
	assert_non_null(strstr(err.message, "document expands to too many nodes (alias bomb?)"));
	assert_null(docs.items);
}

static void test_count_limits(void **state)
{
	char *text;
	kft_error err = {0};
	kft_doc_list docs;
	(void)state;

	text = repeat("---\na: 1\n", KFT_DECODE_MAX_DOCUMENTS, "");
	docs = decode_ok(text);
	assert_int_equal(docs.count, KFT_DECODE_MAX_DOCUMENTS);
	kft_doc_list_free(&docs);
	free(text);
	text = repeat("---\na: 1\n", KFT_DECODE_MAX_DOCUMENTS + 1, "");
	expect_error(text, KFT_ELIMIT, "in:20002:1: more than 10000 documents");
	free(text);

	text = repeat("- 1\n", KFT_DECODE_MAX_NODES, "");
	assert_int_equal(kft_decode(text, strlen(text), "in", &docs, &err), KFT_ELIMIT);
	assert_string_equal(err.message, "in:1000000:3: more than 1000000 values in one input");
	free(text);
	text = repeat("1,", KFT_DECODE_MAX_NODES, "1]");
	text[0] = '[';
	assert_int_equal(kft_decode(text, strlen(text), "in", &docs, &err), KFT_ELIMIT);
	assert_non_null(strstr(err.message, "more than 1000000 values in one input"));
	free(text);
}

static void test_size_limit(void **state)
{
	size_t len = KFT_DECODE_MAX_INPUT_BYTES + 1;
	char *big = malloc(len);
	(void)state;

	assert_non_null(big);
	memset(big, ' ', len);
	expect_error_n(big, len, KFT_ELIMIT, "in: input is larger than 67108864 bytes (64 MiB)");
	free(big);
}

static void test_decode_file(void **state)
{
	char path[] = "/tmp/kft_test_decode_XXXXXX";
	int fd = mkstemp(path);
	kft_doc_list docs;
	kft_error err = {0};
	char want[128];
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a: 1\n---\nb: [\n", 14), 14);
	assert_int_equal(kft_decode_file(path, &docs, &err), KFT_EPARSE);
	snprintf(want, sizeof(want), "%s:4:1: did not find expected node content", path);
	assert_non_null(strstr(err.message, want));
	assert_null(docs.items);

	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "kind: Pod\n", 10, 0), 10);
	assert_int_equal(kft_decode_file(path, &docs, &err), 0);
	assert_int_equal(docs.count, 1);
	kft_doc_list_free(&docs);

	/* A sparse file one byte over the bound. */
	assert_int_equal(ftruncate(fd, (off_t)KFT_DECODE_MAX_INPUT_BYTES + 1), 0);
	assert_int_equal(kft_decode_file(path, &docs, &err), KFT_ELIMIT);
	close(fd);
	unlink(path);

	assert_int_equal(kft_decode_file("/nonexistent/x.yaml", &docs, &err), KFT_EIO);
	assert_string_equal(err.message, "/nonexistent/x.yaml: No such file or directory");
	assert_int_equal(kft_decode_file("/", &docs, &err), KFT_EIO);
}

/* ---- printing ---- */

static void test_emit_layout(void **state)
{
	json_t *tree = json_loads("{\"apiVersion\": \"v1\", \"kind\": \"Pod\","
	                          " \"metadata\": {\"name\": \"x\", \"labels\": {}},"
	                          " \"spec\": {\"containers\": [{\"name\": \"c\", \"args\": [\"1\","
	                          " \"true\", \"run\"], \"ports\": [{\"containerPort\": 80}]}],"
	                          " \"volumes\": [], \"nested\": [[1, 2], []], \"ratio\": 0.5,"
	                          " \"on\": null, \"ok\": false}}",
	                          0, NULL);
	const char *want = "apiVersion: v1\n"
	                   "kind: Pod\n"
	                   "metadata:\n"
	                   "  name: x\n"
	                   "  labels: {}\n"
	                   "spec:\n"
	                   "  containers:\n"
	                   "  - name: c\n"
	                   "    args:\n"
	                   "    - \"1\"\n"
	                   "    - \"true\"\n"
	                   "    - run\n"
	                   "    ports:\n"
	                   "    - containerPort: 80\n"
	                   "  volumes: []\n"
	                   "  nested:\n"
	                   "  - - 1\n"
	                   "    - 2\n"
	                   "  - []\n"
	                   "  ratio: 0.5\n"
	                   "  \"on\": null\n"
	                   "  ok: false\n";
	char *text;
	(void)state;

	assert_non_null(tree);
	text = emit_ok(tree);
	assert_string_equal(text, want);
	free(text);
	expect_round_trip(tree);
	json_decref(tree);
}

static void test_emit_quoting(void **state)
{
	(void)state;
	expect_emitted_string("plain words", "v: plain words\n");
	expect_emitted_string("true", "v: \"true\"\n");
	expect_emitted_string("no", "v: \"no\"\n");
	expect_emitted_string("y", "v: \"y\"\n");
	expect_emitted_string("123", "v: \"123\"\n");
	expect_emitted_string("0x1F", "v: \"0x1F\"\n");
	expect_emitted_string("1e3", "v: \"1e3\"\n");
	expect_emitted_string("null", "v: \"null\"\n");
	expect_emitted_string("~", "v: \"~\"\n");
	expect_emitted_string("", "v: \"\"\n");
	expect_emitted_string(".inf", "v: \".inf\"\n");
	expect_emitted_string("2024-01-31T10:00:00Z", "v: \"2024-01-31T10:00:00Z\"\n");
	expect_emitted_string("1:20", "v: \"1:20\"\n");
	expect_emitted_string("<<", "v: \"<<\"\n");
	expect_emitted_string(" a", "v: ' a'\n");
	expect_emitted_string("a ", "v: 'a '\n");
	expect_emitted_string("a: b", "v: 'a: b'\n");
	expect_emitted_string("- x", "v: '- x'\n");
	expect_emitted_string("#x", "v: '#x'\n");
	expect_emitted_string("a #x", "v: 'a #x'\n");
	expect_emitted_string("*x", "v: '*x'\n");
	expect_emitted_string("it's", "v: it's\n");
	expect_emitted_string("'", "v: ''''\n");
	expect_emitted_string("\"", "v: '\"'\n");
	expect_emitted_string("\t", "v: \"\\t\"\n");
	expect_emitted_string("a\r\nb", "v: \"a\\r\\nb\"\n");
	expect_emitted_string("naïve ✓", "v: naïve ✓\n");
	expect_emitted_string("line 1\nline 2\n", "v: |\n  line 1\n  line 2\n");
	expect_emitted_string("line 1\nline 2", "v: |-\n  line 1\n  line 2\n");
	expect_emitted_string("trailing \nspace", "v: \"trailing \\nspace\"\n");
	expect_emitted_string("  indented\nx\n", "v: |2\n    indented\n  x\n");
	expect_emitted_string("a\u2028b", "v: \"a\\Lb\"\n");
}

static void test_emit_numbers(void **state)
{
	json_t *tree = json_pack("[f,f,f,f,f,f,f,I,I,b,n]", 1.0, 0.1, 100.0, 1e300, -0.0, 2.5e-7,
	                         123456789.125, (json_int_t)INT64_MAX, (json_int_t)INT64_MIN, 1);
	char *text = emit_ok(tree);
	(void)state;

	assert_string_equal(text, "- 1.0\n- 0.1\n- 100.0\n- 1e+300\n- -0.0\n- 2.5e-07\n"
	                          "- 123456789.125\n- 9223372036854775807\n"
	                          "- -9223372036854775808\n- true\n- null\n");
	free(text);
	expect_round_trip(tree);
	json_decref(tree);
}

struct text {
	const char *s;
	size_t len;
};
#define TEXT(literal)                                                                              \
	{                                                                                          \
		literal, sizeof(literal) - 1                                                       \
	}

static const struct text tricky[] = {
        TEXT("no"),
        TEXT("on"),
        TEXT("0x1F"),
        TEXT("1e3"),
        TEXT(""),
        TEXT(" a"),
        TEXT("a: b"),
        TEXT("- x"),
        TEXT("#x"),
        TEXT("@x"),
        TEXT("`x"),
        TEXT("*x"),
        TEXT("&x"),
        TEXT("!x"),
        TEXT("%x"),
        TEXT("{x"),
        TEXT("[x"),
        TEXT("|x"),
        TEXT(">x"),
        TEXT("'"),
        TEXT("\""),
        TEXT("\t"),
        TEXT("é中文🙂"),
        TEXT("multi\nline\n"),
        TEXT("multi\nline"),
        TEXT("trail \nline"),
        TEXT("x\n\n"),
        TEXT("\n"),
        TEXT("\n\n"),
        TEXT(" \n"),
        TEXT("a\n b"),
        TEXT("a \n"),
        TEXT("---"),
        TEXT("..."),
        TEXT("--- x"),
        TEXT("? x"),
        TEXT(": x"),
        TEXT("-"),
        TEXT("?"),
        TEXT(":"),
        TEXT(",x"),
        TEXT("x,"),
        TEXT("a\\b"),
        TEXT("\\n"),
        TEXT("%"),
        TEXT("0"),
        TEXT("-0"),
        TEXT("+1"),
        TEXT("0o8"),
        TEXT("0b2"),
        TEXT("1_0"),
        TEXT("Yes"),
        TEXT("OFF"),
        TEXT("~"),
        TEXT("Null"),
        TEXT(".5"),
        TEXT("1."),
        TEXT("."),
        TEXT("="),
        TEXT("<<"),
        TEXT("x:"),
        TEXT("x :y"),
        TEXT("x#y"),
        TEXT("x #y"),
        TEXT("\r"),
        TEXT("\xc2\x85"),
        TEXT("\xe2\x80\xa9"),
        TEXT("\xef\xbb\xbf"
             "bom"),
        TEXT("\x7f"),
        TEXT("\x01"),
        TEXT("a\0b"),
        TEXT("2001-12-14"),
        TEXT("12:30:45"),
        TEXT("1_000:00"),
        TEXT("y"),
        TEXT("N"),
        TEXT("\"quoted\""),
        TEXT("'single'"),
        TEXT("[]"),
        TEXT("{}"),
        TEXT("- - x"),
        TEXT("a\n- b"),
        TEXT("  two\n  lines\n"),
        TEXT("\n leading"),
        TEXT("end space \n"),
        TEXT("tab\there"),
        TEXT("\xc2\xa0nbsp"),
        TEXT("x\n\n\ny"),
};

static void test_round_trip_tricky_strings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		const char *s = tricky[i].s;
		int len = (int)tricky[i].len;
		json_t *as_value = json_pack("{s:s#}", "k", s, len);
		json_t *as_key = json_object();
		json_t *in_list = json_pack("[[s#],{s:[s#]}]", s, len, "k", s, len);
		json_t *as_root = json_stringn(s, (size_t)len);

		assert_non_null(as_value);
		assert_non_null(in_list);
		assert_non_null(as_root);
		expect_round_trip(as_value);
		expect_round_trip(in_list);
		expect_round_trip(as_root);
		/* Keys may not hold NUL (JSON decoders reject them too). */
		if (!memchr(s, '\0', (size_t)len)) {
			json_object_setn_new(as_key, s, (size_t)len, json_integer(1));
			expect_round_trip(as_key);
		}
		json_decref(as_value);
		json_decref(as_key);
		json_decref(in_list);
		json_decref(as_root);
	}
}

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random strings made of the characters that matter to YAML. */
static void random_string(uint64_t *seed, char *buf, size_t size)
{
	static const char *const pieces[] = {" ",
	                                     "\n",
	                                     "\t",
	                                     ":",
	                                     "#",
	                                     "-",
	                                     "?",
	                                     "'",
	                                     "\"",
	                                     "a",
	                                     "0",
	                                     "1",
	                                     ".",
	                                     "e",
	                                     "|",
	                                     ">",
	                                     "!",
	                                     "&",
	                                     "*",
	                                     "%",
	                                     "@",
	                                     "`",
	                                     "{",
	                                     "}",
	                                     "[",
	                                     "]",
	                                     ",",
	                                     "\r",
	                                     "é",
	                                     "y",
	                                     "n",
	                                     "~",
	                                     "<",
	                                     "_",
	                                     "x",
	                                     "+",
	                                     "0x",
	                                     "1e",
	                                     "tr",
	                                     "ue",
	                                     "\xe2\x80\xa8",
	                                     "\xc2\x85",
	                                     "no",
	                                     "\\",
	                                     "\xef\xbb\xbf"};
	size_t n = 0, count = next_random(seed) % 9;

	for (size_t i = 0; i < count; i++) {
		const char *p = pieces[next_random(seed) % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t len = strlen(p);
		if (n + len >= size)
			break;
		memcpy(buf + n, p, len);
		n += len;
	}
	buf[n] = '\0';
}

static void test_round_trip_random(void **state)
{
	uint64_t seed = 0x9E3779B97F4A7C15ULL;
	char a[64], b[64];
	(void)state;

	for (int i = 0; i < 4000; i++) {
		json_t *tree;
		double d;
		uint64_t bits = next_random(&seed);

		random_string(&seed, a, sizeof(a));
		random_string(&seed, b, sizeof(b));
		memcpy(&d, &bits, sizeof(d));
		if (!isfinite(d))
			d = (double)(int64_t)bits;
		tree = json_pack("{s:s, s:[s, f, I], s:{s:s}}", a, b, "list", a, d,
		                 (json_int_t)bits, "nested", b, a);
		if (!tree) /* a and b collided as keys */
			continue;
		expect_round_trip(tree);
		json_decref(tree);
	}
}

static void test_emit_errors(void **state)
{
	kft_error err = {0};
	json_t *tree;
	(void)state;

	assert_null(kft_yaml_emit(NULL, &err));
	assert_int_equal(err.code, KFT_EINVAL);

	tree = json_pack("{s:o}", "bad", json_stringn_nocheck("\xff", 1));
	assert_null(kft_yaml_emit(tree, &err));
	assert_int_equal(err.code, KFT_EINVAL);
	assert_string_equal(err.message, "YAML output: string is not valid UTF-8");
	json_decref(tree);

	tree = json_object();
	json_object_setn_new(tree, "a\0b", 3, json_true());
	assert_null(kft_yaml_emit(tree, &err));
	assert_string_equal(err.message, "YAML output: object key contains a NUL character");
	json_decref(tree);

	tree = json_array();
	for (int i = 0; i < KFT_YAML_EMIT_MAX_DEPTH; i++) {
		json_t *outer = json_array();
		json_array_append_new(outer, tree);
		tree = outer;
	}
	assert_null(kft_yaml_emit(tree, &err));
	assert_int_equal(err.code, KFT_ELIMIT);
	json_decref(tree);
}

static void test_emit_file(void **state)
{
	FILE *f = tmpfile();
	json_t *tree = json_pack("{s:i}", "a", 1);
	char buf[64] = {0};
	kft_error err = {0};
	(void)state;

	assert_non_null(f);
	assert_int_equal(kft_yaml_emit_file(f, tree, 1, &err), 0);
	assert_int_equal(kft_yaml_emit_file(f, tree, 1, &err), 0);
	assert_int_equal(kft_yaml_emit_file(f, tree, 0, &err), 0);
	rewind(f);
	assert_int_equal(fread(buf, 1, sizeof(buf) - 1, f), 23);
	assert_string_equal(buf, "---\na: 1\n---\na: 1\na: 1\n");
	assert_int_equal(kft_yaml_emit_file(f, NULL, 1, &err), KFT_EINVAL);
	fclose(f);
	json_decref(tree);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nulls_and_booleans),
	        cmocka_unit_test(test_integers),
	        cmocka_unit_test(test_reals_and_strings),
	        cmocka_unit_test(test_nonfinite_rejected),
	        cmocka_unit_test(test_tags),
	        cmocka_unit_test(test_keys_become_strings),
	        cmocka_unit_test(test_duplicate_keys),
	        cmocka_unit_test(test_anchors_and_aliases),
	        cmocka_unit_test(test_merge_keys),
	        cmocka_unit_test(test_multi_document_stream),
	        cmocka_unit_test(test_json_input),
	        cmocka_unit_test(test_encoding_errors),
	        cmocka_unit_test(test_empty_input),
	        cmocka_unit_test(test_syntax_errors),
	        cmocka_unit_test(test_depth_limit),
	        cmocka_unit_test(test_alias_bomb),
	        cmocka_unit_test(test_count_limits),
	        cmocka_unit_test(test_size_limit),
	        cmocka_unit_test(test_decode_file),
	        cmocka_unit_test(test_emit_layout),
	        cmocka_unit_test(test_emit_quoting),
	        cmocka_unit_test(test_emit_numbers),
	        cmocka_unit_test(test_round_trip_tricky_strings),
	        cmocka_unit_test(test_round_trip_random),
	        cmocka_unit_test(test_emit_errors),
	        cmocka_unit_test(test_emit_file),
	};
	return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
