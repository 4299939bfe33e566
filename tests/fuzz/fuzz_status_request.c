/*
 * fuzz_status_request.c - libFuzzer target for the local status endpoint's
 * request decoder (src/api/statusreq.c, shared with the controller): what any process on the
 * machine may send to a job's supervisor, head and body, as one byte string.
 *
 * The input is the bytes a connection delivers. kft_statusreq_head_parse
 * judges them whole, then one byte short of the head's end (still "need
 * more") and exactly to its end (the same verdict), and
 * kft_statusreq_judge the body the head announced.
 * Promises checked, each an abort() when broken:
 *   - every answer is one of upstream's codes with a body;
 *   - a report comes only with a 200, and holds only TrainerStatus's keys
 *     with lastUpdatedTime as metav1.Time writes it;
 *   - a report carried as status.trainerStatus passes our schema and CEL
 *     rules (the API server's stand-in), since it ends up there;
 *   - without the job's token nothing is ever a report.
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

/* The verdict on the whole input; a complete head must have been "need
 * more" one byte short of its end, and the same verdict at its end. */
static int parse_head(const uint8_t *data, size_t size, kft_statusreq_head *h)
{
	kft_statusreq_answer a = {0};
	int v = kft_statusreq_head_parse((const char *)data, size, h, &a);
	if (v >= 400 && (check_code(v), a.code != v || !a.body))
		fail("an error without its answer", NULL);
	kft_statusreq_answer_free(&a);
	if (v != 1)
		return v;
	size_t end = h->head_len;
	kft_statusreq_head tmp;
	if (kft_statusreq_head_parse((const char *)data, end - 1, &tmp, &a) != 0)
		fail("an answer before the head was whole", NULL);
	kft_statusreq_answer_free(&a);
	if (kft_statusreq_head_parse((const char *)data, end, &tmp, &a) != 1 ||
	    tmp.content_length != h->content_length)
		fail("the head alone judged otherwise", NULL);
	kft_statusreq_answer_free(&a);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static kft_statusreq_head h;
	if (size > KFT_STATUSREQ_HEAD_MAX + KFT_STATUSREQ_BODY_MAX)
		return 0;
	if (parse_head(data, size, &h) != 1 || h.head_len + h.content_length > size)
		return 0;
	json_t *tj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}}}", "apiVersion",
	                       "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
	                       "name", "job", "namespace", "default", "spec", "runtimeRef", "name",
	                       "torch-distributed");
	kft_statusreq_target t = {.ns = "default", .name = "job", .token = TOKEN, .trainjob = tj};
	kft_statusreq_answer a = {0};
	const char *body = (const char *)data + h.head_len;
	if (kft_statusreq_judge(&t, &h, body, h.content_length, &a) != 0)
		fail("judge failed without running out of memory", NULL);
	check_code(a.code);
	if (!a.body)
		fail("an answer without a body", NULL);
	if (a.report && a.code != 200)
		fail("a report with an error answer", NULL);
	if (a.report && !strstr(h.auth, TOKEN))
		fail("a report without the job's token", h.auth);
	if (a.report)
		check_report(a.report, tj);
	kft_statusreq_answer_free(&a);
	/* the wrong token on the same request never reports */
	t.token = "another-token";
	if (kft_statusreq_judge(&t, &h, body, h.content_length, &a) == 0 && a.report)
		fail("a report under another token", NULL);
	kft_statusreq_answer_free(&a);
	json_decref(tj);
	return 0;
}
