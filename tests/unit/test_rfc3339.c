/*
 * test_rfc3339.c - src/util/rfc3339.c: metav1.Time and metav1.MicroTime as
 * Kubernetes marshals them (UTC, "Z", whole seconds or six fraction
 * digits), the year range RFC 3339 can write (Go's Time.MarshalJSON refuses
 * the rest), and that the parser reads back what the formatter writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "framework/conditions.h"
#include "kftrainer/error.h"
#include "util/rfc3339.h"

static void test_format(void **state)
{
	(void)state;
	char buf[KFT_RFC3339_MAX];
	assert_int_equal(kft_rfc3339_format(0, -1, buf), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	assert_int_equal(kft_rfc3339_format(1136214245, -1, buf), 0); /* Go's reference time */
	assert_string_equal(buf, "2006-01-02T15:04:05Z");
	assert_int_equal(kft_rfc3339_format(1136214245, 0, buf), 0);
	assert_string_equal(buf, "2006-01-02T15:04:05.000000Z");
	assert_int_equal(kft_rfc3339_format(1136214245, 999999, buf), 0);
	assert_string_equal(buf, "2006-01-02T15:04:05.999999Z");
	assert_int_equal(kft_rfc3339_format(253402300799, 999999, buf), 0);
	assert_string_equal(buf, "9999-12-31T23:59:59.999999Z");
	assert_int_equal(kft_rfc3339_format(-62167219200, -1, buf), 0);
	assert_string_equal(buf, "0000-01-01T00:00:00Z");
	/* Years RFC 3339 cannot write. */
	assert_int_equal(kft_rfc3339_format(253402300800, -1, buf), KFT_EINVAL);
	assert_string_equal(buf, "");
	assert_int_equal(kft_rfc3339_format(-62167219201, -1, buf), KFT_EINVAL);
	assert_int_equal(kft_rfc3339_format(0, 1000000, buf), KFT_EINVAL);
}

/* The formatter's calendar arithmetic against gmtime_r: the first and last
 * second of every year's February and March over the whole range (leap
 * days, century rules), and 100,000 instants drawn over it. */
static void same_as_gmtime(int64_t sec)
{
	char got[KFT_RFC3339_MAX], want[64];
	struct tm tm;
	time_t t = (time_t)sec;
	assert_non_null(gmtime_r(&t, &tm));
	snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(sec & 7) * 123);
	assert_int_equal(kft_rfc3339_format(sec, (long)(sec & 7) * 123, got), 0);
	assert_string_equal(got, want);
}

static void test_format_calendar(void **state)
{
	(void)state;
	const int64_t first = -62167219200, last = 253402300799; /* 0000-01-01, 9999-12-31 */
	for (int y = 0; y <= 9999; y++) {
		struct tm feb = {.tm_year = y - 1900, .tm_mon = 1, .tm_mday = 1};
		int64_t s = (int64_t)timegm(&feb);
		same_as_gmtime(s);
		same_as_gmtime(s - 1);
		same_as_gmtime(s + 29 * 86400 - 1); /* 29 February or 1 March */
		same_as_gmtime(s + 29 * 86400);
	}
	uint64_t x = 0x243f6a8885a308d3ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		same_as_gmtime(first + (int64_t)(x % (uint64_t)(last - first + 1)));
	}
	same_as_gmtime(first);
	same_as_gmtime(last);
}

static void test_now_forms(void **state)
{
	(void)state;
	char s[KFT_RFC3339_MAX], m[KFT_RFC3339_MAX];
	kft_rfc3339_now(s);
	kft_rfc3339_now_micro(m);
	assert_int_equal(strlen(s), 20);
	assert_int_equal(strlen(m), 27);
	assert_int_equal(s[19], 'Z');
	assert_int_equal(m[19], '.');
	int64_t a, b;
	assert_int_equal(kft_rfc3339_parse_ms(s, &a, NULL), 0);
	assert_int_equal(kft_rfc3339_parse_ms(m, &b, NULL), 0);
	assert_true(a % 1000 == 0);
	assert_true(b >= a); /* taken after, to the microsecond */
}

/* Both forms of one instant agree on the second. */
static void test_from_timespec(void **state)
{
	(void)state;
	struct timespec ts = {.tv_sec = 1136214245, .tv_nsec = 123456789};
	char s[KFT_RFC3339_MAX], m[KFT_RFC3339_MAX];
	kft_rfc3339_from_timespec(&ts, s, m);
	assert_string_equal(s, "2006-01-02T15:04:05Z");
	assert_string_equal(m, "2006-01-02T15:04:05.123456Z");
}

/* A Lease's renewTime and an events.k8s.io Event's eventTime from a
 * fractional Unix time (metav1.MicroTime). */
static void test_micro(void **state)
{
	(void)state;
	char buf[40];
	assert_int_equal(kft_rfc3339_micro(1136214245.5, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2006-01-02T15:04:05.500000Z");
	assert_int_equal(kft_rfc3339_micro(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00.000000Z");
	assert_int_equal(kft_rfc3339_micro(1136214245.5, buf, 10), KFT_ELIMIT);
	assert_int_equal(kft_rfc3339_micro(-1, buf, sizeof(buf)), KFT_EINVAL);
}

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t ms;
	} ok[] = {
	        {"1970-01-01T00:00:00Z", 0},
	        {"2006-01-02T15:04:05Z", 1136214245000},
	        {"2006-01-02T15:04:05.999999Z", 1136214245999},
	        {"2006-01-02T15:04:05.5Z", 1136214245500},
	        {"2006-01-02T08:04:05-07:00", 1136214245000},
	        {"2006-01-02T16:04:05+01:00", 1136214245000},
	        {"2024-02-29T00:00:00Z", 1709164800000},
	        {"1969-12-31T23:59:59Z", -1000},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = 0;
		if (kft_rfc3339_parse_ms(ok[i].s, &ms, NULL) != 0 || ms != ok[i].ms)
			fail_msg("%s: %lld", ok[i].s, (long long)ms);
	}
	static const char *const bad[] = {
	        "",
	        "2006-01-02",
	        "2006-01-02T15:04:05",       /* no zone */
	        "2006-01-02 15:04:05Z",      /* no T */
	        "2006-01-02T15:04:05.Z",     /* empty fraction */
	        "2023-02-29T00:00:00Z",      /* not a leap year */
	        "2006-13-02T15:04:05Z",      /* month 13 */
	        "2006-01-02T24:00:00Z",      /* hour 24 */
	        "2006-01-02T15:04:05+1:00",  /* a short offset */
	        "2006-01-02T15:04:05Z junk", /* trailing text */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 0;
		kft_error err = {0};
		if (kft_rfc3339_parse_ms(bad[i], &ms, &err) != KFT_EPARSE)
			fail_msg("\"%s\" parsed", bad[i]);
		assert_non_null(strstr(err.message, "not an RFC 3339 time"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_format),    cmocka_unit_test(test_format_calendar),
	        cmocka_unit_test(test_now_forms), cmocka_unit_test(test_from_timespec),
	        cmocka_unit_test(test_micro),     cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
