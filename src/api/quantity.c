/*
 * quantity.c - exact Kubernetes quantities. See include/kftrainer/quantity.h.
 *
 * How it works, in plain words.
 *
 * A value is a signed 128-bit count of nano-units kept below 10^38 (that is
 * 10^29 units) in magnitude, so sums of two values never overflow the type
 * and every check is a plain comparison.
 *
 * Parsing happens in three steps. scan_text() splits the text into sign,
 * integer digits, fraction digits and suffix exactly where Kubernetes'
 * scanner does, so the same strings are rejected with the same message.
 * interpret_suffix() turns the suffix into a format and an exponent. Then
 * accumulate() reads the digits from the least significant end, multiplies
 * them by 2^n for binary suffixes on the fly (the carry always fits in 64
 * bits) and adds each product digit at its nano-unit weight: digits below one
 * nano-unit only record that the value must be rounded up, digits at 10^38 or
 * more record an overflow. This needs no buffer, no allocation, and time
 * linear in the input, whatever its length.
 *
 * Kubernetes has a fast path and a slow path through ParseQuantity. They give
 * the same value, but two visible behaviours depend on which one runs: only
 * the slow path rejects a number without any digit (".e-10"), and only the
 * fast path keeps the input text for later printing. takes_fast_path()
 * reproduces that choice from the lengths of the digit runs.
 */
#include "kftrainer/quantity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 qint;
__extension__ typedef unsigned __int128 quint;

#define NANO_PER_UNIT ((qint)1000000000)
/* Values stay strictly below 10^LIMIT_DIGITS nano-units in magnitude. */
#define LIMIT_DIGITS 38

/* 10^n for 0 <= n <= LIMIT_DIGITS. */
static qint pow10q(int n)
{
	qint p = 1;

	while (n-- > 0)
		p *= 10;
	return p;
}

static int in_range(qint v)
{
	qint limit = pow10q(LIMIT_DIGITS);

	return v > -limit && v < limit;
}

static int too_large(kft_error *err)
{
	return kft_error_set(err, KFT_ELIMIT,
	                     "quantity too large: magnitudes of 1e29 and more are not supported");
}

/* The halves in the public struct are a two's complement split; gcc and clang
 * convert between signed and unsigned modulo 2^N, which is all we rely on. */
static qint get_nano(const kft_quantity *q)
{
	quint u = ((quint)(uint64_t)q->nano_hi << 64) | q->nano_lo;

	return (qint)u;
}

static void set_nano(kft_quantity *q, qint v)
{
	quint u = (quint)v;

	q->nano_hi = (int64_t)(uint64_t)(u >> 64);
	q->nano_lo = (uint64_t)u;
}

static int sign_of(qint v)
{
	return (v > 0) - (v < 0);
}

/* ---- scanning ---------------------------------------------------------- */

/* The pieces of a quantity's text. num excludes leading zeros; den is the
 * run of digits after '.', possibly empty ("1." and "1.G" are accepted). */
struct scan {
	int negative;
	int has_digit; /* any digit at all before the suffix, zeros included */
	const char *num;
	size_t num_len;
	const char *den;
	size_t den_len;
	const char *suffix;
	size_t suffix_len;
};

static size_t skip_digits(const char *s, size_t len, size_t pos)
{
	while (pos < len && s[pos] >= '0' && s[pos] <= '9')
		pos++;
	return pos;
}

static int is_suffix_letter(char c)
{
	return c != '\0' && strchr("eEinumkKMGTP", c) != NULL;
}

/* Returns 0, or -1 for text Kubernetes' scanner rejects (the "must match"
 * error). Like Kubernetes, this is looser than its own message says: "-",
 * "." and "Ki" all scan, as zero. */
static int scan_text(const char *s, size_t len, struct scan *sc)
{
	size_t pos = 0, start;

	memset(sc, 0, sizeof(*sc));
	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		sc->negative = s[0] == '-';
		pos = 1;
	}
	start = pos;
	while (pos < len && s[pos] == '0')
		pos++;
	sc->num = s + pos;
	pos = skip_digits(s, len, pos);
	sc->num_len = (size_t)(s + pos - sc->num);
	sc->has_digit = pos > start;
	if (pos < len && s[pos] == '.') {
		sc->den = s + ++pos;
		pos = skip_digits(s, len, pos);
		sc->den_len = (size_t)(s + pos - sc->den);
		sc->has_digit |= sc->den_len > 0;
	}
	sc->suffix = s + pos;
	while (pos < len && is_suffix_letter(s[pos]))
		pos++;
	if (pos < len && (s[pos] == '+' || s[pos] == '-'))
		pos++;
	pos = skip_digits(s, len, pos);
	sc->suffix_len = (size_t)(s + pos - sc->suffix);
	return pos == len ? 0 : -1;
}

/* ---- suffixes ---------------------------------------------------------- */

/* exp is a power of ten for decimal suffixes and a power of two for binary
 * ones; the same table serves parsing and printing. */
static const struct suffix_entry {
	const char *text;
	int binary;
	int32_t exp;
} suffix_table[] = {
        {"", 0, 0},    {"n", 0, -9},  {"u", 0, -6},  {"m", 0, -3},  {"k", 0, 3},   {"M", 0, 6},
        {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},  {"E", 0, 18},  {"Ki", 1, 10}, {"Mi", 1, 20},
        {"Gi", 1, 30}, {"Ti", 1, 40}, {"Pi", 1, 50}, {"Ei", 1, 60},
};

#define SUFFIX_COUNT (sizeof(suffix_table) / sizeof(suffix_table[0]))

struct suffix_info {
	kft_quantity_format format;
	int32_t exp;
};

/* Reads [+-]digits into an int64 the way Go's strconv.ParseInt does. */
static int parse_int64(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	int negative = 0;
	uint64_t mag = 0, bound;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		negative = s[i++] == '-';
	if (i == n)
		return -1;
	bound = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || mag > (bound - d) / 10)
			return -1;
		mag = mag * 10 + d;
	}
	if (negative && mag > 0)
		*out = -(int64_t)(mag - 1) - 1;
	else
		*out = (int64_t)mag;
	return 0;
}

/* Go's int32(x): keep the low 32 bits, read them as two's complement. */
static int32_t wrap_int32(int64_t v)
{
	uint32_t u = (uint32_t)(uint64_t)v;

	if (u <= (uint32_t)INT32_MAX)
		return (int32_t)u;
	return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static int interpret_suffix(const char *s, size_t n, struct suffix_info *out)
{
	size_t i;
	int64_t exp;

	for (i = 0; i < SUFFIX_COUNT; i++) {
		const struct suffix_entry *e = &suffix_table[i];

		if (strlen(e->text) == n && memcmp(e->text, s, n) == 0) {
			out->format = e->binary ? KFT_QTY_BINARY_SI : KFT_QTY_DECIMAL_SI;
			out->exp = e->exp;
			return 0;
		}
	}
	if (n > 1 && (s[0] == 'e' || s[0] == 'E') && parse_int64(s + 1, n - 1, &exp) == 0) {
		out->format = KFT_QTY_DECIMAL_EXPONENT;
		out->exp = wrap_int32(exp);
		return 0;
	}
	return -1;
}

/* ---- Kubernetes' two parsing paths ------------------------------------- */

/* Kubernetes counts an empty integer part as the one digit "0". */
static int64_t num_digits(const struct scan *sc)
{
	return sc->num_len ? (int64_t)sc->num_len : 1;
}

/* True when Kubernetes would hold the parsed value in an int64 at once
 * (its precision and scale tests), false when it goes through big decimals. */
static int takes_fast_path(const struct scan *sc, const struct suffix_info *si)
{
	if (si->format == KFT_QTY_BINARY_SI)
		return sc->den_len == 0 && 14 - num_digits(sc) - si->exp * 3 / 10 >= 0;
	return 18 - num_digits(sc) - (int64_t)sc->den_len >= 0 &&
	       (int64_t)si->exp - (int64_t)sc->den_len >= -9;
}

/* True when Kubernetes caches the input text as the value's printed form:
 * its quick "looks canonical" test on the fast path. */
static int keeps_text(const struct scan *sc, const struct suffix_info *si)
{
	char shifted[24];
	size_t n = 0, i;
	uint64_t num = 0;

	if (!takes_fast_path(sc, si))
		return 0;
	if (si->format == KFT_QTY_BINARY_SI) {
		for (i = 0; i < sc->num_len; i++)
			num = num * 10 + (uint64_t)(sc->num[i] - '0');
		return (num & 7) != 0;
	}
	/* Fewer than 19 digits here, by the fast-path test. */
	if (sc->num_len == 0)
		shifted[n++] = '0';
	for (i = 0; i < sc->num_len; i++)
		shifted[n++] = sc->num[i];
	for (i = 0; i < sc->den_len; i++)
		shifted[n++] = sc->den[i];
	if (((int64_t)si->exp - (int64_t)sc->den_len) % 3 != 0 || shifted[0] == '0')
		return 0;
	return !(n >= 3 && memcmp(shifted + n - 3, "000", 3) == 0);
}

/* ---- exact value ------------------------------------------------------- */

struct accum {
	qint mag;     /* the whole nano-units so far */
	int inexact;  /* a non-zero digit fell below one nano-unit */
	int overflow; /* a non-zero digit landed at 10^38 nano-units or above */
};

/* Adds digit d with weight 10^weight nano-units. Digits arrive from the least
 * significant end, so mag < 10^weight here and the sum cannot overflow. */
static void add_digit(struct accum *a, unsigned d, int64_t weight)
{
	if (d == 0)
		return;
	if (weight < 0)
		a->inexact = 1;
	else if (weight >= LIMIT_DIGITS)
		a->overflow = 1;
	else
		a->mag += (qint)d * pow10q((int)weight);
}

/* Digit j of the digit string num+den, counting from its right end. */
static unsigned digit_from_right(const struct scan *sc, size_t j)
{
	if (j < sc->den_len)
		return (unsigned)(sc->den[sc->den_len - 1 - j] - '0');
	j -= sc->den_len;
	return (unsigned)(sc->num[sc->num_len - 1 - j] - '0');
}

/* Accumulates (digits * mult) * 10^shift nano-units, mult <= 2^60. The carry
 * stays below mult, so d * mult + carry < 10 * 2^60 fits in 64 bits. */
static void accumulate(const struct scan *sc, uint64_t mult, int64_t shift, struct accum *a)
{
	size_t n = sc->num_len + sc->den_len, j;
	uint64_t carry = 0;

	for (j = 0; j < n; j++) {
		uint64_t t = (uint64_t)digit_from_right(sc, j) * mult + carry;

		add_digit(a, (unsigned)(t % 10), (int64_t)j + shift);
		carry = t / 10;
	}
	for (; carry != 0; j++, carry /= 10)
		add_digit(a, (unsigned)(carry % 10), (int64_t)j + shift);
}

/* Rounds away from zero to whole nano-units, then applies Kubernetes' BinarySI
 * rules: a cap at 2^63-1 units, and DecimalSI for values below one unit. */
static int compute_value(const struct scan *sc, const struct suffix_info *si, kft_quantity *out,
                         kft_error *err)
{
	struct accum a = {0, 0, 0};
	int binary = si->format == KFT_QTY_BINARY_SI;
	uint64_t mult = binary ? (uint64_t)1 << si->exp : 1;
	int64_t shift = (binary ? 0 : (int64_t)si->exp) - (int64_t)sc->den_len + 9;
	qint cap = (qint)INT64_MAX * NANO_PER_UNIT, mag;
	kft_quantity_format format = si->format;

	accumulate(sc, mult, shift, &a);
	mag = a.mag + a.inexact;
	if (binary && (a.overflow || mag > cap)) {
		a.overflow = 0;
		mag = cap;
	}
	if (a.overflow || !in_range(mag))
		return too_large(err);
	if (binary && mag > 0 && mag < NANO_PER_UNIT)
		format = KFT_QTY_DECIMAL_SI;
	set_nano(out, sc->negative ? -mag : mag);
	out->format = format;
	return 0;
}

/* The whole of ParseQuantity; *keeps (optional) tells whether Kubernetes
 * would print the input text itself. */
static int parse_text(const char *s, size_t len, kft_quantity *out, int *keeps, kft_error *err)
{
	struct scan sc;
	struct suffix_info si;
	kft_quantity q;
	int rc;

	if (len == 0 || scan_text(s, len, &sc) != 0)
		return kft_error_set(err, KFT_EPARSE, "%s", KFT_QUANTITY_ERR_FORMAT);
	if (interpret_suffix(sc.suffix, sc.suffix_len, &si) != 0)
		return kft_error_set(err, KFT_EPARSE, "%s", KFT_QUANTITY_ERR_SUFFIX);
	if (!sc.has_digit && !takes_fast_path(&sc, &si))
		return kft_error_set(err, KFT_EPARSE, "%s", KFT_QUANTITY_ERR_NUMERIC);
	rc = compute_value(&sc, &si, &q, err);
	if (rc != 0)
		return rc;
	if (keeps)
		*keeps = keeps_text(&sc, &si);
	*out = q;
	return 0;
}

int kft_quantity_parse_len(const char *s, size_t len, kft_quantity *out, kft_error *err)
{
	if (!s || !out)
		return kft_error_set(err, KFT_EINVAL, "quantity: no text or no result given");
	return parse_text(s, len, out, NULL, err);
}

int kft_quantity_parse(const char *s, kft_quantity *out, kft_error *err)
{
	if (!s)
		return kft_error_set(err, KFT_EINVAL, "quantity: no text or no result given");
	return kft_quantity_parse_len(s, strlen(s), out, err);
}

/* ---- printing ---------------------------------------------------------- */

/* Writes v in decimal at dst (room for 41 bytes) and returns the length. */
static size_t put_qint(char *dst, qint v)
{
	char rev[40];
	size_t n = 0, len = 0;
	quint u = v < 0 ? -(quint)v : (quint)v;

	do {
		rev[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0);
	if (v < 0)
		dst[len++] = '-';
	while (n > 0)
		dst[len++] = rev[--n];
	return len;
}

/* Appends the suffix for (binary, exp); appends nothing when none exists,
 * which is what Kubernetes does too. */
static size_t put_suffix(char *dst, int binary, int32_t exp)
{
	size_t i, n;

	for (i = 0; i < SUFFIX_COUNT; i++) {
		if (suffix_table[i].binary == binary && suffix_table[i].exp == exp) {
			n = strlen(suffix_table[i].text);
			memcpy(dst, suffix_table[i].text, n);
			return n;
		}
	}
	return 0;
}

/* Mantissa and power of ten with the exponent a multiple of three and as
 * large as possible without a fraction. v is not zero. */
static size_t put_decimal(char *dst, qint v, kft_quantity_format format)
{
	int32_t exp = -9;
	size_t n;

	while (v % 10 == 0) {
		v /= 10;
		exp++;
	}
	while (exp % 3 != 0) {
		v *= 10;
		exp--;
	}
	n = put_qint(dst, v);
	if (format == KFT_QTY_DECIMAL_SI)
		return n + put_suffix(dst + n, 0, exp);
	if (exp != 0)
		n += (size_t)sprintf(dst + n, "e%d", (int)exp);
	return n;
}

/* Whole units divided by 1024 as often as it goes evenly. */
static size_t put_binary(char *dst, qint units)
{
	int32_t exp = 0;
	size_t n;

	while ((units >= 1024 || units <= -1024) && units % 1024 == 0) {
		units /= 1024;
		exp += 10;
	}
	n = put_qint(dst, units);
	return n + put_suffix(dst + n, 1, exp);
}

static int copy_out(const char *src, size_t n, char *buf, size_t size)
{
	if (n >= size) {
		if (size > 0)
			buf[0] = '\0';
		return KFT_ELIMIT;
	}
	memcpy(buf, src, n);
	buf[n] = '\0';
	return 0;
}

int kft_quantity_format_canonical(const kft_quantity *q, char *buf, size_t size)
{
	char text[KFT_QUANTITY_STRING_MAX];
	size_t n;
	qint v, bin_min = 1024 * NANO_PER_UNIT;

	if (!q || !buf)
		return KFT_EINVAL;
	v = get_nano(q);
	if (v == 0) {
		text[0] = '0';
		n = 1;
	} else if (q->format == KFT_QTY_BINARY_SI && (v >= bin_min || v <= -bin_min) &&
	           v % NANO_PER_UNIT == 0) {
		n = put_binary(text, v / NANO_PER_UNIT);
	} else if (q->format == KFT_QTY_BINARY_SI) {
		n = put_decimal(text, v, KFT_QTY_DECIMAL_SI);
	} else {
		/* An unknown format prints in exponent form, as in Kubernetes. */
		n = put_decimal(text, v, q->format);
	}
	return copy_out(text, n, buf, size);
}

int kft_quantity_reserialize(const char *s, char *buf, size_t size, kft_error *err)
{
	kft_quantity q;
	int keeps = 0, rc;

	if (!s || !buf)
		return kft_error_set(err, KFT_EINVAL, "quantity: no text or no buffer given");
	if (size > 0)
		buf[0] = '\0';
	rc = parse_text(s, strlen(s), &q, &keeps, err);
	if (rc != 0)
		return rc;
	rc = keeps ? copy_out(s, strlen(s), buf, size)
	           : kft_quantity_format_canonical(&q, buf, size);
	if (rc != 0)
		return kft_error_set(err, KFT_ELIMIT,
		                     "quantity: output buffer of %zu bytes too small", size);
	return 0;
}

/* ---- construction and arithmetic --------------------------------------- */

/* v * 10^exp rounded away from zero; -1 when the result is out of range. */
static int shift_decimal(qint v, int64_t exp, qint *out)
{
	qint p, rest, tenth_of_limit = pow10q(LIMIT_DIGITS - 1);

	if (v == 0 || exp == 0) {
		*out = v;
		return 0;
	}
	if (exp > 0) {
		/* v is not zero, so this loop ends within 38 rounds. */
		for (; exp > 0; exp--) {
			if (v >= tenth_of_limit || v <= -tenth_of_limit)
				return -1;
			v *= 10;
		}
		*out = v;
		return 0;
	}
	if (-exp > LIMIT_DIGITS) {
		*out = sign_of(v); /* 0 < |v| < 10^38 <= 10^-exp */
		return 0;
	}
	p = pow10q((int)-exp);
	rest = v % p;
	*out = v / p + sign_of(rest);
	return 0;
}

void kft_quantity_init_int(kft_quantity *q, int64_t value, kft_quantity_format format)
{
	set_nano(q, (qint)value * NANO_PER_UNIT);
	q->format = format;
}

void kft_quantity_init_milli(kft_quantity *q, int64_t milli, kft_quantity_format format)
{
	set_nano(q, (qint)milli * 1000000);
	q->format = format;
}

int kft_quantity_init_scaled(kft_quantity *q, int64_t value, int32_t scale,
                             kft_quantity_format format, kft_error *err)
{
	qint nano;

	if (!q)
		return kft_error_set(err, KFT_EINVAL, "quantity: no result given");
	if (shift_decimal(value, (int64_t)scale + 9, &nano) != 0)
		return too_large(err);
	set_nano(q, nano);
	q->format = format;
	return 0;
}

int kft_quantity_cmp(const kft_quantity *a, const kft_quantity *b)
{
	qint x = get_nano(a), y = get_nano(b);

	return (x > y) - (x < y);
}

int kft_quantity_is_zero(const kft_quantity *q)
{
	return get_nano(q) == 0;
}

int kft_quantity_sign(const kft_quantity *q)
{
	return sign_of(get_nano(q));
}

/* Stores a sum or difference; like Kubernetes, a zero accumulator takes the
 * other operand's format so that 0 + 1Gi prints as "1Gi". */
static int store_result(kft_quantity *acc, const kft_quantity *b, qint v, int overflow,
                        kft_error *err)
{
	if (overflow || !in_range(v))
		return too_large(err);
	if (get_nano(acc) == 0)
		acc->format = b->format;
	set_nano(acc, v);
	return 0;
}

int kft_quantity_add(kft_quantity *acc, const kft_quantity *b, kft_error *err)
{
	qint v;
	int overflow = __builtin_add_overflow(get_nano(acc), get_nano(b), &v);

	return store_result(acc, b, v, overflow, err);
}

int kft_quantity_sub(kft_quantity *acc, const kft_quantity *b, kft_error *err)
{
	qint v;
	int overflow = __builtin_sub_overflow(get_nano(acc), get_nano(b), &v);

	return store_result(acc, b, v, overflow, err);
}

int kft_quantity_mul_int(kft_quantity *q, int64_t n, kft_error *err)
{
	qint v;

	if (__builtin_mul_overflow(get_nano(q), (qint)n, &v) || !in_range(v))
		return too_large(err);
	set_nano(q, v);
	return 0;
}

/* ---- conversion to integers -------------------------------------------- */

static int64_t clamp_int64(qint v)
{
	if (v > INT64_MAX)
		return INT64_MAX;
	if (v < INT64_MIN)
		return INT64_MIN;
	return (int64_t)v;
}

int64_t kft_quantity_scaled_value(const kft_quantity *q, int32_t scale)
{
	qint v = get_nano(q), r;

	if (shift_decimal(v, -((int64_t)scale + 9), &r) != 0)
		return v > 0 ? INT64_MAX : INT64_MIN;
	return clamp_int64(r);
}

int64_t kft_quantity_value(const kft_quantity *q)
{
	return kft_quantity_scaled_value(q, 0);
}

int64_t kft_quantity_milli_value(const kft_quantity *q)
{
	return kft_quantity_scaled_value(q, -3);
}

/* ---- JSON -------------------------------------------------------------- */

/* Byte length of the Unicode white-space character at p (Go's
 * unicode.IsSpace, which strings.TrimSpace uses), or 0. */
static size_t space_at(const unsigned char *p, size_t n)
{
	uint32_t cp;

	if (n >= 1 && (p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r')))
		return 1;
	if (n >= 2 && p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0))
		return 2;
	if (n < 3 || (p[0] & 0xF0) != 0xE0 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
		return 0;
	cp = ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
	if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
	    cp == 0x202F || cp == 0x205F || cp == 0x3000)
		return 3;
	return 0;
}

/* Length of a white-space character that ends exactly at p + n, or 0. */
static size_t space_before(const unsigned char *p, size_t n)
{
	size_t k;

	for (k = 1; k <= 3 && k <= n; k++)
		if (space_at(p + n - k, k) == k)
			return k;
	return 0;
}

static int parse_trimmed(const char *s, size_t len, kft_quantity *out, kft_error *err)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k;

	while ((k = space_at(p, len)) > 0) {
		p += k;
		len -= k;
	}
	while ((k = space_before(p, len)) > 0)
		len -= k;
	return parse_text((const char *)p, len, out, NULL, err);
}

/* The fewest significant digits that read back as a (> 0), as in Go's
 * shortest formatting; *exp10 is the power of ten of the first digit. */
static size_t shortest_digits(double a, char *digits, int *exp10)
{
	char text[40];
	const char *p;
	size_t n = 0;
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(text, sizeof(text), "%.*e", prec - 1, a);
		if (strtod(text, NULL) == a)
			break;
	}
	snprintf(text, sizeof(text), "%.*e", prec - 1, a);
	/* Skip whatever decimal point the locale uses. */
	for (p = text; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	*exp10 = *p ? (int)strtol(p + 1, NULL, 10) : 0;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	return n;
}

/* Writes f as Go's encoding/json does: positional for 1e-6 <= |f| < 1e21,
 * else d.ddde-7 / d.ddde+21. This is the text Kubernetes parses after
 * kubectl has turned YAML into JSON. */
static int format_go_float(double f, char *buf, size_t size)
{
	char digits[24], *out = buf;
	double a = fabs(f);
	int exp10, point, i;
	size_t n;

	if (!isfinite(f) || size < 40)
		return -1;
	if (a == 0) {
		snprintf(buf, size, "0");
		return 0;
	}
	n = shortest_digits(a, digits, &exp10);
	if (f < 0)
		*out++ = '-';
	if (a < 1e-6 || a >= 1e21) {
		*out++ = digits[0];
		if (n > 1)
			out += sprintf(out, ".%s", digits + 1);
		sprintf(out, exp10 < 0 ? "e-%d" : "e+%02d", abs(exp10));
		return 0;
	}
	point = exp10 + 1;
	if (point <= 0) {
		out += sprintf(out, "0.");
		for (i = point; i < 0; i++)
			*out++ = '0';
		sprintf(out, "%s", digits);
	} else if ((size_t)point >= n) {
		out += sprintf(out, "%s", digits);
		for (i = (int)n; i < point; i++)
			*out++ = '0';
		*out = '\0';
	} else {
		sprintf(out, "%.*s.%s", point, digits, digits + point);
	}
	return 0;
}

int kft_quantity_from_json(const json_t *v, kft_quantity *out, kft_error *err)
{
	char text[KFT_QUANTITY_STRING_MAX];

	if (!v || !out)
		return kft_error_set(err, KFT_EINVAL, "quantity: no value or no result given");
	switch (json_typeof(v)) {
	case JSON_STRING:
		return parse_trimmed(json_string_value(v), json_string_length(v), out, err);
	case JSON_INTEGER:
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return parse_text(text, strlen(text), out, NULL, err);
	case JSON_REAL:
		if (format_go_float(json_real_value(v), text, sizeof(text)) != 0)
			return kft_error_set(err, KFT_EINVAL, "quantity: not a finite number");
		return parse_text(text, strlen(text), out, NULL, err);
	case JSON_NULL: memset(out, 0, sizeof(*out)); return 0;
	default: return kft_error_set(err, KFT_EPARSE, "%s", KFT_QUANTITY_ERR_FORMAT);
	}
}

int kft_quantity_canonical_list(json_t *list, kft_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(list, k, v)
	{
		kft_quantity q;
		kft_error qe = {0};
		char text[KFT_QUANTITY_STRING_MAX];
		if (kft_quantity_from_json(v, &q, &qe) != 0 ||
		    kft_quantity_format_canonical(&q, text, sizeof(text)) != 0)
			return kft_error_set(err, KFT_EINVAL, "%s: %s", k,
			                     qe.message[0] ? qe.message : "not a quantity");
		if (json_object_set_new(list, k, json_string(text)) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	return 0;
}
