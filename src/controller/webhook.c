/*
 * webhook.c - the admission webhook server: HTTPS on webhook.host:port
 * (9443) on the server core (src/http/server.h), answering AdmissionReviews
 * with admission.c's decisions over the manager's runtime caches.
 *
 * Certificates are controller-runtime's: tls.crt and tls.key in the cert
 * directory ($TMPDIR/k8s-webhook-server/serving-certs, /tmp in a pod),
 * written there either by our certificate manager (certs.c, with
 * certManagement.enable, upstream's default) or by someone else (a Secret
 * mounted by cert-manager). Like controller-runtime's certwatcher, the server
 * core notices when the files change and loads them, so a rotated
 * certificate is served without a restart; with certManagement a thread
 * asks the certificate manager, every check period, whether to rotate, and
 * starts the server once the files are there.
 *
 * The server starts before the caches sync (the runtime webhooks need none);
 * a TrainJob review waits for them, as a controller-runtime client read
 * does, but no longer than the API server waits for the answer (the
 * request's `timeout` parameter, less a tenth to send it).
 *
 * What keeps admission answering: a request body is at most
 * controller-runtime's 7 MiB, a review's checks are linear in it (the
 * schema's list-map and set duplicate checks hash: a 20,000-container
 * runtime or a 50,000-entry env list is checked in about 0.1 s), and no
 * review waits past its own deadline, so WEBHOOK_WORKERS workers are freed
 * as fast as the API server can use them. Readiness (kft_cm_webhooks_ready) waits for the server
 * to serve with certificates, as upstream's readyz waits for certsReady and
 * the webhook server's StartedChecker.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/cm_internal.h"
#include "kftrainer/constants.h"
#include "kftrainer/schema.h"
#include "util/clock.h"
#include "util/rfc3339.h"
#include "util/secret.h"

/* controller-runtime's webhook body limit (maxRequestSize). */
#define BODY_MAX        (7 * 1024 * 1024)
#define WEBHOOK_WORKERS 8

struct kft_cm_webhooks {
	kft_cm *cm;
	kft_backend backend; /* the manager's, reading uncached kinds live */
	const kft_schema *schema;
	kft_httpd *http;
	kft_httpd_handlers handlers;
	char dir[512];
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int stopping;
	atomic_int serving;
	kft_cm_certs *certs; /* NULL unless certManagement.enable */
};

void kft_cm_webhooks_cert_dir(char *buf, size_t n)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(buf, n, "%s/k8s-webhook-server/serving-certs", tmp && *tmp ? tmp : "/tmp");
}

static json_t *get_runtime(void *ctx, const char *kind, const char *ns, const char *name)
{
	kft_cm *cm = ctx;
	int cluster = strcmp(kind, KFT_KIND_CLUSTER_RUNTIME) == 0;
	kft_informer *inf = cluster ? cm->cluster_runtimes : cm->runtimes;
	json_t *obj = NULL;
	if (!inf || kft_informer_get(inf, cluster ? NULL : ns, name, &obj) != 0)
		return NULL;
	json_t *copy = json_deep_copy(obj); /* the cache's own must not change */
	json_decref(obj);
	return copy;
}

/* The validators' object lookups: the manager's caches, and for kinds no
 * informer holds (a Volcano runtime's PriorityClass) a GET, as upstream's
 * client reads them. */
static json_t *get_object(void *self, const char *api_version, const char *kind, const char *ns,
                          const char *name)
{
	static const kft_gvr priority_classes = {"scheduling.k8s.io", "v1", "priorityclasses",
	                                         "PriorityClass", 0};
	kft_cm *cm = self;
	json_t *obj = kft_cm_lookup(cm, api_version, kind, ns, name);
	if (!obj && strcmp(kind, "PriorityClass") == 0 &&
	    strcmp(api_version, "scheduling.k8s.io/v1") == 0) {
		kft_error err = {0};
		if (kft_kube_get(cm->kube, &priority_classes, NULL, name, &obj, &err) != 0)
			obj = NULL;
	}
	return obj;
}

/* Waits until the caches synced (the manager's ready flag) or the
 * monotonic deadline passes; 0 when they have, -1 when they have not. */
static int wait_synced(kft_cm *cm, int64_t deadline_ms)
{
	while (!cm->ready) {
		if (kft_clock_mono_ms() >= deadline_ms || atomic_load(&cm->stop))
			return -1;
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void log_review(kft_cm *cm, kft_cm_webhook which, const kft_cm_admission *req,
                       const json_t *answer)
{
	if (!kft_log_enabled(cm->lg, -5))
		return;
	const json_t *resp = json_object_get(answer, "response");
	const json_t *meta = json_object_get(req->object, "metadata");
	KFT_LOG(cm->lg, -5, "admission", "Reviewed",
	        json_pack("{s:i, s:s, s:s, s:s?, s:s?, s:b}", "webhook", (int)which, "operation",
	                  req->operation, "kind", req->kind, "namespace",
	                  json_string_value(json_object_get(meta, "namespace")), "name",
	                  json_string_value(json_object_get(meta, "name")), "allowed",
	                  json_is_true(json_object_get(resp, "allowed"))));
}

static void plain(kft_http_conn *c, int code, const char *text, const char *extra)
{
	kft_http_respond(c, code, "text/plain; charset=utf-8", text, strlen(text), extra);
}

static json_t *review(kft_cm_webhooks *w, kft_cm_webhook which, const kft_http_req *r)
{
	kft_cm *cm = w->cm;
	/* Answer before the API server stops waiting: a worker held past
	 * that serves no one, and admission answers only while one is free. */
	int64_t budget = kft_cm_admission_timeout_ms(r->head->query);
	int64_t deadline = kft_clock_mono_ms() + budget - budget / 10;
	kft_cm_admission req;
	kft_error err = {0};
	json_t *answer;
	if (kft_cm_admission_decode(r->body, r->body_len, &req, &err) != 0)
		return kft_cm_admission_errored(NULL, 400, err.message);
	if (which == KFT_CM_WEBHOOK_VALIDATE_TRAINJOB && wait_synced(cm, deadline) != 0) {
		answer = kft_cm_admission_errored(req.uid, 500,
		                                  "the runtime caches have not synced yet");
	} else {
		char now[KFT_RFC3339_MAX];
		kft_rfc3339_now(now);
		kft_cm_admission_env env = {.schema = w->schema,
		                            .fw = cm->fw,
		                            .backend = &w->backend,
		                            .get_runtime = get_runtime,
		                            .ctx = cm,
		                            .now = now};
		answer = kft_cm_admission_review(which, &req, &env);
		if (answer)
			log_review(cm, which, &req, answer);
	}
	kft_cm_admission_free(&req);
	return answer;
}

static void handle(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	kft_cm_webhooks *w = ctx;
	kft_cm_webhook which = kft_cm_webhook_for_path(r->head->path);
	if (which == KFT_CM_WEBHOOK_NONE) {
		plain(c, 404, "404 page not found\n", NULL);
		return;
	}
	if (strcmp(r->head->method, "POST") != 0) {
		plain(c, 405, "405 method not allowed\n", "Allow: POST\r\n");
		return;
	}
	json_t *answer = review(w, which, r);
	char *body = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
	json_decref(answer);
	if (body)
		kft_http_respond(c, 200, "application/json", body, strlen(body), NULL);
	else
		plain(c, 500, "500 internal server error\n", NULL);
	free(body);
}

/* The core's word after it looked at the certificate directory. */
static void cert_reloaded(void *ctx, int rc, const kft_error *err)
{
	kft_cm_webhooks *w = ctx;
	if (rc)
		KFT_LOG_ERR(w->cm->lg, "controller-runtime.certwatcher",
		            "error reloading certificate", err->message, NULL);
	else
		KFT_LOG(w->cm->lg, KFT_LOG_INFO, "controller-runtime.certwatcher",
		        "Updated current TLS certificate", NULL);
}

/* ---- certificates on disk ------------------------------------------------------------- */

static int start_server(kft_cm_webhooks *w, kft_error *err);

static void *watch(void *arg)
{
	kft_cm_webhooks *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&w->cond, &w->mu, &until);
		if (w->stopping)
			break;
		pthread_mutex_unlock(&w->mu);
		if (w->certs)
			kft_cm_certs_tick(w->certs);
		if (!atomic_load(&w->serving) && (!w->certs || kft_cm_certs_ready(w->certs))) {
			kft_error err = {0};
			if (start_server(w, &err) != 0)
				KFT_LOG_ERR(w->cm->lg, "controller-runtime.webhook",
				            "cannot start the webhook server yet", err.message,
				            NULL);
		}
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int start_server(kft_cm_webhooks *w, kft_error *err)
{
	const kft_cm_config *cfg = w->cm->cfg;
	char *crt = NULL, *key = NULL, addr[300];
	int suites[KFT_HTTP_SUITES_MAX];
	kft_http_tls tls = {.cert_dir = w->dir};
	int rc = kft_http_cert_pair_load(w->dir, &crt, &key, err);
	if (rc == 0)
		rc = kft_cm_tls_settings(cfg->tls_min_version, cfg->tls_cipher_suites, suites, &tls,
		                         err);
	const char *host = cfg->webhook_host ? cfg->webhook_host : "";
	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
	         cfg->webhook_port);
	tls.cert_pem = crt;
	tls.key_pem = key;
	w->handlers =
	        (kft_httpd_handlers){.serve = handle, .cert_reloaded = cert_reloaded, .ctx = w};
	kft_httpd_opts o = {.name = "webhook",
	                    .listen = addr,
	                    .handlers = &w->handlers,
	                    .tls = &tls,
	                    .body_max = BODY_MAX,
	                    .length_required = true,
	                    .workers = WEBHOOK_WORKERS};
	if (rc == 0)
		rc = kft_httpd_start(&o, &w->http, err);
	free(crt);
	kft_secret_free(key);
	if (rc)
		return rc;
	atomic_store(&w->serving, 1);
	KFT_LOG(w->cm->lg, KFT_LOG_INFO, "controller-runtime.webhook", "Serving webhook server",
	        json_pack("{s:s, s:i}", "host", host, "port", kft_httpd_port(w->http)));
	return 0;
}

int kft_cm_webhooks_start(kft_cm *cm, kft_cm_webhooks **out, kft_error *err)
{
	*out = NULL;
	kft_cm_webhooks *w = calloc(1, sizeof(*w));
	if (!w)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	w->cm = cm;
	w->backend = cm->backend;
	w->backend.get_object = get_object;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	kft_cm_webhooks_cert_dir(w->dir, sizeof(w->dir));
	int rc = 0;
	if (!(w->schema = kft_schema_builtin(err)))
		rc = err->code;
	if (!rc && cm->cfg->cert_management_enable) {
		KFT_LOG(cm->lg, KFT_LOG_INFO, "setup", "Setting up certificate management", NULL);
		rc = kft_cm_certs_start(cm, w->dir, &w->certs, err);
	} else if (!rc) {
		KFT_LOG(cm->lg, KFT_LOG_INFO, "setup",
		        "Certificate management is disabled, certificates must be provided "
		        "externally",
		        NULL);
	}
	/* With certificate management the files may come later (a Secret
	 * mounted read-only, as upstream's manifests do, is synced by the
	 * kubelet): the watcher starts the server once they are there. */
	if (!rc && (!w->certs || kft_cm_certs_ready(w->certs))) {
		rc = start_server(w, err);
		/* Files that are there but not (yet) a pair are being replaced
		 * by whoever provides them, a key written before its
		 * certificate: the watcher tries again each second, and
		 * /readyz says why until it serves. Missing files still stop
		 * start-up, as upstream's. */
		if (rc == KFT_EINVAL) {
			KFT_LOG_ERR(cm->lg, "controller-runtime.webhook",
			            "cannot start the webhook server yet", err->message, NULL);
			rc = 0;
		}
	}
	if (!rc && pthread_create(&w->thread, NULL, watch, w) != 0)
		rc = kft_error_set(err, KFT_ENOMEM, "cannot start the certificate watcher");
	w->thread_started = rc == 0;
	if (rc) {
		kft_cm_webhooks_stop(w);
		return rc;
	}
	*out = w;
	return 0;
}

int kft_cm_webhooks_ready(kft_cm_webhooks *w, char *why, size_t n)
{
	if (!w)
		return 1;
	if (w->certs && !kft_cm_certs_ready(w->certs)) {
		snprintf(why, n, "certificates are not ready");
		return 0;
	}
	if (!atomic_load(&w->serving)) {
		snprintf(why, n, "webhook server has not been started yet");
		return 0;
	}
	return 1;
}

int kft_cm_webhooks_port(const kft_cm_webhooks *w)
{
	return w ? kft_httpd_port(w->http) : 0;
}

void kft_cm_webhooks_stop(kft_cm_webhooks *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	if (w->thread_started)
		pthread_join(w->thread, NULL);
	kft_httpd_stop(w->http);
	kft_cm_certs_free(w->certs);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
