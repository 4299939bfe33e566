/*
 * statusserver.c - the TrainJob status server, as upstream v2.3.0 runs it
 * behind the TrainJobStatus feature gate (pkg/statusserver).
 *
 * Training code (the Kubeflow SDK's update_trainjob_status) POSTs an
 * UpdateTrainJobStatusRequest to
 *   https://<service>.<ns>.svc:<statusServer.port>/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status
 * with the projected service-account token the TrainJobStatus plugin
 * mounts (audience "trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status").
 * A request is judged in upstream's order: a Content-Length over 64 KiB is
 * 413; anything but that POST is 404; a token that does not verify, or is
 * not for this TrainJob's audience, or is bound to a pod of another
 * namespace is 403; a body that does not decode is 422; a request without
 * trainerStatus is echoed; otherwise status.trainerStatus is server-side
 * applied (field manager "trainer-status", forced) and the request echoed,
 * the API server's refusal becoming 422 (its message), a missing TrainJob
 * 404 "Train job not found", anything else 500 "Internal error". Every
 * error body is a metav1.Status. src/api/statusreq.c decodes and answers
 * (shared with the local engine's endpoint); jwt.c verifies the token.
 *
 * Token verification is go-oidc's, as upstream uses it: the issuer is the
 * iss of the controller's own service-account token; its discovery
 * document must name the same issuer and lists the signing algorithms; the
 * issuer's keys are fetched again when a signature verifies with none of
 * those held (go-oidc's key rotation rule; here at most every 10 s). Both
 * documents are read from the API server the controller talks to
 * (/.well-known/openid-configuration, /openid/v1/jwks: the API server
 * serves both for its service-account issuer, whatever URL the issuer
 * names), with the controller's credentials, as upstream's HTTP client
 * carries them. Out of a cluster, where there is no service-account token,
 * the discovery document's issuer is taken.
 *
 * The serving certificate is the webhook's (upstream: the cert-controller
 * rotator's files, $TMPDIR/k8s-webhook-server/serving-certs, watched for
 * changes): the server core (src/http/server.h) looks at tls.crt and
 * tls.key every second and loads them when they appear or change; until
 * they exist connections are closed unanswered. Pods trust it through the
 * CA the TrainJobStatus plugin copies from the webhook Secret into
 * "<trainjob>-tls-config". A refused body and a path that is not the status
 * path are answered on the core's poll thread; only requests for a
 * TrainJob's status take a worker, whose token check may fetch keys.
 *
 * The API client is the server's own, limited by statusServer.qps/burst
 * (upstream makes a separate client so that reports never eat the
 * reconcilers' budget). The server runs on every replica, leader or not.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/statusreq.h"
#include "controller/cm_internal.h"
#include "controller/jwt.h"
#include "util/clock.h"

#define SA_TOKEN_FILE   "/var/run/secrets/kubernetes.io/serviceaccount/token"
#define DISCOVERY_PATH  "/.well-known/openid-configuration"
#define JWKS_PATH       "/openid/v1/jwks"
#define FIELD_OWNER     "trainer-status"
#define AUDIENCE_FORMAT "trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status"
#define WORKERS         4
#define KEYS_REFRESH_MS 10000
#define LOG_NAME        "runtime-status"
#define TOKEN_FILE_MAX  65536
#define AUTH_MAX        8192

struct kft_cm_status {
	const kft_cm_config *cfg;
	kft_logger *lg;
	kft_kube *kube;
	const kft_gvr *trainjobs;
	char *issuer;
	unsigned algs;
	pthread_mutex_t keys_mu; /* keys and keys_at */
	kft_jwks *keys;
	long long keys_at; /* CLOCK_MONOTONIC ms of the last fetch, 0 never */
	kft_httpd *https;
	kft_httpd_handlers handlers;
	char cert_dir[4000];
};

/* ---- the issuer and its keys ------------------------------------------------------- */

/* upstream's getClusterOIDCIssuerURL; NULL and no error when there is no
 * service-account token (out of a cluster). */
static char *own_issuer(kft_error *err)
{
	FILE *f = fopen(SA_TOKEN_FILE, "r");
	if (!f)
		return NULL;
	char *buf = malloc(TOKEN_FILE_MAX + 1);
	size_t n = buf ? fread(buf, 1, TOKEN_FILE_MAX, f) : 0;
	fclose(f);
	if (!buf) {
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	buf[n] = '\0';
	char *iss = kft_jwt_unverified_issuer(buf, err);
	free(buf);
	return iss;
}

/* Fetches the key set (keys_mu held). */
static int fetch_keys(kft_cm_status *st, kft_error *err)
{
	json_t *doc = NULL;
	kft_jwks *keys = NULL;
	st->keys_at = kft_clock_mono_ms();
	int rc = kft_kube_request(st->kube, "GET", JWKS_PATH, NULL, NULL, 0, &doc, err);
	if (!rc)
		rc = kft_jwks_parse(doc, &keys, err);
	json_decref(doc);
	if (rc)
		return rc;
	kft_jwks_free(st->keys);
	st->keys = keys;
	return 0;
}

static int discover_issuer(kft_cm_status *st, kft_error *e)
{
	json_t *doc = NULL;
	char *mine = own_issuer(e);
	if (!mine && e->code)
		return kft_error_set(e, e->code, "failed to discover issuer URL: %.900s",
		                     e->message);
	int rc = kft_kube_request(st->kube, "GET", DISCOVERY_PATH, NULL, NULL, 0, &doc, e);
	const char *found = json_string_value(json_object_get(doc, "issuer"));
	if (rc)
		rc = kft_error_set(e, rc, "failed to create OIDC provider: %.900s", e->message);
	else if (!found || !*found)
		rc = kft_error_set(
		        e, KFT_EINVAL,
		        "failed to create OIDC provider: the discovery document names no "
		        "issuer");
	else if (mine && strcmp(mine, found) != 0)
		rc = kft_error_set(
		        e, KFT_EINVAL,
		        "failed to create OIDC provider: oidc: issuer URL provided to client "
		        "(\"%.300s\") did not match the issuer URL returned by provider "
		        "(\"%.300s\")",
		        mine, found);
	else if (!(st->issuer = strdup(found)))
		rc = kft_error_set(e, KFT_ENOMEM, "out of memory");
	if (!rc) {
		st->algs = kft_jwt_algs_from_discovery(
		        json_object_get(doc, "id_token_signing_alg_values_supported"));
		KFT_LOG(st->lg, KFT_LOG_INFO, LOG_NAME, "Initialized token authorizer",
		        json_pack("{s:s, s:b}", "issuer", found, "fromServiceAccountToken",
		                  mine != NULL));
	}
	free(mine);
	json_decref(doc);
	return rc;
}

/* upstream's authorizer Init: the issuer, its algorithms, its keys (fetched
 * now when possible, else on first use). */
static int discover(kft_cm_status *st, kft_error *err)
{
	kft_error e = {0};
	int rc = discover_issuer(st, &e);
	if (rc)
		return kft_error_set(err, rc, "token authorizer initialization failed: %.900s",
		                     e.message);
	pthread_mutex_lock(&st->keys_mu);
	kft_error_clear(&e);
	if (fetch_keys(st, &e) != 0)
		KFT_LOG_ERR(st->lg, LOG_NAME, "Could not fetch the issuer's keys (retried on use)",
		            e.message, NULL);
	pthread_mutex_unlock(&st->keys_mu);
	return 0;
}

/* Whether the token's signature verifies with the issuer's keys, fetching
 * them again once when it does not (go-oidc's RemoteKeySet). */
static int signature_ok(kft_cm_status *st, const kft_jwt *t)
{
	pthread_mutex_lock(&st->keys_mu);
	int ok = kft_jwt_signed_by(t, st->keys);
	if (!ok && (!st->keys_at || kft_clock_mono_ms() - st->keys_at >= KEYS_REFRESH_MS)) {
		kft_error err = {0};
		if (fetch_keys(st, &err) == 0)
			ok = kft_jwt_signed_by(t, st->keys);
		else
			KFT_LOG_ERR(st->lg, LOG_NAME, "Could not fetch the issuer's keys",
			            err.message, NULL);
	}
	pthread_mutex_unlock(&st->keys_mu);
	return ok;
}

/* upstream's Authorize: 1 allowed, 0 forbidden. */
static int authorize(kft_cm_status *st, const char *auth, const char *ns, const char *name)
{
	char *token = malloc(AUTH_MAX), audience[2 * KFT_STATUSREQ_NAME_MAX + 64];
	kft_jwt t;
	kft_error err = {0};
	int ok = 0;
	if (!token || !kft_statusreq_bearer(auth, token, AUTH_MAX))
		goto out;
	snprintf(audience, sizeof(audience), AUDIENCE_FORMAT, ns, name);
	if (kft_jwt_parse(token, strlen(token), st->algs, &t, &err) != 0)
		goto out;
	if (!signature_ok(st, &t))
		snprintf(err.message, sizeof(err.message), "failed to verify signature");
	else
		ok = kft_jwt_check_claims(&t, st->issuer, audience, ns, (int64_t)time(NULL),
		                          &err) == 0;
	kft_jwt_free(&t);
out:
	if (!ok && kft_log_enabled(st->lg, KFT_LOG_DEBUG))
		KFT_LOG(st->lg, KFT_LOG_DEBUG, LOG_NAME, "Token refused",
		        json_pack("{s:s, s:s, s:s}", "namespace", ns, "name", name, "reason",
		                  err.message[0] ? err.message : "no bearer token"));
	free(token);
	return ok;
}

/* ---- one request --------------------------------------------------------------------- */

/* The server-side apply and its answer, upstream's mapping of API errors. */
static int record(kft_cm_status *st, const char *ns, const char *name, const json_t *ts,
                  kft_statusreq_answer *a)
{
	json_t *obj = kft_statusreq_apply_object(ns, name, ts);
	kft_error err = {0};
	int rc = obj ? kft_kube_apply_status(st->kube, st->trainjobs, obj, FIELD_OWNER, 1, NULL,
	                                     &err)
	             : KFT_ENOMEM;
	json_decref(obj);
	if (rc == KFT_EINVAL)
		return kft_statusreq_failure(a, 422, err.message, "Invalid");
	if (rc == KFT_ENOTFOUND)
		return kft_statusreq_failure(a, 404, "Train job not found", "NotFound");
	if (rc) {
		KFT_LOG_ERR(st->lg, LOG_NAME, "Failed to update TrainJob", err.message,
		            json_pack("{s:s, s:s}", "namespace", ns, "name", name));
		return kft_statusreq_failure(a, 500, "Internal error", "InternalError");
	}
	return 1;
}

static int judge(kft_cm_status *st, const kft_statusreq_request *r, kft_statusreq_answer *a)
{
	char ns[KFT_STATUSREQ_NAME_MAX], name[KFT_STATUSREQ_NAME_MAX];
	bool present = false;
	int rc = kft_statusreq_route(r, ns, name, a);
	if (rc)
		return rc < 0 ? rc : 0;
	if (!authorize(st, r->auth, ns, name))
		return kft_statusreq_failure(a, 403, "Forbidden", "Forbidden");
	json_t *ts = kft_statusreq_decode(r->body, r->len, &present, a);
	if (!ts)
		return a->body ? 0 : KFT_ENOMEM;
	rc = present ? record(st, ns, name, ts, a) : 1;
	if (rc == 1)
		rc = kft_statusreq_echo(a, ts, present);
	json_decref(ts);
	return rc;
}

static kft_statusreq_request request_of(const kft_http_req *r, char *auth)
{
	if (kft_http_header(r->head->fields, "Authorization", auth, AUTH_MAX) != 1)
		auth[0] = '\0'; /* absent, repeated or too long: judged as none */
	return (kft_statusreq_request){.method = r->head->method,
	                               .path = r->head->path,
	                               .auth = auth,
	                               .body = r->body,
	                               .len = r->body_len};
}

/* On the core's poll thread: a refused body (upstream's 413 Status) and
 * anything but a POST to a status path (404) are answered there. */
static int admit(void *ctx, const kft_http_req *r, kft_http_answer *a)
{
	(void)ctx;
	char ns[KFT_STATUSREQ_NAME_MAX], name[KFT_STATUSREQ_NAME_MAX];
	kft_statusreq_request req = {.method = r->head->method, .path = r->head->path};
	kft_statusreq_answer sa = {0};
	int rc = r->refused ? (kft_statusreq_refused(r->refused, &sa) ? KFT_ENOMEM : 1)
	                    : kft_statusreq_route(&req, ns, name, &sa);
	if (rc == 0)
		return 0;
	*a = (kft_http_answer){.code = sa.body ? sa.code : 500, .type = sa.content_type};
	a->body = sa.body;
	sa.body = NULL;
	kft_statusreq_answer_free(&sa);
	return 1;
}

static void serve(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	kft_cm_status *st = ctx;
	kft_statusreq_answer a = {0};
	char *auth = malloc(AUTH_MAX);
	kft_statusreq_request req = auth ? request_of(r, auth) : (kft_statusreq_request){0};
	if (auth)
		judge(st, &req, &a);
	KFT_LOG(st->lg, KFT_LOG_DEBUG, LOG_NAME, "HTTP request",
	        json_pack("{s:s, s:s, s:i}", "method", r->head->method, "path", r->head->path,
	                  "code", a.body ? a.code : 500));
	if (a.body)
		kft_http_respond(c, a.code, a.content_type, a.body, strlen(a.body), NULL);
	else
		kft_http_respond(c, 500, NULL, "500 Internal Server Error", 25, NULL);
	kft_statusreq_answer_free(&a);
	free(auth);
}

/* The core's word after it looked at the certificate directory. */
static void cert_reloaded(void *ctx, int rc, const kft_error *err)
{
	kft_cm_status *st = ctx;
	if (rc)
		KFT_LOG_ERR(st->lg, LOG_NAME, "Could not load the serving certificate",
		            err->message, json_pack("{s:s}", "certDir", st->cert_dir));
	else
		KFT_LOG(st->lg, KFT_LOG_INFO, LOG_NAME, "Updated current TLS certificate",
		        json_pack("{s:s}", "certDir", st->cert_dir));
}

/* ---- start and stop -------------------------------------------------------------------- */

static int connect_own(kft_cm_status *st, const char *kubeconfig, kft_error *err)
{
	kft_kube_config *kc = NULL;
	int rc = kft_kube_config_default(kubeconfig, NULL, &kc, err);
	if (rc)
		return rc;
	kc->qps = st->cfg->status_qps;
	kc->burst = st->cfg->status_burst;
	kc->rate_per_resource = 1;
	rc = kft_kube_new(kc, &st->kube, err);
	kft_kube_config_free(kc);
	return rc;
}

static int start_https(kft_cm_status *st, const char *addr, kft_error *err)
{
	int suites[KFT_HTTP_SUITES_MAX];
	kft_http_tls tls = {.cert_dir = st->cert_dir};
	int rc = kft_cm_tls_settings(st->cfg->tls_min_version, st->cfg->tls_cipher_suites, suites,
	                             &tls, err);
	st->handlers = (kft_httpd_handlers){
	        .admit = admit, .serve = serve, .cert_reloaded = cert_reloaded, .ctx = st};
	kft_httpd_opts o = {.name = "status",
	                    .listen = addr,
	                    .handlers = &st->handlers,
	                    .tls = &tls,
	                    .body_max = KFT_STATUSREQ_BODY_MAX,
	                    .length_required = true,
	                    .workers = WORKERS};
	return rc ? rc : kft_httpd_start(&o, &st->https, err);
}

int kft_cm_status_start(const kft_cm_config *cfg, const char *kubeconfig, kft_logger *lg,
                        kft_cm_status **out, kft_error *err)
{
	*out = NULL;
	kft_cm_status *st = calloc(1, sizeof(*st));
	if (!st)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	st->cfg = cfg;
	st->lg = lg;
	st->trainjobs = kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainJob");
	pthread_mutex_init(&st->keys_mu, NULL);
	kft_cm_webhooks_cert_dir(st->cert_dir, sizeof(st->cert_dir));
	char addr[32];
	snprintf(addr, sizeof(addr), ":%d", cfg->status_port);
	int rc = kft_cm_tls_min_version(cfg->tls_min_version, err);
	if (rc >= 0)
		rc = connect_own(st, kubeconfig, err);
	if (!rc)
		rc = discover(st, err);
	if (!rc)
		rc = start_https(st, addr, err);
	if (rc) {
		kft_cm_status_stop(st);
		return rc;
	}
	KFT_LOG(lg, KFT_LOG_INFO, LOG_NAME, "Starting runtime status server with TLS",
	        json_pack("{s:s, s:i, s:b}", "address", addr, "port", kft_httpd_port(st->https),
	                  "certificateLoaded", kft_httpd_has_cert(st->https)));
	*out = st;
	return 0;
}

int kft_cm_status_port(const kft_cm_status *st)
{
	return st ? kft_httpd_port(st->https) : 0;
}

void kft_cm_status_stop(kft_cm_status *st)
{
	if (!st)
		return;
	if (st->kube)
		kft_kube_cancel(st->kube, 1);
	if (st->https)
		KFT_LOG(st->lg, KFT_LOG_INFO, LOG_NAME, "Shutting down runtime status server",
		        NULL);
	kft_httpd_stop(st->https);
	kft_kube_free(st->kube);
	kft_jwks_free(st->keys);
	free(st->issuer);
	pthread_mutex_destroy(&st->keys_mu);
	free(st);
}
