/*
 * test_local_statusreq.c - the local status endpoint's request decoder and
 * judge (src/api/statusreq.c) against upstream v2.3.0's pkg/statusserver:
 *   - server.go handleTrainJobRuntimeStatus: Authorize first (403
 *     "Forbidden"), then json.Decoder into UpdateTrainJobStatusRequest (422
 *     "Invalid payload"), nil trainerStatus answered 200 with the request,
 *     the API server's Invalid answered 422 with its message, success 200
 *     echoing the request; handleDefault 404 "Not found";
 *   - middleware.go bodySizeLimitMiddleware: Content-Length over 1 << 16 is
 *     413 "Payload too large", reason RequestEntityTooLarge;
 *   - auth.go extractRawToken: two fields, "Bearer" in any case;
 *   - badRequest(): a metav1.Status encoded by Go ({"metadata":{},...}).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/http.h"
#include "local/statusserver.h"

#define TOKEN "0123456789abcdef"
#define PATH  "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/job/status"

static json_t *trainjob(void)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:{s:s}}}", "apiVersion",
	                 "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                 "job", "namespace", "default", "uid", "u1", "spec", "runtimeRef", "name",
	                 "torch-distributed");
}

/* Parses head (which must be whole, as the server core reads it) and
 * judges it with body. */
static int judge(const char *head, const char *body, kft_statusreq_answer *a)
{
	json_t *tj = trainjob();
	kft_statusreq_target t = {.ns = "default", .name = "job", .token = TOKEN, .trainjob = tj};
	kft_http_head h;
	char auth[1024];
	assert_int_equal(kft_http_head_parse(head, strlen(head), &h), 0);
	if (kft_http_header(h.fields, "Authorization", auth, sizeof(auth)) != 1)
		auth[0] = '\0';
	kft_statusreq_request r = {.method = h.method,
	                           .path = h.path,
	                           .auth = auth,
	                           .body = body,
	                           .len = strlen(body)};
	memset(a, 0, sizeof(*a));
	assert_int_equal(kft_statusreq_judge(&t, &r, a), 0);
	kft_http_head_free(&h);
	json_decref(tj);
	return a->code;
}

static char *post_head(const char *path, const char *auth, size_t len)
{
	char *h = NULL;
	assert_true(asprintf(&h,
	                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%sContent-Length: "
	                     "%zu\r\n\r\n",
	                     path, auth ? "Authorization: " : "", auth ? auth : "",
	                     auth ? "\r\n" : "", len) > 0);
	return h;
}

static int post(const char *path, const char *auth, const char *body, kft_statusreq_answer *a)
{
	char *h = post_head(path, auth, strlen(body));
	int code = judge(h, body, a);
	free(h);
	return code;
}

static void expect_status(const kft_statusreq_answer *a, int code, const char *msg,
                          const char *reason)
{
	char *want = NULL;
	assert_true(asprintf(&want,
	                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"%s\","
	                     "\"reason\":\"%s\",\"code\":%d}\n",
	                     msg, reason, code) > 0);
	assert_int_equal(a->code, code);
	assert_string_equal(a->body, want);
	assert_null(a->report);
	free(want);
}

static void test_valid_report(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	/* what the SDK sends: isoformat() with microseconds and +00:00 */
	assert_int_equal(post(PATH, "Bearer " TOKEN,
	                      "{\"trainerStatus\":{\"lastUpdatedTime\":\"2026-01-02T03:04:05."
	                      "123456+00:00\",\"progressPercentage\":40,"
	                      "\"estimatedRemainingSeconds\":600,\"metrics\":[{\"name\":\"loss\","
	                      "\"value\":\"0.25\"}],\"unknown\":1}} trailing",
	                      &a),
	                 200);
	assert_string_equal(a.body, "{\"trainerStatus\":{\"progressPercentage\":40,"
	                            "\"estimatedRemainingSeconds\":600,\"metrics\":[{\"name\":"
	                            "\"loss\",\"value\":\"0.25\"}],\"lastUpdatedTime\":\"2026-01-"
	                            "02T03:04:05Z\"}}\n");
	assert_string_equal(a.content_type, "application/json");
	assert_non_null(a.report);
	assert_string_equal(json_string_value(json_object_get(a.report, "lastUpdatedTime")),
	                    "2026-01-02T03:04:05Z");
	assert_null(json_object_get(a.report, "unknown"));
	kft_statusreq_answer_free(&a);
	/* Go matches keys ignoring case; "bearer" in any case; other offsets to UTC */
	assert_int_equal(post(PATH, "bEaReR  " TOKEN " ",
	                      "{\"TRAINERSTATUS\":{\"progresspercentage\":7,"
	                      "\"lastUpdatedTime\":\"2026-01-02T05:04:05+02:00\"}}",
	                      &a),
	                 200);
	assert_int_equal(json_integer_value(json_object_get(a.report, "progressPercentage")), 7);
	assert_string_equal(json_string_value(json_object_get(a.report, "lastUpdatedTime")),
	                    "2026-01-02T03:04:05Z");
	kft_statusreq_answer_free(&a);
}

static void test_no_trainer_status(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	static const char *const bodies[] = {"{}", "null", "{\"trainerStatus\":null}"};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(post(PATH, "Bearer " TOKEN, bodies[i], &a), 200);
		assert_string_equal(a.body, "{}\n");
		assert_null(a.report);
		kft_statusreq_answer_free(&a);
	}
}

static void test_forbidden(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	static const char *const auths[] = {
	        NULL,
	        "Bearer",
	        "Bearer x" TOKEN,
	        "Bearer " TOKEN "x",
	        "Basic " TOKEN,
	        TOKEN,
	        "Bearer " TOKEN " extra",
	        "Bearer 0123456789abcdeF", /* one character off */
	};
	for (size_t i = 0; i < sizeof(auths) / sizeof(auths[0]); i++) {
		/* authorization comes before decoding: a bad body does not change the answer */
		assert_int_equal(post(PATH, auths[i], "not json", &a), 403);
		expect_status(&a, 403, "Forbidden", "Forbidden");
		kft_statusreq_answer_free(&a);
	}
	/* the job's own token on another job's or namespace's path */
	assert_int_equal(post("/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/"
	                      "other/status",
	                      "Bearer " TOKEN, "{}", &a),
	                 403);
	kft_statusreq_answer_free(&a);
	assert_int_equal(post("/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/job/"
	                      "status",
	                      "Bearer " TOKEN, "{}", &a),
	                 403);
	kft_statusreq_answer_free(&a);
}

static void test_not_found(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	static const char *const paths[] = {
	        "/",
	        "/apis",
	        PATH "/",
	        PATH "x",
	        "/apis/trainer.kubeflow.org/v1alpha1/namespaces//trainjobs/job/status",
	        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs//status",
	        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a/b/trainjobs/job/status",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(post(paths[i], "Bearer " TOKEN, "{}", &a), 404);
		expect_status(&a, 404, "Not found", "NotFound");
		kft_statusreq_answer_free(&a);
	}
	/* the pattern is POST only; "/" takes every other method */
	assert_int_equal(
	        judge("GET " PATH " HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n\r\n", "", &a),
	        404);
	kft_statusreq_answer_free(&a);
}

static void test_invalid_payload(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	static const char *const bodies[] = {
	        "",
	        "   ",
	        "not json",
	        "[]",
	        "\"x\"",
	        "{\"trainerStatus\":[]}",
	        "{\"trainerStatus\":{\"progressPercentage\":50.0}}",
	        "{\"trainerStatus\":{\"progressPercentage\":\"50\"}}",
	        "{\"trainerStatus\":{\"progressPercentage\":2147483648}}",
	        "{\"trainerStatus\":{\"estimatedRemainingSeconds\":1e3}}",
	        "{\"trainerStatus\":{\"metrics\":{}}}",
	        "{\"trainerStatus\":{\"metrics\":[1]}}",
	        "{\"trainerStatus\":{\"metrics\":[{\"name\":1}]}}",
	        "{\"trainerStatus\":{\"lastUpdatedTime\":\"yesterday\"}}",
	        "{\"trainerStatus\":{\"lastUpdatedTime\":5}}",
	        "{\"trainerStatus\":{",
	};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		if (post(PATH, "Bearer " TOKEN, bodies[i], &a) != 422)
			fail_msg("body %s: %d", bodies[i], a.code);
		expect_status(&a, 422, "Invalid payload", "Invalid");
		kft_statusreq_answer_free(&a);
	}
}

/* Decoded, but the CRD refuses it: the API server's Invalid message. */
static void test_schema_refuses(void **state)
{
	(void)state;
	kft_statusreq_answer a;
	static const char *const bodies[] = {
	        "{\"trainerStatus\":{\"progressPercentage\":101,\"lastUpdatedTime\":\"2026-01-"
	        "02T03:04:05Z\"}}",
	        "{\"trainerStatus\":{\"progressPercentage\":-1,\"lastUpdatedTime\":\"2026-01-"
	        "02T03:04:05Z\"}}",
	        "{\"trainerStatus\":{\"estimatedRemainingSeconds\":-5,\"lastUpdatedTime\":\"2026-"
	        "01-02T03:04:05Z\"}}",
	        "{\"trainerStatus\":{\"metrics\":[{\"name\":\"\",\"value\":\"1\"}],"
	        "\"lastUpdatedTime\":\"2026-01-02T03:04:05Z\"}}",
	        "{\"trainerStatus\":{\"metrics\":[null],\"lastUpdatedTime\":\"2026-01-"
	        "02T03:04:05Z\"}}",
	        "{\"trainerStatus\":{\"progressPercentage\":5}}", /* no lastUpdatedTime */
	};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		if (post(PATH, "Bearer " TOKEN, bodies[i], &a) != 422)
			fail_msg("body %s: %d %s", bodies[i], a.code, a.body);
		/* one error bare, several in brackets, as NewInvalid joins them */
		assert_non_null(
		        strstr(a.body, "TrainJob.trainer.kubeflow.org \\\"job\\\" is invalid: "));
		assert_non_null(strstr(a.body, "status.trainerStatus"));
		assert_non_null(strstr(a.body, "\"reason\":\"Invalid\",\"code\":422}"));
		assert_null(a.report);
		kft_statusreq_answer_free(&a);
	}
	/* 257 metrics: over the CRD's maxItems */
	char *body = malloc(257 * 32 + 128), *p = body;
	p += sprintf(p, "{\"trainerStatus\":{\"lastUpdatedTime\":\"2026-01-02T03:04:05Z\","
	                "\"metrics\":[");
	for (int i = 0; i < 257; i++)
		p += sprintf(p, "%s{\"name\":\"m%d\",\"value\":\"1\"}", i ? "," : "", i);
	strcpy(p, "]}}");
	assert_int_equal(post(PATH, "Bearer " TOKEN, body, &a), 422);
	assert_non_null(strstr(a.body, "status.trainerStatus.metrics"));
	kft_statusreq_answer_free(&a);
	free(body);
}

/* What the server core refuses before the handler, in upstream's words:
 * bodySizeLimitMiddleware's 413 Status; a chunked body (411) as Go's server
 * words its own refusals. */
static void test_refused(void **state)
{
	(void)state;
	kft_statusreq_answer a = {0};
	assert_int_equal(kft_statusreq_refused(413, &a), 0);
	expect_status(&a, 413, "Payload too large", "RequestEntityTooLarge");
	kft_statusreq_answer_free(&a);
	assert_int_equal(kft_statusreq_refused(411, &a), 0);
	assert_int_equal(a.code, 411);
	assert_string_equal(a.body, "411 Length Required");
	assert_string_equal(a.content_type, "text/plain; charset=utf-8");
	kft_statusreq_answer_free(&a);
}

/* The early verdicts a server gives before reading the body. */
static void test_admit(void **state)
{
	(void)state;
	kft_statusreq_target t = {.ns = "default", .name = "job", .token = TOKEN};
	kft_statusreq_answer a = {0};
	kft_statusreq_request ok = {.method = "POST", .path = PATH, .auth = "Bearer " TOKEN};
	assert_int_equal(kft_statusreq_admit(&t, &ok, &a), 0);
	assert_null(a.body);
	kft_statusreq_request other = ok;
	other.auth = "Bearer x" TOKEN;
	assert_int_equal(kft_statusreq_admit(&t, &other, &a), 403);
	expect_status(&a, 403, "Forbidden", "Forbidden");
	kft_statusreq_answer_free(&a);
	other = ok;
	other.method = "GET";
	assert_int_equal(kft_statusreq_admit(&t, &other, &a), 404);
	expect_status(&a, 404, "Not found", "NotFound");
	kft_statusreq_answer_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_report),    cmocka_unit_test(test_no_trainer_status),
	        cmocka_unit_test(test_forbidden),       cmocka_unit_test(test_not_found),
	        cmocka_unit_test(test_invalid_payload), cmocka_unit_test(test_schema_refuses),
	        cmocka_unit_test(test_refused),         cmocka_unit_test(test_admit),
	};
	return cmocka_run_group_tests_name("local_statusreq", tests, NULL, NULL);
}
