/*
 * fuzz_admission_review.c - libFuzzer target for the admission webhooks'
 * request decoder (src/controller/admission.c): what anyone who can reach
 * port 9443 may send, as one POST body. The first byte picks the webhook
 * path; the rest is the body.
 *
 * kft_cm_admission_decode judges the bytes; a decoded request goes through
 * kft_cm_admission_review with the built-in schema and framework and a
 * runtime cache holding one TrainingRuntime and one ClusterTrainingRuntime
 * (torch). Promises checked, each an abort() when broken:
 *   - a decode error leaves the request empty and has a message;
 *   - every answer is an AdmissionReview v1 whose response carries the
 *     request's uid and a boolean allowed;
 *   - a refusal has a status with code 400, 403, 404 or 500 and a message;
 *   - only the defaulter answers with a patch, and it is base64 of a JSON
 *     array of operations on /spec/runtimePatches/N/time;
 *   - the same bytes read as a query string give a review time within
 *     [1 ms, 30 s] (kft_cm_admission_timeout_ms).
 * Leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_admission_review SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_admission_review.
 */
#define FUZZ_NAME "fuzz_admission_review"
#include <mbedtls/base64.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "controller/admission.h"
#include "controller/controller.h"
#include "kftrainer/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char RUNTIME[] =
        "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainingRuntime\","
        "\"metadata\":{\"name\":\"torch\",\"namespace\":\"default\"},\"spec\":{\"mlPolicy\":"
        "{\"numNodes\":1,\"torch\":{\"numProcPerNode\":\"auto\"}},\"template\":{\"spec\":{"
        "\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"metadata\":{\"labels\":{"
        "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"}},\"spec\":{\"template\":"
        "{\"spec\":{\"containers\":[{\"name\":\"node\",\"image\":\"torch\"}]}}}}}]}}}}";

static json_t *get_runtime(void *ctx, const char *kind, const char *ns, const char *name)
{
	(void)ns;
	if (strcmp(name, "torch") != 0)
		return NULL;
	json_t *rt = json_deep_copy(ctx);
	json_object_set_new(rt, "kind", json_string(kind));
	return rt;
}

static void check_patch(const json_t *resp)
{
	const char *p = json_string_value(json_object_get(resp, "patch"));
	if (!p)
		return;
	unsigned char buf[65536];
	size_t olen = 0;
	if (mbedtls_base64_decode(buf, sizeof(buf) - 1, &olen, (const unsigned char *)p,
	                          strlen(p)) != 0)
		fail("a patch that is not base64", p);
	json_t *ops = json_loadb((const char *)buf, olen, 0, NULL);
	if (!json_is_array(ops))
		fail("a patch that is not a JSON array", NULL);
	size_t i;
	json_t *op;
	json_array_foreach(ops, i, op)
	{
		const char *path = json_string_value(json_object_get(op, "path"));
		if (!path || strncmp(path, "/spec/runtimePatches/", 21) != 0 ||
		    !strstr(path, "/time"))
			fail("a patch outside runtimePatches[].time", path);
	}
	json_decref(ops);
}

static void check_answer(const json_t *answer, const kft_cm_admission *req, int mutating)
{
	if (!answer)
		fail("no answer", NULL);
	if (strcmp(json_string_value(json_object_get(answer, "apiVersion")),
	           "admission.k8s.io/v1") != 0)
		fail("not an AdmissionReview v1", NULL);
	const json_t *resp = json_object_get(answer, "response");
	const char *uid = json_string_value(json_object_get(resp, "uid"));
	if (!uid || (req && strcmp(uid, req->uid) != 0))
		fail("an answer without the request's uid", uid);
	const json_t *allowed = json_object_get(resp, "allowed");
	if (!json_is_boolean(allowed))
		fail("allowed is not a boolean", NULL);
	const json_t *st = json_object_get(resp, "status");
	if (json_is_false(allowed)) {
		json_int_t code = json_integer_value(json_object_get(st, "code"));
		if (code != 400 && code != 403 && code != 404 && code != 500)
			fail("a refusal with an unexpected code", NULL);
		if (!json_string_value(json_object_get(st, "message")))
			fail("a refusal without a message", NULL);
	}
	if (json_object_get(resp, "patch") && !mutating)
		fail("a validator answered with a patch", NULL);
	check_patch(resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const kft_schema *schema;
	static kft_framework *fw;
	static json_t *runtime;
	static const char *const paths[] = {
	        "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
	        "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
	        "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
	        "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
	};
	kft_error err;
	if (!schema) {
		schema = kft_schema_builtin(&err);
		if (!schema || kft_framework_new(0, &fw, &err) != 0)
			fail("setup", err.message);
		runtime = json_loads(RUNTIME, 0, NULL);
	}
	if (size < 1)
		return 0;
	char *query = malloc(size);
	if (query) {
		memcpy(query, data + 1, size - 1);
		query[size - 1] = '\0';
		int64_t ms = kft_cm_admission_timeout_ms(query);
		if (ms < 1 || ms > KFT_CM_ADMISSION_TIMEOUT_MAX_MS)
			fail("a review time out of range", query);
		free(query);
	}
	kft_cm_webhook which = kft_cm_webhook_for_path(paths[data[0] % 4]);
	kft_cm_admission req;
	memset(&err, 0, sizeof(err));
	if (kft_cm_admission_decode((const char *)data + 1, size - 1, &req, &err) != 0) {
		if (req.review || req.uid || !err.message[0])
			fail("a decode error that left a request or said nothing", NULL);
		json_t *answer = kft_cm_admission_errored(NULL, 400, err.message);
		check_answer(answer, NULL, 0);
		json_decref(answer);
		return 0;
	}
	kft_cm_admission_env env = {.schema = schema,
	                            .fw = fw,
	                            .backend = kft_backend_default(),
	                            .get_runtime = get_runtime,
	                            .ctx = runtime,
	                            .now = "2026-01-02T03:04:05Z"};
	json_t *answer = kft_cm_admission_review(which, &req, &env);
	check_answer(answer, &req, which == KFT_CM_WEBHOOK_DEFAULT_TRAINJOB);
	json_decref(answer);
	kft_cm_admission_free(&req);
	return 0;
}
