/*
 * metrics.c - the Prometheus metrics the controller manager exposes, under
 * controller-runtime's family names, label names and histogram buckets, so
 * dashboards and alerts written for upstream's controller read ours.
 *
 * The registry is deliberately small: a fixed table of controllers (three
 * are registered), each with its counters, gauges and one histogram, under
 * one mutex. Work-queue figures are not copied here on every change; a
 * sampler the manager installs is asked for them when /metrics is scraped.
 * Process figures come from /proc/self at scrape time.
 *
 * Rendering follows client_golang's text format: families sorted by name,
 * a HELP and TYPE line each, label pairs sorted by name, numbers printed as
 * Go's strconv 'g' shortest form (so 1.2345e+07, 0.005, 1e-08, +Inf).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "controller/metrics.h"
#include "controller/controller.h"
#include "util/strbuf.h"

#define MAX_CONTROLLERS 16
#define NAME_MAX_LEN    64
#define N_BUCKETS       40

/* controller_runtime_reconcile_time_seconds buckets (controller-runtime v0.24). */
static const double reconcile_buckets[N_BUCKETS] = {
        0.005, 0.01, 0.025, 0.05, 0.1,  0.15, 0.2,  0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
        0.7,   0.8,  0.9,   1.0,  1.25, 1.5,  1.75, 2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,
        6,     7,    8,     9,    10,   15,   20,   25,   30,  40,   50,  60};

typedef struct ctl_metrics {
	char name[NAME_MAX_LEN];
	int workers;
	int active;
	uint64_t results[4]; /* by kft_reconcile_result */
	uint64_t errors;
	uint64_t buckets[N_BUCKETS]; /* non-cumulative counts */
	uint64_t count;
	double sum;
} ctl_metrics;

/* rest_client_requests_total, one series per (code, method); the host is
 * the one API server the manager talks to. */
#define MAX_REQUEST_SERIES 64
typedef struct req_series {
	char code[8]; /* "200", or "<error>" when no answer came */
	char method[8];
	uint64_t n;
} req_series;

struct kft_metrics {
	pthread_mutex_t mu;
	ctl_metrics ctl[MAX_CONTROLLERS];
	size_t n;
	req_series req[MAX_REQUEST_SERIES];
	size_t n_req;
	char host[128];
	kft_queue_sampler sampler;
	void *sampler_ctx;
	double start_time;
};

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process start time from /proc/self/stat (field 22, in clock ticks
 * since boot) and the boot time; falls back to "now" when unreadable. */
static double process_start_time(void)
{
	double now = now_seconds();
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f)
		return now;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long start = 0;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return now;
	struct timespec up;
	clock_gettime(CLOCK_BOOTTIME, &up);
	double boot = now - ((double)up.tv_sec + (double)up.tv_nsec / 1e9);
	return (double)(long long)(boot + (double)start / (double)sysconf(_SC_CLK_TCK));
}

kft_metrics *kft_metrics_new(void)
{
	kft_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	m->start_time = process_start_time();
	return m;
}

void kft_metrics_free(kft_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static ctl_metrics *find(kft_metrics *m, const char *controller)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->ctl[i].name, controller) == 0)
			return &m->ctl[i];
	return NULL;
}

int kft_metrics_add_controller(kft_metrics *m, const char *controller, int workers)
{
	if (strlen(controller) >= NAME_MAX_LEN)
		return KFT_ELIMIT;
	pthread_mutex_lock(&m->mu);
	ctl_metrics *c = find(m, controller);
	int rc = 0;
	if (!c && m->n == MAX_CONTROLLERS)
		rc = KFT_ELIMIT;
	else {
		if (!c) {
			c = &m->ctl[m->n++];
			snprintf(c->name, sizeof(c->name), "%s", controller);
		}
		c->workers = workers;
	}
	/* Keep the table sorted by name: series render in label order. */
	for (size_t i = m->n; i > 1 && strcmp(m->ctl[i - 2].name, m->ctl[i - 1].name) > 0; i--) {
		ctl_metrics t = m->ctl[i - 2];
		m->ctl[i - 2] = m->ctl[i - 1];
		m->ctl[i - 1] = t;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void kft_metrics_reconcile(kft_metrics *m, const char *controller, kft_reconcile_result result,
                           double seconds)
{
	pthread_mutex_lock(&m->mu);
	ctl_metrics *c = find(m, controller);
	if (c && (unsigned)result < 4) {
		c->results[result]++;
		if (result == KFT_RESULT_ERROR)
			c->errors++;
		size_t b = 0;
		while (b < N_BUCKETS && seconds > reconcile_buckets[b])
			b++;
		if (b < N_BUCKETS)
			c->buckets[b]++;
		c->count++;
		c->sum += seconds;
	}
	pthread_mutex_unlock(&m->mu);
}

void kft_metrics_active(kft_metrics *m, const char *controller, int delta)
{
	pthread_mutex_lock(&m->mu);
	ctl_metrics *c = find(m, controller);
	if (c)
		c->active += delta;
	pthread_mutex_unlock(&m->mu);
}

void kft_metrics_set_client_host(kft_metrics *m, const char *host)
{
	pthread_mutex_lock(&m->mu);
	snprintf(m->host, sizeof(m->host), "%s", host ? host : "none");
	pthread_mutex_unlock(&m->mu);
}

void kft_metrics_request(kft_metrics *m, const char *method, long code)
{
	char c[8];
	if (code > 0 && code < 1000)
		snprintf(c, sizeof(c), "%ld", code);
	else
		snprintf(c, sizeof(c), "<error>");
	pthread_mutex_lock(&m->mu);
	size_t i = 0;
	while (i < m->n_req &&
	       (strcmp(m->req[i].code, c) != 0 ||
	        strncmp(m->req[i].method, method, sizeof(m->req[i].method) - 1) != 0))
		i++;
	if (i == m->n_req && m->n_req < MAX_REQUEST_SERIES) {
		snprintf(m->req[i].code, sizeof(m->req[i].code), "%s", c);
		snprintf(m->req[i].method, sizeof(m->req[i].method), "%s", method);
		m->n_req++;
	}
	if (i < m->n_req)
		m->req[i].n++;
	pthread_mutex_unlock(&m->mu);
}

void kft_metrics_set_queue_sampler(kft_metrics *m, kft_queue_sampler fn, void *ctx)
{
	pthread_mutex_lock(&m->mu);
	m->sampler = fn;
	m->sampler_ctx = ctx;
	pthread_mutex_unlock(&m->mu);
}

/* ---- text format ------------------------------------------------------------ */

/* Go's strconv.FormatFloat(v, 'g', -1, 64), as client_golang prints values. */
static void go_float(double v, char *buf, size_t size)
{
	if (isnan(v)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, size, "0");
		return;
	}
	int p = 1;
	char e[64];
	for (; p <= 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	int exp = atoi(strchr(e, 'e') + 1);
	if (exp < -4 || exp >= 6) {
		/* Go decides on the exponent form with precision 6 for shortest output. */
		snprintf(buf, size, "%s", e);
		return;
	}
	int decimals = p - 1 - exp;
	snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
}

static void put_value(kft_strbuf *b, double v)
{
	char num[64];
	go_float(v, num, sizeof(num));
	kft_strbuf_printf(b, " %s\n", num);
}

static void header(kft_strbuf *b, const char *name, const char *type, const char *help)
{
	kft_strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A per-controller family with a value picked by `pick`. */
static void ctl_family(kft_strbuf *b, const kft_metrics *m, const char *name, const char *type,
                       const char *help, double (*pick)(const ctl_metrics *))
{
	header(b, name, type, help);
	for (size_t i = 0; i < m->n; i++) {
		kft_strbuf_printf(b, "%s{controller=\"%s\"}", name, m->ctl[i].name);
		put_value(b, pick(&m->ctl[i]));
	}
}

static double pick_errors(const ctl_metrics *c)
{
	return (double)c->errors;
}
static double pick_zero(const ctl_metrics *c)
{
	(void)c;
	return 0;
}
static double pick_workers(const ctl_metrics *c)
{
	return c->workers;
}
static double pick_active(const ctl_metrics *c)
{
	return c->active;
}

static void reconcile_total(kft_strbuf *b, const kft_metrics *m)
{
	/* label values in sorted order: error, requeue, requeue_after, success */
	static const struct {
		const char *label;
		kft_reconcile_result r;
	} order[] = {{"error", KFT_RESULT_ERROR},
	             {"requeue", KFT_RESULT_REQUEUE},
	             {"requeue_after", KFT_RESULT_REQUEUE_AFTER},
	             {"success", KFT_RESULT_SUCCESS}};
	header(b, "controller_runtime_reconcile_total", "counter",
	       "Reconciliations per controller and result.");
	for (size_t i = 0; i < m->n; i++)
		for (size_t k = 0; k < 4; k++) {
			kft_strbuf_printf(b,
			                  "controller_runtime_reconcile_total{controller=\"%s\","
			                  "result=\"%s\"}",
			                  m->ctl[i].name, order[k].label);
			put_value(b, (double)m->ctl[i].results[order[k].r]);
		}
}

static void histogram_series(kft_strbuf *b, const char *name, const char *labels,
                             const double *bounds, const uint64_t *cumulative, size_t n,
                             uint64_t count, double sum)
{
	char le[64];
	for (size_t k = 0; k < n; k++) {
		go_float(bounds[k], le, sizeof(le));
		kft_strbuf_printf(b, "%s_bucket{%s,le=\"%s\"}", name, labels, le);
		put_value(b, (double)cumulative[k]);
	}
	kft_strbuf_printf(b, "%s_bucket{%s,le=\"+Inf\"}", name, labels);
	put_value(b, (double)count);
	kft_strbuf_printf(b, "%s_sum{%s}", name, labels);
	put_value(b, sum);
	kft_strbuf_printf(b, "%s_count{%s}", name, labels);
	put_value(b, (double)count);
}

static void reconcile_time(kft_strbuf *b, const kft_metrics *m)
{
	const char *name = "controller_runtime_reconcile_time_seconds";
	header(b, name, "histogram", "Time per reconciliation per controller.");
	for (size_t i = 0; i < m->n; i++) {
		uint64_t cum[N_BUCKETS], run = 0;
		for (size_t k = 0; k < N_BUCKETS; k++)
			cum[k] = (run += m->ctl[i].buckets[k]);
		char labels[128];
		snprintf(labels, sizeof(labels), "controller=\"%s\"", m->ctl[i].name);
		histogram_series(b, name, labels, reconcile_buckets, cum, N_BUCKETS,
		                 m->ctl[i].count, m->ctl[i].sum);
	}
}

/* ---- work queues ------------------------------------------------------------- */

static void queue_scalar(kft_strbuf *b, const kft_metrics *m, const kft_queue_sample *s,
                         const char *name, const char *type, const char *help, size_t field,
                         int with_priority)
{
	header(b, name, type, help);
	for (size_t i = 0; i < m->n; i++) {
		const double *v = (const double *)((const char *)&s[i] + field);
		kft_strbuf_printf(b, "%s{controller=\"%s\",name=\"%s\"%s}", name, m->ctl[i].name,
		                  m->ctl[i].name, with_priority ? ",priority=\"\"" : "");
		put_value(b, *v);
	}
}

static void queue_histogram(kft_strbuf *b, const kft_metrics *m, const kft_queue_sample *s,
                            const char *name, const char *help, int work)
{
	static const double bounds[12] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
	                                  1e-2, 1e-1, 1,    10,   100,  1000};
	header(b, name, "histogram", help);
	for (size_t i = 0; i < m->n; i++) {
		char labels[160];
		snprintf(labels, sizeof(labels), "controller=\"%s\",name=\"%s\"", m->ctl[i].name,
		         m->ctl[i].name);
		const uint64_t *cum = work ? s[i].work_buckets : s[i].queue_buckets;
		histogram_series(b, name, labels, bounds, cum, 12, cum[12],
		                 work ? s[i].work_sum : s[i].queue_sum);
	}
}

static void queues(kft_strbuf *b, const kft_metrics *m)
{
	kft_queue_sample s[MAX_CONTROLLERS];
	memset(s, 0, sizeof(s));
	for (size_t i = 0; i < m->n && m->sampler; i++)
		m->sampler(m->sampler_ctx, m->ctl[i].name, &s[i]);
	queue_scalar(b, m, s, "workqueue_adds_total", "counter", "Adds handled by the work queue.",
	             offsetof(kft_queue_sample, adds), 0);
	queue_scalar(b, m, s, "workqueue_depth", "gauge", "Current depth of the work queue.",
	             offsetof(kft_queue_sample, depth), 1);
	queue_scalar(b, m, s, "workqueue_longest_running_processor_seconds", "gauge",
	             "Seconds the longest running processor has been running.",
	             offsetof(kft_queue_sample, longest_running_seconds), 0);
	queue_histogram(b, m, s, "workqueue_queue_duration_seconds",
	                "Seconds an item waits in the work queue before it is processed.", 0);
	queue_scalar(b, m, s, "workqueue_retries_total", "counter",
	             "Items added to the work queue with a delay.",
	             offsetof(kft_queue_sample, retries), 0);
	queue_scalar(b, m, s, "workqueue_unfinished_work_seconds", "gauge",
	             "Seconds of work in progress not yet observed by work_duration.",
	             offsetof(kft_queue_sample, unfinished_seconds), 0);
	queue_histogram(b, m, s, "workqueue_work_duration_seconds",
	                "Seconds processing one item from the work queue takes.", 1);
}

/* ---- process ------------------------------------------------------------------- */

static void proc_stat(double *cpu, double *vsize, double *rss)
{
	*cpu = *vsize = *rss = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f)
		return;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0, vs = 0;
	long long rs = 0;
	/* after ")": state(3) ... utime(14) stime(15) ... vsize(23) rss(24) */
	if (p && sscanf(p + 2,
	                "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
	                "%*d %*u %llu %lld",
	                &ut, &st, &vs, &rs) == 4) {
		*cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
		*vsize = (double)vs;
		*rss = (double)rs * (double)sysconf(_SC_PAGESIZE);
	}
}

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	double n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory stream's own descriptor */
}

static void process(kft_strbuf *b, const kft_metrics *m)
{
	double cpu, vsize, rss;
	struct rlimit rl;
	proc_stat(&cpu, &vsize, &rss);
	header(b, "process_cpu_seconds_total", "counter", "User and system CPU seconds spent.");
	kft_strbuf_puts(b, "process_cpu_seconds_total");
	put_value(b, cpu);
	header(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	kft_strbuf_puts(b, "process_max_fds");
	put_value(b, getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : 0);
	header(b, "process_open_fds", "gauge", "Number of open file descriptors.");
	kft_strbuf_puts(b, "process_open_fds");
	put_value(b, open_fds());
	header(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	kft_strbuf_puts(b, "process_resident_memory_bytes");
	put_value(b, rss);
	header(b, "process_start_time_seconds", "gauge",
	       "Start time of the process since the Unix epoch in seconds.");
	kft_strbuf_puts(b, "process_start_time_seconds");
	put_value(b, m->start_time);
	header(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	kft_strbuf_puts(b, "process_virtual_memory_bytes");
	put_value(b, vsize);
}

static int req_order(const void *a, const void *b)
{
	const req_series *x = a, *y = b;
	int c = strcmp(x->code, y->code);
	return c ? c : strcmp(x->method, y->method);
}

static void requests(kft_strbuf *b, kft_metrics *m)
{
	if (m->n_req == 0)
		return;
	qsort(m->req, m->n_req, sizeof(m->req[0]), req_order);
	header(b, "rest_client_requests_total", "counter",
	       "Number of HTTP requests, partitioned by status code, method, and host.");
	for (size_t i = 0; i < m->n_req; i++) {
		kft_strbuf_printf(
		        b, "rest_client_requests_total{code=\"%s\",host=\"%s\",method=\"%s\"}",
		        m->req[i].code, m->host[0] ? m->host : "none", m->req[i].method);
		put_value(b, (double)m->req[i].n);
	}
}

char *kft_metrics_render(kft_metrics *m)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	pthread_mutex_lock(&m->mu);
	ctl_family(&b, m, "controller_runtime_active_workers", "gauge",
	           "Workers currently reconciling, per controller.", pick_active);
	ctl_family(&b, m, "controller_runtime_max_concurrent_reconciles", "gauge",
	           "Maximum concurrent reconciles per controller.", pick_workers);
	ctl_family(&b, m, "controller_runtime_reconcile_errors_total", "counter",
	           "Reconciliation errors per controller.", pick_errors);
	ctl_family(&b, m, "controller_runtime_reconcile_panics_total", "counter",
	           "Reconciliation panics per controller (never, in C).", pick_zero);
	reconcile_time(&b, m);
	ctl_family(&b, m, "controller_runtime_reconcile_timeouts_total", "counter",
	           "Reconciliations that timed out per controller.", pick_zero);
	reconcile_total(&b, m);
	ctl_family(&b, m, "controller_runtime_terminal_reconcile_errors_total", "counter",
	           "Terminal reconciliation errors per controller.", pick_zero);
	process(&b, m);
	requests(&b, m);
	queues(&b, m);
	pthread_mutex_unlock(&m->mu);
	return kft_strbuf_detach(&b);
}
