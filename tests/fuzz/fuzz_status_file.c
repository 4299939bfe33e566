/*
 * fuzz_status_file.c - libFuzzer target for the local backend's progress
 * reports: what a training process writes to $KFTRAINER_STATUS_FILE, read by
 * kft_local_parse_report (src/local/progress.c).
 *
 * The input is the file's content (the engine reads at most 64 KiB and ends
 * it with a NUL, so the input is cut at its first NUL the same way). A
 * report is either refused (NULL) or turned into a TrainerStatus, and then:
 *   - it holds only the schema's keys and an RFC 3339 lastUpdatedTime;
 *   - a TrainJob carrying it as status.trainerStatus passes our schema
 *     validation and CEL rules (standing in for the API server's), since
 *     the report ends up there;
 *   - reading the produced status back as a report gives it unchanged.
 * A violation is reported by abort() since the fuzzer needs a crash (never
 * in library code); leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_status_file SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_status_file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/conditions.h"
#include "kftrainer/schema.h"
#include "kftrainer/validation.h"
#include "local/local_internal.h"
#include "util/rfc3339.h"

#define NOW        "2026-11-21T13:00:00Z"
#define MAX_REPORT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const json_t *status)
{
	char *text = status ? json_dumps(status, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	fprintf(stderr, "fuzz_status_file: %s\nstatus: %s\n", what, text ? text : "(none)");
	free(text);
	abort();
}

static void check_shape(const json_t *ts)
{
	static const char *const known[] = {"progressPercentage", "estimatedRemainingSeconds",
	                                    "metrics", "lastUpdatedTime"};
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ts, k, v)
	{
		size_t i = 0;
		while (i < 4 && strcmp(known[i], k) != 0)
			i++;
		if (i == 4)
			fail("a key outside the TrainerStatus schema was kept", ts);
	}
	const char *t = json_string_value(json_object_get(ts, "lastUpdatedTime"));
	int64_t ms;
	if (!t || kft_rfc3339_parse_ms(t, &ms, NULL) != 0)
		fail("lastUpdatedTime is missing or not RFC 3339", ts);
}

/* Validates a small valid TrainJob carrying ts; returns the error count. */
static size_t schema_errors(const json_t *ts)
{
	const kft_schema *schema = kft_schema_builtin(NULL);
	const kft_kind_info *kind =
	        schema ? kft_schema_find_kind(schema, "trainer.kubeflow.org/v1alpha1", "TrainJob")
	               : NULL;
	json_t *tj = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:s}}}", "apiVersion",
	                       "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
	                       "name", "job", "namespace", "default", "spec", "runtimeRef", "name",
	                       "torch-distributed");
	if (!kind || !tj)
		abort();
	if (ts)
		json_object_set_new(tj, "status", json_pack("{s:O}", "trainerStatus", ts));
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_schema_default(schema, kind, tj);
	kft_schema_validate(schema, kind, tj, NULL, &errs);
	if (!kft_field_errors_blocking(&errs))
		kft_schema_validate_rules(schema, kind, tj, NULL, &errs);
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		fprintf(stderr, "fuzz_status_file: %s\n", line ? line : "?");
		free(line);
	}
	size_t n = errs.count;
	kft_field_errors_free(&errs);
	json_decref(tj);
	return n;
}

static void check_read_back(const json_t *ts)
{
	char *text = json_dumps(ts, JSON_COMPACT);
	json_t *again = text ? kft_local_parse_report(text, "2000-01-01T00:00:00Z") : NULL;
	if (!again || !json_equal(again, ts))
		fail("the produced status does not read back unchanged", ts);
	json_decref(again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fixture_checked;
	if (!fixture_checked && schema_errors(NULL) != 0)
		fail("the TrainJob fixture itself is invalid", NULL);
	fixture_checked = 1;
	if (size > MAX_REPORT)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	json_t *ts = kft_local_parse_report(text, NOW);
	if (ts) {
		if (!json_is_object(ts))
			fail("a report became something other than an object", ts);
		check_shape(ts);
		if (schema_errors(ts) != 0)
			fail("a report the schema refuses was accepted", ts);
		check_read_back(ts);
	}
	json_decref(ts);
	free(text);
	return 0;
}
