/*
 * fuzz_ui_request.c - libFuzzer target for who may ask the dashboard
 * (src/ui/request.c: kft_ui_admit over a head the core parsed) and the API
 * path's segments (kft_ui_split): bytes any local process, or off loopback
 * anyone, may send.
 *
 * Promises checked on every input the parser accepts:
 *   - the verdict is 0 (let through), 303, 401, 403 or 413, and every
 *     refusal comes with its answer;
 *   - nothing is let through (0 or the 303 that sets the cookie) unless the
 *     token is somewhere in the head: the gate never opens by accident;
 *   - a POST is let through only with the CSRF token in the head;
 *   - path segments are non-empty, hold no '/', and never more than asked.
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

#define TOKEN "0123abcd"
#define CSRF  "c5rf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

/* Whether the head's bytes hold s anywhere (the parsed head's text is cut
 * after the request target, so the fields are searched in the input). */
static bool in_head(const uint8_t *data, size_t len, const char *s)
{
	return memmem(data, len, s, strlen(s)) != NULL;
}

static void gate(const kft_http_head *h, const uint8_t *data, size_t len, bool loopback,
                 const char *public_origin)
{
	kft_ui_gate g = {.token = TOKEN,
	                 .csrf = CSRF,
	                 .cookie = "kft_ui_token_8265",
	                 .loopback = loopback,
	                 .public_origin = public_origin,
	                 .public_host = public_origin ? public_origin + 8 : NULL};
	kft_http_req r = {.head = h, .body = ""};
	kft_http_answer a = {0};
	int rc = kft_ui_admit(&g, &r, &a);
	if (rc != 0 && rc != 303 && rc != 401 && rc != 403 && rc != 413)
		fail("a verdict the gate never gives", NULL);
	if (rc != 0 && (a.code != rc || !a.body))
		fail("a refusal without its answer", NULL);
	free(a.body);
	if ((rc == 0 || rc == 303) && !in_head(data, len, TOKEN))
		fail("let through without the token", h->text);
	if (rc == 0 && strcmp(h->method, "POST") == 0 && !in_head(data, len, CSRF))
		fail("an action let through without the CSRF token", h->text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t end = kft_http_head_end((const char *)data, size);
	size_t len = end ? end : size;
	kft_http_head h;
	if (kft_http_head_parse((const char *)data, len, &h) == 0) {
		gate(&h, data, len, true, NULL);
		gate(&h, data, len, false, NULL);
		gate(&h, data, len, true, "https://dash.example");
		if (strncmp(h.path, "/api/", 5) == 0)
			segments(h.path + 5);
	}
	kft_http_head_free(&h);
	return 0;
}
