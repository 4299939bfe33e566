/*
 * fuzz_ui_request.c - libFuzzer target for what `kftrainer ui` reads from a
 * request (src/ui/request.c): the head as a connection delivers it, then
 * the parameters, the token cookie and the API path's segments the server
 * and its routes take from it.
 *
 * The input is a head (up to its first blank line, as the server cuts it;
 * the rest is ignored). Promises checked, each an abort() when broken:
 *   - the verdict is 0 or one of the codes the server answers with
 *     (400, 500, 505);
 *   - an accepted head has a method, a path starting with '/', a Host, and
 *     a Content-Length that is absent (-1) or not negative;
 *   - a parameter or cookie value found fits its buffer, NUL-terminated,
 *     with no NUL inside; a value too long for a small buffer is refused,
 *     never cut short and accepted;
 *   - every segment the route splitter returns is non-empty, has no '/',
 *     and there are never more than asked for.
 * Leaks and overreads are the sanitizers'.
 *
 * `make fuzz-run FUZZER=fuzz_ui_request SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_ui_request.
 */
#define FUZZ_NAME "fuzz_ui_request"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ui/ui_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(bool found, const char *buf, size_t cap)
{
	if (!found)
		return;
	size_t l = strnlen(buf, cap);
	if (l >= cap)
		fail("a value that does not fit its buffer", NULL);
}

static void params(const char *query, const char *fields)
{
	static const char *const names[] = {"token", "tail",   "follow", "download",
	                                    "after", "status", "q",      ""};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char big[256], small[4];
		bool b = kft_ui_query_value(query, names[i], big, sizeof(big));
		bool s = kft_ui_query_value(query, names[i], small, sizeof(small));
		check_value(b, big, sizeof(big));
		check_value(s, small, sizeof(small));
		if (s && (!b || strcmp(big, small) != 0))
			fail("a short buffer accepted a value the long one reads otherwise", small);
	}
	char c1[128], c2[3];
	bool b = kft_ui_cookie(fields, "kft_ui_token", c1, sizeof(c1));
	bool s = kft_ui_cookie(fields, "kft_ui_token", c2, sizeof(c2));
	check_value(b, c1, sizeof(c1));
	check_value(s, c2, sizeof(c2));
	if (s && (!b || strcmp(c1, c2) != 0))
		fail("a short buffer accepted a cookie the long one reads otherwise", c2);
}

static void segments(const char *path)
{
	for (int max = 1; max <= 6; max += 5) {
		char *copy = NULL, *seg[6];
		int n = kft_ui_split(path, &copy, seg, max);
		if (n > max)
			fail("more segments than asked for", path);
		for (int i = 0; i < n; i++)
			if (!*seg[i] || strchr(seg[i], '/'))
				fail("an empty segment or one with '/'", path);
		free(copy);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	size_t len = size;
	for (size_t i = 0; i + 3 < size; i++)
		if (memcmp(text + i, "\r\n\r\n", 4) == 0) {
			len = i + 4;
			break;
		}
	kft_ui_request r;
	int rc = kft_ui_request_parse(text, len, &r);
	if (rc != 0 && rc != 400 && rc != 500 && rc != 505)
		fail("a verdict the server never gives", NULL);
	if (rc == 0) {
		if (!r.method[0] || !r.path || r.path[0] != '/')
			fail("an accepted head without method or path", r.path);
		if (r.content_length < -1)
			fail("a negative Content-Length accepted", NULL);
		params(r.query, r.fields);
		if (strncmp(r.path, "/api/", 5) == 0)
			segments(r.path + 5);
	}
	/* the parameters of whatever the query part held, even when refused */
	if (r.query && r.fields)
		params(r.query, r.fields);
	kft_ui_request_free(&r);
	return 0;
}
