/*
 * fuzz_kube_status.c - libFuzzer target for the mapping of API server error
 * answers to statuses and messages (kft_kube_map_status, src/kube/request.c),
 * which every failed request and every watch ERROR event goes through.
 *
 * Input: a first line with the HTTP status code in decimal, then the body as
 * the server sent it (any bytes, not NUL-terminated). Checked, besides no
 * crash and no leak:
 *   - the result is always an error, equal to err->code, with a message, and
 *     the same with a NULL kft_error;
 *   - the status class follows the code as the kube.h table says (404, 409,
 *     410, 401/403, 429/5xx, anything else is "invalid");
 *   - a Status body with a message is passed on word for word (up to the
 *     message buffer's size), since it is what the user must read;
 *   - any other body is only quoted as printable characters after our own
 *     "WHAT: HTTP CODE" prefix, so a hostile body cannot put control bytes
 *     into logs.
 * Violations abort() because the fuzzer needs a crash (never in library code).
 *
 * `make fuzz-run FUZZER=fuzz_kube_status SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_kube_status.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"

#define WHAT "GET https://127.0.0.1:6443/api/v1/namespaces/default/pods/x"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, long code, const kft_error *err)
{
	fprintf(stderr, "fuzz_kube_status: %s (code %ld, status %d, message \"%s\")\n", what, code,
	        (int)err->code, err->message);
	abort();
}

/* The statuses kube.h promises for an HTTP code; 409 may be either. */
static int class_ok(long code, int rc)
{
	if (code == 404)
		return rc == KFT_ENOTFOUND;
	if (code == 409)
		return rc == KFT_ECONFLICT || rc == KFT_EEXIST;
	if (code == 410)
		return rc == KFT_EGONE;
	if (code == 401 || code == 403)
		return rc == KFT_EDENIED;
	if (code == 429 || (code >= 500 && code <= 599))
		return rc == KFT_EUNAVAILABLE;
	return rc == KFT_EINVAL;
}

/* The message of a Status body, or NULL; *st keeps the tree alive. */
static const char *status_message(const char *body, size_t len, json_t **st)
{
	*st = len ? json_loadb(body, len, 0, NULL) : NULL;
	const char *kind = json_string_value(json_object_get(*st, "kind"));
	const char *msg = json_string_value(json_object_get(*st, "message"));
	return kind && strcmp(kind, "Status") == 0 && msg && *msg ? msg : NULL;
}

static void check_message(long code, const char *body, size_t len, const kft_error *err)
{
	json_t *st;
	const char *msg = status_message(body, len, &st);
	if (msg && strncmp(err->message, msg, sizeof(err->message) - 1) != 0)
		fail("a Status message was not passed on as sent", code, err);
	if (!msg) {
		char prefix[128];
		snprintf(prefix, sizeof(prefix), "%s: HTTP %ld", WHAT, code);
		if (strncmp(err->message, prefix, strlen(prefix)) != 0)
			fail("a non-Status answer lost the request and code", code, err);
		for (const char *p = err->message; *p; p++)
			if (!isprint((unsigned char)*p))
				fail("a non-Status answer put a control byte in the message", code,
				     err);
	}
	json_decref(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	if (!nl || nl - (const char *)data > 20)
		return 0;
	char head[24];
	memcpy(head, data, (size_t)(nl - (const char *)data));
	head[nl - (const char *)data] = '\0';
	char *end;
	long code = strtol(head, &end, 10);
	if (end == head || *end)
		return 0;
	const char *body = nl + 1;
	size_t len = size - (size_t)(body - (const char *)data);

	kft_error err;
	kft_error_clear(&err);
	int rc = kft_kube_map_status(code, len ? body : NULL, len, WHAT, &err);
	if (rc >= 0 || rc != (int)err.code || !err.message[0])
		fail("not an error with a message", code, &err);
	if (!class_ok(code, rc))
		fail("the status does not follow the HTTP code", code, &err);
	if (kft_kube_map_status(code, len ? body : NULL, len, WHAT, NULL) != rc)
		fail("the status depends on whether an error is asked for", code, &err);
	check_message(code, body, len, &err);
	return 0;
}
