/*
 * logstream.c - pod logs to stdout, once or following (see logstream.h).
 *
 * Following works in rounds: read the job's status, then whatever each log
 * file gained since, then stop if the status read before that said the job
 * had finished. Reading the status first is what makes the end exact: a
 * process has exited (and written its last line) before the supervisor
 * records the job as finished, so the read that follows sees every line.
 * Pods that start later (trainer nodes after initializers, restarts) are
 * picked up from the store on each round.
 *
 * Between rounds it waits on inotify for the logs' directory (at most a
 * round's length, and polling alone where inotify is unavailable), and reads
 * the logs in the order the kernel reports their writes, so lines of several
 * nodes come out interleaved as they were written, not node by node.
 *
 * On a terminal, following draws the initializers' download progress lines
 * (kft_local_progress_parse) as one bar redrawn in place with a carriage
 * return, which the next ordinary line (or the end) erases; everywhere else
 * those lines print like any other, as they are in the log.
 */
#include "logstream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "local/spawn.h"
#include "cli.h"

#define POLL_MS    200
#define CHUNK      65536
#define MAX_SOURCE 4096 /* pods followed at once; beyond it the rest are ignored */
#define BAR_WIDTH  20
#define ERASE_LINE "\r\033[K"

typedef struct source {
	char *step;
	int index;
	char *path;
	int fd; /* -1 until the file exists */
	char prefix[96];
	kft_prefixer pf;
} source;

typedef struct stream {
	source **items;
	size_t n, cap;
	bool prefix;
	bool tty;       /* following on a terminal: progress lines become a bar */
	bool bar_shown; /* a bar is on the screen's last line, without newline */
	int cols;       /* the terminal's width */
	char *buf;      /* CHUNK bytes */
	int ino;        /* inotify on the logs' directory while following; -1: none */
} stream;

/* Initializers print first, then the trainer's steps in name order. */
static int step_rank(const char *step)
{
	if (strcmp(step, "dataset-initializer") == 0)
		return 0;
	if (strcmp(step, "model-initializer") == 0)
		return 1;
	return 2;
}

static int cmp_source(const void *a, const void *b)
{
	const source *x = *(source *const *)a, *y = *(source *const *)b;
	int rx = step_rank(x->step), ry = step_rank(y->step);
	if (rx != ry)
		return rx - ry;
	int c = strcmp(x->step, y->step);
	return c ? c : x->index - y->index;
}

static source *find_source(const stream *st, const char *step, int index)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->items[i]->index == index && strcmp(st->items[i]->step, step) == 0)
			return st->items[i];
	return NULL;
}

static void source_free(source *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->step);
	free(s->path);
	free(s);
}

/* The bar for one progress line: "PREFIX FILE: 1 MiB / 4 MiB (25%) [#####     ]",
 * cut to the terminal's width so the carriage return reaches its start. */
static int draw_bar(stream *st, const char *prefix, const char *s, size_t n, size_t what, int pct,
                    FILE *out)
{
	char line[1024], bar[BAR_WIDTH + 4] = "";
	if (pct >= 0) {
		int full = pct * BAR_WIDTH / 100;
		bar[0] = ' ';
		bar[1] = '[';
		for (int i = 0; i < BAR_WIDTH; i++)
			bar[2 + i] = i < full ? '#' : ' ';
		bar[2 + BAR_WIDTH] = ']';
		bar[3 + BAR_WIDTH] = '\0';
	}
	int len = snprintf(line, sizeof(line), "%s%.*s%s", prefix, (int)(n - what), s + what, bar);
	size_t show = len < 0 ? 0 : (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1;
	if (show > (size_t)st->cols - 1)
		show = (size_t)st->cols - 1;
	st->bar_shown = true;
	if (fputs(ERASE_LINE, out) == EOF || fwrite(line, 1, show, out) != show)
		return KFT_EIO;
	return 0;
}

/* The prefixer's line writer on a terminal (kft_prefixer_line_fn). */
static int tty_line(void *user, const char *prefix, const char *s, size_t n, int newline, FILE *out)
{
	stream *st = user;
	size_t what;
	int pct;
	if (newline && kft_local_progress_parse(s, n, &what, &pct))
		return draw_bar(st, prefix, s, n, what, pct, out);
	if (st->bar_shown && fputs(ERASE_LINE, out) == EOF)
		return KFT_EIO;
	st->bar_shown = false;
	if (fputs(prefix, out) == EOF || (n && fwrite(s, 1, n, out) != n) ||
	    (newline && fputc('\n', out) == EOF))
		return KFT_EIO;
	return 0;
}

static int add_source(stream *st, const kft_pod_record *r)
{
	if (st->n == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 16;
		source **items = realloc(st->items, ncap * sizeof(*items));
		if (!items)
			return -1;
		st->items = items;
		st->cap = ncap;
	}
	source *s = calloc(1, sizeof(*s));
	if (!s || !(s->step = strdup(r->step)) || !(s->path = strdup(r->log_path))) {
		source_free(s);
		return -1;
	}
	s->index = r->index;
	s->fd = -1;
	snprintf(s->prefix, sizeof(s->prefix), "[%s-%d] ", r->step, r->index);
	kft_prefixer_init(&s->pf, st->prefix ? s->prefix : "");
	if (st->tty)
		kft_prefixer_set_line_fn(&s->pf, tty_line, st);
	st->items[st->n++] = s;
	return 0;
}

static bool selected(const kft_logstream_opts *o, const kft_pod_record *r)
{
	if (!r->step || !r->log_path || !*r->log_path)
		return false;
	if (o->step && strcmp(o->step, r->step) != 0)
		return false;
	return o->node < 0 || o->node == r->index;
}

/* Adds the selected pods the store knows and the stream does not. Returns 0,
 * KFT_ENOTFOUND (not reported) when the job is gone, or KFT_EXIT_FAILED. */
static int refresh(kft_local *l, const kft_logstream_opts *o, stream *st)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	kft_error err;
	if (kft_store_pods(kft_local_store(l), o->ns, o->name, &recs, &n, &err) != 0)
		return err.code == KFT_ENOTFOUND ? KFT_ENOTFOUND : kft_cli_job_error(o->name, &err);
	size_t before = st->n;
	for (size_t i = 0; i < n; i++)
		if (selected(o, &recs[i]) && !find_source(st, recs[i].step, recs[i].index) &&
		    st->n < MAX_SOURCE && add_source(st, &recs[i]) != 0) {
			kft_pod_records_free(recs, n);
			kft_cli_error("out of memory");
			return KFT_EXIT_FAILED;
		}
	kft_pod_records_free(recs, n);
	if (st->n != before)
		qsort(st->items, st->n, sizeof(*st->items), cmp_source);
	return 0;
}

/* Copies what the source's file holds beyond what was read. Returns 0, or
 * -1 when stdout cannot be written, or KFT_EXIT_FAILED (reported) when the
 * log cannot be read. */
static int pump(stream *st, source *s)
{
	if (s->fd < 0) {
		s->fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (s->fd < 0 && errno == ENOENT)
			return 0; /* not created yet */
		if (s->fd < 0) {
			kft_cli_error("%s: %s", s->path, strerror(errno));
			return KFT_EXIT_FAILED;
		}
	}
	for (;;) {
		ssize_t got = read(s->fd, st->buf, CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			kft_cli_error("%s: %s", s->path, strerror(errno));
			return KFT_EXIT_FAILED;
		}
		if (got == 0)
			return 0;
		int rc =
		        st->prefix || st->tty
		                ? kft_prefixer_feed(&s->pf, st->buf, (size_t)got, stdout)
		                : (fwrite(st->buf, 1, (size_t)got, stdout) == (size_t)got ? 0 : -1);
		if (rc != 0 || ferror(stdout))
			return -1;
	}
}

/* Watches the directory of the first log (every pod's log is in one). */
static void watch_logs(stream *st)
{
	if (st->ino >= 0 || st->n == 0)
		return;
	char dir[4096];
	const char *slash = strrchr(st->items[0]->path, '/');
	size_t len = slash ? (size_t)(slash - st->items[0]->path) : 0;
	if (!len || len >= sizeof(dir))
		return;
	memcpy(dir, st->items[0]->path, len);
	dir[len] = '\0';
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd >= 0 && inotify_add_watch(fd, dir, IN_MODIFY | IN_CREATE) < 0) {
		close(fd);
		fd = -1;
	}
	st->ino = fd;
}

static source *source_named(const stream *st, const char *base)
{
	for (size_t i = 0; i < st->n; i++) {
		const char *slash = strrchr(st->items[i]->path, '/');
		if (strcmp(slash ? slash + 1 : st->items[i]->path, base) == 0)
			return st->items[i];
	}
	return NULL;
}

/* Reads the logs in the order inotify reported their writes. */
static int pump_events(stream *st)
{
	char ev[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t got = st->ino >= 0 ? read(st->ino, ev, sizeof(ev)) : -1;
		if (got <= 0)
			return 0;
		for (char *p = ev; p < ev + got;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			source *s = e->len ? source_named(st, e->name) : NULL;
			int rc = s ? pump(st, s) : 0;
			if (rc != 0)
				return rc;
			p += sizeof(*e) + e->len;
		}
	}
}

static void sleep_ms(int ms);

/* Waits up to ms for a log to grow (or just sleeps without inotify). */
static void wait_for_logs(const stream *st, int ms)
{
	if (st->ino < 0) {
		sleep_ms(ms);
		return;
	}
	struct pollfd pfd = {.fd = st->ino, .events = POLLIN};
	poll(&pfd, 1, ms); /* a signal cuts it short, which is what we want */
}

static int pump_all(stream *st)
{
	for (size_t i = 0; i < st->n; i++) {
		int rc = pump(st, st->items[i]);
		if (rc != 0)
			return rc;
	}
	return fflush(stdout) == 0 ? 0 : -1;
}

/* Writes the partial last lines held back while following. */
static void flush_partial(stream *st)
{
	if (st->prefix || st->tty)
		for (size_t i = 0; i < st->n; i++)
			kft_prefixer_flush(&st->items[i]->pf, stdout);
	if (st->bar_shown)
		fputs(ERASE_LINE, stdout);
	st->bar_shown = false;
	fflush(stdout);
}

static void stream_free(stream *st)
{
	if (st->ino >= 0)
		close(st->ino);
	for (size_t i = 0; i < st->n; i++)
		source_free(st->items[i]);
	free(st->items);
	free(st->buf);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL); /* a signal cuts it short, which is what we want */
}

/* How many pods the selection covers when the job runs fully: from the
 * stored JobSet, so the prefix decision does not change midway. */
static int expected_pods(kft_local *l, const kft_logstream_opts *o)
{
	if (o->node >= 0)
		return 1;
	json_t *js = kft_cli_job_jobset(l, o->ns, o->name);
	const json_t *rjobs = json_object_get(json_object_get(js, "spec"), "replicatedJobs");
	int total = 0;
	size_t i;
	const json_t *r;
	json_array_foreach(rjobs, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		if (name && (!o->step || strcmp(name, o->step) == 0))
			total += kft_cli_rjob_pods(js, name);
	}
	json_decref(js);
	return total;
}

static int print_once(kft_local *l, const kft_logstream_opts *o, stream *st, kft_logstream_end *end)
{
	int rc = refresh(l, o, st);
	if (rc == KFT_ENOTFOUND) {
		kft_cli_not_found(o->name);
		return KFT_EXIT_NOT_FOUND;
	}
	if (rc != 0)
		return KFT_EXIT_FAILED;
	if (st->n == 0) {
		kft_cli_error("%s: no logs yet: no pod%s%s has started", o->name,
		              o->step ? " of step " : "", o->step ? o->step : "");
		return KFT_EXIT_FAILED;
	}
	for (size_t i = 0; i < st->n; i++) {
		rc = pump(st, st->items[i]);
		if (rc == KFT_EXIT_FAILED)
			return rc;
		if (rc != 0)
			break;
		if (st->prefix)
			kft_prefixer_flush(&st->items[i]->pf, stdout);
	}
	fflush(stdout);
	*end = rc == 0 ? KFT_LOGSTREAM_DONE : KFT_LOGSTREAM_STOPPED;
	return 0;
}

#define ROUND_AGAIN 0
#define ROUND_OVER  (-1)

/* One round of following. Returns ROUND_AGAIN, ROUND_OVER (with *end set),
 * or KFT_EXIT_FAILED (reported). */
static int follow_round(kft_local *l, const kft_logstream_opts *o, stream *st,
                        kft_logstream_end *end, json_t **job, bool *noted)
{
	kft_error err;
	json_t *now = NULL;
	if (kft_local_get(l, o->ns, o->name, &now, &err) != 0 && err.code != KFT_ENOTFOUND)
		return kft_cli_job_error(o->name, &err);
	json_decref(*job);
	*job = now;
	if (!now) { /* deleted: its pods and logs went with it */
		*end = KFT_LOGSTREAM_GONE;
		return ROUND_OVER;
	}
	int rc = refresh(l, o, st);
	if (rc == KFT_ENOTFOUND) { /* deleted since the read above */
		*end = KFT_LOGSTREAM_GONE;
		return ROUND_OVER;
	}
	if (rc == 0) {
		watch_logs(st);
		rc = pump_events(st);
	}
	if (rc == 0)
		rc = pump_all(st); /* what the events did not name, and the end */
	if (rc == KFT_EXIT_FAILED)
		return rc;
	if (rc != 0 || (o->stop && *o->stop)) {
		*end = KFT_LOGSTREAM_STOPPED;
		return ROUND_OVER;
	}
	if (kft_cli_job_outcome(now)) {
		*end = KFT_LOGSTREAM_DONE;
		return ROUND_OVER;
	}
	if (kft_cli_condition_true(now, "Suspended") &&
	    strcmp(kft_cli_job_phase(l, now), "Suspended") == 0) {
		if (!o->through_suspend) {
			*end = KFT_LOGSTREAM_SUSPENDED;
			return ROUND_OVER;
		}
		if (!*noted)
			kft_cli_error("%s is suspended; still following (kftrainer resume %s)",
			              o->name, o->name);
		*noted = true;
	} else {
		*noted = false;
	}
	return ROUND_AGAIN;
}

int kft_logstream_run(kft_local *l, const kft_logstream_opts *o, kft_logstream_end *end,
                      json_t **job)
{
	stream st = {.ino = -1};
	json_t *last = NULL;
	kft_error err;
	if (kft_local_get(l, o->ns, o->name, &last, &err) != 0)
		return kft_cli_job_error(o->name, &err);
	st.buf = malloc(CHUNK);
	if (!st.buf) {
		json_decref(last);
		kft_cli_error("out of memory");
		return KFT_EXIT_FAILED;
	}
	st.prefix = o->prefix || expected_pods(l, o) > 1;
	struct winsize ws;
	st.tty = o->follow && isatty(STDOUT_FILENO);
	st.cols = st.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20
	                  ? ws.ws_col
	                  : 80;
	int rc;
	if (!o->follow) {
		rc = print_once(l, o, &st, end);
	} else {
		bool noted = false;
		while ((rc = follow_round(l, o, &st, end, &last, &noted)) == ROUND_AGAIN)
			wait_for_logs(&st, POLL_MS);
		rc = rc == ROUND_OVER ? 0 : rc;
		flush_partial(&st);
	}
	stream_free(&st);
	if (job)
		*job = last;
	else
		json_decref(last);
	return rc;
}
