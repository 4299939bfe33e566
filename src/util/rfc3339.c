/*
 * rfc3339.c - Kubernetes' time formats and RFC 3339 parsing (see
 * rfc3339.h). Formatting goes through gmtime_r and fixed-width fields, so a
 * time is written the same everywhere; parsing is by hand (no strptime:
 * it ignores the zone and accepts more than RFC 3339).
 */
#include "util/rfc3339.h"

#include <stdio.h>
#include <string.h>

int kft_rfc3339_format(int64_t sec, long usec, char buf[KFT_RFC3339_MAX])
{
	struct tm tm;
	time_t t = (time_t)sec;
	buf[0] = '\0';
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999 ||
	    usec > 999999)
		return KFT_EINVAL;
	int n = snprintf(buf, KFT_RFC3339_MAX, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
	                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (usec >= 0)
		snprintf(buf + n, (size_t)(KFT_RFC3339_MAX - n), ".%06ldZ", usec);
	else
		snprintf(buf + n, (size_t)(KFT_RFC3339_MAX - n), "Z");
	return 0;
}

void kft_rfc3339_from_timespec(const struct timespec *ts, char seconds[KFT_RFC3339_MAX],
                               char micro[KFT_RFC3339_MAX])
{
	if (seconds)
		kft_rfc3339_format(ts->tv_sec, -1, seconds);
	if (micro)
		kft_rfc3339_format(ts->tv_sec, ts->tv_nsec / 1000, micro);
}

void kft_rfc3339_now(char buf[KFT_RFC3339_MAX])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	kft_rfc3339_from_timespec(&ts, buf, NULL);
}

void kft_rfc3339_now_micro(char buf[KFT_RFC3339_MAX])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	kft_rfc3339_from_timespec(&ts, NULL, buf);
}

/* ---- parsing ---------------------------------------------------------------- */

/* Reads exactly n decimal digits. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

static int is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The fraction after the seconds, as milliseconds (extra digits dropped). */
static int fraction_ms(const char **p, int *ms)
{
	int n = 0, v = 0;
	*ms = 0;
	if (**p != '.' && **p != ',')
		return 0;
	(*p)++;
	while (**p >= '0' && **p <= '9') {
		if (n < 3)
			v = v * 10 + (**p - '0');
		n++;
		(*p)++;
	}
	if (n == 0)
		return -1;
	for (int i = n; i < 3; i++)
		v *= 10;
	*ms = v;
	return 0;
}

/* "Z", or "+hh:mm" / "-hh:mm" as seconds east of UTC. */
static int zone_offset(const char **p, int *offset)
{
	int sign, hh, mm;
	if (**p == 'Z') {
		(*p)++;
		*offset = 0;
		return 0;
	}
	if (**p != '+' && **p != '-')
		return -1;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if (digits(p, 2, &hh) || expect(p, ':') || digits(p, 2, &mm) || hh > 23 || mm > 59)
		return -1;
	*offset = sign * (hh * 3600 + mm * 60);
	return 0;
}

int kft_rfc3339_parse_ms(const char *s, int64_t *ms, kft_error *err)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, frac, off;
	if (!s || digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
	    digits(&p, 2, &d) || expect(&p, 'T') || digits(&p, 2, &h) || expect(&p, ':') ||
	    digits(&p, 2, &mi) || expect(&p, ':') || digits(&p, 2, &sec) ||
	    fraction_ms(&p, &frac) || zone_offset(&p, &off) || *p != '\0')
		goto bad;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
		goto bad;
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
	*ms = secs * 1000 + frac;
	return 0;
bad:
	return kft_error_set(err, KFT_EPARSE, "not an RFC 3339 time: \"%.64s\"", s ? s : "");
}

int kft_rfc3339_micro(double t, char *buf, size_t size)
{
	char when[KFT_RFC3339_MAX];
	if (!(t >= 0 && t < 253402300800.0)) /* year 10000 */
		return KFT_EINVAL;
	time_t sec = (time_t)t;
	long usec = (long)((t - (double)sec) * 1e6);
	if (kft_rfc3339_format(sec, usec > 999999 ? 999999 : usec, when) != 0)
		return KFT_EINVAL;
	if (strlen(when) >= size)
		return KFT_ELIMIT;
	memcpy(buf, when, strlen(when) + 1);
	return 0;
}
