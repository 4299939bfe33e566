/*
 * test_duration.c - src/util/duration.c against Go's time.ParseDuration
 * (time/format.go and its format_test.go cases): what it accepts and the
 * value, what it refuses ("time: invalid duration").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kftrainer/error.h"
#include "util/duration.h"

static void test_accepted(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t ms;
	} cases[] = {
	        {"0", 0},
	        {"-0", 0},
	        {"+0", 0},
	        {"5s", 5000},
	        {"30s", 30000},
	        {"1478s", 1478000},
	        {"-5s", -5000},
	        {"+5s", 5000},
	        {"5.0s", 5000},
	        {"5.6s", 5600},
	        {"5.s", 5000},
	        {".5s", 500},
	        {"1.0s", 1000},
	        {"1.004s", 1004},
	        {"100.00100s", 100001},
	        {"10ms", 10},
	        {"2500us", 2},
	        {"2500\xc2\xb5s", 2}, /* U+00B5 micro sign */
	        {"2500\xce\xbcs", 2}, /* U+03BC Greek mu */
	        {"3000000ns", 3},
	        {"1m", 60000},
	        {"1h", 3600000},
	        {"1h30m", 5400000},
	        {"1.5h", 5400000},
	        {"3h30m", 12600000},
	        {"1m30s500ms", 90500},
	        {"10.5s4m", 250500},
	        {"-2m3.4s", -123400},
	        {"1h2m3s4ms5us6ns", 3723004},
	        {"39h9m14.425s", 140954425},
	        {"2562047h", 2562047LL * 3600000}, /* Go's largest whole hours */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms = -42;
		if (kft_duration_parse_ms(cases[i].s, &ms) != 0)
			fail_msg("\"%s\" refused", cases[i].s);
		if (ms != cases[i].ms)
			fail_msg("\"%s\": %lld, want %lld", cases[i].s, (long long)ms,
			         (long long)cases[i].ms);
	}
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	        "",         "3",   "-",         "s",    ".",    ".s",
	        "+.s",      "1d",  "1.0.0s",    "1e3s", "1 s",  " 1s",
	        "1s ",      "1S",  "1sm",       "-1-s", "0x1s", "9223372036854775808ns",
	        "3000000h", "1hh", "\xc2\xb5s",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = -42;
		if (kft_duration_parse_ms(bad[i], &ms) != KFT_EINVAL)
			fail_msg("\"%s\" accepted (%lld)", bad[i], (long long)ms);
		assert_int_equal(ms, -42);
	}
	int64_t ms = -42;
	assert_int_equal(kft_duration_parse_ms(NULL, &ms), KFT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_accepted),
	        cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
