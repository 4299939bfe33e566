/*
 * fuzz_status_request.c - libFuzzer target for the local status endpoint's
 * request decoder (src/api/statusreq.c, shared with the controller): what any process on the
 * machine may send to a job's supervisor, head and body, as one byte string.
 *
 * The input is the bytes a connection delivers: the head as the server
 * core parses it (kft_http_head_parse), then kft_statusreq_judge over the
 * body the head announced, and kft_statusreq_admit's early verdict.
 * Promises checked, each an abort() when broken:
 *   - every answer is one of upstream's codes with a body;
 *   - a report comes only with a 200, and holds only TrainerStatus's keys
 *     with lastUpdatedTime as metav1.Time writes it;
 *   - a report carried as status.trainerStatus passes our schema and CEL
 *     rules (the API server's stand-in), since it ends up there;
 *   - without the job's token nothing is ever a report;
 *   - an early refusal (404, 403) comes with its answer.
 * Leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_status_request SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_status_request.
 */
#define FUZZ_NAME "fuzz_status_request"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "kftrainer/schema.h"
#include "http/http.h"
#include "local/statusserver.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_code(int code)
{
	static const int known[] = {200, 400, 403, 404, 411, 413, 422, 431, 505};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (code == known[i])
			return;
	fail("an answer upstream never gives", NULL);
}

static void check_report(const json_t *ts, const json_t *tj)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ts, k, v)
	{
		if (strcmp(k, "progressPercentage") && strcmp(k, "estimatedRemainingSeconds") &&
		    strcmp(k, "metrics") && strcmp(k, "lastUpdatedTime"))
			fail("a report key TrainerStatus does not have", k);
	}
	const char *t = json_string_value(json_object_get(ts, "lastUpdatedTime"));
	if (!t || strlen(t) != 20 || t[19] != 'Z')
		fail("lastUpdatedTime not as metav1.Time writes it", t);
	kft_error err;
	const kft_schema *schema = kft_schema_builtin(&err);
	const kft_kind_info *kind =
	        kft_schema_find_kind(schema, "trainer.kubeflow.org/v1alpha1", "TrainJob");
	json_t *job = json_deep_copy(tj);
	json_object_set_new(job, "status", json_pack("{s:O}", "trainerStatus", ts));
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_schema_validate(schema, kind, job, NULL, &errs);
	kft_schema_validate_rules(schema, kind, job, NULL, &errs);
	size_t n = errs.count;
	kft_field_errors_free(&errs);
	json_decref(job);
	if (n)
		fail("a report the CRD refuses", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kft_http_head h;
	size_t end = kft_http_head_end((const char *)data, size < 8192 ? size : 8192);
	if (!end || kft_http_head_parse((const char *)data, end, &h) != 0 ||
	    h.content_length > KFT_STATUSREQ_BODY_MAX ||
	    end + (size_t)(h.content_length > 0 ? h.content_length : 0) > size) {
		kft_http_head_free(&h);
		return 0;
	}
	char auth[8192];
	if (kft_http_header(h.fields, "Authorization", auth, sizeof(auth)) != 1)
		auth[0] = '\0';
	kft_statusreq_request req = {.method = h.method,
	                             .path = h.path,
	                             .auth = auth,
	                             .body = (const char *)data + end,
	                             .len = h.content_length > 0 ? (size_t)h.content_length : 0};
	json_t *tj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}}}", "apiVersion",
	                       "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
	                       "name", "job", "namespace", "default", "spec", "runtimeRef", "name",
	                       "torch-distributed");
	kft_statusreq_target t = {.ns = "default", .name = "job", .token = TOKEN, .trainjob = tj};
	kft_statusreq_answer a = {0};
	if (kft_statusreq_judge(&t, &req, &a) != 0)
		fail("judge failed without running out of memory", NULL);
	check_code(a.code);
	if (!a.body)
		fail("an answer without a body", NULL);
	if (a.report && a.code != 200)
		fail("a report with an error answer", NULL);
	if (a.report && !strstr(auth, TOKEN))
		fail("a report without the job's token", auth);
	if (a.report)
		check_report(a.report, tj);
	kft_statusreq_answer_free(&a);
	/* admit agrees with judge about what is refused early */
	kft_statusreq_answer early = {0};
	int ad = kft_statusreq_admit(&t, &req, &early);
	if (ad > 0 && early.code != ad)
		fail("an early refusal without its answer", NULL);
	kft_statusreq_answer_free(&early);
	/* the wrong token on the same request never reports */
	t.token = "another-token";
	if (kft_statusreq_judge(&t, &req, &a) == 0 && a.report)
		fail("a report under another token", NULL);
	kft_statusreq_answer_free(&a);
	json_decref(tj);
	kft_http_head_free(&h);
	return 0;
}
