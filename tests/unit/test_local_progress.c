/*
 * test_local_progress.c - the status file protocol (src/local/progress.c):
 * what a training process writes becomes upstream v2.3.0's TrainerStatus
 * (pkg/apis/trainer/v1alpha1/trainjob_types.go: progressPercentage 0-100,
 * estimatedRemainingSeconds >= 0, metrics of name/value strings of 1-64
 * characters, at most 256, lastUpdatedTime required), and nothing that
 * breaks those bounds gets through. Also the initializers' download progress
 * lines (local.h): what the initializer writes the CLI recognises, and
 * nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "local/local.h"
#include "local/local_internal.h"

#define NOW "2026-01-02T03:04:05Z"

static void test_both_shapes(void **state)
{
	(void)state;
	json_t *a = kft_local_parse_report(
	        "{\"trainerStatus\":{\"progressPercentage\":42,\"metrics\":[{\"name\":\"loss\","
	        "\"value\":\"0.5\"}],\"extra\":1}}",
	        NOW);
	json_t *b = kft_local_parse_report("{\"progressPercentage\":42,\"metrics\":[{\"name\":"
	                                   "\"loss\",\"value\":\"0.5\"}]}",
	                                   NOW);
	assert_non_null(a);
	assert_true(json_equal(a, b));
	assert_null(json_object_get(a, "extra")); /* unknown keys are dropped */
	assert_string_equal(json_string_value(json_object_get(a, "lastUpdatedTime")), NOW);
	json_decref(a);
	json_decref(b);
	a = kft_local_parse_report("{\"estimatedRemainingSeconds\":0,"
	                           "\"lastUpdatedTime\":\"2025-05-06T07:08:09Z\"}",
	                           NOW);
	assert_string_equal(json_string_value(json_object_get(a, "lastUpdatedTime")),
	                    "2025-05-06T07:08:09Z");
	json_decref(a);
	a = kft_local_parse_report("{\"lastUpdatedTime\":\"yesterday\"}", NOW);
	assert_string_equal(json_string_value(json_object_get(a, "lastUpdatedTime")), NOW);
	json_decref(a);
}

static void test_bounds(void **state)
{
	(void)state;
	static const char *const bad[] = {
	        "",
	        "not json",
	        "[1,2]",
	        "{\"trainerStatus\":7}",
	        "{\"progressPercentage\":101}",
	        "{\"progressPercentage\":-1}",
	        "{\"progressPercentage\":\"50\"}",
	        "{\"estimatedRemainingSeconds\":-5}",
	        "{\"estimatedRemainingSeconds\":2147483648}",
	        "{\"metrics\":{}}",
	        "{\"metrics\":[{\"name\":\"loss\"}]}",
	        "{\"metrics\":[{\"name\":\"\",\"value\":\"1\"}]}",
	        "{\"metrics\":[{\"name\":\"loss\",\"value\":1}]}",
	        "{\"metrics\":[{\"name\":\"loss\",\"value\":"
	        "\"12345678901234567890123456789012345678901234567890123456789012345\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *got = kft_local_parse_report(bad[i], NOW);
		if (got)
			fail_msg("accepted: %s", bad[i]);
	}
	assert_null(kft_local_parse_report(NULL, NOW));
}

static void test_metric_count(void **state)
{
	(void)state;
	char *text = malloc(300 * 40 + 64);
	for (int n = 256; n <= 257; n++) {
		size_t len = (size_t)sprintf(text, "{\"metrics\":[");
		for (int i = 0; i < n; i++)
			len += (size_t)sprintf(text + len, "%s{\"name\":\"m%d\",\"value\":\"1\"}",
			                       i ? "," : "", i);
		sprintf(text + len, "]}");
		json_t *got = kft_local_parse_report(text, NOW);
		if (n == 256)
			assert_int_equal(json_array_size(json_object_get(got, "metrics")), 256);
		else
			assert_null(got);
		json_decref(got);
	}
	free(text);
}

/* Progress lines round-trip through format and parse (ours: upstream's
 * initializers log with Python's tqdm, which a log file cannot redraw). */
static void test_progress_lines(void **state)
{
	(void)state;
	char buf[256];
	size_t what = 0;
	int pct = 0;
	kft_local_progress_format(buf, sizeof(buf), "dataset", "train.csv", 12900000, 41943040);
	assert_string_equal(
	        buf, "dataset-initializer: downloading train.csv: 12.3 MiB / 40.0 MiB (30%)");
	assert_true(kft_local_progress_parse(buf, strlen(buf), &what, &pct));
	assert_int_equal(pct, 30);
	assert_string_equal(buf + what, "train.csv: 12.3 MiB / 40.0 MiB (30%)");
	kft_local_progress_format(buf, sizeof(buf), "model", "w.bin", 512, 0);
	assert_string_equal(buf, "model-initializer: downloading w.bin: 512 B");
	assert_true(kft_local_progress_parse(buf, strlen(buf), &what, &pct));
	assert_int_equal(pct, -1);
	kft_local_progress_format(buf, sizeof(buf), "model", "w.bin", 2048, 2048);
	assert_true(kft_local_progress_parse(buf, strlen(buf), &what, &pct));
	assert_int_equal(pct, 100);
	static const char *const not_progress[] = {
	        "fetched train.csv (10 bytes)",
	        "dataset-initializer: downloading",
	        "dataset-initializer: downloading x",
	        "dataset-initializer: downloading x: 1 MiB / 2 MiB (150%)",
	        "dataset-initializer: downloading x: 1 MiB / 2 MiB (%)",
	        "dataset-initializer: downloading x: 1 MiB / 2 MiB 5%)",
	        "node: downloading x: 1 MiB / 2 MiB (5%)",
	        "[node-0] dataset-initializer: downloading x: 1 MiB (5%)",
	};
	for (size_t i = 0; i < sizeof(not_progress) / sizeof(not_progress[0]); i++)
		if (kft_local_progress_parse(not_progress[i], strlen(not_progress[i]), &what, &pct))
			fail_msg("taken for a progress line: %s", not_progress[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_both_shapes),
	        cmocka_unit_test(test_bounds),
	        cmocka_unit_test(test_metric_count),
	        cmocka_unit_test(test_progress_lines),
	};
	return cmocka_run_group_tests_name("local_progress", tests, NULL, NULL);
}
