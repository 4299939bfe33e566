/*
 * test_plugin_xgboost.c - the XGBoost plugin.
 *
 * Ported from upstream Kubeflow Trainer v2.3.0
 * pkg/runtime/framework/plugins/xgboost/xgboost_test.go:
 *   TestXGBoostValidate (all 7 cases)        -> validate_cases[]
 *   TestXGBoostEnforceMLPolicy (all 12 cases) -> test_* and enforce_cases[]
 * Each test names the case it pins; "kftrainer:" cases pin what upstream
 * lacks (the tracker from the backend, bounds). JSON is written with ` for ".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/framework.h"
#include "plugins/builtin.h"

#define RANK_PATH "metadata.annotations['batch.kubernetes.io/job-completion-index']"

/* ---- fixtures ------------------------------------------------------------------ */

#include "plugin_fixture.h"

static int enforce(fixture *f, const kft_backend *be, kft_error *err)
{
	kft_plugin_ctx ctx = {.backend = be ? be : kft_backend_default()};
	return kft_plugin_xgboost.enforce_ml_policy(&ctx, f->info, &f->job, err);
}

#define JOB(name, trainer)                                                                         \
	"{`metadata`:{`name`:`" name "`,`namespace`:`default`},`spec`:{`runtimeRef`:"              \
	"{`name`:`xgboost-distributed`},`trainer`:" trainer "}}"
#define JOB_NO_TRAINER(name)                                                                       \
	"{`metadata`:{`name`:`" name "`,`namespace`:`default`},`spec`:{`runtimeRef`:"              \
	"{`name`:`xgboost-distributed`}}}"
#define XGB "{`xgboost`:{}}"

static void assert_dmlc_env(const kft_container *c, const char *uri, const char *port,
                            const char *workers)
{
	json_t *want =
	        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:{s:{s:s}}},{s:s,s:s}]", "name",
	                  "DMLC_TRACKER_URI", "value", uri, "name", "DMLC_TRACKER_PORT", "value",
	                  port, "name", "DMLC_TASK_ID", "valueFrom", "fieldRef", "fieldPath",
	                  RANK_PATH, "name", "DMLC_NUM_WORKER", "value", workers);
	assert_json(c->env, want);
	json_decref(want);
}

/* ---- CustomValidation --------------------------------------------------------------- */

typedef struct validate_case {
	const char *pins;
	const char *policy; /* "nil": no RuntimeInfo */
	const char *job;
	const char *want; /* formatted errors joined by newlines */
} validate_case;

static const validate_case validate_cases[] = {
        {"xgboost_test.go: 'no error when runtimeInfo is nil'", "nil",
         JOB("test-job",
             "{`numNodes`:1,`env`:[{`name`:`DMLC_TRACKER_URI`,`value`:`custom-tracker`}]}"),
         ""},
        {"xgboost_test.go: 'no error when runtime is not XGBoost (e.g. Torch)'", "{`torch`:{}}",
         JOB("test-job",
             "{`numNodes`:1,`env`:[{`name`:`DMLC_TRACKER_URI`,`value`:`custom-tracker`}]}"),
         ""},
        {"xgboost_test.go: 'no error when trainer is nil'", XGB, JOB_NO_TRAINER("test-job"), ""},
        {"xgboost_test.go: 'no error when env does not contain reserved names'", XGB,
         JOB("test-job", "{`numNodes`:1}"), ""},
        {"xgboost_test.go: 'error when using reserved DMLC_TRACKER_URI env'", XGB,
         JOB("test-job",
             "{`numNodes`:1,`env`:[{`name`:`DMLC_TRACKER_URI`,`value`:`custom-tracker`}]}"),
         "spec.trainer.env[0]: Forbidden: DMLC_TRACKER_URI is reserved for the XGBoost runtime"},
        {"xgboost_test.go: 'error when using reserved DMLC_NUM_WORKER env'", XGB,
         JOB("test-job", "{`numNodes`:1,`env`:[{`name`:`DMLC_NUM_WORKER`,`value`:`10`}]}"),
         "spec.trainer.env[0]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime"},
        {"xgboost_test.go: 'multiple errors when using multiple reserved envs'", XGB,
         JOB("test-job", "{`numNodes`:1,`env`:[{`name`:`DMLC_TRACKER_URI`,`value`:`custom`},"
                         "{`name`:`DMLC_TASK_ID`,`value`:`0`}]}"),
         "spec.trainer.env[0]: Forbidden: DMLC_TRACKER_URI is reserved for the XGBoost runtime\n"
         "spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime"},
        {"kftrainer: all four names, at their own index", XGB,
         JOB("test-job",
             "{`env`:[{`name`:`OK`},{`name`:`DMLC_TRACKER_PORT`},"
             "{`name`:`DMLC_TASK_ID`},{`name`:`DMLC_NUM_WORKER`},{`name`:`DMLC_TRACKER_URI`}]}"),
         "spec.trainer.env[1]: Forbidden: DMLC_TRACKER_PORT is reserved for the XGBoost runtime\n"
         "spec.trainer.env[2]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime\n"
         "spec.trainer.env[3]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime\n"
         "spec.trainer.env[4]: Forbidden: DMLC_TRACKER_URI is reserved for the XGBoost runtime"},
};

static void run_validate_case(void **state)
{
	const validate_case *tc = *state;
	int nil = strcmp(tc->policy, "nil") == 0;
	fixture f;
	kft_field_errors errs;
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	fixture_init(&f, nil ? NULL : tc->policy);
	json_t *job = J(tc->job);
	kft_field_errors_init(&errs);
	kft_plugin_xgboost.custom_validation(&ctx, nil ? NULL : f.info, NULL, job, &errs);
	char got[2048] = "";
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		assert_non_null(line);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "\n" : "", line);
		free(line);
	}
	assert_string_equal(got, tc->want);
	kft_field_errors_free(&errs);
	json_decref(job);
	fixture_free(&f);
}

/* ---- EnforceMLPolicy ------------------------------------------------------------------- */

/* xgboost_test.go: 'no action when info is nil' */
static void test_info_nil(void **state)
{
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	assert_int_equal(kft_plugin_xgboost.enforce_ml_policy(&ctx, NULL, NULL, NULL), 0);
}

/* xgboost_test.go: 'no action when mlPolicySource is nil' and
 * 'no action when mlPolicySource XGBoost is null' */
static void test_no_policy(void **state)
{
	const char *policies[] = {NULL, "{}", "{`jax`:{}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, JOB("test-job", "{`numNodes`:3}"));
		assert_int_equal(enforce(&f, NULL, NULL), 0);
		assert_int_equal(f.info->pod_sets[0].count, 1);
		assert_int_equal(json_array_size(c->env), 0);
		fixture_free(&f);
	}
}

/* xgboost_test.go: 'no env injection when trainJob.Spec.Trainer is nil' */
static void test_trainer_nil(void **state)
{
	fixture f;
	fixture_init(&f, XGB);
	kft_container *c = trainer_node(&f, 1);
	fixture_job(&f, JOB_NO_TRAINER("test-job"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(f.info->pod_sets[0].count, 1);
	assert_int_equal(json_array_size(c->env), 0);
	assert_int_equal(json_array_size(c->ports), 0);
	fixture_free(&f);
}

#define RUNTIME_GPUS(n)                                                                            \
	"{`replicatedJobs`:[{`name`:`node`,`template`:{`spec`:{`template`:{`spec`:{`containers`:"  \
	"[{`name`:`node`,`resources`:{`requests`:{`example.com/gpu`:`" n "`}}}]}}}}}]}"

typedef struct enforce_case {
	const char *pins;
	int count;
	const char *template_spec; /* NULL: empty */
	const char *job;
	int want_count;
	const char *uri, *workers;
} enforce_case;

static const enforce_case enforce_cases[] = {
        {"xgboost_test.go: 'single node XGBoost training (CPU)'", 1, NULL,
         JOB("test-job", "{`numNodes`:1}"), 1, "test-job-node-0-0.test-job", "1"},
        {"xgboost_test.go: 'multi-node XGBoost training (CPU)'", 2, NULL,
         JOB("multi-node-job", "{`numNodes`:4}"), 4, "multi-node-job-node-0-0.multi-node-job", "4"},
        {"xgboost_test.go: 'XGBoost training with GPU resources'", 1, NULL,
         JOB("gpu-job", "{`numNodes`:2,`image`:`xgboost/xgboost:latest`,`resourcesPerNode`:"
                        "{`requests`:{`cpu`:`8`,`memory`:`32Gi`,`example.com/gpu`:`4`}}}"),
         2, "gpu-job-node-0-0.gpu-job", "8"},
        {"xgboost_test.go: 'trainJob numNodes is respected'", 1, NULL,
         JOB("trainJob", "{`numNodes`:3}"), 3, "trainJob-node-0-0.trainJob", "3"},
        {"xgboost_test.go: 'resources not set - defaults to 1 worker per node'", 2, NULL,
         JOB("no-res-job", "{`numNodes`:2}"), 2, "no-res-job-node-0-0.no-res-job", "2"},
        {"xgboost_test.go: 'resources set in Runtime only'", 1, RUNTIME_GPUS("2"),
         JOB("runtime-res-job", "{`numNodes`:3}"), 3, "runtime-res-job-node-0-0.runtime-res-job",
         "6"},
        {"xgboost_test.go: 'resources set in TrainJob only'", 1, NULL,
         JOB("trainjob-res", "{`numNodes`:2,`image`:`xgboost/xgboost:latest`,"
                             "`resourcesPerNode`:{`requests`:{`example.com/gpu`:`4`}}}"),
         2, "trainjob-res-node-0-0.trainjob-res", "8"},
        {"xgboost_test.go: 'resources set in both Runtime and TrainJob'", 1, RUNTIME_GPUS("1"),
         JOB("both-res-job", "{`numNodes`:2,`image`:`xgboost/xgboost:latest`,"
                             "`resourcesPerNode`:{`requests`:{`example.com/gpu`:`3`}}}"),
         2, "both-res-job-node-0-0.both-res-job", "6"},
        {"kftrainer: GPUs in limits count when requests name none", 2, NULL,
         JOB("lim", "{`resourcesPerNode`:{`limits`:{`nvidia.com/gpu`:`2`},"
                    "`requests`:{`cpu`:`1`}}}"),
         2, "lim-node-0-0.lim", "4"},
};

static void run_enforce_case(void **state)
{
	const enforce_case *tc = *state;
	fixture f;
	fixture_init(&f, XGB);
	if (tc->template_spec) {
		json_decref(f.info->template_spec);
		f.info->template_spec = J(tc->template_spec);
	}
	kft_container *c = trainer_node(&f, tc->count);
	fixture_job(&f, tc->job);
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(f.info->pod_sets[0].count, tc->want_count);
	assert_dmlc_env(c, tc->uri, "29500", tc->workers);
	assert_json_text(c->ports, "[{`containerPort`:29500}]");
	if (tc->template_spec) /* the runtime's resources are read, not changed */
		assert_json_text(f.info->template_spec, tc->template_spec);
	fixture_free(&f);
}

static int local_address(void *self, const char *job, const char *rjob, int replica, int pod,
                         const char *subdomain, char *buf, size_t size)
{
	assert_string_equal(rjob, "trainers");
	assert_string_equal(subdomain, job);
	return snprintf(buf, size, "127.0.0.1") < 0;
}

static int local_port(void *self, const char *job, const char *service, int dflt)
{
	assert_string_equal(service, "xgboost");
	return 42000;
}

/* kftrainer: the tracker is the backend's first trainer pod and "xgboost"
 * port. */
static void test_backend(void **state)
{
	kft_backend be = {.pod_address = local_address, .service_port = local_port};
	fixture f;
	fixture_init(&f, XGB);
	kft_container *c = add_container(add_pod_set(&f, "trainers", "trainer", 3), 0, "node");
	fixture_job(&f, JOB("loc", "{}"));
	assert_int_equal(enforce(&f, &be, NULL), 0);
	assert_dmlc_env(c, "127.0.0.1", "42000", "3");
	assert_json_text(c->ports, "[{`containerPort`:42000}]");
	fixture_free(&f);
}

/* kftrainer: an absurd GPU count or an unreadable quantity is an error. */
static void test_bad_resources(void **state)
{
	const char *jobs[] = {JOB("j", "{`resourcesPerNode`:{`requests`:{`x/gpu`:`1e12`}}}"),
	                      JOB("j", "{`resourcesPerNode`:{`requests`:{`x/gpu`:`lots`}}}")};
	for (size_t i = 0; i < 2; i++) {
		fixture f;
		kft_error err = {0};
		fixture_init(&f, XGB);
		trainer_node(&f, 1);
		fixture_job(&f, jobs[i]);
		assert_int_equal(enforce(&f, NULL, &err), KFT_EINVAL);
		assert_non_null(strstr(err.message, "trainer resources"));
		fixture_free(&f);
	}
}

#define N_ENFORCE  (sizeof(enforce_cases) / sizeof(*enforce_cases))
#define N_VALIDATE (sizeof(validate_cases) / sizeof(*validate_cases))

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	        cmocka_unit_test(test_info_nil),      cmocka_unit_test(test_no_policy),
	        cmocka_unit_test(test_trainer_nil),   cmocka_unit_test(test_backend),
	        cmocka_unit_test(test_bad_resources),
	};
	size_t n = 0;
	struct CMUnitTest tests[sizeof(fixed) / sizeof(*fixed) + N_ENFORCE + N_VALIDATE];
	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		tests[n++] = fixed[i];
	for (size_t i = 0; i < N_ENFORCE; i++)
		tests[n++] = (struct CMUnitTest){.name = enforce_cases[i].pins,
		                                 .test_func = run_enforce_case,
		                                 .initial_state = (void *)&enforce_cases[i]};
	for (size_t i = 0; i < N_VALIDATE; i++)
		tests[n++] = (struct CMUnitTest){.name = validate_cases[i].pins,
		                                 .test_func = run_validate_case,
		                                 .initial_state = (void *)&validate_cases[i]};
	return _cmocka_run_group_tests("plugin_xgboost", tests, n, NULL, NULL);
}
