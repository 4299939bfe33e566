/*
 * test_controller_reconcile.c - the reconcilers' decisions over JSON inputs
 * (src/controller/reconcile.c): which TrainJobs are ours, the status patch,
 * suspend/resume, deadlines, the runtime snapshot, the legacy finalizer,
 * and when a server-side apply can be skipped.
 *
 * Sources, kubeflow/trainer v2.3.0:
 *   "trainjob_controller.go"   pkg/controller/trainjob_controller.go (Reconcile,
 *                              setSuspendedCondition, reconcileDeadline, the
 *                              status written with client.MergeFrom)
 *   "snapshot_test.go"         pkg/runtime/core/snapshot_test.go (error texts)
 *   "snapshot.go"              pkg/runtime/core/snapshot.go (name, owner, data key)
 *   "trainingruntime_controller_test.go"  the finalizer is removed, never added
 *   "ours"                     our choices (skipping no-op applies)
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
#include "controller/reconcile.h"
#include "controller/controller.h"
#include "kftrainer/framework.h"

#define NOW "2025-01-01T10:00:00Z"

static json_t *trainjob(const char *spec_extra, const char *status)
{
	char text[4096];
	snprintf(text, sizeof(text),
	         "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	         "\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\",\"uid\":\"u-1\","
	         "\"creationTimestamp\":\"2025-01-01T09:00:00Z\"},"
	         "\"spec\":{\"runtimeRef\":{\"name\":\"torch\",\"apiGroup\":\"trainer.kubeflow."
	         "org\","
	         "\"kind\":\"ClusterTrainingRuntime\"}%s%s}%s%s}",
	         spec_extra[0] ? "," : "", spec_extra, status[0] ? ",\"status\":" : "", status);
	return parse(text);
}

/* trainjob_controller.go: IsManagedByExternalController -> nothing at all. */
static void test_managed_by_kueue_skipped(void **state)
{
	(void)state;
	json_t *job = trainjob("\"managedBy\":\"kueue.x-k8s.io/multikueue\"", "");
	kft_cm_plan plan;
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_true(plan.skip);
	assert_false(plan.build);
	assert_null(json_object_get(job, "status"));
	kft_cm_plan_free(&plan);
	json_decref(job);

	job = trainjob("\"managedBy\":\"trainer.kubeflow.org/trainjob-controller\"", "");
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_false(plan.skip);
	assert_true(plan.build);
	kft_cm_plan_free(&plan);
	json_decref(job);
}

/* trainjob_controller.go: a finished TrainJob is not built again, and an
 * unknown runtime kind is Failed/TrainingRuntimeNotSupported with an error. */
static void test_begin_finished_and_unsupported(void **state)
{
	(void)state;
	kft_cm_plan plan;
	json_t *job = trainjob("", "{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\","
	                           "\"reason\":\"AllJobsCompleted\",\"message\":\"m\","
	                           "\"lastTransitionTime\":\"2025-01-01T09:30:00Z\"}]}");
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_false(plan.build);
	assert_null(plan.error);
	kft_cm_plan_free(&plan);
	json_decref(job);

	job = parse("{\"metadata\":{\"name\":\"j\",\"namespace\":\"n\"},\"spec\":{\"runtimeRef\":"
	            "{\"name\":\"x\",\"apiGroup\":\"example.com\",\"kind\":\"Other\"}}}");
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_false(plan.build);
	assert_string_equal(plan.error, "unsupported runtime: Other.example.com");
	const json_t *failed = kft_condition_find(json_object_get(job, "status"), "Failed");
	assert_string_equal(json_string_value(json_object_get(failed, "reason")),
	                    "TrainingRuntimeNotSupported");
	kft_cm_plan_free(&plan);
	json_decref(job);
}

/* Both reconcile passes over job with no framework (only the status
 * decisions), as if read at now; stored is the object as last written. The
 * plan is the caller's to free. */
static void run_status(json_t *job, const json_t *stored, const char *now, kft_cm_plan *plan)
{
	assert_int_equal(kft_cm_trainjob_begin(job, now, plan, NULL), 0);
	assert_int_equal(kft_cm_trainjob_finish(job, stored, NULL, NULL, now, plan, NULL), 0);
}

/* trainjob_controller.go: suspend sets Suspended=True and the status is sent
 * as a merge patch of the status only; a second pass changes nothing. */
static void test_suspend_then_resume(void **state)
{
	(void)state;
	kft_cm_plan plan;
	json_t *stored = trainjob("\"suspend\":true", "");
	json_t *job = json_deep_copy(stored);
	run_status(job, stored, NOW, &plan);
	expect_json(plan.status_patch,
	            "{\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\","
	            "\"reason\":\"Suspended\",\"message\":\"TrainJob is suspended\","
	            "\"lastTransitionTime\":\"" NOW "\"}]}}");
	assert_int_equal(plan.requeue_after_ms, 0);
	kft_cm_plan_free(&plan);

	/* the same again: the status is unchanged, nothing to write */
	json_t *again = json_deep_copy(job);
	run_status(again, job, NOW, &plan);
	assert_null(plan.status_patch);
	kft_cm_plan_free(&plan);
	json_decref(again);

	/* resumed: Suspended=False/Resumed, and the whole list is replaced */
	json_object_set_new(json_object_get(job, "spec"), "suspend", json_false());
	json_t *resumed = json_deep_copy(job);
	run_status(resumed, job, "2025-01-01T11:00:00Z", &plan);
	expect_json(plan.status_patch,
	            "{\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"False\","
	            "\"reason\":\"Resumed\",\"message\":\"TrainJob is resumed\","
	            "\"lastTransitionTime\":\"2025-01-01T11:00:00Z\"}]}}");
	kft_cm_plan_free(&plan);
	json_decref(resumed);
	json_decref(job);
	json_decref(stored);
}

/* trainjob_controller.go reconcileDeadline: requeue at the deadline, then
 * Failed/DeadlineExceeded and the JobSet deleted. */
static void test_deadline(void **state)
{
	(void)state;
	kft_cm_plan plan;
	json_t *stored = trainjob("\"activeDeadlineSeconds\":7200", "");
	json_t *job = json_deep_copy(stored);
	run_status(job, stored, NOW, &plan);
	assert_false(plan.delete_jobset);
	assert_int_equal(plan.requeue_after_ms, 3600 * 1000); /* created 09:00, now 10:00 */
	assert_null(plan.status_patch);
	kft_cm_plan_free(&plan);
	json_decref(job);

	job = json_deep_copy(stored);
	run_status(job, stored, "2025-01-01T11:00:01Z", &plan);
	assert_true(plan.delete_jobset);
	assert_int_equal(plan.requeue_after_ms, 0);
	expect_json(plan.status_patch,
	            "{\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\","
	            "\"reason\":\"DeadlineExceeded\",\"message\":\"TrainJob exceeded its active "
	            "deadline\",\"lastTransitionTime\":\"2025-01-01T11:00:01Z\"}]}}");
	kft_cm_plan_free(&plan);
	json_decref(job);
	json_decref(stored);
}

/* trainjob_controller.go: the status comes from the framework's
 * PostExecution (the JobSet's Completed becomes Complete). */
static json_t *g_jobset;

static json_t *lookup(void *self, const char *api_version, const char *kind, const char *ns,
                      const char *name)
{
	(void)self;
	if (g_jobset && strcmp(kind, "JobSet") == 0 && strcmp(ns, "ns") == 0 &&
	    strcmp(name, "job") == 0 && strcmp(api_version, "jobset.x-k8s.io/v1alpha2") == 0)
		return json_incref(g_jobset);
	return NULL;
}

static void test_status_from_jobset(void **state)
{
	(void)state;
	kft_framework *fw = NULL;
	kft_backend b;
	kft_cm_plan plan;
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	kft_cm_backend_init(&b, lookup, NULL);
	g_jobset = parse("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	                 "\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\"},\"spec\":{},"
	                 "\"status\":{\"conditions\":[{\"type\":\"Completed\",\"status\":\"True\","
	                 "\"reason\":\"AllJobsCompleted\",\"message\":\"jobset completed "
	                 "successfully\",\"lastTransitionTime\":\"2025-01-01T09:59:00Z\"}]}}");
	json_t *stored = trainjob("", "");
	json_t *job = json_deep_copy(stored);
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_true(plan.build);
	kft_error err = {0};
	assert_int_equal(kft_cm_trainjob_finish(job, stored, fw, &b, NOW, &plan, &err), 0);
	const json_t *cond =
	        kft_condition_find(json_object_get(plan.status_patch, "status"), "Complete");
	assert_non_null(cond);
	assert_string_equal(json_string_value(json_object_get(cond, "reason")), "AllJobsCompleted");
	assert_string_equal(json_string_value(json_object_get(cond, "lastTransitionTime")),
	                    "2025-01-01T09:59:00Z");
	kft_cm_plan_free(&plan);
	json_decref(job);

	/* no JobSet yet: the framework's status is {}, which is no status at
	 * all (Go's Semantic.DeepEqual; the CRD refuses an empty status) */
	json_decref(g_jobset);
	g_jobset = NULL;
	job = json_deep_copy(stored);
	assert_int_equal(kft_cm_trainjob_begin(job, NOW, &plan, NULL), 0);
	assert_int_equal(kft_cm_trainjob_finish(job, stored, fw, &b, NOW, &plan, &err), 0);
	assert_null(plan.status_patch);
	kft_cm_plan_free(&plan);
	json_decref(job);
	json_decref(stored);
	kft_framework_free(fw);
}

/* ours: the kubernetes backend answers UIDs from metadata.uid. */
static void test_backend(void **state)
{
	(void)state;
	kft_backend b;
	kft_cm_backend_init(&b, lookup, NULL);
	json_t *job = trainjob("", "");
	assert_string_equal(b.name, "kubernetes");
	assert_string_equal(b.trainjob_uid(b.self, job), "u-1");
	json_object_del(json_object_get(job, "metadata"), "uid");
	assert_null(b.trainjob_uid(b.self, job));
	json_decref(job);
}

/* RFC 7386 patches as client.MergeFrom computes them. */
static void test_merge_patch(void **state)
{
	(void)state;
	json_t *a = parse("{\"x\":1,\"y\":{\"a\":1,\"b\":2},\"l\":[1,2],\"gone\":true}");
	json_t *b = parse("{\"x\":1,\"y\":{\"a\":1,\"b\":3,\"c\":4},\"l\":[1],\"new\":\"n\"}");
	json_t *p = kft_cm_merge_patch(a, b);
	expect_json(p, "{\"y\":{\"b\":3,\"c\":4},\"l\":[1],\"gone\":null,\"new\":\"n\"}");
	json_decref(p);
	p = kft_cm_merge_patch(a, a);
	expect_json(p, "{}");
	json_decref(p);
	json_decref(a);
	json_decref(b);
}

/* ours: skip an apply when the live object already holds every field. */
static void test_apply_noop(void **state)
{
	(void)state;
	json_t *desired = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	                        "{\"name\":\"c\",\"labels\":{}},\"data\":{\"k\":\"v\"},"
	                        "\"spec\":{\"n\":1,\"items\":[{\"a\":1}]}}");
	json_t *live = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	                     "{\"name\":\"c\",\"uid\":\"x\",\"resourceVersion\":\"5\"},"
	                     "\"data\":{\"k\":\"v\"},\"spec\":{\"n\":1.0,\"items\":[{\"a\":1,"
	                     "\"defaulted\":true}]},\"status\":{}}");
	assert_true(kft_cm_apply_is_noop(desired, live));
	json_object_set_new(json_object_get(desired, "data"), "k", json_string("w"));
	assert_false(kft_cm_apply_is_noop(desired, live));
	json_object_set_new(json_object_get(desired, "data"), "k", json_string("v"));
	json_array_append_new(json_object_get(json_object_get(desired, "spec"), "items"),
	                      json_object());
	assert_false(kft_cm_apply_is_noop(desired, live)); /* a list of another length */
	assert_false(kft_cm_apply_is_noop(desired, NULL));
	json_decref(desired);
	json_decref(live);

	/* a JobSet being resumed: spec.suspend differs */
	desired = parse("{\"spec\":{\"suspend\":false}}");
	live = parse("{\"spec\":{\"suspend\":true}}");
	assert_false(kft_cm_apply_is_noop(desired, live));
	json_decref(desired);
	json_decref(live);
}

/* snapshot.go: name, owner, data key; a round trip reads it back. */
static void test_snapshot_round_trip(void **state)
{
	(void)state;
	json_t *job = trainjob("", "");
	json_t *rt = parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":"
	                   "\"ClusterTrainingRuntime\",\"metadata\":{\"name\":\"torch\","
	                   "\"managedFields\":[{}]},\"spec\":{\"mlPolicy\":{\"numNodes\":2}}}");
	kft_error err = {0};
	json_t *cm = kft_cm_snapshot_configmap(job, rt, &err);
	assert_non_null(cm);
	json_t *md = json_object_get(cm, "metadata");
	assert_string_equal(json_string_value(json_object_get(md, "name")), "job-runtime-snapshot");
	assert_string_equal(json_string_value(json_object_get(md, "namespace")), "ns");
	expect_json(json_object_get(md, "ownerReferences"),
	            "[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	            "\"name\":\"job\",\"uid\":\"u-1\",\"controller\":true,"
	            "\"blockOwnerDeletion\":true}]");
	const char *yaml =
	        json_string_value(json_object_get(json_object_get(cm, "data"), "runtime"));
	assert_non_null(yaml);
	assert_null(strstr(yaml, "managedFields"));
	/* sigs.k8s.io/yaml sorts keys: apiVersion, kind, metadata, spec */
	assert_true(strstr(yaml, "apiVersion") < strstr(yaml, "kind:"));
	assert_true(strstr(yaml, "kind:") < strstr(yaml, "metadata:"));
	json_t *back = NULL;
	assert_int_equal(kft_cm_snapshot_runtime(job, cm, &back, &err), 0);
	json_object_del(json_object_get(rt, "metadata"), "managedFields");
	assert_true(json_equal(back, rt));
	json_decref(back);
	json_decref(cm);
	json_decref(rt);
	json_decref(job);
}

static void expect_snapshot_error(json_t *job, json_t *cm, const char *want)
{
	json_t *rt = NULL;
	kft_error err = {0};
	assert_int_not_equal(kft_cm_snapshot_runtime(job, cm, &rt, &err), 0);
	assert_null(rt);
	if (!strstr(err.message, want))
		fail_msg("error \"%s\" does not contain \"%s\"", err.message, want);
}

/* snapshot_test.go: each invalid snapshot, with upstream's messages. */
static void test_snapshot_errors(void **state)
{
	(void)state;
	json_t *job = parse("{\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\",\"uid\":\"u-1\"},"
	                    "\"spec\":{\"runtimeRef\":{\"name\":\"test-runtime\",\"apiGroup\":"
	                    "\"trainer.kubeflow.org\",\"kind\":\"TrainingRuntime\"}}}");
	json_t *cm = parse("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"other\",\"controller\":"
	                   "true}]},\"data\":{\"runtime\":\"x\"}}");
	expect_snapshot_error(job, cm,
	                      "invalid runtime snapshot: a snapshot configmap exists but is "
	                      "owned by another object");
	json_decref(cm);
	cm = parse("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"u-1\",\"controller\":true}]},"
	           "\"data\":{}}");
	expect_snapshot_error(
	        job, cm,
	        "invalid runtime snapshot: snapshot ConfigMap missing \"runtime\" data "
	        "key");
	json_object_set_new(json_object_get(cm, "data"), "runtime", json_string("a: [b"));
	expect_snapshot_error(job, cm,
	                      "invalid runtime snapshot: unable to unmarshal the snapshot");
	json_object_set_new(
	        json_object_get(cm, "data"), "runtime",
	        json_string("apiVersion: trainer.kubeflow.org/v1alpha1\n"
	                    "kind: TrainingRuntime\nmetadata:\n  name: other-runtime\n"));
	expect_snapshot_error(
	        job, cm,
	        "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a "
	        "runtime with name, api group and kind of \"test-runtime\", "
	        "\"trainer.kubeflow.org\", "
	        "\"TrainingRuntime\" but found runtime with name, api group and kind of "
	        "\"other-runtime\", \"trainer.kubeflow.org\", \"TrainingRuntime\"");
	json_object_set_new(json_object_get(cm, "data"), "runtime",
	                    json_string("apiVersion: trainer.kubeflow.org/v1alpha1\n"
	                                "kind: ClusterTrainingRuntime\nmetadata:\n"
	                                "  name: test-runtime\n"));
	expect_snapshot_error(job, cm,
	                      "but found runtime with name, api group and kind of "
	                      "\"test-runtime\", \"trainer.kubeflow.org\", "
	                      "\"ClusterTrainingRuntime\"");
	json_decref(cm);
	json_decref(job);
}

/* trainingruntime_controller_test.go: the legacy finalizer is removed. */
static void test_runtime_finalizer(void **state)
{
	(void)state;
	json_t *patch = NULL;
	json_t *rt = parse("{\"metadata\":{\"name\":\"r\",\"finalizers\":"
	                   "[\"trainer.kubeflow.org/resource-in-use\"]}}");
	assert_int_equal(kft_cm_runtime_finalizer_patch(rt, &patch, NULL), 0);
	expect_json(patch, "{\"metadata\":{\"finalizers\":null}}");
	json_decref(patch);
	json_decref(rt);
	rt = parse("{\"metadata\":{\"name\":\"r\",\"finalizers\":[\"a\","
	           "\"trainer.kubeflow.org/resource-in-use\",\"b\"]}}");
	assert_int_equal(kft_cm_runtime_finalizer_patch(rt, &patch, NULL), 0);
	expect_json(patch, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}");
	json_decref(patch);
	json_decref(rt);
	rt = parse("{\"metadata\":{\"name\":\"r\",\"finalizers\":[\"a\"]}}");
	assert_int_equal(kft_cm_runtime_finalizer_patch(rt, &patch, NULL), 0);
	assert_null(patch); /* no action when runtime has no finalizer */
	json_decref(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_managed_by_kueue_skipped),
	        cmocka_unit_test(test_begin_finished_and_unsupported),
	        cmocka_unit_test(test_suspend_then_resume),
	        cmocka_unit_test(test_deadline),
	        cmocka_unit_test(test_status_from_jobset),
	        cmocka_unit_test(test_backend),
	        cmocka_unit_test(test_merge_patch),
	        cmocka_unit_test(test_apply_noop),
	        cmocka_unit_test(test_snapshot_round_trip),
	        cmocka_unit_test(test_snapshot_errors),
	        cmocka_unit_test(test_runtime_finalizer),
	};
	return cmocka_run_group_tests_name("controller_reconcile", tests, NULL, NULL);
}
