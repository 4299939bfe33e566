/*
 * json_fixture.h - JSON helpers the unit tests share: a parse that fails the
 * test (naming the bad text) instead of returning NULL, and an equality
 * assert that prints both sides as sorted JSON, since cmocka alone would
 * only say the pointers differ. Include after <cmocka.h>; the functions are
 * static inline so a test may use either one.
 */
#ifndef KFT_TESTS_JSON_FIXTURE_H
#define KFT_TESTS_JSON_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

/* The value text holds; the caller owns the reference. Fails the current
 * test if text is not JSON. */
static inline json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (!v)
		fail_msg("bad test JSON (%s): %s", e.text, text);
	return v;
}

/* Fails the current test, printing both, unless got equals the JSON in
 * want_text. got stays the caller's. */
static inline void expect_json(const json_t *got, const char *want_text)
{
	json_t *want = parse(want_text);
	if (!json_equal((json_t *)got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		fprintf(stderr, "got:  %s\nwant: %s\n", g ? g : "(null)", w);
		free(g);
		free(w);
		json_decref(want);
		fail();
	}
	json_decref(want);
}

#endif
