/*
 * httpd.c - the controller manager's health probes (/healthz, /readyz,
 * named as the configuration says) and Prometheus /metrics, each on its own
 * address as controller-runtime serves them, as two handlers of the server
 * core (src/http/server.c): its connection model, limits (8 KiB heads,
 * 5 s to send one), TLS and certificate reloading are every server's.
 *
 * The servers are ours rather than a library's because they answer three
 * fixed paths and must stay small: the controller is a static binary that
 * holds to a tenth of upstream's memory, and the HTTP libraries at hand each
 * bring a large TLS library with them. The two have separate threads, so a
 * stuck scrape never delays a probe.
 *
 * The liveness check is controller-runtime's healthz.Ping (always ok); the
 * readiness check says ok once the flag the manager sets after the caches
 * synced is non-zero. Like controller-runtime, "/healthz/" and "/readyz/"
 * prefixes list the individual checks ("[+]ping ok"). Paths are
 * percent-decoded and the query is ignored, as net/http muxes match them.
 *
 * With metrics.secureServing, /metrics is served over TLS with the
 * certificate manager.c finds or makes (tls.c). As in upstream v2.3.0,
 * which sets no FilterProvider, the endpoint asks for no authentication.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/httpd.h"

struct kft_cm_http {
	kft_httpd *health, *metrics;
	kft_httpd_handlers health_h, metrics_h;
	char liveness[72], readiness[72];
	kft_metrics *m;
	const volatile int *ready;
	pthread_mutex_t reason_mu; /* reason_fn and reason_ctx */
	kft_cm_http_reason_fn reason_fn;
	void *reason_ctx;
};

static void text(kft_http_conn *c, int code, const char *body, const char *extra)
{
	kft_http_respond(c, code, "text/plain; charset=utf-8", body, strlen(body), extra);
}

/* "/name" answers "ok"; "/name/" lists the checks. */
static int probe_path(const char *url, const char *name, int *verbose)
{
	size_t n = strlen(name);
	if (url[0] != '/' || strncmp(url + 1, name, n) != 0)
		return 0;
	const char *rest = url + 1 + n;
	*verbose = (*rest == '/');
	return *rest == '\0' || strcmp(rest, "/") == 0;
}

/* Why readiness fails: the manager's words, or controller-runtime's. */
static void not_ready_reason(kft_cm_http *h, char *buf, size_t n)
{
	snprintf(buf, n, "reason withheld");
	pthread_mutex_lock(&h->reason_mu);
	if (h->reason_fn)
		h->reason_fn(h->reason_ctx, buf, n);
	pthread_mutex_unlock(&h->reason_mu);
}

static void probe(kft_cm_http *h, kft_http_conn *c, const char *check, int ok, int verbose)
{
	char body[1024], why[768] = "";
	if (!verbose && ok) {
		text(c, 200, "ok", NULL);
		return;
	}
	if (!ok)
		not_ready_reason(h, why, sizeof(why));
	snprintf(body, sizeof(body), "[%c]%s %s%s\n%s check %s\n", ok ? '+' : '-', check,
	         ok ? "ok" : "failed: ", why, "health", ok ? "passed" : "failed");
	text(c, ok ? 200 : 500, body, NULL);
}

static bool get_or_head(const kft_http_req *r)
{
	return strcmp(r->head->method, "GET") == 0 || strcmp(r->head->method, "HEAD") == 0;
}

static void serve_health(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	kft_cm_http *h = ctx;
	int verbose = 0, live = probe_path(r->head->path, h->liveness, &verbose);
	int ready = !live && probe_path(r->head->path, h->readiness, &verbose);
	if (!live && !ready)
		text(c, 404, "404 page not found\n", NULL);
	else if (!get_or_head(r))
		text(c, 405, "405 method not allowed\n", "Allow: GET, HEAD\r\n");
	else
		probe(h, c, live ? "ping" : "readyz", live || (h->ready && *h->ready), verbose);
}

static void serve_metrics(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	kft_cm_http *h = ctx;
	if (strcmp(r->head->path, "/metrics") != 0) {
		text(c, 404, "404 page not found\n", NULL);
		return;
	}
	if (!get_or_head(r)) {
		text(c, 405, "405 method not allowed\n", "Allow: GET, HEAD\r\n");
		return;
	}
	char *body = kft_metrics_render(h->m);
	if (!body) {
		text(c, 500, "out of memory\n", NULL);
		return;
	}
	kft_http_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", body, strlen(body),
	                 NULL);
	free(body);
}

static int disabled(const char *addr)
{
	return !addr || !*addr || strcmp(addr, "0") == 0;
}

static int start_one(const char *name, const char *addr, const kft_httpd_handlers *hs,
                     const kft_http_tls *tls, kft_httpd **out, kft_error *err)
{
	kft_httpd_opts o = {.name = name, .listen = addr, .handlers = hs, .tls = tls};
	return kft_httpd_start(&o, out, err);
}

/* The core's TLS for the Configuration's settings and the PEMs. */
static int metrics_tls(const kft_cm_http_tls *in, int suites[KFT_HTTP_SUITES_MAX],
                       kft_http_tls *out, kft_error *err)
{
	*out = (kft_http_tls){
	        .cert_pem = in->cert_pem, .key_pem = in->key_pem, .cert_dir = in->cert_dir};
	int rc = kft_cm_tls_settings(in->min_version, in->cipher_suites, suites, out, err);
	if (rc == 0 && (!in->cert_pem || !in->key_pem))
		rc = kft_error_set(err, KFT_EIO, "metrics server TLS: no certificate");
	return rc;
}

int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *tls, kft_metrics *m,
                          const volatile int *ready, kft_cm_http **out, kft_error *err)
{
	*out = NULL;
	kft_cm_http *h = calloc(1, sizeof(*h));
	if (!h)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	snprintf(h->liveness, sizeof(h->liveness), "%s", liveness ? liveness : "healthz");
	snprintf(h->readiness, sizeof(h->readiness), "%s", readiness ? readiness : "readyz");
	h->m = m;
	h->ready = ready;
	h->health_h = (kft_httpd_handlers){.serve = serve_health, .ctx = h};
	h->metrics_h = (kft_httpd_handlers){.serve = serve_metrics, .ctx = h};
	pthread_mutex_init(&h->reason_mu, NULL);
	int rc = 0, suites[KFT_HTTP_SUITES_MAX];
	kft_http_tls core_tls;
	if (!disabled(health_addr))
		rc = start_one("health", health_addr, &h->health_h, NULL, &h->health, err);
	if (!rc && !disabled(metrics_addr) && m && tls)
		rc = metrics_tls(tls, suites, &core_tls, err);
	if (!rc && !disabled(metrics_addr) && m)
		rc = start_one("metrics", metrics_addr, &h->metrics_h, tls ? &core_tls : NULL,
		               &h->metrics, err);
	if (rc) {
		kft_cm_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err)
{
	return kft_cm_http_start_tls(health_addr, liveness, readiness, metrics_addr, NULL, m, ready,
	                             out, err);
}

int kft_cm_http_port(const kft_cm_http *h, int which)
{
	return h ? kft_httpd_port(which ? h->metrics : h->health) : 0;
}

void kft_cm_http_stop(kft_cm_http *h)
{
	if (!h)
		return;
	kft_httpd_stop(h->health);
	kft_httpd_stop(h->metrics);
	pthread_mutex_destroy(&h->reason_mu);
	free(h);
}

void kft_cm_http_set_readiness_reason(kft_cm_http *h, kft_cm_http_reason_fn fn, void *ctx)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->reason_mu);
	h->reason_fn = fn;
	h->reason_ctx = ctx;
	pthread_mutex_unlock(&h->reason_mu);
}
