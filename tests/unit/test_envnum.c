/*
 * test_envnum.c - src/util/envnum.c: the one reader of whole-number knobs in
 * the environment (KFTRAINER_TRACKING_DRAIN, KFTRAINER_TRACKING_MAX_REPORTS,
 * KFTRAINER_EXPORT_PART_SIZE). Unset or empty leaves the caller's default
 * without complaint; anything but a decimal whole number up to the bound is
 * refused and said to be bad, so the caller can name the variable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/envnum.h"

#define VAR "KFT_TEST_ENVNUM"

static void test_accepted(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		unsigned long long n;
	} cases[] = {{"0", 0}, {"7", 7}, {"0060", 60}, {"86400", 86400}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned long long n = 12345;
		bool bad = true;
		setenv(VAR, cases[i].s, 1);
		assert_true(kft_env_whole(VAR, 86400, &n, &bad));
		assert_false(bad);
		assert_int_equal(n, cases[i].n);
	}
	unsetenv(VAR);
}

static void test_default_when_unset_or_empty(void **state)
{
	(void)state;
	unsigned long long n = 60;
	bool bad = true;
	unsetenv(VAR);
	assert_false(kft_env_whole(VAR, 100, &n, &bad));
	assert_false(bad);
	assert_int_equal(n, 60);
	setenv(VAR, "", 1);
	assert_false(kft_env_whole(VAR, 100, &n, &bad));
	assert_false(bad);
	assert_int_equal(n, 60);
	unsetenv(VAR);
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const cases[] = {"abc",
	                                    "12abc",
	                                    "-1",
	                                    "+5",
	                                    " 5",
	                                    "5 ",
	                                    "1.5",
	                                    "0x10",
	                                    "101",
	                                    "1e3",
	                                    "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned long long n = 60;
		bool bad = false;
		setenv(VAR, cases[i], 1);
		assert_false(kft_env_whole(VAR, 100, &n, &bad));
		assert_true(bad);
		assert_int_equal(n, 60);
	}
	unsetenv(VAR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_accepted),
	        cmocka_unit_test(test_default_when_unset_or_empty),
	        cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
