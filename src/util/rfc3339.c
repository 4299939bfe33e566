/*
 * rfc3339.c - Kubernetes' time formats and RFC 3339 parsing (see
 * rfc3339.h). Formatting is calendar arithmetic into fixed-width fields
 * (test_rfc3339 holds it to gmtime_r), so a time is written the same
 * everywhere; parsing is by hand (no strptime: it ignores the zone and
 * accepts more than RFC 3339).
 */
#include "util/rfc3339.h"

#include <stdio.h>
#include <string.h>

/* The proleptic Gregorian date of day z since 1970-01-01 (Howard Hinnant's
 * civil_from_days, the inverse of days_from_civil below). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* v as exactly n decimal digits at p. */
static void put_digits(char *p, long v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* By arithmetic, not gmtime_r and snprintf (a supervisor writes a few
 * times for every pod it starts; those took 4k instructions each). */
int kft_rfc3339_format(int64_t sec, long usec, char buf[KFT_RFC3339_MAX])
{
	int64_t days = sec / 86400, rem = sec % 86400, year;
	int month, day;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	buf[0] = '\0';
	if (days > 4000000 || days < -4000000) /* far outside 0000..9999, and no overflow */
		return KFT_EINVAL;
	civil_from_days(days, &year, &month, &day);
	if (year < 0 || year > 9999 || usec > 999999)
		return KFT_EINVAL;
	memcpy(buf, "0000-00-00T00:00:00", 19);
	put_digits(buf, (long)year, 4);
	put_digits(buf + 5, month, 2);
	put_digits(buf + 8, day, 2);
	put_digits(buf + 11, (long)(rem / 3600), 2);
	put_digits(buf + 14, (long)(rem / 60 % 60), 2);
	put_digits(buf + 17, (long)(rem % 60), 2);
	size_t n = 19;
	if (usec >= 0) {
		buf[n++] = '.';
		put_digits(buf + n, usec, 6);
		n += 6;
	}
	memcpy(buf + n, "Z", 2);
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
