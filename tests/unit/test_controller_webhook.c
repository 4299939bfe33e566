/*
 * test_controller_webhook.c - the admission webhooks' decisions
 * (src/controller/admission.c) and the certificate rotator's
 * (src/controller/certs.c), pure functions over JSON and PEM.
 *
 * Upstream v2.3.0 behaviour pinned: pkg/webhooks/trainjob_webhook.go (the
 * defaulter keeps a runtime patch's old time when its manager's patch is
 * unchanged, stamps now otherwise; the validator runs the runtime's
 * ValidateObjects), controller-runtime's admission responses (403 Forbidden
 * with apimachinery's aggregate message; 400 for an undecodable request),
 * and open-policy-agent/cert-controller v0.16.0's refreshCertIfNeeded (a new
 * CA when the CA is invalid or expires within the look-ahead, else a new
 * serving certificate when it does not verify for the DNS name or expires
 * within it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <mbedtls/base64.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/admission.h"
#include "controller/certs.h"
#include "controller/cm_internal.h"
#include "controller/httpd.h"
#include "controller/controller.h"
#include "kftrainer/schema.h"
#include "util/cert.h"

#include "cert_dir_fixture.h"

static const char RUNTIME[] =
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"ClusterTrainingRuntime\","
        "\"metadata\":{\"name\":\"torch\",\"labels\":{\"trainer.kubeflow.org/support\":"
        "\"deprecated\"}},\"spec\":{\"mlPolicy\":{\"numNodes\":1,\"torch\":{}},\"template\":{"
        "\"spec\":{\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"metadata\":{"
        "\"labels\":{\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"}},\"spec\":{"
        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"node\",\"image\":\"t\"}]}}}}}]}}}}";

static json_t *get_runtime(void *ctx, const char *kind, const char *ns, const char *name)
{
	(void)ctx;
	(void)ns;
	if (strcmp(kind, "ClusterTrainingRuntime") != 0 || strcmp(name, "torch") != 0)
		return NULL;
	return json_loads(RUNTIME, 0, NULL);
}

static json_t *review_of(const char *path, const char *body_fmt, ...)
{
	char body[8192];
	va_list ap;
	va_start(ap, body_fmt);
	vsnprintf(body, sizeof(body), body_fmt, ap);
	va_end(ap);
	kft_error err;
	const kft_schema *schema = kft_schema_builtin(&err);
	kft_framework *fw = NULL;
	assert_int_equal(kft_framework_new(0, &fw, &err), 0);
	kft_cm_admission req;
	int rc = kft_cm_admission_decode(body, strlen(body), &req, &err);
	if (rc)
		fail_msg("decode: %s", err.message);
	kft_cm_admission_env env = {.schema = schema,
	                            .fw = fw,
	                            .backend = kft_backend_default(),
	                            .get_runtime = get_runtime,
	                            .now = "2026-05-06T07:08:09Z"};
	json_t *out = kft_cm_admission_review(kft_cm_webhook_for_path(path), &req, &env);
	kft_cm_admission_free(&req);
	kft_framework_free(fw);
	assert_non_null(out);
	return out;
}

#define REQ(kind, op, obj, old)                                                                    \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"       \
	"\"uid\":\"u-1\",\"kind\":{\"group\":\"trainer.kubeflow.org\",\"version\":\"v1alpha1\","   \
	"\"kind\":\"" kind "\"},\"operation\":\"" op "\",\"namespace\":\"ns\",\"object\":" obj     \
	",\"oldObject\":" old "}}"

#define TJ(spec)                                                                                   \
	"{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\",\"metadata\":{"   \
	"\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"x\",\"resourceVersion\":\"1\","             \
	"\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"managedFields\":[{\"manager\":"          \
	"\"kubectl\",\"operation\":\"Update\"}]},\"spec\":" spec "}"

static const char *msg(const json_t *r)
{
	return json_string_value(json_object_get(
	        json_object_get(json_object_get(r, "response"), "status"), "message"));
}

static int allowed(const json_t *r)
{
	return json_is_true(json_object_get(json_object_get(r, "response"), "allowed"));
}

static void test_decode_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
	        "",
	        "not json",
	        "[]",
	        "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
	        "\"request\":{}}",
	        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
	        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	        "{\"operation\":\"CREATE\",\"kind\":{\"kind\":\"TrainJob\"}}}",
	        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	        "{\"uid\":\"u\",\"operation\":\"CREATE\",\"kind\":{\"kind\":\"TrainJob\"},"
	        "\"object\":[1]}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kft_cm_admission req;
		kft_error err = {0};
		assert_int_not_equal(kft_cm_admission_decode(bad[i], strlen(bad[i]), &req, &err),
		                     0);
		assert_null(req.review);
		assert_true(err.message[0] != '\0');
	}
	kft_cm_admission req;
	kft_error err = {0};
	assert_int_equal(kft_cm_admission_decode("", 0, &req, &err), KFT_EINVAL);
	assert_string_equal(err.message, "request body is empty");
}

static void test_missing_runtime(void **state)
{
	(void)state;
	json_t *r = review_of(
	        "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
	        REQ("TrainJob", "CREATE", TJ("{\"runtimeRef\":{\"name\":\"nope\"}}"), "null"));
	assert_false(allowed(r));
	assert_string_equal(
	        msg(r),
	        "spec.RuntimeRef: Invalid value: "
	        "{\"name\":\"nope\",\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
	        "\"ClusterTrainingRuntime\"}: ClusterTrainingRuntime.trainer.kubeflow.org "
	        "\"nope\" not found: specified clusterTrainingRuntime must be created before "
	        "the TrainJob is created");
	assert_int_equal(
	        json_integer_value(json_object_get(
	                json_object_get(json_object_get(r, "response"), "status"), "code")),
	        403);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(r, "response"), "uid")), "u-1");
	json_decref(r);
}

static void test_reserved_env_and_warning(void **state)
{
	(void)state;
	json_t *r = review_of(
	        "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
	        REQ("TrainJob", "CREATE",
	            TJ("{\"runtimeRef\":{\"name\":\"torch\"},\"trainer\":{\"env\":[{\"name\":"
	               "\"PET_NNODES\",\"value\":\"2\"},{\"name\":\"PET_NODE_RANK\",\"value\":"
	               "\"0\"}]}}"),
	            "null"));
	assert_false(allowed(r));
	assert_string_equal(msg(r), "spec.trainer.env: Invalid value: "
	                            "[{\"name\":\"PET_NNODES\",\"value\":\"2\"},{\"name\":"
	                            "\"PET_NODE_RANK\",\"value\":\"0\"}]: must not have reserved "
	                            "envs, invalid envs configured: [PET_NNODES PET_NODE_RANK]");
	/* the deprecated runtime's warning rides along with the refusal */
	const json_t *w = json_object_get(json_object_get(r, "response"), "warnings");
	assert_int_equal(json_array_size(w), 1);
	assert_non_null(strstr(json_string_value(json_array_get(w, 0)), "is deprecated"));
	json_decref(r);
	r = review_of(
	        "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
	        REQ("TrainJob", "CREATE", TJ("{\"runtimeRef\":{\"name\":\"torch\"}}"), "null"));
	assert_true(allowed(r));
	json_decref(r);
}

static void test_runtime_rules(void **state)
{
	(void)state;
	json_t *r = review_of(
	        "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
	        REQ("TrainingRuntime", "CREATE",
	            "{\"apiVersion\":\"trainer.kubeflow.org/"
	            "v1alpha1\",\"kind\":\"TrainingRuntime\","
	            "\"metadata\":{\"name\":\"r\",\"namespace\":\"ns\"},\"spec\":{\"template\":{"
	            "\"spec\":{\"replicatedJobs\":[{\"name\":\"node\",\"replicas\":2,\"template\":{"
	            "\"metadata\":{\"labels\":{\"trainer.kubeflow.org/trainjob-ancestor-step\":"
	            "\"trainer\"}},\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":"
	            "\"x\",\"image\":\"i\"}]}}}}}]}}}}",
	            "null"));
	assert_false(allowed(r));
	/* two errors: apimachinery's aggregate brackets them */
	assert_string_equal(msg(r),
	                    "[spec.template.spec.replicatedJobs[0].replicas: Invalid value: "
	                    "2: always must be 1, "
	                    "spec.template.spec.replicatedJobs[0].template.spec.template."
	                    "spec.containers: Invalid value: [{\"name\":\"x\",\"image\":"
	                    "\"i\",\"resources\":{}}]: must contain the required container "
	                    "for the ancestor: trainer]");
	json_decref(r);
	/* a TrainJob sent to the runtime webhook is a bad request */
	r = review_of(
	        "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
	        REQ("TrainJob", "CREATE", TJ("{\"runtimeRef\":{\"name\":\"torch\"}}"), "null"));
	assert_false(allowed(r));
	assert_int_equal(
	        json_integer_value(json_object_get(
	                json_object_get(json_object_get(r, "response"), "status"), "code")),
	        400);
	json_decref(r);
}

static char *patch_text(const json_t *r)
{
	const char *p = json_string_value(json_object_get(json_object_get(r, "response"), "patch"));
	if (!p)
		return NULL;
	static char buf[4096];
	size_t olen = 0;
	assert_int_equal(mbedtls_base64_decode((unsigned char *)buf, sizeof(buf) - 1, &olen,
	                                       (const unsigned char *)p, strlen(p)),
	                 0);
	buf[olen] = '\0';
	return buf;
}

#define PATCH(m, t, label)                                                                         \
	"{\"manager\":\"" m "\"" t ",\"trainingRuntimeSpec\":{\"template\":{\"metadata\":{"        \
	"\"labels\":{\"a\":\"" label "\"}}}}}"

static void test_defaulter(void **state)
{
	(void)state;
	const char *path = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob";
	/* create: a patch without time gets now, one with a time keeps it */
	json_t *r = review_of(
	        path, REQ("TrainJob", "CREATE",
	                  TJ("{\"runtimeRef\":{\"name\":\"torch\"},\"runtimePatches\":[" PATCH(
	                          "a.io/x", "", "1") "," PATCH("b.io/y",
	                                                       ",\"time\":\"2020-01-01T00:00:00Z\"",
	                                                       "1") "]}"),
	                  "null"));
	assert_true(allowed(r));
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(r, "response"), "patchType")),
	        "JSONPatch");
	assert_string_equal(patch_text(r), "[{\"op\":\"add\",\"path\":\"/spec/runtimePatches/0/"
	                                   "time\",\"value\":\"2026-05-06T07:08:09Z\"}]");
	json_decref(r);
	/* update: a.io/x unchanged keeps its old time even when the client
	 * sent another; b.io/y changed gets now; c.io/z new keeps its own */
	r = review_of(
	        path,
	        REQ("TrainJob", "UPDATE",
	            TJ("{\"runtimeRef\":{\"name\":\"torch\"},\"runtimePatches\":[" PATCH(
	                    "a.io/x", ",\"time\":\"2024-01-01T00:00:00Z\"",
	                    "1") "," PATCH("b.io/y", ",\"time\":\"2020-01-01T00:00:00Z\"",
	                                   "2") "," PATCH("c.io/z",
	                                                  ",\"time\":\"2021-01-01T00:00:00Z\"",
	                                                  "1") "]}"),
	            TJ("{\"runtimeRef\":{\"name\":\"torch\"},\"runtimePatches\":[" PATCH(
	                    "a.io/x", ",\"time\":\"2019-01-01T00:00:00Z\"",
	                    "1") "," PATCH("b.io/y", ",\"time\":\"2020-01-01T00:00:00Z\"",
	                                   "1") "]}")));
	assert_string_equal(patch_text(r),
	                    "[{\"op\":\"add\",\"path\":\"/spec/runtimePatches/0/time\",\"value\":"
	                    "\"2019-01-01T00:00:00Z\"},{\"op\":\"add\",\"path\":\"/spec/"
	                    "runtimePatches/1/time\",\"value\":\"2026-05-06T07:08:09Z\"}]");
	json_decref(r);
	/* nothing to stamp: allowed without a patch */
	r = review_of(path, REQ("TrainJob", "CREATE", TJ("{\"runtimeRef\":{\"name\":\"torch\"}}"),
	                        "null"));
	assert_true(allowed(r));
	assert_null(patch_text(r));
	json_decref(r);
}

/* k8s.io/apiserver's webhook dispatcher (pkg/admission/plugin/webhook/
 * {validating,mutating}/dispatcher.go) tells the webhook its deadline as
 * the `timeout` query parameter, from timeoutSeconds (default 10, at most
 * 30 in admissionregistration/v1); the webhook answers within it. */
static void test_timeout_parameter(void **state)
{
	(void)state;
	struct {
		const char *query;
		int64_t ms;
	} cases[] = {
	        {"timeout=10s", 10000},
	        {"timeout=3s", 3000},
	        {"a=b&timeout=1500ms&c=d", 1500},
	        {"", KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS},
	        {"timeout=", KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS},
	        {"timeout=ten", KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS},
	        {"xtimeout=3s", KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS},
	        {"timeout=1h", KFT_CM_ADMISSION_TIMEOUT_MAX_MS},
	        {"timeout=-5s", 1},
	        {"timeout=0", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(kft_cm_admission_timeout_ms(cases[i].query), cases[i].ms);
}

/* ---- the server: a review waits no longer than the API server does ------------------------ */

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	char *buf = ctx;
	size_t have = strlen(buf), add = size * n;
	if (have + add < 4096) {
		memcpy(buf + have, p, add);
		buf[have + add] = '\0';
	}
	return size * n;
}

/* k8s.io/apiserver's dispatcher gives up on a webhook after the request's
 * ?timeout= (timeoutSeconds); controller-runtime's server answers "caches not
 * synced" as an errored review. A TrainJob review before the caches sync
 * (cm->ready never set here) answers within the one second asked for, not
 * after the 10 s default: a worker is never held past the caller's wait. */
static void test_review_waits_no_longer_than_asked(void **state)
{
	(void)state;
	char tmp[] = "/tmp/kft-webhook-XXXXXX", certs[512], up[512], body[4096] = "";
	assert_non_null(mkdtemp(tmp));
	setenv("TMPDIR", tmp, 1);
	kft_cm_webhooks_cert_dir(certs, sizeof(certs));
	snprintf(up, sizeof(up), "%s/k8s-webhook-server", tmp);
	assert_int_equal(mkdir(up, 0700), 0);
	assert_int_equal(mkdir(certs, 0700), 0);
	kft_cert pair = {0};
	kft_error err = {0};
	kft_cert_opts o = {
	        .key_type = KFT_CERT_EC_P256, .subject = "CN=localhost", .valid_days = 1};
	assert_int_equal(kft_cert_make(&o, "test", &pair, &err), 0);
	cert_dir_put(certs, &pair);
	kft_cm_config *cfg = calloc(1, sizeof(*cfg));
	kft_cm cm = {0};
	assert_int_equal(kft_cm_config_defaults(cfg, &err), 0);
	cfg->webhook_port = 0;
	cfg->webhook_host = strdup("127.0.0.1");
	cfg->cert_management_enable = 0;
	cm.cfg = cfg;
	cm.lg = kft_logger_new(&(kft_log_options){0}, stderr);
	assert_int_equal(kft_framework_new(0, &cm.fw, &err), 0);
	kft_cm_webhooks *w = NULL;
	assert_int_equal(kft_cm_webhooks_start(&cm, &w, &err), 0);
	char url[256];
	snprintf(url, sizeof(url),
	         "https://127.0.0.1:%d/validate-trainer-kubeflow-org-v1alpha1-trainjob?timeout=1s",
	         kft_cm_webhooks_port(w));
	CURL *c = curl_easy_init();
	long code = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L); /* the transport is not the subject */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, REQ("TrainJob", "CREATE", TJ("{}"), "null"));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 6L); /* under the 10 s a review waits by default */
	CURLcode rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	kft_cm_webhooks_stop(w);
	assert_int_equal(rc, CURLE_OK);
	assert_int_equal(code, 200);
	json_t *r = json_loads(body, 0, NULL);
	assert_non_null(r);
	assert_false(allowed(r));
	assert_string_equal(msg(r), "the runtime caches have not synced yet");
	json_decref(r);
	kft_framework_free(cm.fw);
	kft_logger_free(cm.lg);
	kft_cm_config_free(cfg);
	free(cfg);
	kft_cert_free(&pair);
	cert_dir_remove(certs);
	rmdir(up);
	rmdir(tmp);
}

/* ---- certificates ---------------------------------------------------------------------- */

static kft_cert make_ca(long long seconds)
{
	kft_cert_opts o = {.key_type = KFT_CERT_EC_P256,
	                   .is_ca = true,
	                   .subject = "CN=kubeflow-trainer-ca,O=kubeflow-trainer",
	                   .valid_seconds = seconds};
	kft_cert c = {0};
	kft_error err;
	assert_int_equal(kft_cert_make(&o, "ca", &c, &err), 0);
	return c;
}

static kft_cert make_serving(const kft_cert *ca, const char *dns, long long seconds)
{
	kft_cert_opts o = {.key_type = KFT_CERT_EC_P256,
	                   .issuer = ca,
	                   .subject = "CN=svc",
	                   .dns_name = dns,
	                   .valid_seconds = seconds};
	kft_cert c = {0};
	kft_error err;
	assert_int_equal(kft_cert_make(&o, "serving", &c, &err), 0);
	return c;
}

/* A CA and the certificate it signs made together on one curve table
 * (util/cert.h, the local status server's pair) are what the rotator keeps:
 * the CA's key is its certificate's, the serving certificate verifies
 * against the CA for its DNS name and its key is its own (the checks
 * cert-controller's refreshCertIfNeeded makes). */
static void test_cert_chain(void **state)
{
	(void)state;
	const char *dns = "kubeflow-trainer-controller-manager.kubeflow-system.svc";
	kft_cert_opts ca_o = {.is_ca = true,
	                      .subject = "CN=kubeflow-trainer-ca,O=kubeflow-trainer",
	                      .valid_days = 3650},
	              leaf_o = {.subject = "CN=svc", .dns_name = dns, .valid_days = 365};
	kft_cert ca = {0}, srv = {0}, other = {0}, other_srv = {0};
	kft_error err;
	assert_int_equal(kft_cert_make_chain(&ca_o, &leaf_o, "chain", &ca, &srv, &err), 0);
	assert_int_equal(kft_cert_make_chain(&ca_o, &leaf_o, "chain", &other, &other_srv, &err), 0);
	time_t now = time(NULL);
	long long look = 90LL * 24 * 3600;
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, srv.cert_pem, srv.key_pem, dns,
	                                  now, look),
	                 KFT_CM_CERT_KEEP);
	/* each chain its own: another's CA does not sign this one's certificate */
	assert_int_equal(kft_cm_cert_plan(other.cert_pem, other.key_pem, srv.cert_pem, srv.key_pem,
	                                  dns, now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	assert_string_not_equal(ca.key_pem, other.key_pem);
	assert_string_not_equal(srv.key_pem, ca.key_pem);
	kft_cert_free(&ca);
	kft_cert_free(&srv);
	kft_cert_free(&other);
	kft_cert_free(&other_srv);
}

static void test_cert_plan(void **state)
{
	(void)state;
	const char *dns = "kubeflow-trainer-controller-manager.kubeflow-system.svc";
	long long day = 24 * 3600, look = 90 * day;
	time_t now = time(NULL);
	kft_cert ca = make_ca(3650 * day), srv = make_serving(&ca, dns, 365 * day);
	assert_int_equal(kft_cm_cert_plan(NULL, NULL, NULL, NULL, dns, now, look),
	                 KFT_CM_CERT_NEW_CA);
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, NULL, NULL, dns, now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, srv.cert_pem, srv.key_pem, dns,
	                                  now, look),
	                 KFT_CM_CERT_KEEP);
	/* another service name (webhookServiceName changed): a new serving cert */
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, srv.cert_pem, srv.key_pem,
	                                  "other.kubeflow-system.svc", now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	/* within the look-ahead of its expiry: renewed before it expires */
	kft_cert soon = make_serving(&ca, dns, 30 * day);
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, soon.cert_pem, soon.key_pem, dns,
	                                  now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	/* a key that is not the certificate's */
	assert_int_equal(kft_cm_cert_plan(ca.cert_pem, ca.key_pem, srv.cert_pem, soon.key_pem, dns,
	                                  now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	/* signed by another CA */
	kft_cert ca2 = make_ca(3650 * day);
	assert_int_equal(kft_cm_cert_plan(ca2.cert_pem, ca2.key_pem, srv.cert_pem, srv.key_pem, dns,
	                                  now, look),
	                 KFT_CM_CERT_NEW_SERVING);
	/* a CA expiring within the look-ahead: everything new */
	kft_cert old_ca = make_ca(10 * day);
	assert_int_equal(kft_cm_cert_plan(old_ca.cert_pem, old_ca.key_pem, srv.cert_pem,
	                                  srv.key_pem, dns, now, look),
	                 KFT_CM_CERT_NEW_CA);
	assert_int_equal(kft_cm_cert_plan("garbage", ca.key_pem, NULL, NULL, dns, now, look),
	                 KFT_CM_CERT_NEW_CA);
	kft_cert_free(&ca);
	kft_cert_free(&ca2);
	kft_cert_free(&old_ca);
	kft_cert_free(&srv);
	kft_cert_free(&soon);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decode_rejects),
	        cmocka_unit_test(test_missing_runtime),
	        cmocka_unit_test(test_reserved_env_and_warning),
	        cmocka_unit_test(test_runtime_rules),
	        cmocka_unit_test(test_defaulter),
	        cmocka_unit_test(test_timeout_parameter),
	        cmocka_unit_test(test_review_waits_no_longer_than_asked),
	        cmocka_unit_test(test_cert_plan),
	        cmocka_unit_test(test_cert_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
