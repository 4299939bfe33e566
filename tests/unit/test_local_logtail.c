/*
 * test_local_logtail.c - the last lines of a failed pod's log
 * (src/local/logtail.c) that go into its failure message: only the attempt
 * that failed, at most the last 2,048 bytes (the kubelet's
 * FallbackToLogsOnError bound) and the lines asked for, each indented, and
 * always text a JSON string and a terminal can hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/local_internal.h"

static char path[64];

static void write_log(const char *text, size_t len)
{
	snprintf(path, sizeof(path), "/tmp/kft-logtail-%d.log", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void expect_tail(const char *text, size_t max, const char *want, size_t lines)
{
	char out[1024];
	write_log(text, strlen(text));
	assert_int_equal(kft_local_log_tail(path, max, out, sizeof(out)), lines);
	assert_string_equal(out, want);
	unlink(path);
}

static void test_last_lines_of_the_last_attempt(void **state)
{
	(void)state;
	expect_tail("a\nb\n\n  \nc\n", 8, "  a\n  b\n  c", 3);
	expect_tail("a\nb\nc\nd", 2, "  c\n  d", 2);
	/* an earlier attempt's lines are not this failure's */
	expect_tail("old\n\n==> node-1: attempt 2, started T (pod p) <==\nnew 1\nnew 2\n", 8,
	            "  new 1\n  new 2", 2);
	/* a line that merely contains the mark does not count */
	expect_tail("x ==> y\nz\n", 8, "  x ==> y\n  z", 2);
	expect_tail("", 8, "", 0);
}

static void test_cleaned_for_a_message(void **state)
{
	(void)state;
	/* progress bars' carriage returns end lines; other controls are '?';
	 * invalid UTF-8 is U+FFFD; valid UTF-8 stays */
	expect_tail("10%\r50%\rdone\x1b[0m \xff \xc3\xa9\n", 8,
	            "  10%\n  50%\n  done?[0m \xef\xbf\xbd \xc3\xa9", 3);
}

static void test_bounded(void **state)
{
	(void)state;
	char big[6000], out[1024];
	memset(big, 'x', sizeof(big));
	for (size_t i = 99; i < sizeof(big); i += 100)
		big[i] = '\n';
	memcpy(big + sizeof(big) - 6, "\nlast\n", 6);
	write_log(big, sizeof(big));
	/* 2,048 bytes read from the end (the first line cut there left out);
	 * the caller's buffer holds the last whole lines that fit: "last", a
	 * line of 94 and 9 of 99 in 1,024 bytes, the 10th of 99 not */
	assert_int_equal(kft_local_log_tail(path, 100, out, sizeof(out)), 11);
	assert_int_equal(strncmp(out, "  xxxx", 6), 0);
	assert_int_equal(strlen(out), 6 + 1 + 96 + 9 * (1 + 101));
	assert_string_equal(out + strlen(out) - 7, "\n  last");
	char small[40];
	assert_int_equal(kft_local_log_tail(path, 100, small, sizeof(small)), 1);
	assert_string_equal(small, "  last");
	assert_int_equal(kft_local_log_tail(path, 0, small, sizeof(small)), 0);
	assert_string_equal(small, "");
	unlink(path);
	assert_int_equal(kft_local_log_tail("/nonexistent/log", 8, out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_last_lines_of_the_last_attempt),
	        cmocka_unit_test(test_cleaned_for_a_message),
	        cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
