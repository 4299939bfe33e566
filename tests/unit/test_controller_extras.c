/*
 * test_controller_extras.c - the controller manager's additions beyond the
 * first cut: the RuntimeInUseFinalizer gate (src/controller/runtime_refs.c,
 * config.c), the references the PodGroup plugins' watches follow, and the
 * events.k8s.io/v1 events the TrainJob controller records
 * (src/kube/events.c kft_kube_event_v1), against the scripted TLS server of
 * kube_server_fixture.h.
 *
 * Behaviour pinned, with its source:
 * - Trainer v2.2.0 pkg/controller/trainingruntime_controller.go and
 *   clustertrainingruntime_controller.go Reconcile: the resource-in-use
 *   finalizer is added while TrainJobs reference the runtime, removed only
 *   once the runtime is being deleted and none does, else left alone;
 *   patches are client.MergeFrom merge patches of metadata.finalizers;
 * - v2.2.0 pkg/util/trainjob RuntimeRefIsTrainingRuntime /
 *   RuntimeRefIsClusterTrainingRuntime: apiGroup trainer.kubeflow.org and the
 *   kind, both set;
 * - v2.3.0 pkg/runtime/indexer: the runtimeClassName of every replicated
 *   job's pod template; coscheduling.go / volcano.go handlers requeue only
 *   TrainJobs with spec.suspend true;
 * - client-go v0.36.2 tools/events: event_recorder.go makeEvent (name
 *   "<name>.<hex nanos>", namespace "default" for cluster objects,
 *   eventTime, regarding, action, reportingController, reportingInstance
 *   "<controller>-<hostname>"), event_broadcaster.go recordToSink and
 *   recordEvent (the second occurrence patches series {count 2}, later ones
 *   only count; a 404 on the patch creates the Event whole; the key has no
 *   note), finishSeries (6 minutes) and refreshExistingEventSeries;
 * - k8s.io/kubernetes pkg/apis/core/validation/events.go: note at most
 *   1024 bytes, reportingInstance at most 128;
 * - controller-runtime v0.24.1 pkg/metrics/server createListener: with
 *   SecureServing, tls.crt/tls.key from $TMPDIR/k8s-metrics-server/
 *   serving-certs when both exist, else a self-signed certificate for
 *   "localhost" and 127.0.0.1 (client-go util/cert); trainer v2.3.0
 *   pkg/util/tlsconfig: tls.minVersion sets the minimum; Go's server
 *   default minimum is TLS 1.2. Ours on purpose: the server is mbedTLS 2.28,
 *   TLS 1.2 at most, so "1.3" is refused at start-up naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_server_fixture.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "controller/httpd.h"
#include "controller/metrics.h"
#include "controller/reconcile.h"
#include "controller/controller.h"
#include "kftrainer/decode.h"
#include "kube/kube.h"

static ks_pki g_pki;
static ks_server g_srv;

static const char *notfound = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                              "\"message\":\"events.events.k8s.io \\\"x\\\" not found\","
                              "\"reason\":\"NotFound\",\"code\":404}";

static json_t *parse(const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);
	if (!j)
		fail_msg("bad test JSON: %s: %s", je.text, s);
	return j;
}

/* ---- the feature gate ----------------------------------------------------------- */

static void gate_parsed(void **state)
{
	(void)state;
	kft_error err = {0};
	unsigned f = 0;
	assert_int_equal(kft_cm_feature_gates_set(&f, "RuntimeInUseFinalizer=true", &err), 0);
	assert_true(f & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER);
	assert_int_equal(kft_cm_feature_gates_set(&f, "RuntimeInUseFinalizer=false", &err), 0);
	assert_false(f & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER);
	/* ours: upstream's AllAlpha/AllBeta never turn an extension on */
	assert_int_equal(kft_cm_feature_gates_set(&f, "AllAlpha=true,AllBeta=true", &err), 0);
	assert_false(f & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER);
	assert_int_equal(kft_cm_feature_gates_set(&f, "RuntimeInUseFinalizer=maybe", &err),
	                 KFT_EINVAL);
	assert_non_null(strstr(err.message, "invalid value of RuntimeInUseFinalizer=maybe"));
}

static void gate_from_file(void **state)
{
	(void)state;
	kft_cm_config cfg;
	kft_error err = {0};
	json_t *doc = parse("{\"apiVersion\":\"config.trainer.kubeflow.org/v1alpha1\","
	                    "\"kind\":\"Configuration\","
	                    "\"featureGates\":{\"RuntimeInUseFinalizer\":true}}");
	assert_int_equal(kft_cm_config_defaults(&cfg, &err), 0);
	assert_false(cfg.features & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER);
	assert_int_equal(kft_cm_config_from_json(&cfg, doc, "test.yaml", &err), 0);
	assert_true(cfg.features & KFT_FEATURE_RUNTIME_IN_USE_FINALIZER);
	kft_cm_config_free(&cfg);
	json_decref(doc);
}

/* ---- the finalizer rule ------------------------------------------------------- */

/* The patch for a runtime with these finalizers, deletion state and use. */
static json_t *in_use_patch(const char *finalizers, int deleting, size_t in_use)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"rt\",\"namespace\":\"ns\"%s%s%s%s}}",
	         finalizers ? ",\"finalizers\":" : "", finalizers ? finalizers : "",
	         deleting ? ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"" : "", "");
	json_t *rt = parse(text), *patch = NULL;
	kft_error err = {0};
	assert_int_equal(kft_cm_runtime_in_use_patch(rt, in_use, &patch, &err), 0);
	json_decref(rt);
	return patch;
}

static void assert_finalizers(json_t *patch, const char *want)
{
	assert_non_null(patch);
	char *got = json_dumps(json_object_get(json_object_get(patch, "metadata"), "finalizers"),
	                       JSON_COMPACT | JSON_ENCODE_ANY);
	assert_string_equal(got, want);
	free(got);
	json_decref(patch);
}

static void finalizer_added_while_in_use(void **state)
{
	(void)state;
	assert_finalizers(in_use_patch(NULL, 0, 2), "[\"trainer.kubeflow.org/resource-in-use\"]");
	assert_finalizers(in_use_patch("[\"other/f\"]", 0, 1),
	                  "[\"other/f\",\"trainer.kubeflow.org/resource-in-use\"]");
	/* already there: nothing to send */
	assert_null(in_use_patch("[\"trainer.kubeflow.org/resource-in-use\"]", 0, 1));
	/* not in use and not being deleted: v2.2 leaves it */
	assert_null(in_use_patch("[\"trainer.kubeflow.org/resource-in-use\"]", 0, 0));
	assert_null(in_use_patch(NULL, 0, 0));
	/* ours: no new finalizer on an object being deleted (the API server
	 * would refuse it) */
	assert_null(in_use_patch(NULL, 1, 3));
}

static void finalizer_removed_once_unused(void **state)
{
	(void)state;
	/* deleted and still used: held */
	assert_null(in_use_patch("[\"trainer.kubeflow.org/resource-in-use\"]", 1, 1));
	/* deleted and unused: released; an emptied list is null (omitempty) */
	assert_finalizers(in_use_patch("[\"trainer.kubeflow.org/resource-in-use\"]", 1, 0), "null");
	assert_finalizers(in_use_patch("[\"a/b\",\"trainer.kubeflow.org/resource-in-use\"]", 1, 0),
	                  "[\"a/b\"]");
}

static void gate_off_only_strips(void **state)
{
	(void)state;
	/* v2.3.0: the finalizer goes whatever uses the runtime */
	json_t *rt = parse("{\"metadata\":{\"name\":\"rt\",\"finalizers\":"
	                   "[\"trainer.kubeflow.org/resource-in-use\"]}}"),
	       *patch = NULL;
	kft_error err = {0};
	assert_int_equal(kft_cm_runtime_finalizer_patch(rt, &patch, &err), 0);
	assert_finalizers(patch, "null");
	json_decref(rt);
}

/* ---- references ------------------------------------------------------------------ */

static int runtime_key(const char *job_text, char *buf, size_t size)
{
	json_t *job = parse(job_text);
	int rc = kft_cm_trainjob_runtime_key(job, buf, size);
	json_decref(job);
	return rc;
}

static void trainjob_runtime_keys(void **state)
{
	(void)state;
	char key[128];
	assert_int_equal(runtime_key("{\"metadata\":{\"name\":\"j\",\"namespace\":\"team\"},"
	                             "\"spec\":{\"runtimeRef\":{\"name\":\"torch\",\"apiGroup\":"
	                             "\"trainer.kubeflow.org\",\"kind\":\"TrainingRuntime\"}}}",
	                             key, sizeof(key)),
	                 0);
	assert_string_equal(key, "TrainingRuntime/team/torch");
	assert_int_equal(runtime_key("{\"metadata\":{\"name\":\"j\",\"namespace\":\"team\"},"
	                             "\"spec\":{\"runtimeRef\":{\"name\":\"torch\",\"apiGroup\":"
	                             "\"trainer.kubeflow.org\",\"kind\":"
	                             "\"ClusterTrainingRuntime\"}}}",
	                             key, sizeof(key)),
	                 0);
	assert_string_equal(key, "ClusterTrainingRuntime/torch");
	/* unset apiGroup or kind, another group or kind: no runtime of ours */
	const char *none[] = {
	        "{\"spec\":{\"runtimeRef\":{\"name\":\"t\",\"kind\":\"TrainingRuntime\"}}}",
	        "{\"spec\":{\"runtimeRef\":{\"name\":\"t\",\"apiGroup\":\"trainer.kubeflow.org\"}}"
	        "}",
	        "{\"spec\":{\"runtimeRef\":{\"name\":\"t\",\"apiGroup\":\"x.io\",\"kind\":"
	        "\"TrainingRuntime\"}}}",
	        "{\"spec\":{\"runtimeRef\":{\"name\":\"t\",\"apiGroup\":\"trainer.kubeflow.org\","
	        "\"kind\":\"Other\"}}}",
	        "{\"spec\":{\"runtimeRef\":{\"name\":\"\",\"apiGroup\":\"trainer.kubeflow.org\","
	        "\"kind\":\"TrainingRuntime\"}}}",
	        "{\"spec\":7}",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_int_equal(runtime_key(none[i], key, sizeof(key)), KFT_ENOTFOUND);
	assert_int_equal(runtime_key("{\"spec\":{\"runtimeRef\":{\"name\":\"a-long-name\","
	                             "\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
	                             "\"ClusterTrainingRuntime\"}}}",
	                             key, 10),
	                 KFT_ELIMIT);
}

static void runtime_classes_and_suspend(void **state)
{
	(void)state;
	json_t *rt = parse("{\"spec\":{\"template\":{\"spec\":{\"replicatedJobs\":["
	                   "{\"template\":{\"spec\":{\"template\":{\"spec\":"
	                   "{\"runtimeClassName\":\"gvisor\"}}}}},"
	                   "{\"template\":{\"spec\":{\"template\":{\"spec\":{}}}}},"
	                   "{\"template\":{\"spec\":{\"template\":{\"spec\":"
	                   "{\"runtimeClassName\":\"kata\"}}}}},"
	                   "{\"template\":{\"spec\":{\"template\":{\"spec\":"
	                   "{\"runtimeClassName\":\"gvisor\"}}}}}]}}}}");
	json_t *names = kft_cm_runtime_class_names(rt);
	char *text = json_dumps(names, JSON_COMPACT);
	assert_string_equal(text, "[\"gvisor\",\"kata\"]");
	free(text);
	json_decref(names);
	json_decref(rt);
	rt = parse("{\"spec\":{\"mlPolicy\":{}}}");
	names = kft_cm_runtime_class_names(rt);
	assert_int_equal(json_array_size(names), 0);
	json_decref(names);
	json_decref(rt);

	json_t *a = parse("{\"spec\":{\"suspend\":true}}"), *b = parse("{\"spec\":{}}"),
	       *c = parse("{\"spec\":{\"suspend\":false}}");
	assert_true(kft_cm_trainjob_suspended(a));
	assert_false(kft_cm_trainjob_suspended(b));
	assert_false(kft_cm_trainjob_suspended(c));
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

/* ---- events.k8s.io/v1 ------------------------------------------------------------- */

static kft_kube *make_client(void)
{
	kft_kube_config *cfg = NULL;
	kft_kube *k = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_true(asprintf(&cfg->server, "https://127.0.0.1:%d", g_srv.port) > 0);
	cfg->ca_file = strdup(g_pki.ca.cert_path);
	cfg->token = strdup("tok");
	cfg->max_retries = 0;
	assert_int_equal(kft_kube_new(cfg, &k, &err), 0);
	kft_kube_config_free(cfg);
	return k;
}

static int group_setup(void **state)
{
	(void)state;
	return ks_pki_make(&g_pki) || ks_start(&g_srv, &g_pki, 0) ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	ks_stop(&g_srv);
	ks_pki_free(&g_pki);
	return 0;
}

static int each_setup(void **state)
{
	(void)state;
	ks_reset(&g_srv);
	return 0;
}

static const char *trainjob_text =
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
        "\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\",\"uid\":\"u-1\","
        "\"resourceVersion\":\"7\"}}";

static json_t *last_body(void)
{
	return parse(ks_req(&g_srv, -1)->body);
}

static const char *sget(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);
	return json_string_value(b ? json_object_get(v, b) : v);
}

static void event_v1_created(void **state)
{
	(void)state;
	kft_kube *k = make_client();
	json_t *tj = parse(trainjob_text);
	kft_error err = {0};
	kft_event_v1 ev = {.regarding = tj,
	                   .type = "Warning",
	                   .reason = "TrainJobResourcesCreationFailed",
	                   .action = "Reconciling",
	                   .note = "it broke",
	                   .controller = "trainer-trainjob-controller"};
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_int_equal(ks_count(&g_srv), 1);
	assert_string_equal(ks_req(&g_srv, -1)->method, "POST");
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/apis/events.k8s.io/v1/namespaces/ns/events");
	json_t *b = last_body();
	assert_string_equal(sget(b, "apiVersion", NULL), "events.k8s.io/v1");
	assert_string_equal(sget(b, "kind", NULL), "Event");
	assert_true(strncmp(sget(b, "metadata", "name"), "job.", 4) == 0);
	assert_string_equal(sget(b, "metadata", "namespace"), "ns");
	assert_string_equal(sget(b, "type", NULL), "Warning");
	assert_string_equal(sget(b, "reason", NULL), "TrainJobResourcesCreationFailed");
	assert_string_equal(sget(b, "action", NULL), "Reconciling");
	assert_string_equal(sget(b, "note", NULL), "it broke");
	assert_string_equal(sget(b, "reportingController", NULL), "trainer-trainjob-controller");
	char host[256] = "", want[400];
	gethostname(host, sizeof(host) - 1);
	snprintf(want, sizeof(want), "trainer-trainjob-controller-%s", host);
	want[128] = '\0';
	assert_string_equal(sget(b, "reportingInstance", NULL), want);
	assert_string_equal(sget(b, "regarding", "kind"), "TrainJob");
	assert_string_equal(sget(b, "regarding", "apiVersion"), "trainer.kubeflow.org/v1alpha1");
	assert_string_equal(sget(b, "regarding", "uid"), "u-1");
	assert_string_equal(sget(b, "regarding", "resourceVersion"), "7");
	/* MicroTime: six fractional digits */
	const char *t = sget(b, "eventTime", NULL);
	assert_int_equal(strlen(t), 27);
	assert_int_equal(t[19], '.');
	assert_null(json_object_get(b, "series"));
	assert_null(json_object_get(b, "related"));
	assert_null(json_object_get(b, "count"));
	json_decref(b);
	kft_kube_free(k);
	json_decref(tj);
}

static void event_v1_series(void **state)
{
	(void)state;
	kft_kube *k = make_client();
	json_t *tj = parse(trainjob_text);
	kft_error err = {0};
	kft_event_v1 ev = {.regarding = tj,
	                   .type = "Warning",
	                   .reason = "R",
	                   .action = "Reconciling",
	                   .note = "first",
	                   .controller = "c",
	                   .instance = "c-1"};
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	json_t *b = last_body();
	char path[512];
	snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/ns/events/%s",
	         sget(b, "metadata", "name"));
	json_decref(b);

	/* the second: a series of 2, patched onto the first Event; another
	 * note does not make another event */
	ev.note = "second";
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_int_equal(ks_count(&g_srv), 2);
	assert_string_equal(ks_req(&g_srv, -1)->method, "PATCH");
	assert_string_equal(ks_req(&g_srv, -1)->path, path);
	assert_string_equal(ks_req(&g_srv, -1)->content_type,
	                    "application/strategic-merge-patch+json");
	b = last_body();
	assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "series"), "count")),
	                 2);
	assert_int_equal(strlen(sget(b, "series", "lastObservedTime")), 27);
	assert_int_equal(json_object_size(b), 1);
	json_decref(b);

	/* the third and fourth only count */
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_int_equal(ks_count(&g_srv), 2);
	/* nothing due yet; forced, the count is written, and the Event had
	 * gone: it is created whole, under its name, with the first note */
	assert_int_equal(kft_kube_events_flush(k, 0, &err), 0);
	assert_int_equal(ks_count(&g_srv), 2);
	ks_push_body(&g_srv, 404, notfound);
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_events_flush(k, 1, &err), 0);
	assert_int_equal(ks_count(&g_srv), 4);
	assert_string_equal(ks_req(&g_srv, 2)->method, "PATCH");
	assert_string_equal(ks_req(&g_srv, -1)->method, "POST");
	b = last_body();
	assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "series"), "count")),
	                 4);
	assert_string_equal(sget(b, "note", NULL), "first");
	assert_string_equal(path + strlen(path) - strlen(sget(b, "metadata", "name")),
	                    sget(b, "metadata", "name"));
	json_decref(b);
	/* already written: a second flush sends nothing */
	assert_int_equal(kft_kube_events_flush(k, 1, &err), 0);
	assert_int_equal(ks_count(&g_srv), 4);

	/* the object changed (another resourceVersion): a new Event */
	json_object_set_new(json_object_get(tj, "metadata"), "resourceVersion", json_string("8"));
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->method, "POST");
	kft_kube_free(k);
	json_decref(tj);
}

static void event_v1_limits(void **state)
{
	(void)state;
	kft_kube *k = make_client();
	json_t *crt =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
	              "\"kind\":\"ClusterTrainingRuntime\",\"metadata\":{\"name\":\"torch\"}}");
	kft_error err = {0};
	/* a note of 1023 ASCII bytes then a 2-byte character: cut before it */
	char note[1100];
	memset(note, 'x', 1023);
	strcpy(note + 1023, "\xc3\xa9tail");
	char instance[200];
	memset(instance, 'i', 199);
	instance[199] = '\0';
	kft_event_v1 ev = {.regarding = crt,
	                   .type = "Normal",
	                   .reason = "R",
	                   .action = "A",
	                   .note = note,
	                   .controller = "c",
	                   .instance = instance};
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/apis/events.k8s.io/v1/namespaces/default/events");
	json_t *b = last_body();
	assert_int_equal(strlen(sget(b, "note", NULL)), 1023);
	assert_int_equal(strlen(sget(b, "reportingInstance", NULL)), 128);
	assert_null(sget(b, "regarding", "namespace"));
	json_decref(b);

	kft_event_v1 bad = ev;
	bad.action = "";
	assert_int_equal(kft_kube_event_v1(k, &bad, &err), KFT_EINVAL);
	bad = ev;
	bad.type = "Info";
	assert_int_equal(kft_kube_event_v1(k, &bad, &err), KFT_EINVAL);
	bad = ev;
	bad.controller = NULL;
	assert_int_equal(kft_kube_event_v1(k, &bad, &err), KFT_EINVAL);
	json_t *noname = parse("{\"kind\":\"TrainJob\",\"metadata\":{}}");
	bad = ev;
	bad.regarding = noname;
	assert_int_equal(kft_kube_event_v1(k, &bad, &err), KFT_EINVAL);
	assert_int_equal(ks_count(&g_srv), 1);
	/* a rejected create is returned, and not remembered */
	ks_push_body(&g_srv, 403,
	             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	             "\"message\":\"forbidden\",\"reason\":\"Forbidden\",\"code\":403}");
	ev.reason = "Other";
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), KFT_EDENIED);
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event_v1(k, &ev, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->method, "POST");
	json_decref(noname);
	json_decref(crt);
	kft_kube_free(k);
}

/* ---- /metrics over TLS ------------------------------------------------------------- */

static X509 *pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	return x;
}

static void self_signed_cert(void **state)
{
	(void)state;
	char *cert = NULL, *key = NULL;
	kft_error err = {0};
	assert_int_equal(kft_cm_self_signed_cert(&cert, &key, &err), 0);
	X509 *x = pem_cert(cert);
	assert_non_null(x);
	char cn[128];
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
	assert_true(strncmp(cn, "localhost@", 10) == 0);
	assert_int_equal(X509_check_host(x, "localhost", 0, 0, NULL), 1);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
	BIO *kb = BIO_new_mem_buf(key, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
	assert_int_equal(X509_check_private_key(x, k), 1);
	assert_int_equal(EVP_PKEY_get_bits(k), 2048);
	EVP_PKEY_free(k);
	BIO_free(kb);
	X509_free(x);
	free(cert);
	free(key);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void metrics_cert_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/kft-metrics-cert-XXXXXX", crt[128], key[128];
	assert_non_null(mkdtemp(dir));
	snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	char *c = NULL, *k = NULL, *c2 = NULL, *k2 = NULL, *gc = NULL, *gk = NULL;
	int generated = -1;
	kft_error err = {0};
	/* nothing there: a generated certificate */
	assert_int_equal(kft_cm_metrics_cert(dir, &gc, &gk, &generated, &err), 0);
	assert_int_equal(generated, 1);
	assert_non_null(strstr(gc, "BEGIN CERTIFICATE"));
	/* only the certificate: still generated */
	write_text(crt, gc);
	assert_int_equal(kft_cm_metrics_cert(dir, &c, &k, &generated, &err), 0);
	assert_int_equal(generated, 1);
	assert_string_not_equal(c, gc);
	free(c);
	free(k);
	/* both: read as they are */
	write_text(key, gk);
	assert_int_equal(kft_cm_metrics_cert(dir, &c, &k, &generated, &err), 0);
	assert_int_equal(generated, 0);
	assert_string_equal(c, gc);
	assert_string_equal(k, gk);
	free(c);
	free(k);
	/* a key of another certificate: refused, naming the files */
	assert_int_equal(kft_cm_self_signed_cert(&c2, &k2, &err), 0);
	write_text(key, k2);
	assert_int_equal(kft_cm_metrics_cert(dir, &c, &k, &generated, &err), KFT_EINVAL);
	assert_null(c);
	assert_non_null(strstr(err.message, "tls.crt"));
	write_text(key, "not a key");
	assert_int_equal(kft_cm_metrics_cert(dir, &c, &k, &generated, &err), KFT_EINVAL);
	unlink(crt);
	unlink(key);
	rmdir(dir);
	free(c2);
	free(k2);
	free(gc);
	free(gk);
}

/* tls.minVersion as the server takes it; mbedTLS 2.28 stops at TLS 1.2, so
 * "1.3" (accepted by upstream's pkg/util/tlsconfig) is refused by name. */
static void tls_min_version(void **state)
{
	(void)state;
	kft_error err = {0};
	assert_int_equal(kft_cm_tls_min_version(NULL, &err), 2);
	assert_int_equal(kft_cm_tls_min_version("", &err), 2);
	assert_int_equal(kft_cm_tls_min_version("1.2", &err), 2);
	assert_int_equal(kft_cm_tls_min_version("1.1", &err), 1);
	assert_int_equal(kft_cm_tls_min_version("1.0", &err), 0);
	assert_int_equal(kft_cm_tls_min_version("1.3", &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "tls.minVersion"));
	assert_non_null(strstr(err.message, "\"1.3\""));
	assert_int_equal(kft_cm_tls_min_version("VersionTLS12", &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "\"VersionTLS12\""));
}

/* GET /metrics over TLS (versions min..max), trusting only `ca_pem`.
 * Returns the response (caller frees) or NULL when the handshake fails. */
/* GET /metrics over TLS min..max offering only `cipher` (OpenSSL's names,
 * as `openssl s_client -cipher` takes them; NULL: OpenSSL's default); the
 * answer, or NULL when the handshake fails. */
static char *tls_get_cipher(int port, const char *ca_pem, int min, int max, const char *cipher)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	/* security level 0, so the client offers even the suites that the
	 * server must refuse (OpenSSL's own level would hide them) */
	if (cipher)
		assert_int_equal(SSL_CTX_set_cipher_list(ctx, cipher), 1);
	X509 *ca = pem_cert(ca_pem);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	X509_free(ca);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_min_proto_version(ctx, min);
	SSL_CTX_set_max_proto_version(ctx, max);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	BIO *b = BIO_new_ssl_connect(ctx);
	SSL *ssl = NULL;
	BIO_get_ssl(b, &ssl);
	SSL_set1_host(ssl, "127.0.0.1");
	BIO_set_conn_hostname(b, target);
	char *out = NULL;
	if (BIO_do_connect(b) == 1 && BIO_do_handshake(b) == 1) {
		const char *req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
		                  "Connection: close\r\n\r\n";
		BIO_write(b, req, (int)strlen(req));
		size_t cap = 1 << 20, n = 0;
		out = malloc(cap + 1);
		int r;
		while (out && n < cap && (r = BIO_read(b, out + n, (int)(cap - n))) > 0)
			n += (size_t)r;
		if (out)
			out[n] = '\0';
	}
	BIO_free_all(b);
	SSL_CTX_free(ctx);
	return out;
}

static char *tls_get(int port, const char *ca_pem, int min, int max)
{
	return tls_get_cipher(port, ca_pem, min, max, NULL);
}

/* Whether a TLS 1.2 client offering only `cipher` gets an answer. */
static int suite_served(int port, const char *ca_pem, const char *cipher)
{
	char spec[128];
	snprintf(spec, sizeof(spec), "%s:@SECLEVEL=0", cipher);
	char *resp = tls_get_cipher(port, ca_pem, TLS1_2_VERSION, TLS1_2_VERSION, spec);
	int ok = resp && strncmp(resp, "HTTP/1.1 200", 12) == 0;
	free(resp);
	return ok;
}

typedef struct fetched {
	char body[1 << 16];
	size_t n;
	long code;
	CURLcode rc;
} fetched;

static size_t fetched_add(char *p, size_t size, size_t nmemb, void *ud)
{
	fetched *f = ud;
	size_t add = size * nmemb;
	if (add > sizeof(f->body) - 1 - f->n)
		add = sizeof(f->body) - 1 - f->n;
	memcpy(f->body + f->n, p, add);
	f->n += add;
	f->body[f->n] = '\0';
	return size * nmemb;
}

/* GET url with libcurl, trusting only ca_pem; "localhost" resolves to
 * 127.0.0.1 so the DNS name in the certificate is what gets checked. */
static void curl_get(const char *url, int port, const char *ca_pem, fetched *f)
{
	char resolve[64];
	snprintf(resolve, sizeof(resolve), "localhost:%d:127.0.0.1", port);
	struct curl_slist *rs = curl_slist_append(NULL, resolve);
	struct curl_blob ca = {(void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY};
	memset(f, 0, sizeof(*f));
	CURL *c = curl_easy_init();
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_RESOLVE, rs);
	curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetched_add);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	f->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->code);
	curl_easy_cleanup(c);
	curl_slist_free_all(rs);
}

/* A plain-text request to the TLS port: refused, and nothing breaks. */
static void plain_to_tls_port(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_true(send(fd, req, strlen(req), MSG_NOSIGNAL) > 0);
	char buf[256];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		assert_true(strncmp(buf, "HTTP/", 5) != 0); /* no plain answer */
	close(fd);
}

/* With secureServing, /metrics is HTTPS with the certificate tls.c made,
 * verified by a real client; the server speaks TLS 1.2 (mbedTLS 2.28). */
static void metrics_served_over_tls(void **state)
{
	(void)state;
	char *cert = NULL, *key = NULL, url[96];
	kft_error err = {0};
	assert_int_equal(kft_cm_self_signed_cert(&cert, &key, &err), 0);
	kft_metrics *m = kft_metrics_new();
	assert_int_equal(kft_metrics_add_controller(m, "trainjob_controller", 1), 0);
	volatile int ready = 1;
	kft_cm_http_tls tls = {cert, key, NULL, NULL, NULL};
	kft_cm_http *h = NULL;
	assert_int_equal(kft_cm_http_start_tls("127.0.0.1:0", "healthz", "readyz", "127.0.0.1:0",
	                                       &tls, m, &ready, &h, &err),
	                 0);
	int port = kft_cm_http_port(h, 1);
	assert_true(port > 0);
	/* libcurl verifies the generated certificate against itself, by IP
	 * address and by DNS name */
	fetched *f = malloc(sizeof(*f));
	assert_non_null(f);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
	curl_get(url, port, cert, f);
	assert_int_equal(f->rc, CURLE_OK);
	assert_int_equal(f->code, 200);
	assert_non_null(strstr(f->body, "controller_runtime_reconcile_total{controller="
	                                "\"trainjob_controller\",result=\"success\"} 0"));
	snprintf(url, sizeof(url), "https://localhost:%d/metrics", port);
	curl_get(url, port, cert, f);
	assert_int_equal(f->rc, CURLE_OK);
	assert_int_equal(f->code, 200);
	snprintf(url, sizeof(url), "https://localhost:%d/nope", port);
	curl_get(url, port, cert, f);
	assert_int_equal(f->code, 404);
	/* a certificate we did not make is not trusted */
	char *other = NULL, *other_key = NULL;
	assert_int_equal(kft_cm_self_signed_cert(&other, &other_key, &err), 0);
	curl_get(url, port, other, f);
	assert_int_equal(f->rc, CURLE_PEER_FAILED_VERIFICATION);
	/* plain HTTP on the TLS port gets no answer and harms nothing */
	plain_to_tls_port(port);
	/* TLS 1.2 is served; a client that wants TLS 1.3 only is turned away */
	char *resp = tls_get(port, cert, TLS1_2_VERSION, TLS1_3_VERSION);
	assert_non_null(resp);
	assert_true(strncmp(resp, "HTTP/1.1 200", 12) == 0);
	free(resp);
	assert_null(tls_get(port, cert, TLS1_3_VERSION, TLS1_3_VERSION));
	/* forward-secret AEAD suites only by default: RSA key exchange and
	 * SHA-1 CBC suites, which mbedTLS's default list has, are refused
	 * (`openssl s_client -cipher AES128-SHA` fails) */
	assert_false(suite_served(port, cert, "AES128-SHA"));
	assert_false(suite_served(port, cert, "AES128-GCM-SHA256"));
	assert_false(suite_served(port, cert, "ECDHE-RSA-AES128-SHA"));
	assert_true(suite_served(port, cert, "ECDHE-RSA-AES128-GCM-SHA256"));
	assert_true(suite_served(port, cert, "ECDHE-RSA-AES256-GCM-SHA384"));
	assert_true(suite_served(port, cert, "ECDHE-RSA-CHACHA20-POLY1305"));
	kft_cm_http_stop(h);
	free(f);

	/* tls.cipherSuites, Go's names as controller-runtime takes them, is
	 * what is offered; TLS 1.3 names are accepted and skipped, as Go does */
	json_t *names =
	        json_pack("[s,s]", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_AES_128_GCM_SHA256");
	tls.cipher_suites = names;
	assert_int_equal(kft_cm_http_start_tls("0", "healthz", "readyz", "127.0.0.1:0", &tls, m,
	                                       &ready, &h, &err),
	                 0);
	port = kft_cm_http_port(h, 1);
	assert_true(suite_served(port, cert, "ECDHE-RSA-AES128-SHA"));
	assert_false(suite_served(port, cert, "ECDHE-RSA-AES128-GCM-SHA256"));
	kft_cm_http_stop(h);
	/* a name Go does not know, or one mbedTLS does not offer: refused at
	 * start-up, naming the field */
	const char *refused[] = {"TLS_ECDHE_RSA_WITH_AES_128_GCM", "TLS_RSA_WITH_RC4_128_SHA"};
	for (size_t i = 0; i < 2; i++) {
		json_array_set_new(names, 1, json_string(refused[i]));
		assert_int_equal(kft_cm_http_start_tls("0", "healthz", "readyz", "127.0.0.1:0",
		                                       &tls, m, &ready, &h, &err),
		                 KFT_EINVAL);
		assert_null(h);
		char want[128];
		snprintf(want, sizeof(want), "tls.cipherSuites[1]: Unsupported value: \"%s\"",
		         refused[i]);
		assert_non_null(strstr(err.message, want));
	}
	json_decref(names);
	tls.cipher_suites = NULL;

	/* minVersion "1.3" cannot be served: refused by name before listening */
	tls.min_version = "1.3";
	assert_int_equal(kft_cm_http_start_tls("0", "healthz", "readyz", "127.0.0.1:0", &tls, m,
	                                       &ready, &h, &err),
	                 KFT_EINVAL);
	assert_null(h);
	assert_non_null(strstr(err.message, "tls.minVersion"));
	/* a key that is no key, or another certificate's: the server does not start */
	kft_cm_http_tls bad = {cert, "junk", NULL, NULL, NULL};
	assert_int_equal(kft_cm_http_start_tls("0", "healthz", "readyz", "127.0.0.1:0", &bad, m,
	                                       &ready, &h, &err),
	                 KFT_EIO);
	assert_non_null(strstr(err.message, "private key"));
	bad.key_pem = other_key;
	assert_int_equal(kft_cm_http_start_tls("0", "healthz", "readyz", "127.0.0.1:0", &bad, m,
	                                       &ready, &h, &err),
	                 KFT_EIO);
	kft_metrics_free(m);
	free(other);
	free(other_key);
	free(cert);
	free(key);
}

int main(void)
{
	const struct CMUnitTest pure[] = {
	        cmocka_unit_test(gate_parsed),
	        cmocka_unit_test(gate_from_file),
	        cmocka_unit_test(finalizer_added_while_in_use),
	        cmocka_unit_test(finalizer_removed_once_unused),
	        cmocka_unit_test(gate_off_only_strips),
	        cmocka_unit_test(trainjob_runtime_keys),
	        cmocka_unit_test(runtime_classes_and_suspend),
	        cmocka_unit_test(self_signed_cert),
	        cmocka_unit_test(metrics_cert_files),
	        cmocka_unit_test(tls_min_version),
	        cmocka_unit_test(metrics_served_over_tls),
	};
	const struct CMUnitTest events[] = {
	        cmocka_unit_test_setup(event_v1_created, each_setup),
	        cmocka_unit_test_setup(event_v1_series, each_setup),
	        cmocka_unit_test_setup(event_v1_limits, each_setup),
	};
	int failed = cmocka_run_group_tests_name("pure", pure, NULL, NULL);
	return failed + cmocka_run_group_tests_name("events", events, group_setup, group_teardown);
}
