/*
 * test_local_model.c - the JobSet controller's judgements the local engine
 * makes (src/local/jobset_model.c), on hand-built models: no processes.
 *
 * Each case pins a JobSet v0.12 rule: dependsOn Ready/Complete
 * (pkg/controllers/depends_on.go), successPolicy All/Any with
 * targetReplicatedJobs (success_policy.go), startupPolicy InOrder
 * (startup_policy.go), the replicatedJobsStatus counts, and the "first failed
 * job" named in the Failed message (failure_policy.go).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "local/engine.h"
#include "local/local_internal.h"

#define MAXP 8

typedef struct model {
	eng_rjob rj[3];
	eng_job jobs[3][MAXP];
	eng_pod pods[3][MAXP];
	json_t *specs[3];
} model;

/* Replicated job i named `name` with `replicas` Jobs of one pod each;
 * spec_json is its JobSet entry (dependsOn ...). */
static void add(model *m, int i, const char *name, int replicas, const char *spec_json)
{
	json_error_t e;
	m->specs[i] = json_loads(spec_json, 0, &e);
	assert_non_null(m->specs[i]);
	m->rj[i] = (eng_rjob){.name = name,
	                      .spec = m->specs[i],
	                      .replicas = replicas,
	                      .parallelism = 1,
	                      .completions = 1,
	                      .jobs = m->jobs[i],
	                      .pods = m->pods[i]};
}

static void model_free(model *m)
{
	for (int i = 0; i < 3; i++)
		json_decref(m->specs[i]);
}

/* Job r of replicated job i: state, and its one pod's phase. */
static void set(model *m, int i, int r, job_state js, pod_phase ph)
{
	m->rj[i].started = true;
	m->jobs[i][r].state = js;
	m->pods[i][r].phase = ph;
}

static void test_depends_on(void **state)
{
	(void)state;
	model m = {0};
	add(&m, 0, "init", 1, "{}");
	add(&m, 1, "launcher", 1, "{\"dependsOn\":[{\"name\":\"node\",\"status\":\"Ready\"}]}");
	add(&m, 2, "node", 2, "{\"dependsOn\":[{\"name\":\"init\",\"status\":\"Complete\"}]}");
	assert_false(kft_jobset_model_depends_met(m.rj, 3, &m.rj[2]));
	set(&m, 0, 0, JOB_ACTIVE, POD_RUNNING);
	assert_false(kft_jobset_model_depends_met(m.rj, 3, &m.rj[2])); /* running is not Complete */
	set(&m, 0, 0, JOB_SUCCEEDED, POD_SUCCEEDED);
	assert_true(kft_jobset_model_depends_met(m.rj, 3, &m.rj[2]));
	assert_false(kft_jobset_model_depends_met(m.rj, 3, &m.rj[1]));
	set(&m, 2, 0, JOB_ACTIVE, POD_RUNNING);
	assert_false(kft_jobset_model_depends_met(m.rj, 3, &m.rj[1])); /* one of two Jobs ready */
	set(&m, 2, 1, JOB_ACTIVE, POD_PENDING);
	assert_false(kft_jobset_model_depends_met(m.rj, 3, &m.rj[1]));
	set(&m, 2, 1, JOB_SUCCEEDED, POD_SUCCEEDED); /* succeeded counts as ready */
	assert_true(kft_jobset_model_depends_met(m.rj, 3, &m.rj[1]));
	model_free(&m);
}

static void test_success_policy(void **state)
{
	(void)state;
	model m = {0};
	add(&m, 0, "node", 2, "{}");
	add(&m, 1, "launcher", 1, "{}");
	json_t *all = json_loads("{}", 0, NULL);
	json_t *launcher = json_loads("{\"successPolicy\":{\"operator\":\"All\","
	                              "\"targetReplicatedJobs\":[\"launcher\"]}}",
	                              0, NULL);
	json_t *any = json_loads("{\"successPolicy\":{\"operator\":\"Any\"}}", 0, NULL);
	set(&m, 1, 0, JOB_SUCCEEDED, POD_SUCCEEDED);
	assert_false(kft_jobset_model_success(all, m.rj, 2));
	assert_true(kft_jobset_model_success(launcher, m.rj, 2));
	assert_true(kft_jobset_model_success(any, m.rj, 2));
	set(&m, 0, 0, JOB_SUCCEEDED, POD_SUCCEEDED);
	assert_false(kft_jobset_model_success(all, m.rj, 2));
	set(&m, 0, 1, JOB_SUCCEEDED, POD_SUCCEEDED);
	assert_true(kft_jobset_model_success(all, m.rj, 2));
	json_decref(all);
	json_decref(launcher);
	json_decref(any);
	model_free(&m);
}

static void test_in_order(void **state)
{
	(void)state;
	model m = {0};
	add(&m, 0, "a", 1, "{}");
	add(&m, 1, "b", 1, "{}");
	json_t *in_order =
	        json_loads("{\"startupPolicy\":{\"startupPolicyOrder\":\"InOrder\"}}", 0, NULL);
	json_t *any_order = json_loads("{}", 0, NULL);
	assert_true(kft_jobset_model_in_order_met(in_order, m.rj, 0));
	assert_false(kft_jobset_model_in_order_met(in_order, m.rj, 1));
	assert_true(kft_jobset_model_in_order_met(any_order, m.rj, 1));
	set(&m, 0, 0, JOB_ACTIVE, POD_RUNNING);
	assert_true(kft_jobset_model_in_order_met(in_order, m.rj, 1));
	json_decref(in_order);
	json_decref(any_order);
	model_free(&m);
}

static void test_counts_and_first_failed(void **state)
{
	(void)state;
	model m = {0};
	add(&m, 0, "node", 3, "{}");
	set(&m, 0, 0, JOB_SUCCEEDED, POD_SUCCEEDED);
	set(&m, 0, 1, JOB_FAILED, POD_FAILED);
	set(&m, 0, 2, JOB_ACTIVE, POD_RUNNING);
	m.jobs[0][1].failed_at = 2;
	m.pods[0][1].reason = "Error";
	json_t *st = kft_jobset_model_rjobs_status(m.rj, 1, false);
	const json_t *one = json_array_get(st, 0);
	assert_int_equal(json_integer_value(json_object_get(one, "succeeded")), 1);
	assert_int_equal(json_integer_value(json_object_get(one, "failed")), 1);
	assert_int_equal(json_integer_value(json_object_get(one, "active")), 1);
	assert_int_equal(json_integer_value(json_object_get(one, "ready")), 1);
	assert_int_equal(json_integer_value(json_object_get(one, "suspended")), 0);
	json_decref(st);
	st = kft_jobset_model_rjobs_status(m.rj, 1, true);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(st, 0), "suspended")),
	                 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(st, 0), "active")), 0);
	json_decref(st);
	char name[64];
	const eng_pod *pod = NULL;
	const char *rjob = NULL;
	kft_jobset_model_first_failed("job", m.rj, 1, name, sizeof(name), &pod, &rjob);
	assert_string_equal(rjob, "node");
	assert_string_equal(name, "job-node-1");
	assert_ptr_equal(pod, &m.pods[0][1]);
	set(&m, 0, 0, JOB_FAILED, POD_FAILED); /* failed earlier than Job 1 */
	m.jobs[0][0].failed_at = 1;
	kft_jobset_model_first_failed("job", m.rj, 1, name, sizeof(name), &pod, &rjob);
	assert_string_equal(name, "job-node-0");
	assert_null(pod); /* its pod has no failure reason recorded */
	model_free(&m);
}

/* failurePolicy rules (JobSet v0.12 ruleIsApplicable): the first rule whose
 * non-empty lists all match gives the action. */
static void test_failure_rules(void **state)
{
	(void)state;
	json_t *fp = json_loads(
	        "{\"maxRestarts\":3,\"rules\":["
	        "{\"action\":\"FailJobSet\",\"targetReplicatedJobs\":[\"launcher\"]},"
	        "{\"action\":\"RestartJobSetAndIgnoreMaxRestarts\","
	        "\"onJobFailureReasons\":[\"PodFailurePolicy\"]},"
	        "{\"action\":\"RestartJobSet\",\"onJobFailureMessagePatterns\":[\"backoff lim\"]}"
	        "]}",
	        0, NULL);
	assert_non_null(fp);
	const char *backoff = "Job has reached the specified backoff limit";
	assert_string_equal(
	        kft_jobset_model_rule_action(fp, "launcher", "BackoffLimitExceeded", backoff),
	        "FailJobSet");
	assert_string_equal(kft_jobset_model_rule_action(fp, "node", "PodFailurePolicy", "x"),
	                    "RestartJobSetAndIgnoreMaxRestarts");
	assert_string_equal(
	        kft_jobset_model_rule_action(fp, "node", "BackoffLimitExceeded", backoff),
	        "RestartJobSet");
	assert_null(kft_jobset_model_rule_action(fp, "node", "BackoffLimitExceeded", "other"));
	assert_null(kft_jobset_model_rule_action(NULL, "node", "BackoffLimitExceeded", backoff));
	json_decref(fp);
}

/* The pods a replicated job runs: replicas x completions, completions
 * defaulting to the parallelism (batch/v1 Job: "completions ... defaults to
 * parallelism" for a NonIndexed Job; JobSet's replicas default 1). */
static void test_rjob_counts(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		int64_t replicas, parallelism, completions;
	} cases[] = {
	        {"{}", 0, 1, 1, 1},
	        {"{\"replicas\":3,\"template\":{\"spec\":{\"parallelism\":4}}}", 0, 3, 4, 4},
	        {"{\"template\":{\"spec\":{\"parallelism\":2,\"completions\":5}}}", 0, 1, 2, 5},
	        {"{\"replicas\":\"2\",\"template\":{\"spec\":{\"parallelism\":null}}}", 0, 1, 1, 1},
	        {"{\"replicas\":-1}", -1, -1, 1, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *rj = json_loads(cases[i].json, 0, NULL);
		kft_rjob_counts c;
		assert_int_equal(kft_rjob_counts_of(rj, &c), cases[i].rc);
		assert_int_equal(c.replicas, cases[i].replicas);
		assert_int_equal(c.parallelism, cases[i].parallelism);
		assert_int_equal(c.completions, cases[i].completions);
		json_decref(rj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_depends_on),
	        cmocka_unit_test(test_success_policy),
	        cmocka_unit_test(test_in_order),
	        cmocka_unit_test(test_counts_and_first_failed),
	        cmocka_unit_test(test_failure_rules),
	        cmocka_unit_test(test_rjob_counts),
	};
	return cmocka_run_group_tests_name("local_model", tests, NULL, NULL);
}
