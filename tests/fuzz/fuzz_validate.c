/*
 * fuzz_validate.c - libFuzzer target for the decoder and the validator
 * together: whatever bytes arrive, decoding, defaulting, validating and
 * formatting the errors must neither crash nor leak. `make fuzz-run
 * FUZZER=fuzz_validate SECONDS=600` runs it over tests/fuzz/corpus/fuzz_validate.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kftrainer/corev1.h"
#include "kftrainer/decode.h"
#include "kftrainer/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const kft_schema *schema, json_t *obj)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	/* The object is validated twice: as a create, then as an update against
	 * a copy of itself. A valid object must stay valid when "updated" to
	 * itself: no transition rule may fire on an unchanged object. */
	json_t *old = json_deep_copy(obj);
	kft_object_check(schema, obj, NULL, &errs, NULL);
	/* what validate and train add for a TrainJob's pods */
	kft_corev1_check_env(json_object_get(obj, "spec"), "spec", &errs);
	size_t first = errs.count;
	for (size_t i = 0; i < errs.count; i++)
		free(kft_field_error_format(&errs.items[i]));
	if (old) {
		kft_field_errors_free(&errs);
		kft_object_check(schema, old, obj, &errs, NULL);
		if (first == 0 && errs.count != 0)
			abort();
	}
	kft_field_errors_free(&errs);
	json_decref(old);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const kft_schema *schema = kft_schema_builtin(NULL);
	if (!schema)
		abort();
	kft_doc_list docs = {0};
	if (kft_decode((const char *)data, size, "fuzz", &docs, NULL) != 0)
		return 0;
	for (size_t i = 0; i < docs.count; i++) {
		json_t *items = kft_object_list_items(docs.items[i].root);
		if (items) {
			size_t j;
			json_t *item;
			json_array_foreach(items, j, item) check(schema, item);
		} else {
			check(schema, docs.items[i].root);
		}
	}
	kft_doc_list_free(&docs);
	return 0;
}
