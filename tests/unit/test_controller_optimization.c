/*
 * test_controller_optimization.c - the OptimizationJob controller's decision
 * (src/controller/optplan.c), pure: TrainJobs in, what to create, stop and
 * write out. Pins the upstream KEP (kubeflow/trainer#3552: trials are
 * TrainJobs owned by the OptimizationJob, Created/Complete/Failed
 * conditions, MaxTrialsReached, status.result with the best trial's
 * trainJobName and parameters), Katib's experiment rules (parallel and
 * total trial counts, max failed) and what a restarted controller must do:
 * adopt a trial it created before its status write, never create one twice,
 * never count a report twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json_fixture.h"
#include "controller/optimization.h"
#include "hpo/hpo.h"

#define NOW   "2026-03-01T10:00:00Z"
#define LATER "2026-03-01T10:05:00Z"

static json_t *optjob(const char *status, const char *annotations)
{
	char buf[4096];
	snprintf(
	        buf, sizeof(buf),
	        "{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"OptimizationJob\","
	        " \"metadata\": {\"name\": \"tune\", \"namespace\": \"team\", \"uid\": \"u-1\","
	        " \"annotations\": {%s}},"
	        " \"spec\": {\"objectives\": [{\"metric\": \"loss\", \"direction\": \"Minimize\"}],"
	        " \"numTrials\": 3, \"parallelTrials\": 2,"
	        " \"searchAlgorithm\": {\"random\": {\"seed\": 4}},"
	        " \"parameters\": [{\"name\": \"lr\", \"searchSpace\": {\"uniform\": {\"min\": "
	        "\"0.1\", \"max\": \"0.9\", \"type\": \"Float\"}}}],"
	        " \"trainJobTemplate\": {\"spec\": {\"runtimeRef\": {\"name\": \"torch\"}}}}%s%s}",
	        annotations ? annotations : "", status ? ", \"status\": " : "",
	        status ? status : "");
	return parse(buf);
}

static json_t *plan_of(const json_t *opt, const json_t *jobs, const char *now, kft_cm_opt_plan *p)
{
	kft_error err = {0};
	if (kft_cm_optimization_plan(opt, jobs, now, 77, p, &err) != 0)
		fail_msg("plan: %s", err.message);
	return p->status;
}

/* A job as the API server would hold the created one, with a status. */
static json_t *as_stored(const json_t *created, const char *status)
{
	json_t *j = json_deep_copy(created);
	if (status)
		json_object_set_new(j, "status", parse(status));
	return j;
}

static const char *state_of(const json_t *status, size_t i)
{
	return json_string_value(
	        json_object_get(json_array_get(json_object_get(status, "trials"), i), "state"));
}

/* First sight: Created, and parallelTrials trials created, each a TrainJob
 * owned by the OptimizationJob (controller, blockOwnerDeletion), labelled
 * and annotated with its values. */
static void test_first_reconcile(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, NULL), *jobs = json_array();
	kft_cm_opt_plan p;
	json_t *st = plan_of(opt, jobs, NOW, &p);
	assert_non_null(st);
	assert_int_equal(json_array_size(p.create), 2);
	const json_t *j = json_array_get(p.create, 1);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(j, "metadata"), "name")),
	        "tune-2");
	expect_json(
	        json_object_get(json_object_get(j, "metadata"), "ownerReferences"),
	        "[{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": "
	        "\"OptimizationJob\", \"name\": \"tune\", \"uid\": \"u-1\", \"controller\": true, "
	        "\"blockOwnerDeletion\": true}]");
	assert_string_equal(json_string_value(json_object_get(
	                            json_object_get(json_object_get(j, "metadata"), "labels"),
	                            KFT_HPO_LABEL_JOB)),
	                    "tune");
	assert_string_equal(state_of(st, 0), "Running");
	const json_t *created = json_array_get(json_object_get(st, "conditions"), 0);
	assert_string_equal(json_string_value(json_object_get(created, "type")), "Created");
	assert_string_equal(json_string_value(json_object_get(created, "status")), "True");
	kft_cm_opt_plan_free(&p);
	json_decref(jobs);
	json_decref(opt);
}

/* A restart after trials were created but before the status was written:
 * the trials found are adopted (their values from the annotation), none is
 * created again, and only what parallelTrials leaves is created. */
static void test_restart_adopts(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, NULL), *jobs = json_array();
	kft_cm_opt_plan first, again;
	plan_of(opt, jobs, NOW, &first);
	json_array_append_new(jobs, as_stored(json_array_get(first.create, 0), NULL));
	plan_of(opt, jobs, NOW, &again);
	assert_int_equal(json_array_size(again.create), 1);
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_array_get(again.create, 0), "metadata"), "name")),
	        "tune-2");
	const json_t *t0 = json_array_get(json_object_get(again.status, "trials"), 0);
	const json_t *want = json_object_get(
	        json_array_get(json_object_get(first.status, "trials"), 0), "parameters");
	assert_true(json_equal(json_object_get(t0, "parameters"), (json_t *)want));
	kft_cm_opt_plan_free(&first);
	kft_cm_opt_plan_free(&again);
	json_decref(jobs);
	json_decref(opt);
}

/* Reports from status.trainerStatus fold into min/max/latest; the same
 * report seen again (the informer replays objects) is not counted twice. */
static void test_reports_fold_once(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, NULL), *jobs = json_array();
	kft_cm_opt_plan p, q, r;
	plan_of(opt, jobs, NOW, &p);
	const char *rep = "{\"trainerStatus\": {\"metrics\": [{\"name\": \"loss\", \"value\": "
	                  "\"0.5\"}], \"lastUpdatedTime\": \"2026-03-01T10:00:05Z\"}}";
	json_array_append_new(jobs, as_stored(json_array_get(p.create, 0), rep));
	json_array_append_new(jobs, as_stored(json_array_get(p.create, 1), NULL));
	json_object_set(opt, "status", p.status);
	plan_of(opt, jobs, NOW, &q);
	const json_t *t0 = json_array_get(json_object_get(q.status, "trials"), 0);
	assert_int_equal(json_integer_value(json_object_get(t0, "objectiveReports")), 1);
	json_object_set(opt, "status", q.status);
	plan_of(opt, jobs, NOW, &r);
	assert_null(r.status); /* nothing new: nothing to write */
	kft_cm_opt_plan_free(&p);
	kft_cm_opt_plan_free(&q);
	kft_cm_opt_plan_free(&r);
	json_decref(jobs);
	json_decref(opt);
}

/* An ended TrainJob ends its trial; the third trial starts; when all three
 * have ended the search is Complete (MaxTrialsReached) and result names the
 * best trial with its parameters. */
static void test_to_the_end(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, NULL), *jobs = json_array();
	kft_cm_opt_plan p, q, r;
	plan_of(opt, jobs, NOW, &p);
#define DONE                                                                                       \
	"{\"conditions\": [{\"type\": \"Complete\", \"status\": \"True\"}], \"trainerStatus\": "   \
	"{\"metrics\": [{\"name\": \"loss\", \"value\": \"%s\"}], \"lastUpdatedTime\": "           \
	"\"2026-03-01T10:00:09Z\"}}"
	char buf[512];
	snprintf(buf, sizeof(buf), DONE, "0.4");
	json_array_append_new(jobs, as_stored(json_array_get(p.create, 0), buf));
	snprintf(buf, sizeof(buf), DONE, "0.2");
	json_array_append_new(jobs, as_stored(json_array_get(p.create, 1), buf));
	json_object_set(opt, "status", p.status);
	plan_of(opt, jobs, NOW, &q);
	assert_string_equal(state_of(q.status, 0), "Succeeded");
	assert_int_equal(json_array_size(q.create), 1);
	json_array_append_new(jobs,
	                      as_stored(json_array_get(q.create, 0),
	                                "{\"conditions\": [{\"type\": \"Failed\", \"status\": "
	                                "\"True\", \"message\": \"jobset failed\"}]}"));
	json_object_set(opt, "status", q.status);
	plan_of(opt, jobs, NOW, &r);
	assert_string_equal(state_of(r.status, 2), "Failed");
	const json_t *conds = json_object_get(r.status, "conditions");
	const json_t *last = json_array_get(conds, json_array_size(conds) - 1);
	assert_string_equal(json_string_value(json_object_get(last, "type")), "Complete");
	assert_string_equal(json_string_value(json_object_get(last, "reason")), "MaxTrialsReached");
	const json_t *result = json_object_get(r.status, "result");
	assert_string_equal(json_string_value(json_object_get(result, "trainJobName")), "tune-2");
	assert_int_equal(json_array_size(json_object_get(result, "parameters")), 1);
	assert_int_equal(json_array_size(r.create), 0);
	kft_cm_opt_plan_free(&p);
	kft_cm_opt_plan_free(&q);
	kft_cm_opt_plan_free(&r);
	json_decref(jobs);
	json_decref(opt);
}

/* A trial whose TrainJob is not in the cache yet (just created) waits; one
 * gone long after its creation failed. Median stopping suspends a trial. */
static void test_missing_and_stopped(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, "\"optimizer.kftrainer.dev/max-failed-trials\": \"1\"");
	json_t *jobs = json_array();
	kft_cm_opt_plan p, q, r;
	plan_of(opt, jobs, NOW, &p);
	json_object_set(opt, "status", p.status);
	plan_of(opt, jobs, "2026-03-01T10:00:02Z", &q);
	assert_true(q.requeue_after_ms > 0);
	assert_string_equal(state_of(q.status ? q.status : p.status, 0), "Running");
	json_array_append_new(jobs, as_stored(json_array_get(p.create, 1), NULL));
	plan_of(opt, jobs, LATER, &r);
	assert_string_equal(state_of(r.status, 0), "Failed");
	/* max-failed-trials 1: the search fails, the other trial is stopped */
	assert_string_equal(state_of(r.status, 1), "Killed");
	assert_int_equal(json_array_size(r.stop), 1);
	kft_cm_opt_plan_free(&p);
	kft_cm_opt_plan_free(&q);
	kft_cm_opt_plan_free(&r);
	json_decref(jobs);
	json_decref(opt);
}

/* The median rule on a cluster: a trial that started with a rule and whose
 * best objective at its start_step-th report is worse is suspended and
 * EarlyStopped. */
static void test_median_stop(void **state)
{
	(void)state;
	json_t *opt =
	        optjob("{\"trials\": [{\"name\": \"tune-1\", \"state\": \"Running\", "
	               "\"creationTimestamp\": \"" NOW "\", \"medianStop\": \"0.3\", "
	               "\"parameters\": [{\"name\": \"lr\", \"value\": \"0.5\"}]}]}",
	               "\"optimizer.kftrainer.dev/early-stopping\": \"medianstop\", "
	               "\"optimizer.kftrainer.dev/early-stopping-settings\": \"start_step=1\"");
	json_t *jobs = parse("[{\"metadata\": {\"name\": \"tune-1\", \"namespace\": \"team\"}, "
	                     "\"status\": {\"trainerStatus\": {\"metrics\": [{\"name\": \"loss\", "
	                     "\"value\": \"0.9\"}], \"lastUpdatedTime\": \"" NOW "\"}}}]");
	kft_cm_opt_plan p;
	plan_of(opt, jobs, NOW, &p);
	assert_string_equal(state_of(p.status, 0), "EarlyStopped");
	expect_json(p.stop, "[\"tune-1\"]");
	kft_cm_opt_plan_free(&p);
	json_decref(jobs);
	json_decref(opt);
}

/* A spec the decision cannot read is the caller's to report. */
static void test_bad_spec(void **state)
{
	(void)state;
	json_t *opt = optjob(NULL, "\"optimizer.kftrainer.dev/algorithm\": \"bayes\"");
	json_t *jobs = json_array();
	kft_cm_opt_plan p;
	kft_error err = {0};
	assert_int_equal(kft_cm_optimization_plan(opt, jobs, NOW, 1, &p, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "\"bayes\""));
	json_decref(jobs);
	json_decref(opt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_first_reconcile),
	        cmocka_unit_test(test_restart_adopts),
	        cmocka_unit_test(test_reports_fold_once),
	        cmocka_unit_test(test_to_the_end),
	        cmocka_unit_test(test_missing_and_stopped),
	        cmocka_unit_test(test_median_stop),
	        cmocka_unit_test(test_bad_spec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
