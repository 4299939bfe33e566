/*
 * test_kube_client.c - the REST verbs, error mapping, retries, the rate
 * limiter, connection reuse and events (src/kube/{verbs,request,client,
 * events,gvr,backoff}.c), against the scripted TLS server of
 * kube_server_fixture.h.
 *
 * Behaviour pinned:
 * - paths and query parameters as the API server serves them
 *   (/api/v1/namespaces/NS/RESOURCE/NAME[/status]); SSA is
 *   PATCH application/apply-patch+yaml ?fieldManager=...&force=true
 *   (k8s.io/apimachinery types.ApplyPatchType, client-go Apply);
 *   DeleteOptions carry propagationPolicy and preconditions;
 * - Status codes: 404 NotFound, 409 AlreadyExists vs Conflict, 410 Gone,
 *   401/403, 422 Invalid, each with the server's message verbatim
 *   (apimachinery pkg/api/errors);
 * - 429 and Retry-After are retried (client-go rest/request.go checkWait,
 *   at most 10 times by default); 5xx too; a POST is not repeated after a
 *   5xx without Retry-After, which may have been acted on;
 * - lists page with limit/continue and the continue request carries no
 *   resourceVersion (client-go tools/pager);
 * - events: name "<object>.<hex nanoseconds>", involvedObject, source,
 *   count 1, and an exact repeat patches count (client-go tools/record
 *   event.go makeEvent, events_cache.go eventLogger).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>

#include "kube_server_fixture.h"

#include "kube/kube.h"
#include "kube/kube_internal.h"

static ks_pki g_pki;
static ks_server g_srv;
static kft_kube *g_kube;

static const char *notfound = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                              "\"message\":\"trainjobs.trainer.kubeflow.org \\\"x\\\" not "
                              "found\",\"reason\":\"NotFound\",\"code\":404}";

static kft_kube *make_client(int port, int max_retries, double qps, int burst)
{
	kft_kube_config *cfg = NULL;
	kft_kube *k = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_true(asprintf(&cfg->server, "https://127.0.0.1:%d", port) > 0);
	cfg->ca_file = strdup(g_pki.ca.cert_path);
	cfg->token = strdup("tok");
	free(cfg->default_namespace);
	cfg->default_namespace = strdup("team");
	cfg->max_retries = max_retries;
	cfg->qps = qps;
	cfg->burst = burst;
	assert_int_equal(kft_kube_new(cfg, &k, &err), 0);
	kft_kube_config_free(cfg);
	return k;
}

static int group_setup(void **state)
{
	(void)state;
	if (ks_pki_make(&g_pki) || ks_start(&g_srv, &g_pki, 0))
		return -1;
	g_kube = make_client(g_srv.port, 3, 0, 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	kft_kube_free(g_kube);
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

static const kft_gvr *trainjobs(void)
{
	return kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainJob");
}

static json_t *parse(const char *s)
{
	json_t *j = json_loads(s, 0, NULL);
	assert_non_null(j);
	return j;
}

static void gvr_table(void **state)
{
	(void)state;
	char buf[64];
	const kft_gvr *g = trainjobs();
	assert_non_null(g);
	assert_string_equal(g->resource, "trainjobs");
	assert_int_equal(g->namespaced, 1);
	g = kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime");
	assert_int_equal(g->namespaced, 0);
	assert_string_equal(kft_gvr_lookup("v1", "Namespace")->resource, "namespaces");
	assert_string_equal(kft_gvr_lookup("scheduling.volcano.sh/v1beta1", "PodGroup")->group,
	                    "scheduling.volcano.sh");
	assert_string_equal(kft_gvr_lookup("scheduling.x-k8s.io/v1alpha1", "PodGroup")->version,
	                    "v1alpha1");
	assert_string_equal(kft_gvr_lookup("coordination.k8s.io/v1", "Lease")->resource, "leases");
	assert_string_equal(kft_gvr_lookup("events.k8s.io/v1", "Event")->group, "events.k8s.io");
	assert_string_equal(kft_gvr_lookup("jobset.x-k8s.io/v1alpha2", "JobSet")->resource,
	                    "jobsets");
	assert_null(kft_gvr_lookup("v1", "TrainJob"));
	assert_null(kft_gvr_lookup("apps/v1", "Deployment"));
	assert_null(kft_gvr_lookup("trainer.kubeflow.org/v1", "TrainJob"));
	assert_null(kft_gvr_lookup(NULL, "Pod"));
	assert_string_equal(kft_gvr_api_version(kft_gvr_lookup("batch/v1", "Job"), buf, 64),
	                    "batch/v1");
	json_t *obj = parse("{\"apiVersion\":\"node.k8s.io/v1\",\"kind\":\"RuntimeClass\"}");
	assert_int_equal(kft_gvr_of(obj)->namespaced, 0);
	json_decref(obj);
}

static void get_create_update(void **state)
{
	(void)state;
	kft_error err;
	json_t *out = NULL;
	json_t *tj =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	              "\"metadata\":{\"name\":\"a b\",\"resourceVersion\":\"7\"},\"spec\":{}}");
	ks_push_body(&g_srv, 200, "{\"metadata\":{\"name\":\"a b\"}}");
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns1", "a b", &out, &err), 0);
	assert_string_equal(json_string_value(json_object_get(out, "kind")), "TrainJob");
	json_decref(out);
	assert_string_equal(ks_req(&g_srv, -1)->method, "GET");
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns1/trainjobs/a b");
	assert_string_equal(ks_req(&g_srv, -1)->auth, "Bearer tok");

	ks_push_body(&g_srv, 201, "{\"metadata\":{\"name\":\"a b\",\"uid\":\"u1\"}}");
	assert_int_equal(kft_kube_create(g_kube, trainjobs(), tj, &out, &err), 0);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(out, "metadata"), "uid")), "u1");
	json_decref(out);
	const ks_request *r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "POST");
	/* no namespace in the object: the client's default */
	assert_string_equal(r->path,
	                    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs");
	assert_string_equal(r->content_type, "application/json");
	json_t *sent = parse(r->body);
	assert_true(json_equal(sent, tj));
	json_decref(sent);

	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_update(g_kube, trainjobs(), tj, NULL, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->method, "PUT");
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/a b");
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_update_status(g_kube, trainjobs(), tj, NULL, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->path, "/apis/trainer.kubeflow.org/v1alpha1/"
	                                              "namespaces/team/trainjobs/a b/status");
	json_decref(tj);
}

static void patch_apply_delete(void **state)
{
	(void)state;
	kft_error err;
	const kft_gvr *cm = kft_gvr_lookup("v1", "ConfigMap");
	json_t *merge = parse("{\"data\":{\"k\":\"v\"}}");
	json_t *jp = parse("[{\"op\":\"add\",\"path\":\"/data/k\",\"value\":\"v\"}]");
	static const struct {
		kft_patch_type t;
		const char *ct;
	} types[] = {{KFT_PATCH_MERGE, "application/merge-patch+json"},
	             {KFT_PATCH_JSON, "application/json-patch+json"},
	             {KFT_PATCH_STRATEGIC, "application/strategic-merge-patch+json"}};
	kft_patch_opts po = {.field_manager = "kft"};
	for (int i = 0; i < 3; i++) {
		ks_push_body(&g_srv, 200, "{}");
		assert_int_equal(kft_kube_patch(g_kube, cm, "ns", "c", types[i].t,
		                                types[i].t == KFT_PATCH_JSON ? jp : merge, &po,
		                                NULL, &err),
		                 0);
		assert_string_equal(ks_req(&g_srv, -1)->method, "PATCH");
		assert_string_equal(ks_req(&g_srv, -1)->content_type, types[i].ct);
		assert_string_equal(ks_req(&g_srv, -1)->query, "fieldManager=kft");
	}
	/* a JSON patch must be an array: refused before sending */
	assert_int_equal(
	        kft_kube_patch(g_kube, cm, "ns", "c", KFT_PATCH_JSON, merge, NULL, NULL, &err),
	        KFT_EINVAL);
	assert_int_equal(ks_count(&g_srv), 3);

	json_t *obj = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	                    "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"data\":{}}");
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_apply(g_kube, cm, obj, "trainer", 1, NULL, &err), 0);
	const ks_request *r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->path, "/api/v1/namespaces/ns/configmaps/c");
	assert_string_equal(r->content_type, "application/apply-patch+yaml");
	assert_string_equal(r->query, "fieldManager=trainer&force=true");
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_apply_status(g_kube, cm, obj, "trainer", 0, NULL, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->path, "/api/v1/namespaces/ns/configmaps/c/status");
	assert_string_equal(ks_req(&g_srv, -1)->query, "fieldManager=trainer");
	assert_int_equal(kft_kube_apply(g_kube, cm, obj, "", 0, NULL, &err), KFT_EINVAL);

	kft_delete_opts d = {.propagation = KFT_PROPAGATION_FOREGROUND, .precondition_uid = "u-1"};
	ks_push_body(&g_srv, 200, "{\"kind\":\"Status\",\"status\":\"Success\"}");
	assert_int_equal(kft_kube_delete(g_kube, cm, "ns", "c", &d, NULL, &err), 0);
	r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "DELETE");
	json_t *body = parse(r->body);
	assert_string_equal(json_string_value(json_object_get(body, "propagationPolicy")),
	                    "Foreground");
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(body, "preconditions"), "uid")),
	        "u-1");
	assert_null(json_object_get(body, "gracePeriodSeconds"));
	json_decref(body);
	kft_delete_opts now = {.grace_now = 1};
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_delete(g_kube, cm, "ns", "c", &now, NULL, &err), 0);
	body = parse(ks_req(&g_srv, -1)->body);
	assert_true(json_is_integer(json_object_get(body, "gracePeriodSeconds")));
	assert_int_equal(json_integer_value(json_object_get(body, "gracePeriodSeconds")), 0);
	assert_null(json_object_get(body, "propagationPolicy"));
	json_decref(body);
	json_decref(obj);
	json_decref(merge);
	json_decref(jp);
}

static void status_mapping(void **state)
{
	(void)state;
	static const struct {
		unsigned code;
		const char *body;
		int want;
		const char *msg;
	} cases[] = {
	        {404, NULL, KFT_ENOTFOUND, "trainjobs.trainer.kubeflow.org \"x\" not found"},
	        {409,
	         "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"code\":409,\"message\":"
	         "\"trainjobs.trainer.kubeflow.org \\\"x\\\" already exists\"}",
	         KFT_EEXIST, "trainjobs.trainer.kubeflow.org \"x\" already exists"},
	        {409,
	         "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409,\"message\":"
	         "\"Operation "
	         "cannot be fulfilled: the object has been modified\"}",
	         KFT_ECONFLICT, "Operation cannot be fulfilled: the object has been modified"},
	        {410,
	         "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,\"message\":\"too old "
	         "resource version: 1 (5)\"}",
	         KFT_EGONE, "too old resource version: 1 (5)"},
	        {401, "{\"kind\":\"Status\",\"code\":401,\"message\":\"Unauthorized\"}",
	         KFT_EDENIED, "Unauthorized"},
	        {403,
	         "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"code\":403,\"message\":"
	         "\"trainjobs "
	         "is forbidden: User \\\"bob\\\" cannot get resource\"}",
	         KFT_EDENIED, "trainjobs is forbidden: User \"bob\" cannot get resource"},
	        {422,
	         "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"code\":422,\"message\":\"TrainJob "
	         "\\\"x\\\" is invalid: spec.runtimeRef.name: Required value\"}",
	         KFT_EINVAL, "TrainJob \"x\" is invalid: spec.runtimeRef.name: Required value"},
	        {400,
	         "{\"kind\":\"Status\",\"reason\":\"BadRequest\",\"code\":400,\"message\":\"bad\"}",
	         KFT_EINVAL, "bad"},
	};
	kft_error err;
	json_t *out = NULL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ks_push_body(&g_srv, cases[i].code, cases[i].body ? cases[i].body : notfound);
		assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err),
		                 cases[i].want);
		assert_null(out);
		assert_int_equal(err.code, cases[i].want);
		assert_string_equal(err.message, cases[i].msg);
	}
	/* not a Status: the code and an excerpt */
	ks_push_body(&g_srv, 404, "<html>nope</html>");
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "HTTP 404: <html>nope</html>"));
	ks_push_body(&g_srv, 200, "{not json");
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err), KFT_EPARSE);
	assert_int_equal(ks_count(&g_srv), (int)(sizeof(cases) / sizeof(cases[0])) + 2);
	/* names that would change the path never reach the server */
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "..", &out, &err), KFT_EINVAL);
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "a/b", &out, &err), KFT_EINVAL);
	assert_int_equal(ks_count(&g_srv), (int)(sizeof(cases) / sizeof(cases[0])) + 2);
}

static void retry_after_429(void **state)
{
	(void)state;
	kft_error err;
	json_t *out = NULL;
	ks_response throttle = {.status = 429,
	                        .retry_after = "1",
	                        .body = "{\"kind\":\"Status\",\"code\":429,\"message\":\"Too many "
	                                "requests, please try again later.\"}"};
	ks_push(&g_srv, throttle);
	ks_push_body(&g_srv, 201, "{\"metadata\":{\"name\":\"x\"}}");
	json_t *obj =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	              "\"metadata\":{\"name\":\"x\"}}");
	double t0 = ks_now();
	/* even a POST is repeated after 429: the server did not act on it */
	assert_int_equal(kft_kube_create(g_kube, trainjobs(), obj, &out, &err), 0);
	assert_true(ks_now() - t0 >= 0.9);
	assert_int_equal(ks_count(&g_srv), 2);
	json_decref(out);
	json_decref(obj);
}

typedef struct warnings {
	int n;
	char last[512];
} warnings;

static void on_warning(void *ctx, const char *message)
{
	warnings *w = ctx;
	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", message);
}

static void retry_5xx(void **state)
{
	(void)state;
	kft_error err;
	json_t *out = NULL;
	const char *unavailable = "{\"kind\":\"Status\",\"code\":503,\"message\":\"etcd is down\"}";
	ks_push_body(&g_srv, 503, unavailable);
	ks_push_body(&g_srv, 500, unavailable);
	ks_push_body(&g_srv, 200, "{\"metadata\":{\"name\":\"x\"}}");
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err), 0);
	assert_int_equal(ks_count(&g_srv), 3);
	json_decref(out);

	/* a POST answered 500 may have been acted on: not repeated */
	json_t *obj = parse("{\"metadata\":{\"generateName\":\"x-\"}}");
	ks_reset(&g_srv);
	ks_push_body(&g_srv, 500, unavailable);
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_create(g_kube, trainjobs(), obj, NULL, &err), KFT_EUNAVAILABLE);
	assert_int_equal(ks_count(&g_srv), 1);
	assert_string_equal(err.message, "etcd is down");
	json_decref(obj);

	/* retries run out: the last answer, and how many tries were made; the
	 * warning handler heard of the first retry at once, with the reason */
	ks_reset(&g_srv);
	ks_fallback(&g_srv, 503, unavailable);
	warnings w = {0};
	kft_kube_set_warning_handler(g_kube, on_warning, &w);
	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err),
	                 KFT_EUNAVAILABLE);
	kft_kube_set_warning_handler(g_kube, NULL, NULL);
	assert_int_equal(ks_count(&g_srv), 4); /* 1 + max_retries 3 */
	assert_string_equal(err.message, "etcd is down (gave up after 3 retries)");
	assert_int_equal(w.n, 1);
	assert_string_equal(w.last, "etcd is down (retrying, at most 3 times)");
}

/* A port nothing listens on: bind one, note it, close it. */
static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void connection_refused(void **state)
{
	(void)state;
	kft_kube *k = make_client(closed_port(), 1, 0, 0);
	kft_error err;
	json_t *out = NULL;
	/* said before the first retry's wait: a start-up stuck on a server
	 * that refuses connections must not be silent for half a minute */
	warnings w = {0};
	kft_kube_set_warning_handler(k, on_warning, &w);
	assert_int_equal(kft_kube_get(k, trainjobs(), "ns", "x", &out, &err), KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "gave up after 1 retries"));
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.last, "onnect"));
	assert_non_null(strstr(w.last, "(retrying, at most 1 times)"));
	kft_kube_free(k);
}

typedef struct exchanges {
	int n;
	char last[4][16];
} exchanges;

static void observe(void *ctx, const char *method, long code)
{
	exchanges *s = ctx;
	if (s->n < 4)
		snprintf(s->last[s->n], sizeof(s->last[0]), "%s %ld", method, code);
	s->n++;
}

/* client-go counts every attempt in rest_client_requests_total, retries
 * included, and "<error>" (our 0) when no answer came (rest/request.go,
 * updateRequestResultMetric). */
static void observer_sees_each_exchange(void **state)
{
	(void)state;
	exchanges s = {0};
	kft_kube *k = make_client(g_srv.port, 2, 0, 0);
	kft_kube_set_observer(k, observe, &s);
	assert_non_null(strstr(kft_kube_server(k), "https://127.0.0.1:"));
	ks_push_body(&g_srv, 503, "{\"kind\":\"Status\",\"code\":503}");
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_request(k, "PATCH", "/api/v1/namespaces/a/configmaps/b",
	                                  "application/merge-patch+json", "{}", 2, NULL, NULL),
	                 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.last[0], "PATCH 503");
	assert_string_equal(s.last[1], "PATCH 200");
	kft_kube_free(k);

	/* nobody listening: one exchange per attempt, no answer */
	s.n = 0;
	k = make_client(closed_port(), 0, 0, 0);
	kft_kube_set_observer(k, observe, &s);
	assert_int_not_equal(kft_kube_request(k, "GET", "/version", NULL, NULL, 0, NULL, NULL), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.last[0], "GET 0");
	kft_kube_free(k);
}

static void list_pages(void **state)
{
	(void)state;
	kft_error err;
	json_t *out = NULL;
	ks_push_body(&g_srv, 200,
	             "{\"kind\":\"TrainJobList\",\"metadata\":{\"resourceVersion\":\"10\","
	             "\"continue\":\"tok/1\"},\"items\":[{\"metadata\":{\"name\":\"a\"}}]}");
	ks_push_body(
	        &g_srv, 200,
	        "{\"kind\":\"TrainJobList\",\"metadata\":{\"resourceVersion\":\"11\"},"
	        "\"items\":[{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}}]}");
	kft_list_opts o = {.label_selector = "app=x,tier in (a,b)", .resource_version = "5"};
	assert_int_equal(kft_kube_list(g_kube, trainjobs(), NULL, &o, &out, &err), 0);
	assert_string_equal(json_string_value(json_object_get(out, "kind")), "TrainJobList");
	assert_string_equal(json_string_value(json_object_get(json_object_get(out, "metadata"),
	                                                      "resourceVersion")),
	                    "11");
	json_t *items = json_object_get(out, "items");
	assert_int_equal(json_array_size(items), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(items, 2), "kind")),
	                    "TrainJob");
	json_decref(out);
	assert_string_equal(ks_req(&g_srv, 0)->path,
	                    "/apis/trainer.kubeflow.org/v1alpha1/trainjobs");
	assert_string_equal(ks_req(&g_srv, 0)->query,
	                    "labelSelector=app=x,tier in (a,b)&resourceVersion=5&limit=500");
	assert_string_equal(ks_req(&g_srv, 1)->query,
	                    "labelSelector=app=x,tier in (a,b)&limit=500&continue=tok/1");
	/* an expired continue token is 410: the caller lists again */
	ks_reset(&g_srv);
	ks_push_body(&g_srv, 200,
	             "{\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"t\"},\"items\":[]}");
	ks_push_body(&g_srv, 410,
	             "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"The "
	             "provided continue parameter is too old\"}");
	assert_int_equal(kft_kube_list(g_kube, trainjobs(), "ns", NULL, &out, &err), KFT_EGONE);
	assert_null(out);
}

static int stop_at_b(void *ctx, const json_t *item)
{
	int *seen = ctx;
	(*seen)++;
	const char *n =
	        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
	return strcmp(n, "b") == 0 ? 42 : 0;
}

static void list_each_stops(void **state)
{
	(void)state;
	kft_error err;
	int seen = 0;
	char *rv = NULL;
	ks_push_body(&g_srv, 200,
	             "{\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[{\"metadata\":{\"name\":"
	             "\"a\"}},{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}}]}");
	assert_int_equal(
	        kft_kube_list_each(g_kube, trainjobs(), "ns", NULL, stop_at_b, &seen, &rv, &err),
	        42);
	assert_int_equal(seen, 2);
	assert_null(rv);
	ks_push_body(&g_srv, 200, "{\"metadata\":{\"resourceVersion\":\"3\"},\"items\":[]}");
	assert_int_equal(
	        kft_kube_list_each(g_kube, trainjobs(), "ns", NULL, stop_at_b, &seen, &rv, &err),
	        0);
	assert_string_equal(rv, "3");
	free(rv);
}

typedef struct hammer {
	kft_kube *k;
	int ok;
} hammer;

static void *hammer_run(void *p)
{
	hammer *h = p;
	for (int i = 0; i < 20; i++) {
		json_t *out = NULL;
		if (kft_kube_get(h->k, trainjobs(), "ns", "x", &out, NULL) == 0 && out)
			h->ok++;
		json_decref(out);
	}
	return NULL;
}

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* Many threads on one client: every call succeeds and connections are kept
 * alive and reused (far fewer connections than requests); freeing the client
 * closes them all (the server side closes its end when ours goes). */
static void concurrent_calls_reuse_connections(void **state)
{
	(void)state;
	enum { N = 6 };
	pthread_t t[N];
	hammer h[N];
	ks_fallback(&g_srv, 200, "{\"metadata\":{\"name\":\"x\"}}");
	int fds_before = open_fds();
	kft_kube *k = make_client(g_srv.port, 3, 0, 0);
	for (int i = 0; i < N; i++) {
		h[i] = (hammer){k, 0};
		assert_int_equal(pthread_create(&t[i], NULL, hammer_run, &h[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].ok, 20);
	}
	assert_int_equal(ks_count(&g_srv), N * 20);
	assert_true(atomic_load(&g_srv.connections) <= N + 2);
	assert_true(open_fds() > fds_before);
	kft_kube_free(k);
	for (int i = 0; i < 300 && open_fds() != fds_before; i++)
		ks_sleep_ms(10);
	assert_int_equal(open_fds(), fds_before);
}

static void rate_limiter(void **state)
{
	(void)state;
	ks_fallback(&g_srv, 200, "{}");
	kft_kube *k = make_client(g_srv.port, 0, 20, 2);
	double t0 = ks_now();
	for (int i = 0; i < 12; i++)
		assert_int_equal(kft_kube_request(k, "GET", "/version", NULL, NULL, 0, NULL, NULL),
		                 0);
	/* 2 at once, then 10 more at 20/s: at least 0.5 s */
	assert_true(ks_now() - t0 >= 0.45);
	kft_kube_free(k);
}

/* controller-runtime's client makes one REST client, so one token bucket, per
 * kind (pkg/client/client_rest_resources.go, rest.RESTClientForConfigAndClient):
 * with rate_per_resource, a busy kind does not hold another back. qps 0.5 and
 * burst 1: one request per kind goes at once, a second to the same kind waits
 * about 2 s, and with one shared bucket the second kind would have waited. */
static kft_kube *make_per_resource_client(int port)
{
	kft_kube_config *cfg = NULL;
	kft_kube *k = NULL;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_true(asprintf(&cfg->server, "https://127.0.0.1:%d", port) > 0);
	cfg->ca_file = strdup(g_pki.ca.cert_path);
	cfg->qps = 0.5;
	cfg->burst = 1;
	cfg->rate_per_resource = 1;
	assert_int_equal(kft_kube_new(cfg, &k, NULL), 0);
	kft_kube_config_free(cfg);
	return k;
}

static void rate_limiter_per_resource(void **state)
{
	(void)state;
	ks_fallback(&g_srv, 200, "{}");
	kft_kube *k = make_per_resource_client(g_srv.port);
	const char *paths[] = {
	        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/a/jobsets/x",
	        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a/trainjobs/x/status",
	        "/api/v1/namespaces/b/configmaps?limit=5"};
	double t0 = ks_now();
	for (int i = 0; i < 3; i++)
		assert_int_equal(kft_kube_request(k, "GET", paths[i], NULL, NULL, 0, NULL, NULL),
		                 0);
	assert_true(ks_now() - t0 < 1.5);
	/* the same kind again (status counts as its resource): waits its turn */
	assert_int_equal(kft_kube_request(k, "GET",
	                                  "/apis/trainer.kubeflow.org/v1alpha1/"
	                                  "namespaces/b/trainjobs",
	                                  NULL, NULL, 0, NULL, NULL),
	                 0);
	assert_true(ks_now() - t0 >= 1.5);
	kft_kube_free(k);
}

static void rate_keys(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	        {"/api/v1/namespaces/ns/configmaps/x", "/v1/configmaps"},
	        {"/api/v1/configmaps?watch=true", "/v1/configmaps"},
	        {"/api/v1/namespaces/ns", "/v1/namespaces"},
	        {"/api/v1/namespaces", "/v1/namespaces"},
	        {"/api/v1/nodes/n1/status", "/v1/nodes"},
	        {"/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status",
	         "trainer.kubeflow.org/v1alpha1/trainjobs"},
	        {"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/r",
	         "trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"},
	        {"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
	         "coordination.k8s.io/v1/leases"},
	        {"/version", ""},
	        {"/apis/g", ""},
	        {"", ""},
	};
	char key[96];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kft_kube_rate_key(cases[i][0], key, sizeof(key));
		assert_string_equal(key, cases[i][1]);
	}
	kft_kube_rate_key(NULL, key, sizeof(key));
	assert_string_equal(key, "");
}

/* List pages are read item by item (kft_kube_list_scan), not as one tree:
 * keys in any order, metadata before or after items, other keys skipped
 * whatever their type, items null or empty; anything that is not an
 * object whose items are objects is refused, and a callback's refusal
 * stops the walk. */
typedef struct scanned {
	int n;
	char names[4][16];
	int stop_at;
	int stop_rc; /* what the callback returns at stop_at (0: KFT_ECONFLICT) */
} scanned;

static int scan_item(void *ctx, json_t *item)
{
	scanned *s = ctx;
	const char *name =
	        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
	if (s->n < 4)
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name ? name : "?");
	return ++s->n == s->stop_at ? (s->stop_rc ? s->stop_rc : KFT_ECONFLICT) : 0;
}

static int scan(const char *text, scanned *s, json_t **md)
{
	return kft_kube_list_scan(text, strlen(text), "list x", scan_item, s, md, NULL);
}

static void list_pages_scanned(void **state)
{
	(void)state;
	scanned s = {0};
	json_t *md = NULL;
	const char *page =
	        " {\"kind\" : \"JobSetList\", \"x\": [1, {\"y\": \"}\"}], \"n\": -1.5e3,"
	        "\"t\": true, \"s\": \"a\\\"b\", \"items\": [ {\"metadata\": {\"name\": "
	        "\"a\"}} ,{\"metadata\":{\"name\":\"b\"}}],\"metadata\":{\"resourceVersion\":"
	        "\"7\",\"continue\":\"c1\"}}\n";
	assert_int_equal(scan(page, &s, &md), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "a");
	assert_string_equal(s.names[1], "b");
	assert_string_equal(json_string_value(json_object_get(md, "continue")), "c1");
	json_decref(md);

	const char *empty[] = {"{}", "{\"items\": null}", "{\"items\":[],\"metadata\":{}}"};
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		memset(&s, 0, sizeof(s));
		assert_int_equal(scan(empty[i], &s, &md), 0);
		assert_int_equal(s.n, 0);
		json_decref(md);
	}

	const char *bad[] = {"",
	                     "[]",
	                     "{\"items\": {}}",
	                     "{\"items\": [1]}",
	                     "{\"items\": [{}] x}",
	                     "{\"items\": [{}]} {}",
	                     "{\"kind\": \"unterminated}",
	                     "{\"items\": [{\"a\": 1}",
	                     "{\"metadata\": 3}",
	                     "{\"items\" [] }",
	                     "{\"a\": 1,}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kft_error err = {0};
		memset(&s, 0, sizeof(s));
		assert_int_equal(kft_kube_list_scan(bad[i], strlen(bad[i]), "list jobsets",
		                                    scan_item, &s, &md, &err),
		                 KFT_EPARSE);
		assert_null(md);
		assert_string_equal(err.message, "list jobsets: the answer is not a List");
	}

	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	assert_int_equal(scan(page, &s, &md), KFT_ECONFLICT);
	assert_int_equal(s.n, 1);
	json_decref(md);

	/* Whatever status the callback returns comes back as it is, KFT_EINVAL
	 * (-1) included, at the first item or the last, whole or fed in pieces
	 * as curl hands them over: the header promises on_item's value, never
	 * a KFT_EPARSE in its place. */
	static const int statuses[] = {KFT_EINVAL, KFT_ENOMEM,    KFT_EIO,   KFT_EPARSE,
	                               KFT_ELIMIT, KFT_ENOTFOUND, KFT_EGONE, 7};
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		for (int at = 1; at <= 2; at++) {
			memset(&s, 0, sizeof(s));
			s.stop_at = at;
			s.stop_rc = statuses[i];
			kft_error err = {0};
			assert_int_equal(kft_kube_list_scan(page, strlen(page), "list x", scan_item,
			                                    &s, &md, &err),
			                 statuses[i]);
			assert_null(md);
			assert_string_equal(err.message, "");
			memset(&s, 0, sizeof(s));
			s.stop_at = at;
			s.stop_rc = statuses[i];
			kft_kube_list_stream ls;
			kft_kube_list_stream_init(&ls, NULL, "list x", scan_item, &s, NULL);
			int fed = 0;
			for (size_t off = 0; off < strlen(page) && fed == 0; off += 7) {
				size_t n = strlen(page) - off < 7 ? strlen(page) - off : 7;
				fed = kft_kube_list_stream_feed(&ls, page + off, n);
			}
			assert_int_equal(fed, statuses[i]);
			assert_int_equal(kft_kube_list_stream_end(&ls, &md), statuses[i]);
			assert_null(md);
		}
	}

	/* Objects are data: a NUL in a string is kept (Go's client decodes it);
	 * an item with a NUL in a key, which jansson cannot hold, is skipped
	 * and the page goes on; keys written with escapes are read as decoded. */
	const char *nul =
	        "{\"it\\u0065ms\":[{\"metadata\":{\"name\":\"a\\u0000b\"}},"
	        "{\"metadata\":{\"name\":\"c\"},\"x\":{\"k\\u0000\":1}},"
	        "{\"metadata\":{\"name\":\"d\"}}],\"metad\\u0061ta\":{\"continue\":\"z\"}}";
	memset(&s, 0, sizeof(s));
	assert_int_equal(scan(nul, &s, &md), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "a"); /* a C string stops at the NUL */
	assert_string_equal(s.names[1], "d");
	assert_string_equal(json_string_value(json_object_get(md, "continue")), "z");
	json_decref(md);
}

static void events_recorded_and_counted(void **state)
{
	(void)state;
	kft_error err;
	json_t *tj =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	              "\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\",\"uid\":\"u-9\","
	              "\"resourceVersion\":\"12\"}}");
	kft_kube *k = make_client(g_srv.port, 0, 0, 0);
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event(k, tj, "Warning", "TrainJobResumed", "it resumed",
	                                "trainer-controller", &err),
	                 0);
	const ks_request *r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->path, "/api/v1/namespaces/ns/events");
	json_t *ev = parse(r->body);
	const char *name =
	        json_string_value(json_object_get(json_object_get(ev, "metadata"), "name"));
	assert_true(strncmp(name, "job.", 4) == 0 && strlen(name) > 10);
	char saved[128];
	snprintf(saved, sizeof(saved), "%s", name);
	json_t *io = json_object_get(ev, "involvedObject");
	assert_string_equal(json_string_value(json_object_get(io, "uid")), "u-9");
	assert_string_equal(json_string_value(json_object_get(io, "resourceVersion")), "12");
	assert_string_equal(json_string_value(json_object_get(io, "apiVersion")),
	                    "trainer.kubeflow.org/v1alpha1");
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(ev, "source"), "component")),
	        "trainer-controller");
	assert_string_equal(json_string_value(json_object_get(ev, "reportingComponent")),
	                    "trainer-controller");
	assert_int_equal(json_integer_value(json_object_get(ev, "count")), 1);
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
	assert_string_equal(json_string_value(json_object_get(ev, "firstTimestamp")),
	                    json_string_value(json_object_get(ev, "lastTimestamp")));
	json_decref(ev);

	/* the same again: the existing Event's count goes up */
	ks_push_body(&g_srv, 200, "{}");
	assert_int_equal(kft_kube_event(k, tj, "Warning", "TrainJobResumed", "it resumed",
	                                "trainer-controller", &err),
	                 0);
	r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->content_type, "application/merge-patch+json");
	char want[256];
	snprintf(want, sizeof(want), "/api/v1/namespaces/ns/events/%s", saved);
	assert_string_equal(r->path, want);
	ev = parse(r->body);
	assert_int_equal(json_integer_value(json_object_get(ev, "count")), 2);
	json_decref(ev);

	/* the Event was deleted meanwhile: created again under its name */
	ks_push_body(&g_srv, 404, notfound);
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event(k, tj, "Warning", "TrainJobResumed", "it resumed",
	                                "trainer-controller", &err),
	                 0);
	r = ks_req(&g_srv, -1);
	assert_string_equal(r->method, "POST");
	ev = parse(r->body);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(ev, "metadata"), "name")), saved);
	assert_int_equal(json_integer_value(json_object_get(ev, "count")), 3);
	json_decref(ev);

	/* a different message is a different event */
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(
	        kft_kube_event(k, tj, "Normal", "Created", "other", "trainer-controller", &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->method, "POST");
	assert_int_equal(kft_kube_event(k, tj, "Info", "R", "m", "c", &err), KFT_EINVAL);
	assert_int_equal(kft_kube_event(k, tj, "Normal", "", "m", "c", &err), KFT_EINVAL);
	kft_kube_free(k);
	json_decref(tj);
}

static void cluster_scoped_event_goes_to_default(void **state)
{
	(void)state;
	kft_error err;
	json_t *ctr =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
	              "\"kind\":\"ClusterTrainingRuntime\",\"metadata\":{\"name\":\"torch\"}}");
	ks_push_body(&g_srv, 201, "{}");
	assert_int_equal(kft_kube_event(g_kube, ctr, "Normal", "R", "m", "c", &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->path, "/api/v1/namespaces/default/events");
	json_decref(ctr);
}

static void backoff_sequence(void **state)
{
	(void)state;
	kft_backoff b;
	kft_backoff_init(&b, 100, 1000, 0);
	long want[] = {100, 200, 400, 800, 1000, 1000};
	for (int i = 0; i < 6; i++)
		assert_int_equal(kft_backoff_next(&b), want[i]);
	kft_backoff_reset(&b);
	assert_int_equal(kft_backoff_next(&b), 100);
	kft_backoff_init(&b, 100, 1000, 0.5);
	for (int i = 0; i < 50; i++) {
		long base = b.current_ms == 0 ? 100
		                              : (b.current_ms * 2 > 1000 ? 1000 : b.current_ms * 2);
		long d = kft_backoff_next(&b);
		assert_true(d >= base && d <= base + base / 2);
	}
	atomic_int stop = 1;
	double t0 = ks_now();
	assert_int_equal(kft_sleep_ms(5000, &stop), 1);
	assert_true(ks_now() - t0 < 0.5);
	assert_int_equal(kft_sleep_ms(20, NULL), 0);
}

/* A GET on its own thread, so the test can cancel the client meanwhile. */
typedef struct bg_get {
	kft_kube *kube;
	pthread_t t;
	int rc;
	kft_error err;
	double took;
} bg_get;

static void *bg_get_main(void *arg)
{
	bg_get *g = arg;
	json_t *out = NULL;
	double t0 = ks_now();
	g->rc = kft_kube_get(g->kube, trainjobs(), "ns", "x", &out, &g->err);
	g->took = ks_now() - t0;
	json_decref(out);
	return NULL;
}

/* Starts a GET, cancels the client once the server has its request (sent
 * >= 0: the server's count before) or, for a wait inside the client that
 * nothing outside can see (sent < 0), 300 ms later, and waits for the GET. */
static void get_canceled(bg_get *g, kft_kube *kube, int sent)
{
	memset(g, 0, sizeof(*g));
	g->kube = kube;
	assert_int_equal(pthread_create(&g->t, NULL, bg_get_main, g), 0);
	if (sent < 0)
		ks_sleep_ms(300);
	for (int n = 0; sent >= 0 && ks_count(&g_srv) <= sent && n < 1000; n++)
		ks_sleep_ms(10);
	kft_kube_cancel(kube, 1);
	pthread_join(g->t, NULL);
	kft_kube_cancel(kube, 0);
	assert_int_equal(g->rc, KFT_EUNAVAILABLE);
}

/* Shutdown must not wait for the API server: a canceled client abandons
 * a Retry-After wait (up to 60 s), a response that never comes, and a
 * rate-limiter wait, and lets calls through again once un-canceled. */
static void cancel_ends_waits(void **state)
{
	(void)state;
	bg_get g;
	ks_response throttle = {.status = 429, .retry_after = "30", .body = "{}"};
	ks_push(&g_srv, throttle);
	get_canceled(&g, g_kube, ks_count(&g_srv));
	assert_true(g.took < 2.0);
	assert_non_null(strstr(g.err.message, "canceled"));
	assert_int_equal(ks_count(&g_srv), 1);

	ks_response silent = {.status = 200, .chunks = {"{\"metadata\":"}, .end = KS_END_HOLD};
	ks_push(&g_srv, silent);
	get_canceled(&g, g_kube, ks_count(&g_srv));
	assert_true(g.took < 2.5);
	assert_non_null(strstr(g.err.message, "canceled"));
	ks_release(&g_srv);

	/* qps 0.1, burst 1: the second call would wait 10 s for its token. */
	kft_kube *slow = make_client(g_srv.port, 0, 0.1, 1);
	ks_fallback(&g_srv, 200, "{\"metadata\":{\"name\":\"x\"}}");
	int before = ks_count(&g_srv);
	json_t *out = NULL;
	kft_error err;
	assert_int_equal(kft_kube_get(slow, trainjobs(), "ns", "x", &out, &err), 0);
	json_decref(out);
	get_canceled(&g, slow, -1); /* waiting for the rate limiter's token */
	assert_true(g.took < 1.0);
	assert_int_equal(ks_count(&g_srv), before + 1); /* the canceled call was never sent */
	kft_kube_free(slow);

	assert_int_equal(kft_kube_get(g_kube, trainjobs(), "ns", "x", &out, &err), 0);
	json_decref(out);

	/* A list's own stop flag works the same, before any request. */
	atomic_int stop = 1;
	kft_list_opts lo = {.stop = &stop};
	before = ks_count(&g_srv);
	assert_int_equal(kft_kube_list(g_kube, trainjobs(), "ns", &lo, &out, &err),
	                 KFT_EUNAVAILABLE);
	assert_null(out);
	assert_int_equal(ks_count(&g_srv), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(gvr_table),
	        cmocka_unit_test_setup(get_create_update, each_setup),
	        cmocka_unit_test_setup(patch_apply_delete, each_setup),
	        cmocka_unit_test_setup(status_mapping, each_setup),
	        cmocka_unit_test_setup(retry_after_429, each_setup),
	        cmocka_unit_test_setup(retry_5xx, each_setup),
	        cmocka_unit_test_setup(connection_refused, each_setup),
	        cmocka_unit_test_setup(list_pages, each_setup),
	        cmocka_unit_test_setup(list_each_stops, each_setup),
	        cmocka_unit_test_setup(concurrent_calls_reuse_connections, each_setup),
	        cmocka_unit_test_setup(rate_limiter, each_setup),
	        cmocka_unit_test_setup(rate_limiter_per_resource, each_setup),
	        cmocka_unit_test(rate_keys),
	        cmocka_unit_test(list_pages_scanned),
	        cmocka_unit_test_setup(observer_sees_each_exchange, each_setup),
	        cmocka_unit_test_setup(events_recorded_and_counted, each_setup),
	        cmocka_unit_test_setup(cluster_scoped_event_goes_to_default, each_setup),
	        cmocka_unit_test(backoff_sequence),
	        cmocka_unit_test_setup(cancel_ends_waits, each_setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
