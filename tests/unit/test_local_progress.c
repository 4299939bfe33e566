/*
 * test_local_progress.c - the status file protocol (src/local/progress.c):
 * what a training process writes becomes upstream v2.3.0's TrainerStatus
 * (pkg/apis/trainer/v1alpha1/trainjob_types.go: progressPercentage 0-100,
 * estimatedRemainingSeconds >= 0, metrics of name/value strings of 1-64
 * characters, at most 256, lastUpdatedTime required), and nothing that
 * breaks those bounds gets through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_both_shapes),
	        cmocka_unit_test(test_bounds),
	        cmocka_unit_test(test_metric_count),
	};
	return cmocka_run_group_tests_name("local_progress", tests, NULL, NULL);
}
