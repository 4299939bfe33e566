/*
 * fuzz_watch_stream.c - libFuzzer target for the watch stream parser
 * (src/kube/watch.c), driven through kft_kube_watch_parse, which runs the
 * same line splitter and event decoder the network path feeds from curl.
 *
 * The input is a watch response body. It is parsed three times: in one
 * piece, one byte at a time, and cut at points chosen from the input's own
 * hash (empty pieces included). The network hands the parser arbitrary cuts,
 * so all three must report the same events in the same order and end with
 * the same status and message; each event must be a known type with an
 * object carrying a string kind and apiVersion. A difference is a parser bug
 * and the fuzzer needs a crash to report it, hence abort() (never in library
 * code). An object named "stop" makes the callback ask to stop, so the
 * early-exit path is covered too. Strings may hold "\u0000" (decoded, kept);
 * an event whose object has a NUL in a key is skipped, in every cutting
 * alike (the corpus has both).
 *
 * `make fuzz-run FUZZER=fuzz_watch_stream SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_watch_stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"
#include "util/strbuf.h"

#define STOP_STATUS 7

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(const char *type)
{
	return strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 ||
	       strcmp(type, "DELETED") == 0 || strcmp(type, "BOOKMARK") == 0;
}

/* Appends one event to the transcript (a kft_strbuf) after checking it. */
static int on_event(void *ctx, const char *type, const json_t *obj)
{
	kft_strbuf *log = ctx;
	if (!type || !known(type) || !json_is_object(obj) ||
	    !json_string_value(json_object_get(obj, "kind")) ||
	    !json_string_value(json_object_get(obj, "apiVersion"))) {
		fprintf(stderr, "fuzz_watch_stream: a bad event reached the callback\n");
		abort();
	}
	char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	kft_strbuf_printf(log, "%s %s\n", type, text ? text : "?");
	free(text);
	const char *name =
	        json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	return name && strcmp(name, "stop") == 0 ? STOP_STATUS : 0;
}

/* Parses the chunks and returns the transcript: events, then the outcome. */
static char *transcript(const char *const *chunks, const size_t *lens, size_t n)
{
	static const kft_gvr *gvr;
	if (!gvr)
		gvr = kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainJob");
	if (!gvr)
		abort();
	kft_strbuf log;
	kft_strbuf_init(&log);
	kft_error err;
	kft_error_clear(&err);
	int rc = kft_kube_watch_parse(gvr, chunks, lens, n, on_event, &log, &err);
	if (rc != 0 && rc != STOP_STATUS && (rc != (int)err.code || !err.message[0])) {
		fprintf(stderr, "fuzz_watch_stream: status %d but error %d \"%s\"\n", rc,
		        (int)err.code, err.message);
		abort();
	}
	kft_strbuf_printf(&log, "=> %d %s\n", rc, rc != 0 && rc != STOP_STATUS ? err.message : "");
	char *s = kft_strbuf_detach(&log);
	if (!s)
		abort();
	return s;
}

static uint64_t hash(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h | 1;
}

/* Cuts data into n pieces, one byte each (`mode` 0) or of pseudo-random
 * lengths 0..15 (`mode` 1); returns the count. */
static size_t cut(const uint8_t *data, size_t size, int mode, const char **chunks, size_t *lens)
{
	uint64_t x = hash(data, size);
	size_t n = 0, at = 0;
	while (at < size) {
		size_t len = 1;
		if (mode) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			len = (size_t)(x % 16);
			if (len == 0 && n > 0 && lens[n - 1] == 0)
				len = 1; /* no two empty pieces in a row: n stays bounded */
		}
		if (len > size - at)
			len = size - at;
		chunks[n] = (const char *)data + at;
		lens[n++] = len;
		at += len;
	}
	return n;
}

static void compare(const char *whole, const char *pieces, const char *how)
{
	if (strcmp(whole, pieces) == 0)
		return;
	fprintf(stderr, "fuzz_watch_stream: parsed whole and %s differ\nwhole:\n%s\n%s:\n%s\n", how,
	        whole, how, pieces);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An empty piece is never followed by another: at most 2 per byte. */
	size_t max = size * 2 + 1;
	const char **chunks = malloc(max * sizeof(*chunks));
	size_t *lens = malloc(max * sizeof(*lens));
	if (!chunks || !lens)
		abort();
	const char *one = (const char *)data;
	char *whole = transcript(&one, &size, 1);
	size_t n = cut(data, size, 0, chunks, lens);
	char *bytes = transcript(chunks, lens, n);
	compare(whole, bytes, "byte by byte");
	n = cut(data, size, 1, chunks, lens);
	char *random = transcript(chunks, lens, n);
	compare(whole, random, "in random pieces");
	free(whole);
	free(bytes);
	free(random);
	free(chunks);
	free(lens);
	return 0;
}
