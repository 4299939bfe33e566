/*
 * yaml_scalar.c - what an unquoted YAML scalar means, and how numbers print.
 *
 * Kubernetes reads YAML with go-yaml v2, which types unquoted text by its
 * spelling (YAML 1.1): `yes` is a boolean, `0x1F` an integer, `1e3` a real.
 * We follow the same steps in the same order, because a user's manifest must
 * mean the same thing to kftrainer as to kubectl:
 *   1. Empty text is null. Text whose first character cannot start a
 *      non-string (anything but a sign, digit, '.', '~' or one of yYnNtTfFoO)
 *      is a string.
 *   2. A fixed list of words: null/bool spellings, and .inf/.nan.
 *   3. For a sign or digit: drop every '_', then try an integer in Go's
 *      base-prefix syntax (0x, 0o, 0b, leading 0 = octal), then an unsigned
 *      integer, then a decimal real. For '.': a decimal real like ".5".
 *   4. Anything else is a string.
 * The printer calls the same function to learn whether a string can be left
 * unquoted, so both sides cannot drift apart.
 *
 * Reals are parsed and printed with the C library, which obeys the current
 * locale's decimal point; we translate '.' both ways so a program that calls
 * setlocale() still reads "1.5" as one and a half.
 */
#include "yaml_internal.h"

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct word {
	const char *text;
	enum kft_yaml_kind kind;
	int truth;
};

static const struct word words[] = {
        {"y", KFT_YAML_BOOL, 1},          {"Y", KFT_YAML_BOOL, 1},
        {"yes", KFT_YAML_BOOL, 1},        {"Yes", KFT_YAML_BOOL, 1},
        {"YES", KFT_YAML_BOOL, 1},        {"true", KFT_YAML_BOOL, 1},
        {"True", KFT_YAML_BOOL, 1},       {"TRUE", KFT_YAML_BOOL, 1},
        {"on", KFT_YAML_BOOL, 1},         {"On", KFT_YAML_BOOL, 1},
        {"ON", KFT_YAML_BOOL, 1},         {"n", KFT_YAML_BOOL, 0},
        {"N", KFT_YAML_BOOL, 0},          {"no", KFT_YAML_BOOL, 0},
        {"No", KFT_YAML_BOOL, 0},         {"NO", KFT_YAML_BOOL, 0},
        {"false", KFT_YAML_BOOL, 0},      {"False", KFT_YAML_BOOL, 0},
        {"FALSE", KFT_YAML_BOOL, 0},      {"off", KFT_YAML_BOOL, 0},
        {"Off", KFT_YAML_BOOL, 0},        {"OFF", KFT_YAML_BOOL, 0},
        {"~", KFT_YAML_NULL, 0},          {"null", KFT_YAML_NULL, 0},
        {"Null", KFT_YAML_NULL, 0},       {"NULL", KFT_YAML_NULL, 0},
        {".nan", KFT_YAML_NONFINITE, 0},  {".NaN", KFT_YAML_NONFINITE, 0},
        {".NAN", KFT_YAML_NONFINITE, 0},  {".inf", KFT_YAML_NONFINITE, 0},
        {".Inf", KFT_YAML_NONFINITE, 0},  {".INF", KFT_YAML_NONFINITE, 0},
        {"+.inf", KFT_YAML_NONFINITE, 0}, {"+.Inf", KFT_YAML_NONFINITE, 0},
        {"+.INF", KFT_YAML_NONFINITE, 0}, {"-.inf", KFT_YAML_NONFINITE, 0},
        {"-.Inf", KFT_YAML_NONFINITE, 0}, {"-.INF", KFT_YAML_NONFINITE, 0},
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int may_start_non_string(char c)
{
	return is_digit(c) || (c != '\0' && strchr("+-.~yYnNtTfFoO", c) != NULL);
}

static const struct word *find_word(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strlen(words[i].text) == len && memcmp(words[i].text, s, len) == 0)
			return &words[i];
	}
	return NULL;
}

static int digit_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/* Go's strconv.ParseUint(s, 0, 64): base from the prefix, every remaining
 * character a digit of that base, no overflow. */
static int parse_unsigned(const char *s, size_t len, uint64_t *out)
{
	unsigned base = 10;
	size_t i = 0;
	uint64_t v = 0;

	if (len == 0)
		return -1;
	if (s[0] == '0') {
		char p = len >= 3 ? (char)(s[1] | 0x20) : '\0';
		base = p == 'x' ? 16 : p == 'b' ? 2 : 8;
		i = (p == 'x' || p == 'b' || p == 'o') ? 2 : 1;
	}
	for (; i < len; i++) {
		unsigned d = (unsigned)digit_value(s[i]);
		if (d >= base || v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Go's strconv.ParseInt(s, 0, 64) extended with the ParseUint fallback
 * go-yaml tries next: values in (INT64_MAX, UINT64_MAX] are accepted and
 * flagged through *is_unsigned. */
static int parse_integer(const char *s, size_t len, int64_t *out, uint64_t *big, int *is_unsigned)
{
	int neg = len > 0 && s[0] == '-';
	int sign = len > 0 && (s[0] == '-' || s[0] == '+');
	uint64_t mag;

	*is_unsigned = 0;
	if (parse_unsigned(s + sign, len - sign, &mag) == 0) {
		if (!neg && mag <= (uint64_t)INT64_MAX) {
			*out = (int64_t)mag;
			return 0;
		}
		if (neg && mag <= (uint64_t)INT64_MAX + 1) {
			*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
			return 0;
		}
		if (!sign) {
			*big = mag;
			*is_unsigned = 1;
			return 0;
		}
	}
	return -1;
}

static size_t count_digits(const char *s, size_t len, size_t i)
{
	size_t start = i;
	while (i < len && is_digit(s[i]))
		i++;
	return i - start;
}

/* go-yaml's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int looks_like_float(const char *s, size_t len)
{
	size_t i = 0, n;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	if (i < len && s[i] == '.') {
		n = count_digits(s, len, i + 1);
		if (n == 0)
			return 0;
		i += 1 + n;
	} else {
		n = count_digits(s, len, i);
		if (n == 0)
			return 0;
		i += n;
		if (i < len && s[i] == '.')
			i += 1 + count_digits(s, len, i + 1);
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		n = count_digits(s, len, i);
		if (n == 0)
			return 0;
		i += n;
	}
	return i == len;
}

static char locale_point(void)
{
	const char *p = localeconv()->decimal_point;
	return p && p[0] ? p[0] : '.';
}

/* strtod on text known to match looks_like_float, in any locale. buf holds
 * len+1 writable bytes. Returns -1 when the value overflows a double (Go's
 * ParseFloat rejects those, so the text stays a string). */
static int parse_real(char *buf, size_t len, double *out)
{
	char point = locale_point();
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '.')
			buf[i] = point;
	}
	buf[len] = '\0';
	*out = strtod(buf, NULL);
	return isinf(*out) ? -1 : 0;
}

/* Copies s without '_' into buf (len+1 bytes); returns the new length. */
static size_t strip_underscores(const char *s, size_t len, char *buf)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '_')
			buf[n++] = s[i];
	}
	buf[n] = '\0';
	return n;
}

static json_t *number_value(char *buf, size_t n, enum kft_yaml_kind *kind, int *matched)
{
	int64_t i;
	uint64_t u;
	int is_unsigned;
	double d;

	*matched = 1;
	if (parse_integer(buf, n, &i, &u, &is_unsigned) == 0) {
		*kind = KFT_YAML_INT;
		return is_unsigned ? json_real((double)u) : json_integer((json_int_t)i);
	}
	if (looks_like_float(buf, n) && parse_real(buf, n, &d) == 0) {
		*kind = KFT_YAML_FLOAT;
		return json_real(d);
	}
	*matched = 0;
	return NULL;
}

/* Steps 3 and 4 for text starting with a sign, a digit or '.'. */
static int resolve_number(const char *s, size_t len, enum kft_yaml_kind *kind, json_t **value)
{
	char small[128];
	char *buf = len < sizeof(small) ? small : malloc(len + 1);
	size_t n;
	int matched;
	json_t *v;

	if (!buf)
		return KFT_ENOMEM;
	/* Only sign/digit text loses its underscores; ".5_0" stays a string. */
	if (s[0] == '.') {
		memcpy(buf, s, len);
		buf[len] = '\0';
		n = len;
	} else {
		n = strip_underscores(s, len, buf);
	}
	v = number_value(buf, n, kind, &matched);
	if (buf != small)
		free(buf);
	if (!matched) {
		*kind = KFT_YAML_STR;
		v = json_stringn(s, len);
	}
	if (!v)
		return KFT_ENOMEM;
	if (value)
		*value = v;
	else
		json_decref(v);
	return 0;
}

static json_t *word_value(const struct word *w)
{
	switch (w->kind) {
	case KFT_YAML_BOOL: return json_boolean(w->truth);
	case KFT_YAML_NULL: return json_null();
	default: return NULL;
	}
}

int kft_yaml_resolve_plain(const char *s, size_t len, enum kft_yaml_kind *kind, json_t **value)
{
	const struct word *w;

	if (value)
		*value = NULL;
	if (len == 0) {
		*kind = KFT_YAML_NULL;
		if (value)
			*value = json_null();
		return 0;
	}
	if (!may_start_non_string(s[0])) {
		*kind = KFT_YAML_STR;
		if (value && !(*value = json_stringn(s, len)))
			return KFT_ENOMEM;
		return 0;
	}
	w = find_word(s, len);
	if (w) {
		*kind = w->kind;
		if (value)
			*value = word_value(w);
		return 0;
	}
	if (s[0] == '.' || s[0] == '+' || s[0] == '-' || is_digit(s[0]))
		return resolve_number(s, len, kind, value);
	*kind = KFT_YAML_STR;
	if (value && !(*value = json_stringn(s, len)))
		return KFT_ENOMEM;
	return 0;
}

/* Rewrites the locale's decimal point in buf as '.'. */
static void use_dot(char *buf)
{
	char point = locale_point();
	if (point == '.')
		return;
	for (char *p = buf; *p; p++) {
		if (*p == point)
			*p = '.';
	}
}

/* Formats v with the fewest significant digits that read back as v (as a
 * float32 when `single`), in %e form; returns the decimal exponent. */
static int shortest_exponent_form(double v, int single, char buf[KFT_YAML_NUMBER_MAX], int *digits)
{
	int max = single ? 9 : 17;
	char *e;

	for (*digits = 1; *digits < max; (*digits)++) {
		snprintf(buf, KFT_YAML_NUMBER_MAX, "%.*e", *digits - 1, v);
		if (single ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, KFT_YAML_NUMBER_MAX, "%.*e", *digits - 1, v);
	e = strchr(buf, 'e');
	return e ? atoi(e + 1) : 0;
}

/* Rewrites buf in fixed notation with the same significant digits. */
static void fixed_form(double v, int digits, int exponent, char buf[KFT_YAML_NUMBER_MAX])
{
	int decimals = digits - 1 - exponent;
	snprintf(buf, KFT_YAML_NUMBER_MAX, "%.*f", decimals > 0 ? decimals : 0, v);
}

void kft_yaml_format_real(double d, char buf[KFT_YAML_NUMBER_MAX])
{
	int digits;
	int exponent = shortest_exponent_form(d, 0, buf, &digits);

	/* Plain digits read better for everyday magnitudes (0.0001 .. 1e15). */
	if (exponent >= -4 && exponent < 16)
		fixed_form(d, digits, exponent, buf);
	use_dot(buf);
	/* "100" or "-0" would read back as an integer: mark it as a real. */
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
}

void kft_yaml_format_key_real(double d, char buf[KFT_YAML_NUMBER_MAX])
{
	float f = (float)d;
	int digits, exponent;

	if (isinf(f)) {
		strcpy(buf, f > 0 ? ".inf" : "-.inf");
		return;
	}
	exponent = shortest_exponent_form((double)f, 1, buf, &digits);
	/* Go's shortest 'g' format switches to an exponent from 1e+06 up. */
	if (f == 0 || (exponent >= -4 && exponent < 6))
		fixed_form((double)f, digits, exponent, buf);
	use_dot(buf);
}
