/*
 * fuzz_http_request.c - libFuzzer target for the request-head parser every
 * server of ours reads with (src/http/parse.c: kft_http_head_parse,
 * kft_http_request_line, fields, query parameters, cookies), which reads
 * whatever a client on the network sends.
 *
 * The input, cut at its first blank line as the server core cuts a head
 * (and at 16 KiB, the largest head a server takes), is parsed; then:
 *   - the answer is 0, 400, 500 or 505, nothing else;
 *   - on 0 the method is 1 to 15 upper-case letters, the path starts with
 *     '/' and is no longer than the head (decoding only shrinks it), the
 *     Content-Length is -1 or a length, and a value read into a small
 *     buffer is never one a large buffer reads otherwise (query
 *     parameters; the header lookup);
 *   - kft_http_field_next walks every field line and each value lies
 *     within the head;
 *   - a cookie matcher only ever sees bytes of the head.
 * A violation is reported by abort() since the fuzzer needs a crash.
 *
 * `make fuzz-run FUZZER=fuzz_http_request SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_http_request.
 */
#define FUZZ_NAME "fuzz_http_request"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "http/http.h"

#define HEAD_MAX 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(bool found, const char *buf, size_t cap)
{
	if (found && strnlen(buf, cap) >= cap)
		fail("a value that does not fit its buffer", NULL);
}

static void params(const char *query)
{
	static const char *const names[] = {"token", "tail", "follow", "after", "q", ""};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char big[256], small[4];
		bool b = kft_http_query_value(query, names[i], big, sizeof(big));
		bool s = kft_http_query_value(query, names[i], small, sizeof(small));
		check_value(b, big, sizeof(big));
		check_value(s, small, sizeof(small));
		if (s && (!b || strcmp(big, small) != 0))
			fail("a short buffer accepted a value the long one reads otherwise", small);
	}
}

typedef struct span {
	const char *lo, *hi;
} span;

static bool within(const char *value, size_t len, void *ctx)
{
	const span *s = ctx;
	if (value < s->lo || value + len > s->hi)
		fail("a cookie value outside the head", NULL);
	return false;
}

static void fields(const kft_http_head *h)
{
	span s = {h->text, h->text + h->len};
	const char *pos = h->fields, *v;
	size_t len, n = 0;
	while (kft_http_field_next(&pos, "Cookie", &v, &len) && n++ < 1000)
		if (v < s.lo || v + len > s.hi)
			fail("a field value outside the head", NULL);
	kft_http_cookie_matches(h->fields, "kft_ui_token_8265", within, &s);
	char big[512], small[3];
	int b = kft_http_header(h->fields, "X-A", big, sizeof(big));
	int sm = kft_http_header(h->fields, "X-A", small, sizeof(small));
	if (sm == 1 && (b != 1 || strcmp(big, small) != 0))
		fail("a short buffer read a header the long one reads otherwise", small);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = size < HEAD_MAX ? size : HEAD_MAX;
	size_t end = kft_http_head_end((const char *)data, len);
	kft_http_head h;
	int rc = kft_http_head_parse((const char *)data, end ? end : len, &h);
	if (rc != 0 && rc != 400 && rc != 500 && rc != 505)
		fail("a verdict the server never gives", NULL);
	if (rc == 0) {
		size_t ml = strlen(h.method);
		if (ml == 0 || ml > 15 || strspn(h.method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != ml)
			fail("bad method", h.text);
		if (h.path[0] != '/' || strlen(h.path) > h.len)
			fail("bad path", h.text);
		if (h.content_length < -1)
			fail("a negative Content-Length accepted", h.text);
		params(h.query);
		fields(&h);
	}
	kft_http_head_free(&h);
	return 0;
}
