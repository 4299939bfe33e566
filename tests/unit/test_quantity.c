/*
 * test_quantity.c - Kubernetes quantities (src/api/quantity.c).
 *
 * The tables below pin facts from Kubernetes' own tests in
 * k8s.io/apimachinery v0.36.2, pkg/api/resource/quantity_test.go
 * (TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
 * TestQuantityCmp, TestAdd, TestSub, TestMul, TestMilliNewSet, TestNewSet,
 * TestNewScaledSet, TestScaledValue, TestJSONWhitespace, TestQuantityValueSet)
 * and pkg/api/resource/scale_int_test.go (TestScaledValueInternal). Each
 * value is written as mantissa * 10^exp, as those tests write it. The tables
 * marked "ours" check this library's documented extensions and limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/quantity.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

enum { DSI = KFT_QTY_DECIMAL_SI, BSI = KFT_QTY_BINARY_SI, DEX = KFT_QTY_DECIMAL_EXPONENT };

/* mantissa * 10^exp in the given format; the test fails if that is not
 * representable, which would be a bug in the table. */
static kft_quantity make(int64_t mantissa, int32_t exp, int format)
{
	kft_quantity q;

	if (kft_quantity_init_scaled(&q, mantissa, exp, (kft_quantity_format)format, NULL) != 0)
		fail_msg("cannot build %lld * 10^%d", (long long)mantissa, (int)exp);
	return q;
}

static kft_quantity parse_ok(const char *s)
{
	kft_quantity q;
	kft_error err;

	if (kft_quantity_parse(s, &q, &err) != 0)
		fail_msg("parse(\"%s\") failed: %s", s, err.message);
	return q;
}

static void expect_canonical(const kft_quantity *q, const char *want, const char *what)
{
	char buf[KFT_QUANTITY_STRING_MAX];

	if (kft_quantity_format_canonical(q, buf, sizeof(buf)) != 0 || strcmp(buf, want) != 0)
		fail_msg("%s: canonical \"%s\", want \"%s\"", what, buf, want);
}

static void expect_reserialized(const char *in, const char *want)
{
	char buf[KFT_QUANTITY_STRING_MAX];
	kft_error err;

	if (kft_quantity_reserialize(in, buf, sizeof(buf), &err) != 0)
		fail_msg("reserialize(\"%s\") failed: %s", in, err.message);
	if (strcmp(buf, want) != 0)
		fail_msg("reserialize(\"%s\") = \"%s\", want \"%s\"", in, buf, want);
}

/* ---- TestQuantityParse ------------------------------------------------- */

static const struct parse_case {
	const char *in;
	int64_t mantissa;
	int32_t exp;
	int format;
} parse_cases[] = {
        {"0", 0, 0, DSI},
        {"0n", 0, 0, DSI},
        {"0u", 0, 0, DSI},
        {"0m", 0, 0, DSI},
        {"0Ki", 0, 0, BSI},
        {"0k", 0, 0, DSI},
        {"0Mi", 0, 0, BSI},
        {"0M", 0, 0, DSI},
        {"0Gi", 0, 0, BSI},
        {"0G", 0, 0, DSI},
        {"0Ti", 0, 0, BSI},
        {"0T", 0, 0, DSI},
        {"1", 1, 0, DSI},
        {"1Ki", 1024, 0, BSI},
        {"8Ki", 8 * 1024, 0, BSI},
        {"7Mi", 7 * 1024 * 1024, 0, BSI},
        {"6Gi", 6LL * 1024 * 1024 * 1024, 0, BSI},
        {"5Ti", 5LL * 1024 * 1024 * 1024 * 1024, 0, BSI},
        {"4Pi", 4LL * 1024 * 1024 * 1024 * 1024 * 1024, 0, BSI},
        {"3Ei", 3LL * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, 0, BSI},
        {"10Ti", 10LL * 1024 * 1024 * 1024 * 1024, 0, BSI},
        {"100Ti", 100LL * 1024 * 1024 * 1024 * 1024, 0, BSI},
        {"5n", 5, -9, DSI},
        {"4u", 4, -6, DSI},
        {"3m", 3, -3, DSI},
        {"9", 9, 0, DSI},
        {"8k", 8, 3, DSI},
        {"50k", 5, 4, DSI},
        {"7M", 7, 6, DSI},
        {"6G", 6, 9, DSI},
        {"5T", 5, 12, DSI},
        {"40T", 4, 13, DSI},
        {"300T", 3, 14, DSI},
        {"2P", 2, 15, DSI},
        {"1E", 1, 18, DSI},
        {"1E-3", 1, -3, DEX},
        {"1e3", 1, 3, DEX},
        {"1E6", 1, 6, DEX},
        {"1e9", 1, 9, DEX},
        {"1E12", 1, 12, DEX},
        {"1e15", 1, 15, DEX},
        {"1E18", 1, 18, DEX},
        {"1e14", 1, 14, DEX},
        {"1e13", 1, 13, DEX},
        {"100.035k", 100035, 0, DSI},
        {"0.001", 1, -3, DSI},
        {"0.0005k", 5, -1, DSI},
        {"0.005", 5, -3, DSI},
        {"0.05", 5, -2, DSI},
        {"0.5", 5, -1, DSI},
        {"0.00050k", 5, -1, DSI},
        {"0.00500", 5, -3, DSI},
        {"0.05000", 5, -2, DSI},
        {"0.50000", 5, -1, DSI},
        {"0.5e0", 5, -1, DEX},
        {"0.5e-1", 5, -2, DEX},
        {"0.5e-2", 5, -3, DEX},
        {"10.035M", 10035, 3, DSI},
        {"1.2e3", 12, 2, DEX},
        {"1.3E+6", 13, 5, DEX},
        {"1.40e9", 14, 8, DEX},
        {"1.53E12", 153, 10, DEX},
        {"1.6e15", 16, 14, DEX},
        {"1.7E18", 17, 17, DEX},
        {"9.01", 901, -2, DSI},
        {"8.1k", 81, 2, DSI},
        {"7.123456M", 7123456, 0, DSI},
        {"6.987654321G", 6987654321LL, 0, DSI},
        {"5.444T", 5444, 9, DSI},
        {"40.1T", 401, 11, DSI},
        {"300.2T", 3002, 11, DSI},
        {"2.5P", 25, 14, DSI},
        {"1.01E", 101, 16, DSI},
        {"3.001n", 4, -9, DSI},
        {"1.1E-9", 2, -9, DEX},
        {"0.0000000001", 1, -9, DSI},
        {"0.0000000005", 1, -9, DSI},
        {"0.00000000050", 1, -9, DSI},
        {"0.5e-9", 1, -9, DEX},
        {"0.9n", 1, -9, DSI},
        {"0.00000012345", 124, -9, DSI},
        {"0.00000012354", 124, -9, DSI},
        {"9Ei", INT64_MAX, 0, BSI},
        {"9223372036854775807Ki", INT64_MAX, 0, BSI},
        {"12E", 12, 18, DSI},
        {"100.035Ki", 10243584, -2, BSI},
        {"0.5Mi", 512 * 1024, 0, BSI},
        {"0.05Gi", 536870912, -1, BSI},
        {"0.025Ti", 274877906944LL, -1, BSI},
        {"0.000000000001Ki", 2, -9, DSI},
        {".001", 1, -3, DSI},
        {".0001k", 100, -3, DSI},
        {"1.", 1, 0, DSI},
        {"1.G", 1, 9, DSI},
};

/* Parses prefix + c->in and checks value (negated for "-") and format. */
static void check_parse_case(const struct parse_case *c, const char *prefix)
{
	char in[64];
	kft_quantity want = make(c->mantissa, c->exp, c->format), got;

	snprintf(in, sizeof(in), "%s%s", prefix, c->in);
	got = parse_ok(in);
	if (strcmp(prefix, "-") == 0 && kft_quantity_mul_int(&want, -1, NULL) != 0)
		fail_msg("cannot negate %s", c->in);
	if (kft_quantity_cmp(&got, &want) != 0)
		fail_msg("parse(\"%s\"): wrong value", in);
	if ((int)got.format != c->format)
		fail_msg("parse(\"%s\"): format %d, want %d", in, (int)got.format, c->format);
}

static void test_parse_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(parse_cases); i++) {
		check_parse_case(&parse_cases[i], "");
		check_parse_case(&parse_cases[i], "-");
		check_parse_case(&parse_cases[i], "+");
	}
}

/* ---- inputs that must fail ---------------------------------------------- */

static const struct bad_case {
	const char *in;
	const char *message;
} bad_cases[] = {
        {"", KFT_QUANTITY_ERR_FORMAT},
        {"1.1.M", KFT_QUANTITY_ERR_FORMAT},
        {"1+1.0M", KFT_QUANTITY_ERR_FORMAT},
        {"0.1mi", KFT_QUANTITY_ERR_SUFFIX},
        {"0.1am", KFT_QUANTITY_ERR_FORMAT},
        {"aoeu", KFT_QUANTITY_ERR_FORMAT},
        {".5i", KFT_QUANTITY_ERR_SUFFIX},
        {"1i", KFT_QUANTITY_ERR_SUFFIX},
        {"-3.01i", KFT_QUANTITY_ERR_SUFFIX},
        {"-3.01e-", KFT_QUANTITY_ERR_SUFFIX},
        {" 1", KFT_QUANTITY_ERR_FORMAT},
        {"1 ", KFT_QUANTITY_ERR_FORMAT},
        {"Non-Numeric", KFT_QUANTITY_ERR_FORMAT},
        {"invalid", KFT_QUANTITY_ERR_FORMAT},
        /* ours, each checked against ParseQuantity v0.36.2 */
        {"1K", KFT_QUANTITY_ERR_SUFFIX},
        {"--1", KFT_QUANTITY_ERR_SUFFIX},
        {"1Ki3", KFT_QUANTITY_ERR_SUFFIX},
        {"1e", KFT_QUANTITY_ERR_SUFFIX},
        {"1ee3", KFT_QUANTITY_ERR_SUFFIX},
        {"1e99999999999999999999", KFT_QUANTITY_ERR_SUFFIX},
        {"1e1.5", KFT_QUANTITY_ERR_FORMAT},
        {"0x10", KFT_QUANTITY_ERR_FORMAT},
        {"Ei", KFT_QUANTITY_ERR_NUMERIC},
        {".e-10", KFT_QUANTITY_ERR_NUMERIC},
        {"-e-10", KFT_QUANTITY_ERR_NUMERIC},
};

static void test_parse_rejects(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(bad_cases); i++) {
		kft_quantity q = make(7, 0, DSI), before = q;
		kft_error err;
		int rc = kft_quantity_parse(bad_cases[i].in, &q, &err);

		if (rc != KFT_EPARSE || strcmp(err.message, bad_cases[i].message) != 0)
			fail_msg("parse(\"%s\") = %d \"%s\"", bad_cases[i].in, rc, err.message);
		if (kft_quantity_cmp(&q, &before) != 0)
			fail_msg("parse(\"%s\") changed its output on failure", bad_cases[i].in);
	}
}

/* ---- TestQuantityString -------------------------------------------------- */

static const struct string_case {
	int64_t mantissa;
	int32_t exp;
	int format;
	const char *expect;
	const char *alternate; /* another spelling that prints as expect, or NULL */
} string_cases[] = {
        {1024 * 1024 * 1024, 0, BSI, "1Gi", "1024Mi"},
        {300 * 1024 * 1024, 0, BSI, "300Mi", "307200Ki"},
        {6 * 1024, 0, BSI, "6Ki", NULL},
        {1001LL * 1024 * 1024 * 1024, 0, BSI, "1001Gi", "1025024Mi"},
        {1024LL * 1024 * 1024 * 1024, 0, BSI, "1Ti", "1024Gi"},
        {5, 0, BSI, "5", "5000m"},
        {500, -3, BSI, "500m", "0.5"},
        {1, 9, DSI, "1G", "1000M"},
        {1000, 6, DSI, "1G", "0.001T"},
        {1000000, 3, DSI, "1G", NULL},
        {1000000000, 0, DSI, "1G", NULL},
        {1, -3, DSI, "1m", "1000u"},
        {80, -3, DSI, "80m", NULL},
        {1080, -3, DSI, "1080m", "1.08"},
        {108, -2, DSI, "1080m", "1080000000n"},
        {10800, -4, DSI, "1080m", NULL},
        {300, 6, DSI, "300M", NULL},
        {1, 12, DSI, "1T", NULL},
        {1234567, 6, DSI, "1234567M", NULL},
        {1234567, -3, BSI, "1234567m", NULL},
        {3, 3, DSI, "3k", NULL},
        {1025, 0, BSI, "1025", NULL},
        {0, 0, DSI, "0", NULL},
        {0, 0, BSI, "0", NULL},
        {1, 9, DEX, "1e9", ".001e12"},
        {1, -3, DEX, "1e-3", "0.001e0"},
        {1, -9, DEX, "1e-9", "1000e-12"},
        {80, -3, DEX, "80e-3", NULL},
        {300, 6, DEX, "300e6", NULL},
        {1, 12, DEX, "1e12", NULL},
        {1, 3, DEX, "1e3", NULL},
        {3, 3, DEX, "3e3", NULL},
        {0, 0, DEX, "0", "00"},
        {1, -9, DSI, "1n", NULL},
        {80, -9, DSI, "80n", NULL},
        {1080, -9, DSI, "1080n", NULL},
        {108, -8, DSI, "1080n", NULL},
        {10800, -10, DSI, "1080n", NULL},
        {1, -6, DSI, "1u", NULL},
        {80, -6, DSI, "80u", NULL},
        {1080, -6, DSI, "1080u", NULL},
};

static void test_canonical_string(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(string_cases); i++) {
		const struct string_case *c = &string_cases[i];
		kft_quantity q = make(c->mantissa, c->exp, c->format);
		char neg[64];

		expect_canonical(&q, c->expect, c->expect);
		/* Kubernetes keeps canonical input text as its printed form. */
		expect_reserialized(c->expect, c->expect);
		if (c->alternate) {
			kft_quantity alt = parse_ok(c->alternate);

			expect_canonical(&alt, c->expect, c->alternate);
			expect_reserialized(c->alternate, c->expect);
		}
		if (kft_quantity_is_zero(&q))
			continue;
		assert_int_equal(kft_quantity_mul_int(&q, -1, NULL), 0);
		snprintf(neg, sizeof(neg), "-%s", c->expect);
		expect_canonical(&q, neg, neg);
	}
}

/* ---- TestQuantityParseEmit, and printing after parsing (ours) ---------- */

static const struct emit_case {
	const char *in;
	const char *canonical;  /* CanonicalizeBytes of the parsed value */
	const char *serialized; /* String() right after ParseQuantity */
} emit_cases[] = {
        {"1Ki", "1Ki", "1Ki"},
        {"1Mi", "1Mi", "1Mi"},
        {"1Gi", "1Gi", "1Gi"},
        {"1024Mi", "1Gi", "1Gi"},
        {"1000M", "1G", "1G"},
        {".001Ki", "1024m", "1024m"},
        {".000001Ki", "1024u", "1024u"},
        {".000000001Ki", "1024n", "1024n"},
        {".000000000001Ki", "2n", "2n"},
        /* ours, each checked against ParseQuantity v0.36.2 */
        {"500m", "500m", "500m"},
        {"1500m", "1500m", "1500m"},
        {"1.5", "1500m", "1500m"},
        {"0.1Ki", "102400m", "102400m"},
        {"1.5Ki", "1536", "1536"},
        {"1.5Mi", "1536Ki", "1536Ki"},
        {"100M", "100M", "100M"},
        {"0.0001", "100u", "100u"},
        {"1e-10", "1e-9", "1e-9"},
        {"0.5e3", "500", "500"},
        {"10e-1", "1", "1"},
        {"+1", "1", "+1"},
        {"-1", "-1", "-1"},
        {"0001", "1", "0001"},
        {"1.100", "1100m", "1.100"},
        {"1E3", "1e3", "1E3"},
        {"1e+3", "1e3", "1e+3"},
        {"+1Ki", "1Ki", "+1Ki"},
        {"1.Ki", "1Ki", "1.Ki"},
        {"1000E", "1", "1"},
        {"1001E", "1001E", "1001E"},
        {"8Ei", "9223372036854775807", "9223372036854775807"},
        {"-8Ei", "-9223372036854775807", "-9223372036854775807"},
        {"1e4294967296", "1", "1e4294967296"},
        {"-", "0", "0"},
        {".", "0", "0"},
        {"Ki", "0", "0"},
        {"e5", "0", "0"},
        {"1e28", "10e27", "10e27"},
        {"99999999999999999999999999999.999999999", "99999999999999999999999999999999999999n",
         "99999999999999999999999999999999999999n"},
};

static void test_parse_then_print(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(emit_cases); i++) {
		const struct emit_case *c = &emit_cases[i];
		kft_quantity q;

		q = parse_ok(c->in);
		expect_canonical(&q, c->canonical, c->in);
		expect_reserialized(c->in, c->serialized);
	}
}

/* ---- TestQuantityCmp ------------------------------------------------------ */

static void test_cmp(void **state)
{
	static const struct {
		const char *x, *y;
		int want;
	} cases[] = {
	        {"0", "0", 0},          {"100m", "50m", 1}, {"50m", "100m", -1},
	        {"10000T", "100Gi", 1}, {"1Ki", "1024", 0}, {"-1", "1n", -1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity x = parse_ok(cases[i].x), y = parse_ok(cases[i].y);
		int got = kft_quantity_cmp(&x, &y);

		if ((got > 0) - (got < 0) != cases[i].want)
			fail_msg("cmp(%s, %s) = %d", cases[i].x, cases[i].y, got);
	}
}

/* ---- TestAdd, TestSub, TestQuantityAddZeroPreservesSuffix --------------- */

static void test_add_sub(void **state)
{
	static const struct {
		int64_t a;
		int32_t a_exp;
		int a_fmt;
		int64_t b;
		int32_t b_exp;
		int b_fmt;
		int64_t sum, diff; /* whole units */
		int sum_fmt;
	} cases[] = {
	        {10, 0, DSI, 1, 1, DSI, 20, 0, DSI},  {10, 0, DSI, 1, 0, BSI, 11, 9, DSI},
	        {10, 0, BSI, 1, 0, DSI, 11, 9, BSI},  {0, 0, DSI, 50, 0, DSI, 50, -50, DSI},
	        {50, 0, DSI, 0, 0, DSI, 50, 50, DSI}, {0, 0, DSI, 0, 0, DSI, 0, 0, DSI},
	        {0, 0, DSI, 1, 0, BSI, 1, -1, BSI},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity a = make(cases[i].a, cases[i].a_exp, cases[i].a_fmt);
		kft_quantity b = make(cases[i].b, cases[i].b_exp, cases[i].b_fmt);
		kft_quantity s = a, d = a;

		assert_int_equal(kft_quantity_add(&s, &b, NULL), 0);
		assert_int_equal(kft_quantity_sub(&d, &b, NULL), 0);
		assert_int_equal(kft_quantity_value(&s), cases[i].sum);
		assert_int_equal(kft_quantity_value(&d), cases[i].diff);
		assert_int_equal(s.format, cases[i].sum_fmt);
	}
}

static void test_add_zero_keeps_suffix(void **state)
{
	static const char *const values[] = {"100m", "1Gi"};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(values); i++) {
		kft_quantity zero = parse_ok("0"), v = parse_ok(values[i]);
		kft_quantity v1 = v, v2 = zero, v3 = zero;

		assert_int_equal(kft_quantity_add(&v1, &zero, NULL), 0);
		assert_int_equal(kft_quantity_add(&v2, &v, NULL), 0);
		assert_int_equal(kft_quantity_sub(&v3, &v, NULL), 0);
		expect_canonical(&v1, values[i], "x + 0");
		expect_canonical(&v2, values[i], "0 + x");
		assert_int_equal(v3.format, v.format);
		assert_int_equal(kft_quantity_sign(&v3), -1);
	}
}

/* ---- TestMul ------------------------------------------------------------- */

static void test_mul(void **state)
{
	static const struct {
		int64_t a;
		int a_fmt;
		int64_t n;
		const char *want;
	} cases[] = {
	        {10, DSI, 10, "100"},
	        {10, DSI, 1, "10"},
	        {10, BSI, 1, "10"},
	        {0, DSI, 50, "0"},
	        {50, DSI, 0, "0"},
	        {10, DSI, -10, "-100"},
	        {-10, DSI, 1, "-10"},
	        {10, BSI, -1, "-10"},
	        {-50, DSI, -50, "2500"},
	        {INT64_MAX, DSI, 1, "9223372036854775807"},
	        {INT64_MAX, DSI, -1, "-9223372036854775807"},
	        {INT64_MAX / 2, DSI, 2, "9223372036854775806"},
	        {INT64_MAX, DSI, 2, "18446744073709551614"},
	        {INT64_MAX, DSI, 10, "92233720368547758070"},
	        {INT64_MIN, DSI, -1, "9223372036854775808"},
	        {INT64_MIN, DSI, 2, "-18446744073709551616"},
	        {INT64_MIN, DSI, -10, "92233720368547758080"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity q = make(cases[i].a, 0, cases[i].a_fmt);

		assert_int_equal(kft_quantity_mul_int(&q, cases[i].n, NULL), 0);
		expect_canonical(&q, cases[i].want, cases[i].want);
		assert_int_equal(q.format, cases[i].a_fmt);
	}
}

/* ---- TestMilliNewSet, TestNewSet, TestNewScaledSet ----------------------- */

static void test_constructors(void **state)
{
	static const struct {
		int64_t value;
		int format;
		const char *milli_text, *int_text;
	} cases[] = {
	        {1, DSI, "1m", "1"},
	        {1000, DSI, "1", "1k"},
	        {1234000, DSI, "1234", "1234k"},
	        {1024, BSI, "1024m", "1Ki"},
	        {1000000, 99, "1e3", "1e6"}, /* unknown format prints as an exponent */
	        {1024 * 1024, BSI, "1048576m", "1Mi"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity q;

		kft_quantity_init_milli(&q, cases[i].value, (kft_quantity_format)cases[i].format);
		expect_canonical(&q, cases[i].milli_text, "milli");
		kft_quantity_init_int(&q, cases[i].value, (kft_quantity_format)cases[i].format);
		expect_canonical(&q, cases[i].int_text, "int");
		assert_int_equal(kft_quantity_value(&q), cases[i].value);
	}
}

static void test_scaled_set(void **state)
{
	static const struct {
		int64_t value;
		int32_t scale;
		const char *want;
	} cases[] = {
	        {1, -9, "1n"}, {1000, -9, "1u"}, {1, -6, "1u"}, {1000, -6, "1m"},
	        {1, -3, "1m"}, {1000, -3, "1"},  {1, 0, "1"},   {0, -9, "0"},
	        {0, -6, "0"},  {0, -3, "0"},     {0, 0, "0"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity q = make(cases[i].value, cases[i].scale, DSI);
		kft_quantity back = parse_ok(cases[i].want);

		expect_canonical(&q, cases[i].want, cases[i].want);
		assert_int_equal(kft_quantity_scaled_value(&back, cases[i].scale), cases[i].value);
	}
}

/* ---- TestScaledValue, TestScaledValueInternal, Value()/MilliValue() ----- */

static void test_scaled_value(void **state)
{
	static const struct {
		int64_t value;
		int32_t from, to;
		int64_t want;
	} cases[] = {
	        {1, -9, -9, 1},
	        {1, -9, -6, 1},
	        {1, -9, -3, 1},
	        {1, -9, 0, 1},
	        {1, -6, -9, 1000},
	        {1, -6, -6, 1},
	        {1, -6, -3, 1},
	        {1, -6, 0, 1},
	        {1, -3, -9, 1000 * 1000},
	        {1, -3, -6, 1000},
	        {1, -3, -3, 1},
	        {1, -3, 0, 1},
	        {1, 0, -9, 1000 * 1000 * 1000},
	        {1, 0, -6, 1000 * 1000},
	        {1, 0, -3, 1000},
	        {1, 0, 0, 1},
	        {1, 2, -2, 100 * 100},
	        /* scale_int_test.go: always round up */
	        {1000, -3, 0, 1},
	        {999, -3, 0, 1},
	        {500, -3, 0, 1},
	        {499, -3, 0, 1},
	        {1, -3, 0, 1},
	        {0, -3, 0, 0},
	        {INT64_MAX - 1, -1, 0, (INT64_MAX - 1) / 10 + 1},
	        /* ours: rounding away from zero, saturation */
	        {-15, -1, 0, -2},
	        {-1, -9, -3, -1},
	        {INT64_MAX, 0, -3, INT64_MAX},
	        {INT64_MIN, 0, -3, INT64_MIN},
	        {1, 18, 0, 1000000000000000000LL},
	        {1, 19, 0, INT64_MAX},
	        {5, -9, 3, 1},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity q = make(cases[i].value, cases[i].from, DSI);
		int64_t got = kft_quantity_scaled_value(&q, cases[i].to);

		if (got != cases[i].want)
			fail_msg("%lld * 10^%d at scale %d = %lld, want %lld",
			         (long long)cases[i].value, (int)cases[i].from, (int)cases[i].to,
			         (long long)got, (long long)cases[i].want);
	}
}

static void test_value_and_milli(void **state)
{
	static const struct {
		const char *in;
		int64_t value, milli;
	} cases[] = {
	        {"1Mi", 1024 * 1024, 1024LL * 1024 * 1000},
	        {"1.5", 2, 1500},
	        {"-1.5", -2, -1500},
	        {"0.0001", 1, 1},
	        {"500m", 1, 500},
	        {"1e3", 1000, 1000000},
	        {"0.1Ki", 103, 102400},
	        {"1Ei", 1152921504606846976LL, INT64_MAX},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		kft_quantity q = parse_ok(cases[i].in);

		assert_int_equal(kft_quantity_value(&q), cases[i].value);
		assert_int_equal(kft_quantity_milli_value(&q), cases[i].milli);
	}
}

/* ---- limits (ours) -------------------------------------------------------- */

static void test_too_large(void **state)
{
	static const char *const big[] = {"1e29",       "100000000000000000000000000000",
	                                  "1e100",      "100000000000000E",
	                                  "-1e29",      "1e2147483647",
	                                  "1e100000000"};
	kft_quantity q, max = parse_ok("99999999999999999999999999999.999999999"), one;
	kft_error err;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(big); i++) {
		if (kft_quantity_parse(big[i], &q, &err) != KFT_ELIMIT ||
		    strstr(err.message, "quantity too large") == NULL)
			fail_msg("parse(\"%s\") should be too large", big[i]);
	}
	/* Binary values are capped instead, as in Kubernetes. */
	q = parse_ok("1000000000000000000000000000000000000000Ei");
	expect_canonical(&q, "9223372036854775807", "huge Ei");

	one = parse_ok("1n");
	q = max;
	assert_int_equal(kft_quantity_add(&q, &one, &err), KFT_ELIMIT);
	assert_int_equal(kft_quantity_cmp(&q, &max), 0);
	assert_int_equal(kft_quantity_sub(&q, &max, NULL), 0);
	assert_true(kft_quantity_is_zero(&q));
	q = max;
	assert_int_equal(kft_quantity_mul_int(&q, 2, &err), KFT_ELIMIT);
	assert_int_equal(kft_quantity_mul_int(&q, INT64_MIN, &err), KFT_ELIMIT);
	assert_int_equal(kft_quantity_cmp(&q, &max), 0);
	assert_int_equal(kft_quantity_init_scaled(&q, 1, 29, KFT_QTY_DECIMAL_SI, &err), KFT_ELIMIT);
	assert_int_equal(kft_quantity_init_scaled(&q, 1, -2000000000, KFT_QTY_DECIMAL_SI, NULL), 0);
	expect_canonical(&q, "1n", "1e-2000000000");
}

static void test_buffers_and_nulls(void **state)
{
	kft_quantity q = parse_ok("1500m");
	char buf[KFT_QUANTITY_STRING_MAX], small[6];
	kft_error err;
	char longest[80];

	(void)state;
	assert_int_equal(kft_quantity_format_canonical(&q, small, 5), KFT_ELIMIT);
	assert_string_equal(small, "");
	assert_int_equal(kft_quantity_format_canonical(&q, small, 6), 0);
	assert_string_equal(small, "1500m");
	assert_int_equal(kft_quantity_format_canonical(NULL, buf, sizeof(buf)), KFT_EINVAL);
	assert_int_equal(kft_quantity_parse(NULL, &q, &err), KFT_EINVAL);
	assert_int_equal(kft_quantity_parse("1", NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_quantity_from_json(NULL, &q, &err), KFT_EINVAL);
	/* Kept input text can be longer than any canonical form. */
	memset(longest, '0', sizeof(longest) - 2);
	longest[sizeof(longest) - 2] = '1';
	longest[sizeof(longest) - 1] = '\0';
	assert_int_equal(kft_quantity_reserialize(longest, buf, sizeof(buf), &err), KFT_ELIMIT);
	/* The most negative value with the longest suffix fits the documented size. */
	q = parse_ok("-99999999999999999999999999999.999999999");
	assert_int_equal(kft_quantity_format_canonical(&q, buf, sizeof(buf)), 0);
	q.format = KFT_QTY_DECIMAL_EXPONENT;
	assert_int_equal(kft_quantity_format_canonical(&q, buf, sizeof(buf)), 0);
}

static void test_parse_len_and_long_input(void **state)
{
	static char many_zeros[100003];
	kft_quantity q;
	kft_error err;

	(void)state;
	assert_int_equal(kft_quantity_parse_len("12Mi junk", 4, &q, &err), 0);
	expect_canonical(&q, "12Mi", "parse_len");
	assert_int_equal(kft_quantity_parse_len("1\0", 2, &q, &err), KFT_EPARSE);
	assert_string_equal(err.message, KFT_QUANTITY_ERR_FORMAT);
	/* Long inputs are read in one linear pass. */
	memset(many_zeros, '0', sizeof(many_zeros) - 1);
	many_zeros[1] = '.';
	many_zeros[sizeof(many_zeros) - 2] = '7';
	q = parse_ok(many_zeros);
	expect_canonical(&q, "1n", "0.000...7");
}

/* ---- JSON: TestJSONWhitespace and numbers (ours) -------------------------- */

static void test_from_json(void **state)
{
	static const struct {
		const char *json;
		const char *want; /* canonical, or NULL for an error */
		int format;
	} cases[] = {
	        {"\" 1\"", "1", DSI},
	        {"\"1 \"", "1", DSI},
	        {"1", "1", DSI},
	        {" 1", "1", DSI},
	        {"1 ", "1", DSI},
	        {"10", "10", DSI},
	        {"-1", "-1", DSI},
	        {" -1", "-1", DSI},
	        /* ours, each checked against Go's YAML -> JSON -> Quantity path */
	        {"0.5", "500m", DSI},
	        {"2", "2", DSI},
	        {"1e3", "1k", DSI},
	        {"100.0", "100", DSI},
	        {"0.1", "100m", DSI},
	        {"1.5e-7", "150e-9", DEX},
	        {"1e-7", "100e-9", DEX},
	        {"1e21", "1e21", DEX},
	        {"123456789.123", "123456789123m", DSI},
	        {"-0.0", "0", DSI},
	        {"0.000001", "1u", DSI},
	        {"null", "0", DSI},
	        {"\"\\u00a01Gi\\u3000\\t\"", "1Gi", BSI},
	        {"\"4Gi\"", "4Gi", BSI},
	        {"\"\"", NULL, 0},
	        {"\"1\\u0000\"", NULL, 0},
	        {"\"\\u200b1\"", NULL, 0}, /* zero-width space is not white space */
	        {"true", NULL, 0},
	        {"[1]", NULL, 0},
	        {"{}", NULL, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_LEN(cases); i++) {
		json_error_t jerr;
		json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		kft_quantity q = make(3, 0, DSI);
		kft_error err;
		int rc;

		if (!v)
			fail_msg("bad test JSON %s: %s", cases[i].json, jerr.text);
		rc = kft_quantity_from_json(v, &q, &err);
		json_decref(v);
		if (!cases[i].want) {
			if (rc != KFT_EPARSE || strcmp(err.message, KFT_QUANTITY_ERR_FORMAT) != 0)
				fail_msg("from_json(%s) = %d \"%s\"", cases[i].json, rc,
				         err.message);
			continue;
		}
		if (rc != 0)
			fail_msg("from_json(%s) failed: %s", cases[i].json, err.message);
		expect_canonical(&q, cases[i].want, cases[i].json);
		assert_int_equal(q.format, cases[i].format);
	}
}

/* Container resources as upstream's resource.Quantity marshals them
 * (apimachinery quantity.go MarshalJSON: the canonical string). */
static void test_canonical_list(void **state)
{
	(void)state;
	json_t *list = json_loads(
	        "{\"nvidia.com/gpu\": 2, \"cpu\": \"2000m\", \"memory\": \"8192Mi\"}", 0, NULL);
	assert_int_equal(kft_quantity_canonical_list(list, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(list, "nvidia.com/gpu")), "2");
	assert_string_equal(json_string_value(json_object_get(list, "cpu")), "2");
	assert_string_equal(json_string_value(json_object_get(list, "memory")), "8Gi");
	json_decref(list);
	kft_error err = {0};
	list = json_loads("{\"cpu\": \"lots\"}", 0, NULL);
	assert_int_equal(kft_quantity_canonical_list(list, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "cpu: "));
	json_decref(list);
	assert_int_equal(kft_quantity_canonical_list(NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_table),
	        cmocka_unit_test(test_parse_rejects),
	        cmocka_unit_test(test_canonical_string),
	        cmocka_unit_test(test_parse_then_print),
	        cmocka_unit_test(test_cmp),
	        cmocka_unit_test(test_add_sub),
	        cmocka_unit_test(test_add_zero_keeps_suffix),
	        cmocka_unit_test(test_mul),
	        cmocka_unit_test(test_constructors),
	        cmocka_unit_test(test_scaled_set),
	        cmocka_unit_test(test_scaled_value),
	        cmocka_unit_test(test_value_and_milli),
	        cmocka_unit_test(test_too_large),
	        cmocka_unit_test(test_buffers_and_nulls),
	        cmocka_unit_test(test_parse_len_and_long_input),
	        cmocka_unit_test(test_from_json),
	        cmocka_unit_test(test_canonical_list),
	};

	return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
