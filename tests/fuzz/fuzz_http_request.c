/*
 * fuzz_http_request.c - libFuzzer target for the request-head parser of the
 * controller's health and metrics servers, kft_http_request_line
 * (src/controller/httpd.c), which reads whatever a client on the network
 * sends.
 *
 * The input, cut at its first NUL and at 8 KiB as the servers cut it, is
 * parsed; then:
 *   - the answer is 0, 400 or 505, nothing else;
 *   - on 0 the method is 1 to 15 upper-case letters and the path starts
 *     with '/' and is no longer than the head (decoding only shrinks it).
 * A violation is reported by abort() since the fuzzer needs a crash.
 *
 * `make fuzz-run FUZZER=fuzz_http_request SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_http_request.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/http.h"

#define HEAD_MAX 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *head)
{
	fprintf(stderr, "fuzz_http_request: %s\nhead: %.200s\n", what, head);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > HEAD_MAX)
		size = HEAD_MAX;
	char *head = malloc(size + 1), *path = malloc(size + 1);
	if (!head || !path) {
		free(head);
		free(path);
		return 0;
	}
	memcpy(head, data, size);
	head[size] = '\0';
	char method[16];
	int rc = kft_http_request_line(head, method, path);
	if (rc != 0 && rc != 400 && rc != 505)
		fail("unexpected answer", head);
	if (rc == 0) {
		size_t ml = strlen(method);
		if (ml == 0 || ml > 15 || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != ml)
			fail("bad method", head);
		if (path[0] != '/' || strlen(path) > strlen(head))
			fail("bad path", head);
	}
	free(head);
	free(path);
	return 0;
}
