/*
 * fuzz_list_page.c - libFuzzer target for kft_kube_list_scan
 * (src/kube/verbs.c), which reads the API server's List pages item by item
 * instead of as one tree.
 *
 * The input is a page's text. It is scanned in one piece and again fed to
 * the incremental reader in pieces cut where the input's own hash says (the
 * network cuts pages anywhere): both must give the same status, items and
 * metadata. When jansson also reads the whole text as an object (duplicate
 * keys refused, "\u0000" in strings allowed as the scanner allows it) whose
 * "items" is an array of objects or null, and there is no raw NUL byte,
 * then:
 *   - the scan succeeds;
 *   - it hands out exactly the array's items, equal and in order;
 *   - its metadata equals the object's "metadata" when that is an object.
 * A violation is reported by abort() since the fuzzer needs a crash; leaks
 * are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_list_page SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_list_page.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
	json_t *items;
} seen;

static int keep(void *ctx, json_t *item)
{
	seen *s = ctx;
	return json_array_append(s->items, item) ? KFT_ENOMEM : 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_list_page: %s\n", what);
	abort();
}

/* Whether the whole-tree reading is one the scanner must agree with. */
static int comparable(const json_t *whole, const uint8_t *data, size_t size)
{
	if (!json_is_object(whole) || memchr(data, '\0', size))
		return 0;
	const json_t *items = json_object_get(whole, "items");
	const json_t *md = json_object_get(whole, "metadata");
	if (md && !json_is_object(md))
		return 0;
	if (!items || json_is_null(items))
		return 1;
	if (!json_is_array(items))
		return 0;
	size_t i;
	const json_t *it;
	json_array_foreach(items, i, it) if (!json_is_object(it)) return 0;
	return 1;
}

/* The same page fed in pieces: cuts from an FNV-1a hash of the input. */
static int scan_in_pieces(const uint8_t *data, size_t size, seen *s, json_t **md)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	kft_kube_list_stream ls;
	kft_kube_list_stream_init(&ls, NULL, "list x", keep, s, NULL);
	size_t at = 0;
	while (at < size) {
		size_t n = (size_t)(h % 7);
		h = h * 6364136223846793005ULL + 1442695040888963407ULL;
		if (n > size - at)
			n = size - at;
		if (kft_kube_list_stream_feed(&ls, (const char *)data + at, n))
			break;
		at += n;
	}
	return kft_kube_list_stream_end(&ls, md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	seen s = {json_array()};
	json_t *md = NULL;
	if (!s.items)
		return 0;
	int rc = kft_kube_list_scan((const char *)data, size, "list x", keep, &s, &md, NULL);
	if (rc != 0 && (rc != KFT_EPARSE || md))
		fail("unexpected result");
	seen p = {json_array()};
	json_t *pmd = NULL;
	if (!p.items)
		abort();
	int prc = scan_in_pieces(data, size, &p, &pmd);
	if (prc != rc || !json_equal(p.items, s.items) || (md && !json_equal(md, pmd)) ||
	    (!md && pmd))
		fail("fed in pieces, the page reads differently");
	json_decref(p.items);
	json_decref(pmd);
	json_t *whole =
	        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	if (whole && comparable(whole, data, size)) {
		const json_t *items = json_object_get(whole, "items");
		if (rc != 0)
			fail("a List jansson reads was refused");
		if (json_array_size(s.items) != (items ? json_array_size(items) : 0))
			fail("item count differs");
		if (items && json_is_array(items) && !json_equal(s.items, (json_t *)items))
			fail("items differ");
		const json_t *wmd = json_object_get(whole, "metadata");
		if (wmd && !json_equal(md, (json_t *)wmd))
			fail("metadata differs");
	}
	json_decref(whole);
	json_decref(md);
	json_decref(s.items);
	return 0;
}
