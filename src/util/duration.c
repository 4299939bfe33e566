/*
 * duration.c - Go's time.ParseDuration (see duration.h). Each number is read
 * as a double (digits, an optional '.', more digits: no exponent, no inner
 * sign) and scaled by its unit, the longest unit name that matches; the sum
 * must stay within Go's int64 nanoseconds.
 */
#include "util/duration.h"

#include <string.h>

#include "kftrainer/error.h"

/* Go counts in int64 nanoseconds: at most 2^63-1 ns, about 292 years (to a
 * double's precision, which cannot tell 2^63-1 from 2^63). */
#define GO_MAX_MS 9223372036854.775808

static const struct {
	const char *name;
	double ms;
} units[] = {
        {"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3},
        {"ms", 1.0},  {"s", 1e3},   {"m", 60e3},         {"h", 3600e3},
};

/* Milliseconds per unit at s (the longest name that matches), its length in
 * *len; 0 when no unit starts there. */
static double unit_at(const char *s, size_t *len)
{
	double ms = 0;
	*len = 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (n > *len && strncmp(s, units[i].name, n) == 0) {
			*len = n;
			ms = units[i].ms;
		}
	}
	return ms;
}

/* "DIGITS[.DIGITS]" at s, either side possibly empty but not both; the text
 * after it, or NULL. */
static const char *number_at(const char *s, double *out)
{
	double n = 0, scale = 1;
	int digits = 0;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (n > GO_MAX_MS * 1e6)
			return NULL; /* past any unit's range already */
		n = n * 10 + (*s - '0');
	}
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			n += (*s - '0') * (scale /= 10);
	*out = n;
	return digits ? s : NULL;
}

int kft_duration_parse_ms(const char *s, int64_t *ms)
{
	if (!s)
		return KFT_EINVAL;
	int neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (strcmp(s, "0") == 0) {
		*ms = 0;
		return 0;
	}
	if (!*s)
		return KFT_EINVAL;
	double total = 0;
	while (*s) {
		double n, per;
		size_t len;
		if ((s = number_at(s, &n)) == NULL || (per = unit_at(s, &len)) == 0)
			return KFT_EINVAL;
		total += n * per;
		if (total > GO_MAX_MS)
			return KFT_EINVAL;
		s += len;
	}
	*ms = (int64_t)(neg ? -total : total);
	return 0;
}
