/*
 * test_conditions.c - TrainJob conditions (src/framework/conditions.c).
 *
 * Sources of the cases, all at the versions the project follows:
 *   "conditions_test.go: ..."  k8s.io/apimachinery v0.36.2 pkg/api/meta
 *                              (TestSetStatusCondition, TestRemoveStatusCondition,
 *                              TestFindStatusCondition)
 *   "trainjob_test.go: ..."    kubeflow/trainer v2.3.0 pkg/util/trainjob
 *                              (TestIsTrainJobFinished, TestIsManagedByExternalController)
 *   "controller: ..."          kubeflow/trainer v2.3.0 test/integration/controller/
 *                              trainjob_controller_test.go, whose steps we replay
 *                              through the reconcile helpers, and the rules of
 *                              pkg/controller/trainjob_controller.go
 *   "ours: ..."                our documented choices.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_fixture.h"

#include "framework/conditions.h"
#include "util/rfc3339.h"

#define BEFORE "2025-01-01T09:00:00Z" /* "one hour before" */
#define NOW    "2025-01-01T10:00:00Z"
#define AFTER  "2025-01-01T11:00:00Z" /* "one hour after" */

/* ---- meta.SetStatusCondition ---------------------------------------------- */

static void set_object(json_t *status, const char *cond, int want_changed, const char *now)
{
	kft_error err = {0};
	int changed = -1;
	json_t *c = parse(cond);
	assert_int_equal(kft_condition_set_object(status, c, now, &changed, &err), 0);
	assert_int_equal(changed, want_changed);
	json_decref(c);
}

/* conditions_test.go: "should-add" */
static void test_set_should_add(void **state)
{
	json_t *s = parse("{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"third\"}]}");
	set_object(s,
	           "{\"type\": \"second\", \"status\": \"True\", \"lastTransitionTime\": "
	           "\"" BEFORE "\", \"reason\": \"reason\", \"message\": \"message\"}",
	           1, NOW);
	expect_json(s, "{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"third\"}, {\"type\": "
	               "\"second\", \"status\": \"True\", \"lastTransitionTime\": \"" BEFORE "\", "
	               "\"reason\": \"reason\", \"message\": \"message\"}]}");
	json_decref(s);
}

/* conditions_test.go: "use-supplied-time" */
static void test_set_use_supplied_time(void **state)
{
	json_t *s = parse("{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"second\", "
	                  "\"status\": \"False\"}, {\"type\": \"third\"}]}");
	set_object(s,
	           "{\"type\": \"second\", \"status\": \"True\", \"lastTransitionTime\": "
	           "\"" BEFORE "\", \"reason\": \"reason\", \"message\": \"message\"}",
	           1, NOW);
	expect_json(s, "{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"second\", "
	               "\"status\": \"True\", \"lastTransitionTime\": \"" BEFORE "\", \"reason\": "
	               "\"reason\", \"message\": \"message\"}, {\"type\": \"third\"}]}");
	json_decref(s);
}

/* conditions_test.go: "update-fields" (same status: the time stays). */
static void test_set_update_fields(void **state)
{
	json_t *s = parse("{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"second\", "
	                  "\"status\": \"True\", \"lastTransitionTime\": \"" BEFORE "\"}, "
	                  "{\"type\": \"third\"}]}");
	set_object(s,
	           "{\"type\": \"second\", \"status\": \"True\", \"lastTransitionTime\": "
	           "\"" AFTER "\", \"reason\": \"reason\", \"message\": \"message\", "
	           "\"observedGeneration\": 3}",
	           1, NOW);
	expect_json(s,
	            "{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"second\", "
	            "\"status\": \"True\", \"lastTransitionTime\": \"" BEFORE "\", \"reason\": "
	            "\"reason\", \"message\": \"message\", \"observedGeneration\": 3}, {\"type\": "
	            "\"third\"}]}");
	json_decref(s);
}

/* conditions_test.go: "nothing changes" */
static void test_set_nothing_changes(void **state)
{
	json_t *s = parse("{\"conditions\": [{\"type\": \"type\", \"status\": \"True\", "
	                  "\"lastTransitionTime\": \"" BEFORE "\", \"reason\": \"\", \"message\": "
	                  "\"\"}]}");
	set_object(s,
	           "{\"type\": \"type\", \"status\": \"True\", \"lastTransitionTime\": "
	           "\"" BEFORE "\"}",
	           0, NOW);
	expect_json(s, "{\"conditions\": [{\"type\": \"type\", \"status\": \"True\", "
	               "\"lastTransitionTime\": \"" BEFORE "\", \"reason\": \"\", \"message\": "
	               "\"\"}]}");
	json_decref(s);
}

/* ours: without a supplied time, `now` is used for a new condition and for a
 * status change only; a zero observedGeneration removes the field; the
 * fields of a new condition follow metav1.Condition's order. */
static void test_set_now_and_order(void **state)
{
	kft_error err = {0};
	json_t *s = json_object();
	assert_int_equal(kft_condition_set(s, "Suspended", "True", "Suspended",
	                                   "TrainJob is suspended", BEFORE, &err),
	                 0);
	const char *order[] = {"type", "status", "lastTransitionTime", "reason", "message"};
	void *it = json_object_iter((json_t *)kft_condition_find(s, "Suspended"));
	for (size_t i = 0; i < 5;
	     i++, it = json_object_iter_next((json_t *)kft_condition_find(s, "Suspended"), it))
		assert_string_equal(json_object_iter_key(it), order[i]);
	assert_int_equal(kft_condition_set(s, "Suspended", "True", "Other", "m", NOW, &err), 0);
	expect_json(s,
	            "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"True\", "
	            "\"lastTransitionTime\": \"" BEFORE "\", \"reason\": \"Other\", \"message\": "
	            "\"m\"}]}");
	json_object_set_new((json_t *)kft_condition_find(s, "Suspended"), "observedGeneration",
	                    json_integer(7));
	assert_int_equal(kft_condition_set(s, "Suspended", "False", NULL, NULL, AFTER, &err), 0);
	expect_json(s, "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"False\", "
	               "\"lastTransitionTime\": \"" AFTER "\", \"reason\": \"\", \"message\": "
	               "\"\"}]}");
	json_decref(s);
}

/* ours: what is not a status or a condition list is refused, not guessed. */
static void test_set_bad_input(void **state)
{
	kft_error err = {0};
	json_t *s = parse("{\"conditions\": {}}");
	json_t *arr = json_array();
	assert_int_equal(kft_condition_set(s, "A", "True", "", "", NOW, &err), KFT_EINVAL);
	assert_int_equal(kft_condition_set(arr, "A", "True", "", "", NOW, &err), KFT_EINVAL);
	assert_int_equal(kft_condition_set(s, NULL, "True", "", "", NOW, &err), KFT_EINVAL);
	assert_int_equal(kft_condition_set(s, "A", "True", "", "", NULL, &err), KFT_EINVAL);
	json_t *no_status = parse("{\"type\": \"A\"}");
	assert_int_equal(kft_condition_set_object(arr, no_status, NOW, NULL, &err), KFT_EINVAL);
	assert_null(kft_condition_find(s, "A"));
	assert_null(kft_condition_find(NULL, "A"));
	json_decref(no_status);
	json_decref(arr);
	json_decref(s);
}

/* conditions_test.go: TestRemoveStatusCondition "present", "not-present"
 * and TestFindStatusCondition. */
static void test_remove_and_find(void **state)
{
	json_t *s = parse("{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"second\", "
	                  "\"status\": \"True\"}, {\"type\": \"third\"}]}");
	assert_string_equal(
	        json_string_value(json_object_get(kft_condition_find(s, "second"), "status")),
	        "True");
	assert_true(kft_condition_is_true(s, "second"));
	assert_false(kft_condition_is_true(s, "first"));
	assert_null(kft_condition_find(s, "fourth"));
	assert_int_equal(kft_condition_remove(s, "fourth"), 0);
	assert_int_equal(kft_condition_remove(s, "second"), 1);
	expect_json(s, "{\"conditions\": [{\"type\": \"first\"}, {\"type\": \"third\"}]}");
	assert_int_equal(kft_condition_remove(s, "first"), 1);
	assert_int_equal(kft_condition_remove(s, "third"), 1);
	expect_json(s, "{}"); /* ours: an emptied list is dropped, as Go omits it */
	json_decref(s);
}

/* ---- pkg/util/trainjob ---------------------------------------------------- */

static int finished(const char *conditions)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "{\"status\": {\"conditions\": %s}}", conditions);
	json_t *j = parse(buf);
	int r = kft_trainjob_is_finished(j);
	json_decref(j);
	return r;
}

/* trainjob_test.go: TestIsTrainJobFinished, all six cases. */
static void test_is_finished(void **state)
{
	/* "completed TrainJob is finished" */
	assert_true(finished("[{\"type\": \"Complete\", \"status\": \"True\"}]"));
	/* "failed TrainJob is finished" */
	assert_true(finished("[{\"type\": \"Failed\", \"status\": \"True\"}]"));
	/* "running TrainJob with no conditions is not finished" */
	assert_false(finished("[]"));
	/* "TrainJob with Complete=False is not finished" */
	assert_false(finished("[{\"type\": \"Complete\", \"status\": \"False\"}]"));
	/* "TrainJob with Failed=False is not finished" */
	assert_false(finished("[{\"type\": \"Failed\", \"status\": \"False\"}]"));
	/* "TrainJob with both Complete and Failed true is finished" */
	assert_true(finished("[{\"type\": \"Complete\", \"status\": \"True\"}, {\"type\": "
	                     "\"Failed\", \"status\": \"True\"}]"));
}

static int external(const char *spec)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "{\"spec\": %s}", spec);
	json_t *j = parse(buf);
	int r = kft_trainjob_is_managed_externally(j);
	json_decref(j);
	return r;
}

/* trainjob_test.go: TestIsManagedByExternalController, all four cases. */
static void test_managed_externally(void **state)
{
	/* "managedBy is unset" */
	assert_false(external("{}"));
	/* "managedBy is the built-in TrainJob controller" */
	assert_false(external("{\"managedBy\": \"trainer.kubeflow.org/trainjob-controller\"}"));
	/* "managedBy is MultiKueue" */
	assert_true(external("{\"managedBy\": \"kueue.x-k8s.io/multikueue\"}"));
	/* "managedBy is an unrecognized controller" */
	assert_true(external("{\"managedBy\": \"foo\"}"));
}

/* ---- the controller's rules ----------------------------------------------- */

/* controller: "Should succeeded to reconcile TrainJob conditions with
 * Complete condition" - suspended, resumed, then the JobSet completes. */
static void test_flow_complete(void **state)
{
	kft_error err = {0};
	json_t *tj = parse("{\"metadata\": {\"name\": \"t\", \"creationTimestamp\": \"" BEFORE
	                   "\"}, \"spec\": {\"suspend\": true}}");
	kft_trainjob_clear_failed(tj);
	assert_int_equal(kft_trainjob_set_suspended(tj, BEFORE, &err), 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"True\", "
	            "\"lastTransitionTime\": \"" BEFORE "\", \"reason\": \"Suspended\", "
	            "\"message\": \"TrainJob is suspended\"}]}");

	json_object_set_new(json_object_get(tj, "spec"), "suspend", json_false());
	kft_trainjob_clear_failed(tj);
	assert_int_equal(kft_trainjob_set_suspended(tj, NOW, &err), 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"False\", "
	            "\"lastTransitionTime\": \"" NOW "\", \"reason\": \"Resumed\", \"message\": "
	            "\"TrainJob is resumed\"}]}");

	/* The JobSet plugin copies JobSet's Completed into Complete. */
	json_t *jobset_status = parse("{\"conditions\": [{\"type\": \"Completed\", \"status\": "
	                              "\"True\", \"lastTransitionTime\": \"" AFTER "\", "
	                              "\"reason\": \"AllJobsCompleted\", \"message\": \"jobset "
	                              "completed successfully\"}]}");
	json_t *status = json_deep_copy(json_object_get(tj, "status"));
	assert_int_equal(kft_condition_copy_from_child(status, jobset_status,
	                                               KFT_JOBSET_CONDITION_COMPLETED,
	                                               KFT_CONDITION_COMPLETE, AFTER, &err),
	                 0);
	assert_int_equal(kft_condition_copy_from_child(status, jobset_status,
	                                               KFT_JOBSET_CONDITION_FAILED,
	                                               KFT_CONDITION_FAILED, AFTER, &err),
	                 0);
	assert_int_equal(kft_trainjob_set_suspended(tj, AFTER, &err), 0);
	assert_int_equal(kft_trainjob_adopt_status(tj, status, AFTER, &err), 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"False\", "
	            "\"lastTransitionTime\": \"" NOW "\", \"reason\": \"Resumed\", \"message\": "
	            "\"TrainJob is resumed\"}, {\"type\": \"Complete\", \"status\": \"True\", "
	            "\"lastTransitionTime\": \"" AFTER
	            "\", \"reason\": \"" KFT_JOBSET_REASON_COMPLETED
	            "\", \"message\": \"" KFT_JOBSET_MESSAGE_COMPLETED "\"}]}");
	assert_true(kft_trainjob_is_finished(tj));
	json_decref(jobset_status);
	json_decref(tj);
}

/* controller: "Should succeeded to reconcile TrainJob conditions with
 * Failed condition"; a False child condition is not copied. */
static void test_flow_failed(void **state)
{
	kft_error err = {0};
	json_t *tj = parse("{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"suspend\": false}, "
	                   "\"status\": {\"conditions\": [{\"type\": \"Suspended\", \"status\": "
	                   "\"True\", \"lastTransitionTime\": \"" BEFORE "\", \"reason\": "
	                   "\"Suspended\", \"message\": \"TrainJob is suspended\"}]}}");
	assert_int_equal(kft_trainjob_set_suspended(tj, NOW, &err), 0);
	json_t *jobset_status = parse(
	        "{\"conditions\": [{\"type\": \"Completed\", \"status\": \"False\", \"reason\": "
	        "\"x\", \"message\": \"y\", \"lastTransitionTime\": \"" BEFORE "\"}, {\"type\": "
	        "\"Failed\", \"status\": \"True\", \"reason\": \"FailedJobs\", \"message\": "
	        "\"jobset failed due to one or more job failures\"}]}");
	json_t *status = json_deep_copy(json_object_get(tj, "status"));
	assert_int_equal(kft_condition_copy_from_child(status, jobset_status, "Completed",
	                                               "Complete", AFTER, &err),
	                 0);
	assert_int_equal(kft_condition_copy_from_child(status, jobset_status, "Failed", "Failed",
	                                               AFTER, &err),
	                 0);
	assert_int_equal(kft_trainjob_adopt_status(tj, status, AFTER, &err), 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"conditions\": [{\"type\": \"Suspended\", \"status\": \"False\", "
	            "\"lastTransitionTime\": \"" NOW "\", \"reason\": \"Resumed\", \"message\": "
	            "\"TrainJob is resumed\"}, {\"type\": \"Failed\", \"status\": \"True\", "
	            "\"lastTransitionTime\": \"" AFTER "\", \"reason\": \"" KFT_JOBSET_REASON_FAILED
	            "\", \"message\": \"" KFT_JOBSET_MESSAGE_FAILED "\"}]}");
	json_decref(jobset_status);
	json_decref(tj);
}

/* controller: setSuspendedCondition does nothing for a job never suspended. */
static void test_never_suspended(void **state)
{
	kft_error err = {0};
	json_t *tj = parse("{\"metadata\": {\"name\": \"t\"}, \"spec\": {}}");
	assert_int_equal(kft_trainjob_set_suspended(tj, NOW, &err), 0);
	expect_json(tj, "{\"metadata\": {\"name\": \"t\"}, \"spec\": {}}");
	json_decref(tj);
}

/* controller: removeFailedCondition and setTrainJobStatus keep a
 * DeadlineExceeded failure; any other failure is cleared so a spec change
 * can take the job out of Failed. */
static void test_failed_cleared_unless_deadline(void **state)
{
	kft_error err = {0};
	json_t *tj = parse("{\"spec\": {}, \"status\": {\"conditions\": [{\"type\": \"Failed\", "
	                   "\"status\": \"True\", \"reason\": \"FailedJobs\", \"message\": \"m\", "
	                   "\"lastTransitionTime\": \"" BEFORE "\"}]}}");
	kft_trainjob_clear_failed(tj);
	expect_json(json_object_get(tj, "status"), "{}");

	assert_int_equal(kft_trainjob_set_failed(tj, KFT_MESSAGE_DEADLINE_EXCEEDED,
	                                         KFT_REASON_DEADLINE_EXCEEDED, BEFORE, &err),
	                 0);
	kft_trainjob_clear_failed(tj);
	assert_non_null(kft_condition_find(json_object_get(tj, "status"), "Failed"));

	/* The framework's new status lacks it: adopting puts it back. */
	assert_int_equal(kft_trainjob_adopt_status(
	                         tj, parse("{\"jobsStatus\": [{\"name\": \"node\"}]}"), NOW, &err),
	                 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"jobsStatus\": [{\"name\": \"node\"}], \"conditions\": [{\"type\": "
	            "\"Failed\", \"status\": \"True\", \"lastTransitionTime\": \"" BEFORE "\", "
	            "\"reason\": \"DeadlineExceeded\", \"message\": \"TrainJob exceeded its active "
	            "deadline\"}]}");
	/* No new status (the finished job's JobSet is gone): kept as is. */
	assert_int_equal(kft_trainjob_adopt_status(tj, NULL, NOW, &err), 0);
	assert_non_null(kft_condition_find(json_object_get(tj, "status"), "Failed"));
	json_decref(tj);
}

/* controller: an unknown runtime kind fails the TrainJob with
 * TrainingRuntimeNotSupported and "unsupported runtime: <Kind>.<group>". */
static void test_unsupported_runtime(void **state)
{
	kft_error err = {0};
	json_t *tj = parse("{\"spec\": {\"runtimeRef\": {\"name\": \"x\", \"apiGroup\": "
	                   "\"example.com\", \"kind\": \"MyRuntime\"}}}");
	assert_int_equal(kft_trainjob_set_unsupported_runtime(tj, NOW, &err), 0);
	expect_json(json_object_get(tj, "status"),
	            "{\"conditions\": [{\"type\": \"Failed\", \"status\": \"True\", "
	            "\"lastTransitionTime\": \"" NOW
	            "\", \"reason\": \"TrainingRuntimeNotSupported\", "
	            "\"message\": \"unsupported runtime: MyRuntime.example.com\"}]}");
	json_decref(tj);
	tj = parse("{\"spec\": {\"runtimeRef\": {\"name\": \"x\", \"kind\": \"K\"}}}");
	char *key = kft_trainjob_runtime_key(tj);
	assert_string_equal(key, "K"); /* GroupKind.String() with no group */
	free(key);
	json_decref(tj);
}

static kft_deadline_state deadline(json_t *tj, const char *now, int64_t *requeue)
{
	kft_error err = {0};
	kft_deadline_state st = (kft_deadline_state)-1;
	if (kft_trainjob_reconcile_deadline(tj, now, &st, requeue, &err) != 0)
		fail_msg("deadline: %s", err.message);
	return st;
}

/* controller: "Should fail TrainJob with DeadlineExceeded when
 * ActiveDeadlineSeconds expires" */
static void test_deadline_exceeded(void **state)
{
	int64_t requeue = -1;
	json_t *tj = parse("{\"metadata\": {\"creationTimestamp\": \"2025-01-01T10:00:00Z\"}, "
	                   "\"spec\": {\"activeDeadlineSeconds\": 1}}");
	assert_int_equal(deadline(tj, "2025-01-01T10:00:02Z", &requeue), KFT_DEADLINE_EXCEEDED);
	assert_int_equal(requeue, 0);
	expect_json(
	        json_object_get(tj, "status"),
	        "{\"conditions\": [{\"type\": \"Failed\", \"status\": \"True\", "
	        "\"lastTransitionTime\": \"2025-01-01T10:00:02Z\", \"reason\": "
	        "\"DeadlineExceeded\", \"message\": \"TrainJob exceeded its active deadline\"}]}");
	/* Finished now: the deadline no longer applies. */
	assert_int_equal(deadline(tj, "2025-01-01T10:00:05Z", &requeue), KFT_DEADLINE_NONE);
	json_decref(tj);
}

/* controller: "Should not fail TrainJob if ActiveDeadlineSeconds is not
 * exceeded" - and the reconcile is asked back when it will be; exactly at
 * the deadline is not yet past it (one second later, as upstream). */
static void test_deadline_pending(void **state)
{
	int64_t requeue = -1;
	json_t *tj = parse("{\"metadata\": {\"creationTimestamp\": \"2025-01-01T10:00:00Z\"}, "
	                   "\"spec\": {\"activeDeadlineSeconds\": 3600}}");
	assert_int_equal(deadline(tj, "2025-01-01T10:30:00.250Z", &requeue), KFT_DEADLINE_PENDING);
	assert_int_equal(requeue, 1800 * 1000 - 250);
	assert_int_equal(deadline(tj, "2025-01-01T11:00:00Z", &requeue), KFT_DEADLINE_PENDING);
	assert_int_equal(requeue, 1000);
	assert_null(json_object_get(tj, "status"));
	/* A time zone offset is honoured: 11:30+01:00 is 10:30Z. */
	assert_int_equal(deadline(tj, "2025-01-01T11:30:00+01:00", &requeue), KFT_DEADLINE_PENDING);
	assert_int_equal(requeue, 1800 * 1000);
	json_decref(tj);
}

/* controller: "Should not start deadline timer if TrainJob is suspended";
 * no deadline, or no known start, is nothing to do either. */
static void test_deadline_not_running(void **state)
{
	int64_t requeue = -1;
	json_t *tj = parse("{\"metadata\": {\"creationTimestamp\": \"2025-01-01T10:00:00Z\"}, "
	                   "\"spec\": {\"activeDeadlineSeconds\": 1, \"suspend\": true}}");
	assert_int_equal(deadline(tj, "2025-01-02T10:00:00Z", &requeue), KFT_DEADLINE_NONE);
	json_decref(tj);
	tj = parse("{\"metadata\": {\"creationTimestamp\": \"2025-01-01T10:00:00Z\"}, \"spec\": "
	           "{}}");
	assert_int_equal(deadline(tj, "2025-01-02T10:00:00Z", &requeue), KFT_DEADLINE_NONE);
	json_decref(tj);
	tj = parse("{\"metadata\": {}, \"spec\": {\"activeDeadlineSeconds\": 1}}");
	assert_int_equal(deadline(tj, "2025-01-02T10:00:00Z", &requeue), KFT_DEADLINE_NONE);
	assert_null(json_object_get(tj, "status"));
	json_decref(tj);
}

/* controller: "Should reset deadline timer upon resume" - the clock starts
 * again when Suspended turns False. */
static void test_deadline_reset_on_resume(void **state)
{
	kft_error err = {0};
	int64_t requeue = -1;
	json_t *tj = parse("{\"metadata\": {\"creationTimestamp\": \"2025-01-01T10:00:00Z\"}, "
	                   "\"spec\": {\"activeDeadlineSeconds\": 2, \"suspend\": true}}");
	assert_int_equal(kft_trainjob_set_suspended(tj, "2025-01-01T10:00:00Z", &err), 0);
	json_object_set_new(json_object_get(tj, "spec"), "suspend", json_false());
	assert_int_equal(kft_trainjob_set_suspended(tj, "2025-01-01T12:00:00Z", &err), 0);
	assert_int_equal(deadline(tj, "2025-01-01T12:00:01Z", &requeue), KFT_DEADLINE_PENDING);
	assert_int_equal(requeue, 1000);
	assert_int_equal(deadline(tj, "2025-01-01T12:00:03Z", &requeue), KFT_DEADLINE_EXCEEDED);
	assert_true(kft_trainjob_is_finished(tj));
	json_decref(tj);
}

/* ours: times that are not RFC 3339 are errors. */
static void test_rfc3339(void **state)
{
	kft_error err = {0};
	int64_t ms = 0;
	assert_int_equal(kft_rfc3339_parse_ms("1970-01-01T00:00:00Z", &ms, &err), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(kft_rfc3339_parse_ms("2024-02-29T23:59:59.9999-00:30", &ms, &err), 0);
	assert_int_equal(ms, 1709251199999LL + 1800000LL);
	assert_int_equal(kft_rfc3339_parse_ms("1969-12-31T23:59:59Z", &ms, &err), 0);
	assert_int_equal(ms, -1000);
	const char *bad[] = {"",
	                     "2025-01-01",
	                     "2025-01-01T10:00:00",
	                     "2025-13-01T10:00:00Z",
	                     "2025-02-29T10:00:00Z",
	                     "2025-01-01T24:00:00Z",
	                     "2025-01-01T10:00:60Z",
	                     "2025-01-01t10:00:00Z",
	                     "2025-01-01T10:00:00.Z",
	                     "2025-01-01T10:00:00Zx",
	                     "2025-01-01T10:00:00+1:00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kft_rfc3339_parse_ms(bad[i], &ms, &err), KFT_EPARSE);
	int64_t requeue;
	kft_deadline_state st;
	json_t *tj = parse("{\"metadata\": {\"creationTimestamp\": \"yesterday\"}, \"spec\": "
	                   "{\"activeDeadlineSeconds\": 5}}");
	assert_int_equal(kft_trainjob_reconcile_deadline(tj, NOW, &st, &requeue, &err), KFT_EPARSE);
	json_decref(tj);
}

/* controller: the TrainJobResourcesCreationFailed event message, cut at
 * 950 characters with " ..." when the error was longer (in bytes). */
static void test_reconcile_failed_message(void **state)
{
	char *m = kft_trainjob_reconcile_failed_message("boom");
	assert_string_equal(m, "TrainJob resources reconciliation failed: boom");
	free(m);

	char long_err[1001];
	memset(long_err, 'x', 1000);
	long_err[1000] = '\0';
	m = kft_trainjob_reconcile_failed_message(long_err);
	assert_int_equal(strlen(m), strlen("TrainJob resources reconciliation failed: ") + 950 + 4);
	assert_string_equal(m + strlen(m) - 5, "x ...");
	free(m);

	/* 500 two-byte characters: 1000 bytes but only 500 characters, so all
	 * are kept and " ..." is still appended. */
	char wide[1001];
	for (int i = 0; i < 500; i++)
		memcpy(wide + 2 * i, "\xc3\xa9", 2);
	wide[1000] = '\0';
	m = kft_trainjob_reconcile_failed_message(wide);
	assert_int_equal(strlen(m),
	                 strlen("TrainJob resources reconciliation failed: ") + 1000 + 4);
	free(m);

	/* 951 three-byte characters: cut after 950 whole characters. */
	char *big = malloc(951 * 3 + 1);
	for (int i = 0; i < 951; i++)
		memcpy(big + 3 * i, "\xe2\x82\xac", 3);
	big[951 * 3] = '\0';
	m = kft_trainjob_reconcile_failed_message(big);
	assert_int_equal(strlen(m),
	                 strlen("TrainJob resources reconciliation failed: ") + 2850 + 4);
	free(m);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set_should_add),
	        cmocka_unit_test(test_set_use_supplied_time),
	        cmocka_unit_test(test_set_update_fields),
	        cmocka_unit_test(test_set_nothing_changes),
	        cmocka_unit_test(test_set_now_and_order),
	        cmocka_unit_test(test_set_bad_input),
	        cmocka_unit_test(test_remove_and_find),
	        cmocka_unit_test(test_is_finished),
	        cmocka_unit_test(test_managed_externally),
	        cmocka_unit_test(test_flow_complete),
	        cmocka_unit_test(test_flow_failed),
	        cmocka_unit_test(test_never_suspended),
	        cmocka_unit_test(test_failed_cleared_unless_deadline),
	        cmocka_unit_test(test_unsupported_runtime),
	        cmocka_unit_test(test_deadline_exceeded),
	        cmocka_unit_test(test_deadline_pending),
	        cmocka_unit_test(test_deadline_not_running),
	        cmocka_unit_test(test_deadline_reset_on_resume),
	        cmocka_unit_test(test_rfc3339),
	        cmocka_unit_test(test_reconcile_failed_message),
	};
	return cmocka_run_group_tests_name("conditions", tests, NULL, NULL);
}
