/*
 * fuzz_decode.c - libFuzzer target for the YAML/JSON decoder and the YAML
 * printer (include/kftrainer/decode.h).
 *
 * Any bytes must decode without crashing or leaking; when they do decode,
 * each document printed as YAML must decode back to an equal tree, and
 * util/json.c's writer must write the document as json_dumps does (the
 * store writes with it, jansson reads the rows back). A mismatch is a bug
 * in the decoder, the printer or the writer, and the fuzzer needs a crash to
 * report it, hence abort() here (never in library code).
 *
 * `make fuzz-run FUZZER=fuzz_decode SECONDS=300` (seeds in
 * tests/fuzz/corpus/fuzz_decode).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/decode.h"
#include "util/json.h"

static void fail(const char *what, const json_t *tree, const char *text, const kft_error *err)
{
	char *json = json_dumps(tree, JSON_ENCODE_ANY);

	fprintf(stderr, "fuzz_decode: %s\ntree: %s\nyaml:\n%s\nerror: %s\n", what,
	        json ? json : "?", text ? text : "(none)", err ? err->message : "");
	free(json);
	abort();
}

static void check_round_trip(const json_t *tree)
{
	kft_error err = {0};
	kft_doc_list again;
	char *text = kft_yaml_emit(tree, &err);

	if (!text)
		fail("a decoded tree could not be printed", tree, NULL, &err);
	if (kft_decode(text, strlen(text), "printed", &again, &err) < 0)
		fail("printed YAML does not decode", tree, text, &err);
	if (again.count != 1 || !json_equal(again.items[0].root, tree))
		fail("printed YAML decodes to a different tree", tree, text, NULL);
	kft_doc_list_free(&again);
	free(text);
}

static void check_writer(const json_t *tree)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	char *want = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!want || kft_json_dump(tree, &b) != 0 || strlen(want) != b.len ||
	    memcmp(want, b.buf, b.len) != 0)
		fail("kft_json_dump and json_dumps differ", tree, kft_strbuf_str(&b), NULL);
	free(want);
	kft_strbuf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kft_error err = {0};
	kft_doc_list docs;

	if (kft_decode((const char *)data, size, "fuzz", &docs, &err) < 0) {
		if (docs.items || docs.count || err.code == KFT_OK || !err.message[0])
			fail("a failed decode left documents or no message", NULL, NULL, &err);
		return 0;
	}
	for (size_t i = 0; i < docs.count; i++) {
		check_round_trip(docs.items[i].root);
		check_writer(docs.items[i].root);
	}
	kft_doc_list_free(&docs);
	return 0;
}
