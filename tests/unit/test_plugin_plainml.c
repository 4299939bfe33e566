/*
 * test_plugin_plainml.c - the PlainML plugin.
 *
 * Ported from upstream Kubeflow Trainer v2.3.0
 * pkg/runtime/framework/plugins/plainml/plainml_test.go, TestPlainML (all 6
 * cases); each test names the case it pins. Cases marked "kftrainer:" pin
 * behaviour upstream has but does not test. JSON is written with ` for ".
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

/* ---- fixtures ------------------------------------------------------------------ */

#include "plugin_fixture.h"

static int enforce(fixture *f)
{
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	return kft_plugin_plainml.enforce_ml_policy(&ctx, f->info, &f->job, NULL);
}

#define JOB(trainer)                                                                               \
	"{`metadata`:{`name`:`test`,`namespace`:`default`},`spec`:{`runtimeRef`:"                  \
	"{`name`:`rt`},`trainer`:" trainer "}}"

/* plainml_test.go: 'no action when info is null' */
static void test_info_null(void **state)
{
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	assert_int_equal(kft_plugin_plainml.enforce_ml_policy(&ctx, NULL, NULL, NULL), 0);
}

/* plainml_test.go: 'no action when mlPolicySource torch is not null',
 * '... mpi is not null', '... jax is not null' */
static void test_framework_owns_trainer(void **state)
{
	const char *policies[] = {"{`torch`:{}}",
	                          ("{`mpi`:{`numProcPerNode`:1,`mpiImplementation`:`OpenMPI`,`"
	                           "runLauncherAsNode`:false}}"),
	                          "{`jax`:{}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		json_object_set_new(f.info->labels, "key", json_string("value"));
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, JOB("{`numNodes`:3,`env`:[{`name`:`A`,`value`:`1`}]}"));
		assert_int_equal(enforce(&f), 0);
		assert_int_equal(f.info->pod_sets[0].count, 1);
		assert_int_equal(json_array_size(c->env), 0);
		assert_json_text(f.info->labels, "{`key`:`value`}");
		fixture_free(&f);
	}
}

/* plainml_test.go: 'trainJob trainer numNodes are respected rather than
 * runtimeInfo' */
static void test_num_nodes(void **state)
{
	fixture f;
	fixture_init(&f, "{}");
	kft_container *c = trainer_node(&f, 100);
	fixture_job(&f, JOB("{`numNodes`:200}"));
	assert_int_equal(enforce(&f), 0);
	assert_int_equal(f.info->pod_sets[0].count, 200);
	assert_int_equal(json_array_size(c->env), 0);
	assert_int_equal(json_array_size(c->ports), 0);
	fixture_free(&f);
}

/* plainml_test.go: 'trainJob trainer env are respected rather than
 * runtimeInfo', and (kftrainer) with a value that differs, in place. */
static void test_env(void **state)
{
	const char *runtime_env[] = {"[{`name`:`CONFLICT`,`value`:`FROM_TRAINER`}]",
	                             "[{`name`:`CONFLICT`,`value`:`FROM_RUNTIME`},"
	                             "{`name`:`KEEP`,`value`:`k`}]"};
	const char *want[] = {
	        "[{`name`:`CONFLICT`,`value`:`FROM_TRAINER`}]",
	        "[{`name`:`CONFLICT`,`value`:`FROM_TRAINER`},{`name`:`KEEP`,`value`:`k`},"
	        "{`name`:`NEW`,`value`:`n`}]"};
	const char *jobs[] = {
	        JOB("{`numNodes`:1,`env`:[{`name`:`CONFLICT`,`value`:`FROM_TRAINER`}]}"),
	        JOB("{`numNodes`:1,`env`:[{`name`:`CONFLICT`,`value`:`FROM_TRAINER`},"
	            "{`name`:`NEW`,`value`:`n`}]}")};
	for (size_t i = 0; i < 2; i++) {
		fixture f;
		fixture_init(&f, "{}");
		kft_container *c = trainer_node(&f, 100);
		json_decref(c->env);
		c->env = J(runtime_env[i]);
		fixture_job(&f, jobs[i]);
		assert_int_equal(enforce(&f), 0);
		assert_int_equal(f.info->pod_sets[0].count, 1);
		assert_json_text(c->env, want[i]);
		fixture_free(&f);
	}
}

/* kftrainer: a runtime without mlPolicy, and xgboost and flux runtimes, are
 * plain too (upstream excludes only torch, mpi and jax). */
static void test_plain_runtimes(void **state)
{
	const char *policies[] = {NULL, "{`xgboost`:{}}", "{`flux`:{`numProcPerNode`:1}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, JOB("{`numNodes`:4,`env`:[{`name`:`A`,`value`:`1`}]}"));
		assert_int_equal(enforce(&f), 0);
		assert_int_equal(f.info->pod_sets[0].count, 4);
		assert_json_text(c->env, "[{`name`:`A`,`value`:`1`}]");
		fixture_free(&f);
	}
}

/* kftrainer: no trainer section changes nothing; no trainer pod set is no
 * error. */
static void test_no_trainer(void **state)
{
	fixture f;
	fixture_init(&f, "{}");
	kft_container *c = trainer_node(&f, 2);
	f.job_obj = J("{`metadata`:{`name`:`test`},`spec`:{`runtimeRef`:{`name`:`rt`}}}");
	assert_int_equal(kft_trainjob_view(f.job_obj, &f.job, NULL), 0);
	assert_int_equal(enforce(&f), 0);
	assert_int_equal(f.info->pod_sets[0].count, 2);
	assert_int_equal(json_array_size(c->env), 0);
	fixture_free(&f);

	fixture_init(&f, "{}");
	add_container(add_pod_set(&f, "worker", NULL, 2), 0, "node");
	fixture_job(&f, JOB("{`numNodes`:4,`env`:[{`name`:`A`,`value`:`1`}]}"));
	assert_int_equal(enforce(&f), 0);
	assert_int_equal(f.info->pod_sets[0].count, 2);
	assert_int_equal(json_array_size(f.info->pod_sets[0].containers[0].env), 0);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_info_null),
	        cmocka_unit_test(test_framework_owns_trainer),
	        cmocka_unit_test(test_num_nodes),
	        cmocka_unit_test(test_env),
	        cmocka_unit_test(test_plain_runtimes),
	        cmocka_unit_test(test_no_trainer),
	};
	return cmocka_run_group_tests_name("plugin_plainml", tests, NULL, NULL);
}
