/*
 * test_controller_metrics.c - what the controller manager shows operators:
 * the Prometheus text of /metrics, the health probes over real HTTP, and the
 * zap-style log lines (src/controller/metrics.c, httpd.c, log.c).
 *
 * Sources:
 *   "controller-runtime"  sigs.k8s.io/controller-runtime v0.24.1:
 *                         pkg/internal/controller/metrics/metrics.go (names,
 *                         labels, reconcile buckets), pkg/internal/controller/
 *                         controller.go (initMetrics, result labels),
 *                         pkg/internal/metrics/workqueue.go (workqueue_* names
 *                         and labels), pkg/log/zap (encoder keys, levels)
 *   "client_golang"       the text exposition format (HELP/TYPE, 'g' floats)
 *   "zap"                 go.uber.org/zap v1.28.0 Level.String, production keys
 *   "net/http"            Go's server as controller-runtime's probe and metrics
 *                         servers use it: 404 "404 page not found", decoded
 *                         paths, HTTP/1.0 and 1.1, bare-LF line ends accepted,
 *                         431 for an oversized request head
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "controller/httpd.h"
#include "controller/metrics.h"
#include "controller/controller.h"

static int sample(void *ctx, const char *controller, kft_queue_sample *out)
{
	(void)ctx;
	if (strcmp(controller, "trainjob_controller") != 0)
		return -1;
	out->depth = 3;
	out->adds = 1234567;
	out->retries = 2;
	for (int i = 0; i < 13; i++)
		out->queue_buckets[i] = i >= 5 ? 4 : 0;
	out->queue_sum = 0.25;
	return 0;
}

static void expect_line(const char *text, const char *line)
{
	char want[512];
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line: %s", line);
}

/* controller-runtime: names, labels, initial zeros, results and buckets. */
static void test_metrics_text(void **state)
{
	(void)state;
	kft_metrics *m = kft_metrics_new();
	assert_non_null(m);
	assert_int_equal(kft_metrics_add_controller(m, "trainjob_controller", 5), 0);
	assert_int_equal(kft_metrics_add_controller(m, "clustertrainingruntime_controller", 1), 0);
	kft_metrics_set_queue_sampler(m, sample, NULL);
	kft_metrics_reconcile(m, "trainjob_controller", KFT_RESULT_SUCCESS, 0.003);
	kft_metrics_reconcile(m, "trainjob_controller", KFT_RESULT_ERROR, 0.2);
	kft_metrics_reconcile(m, "trainjob_controller", KFT_RESULT_REQUEUE_AFTER, 100);
	kft_metrics_reconcile(m, "unknown", KFT_RESULT_ERROR, 1);
	kft_metrics_active(m, "trainjob_controller", 1);
	kft_metrics_set_client_host(m, "10.96.0.1:443");
	kft_metrics_request(m, "PATCH", 200);
	kft_metrics_request(m, "GET", 200);
	kft_metrics_request(m, "GET", 200);
	kft_metrics_request(m, "GET", 0);
	char *t = kft_metrics_render(m);
	assert_non_null(t);
	expect_line(t, "# TYPE controller_runtime_reconcile_total counter");
	/* controller-runtime's client-go adapter: code, host, method */
	expect_line(t, "# TYPE rest_client_requests_total counter");
	expect_line(t, "rest_client_requests_total{code=\"200\",host=\"10.96.0.1:443\","
	               "method=\"GET\"} 2");
	expect_line(t, "rest_client_requests_total{code=\"200\",host=\"10.96.0.1:443\","
	               "method=\"PATCH\"} 1");
	expect_line(t, "rest_client_requests_total{code=\"<error>\",host=\"10.96.0.1:443\","
	               "method=\"GET\"} 1");
	expect_line(t, "controller_runtime_reconcile_total{controller=\"trainjob_controller\","
	               "result=\"success\"} 1");
	expect_line(t, "controller_runtime_reconcile_total{controller=\"trainjob_controller\","
	               "result=\"error\"} 1");
	expect_line(t, "controller_runtime_reconcile_total{controller=\"trainjob_controller\","
	               "result=\"requeue_after\"} 1");
	/* initMetrics: every series exists at 0 from the start */
	expect_line(t, "controller_runtime_reconcile_total{controller=\"clustertrainingruntime_"
	               "controller\",result=\"requeue\"} 0");
	expect_line(t, "controller_runtime_reconcile_errors_total{controller=\"trainjob_"
	               "controller\"} 1");
	expect_line(t, "controller_runtime_max_concurrent_reconciles{controller=\"trainjob_"
	               "controller\"} 5");
	expect_line(t, "controller_runtime_active_workers{controller=\"trainjob_controller\"} 1");
	expect_line(t, "# TYPE controller_runtime_reconcile_time_seconds histogram");
	expect_line(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"trainjob_"
	               "controller\",le=\"0.005\"} 1");
	expect_line(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"trainjob_"
	               "controller\",le=\"0.2\"} 2");
	expect_line(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"trainjob_"
	               "controller\",le=\"60\"} 2");
	expect_line(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"trainjob_"
	               "controller\",le=\"+Inf\"} 3");
	expect_line(t, "controller_runtime_reconcile_time_seconds_count{controller=\"trainjob_"
	               "controller\"} 3");
	expect_line(t, "controller_runtime_reconcile_time_seconds_sum{controller=\"trainjob_"
	               "controller\"} 100.203");
	/* workqueue: name and controller labels, priority on depth; 'g' floats */
	expect_line(t, "workqueue_depth{controller=\"trainjob_controller\",name=\"trainjob_"
	               "controller\",priority=\"\"} 3");
	expect_line(t, "workqueue_adds_total{controller=\"trainjob_controller\",name=\"trainjob_"
	               "controller\"} 1.234567e+06");
	expect_line(t, "workqueue_queue_duration_seconds_bucket{controller=\"trainjob_controller\","
	               "name=\"trainjob_controller\",le=\"1e-08\"} 0");
	expect_line(t, "workqueue_queue_duration_seconds_bucket{controller=\"trainjob_controller\","
	               "name=\"trainjob_controller\",le=\"0.001\"} 4");
	expect_line(t, "workqueue_queue_duration_seconds_bucket{controller=\"trainjob_controller\","
	               "name=\"trainjob_controller\",le=\"+Inf\"} 4");
	expect_line(t, "workqueue_retries_total{controller=\"clustertrainingruntime_controller\","
	               "name=\"clustertrainingruntime_controller\"} 0");
	assert_non_null(strstr(t, "\nprocess_resident_memory_bytes "));
	assert_non_null(strstr(t, "\nprocess_cpu_seconds_total "));
	assert_non_null(strstr(t, "\nprocess_start_time_seconds 1."));
	/* client_golang sorts families by name */
	assert_true(strstr(t, "controller_runtime_active_workers") <
	            strstr(t, "controller_runtime_reconcile_total"));
	assert_true(strstr(t, "process_cpu_seconds_total") < strstr(t, "workqueue_adds_total"));
	free(t);
	kft_metrics_free(m);
}

/* ---- HTTP ---------------------------------------------------------------------- */

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
	char *buf = ud;
	size_t have = strlen(buf), add = size * n;
	if (have + add >= 65536)
		add = 65535 - have;
	memcpy(buf + have, p, add);
	buf[have + add] = '\0';
	return size * n;
}

static long get(int port, const char *path, char *body)
{
	char url[128];
	long code = 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	body[0] = '\0';
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

/* controller-runtime: healthz ping, readyz after the caches synced,
 * /metrics on its own port, 404 elsewhere. */
static void why_not_ready(void *ctx, char *buf, size_t n)
{
	(void)ctx;
	snprintf(buf, n, "caches not synced: trainjobs.trainer.kubeflow.org (list: forbidden)");
}

static void test_http(void **state)
{
	(void)state;
	static char body[65536];
	volatile int ready = 0;
	kft_cm_http *h = NULL;
	kft_error err = {0};
	kft_metrics *m = kft_metrics_new();
	kft_metrics_add_controller(m, "trainjob_controller", 1);
	assert_int_equal(kft_cm_http_start("127.0.0.1:0", "healthz", "readyz", "127.0.0.1:0", m,
	                                   &ready, &h, &err),
	                 0);
	int hp = kft_cm_http_port(h, 0), mp = kft_cm_http_port(h, 1);
	assert_true(hp > 0 && mp > 0 && hp != mp);
	assert_int_equal(get(hp, "/healthz", body), 200);
	assert_string_equal(body, "ok");
	assert_int_equal(get(hp, "/readyz", body), 500);
	assert_non_null(strstr(body, "[-]readyz failed: reason withheld"));
	/* the manager says which caches start-up waits for, and why */
	kft_cm_http_set_readiness_reason(h, why_not_ready, NULL);
	assert_int_equal(get(hp, "/readyz", body), 500);
	assert_non_null(strstr(body, "[-]readyz failed: caches not synced: trainjobs.trainer."
	                             "kubeflow.org (list: forbidden)\n"));
	ready = 1;
	assert_int_equal(get(hp, "/readyz", body), 200);
	assert_int_equal(get(hp, "/readyz/", body), 200);
	assert_non_null(strstr(body, "[+]readyz ok"));
	assert_int_equal(get(hp, "/nope", body), 404);
	assert_int_equal(get(hp, "/metrics", body), 404);
	assert_int_equal(get(mp, "/metrics", body), 200);
	assert_non_null(strstr(body, "controller_runtime_reconcile_total{"));
	assert_int_equal(get(mp, "/healthz", body), 404);
	kft_cm_http_stop(h);

	/* "0" disables a server; a bad address is an error naming it */
	assert_int_equal(kft_cm_http_start("0", "healthz", "readyz", "", m, &ready, &h, &err), 0);
	assert_int_equal(kft_cm_http_port(h, 0), 0);
	kft_cm_http_stop(h);
	assert_int_equal(kft_cm_http_start("nohost", "healthz", "readyz", "0", m, &ready, &h, &err),
	                 KFT_EINVAL);
	assert_non_null(strstr(err.message, "\"nohost\""));
	assert_int_equal(
	        kft_cm_http_start("example.com:80", "healthz", "readyz", "0", m, &ready, &h, &err),
	        KFT_EINVAL);
	kft_metrics_free(m);
}

static void test_parse_listen(void **state)
{
	(void)state;
	char host[64];
	int port = -1;
	assert_int_equal(kft_http_parse_listen(":8081", host, sizeof(host), &port, NULL), 0);
	assert_string_equal(host, "");
	assert_int_equal(port, 8081);
	assert_int_equal(kft_http_parse_listen("[::1]:9", host, sizeof(host), &port, NULL), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 9);
	assert_int_not_equal(
	        kft_http_parse_listen("1.2.3.4:99999", host, sizeof(host), &port, NULL), 0);
	assert_int_not_equal(kft_http_parse_listen("1.2.3.4:", host, sizeof(host), &port, NULL), 0);
}

/* ---- HTTP: the server's own edges (src/controller/httpd.c) ------------------------- */

typedef struct reply {
	char head[4096]; /* header lines as received */
	char body[65536];
	long code;
	CURLcode rc;
} reply;

static size_t reply_head(char *p, size_t size, size_t n, void *ud)
{
	reply *r = ud;
	size_t have = strlen(r->head), add = size * n;
	if (have + add >= sizeof(r->head))
		add = sizeof(r->head) - 1 - have;
	memcpy(r->head + have, p, add);
	r->head[have + add] = '\0';
	return size * n;
}

/* A request with any method; "HEAD" is sent as curl's NOBODY. */
static void request(const char *url, const char *method, reply *r)
{
	memset(r, 0, sizeof(*r));
	CURL *c = curl_easy_init();
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "a=b");
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, reply_head);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r->body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 15L);
	r->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
	curl_easy_cleanup(c);
}

static int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = {15, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends len bytes as they are (errors ignored: the server may stop
 * reading) and returns what comes back until the server closes. */
static char *raw_exchange(int port, const char *req, size_t len)
{
	int fd = connect_to(port);
	size_t off = 0;
	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	static char out[8192];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(out) - 1 && (n = recv(fd, out + got, sizeof(out) - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return out;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

static kft_cm_http *start_local(kft_metrics **m, const volatile int *ready)
{
	kft_cm_http *h = NULL;
	kft_error err = {0};
	*m = kft_metrics_new();
	assert_non_null(*m);
	assert_int_equal(kft_cm_http_start("127.0.0.1:0", "healthz", "readyz", "127.0.0.1:0", *m,
	                                   ready, &h, &err),
	                 0);
	return h;
}

/* controller-runtime's probe and metrics handlers answer GET and HEAD with
 * text/plain and nosniff (net/http adds Content-Length); the mux answers
 * 404 for other paths. Other methods on our paths get 405 with Allow. */
static void test_http_methods(void **state)
{
	(void)state;
	static reply r;
	static const char *verbs[] = {"POST", "PUT", "DELETE", "PATCH"};
	char url[128];
	volatile int ready = 0;
	kft_metrics *m = NULL;
	kft_cm_http *h = start_local(&m, &ready);
	int hp = kft_cm_http_port(h, 0), mp = kft_cm_http_port(h, 1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", hp);
	request(url, "HEAD", &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "");
	assert_non_null(strstr(r.head, "Content-Length: 2\r\n"));
	assert_non_null(strstr(r.head, "Content-Type: text/plain; charset=utf-8\r\n"));
	assert_non_null(strstr(r.head, "X-Content-Type-Options: nosniff\r\n"));
	for (size_t i = 0; i < sizeof(verbs) / sizeof(*verbs); i++) {
		request(url, verbs[i], &r);
		assert_int_equal(r.code, 405);
		assert_non_null(strstr(r.head, "Allow: GET, HEAD\r\n"));
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mp);
	request(url, "POST", &r);
	assert_int_equal(r.code, 405);
	request(url, "GET", &r);
	assert_int_equal(r.code, 200);
	assert_non_null(
	        strstr(r.head, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	assert_non_null(strstr(r.head, "X-Content-Type-Options: nosniff\r\n"));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/nope", mp);
	request(url, "POST", &r);
	assert_int_equal(r.code, 404);
	assert_string_equal(r.body, "404 page not found\n");
	/* net/http decodes the path and leaves the query out of matching */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/health%%7a?x=1", hp);
	request(url, "GET", &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.body, "ok");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz/", hp);
	request(url, "GET", &r);
	assert_int_equal(r.code, 500);
	assert_non_null(strstr(r.body, "[-]readyz failed"));
	kft_cm_http_stop(h);
	kft_metrics_free(m);
}

/* Malformed requests get a 4xx/5xx and close; a request head over the
 * 8 KiB bound (here 100 KiB of header) gets 431; the server keeps serving. */
static void test_http_garbage(void **state)
{
	(void)state;
	static const char zeros[64];
	volatile int ready = 1;
	kft_metrics *m = NULL;
	kft_cm_http *h = start_local(&m, &ready);
	int hp = kft_cm_http_port(h, 0);
	const char *bad[] = {
	        "\x16\x03\x01\x02\x01junk\r\n\r\n", "GET /healthz\r\n\r\n",
	        "GET healthz HTTP/1.1\r\n\r\n",     "GET /%00 HTTP/1.1\r\n\r\n",
	        "GET /%zz HTTP/1.1\r\n\r\n",        "GET /healthz HTTP/1.1\r\nno colon\r\n\r\n",
	        "get /healthz HTTP/1.1\r\n\r\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_true(strncmp(raw_exchange(hp, bad[i], strlen(bad[i])), "HTTP/1.1 400 ",
		                    13) == 0);
	assert_true(strncmp(raw_exchange(hp, "GET /healthz HTTP/2.0\r\n\r\n", 25), "HTTP/1.1 505 ",
	                    13) == 0);
	assert_true(strncmp(raw_exchange(hp, zeros, sizeof(zeros)), "HTTP/1.1 400 ", 13) == 0);
	/* bare LF line ends are accepted, as net/http accepts them */
	assert_non_null(strstr(raw_exchange(hp, "GET /healthz HTTP/1.0\n\n", 23), "\r\n\r\nok"));
	size_t big = 100 * 1024;
	char *huge = malloc(big + 64);
	assert_non_null(huge);
	int n = snprintf(huge, 64, "GET /healthz HTTP/1.1\r\nX-Big: ");
	memset(huge + n, 'a', big);
	memcpy(huge + n + big, "\r\n\r\n", 4);
	assert_true(strncmp(raw_exchange(hp, huge, (size_t)n + big + 4), "HTTP/1.1 431 ", 13) == 0);
	free(huge);
	static char body[65536];
	assert_int_equal(get(hp, "/healthz", body), 200);
	assert_string_equal(body, "ok");
	kft_cm_http_stop(h);
	kft_metrics_free(m);
}

/* Idle connections hold no worker: with 70 idle connections on each server
 * (more than the 64 the servers used to keep open, the rest waiting in the
 * kernel's backlog until the idle ones timed out), probes and a scrape are
 * answered while every idle one is still open (the kubelet's probes time out
 * after 3 s; issue 24.2). Clients that sent part of a head hold no worker
 * either. The silent ones are closed after the head timeout, and nothing
 * leaks. */
static void test_http_idle_client(void **state)
{
	(void)state;
	static char body[65536];
	volatile int ready = 1;
	kft_metrics *m = NULL;
	int fds = count_fds();
	kft_cm_http *h = start_local(&m, &ready);
	int hp = kft_cm_http_port(h, 0), mp = kft_cm_http_port(h, 1);
	enum { IDLE = 140 };
	int idle[IDLE];
	for (int i = 0; i < IDLE; i++)
		idle[i] = connect_to(i % 2 ? hp : mp);
	/* some that sent half a head */
	for (int i = 1; i < 8; i += 2)
		assert_int_equal(send(idle[i], "GET /heal", 9, MSG_NOSIGNAL), 9);
	assert_int_equal(get(hp, "/healthz", body), 200);
	assert_int_equal(get(hp, "/readyz", body), 200);
	assert_int_equal(get(mp, "/metrics", body), 200);
	/* the probes did not wait for the idle connections to be dropped */
	for (int i = 0; i < IDLE; i++) {
		char c;
		errno = 0;
		assert_int_equal(recv(idle[i], &c, 1, MSG_DONTWAIT), -1);
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	}
	for (int i = 0; i < IDLE; i++) {
		char c;
		assert_true(recv(idle[i], &c, 1, 0) <= 0); /* closed by the server */
		close(idle[i]);
	}
	kft_cm_http_stop(h);
	assert_int_equal(count_fds(), fds); /* sockets and the wake pipes closed */
	kft_metrics_free(m);
}

/* How many bytes the server has yet to read on the connection from
 * client socket fd to port (its receive queue in /proc/net/tcp), or -1 when
 * that socket is not listed. */
static long server_unread(int fd, int port)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &len), 0);
	FILE *f = fopen("/proc/net/tcp", "r");
	assert_non_null(f);
	char line[512];
	long found = -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		unsigned lport, rport, rx;
		if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %*x:%x", &lport, &rport, &rx) == 3 &&
		    (int)lport == port && rport == ntohs(me.sin_port))
			found = (long)rx;
	}
	fclose(f);
	return found;
}

/* stop() while a client is in the middle of a request returns promptly
 * and releases the port. */
static void test_http_stop_with_client(void **state)
{
	(void)state;
	volatile int ready = 1;
	kft_metrics *m = NULL;
	kft_cm_http *h = start_local(&m, &ready);
	int hp = kft_cm_http_port(h, 0);
	int fd = connect_to(hp);
	assert_true(send(fd, "GET /heal", 9, MSG_NOSIGNAL) == 9);
	/* the server has read the half request: it is in the middle of it */
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (server_unread(fd, hp) != 0 && seconds_since(&t0) < 10)
		usleep(1000); /* a poll interval */
	assert_int_equal(server_unread(fd, hp), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kft_cm_http_stop(h);
	assert_true(seconds_since(&t0) < 1);
	char c;
	assert_true(recv(fd, &c, 1, 0) <= 0);
	close(fd);
	/* the port is free again */
	char addr[32];
	kft_error err = {0};
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", hp);
	assert_int_equal(kft_cm_http_start(addr, "healthz", "readyz", "0", m, &ready, &h, &err), 0);
	/* and a second server cannot take it: Go's wording */
	kft_cm_http *h2 = NULL;
	assert_int_equal(kft_cm_http_start(addr, "healthz", "readyz", "0", m, &ready, &h2, &err),
	                 KFT_EIO);
	assert_null(h2);
	assert_non_null(strstr(err.message, "listen tcp 127.0.0.1:"));
	assert_non_null(strstr(err.message, "in use"));
	kft_cm_http_stop(h);
	kft_metrics_free(m);
}

/* Go listen strings: "[::1]:0" is IPv6 loopback only; ":0" every
 * interface of both families. */
static void test_http_addresses(void **state)
{
	(void)state;
	static char body[65536];
	char url[96];
	volatile int ready = 1;
	kft_cm_http *h = NULL;
	kft_error err = {0};
	kft_metrics *m = kft_metrics_new();
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 lo = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int have_v6 = fd >= 0 && bind(fd, (struct sockaddr *)&lo, sizeof(lo)) == 0;
	if (fd >= 0)
		close(fd);
	if (have_v6) {
		assert_int_equal(
		        kft_cm_http_start("[::1]:0", "healthz", "readyz", "0", m, &ready, &h, &err),
		        0);
		int port = kft_cm_http_port(h, 0);
		snprintf(url, sizeof(url), "http://[::1]:%d/healthz", port);
		static reply r;
		request(url, "GET", &r);
		assert_int_equal(r.code, 200);
		assert_int_equal(get(port, "/healthz", body), 0); /* not on 127.0.0.1 */
		kft_cm_http_stop(h);
	}
	assert_int_equal(
	        kft_cm_http_start(":0", "healthz", "readyz", "localhost:0", m, &ready, &h, &err),
	        0);
	assert_int_equal(get(kft_cm_http_port(h, 0), "/healthz", body), 200);
	assert_int_equal(get(kft_cm_http_port(h, 1), "/metrics", body), 200);
	kft_cm_http_stop(h);
	kft_metrics_free(m);
}

/* ---- logs ------------------------------------------------------------------------ */

static json_t *log_one(const kft_log_options *o, int level, const char *err_text, json_t *fields,
                       char *raw, size_t rawsize)
{
	FILE *f = tmpfile();
	kft_logger *lg = kft_logger_new(o, f);
	kft_log_write(lg, level, "trainjob-controller", "src/controller/x.c:12", "hello", err_text,
	              fields);
	kft_logger_free(lg);
	rewind(f);
	size_t n = fread(raw, 1, rawsize - 1, f);
	raw[n] = '\0';
	fclose(f);
	return n ? json_loads(raw, 0, NULL) : NULL;
}

/* zap production encoder: keys, their order, levels, errors. */
static void test_log_json(void **state)
{
	(void)state;
	char raw[2048];
	kft_log_options o = {.time_encoding = KFT_LOG_TIME_RFC3339NANO};
	json_t *v =
	        log_one(&o, KFT_LOG_INFO, NULL,
	                json_pack("{s:s, s:{s:s, s:s}, s:s}", "controller", "trainjob_controller",
	                          "trainJob", "name", "a", "namespace", "b", "reconcileID", "x"),
	                raw, sizeof(raw));
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "level")), "info");
	assert_string_equal(json_string_value(json_object_get(v, "logger")), "trainjob-controller");
	assert_string_equal(json_string_value(json_object_get(v, "caller")), "controller/x.c:12");
	assert_string_equal(json_string_value(json_object_get(v, "msg")), "hello");
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(v, "trainJob"), "namespace")),
	        "b");
	const char *ts = json_string_value(json_object_get(v, "ts"));
	assert_non_null(ts);
	assert_true(strlen(ts) >= 20 && ts[4] == '-' && ts[10] == 'T');
	/* zap's key order: level, ts, logger, caller, msg, then the fields */
	assert_true(strstr(raw, "\"level\"") < strstr(raw, "\"ts\""));
	assert_true(strstr(raw, "\"caller\"") < strstr(raw, "\"msg\""));
	assert_true(strstr(raw, "\"msg\"") < strstr(raw, "\"controller\""));
	assert_int_equal(raw[strlen(raw) - 1], '\n');
	json_decref(v);

	/* V(2) is hidden at the default level and shows as Level(-2) when enabled */
	v = log_one(&o, -2, NULL, NULL, raw, sizeof(raw));
	assert_null(v);
	o.level_set = 1;
	o.level = -2;
	v = log_one(&o, -2, NULL, NULL, raw, sizeof(raw));
	assert_string_equal(json_string_value(json_object_get(v, "level")), "Level(-2)");
	json_decref(v);
	v = log_one(&o, KFT_LOG_DEBUG, NULL, NULL, raw, sizeof(raw));
	assert_string_equal(json_string_value(json_object_get(v, "level")), "debug");
	json_decref(v);
	v = log_one(&o, -3, NULL, NULL, raw, sizeof(raw));
	assert_null(v);

	/* errors: level error, "error" after the fields */
	v = log_one(&o, KFT_LOG_ERROR, "boom", json_pack("{s:s}", "k", "v"), raw, sizeof(raw));
	assert_string_equal(json_string_value(json_object_get(v, "level")), "error");
	assert_string_equal(json_string_value(json_object_get(v, "error")), "boom");
	assert_true(strstr(raw, "\"k\"") < strstr(raw, "\"error\":"));
	json_decref(v);

	/* epoch and nanos time encodings are numbers */
	o.time_encoding = KFT_LOG_TIME_EPOCH;
	v = log_one(&o, KFT_LOG_INFO, NULL, NULL, raw, sizeof(raw));
	assert_true(json_is_number(json_object_get(v, "ts")));
	assert_true(json_number_value(json_object_get(v, "ts")) > 1.6e9);
	json_decref(v);
	o.time_encoding = KFT_LOG_TIME_NANOS;
	v = log_one(&o, KFT_LOG_INFO, NULL, NULL, raw, sizeof(raw));
	assert_true(json_is_integer(json_object_get(v, "ts")));
	json_decref(v);
}

/* --zap-devel: console layout, debug enabled. */
static void test_log_console(void **state)
{
	(void)state;
	char raw[2048];
	kft_log_options o = {.devel = 1, .time_encoding = KFT_LOG_TIME_ISO8601};
	json_t *v = log_one(&o, KFT_LOG_DEBUG, "bad", json_pack("{s:i}", "n", 1), raw, sizeof(raw));
	assert_null(v); /* not a JSON line */
	assert_non_null(strstr(raw, "\tDEBUG\ttrainjob-controller\tcontroller/x.c:12\thello\t"));
	assert_non_null(strstr(raw, "{\"n\":1,\"error\":\"bad\"}"));
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_metrics_text),
	        cmocka_unit_test(test_http),
	        cmocka_unit_test(test_parse_listen),
	        cmocka_unit_test(test_http_methods),
	        cmocka_unit_test(test_http_garbage),
	        cmocka_unit_test(test_http_idle_client),
	        cmocka_unit_test(test_http_stop_with_client),
	        cmocka_unit_test(test_http_addresses),
	        cmocka_unit_test(test_log_json),
	        cmocka_unit_test(test_log_console),
	};
	int rc = cmocka_run_group_tests_name("controller_metrics", tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
