/*
 * log.c - structured log lines shaped like controller-runtime's zap logger,
 * so log pipelines written for upstream's controller keep parsing ours.
 *
 * The JSON encoder writes one object per line with zap's production keys in
 * zap's order: level, ts, logger, caller, msg, then the entry's fields, then
 * "error". Levels are zap's numbers; logr's V(N) is level -N and prints as
 * "Level(-N)" just as zap prints a level it has no name for. The console
 * encoder (--zap-devel or --zap-encoder=console) writes zap's development
 * layout: tab-separated time, LEVEL, logger, caller, message and a JSON
 * object of the fields.
 *
 * A line is built in memory and written with one fwrite under a mutex, so
 * lines from worker threads never interleave. Zap's production sampling is
 * not reproduced: every enabled entry is written.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "util/strbuf.h"

struct kft_logger {
	FILE *out;
	int level, stack_level, console, time_encoding;
	pthread_mutex_t mu;
};

kft_logger *kft_logger_new(const kft_log_options *opts, FILE *out)
{
	kft_logger *lg = calloc(1, sizeof(*lg));
	if (!lg)
		return NULL;
	kft_log_options def = {0};
	def.time_encoding = KFT_LOG_TIME_RFC3339NANO;
	if (!opts)
		opts = &def;
	lg->out = out;
	lg->console = opts->console_set ? opts->console : opts->devel;
	lg->level = opts->level_set ? opts->level : (opts->devel ? KFT_LOG_DEBUG : KFT_LOG_INFO);
	lg->stack_level =
	        opts->stack_set ? opts->stack_level : (opts->devel ? KFT_LOG_WARN : KFT_LOG_ERROR);
	lg->time_encoding = opts->time_encoding;
	if (pthread_mutex_init(&lg->mu, NULL) != 0) {
		free(lg);
		return NULL;
	}
	return lg;
}

void kft_logger_free(kft_logger *lg)
{
	if (!lg)
		return;
	pthread_mutex_destroy(&lg->mu);
	free(lg);
}

int kft_log_enabled(const kft_logger *lg, int level)
{
	return lg && level >= lg->level;
}

static void level_name(int level, int capital, char *buf, size_t size)
{
	static const char *const lower[] = {"debug",  "info",  "warn", "error",
	                                    "dpanic", "panic", "fatal"};
	static const char *const upper[] = {"DEBUG",  "INFO",  "WARN", "ERROR",
	                                    "DPANIC", "PANIC", "FATAL"};
	if (level >= -1 && level <= 5)
		snprintf(buf, size, "%s", (capital ? upper : lower)[level + 1]);
	else
		snprintf(buf, size, "%s(%d)", capital ? "LEVEL" : "Level", level);
}

/* Trims a fixed-point number's trailing zeros (and a bare '.'). */
static void trim_zeros(char *s)
{
	char *dot = strchr(s, '.');
	if (!dot)
		return;
	char *e = s + strlen(s) - 1;
	while (e > dot && *e == '0')
		*e-- = '\0';
	if (e == dot)
		*e = '\0';
}

/* RFC 3339 / ISO 8601 in local time; frac_digits < 0 trims the fraction as
 * Go's "999999999" layout does, > 0 keeps that many digits. */
static void format_time(const struct timespec *ts, int frac_digits, int iso_offset, char *buf,
                        size_t size)
{
	struct tm tm;
	localtime_r(&ts->tv_sec, &tm);
	char date[32], frac[24] = "", zone[16];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac_digits != 0) {
		char ns[16];
		snprintf(ns, sizeof(ns), "%09ld", ts->tv_nsec);
		if (frac_digits > 0)
			ns[frac_digits] = '\0';
		else {
			size_t n = strlen(ns);
			while (n && ns[n - 1] == '0')
				ns[--n] = '\0';
		}
		if (ns[0])
			snprintf(frac, sizeof(frac), ".%s", ns);
	}
	long off = tm.tm_gmtoff / 60;
	if (off == 0 && !iso_offset)
		snprintf(zone, sizeof(zone), "Z");
	else if (off == 0)
		snprintf(zone, sizeof(zone), "Z");
	else
		snprintf(zone, sizeof(zone), iso_offset ? "%c%02ld%02ld" : "%c%02ld:%02ld",
		         off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
	snprintf(buf, size, "%s%s%s", date, frac, zone);
}

/* The ts value as JSON text (a number or a quoted string). */
static void ts_text(const kft_logger *lg, int quoted, char *buf, size_t size)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char t[64];
	switch (lg->time_encoding) {
	case KFT_LOG_TIME_EPOCH:
		snprintf(buf, size, "%ld.%06ld", (long)ts.tv_sec, ts.tv_nsec / 1000);
		trim_zeros(buf);
		return;
	case KFT_LOG_TIME_MILLIS:
		snprintf(buf, size, "%lld.%06ld",
		         (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, ts.tv_nsec % 1000000);
		trim_zeros(buf);
		return;
	case KFT_LOG_TIME_NANOS:
		snprintf(buf, size, "%lld", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		return;
	case KFT_LOG_TIME_ISO8601: format_time(&ts, 3, 1, t, sizeof(t)); break;
	case KFT_LOG_TIME_RFC3339: format_time(&ts, 0, 0, t, sizeof(t)); break;
	default: format_time(&ts, -1, 0, t, sizeof(t)); break;
	}
	snprintf(buf, size, quoted ? "\"%s\"" : "%s", t);
}

/* zap's ShortCallerEncoder: the last directory and the file ("dir/file.c:12"). */
static const char *short_caller(const char *path)
{
	const char *last = strrchr(path, '/');
	if (!last)
		return path;
	const char *p = last;
	while (p > path && p[-1] != '/')
		p--;
	return p;
}

static void put_json_string(kft_strbuf *b, const char *s)
{
	json_t *v = json_string(s);
	if (!v)
		v = json_stringn(s, 0); /* invalid UTF-8: an empty string beats a lost line */
	char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	kft_strbuf_puts(b, text ? text : "\"\"");
	free(text);
	json_decref(v);
}

static void put_member(kft_strbuf *b, const char *key, const json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	kft_strbuf_putc(b, ',');
	put_json_string(b, key);
	kft_strbuf_putc(b, ':');
	kft_strbuf_puts(b, text ? text : "null");
	free(text);
}

static void json_line(kft_logger *lg, kft_strbuf *b, int level, const char *name,
                      const char *caller, const char *msg, const char *err_text,
                      const json_t *fields)
{
	char lv[32], ts[80];
	level_name(level, 0, lv, sizeof(lv));
	ts_text(lg, 1, ts, sizeof(ts));
	kft_strbuf_printf(b, "{\"level\":\"%s\",\"ts\":%s", lv, ts);
	if (name && *name) {
		kft_strbuf_puts(b, ",\"logger\":");
		put_json_string(b, name);
	}
	if (caller) {
		kft_strbuf_puts(b, ",\"caller\":");
		put_json_string(b, short_caller(caller));
	}
	kft_strbuf_puts(b, ",\"msg\":");
	put_json_string(b, msg ? msg : "");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)fields, k, v) put_member(b, k, v);
	if (err_text) {
		kft_strbuf_puts(b, ",\"error\":");
		put_json_string(b, err_text);
	}
	kft_strbuf_puts(b, "}\n");
}

static void console_line(kft_logger *lg, kft_strbuf *b, int level, const char *name,
                         const char *caller, const char *msg, const char *err_text, json_t *fields)
{
	char lv[32], ts[80];
	level_name(level, 1, lv, sizeof(lv));
	ts_text(lg, 0, ts, sizeof(ts));
	kft_strbuf_printf(b, "%s\t%s", ts, lv);
	if (name && *name)
		kft_strbuf_printf(b, "\t%s", name);
	if (caller) {
		kft_strbuf_printf(b, "\t%s", short_caller(caller));
	}
	kft_strbuf_printf(b, "\t%s", msg ? msg : "");
	if (err_text && fields)
		json_object_set_new(fields, "error", json_string(err_text));
	if (fields && json_object_size(fields)) {
		char *text = json_dumps(fields, JSON_COMPACT);
		kft_strbuf_printf(b, "\t%s", text ? text : "{}");
		free(text);
	} else if (err_text) {
		kft_strbuf_printf(b, "\t{\"error\":");
		put_json_string(b, err_text);
		kft_strbuf_putc(b, '}');
	}
	kft_strbuf_putc(b, '\n');
}

void kft_log_write(kft_logger *lg, int level, const char *name, const char *caller, const char *msg,
                   const char *err_text, json_t *fields)
{
	if (!kft_log_enabled(lg, level) || !lg->out) {
		json_decref(fields);
		return;
	}
	if (fields && !json_is_object(fields)) {
		json_decref(fields);
		fields = NULL;
	}
	kft_strbuf b;
	kft_strbuf_init(&b);
	if (lg->console)
		console_line(lg, &b, level, name, caller, msg, err_text, fields);
	else
		json_line(lg, &b, level, name, caller, msg, err_text, fields);
	json_decref(fields);
	if (!b.failed) {
		pthread_mutex_lock(&lg->mu);
		fwrite(kft_strbuf_str(&b), 1, b.len, lg->out);
		fflush(lg->out);
		pthread_mutex_unlock(&lg->mu);
	}
	kft_strbuf_free(&b);
}
