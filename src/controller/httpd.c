/*
 * httpd.c - the controller manager's two small HTTP servers: health probes
 * (/healthz, /readyz, named as the configuration says) and Prometheus
 * /metrics, each on its own address as controller-runtime serves them.
 *
 * libmicrohttpd runs each server on one internal polling thread; answers are
 * built in memory per request (the metrics text is a few tens of KiB). The
 * liveness check is controller-runtime's healthz.Ping (always ok); the
 * readiness check says ok once the flag the manager sets after the caches
 * synced is non-zero. Like controller-runtime, "/healthz/" and "/readyz/"
 * prefixes list the individual checks ("[+]ping ok").
 *
 * With metrics.secureServing, /metrics is served over TLS (libmicrohttpd's
 * GnuTLS support) with the certificate manager.c finds or makes (tls.c).
 * As in upstream v2.3.0, which sets no FilterProvider, the endpoint asks
 * for no authentication.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kftrainer/controller.h"

typedef struct server {
	struct MHD_Daemon *d;
	int port;
} server;

struct kft_cm_http {
	server health, metrics;
	char liveness[72], readiness[72];
	kft_metrics *m;
	const volatile int *ready;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *ctype, char *body,
                             int owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	        strlen(body), body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* "/name" answers "ok"; "/name/" (or with ?verbose) lists the checks. */
static int probe_path(const char *url, const char *name, int *verbose)
{
	size_t n = strlen(name);
	if (url[0] != '/' || strncmp(url + 1, name, n) != 0)
		return 0;
	const char *rest = url + 1 + n;
	*verbose = (*rest == '/');
	return *rest == '\0' || strcmp(rest, "/") == 0;
}

static enum MHD_Result probe(struct MHD_Connection *c, const char *check, int ok, int verbose)
{
	static char ok_body[] = "ok";
	char body[128];
	if (!verbose && ok)
		return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", ok_body, 0);
	snprintf(body, sizeof(body), "[%c]%s %s\n%s check %s\n", ok ? '+' : '-', check,
	         ok ? "ok" : "failed: reason withheld", "health", ok ? "passed" : "failed");
	char *copy = strdup(body);
	if (!copy)
		return MHD_NO;
	return reply(c, ok ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR,
	             "text/plain; charset=utf-8", copy, 1);
}

static enum MHD_Result on_health(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *data,
                                 size_t *size, void **state)
{
	(void)version;
	(void)data;
	(void)size;
	(void)state;
	kft_cm_http *h = cls;
	static char not_found[] = "404 page not found\n";
	int verbose = 0;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_found, 0);
	if (probe_path(url, h->liveness, &verbose))
		return probe(c, "ping", 1, verbose);
	if (probe_path(url, h->readiness, &verbose))
		return probe(c, "readyz", h->ready && *h->ready, verbose);
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found, 0);
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
	(void)version;
	(void)data;
	(void)size;
	(void)state;
	kft_cm_http *h = cls;
	static char not_found[] = "404 page not found\n";
	if (strcmp(url, "/metrics") != 0 ||
	    (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found, 0);
	char *text = kft_metrics_render(h->m);
	if (!text)
		return MHD_NO;
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, 1);
}

int kft_cm_parse_listen(const char *addr, char *hostbuf, size_t hostsize, int *port, kft_error *err)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return kft_error_set(err, KFT_EINVAL,
		                     "listen address \"%s\": missing port in address", addr);
	const char *h = addr;
	size_t hl = (size_t)(colon - addr);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl >= hostsize)
		return kft_error_set(err, KFT_EINVAL, "listen address \"%s\": host too long", addr);
	memcpy(hostbuf, h, hl);
	hostbuf[hl] = '\0';
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || p < 0 || p > 65535)
		return kft_error_set(err, KFT_EINVAL, "listen address \"%s\": invalid port", addr);
	*port = (int)p;
	return 0;
}

/* The daemon's options: timeout, address, TLS. Returns the count used. */
static size_t daemon_options(struct MHD_OptionItem *o, const struct sockaddr *sa,
                             const kft_cm_http_tls *tls)
{
	size_t n = 0;
	o[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL};
	if (sa)
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)sa};
	if (tls) {
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)tls->key_pem};
		o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
		                                 (void *)tls->cert_pem};
		if (tls->priorities)
			o[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
			                                 (void *)tls->priorities};
	}
	o[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	return n;
}

static int start_one(server *s, const char *addr, const kft_cm_http_tls *tls,
                     MHD_AccessHandlerCallback cb, void *cls, kft_error *err)
{
	char host[256];
	int port;
	int rc = kft_cm_parse_listen(addr, host, sizeof(host), &port, err);
	if (rc)
		return rc;
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;
	memset(&a6, 0, sizeof(a6));
	memset(&a4, 0, sizeof(a4));
	const struct sockaddr *sa = NULL;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	if (!host[0]) {
		flags |= MHD_USE_DUAL_STACK;
	} else if (strcmp(host, "localhost") == 0 || inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
		if (strcmp(host, "localhost") == 0)
			inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
		a4.sin_family = AF_INET;
		a4.sin_port = htons((uint16_t)port);
		sa = (const struct sockaddr *)&a4;
	} else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons((uint16_t)port);
		sa = (const struct sockaddr *)&a6;
		flags |= MHD_USE_IPv6;
	} else {
		return kft_error_set(err, KFT_EINVAL,
		                     "listen address \"%s\": host must be an IP address", addr);
	}
	struct MHD_OptionItem opts[8];
	daemon_options(opts, sa, tls);
	if (tls)
		flags |= MHD_USE_TLS;
	s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, cb, cls, MHD_OPTION_ARRAY, opts,
	                        MHD_OPTION_END);
	if (!s->d)
		return kft_error_set(
		        err, KFT_EIO, "listen tcp %s: cannot start the server (address in use%s?)",
		        addr, tls ? ", a bad certificate or key, or no TLS in libmicrohttpd" : "");
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : port;
	return 0;
}

static int disabled(const char *addr)
{
	return !addr || !*addr || strcmp(addr, "0") == 0;
}

int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err)
{
	return kft_cm_http_start_tls(health_addr, liveness, readiness, metrics_addr, NULL, m, ready,
	                             out, err);
}

int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *metrics_tls,
                          kft_metrics *m, const volatile int *ready, kft_cm_http **out,
                          kft_error *err)
{
	*out = NULL;
	kft_cm_http *h = calloc(1, sizeof(*h));
	if (!h)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	snprintf(h->liveness, sizeof(h->liveness), "%s", liveness ? liveness : "healthz");
	snprintf(h->readiness, sizeof(h->readiness), "%s", readiness ? readiness : "readyz");
	h->m = m;
	h->ready = ready;
	int rc = 0;
	if (!disabled(health_addr))
		rc = start_one(&h->health, health_addr, NULL, on_health, h, err);
	if (!rc && !disabled(metrics_addr) && m)
		rc = start_one(&h->metrics, metrics_addr, metrics_tls, on_metrics, h, err);
	if (rc) {
		kft_cm_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

int kft_cm_http_port(const kft_cm_http *h, int which)
{
	if (!h)
		return 0;
	return which ? h->metrics.port : h->health.port;
}

void kft_cm_http_stop(kft_cm_http *h)
{
	if (!h)
		return;
	if (h->health.d)
		MHD_stop_daemon(h->health.d);
	if (h->metrics.d)
		MHD_stop_daemon(h->metrics.d);
	free(h);
}
