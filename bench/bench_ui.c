/*
 * bench_ui.c - the dashboard's API under a large store and a large log.
 *
 * A fresh state directory gets JOBS TrainJobs written through the store
 * (each with a JobSet, two pod records and a trainerStatus; a fifth of them
 * Failed, the rest Complete), and one more job whose pod's recorded log is
 * LOG_MB MiB of text. `kftrainer ui` then serves that directory and this
 * program asks it over plain sockets, as a script would:
 *
 *   list     GET /api/jobs: every row as the jobs page receives it
 *   filter   GET /api/jobs?status=Failed&q=7: the page's two filters, server side
 *   log      GET .../logs/node/0?download=1: the whole log, read as fast as
 *            this side can; throughput, and the server's VmRSS before,
 *            VmHWM (peak) after, from /proc/PID/status. The server reads a
 *            log in 64 KiB chunks and must never hold it: the peak should
 *            not grow with the log's size.
 *
 * Figures over RUNS requests each (median, p10, p90). Prints figures; never
 * fails on time. Exits 1 only when the bench cannot be carried out.
 *
 *   build/bench/bench_ui [RUNS]     (KFTRAINER: the binary; default
 *                                    ../bin/kftrainer beside this one)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "local/store.h"

#define JOBS   1000
#define LOG_MB 100

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void figures(const char *what, double *v, int n, const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	printf("  %-34s median %8.2f %s   p10 %8.2f   p90 %8.2f   (%d runs)\n", what, v[n / 2],
	       unit, v[n / 10], v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1], n);
}

/* ---- seeding the store ------------------------------------------------------- */

static int seed(const char *dir, const char *log_path)
{
	kft_store *s = NULL;
	kft_error err;
	if (kft_store_open(dir, &s, &err) != 0) {
		fprintf(stderr, "bench_ui: store: %s\n", err.message);
		return -1;
	}
	int rc = kft_store_begin(s, &err);
	for (int i = 0; rc == 0 && i <= JOBS; i++) {
		char name[64];
		bool big = i == JOBS;
		snprintf(name, sizeof(name), big ? "biglog" : "job-%04d", i);
		json_t *tj = json_pack(
		        "{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}, s:{s:i, s:s, s:[s,s]}}}",
		        "apiVersion", "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob",
		        "metadata", "name", name, "namespace", "default", "spec", "runtimeRef",
		        "name", i % 3 ? "torch-distributed" : "deepspeed-distributed", "trainer",
		        "numNodes", 2, "image", "example.invalid/train:1", "command", "python3",
		        "train.py");
		json_t *objects = json_pack(
		        "[{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:i, s:{s:{s:{s:{s:[{s:s, "
		        "s:s}]}}}}}]}}]",
		        "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata",
		        "name", name, "namespace", "default", "spec", "replicatedJobs", "name",
		        "node", "replicas", 1, "template", "spec", "template", "spec", "containers",
		        "name", "node", "image", "example.invalid/train:1");
		const char *outcome = i % 5 == 0 ? "Failed" : "Complete";
		json_t *status = json_pack(
		        "{s:[{s:s, s:s, s:s, s:s}], s:{s:i, s:i, s:[{s:s, s:s}], s:s}}",
		        "conditions", "type", outcome, "status", "True", "reason", outcome,
		        "message", "bench", "trainerStatus", "progressPercentage", i % 101,
		        "estimatedRemainingSeconds", 100 - i % 101, "metrics", "name", "loss",
		        "value", "0.5", "lastUpdatedTime", "2026-01-01T00:00:00Z");
		rc = tj && objects && status ? kft_store_job_create(s, tj, objects, NULL, &err)
		                             : -1;
		if (rc == 0)
			rc = kft_store_job_set_status(s, "default", name, status, &err);
		for (int p = 0; rc == 0 && p < 2; p++) {
			kft_pod_record r = {.step = "node",
			                    .index = p,
			                    .state = i % 5 == 0 ? "Failed" : "Succeeded",
			                    .exit_code = i % 5 == 0,
			                    .started = "2026-01-01T00:00:00Z",
			                    .finished = "2026-01-01T00:01:00Z",
			                    .log_path = big && p == 0 ? (char *)log_path : NULL};
			rc = kft_store_pod_upsert(s, "default", name, &r, &err);
		}
		json_decref(tj);
		json_decref(objects);
		json_decref(status);
	}
	if (rc == 0)
		rc = kft_store_commit(s, &err);
	if (rc)
		fprintf(stderr, "bench_ui: seeding: %s\n", err.message);
	kft_store_close(s);
	return rc ? -1 : 0;
}

static int write_log(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	char line[128];
	long long total = 0, want = (long long)LOG_MB * 1024 * 1024;
	for (long long n = 0; total < want; n++) {
		int len =
		        snprintf(line, sizeof(line),
		                 "step %lld loss 0.%06lld lr 3e-4 tokens/s 12345.6 the quick brown "
		                 "fox jumps\n",
		                 n, n % 1000000);
		fwrite(line, 1, (size_t)len, f);
		total += len;
	}
	return fclose(f);
}

/* ---- the server --------------------------------------------------------------- */

static pid_t server;
static int port;

static int start_server(const char *kft, const char *dir)
{
	int out[2];
	if (pipe(out) != 0)
		return -1;
	server = fork();
	if (server == 0) {
		dup2(out[1], 1);
		close(out[0]);
		setenv("KFTRAINER_STATE_DIR", dir, 1);
		execl(kft, kft, "ui", "--listen", "127.0.0.1:0", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	char url[256] = "";
	FILE *f = fdopen(out[0], "r");
	if (!f || !fgets(url, sizeof(url), f) || sscanf(url, "http://127.0.0.1:%d/", &port) != 1) {
		fprintf(stderr, "bench_ui: `%s ui` did not start\n", kft);
		return -1;
	}
	fclose(f);
	return 0;
}

/* KiB of the field (VmRSS, VmHWM) of the server. */
static long proc_kib(const char *field)
{
	char path[64], line[256];
	long v = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)server);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':')
			v = atol(line + strlen(field) + 1);
	if (f)
		fclose(f);
	return v;
}

/* GETs path; returns the bytes of the answer (head included), -1 on failure
 * or a status other than 200. */
static long long get(const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char req[512];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path,
	                 port);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	static char buf[256 * 1024];
	long long total = 0;
	bool ok = false;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (total == 0)
			ok = r > 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0;
		total += r;
	}
	close(fd);
	return ok ? total : -1;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 20;
	if (runs < 3)
		runs = 3;
	char kft[PATH_MAX], self[PATH_MAX];
	const char *env = getenv("KFTRAINER");
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[sl > 0 ? sl : 0] = '\0';
	if (env)
		snprintf(kft, sizeof(kft), "%s", env);
	else
		snprintf(kft, sizeof(kft), "%.*s/../bin/kftrainer",
		         (int)(strrchr(self, '/') ? strrchr(self, '/') - self : 1), self);
	char dir[] = "/tmp/kft-bench-ui-XXXXXX", log_path[PATH_MAX];
	if (!mkdtemp(dir))
		return 1;
	snprintf(log_path, sizeof(log_path), "%s/big.log", dir);
	int rc = 1;
	double t0 = now_ms();
	printf("bench_ui: %d TrainJobs and a %d MiB log in %s\n", JOBS, LOG_MB, dir);
	if (write_log(log_path) != 0 || seed(dir, log_path) != 0 || start_server(kft, dir) != 0)
		goto out;
	printf("  seeded in %.0f ms; server pid %d, VmRSS %ld KiB at start\n", now_ms() - t0,
	       (int)server, proc_kib("VmRSS"));

	double *v = calloc((size_t)runs, sizeof(double));
	long long bytes = 0;
	for (int i = 0; i < runs; i++) {
		double s = now_ms();
		bytes = get("/api/jobs");
		v[i] = now_ms() - s;
		if (bytes < 0)
			goto fail;
	}
	figures("list (GET /api/jobs)", v, runs, "ms");
	printf("  %-34s %lld bytes\n", "  its answer", bytes);
	for (int i = 0; i < runs; i++) {
		double s = now_ms();
		bytes = get("/api/jobs?status=Failed&q=7");
		v[i] = now_ms() - s;
		if (bytes < 0)
			goto fail;
	}
	figures("filter (?status=Failed&q=7)", v, runs, "ms");
	printf("  %-34s %lld bytes\n", "  its answer", bytes);

	long before = proc_kib("VmRSS"), hwm_before = proc_kib("VmHWM");
	int log_runs = runs < 5 ? runs : 5;
	for (int i = 0; i < log_runs; i++) {
		double s = now_ms();
		bytes = get("/api/jobs/default/biglog/logs/node/0?download=1");
		v[i] = (double)bytes / (1024.0 * 1024.0) / ((now_ms() - s) / 1e3);
		if (bytes < (long long)LOG_MB * 1024 * 1024)
			goto fail;
	}
	figures("log download throughput", v, log_runs, "MiB/s");
	printf("  server VmRSS before the logs %ld KiB, peak (VmHWM) %ld KiB before and %ld KiB "
	       "after %d x %d MiB; VmRSS now %ld KiB\n",
	       before, hwm_before, proc_kib("VmHWM"), log_runs, LOG_MB, proc_kib("VmRSS"));
	free(v);
	rc = 0;
	goto out;
fail:
	free(v);
	fprintf(stderr, "bench_ui: a request failed\n");
out:
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
