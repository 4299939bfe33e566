/*
 * test_plugin_jax.c - the JAX plugin.
 *
 * Ported from upstream Kubeflow Trainer v2.3.0
 * pkg/runtime/framework/plugins/jax/jax_test.go, TestJAXEnforceMLPolicy (all
 * 8 cases); each test names the case it pins. Cases marked "kftrainer:" pin
 * what upstream lacks: the coordinator comes from the backend. JSON is
 * written with ` for ".
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

static int enforce(fixture *f, const kft_backend *be)
{
	kft_plugin_ctx ctx = {.backend = be ? be : kft_backend_default()};
	return kft_plugin_jax.enforce_ml_policy(&ctx, f->info, &f->job, NULL);
}

#define JOB(name, trainer)                                                                         \
	"{`metadata`:{`name`:`" name "`,`namespace`:`default`},`spec`:{`runtimeRef`:"              \
	"{`name`:`jax-distributed`},`trainer`:" trainer "}}"
#define JAX "{`jax`:{}}"

static void assert_jax_env(const kft_container *c, const char *n, const char *coordinator)
{
	json_t *want = json_pack("[{s:s,s:s},{s:s,s:{s:{s:s}}},{s:s,s:s}]", "name",
	                         "JAX_NUM_PROCESSES", "value", n, "name", "JAX_PROCESS_ID",
	                         "valueFrom", "fieldRef", "fieldPath", RANK_PATH, "name",
	                         "JAX_COORDINATOR_ADDRESS", "value", coordinator);
	assert_json(c->env, want);
	json_decref(want);
}

/* jax_test.go: 'no action when info is nil' */
static void test_info_nil(void **state)
{
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	assert_int_equal(kft_plugin_jax.enforce_ml_policy(&ctx, NULL, NULL, NULL), 0);
}

/* jax_test.go: 'no action when mlPolicySource is nil' and
 * 'no action when mlPolicySource JAX is null' */
static void test_no_jax_policy(void **state)
{
	const char *policies[] = {NULL, "{}", "{`torch`:{}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, JOB("test-job", "{`numNodes`:2}"));
		assert_int_equal(enforce(&f, NULL), 0);
		assert_int_equal(f.info->pod_sets[0].count, 1);
		assert_int_equal(json_array_size(c->env), 0);
		assert_int_equal(json_array_size(c->ports), 0);
		fixture_free(&f);
	}
}

/* jax_test.go: 'no panic when JAX policy is set but trainer PodSet is absent' */
static void test_no_trainer_pod_set(void **state)
{
	fixture f;
	fixture_init(&f, JAX);
	fixture_job(&f, JOB("test-job", "{`numNodes`:2}"));
	assert_int_equal(enforce(&f, NULL), 0);
	assert_int_equal(f.info->n_pod_sets, 0);
	fixture_free(&f);
}

typedef struct jax_case {
	const char *pins;
	int count;
	const char *job;
	int want_count;
	const char *n, *coordinator;
} jax_case;

static const jax_case cases[] = {
        {"jax_test.go: 'single node JAX training'", 1, JOB("test-job", "{`numNodes`:1}"), 1, "1",
         "test-job-node-0-0.test-job:29500"},
        {"jax_test.go: 'multi-node JAX training'", 2, JOB("multi-node-job", "{`numNodes`:4}"), 4,
         "4", "multi-node-job-node-0-0.multi-node-job:29500"},
        {"jax_test.go: 'trainJob numNodes is respected'", 1, JOB("trainJob", "{`numNodes`:3}"), 3,
         "3", "trainJob-node-0-0.trainJob:29500"},
        {"jax_test.go: 'JAX training with GPU resources'", 1,
         JOB("gpu-job", "{`numNodes`:2,`image`:`jax/jax:latest`,`resourcesPerNode`:{`requests`:"
                        "{`cpu`:`8`,`memory`:`32Gi`,`nvidia.com/gpu`:`4`}}}"),
         2, "2", "gpu-job-node-0-0.gpu-job:29500"},
        {"kftrainer: without numNodes the runtime's count stays", 3, JOB("j", "{}"), 3, "3",
         "j-node-0-0.j:29500"},
};

static void run_case(void **state)
{
	const jax_case *tc = *state;
	fixture f;
	fixture_init(&f, JAX);
	json_object_set_new(f.info->labels, "app", json_string("jax-training"));
	kft_container *c = trainer_node(&f, tc->count);
	fixture_job(&f, tc->job);
	assert_int_equal(enforce(&f, NULL), 0);
	assert_int_equal(f.info->pod_sets[0].count, tc->want_count);
	assert_jax_env(c, tc->n, tc->coordinator);
	assert_json_text(c->ports, "[{`containerPort`:29500}]");
	assert_json_text(f.info->labels, "{`app`:`jax-training`}");
	fixture_free(&f);
}

/* kftrainer: no trainer section, no env (upstream needs spec.trainer). */
static void test_no_trainer_section(void **state)
{
	fixture f;
	fixture_init(&f, JAX);
	kft_container *c = trainer_node(&f, 2);
	f.job_obj = J("{`metadata`:{`name`:`j`},`spec`:{`runtimeRef`:{`name`:`rt`}}}");
	assert_int_equal(kft_trainjob_view(f.job_obj, &f.job, NULL), 0);
	assert_int_equal(enforce(&f, NULL), 0);
	assert_int_equal(json_array_size(c->env), 0);
	fixture_free(&f);
}

static int local_address(void *self, const char *job, const char *rjob, int replica, int pod,
                         const char *subdomain, char *buf, size_t size)
{
	assert_string_equal(rjob, "workers");
	assert_string_equal(subdomain, "net");
	return snprintf(buf, size, "127.0.0.1") < 0;
}

static int local_port(void *self, const char *job, const char *service, int dflt)
{
	assert_string_equal(service, "jax");
	assert_int_equal(dflt, 29500);
	return 41000;
}

/* kftrainer: the coordinator is the backend's address and "jax" port for
 * the trainer pod set (by its name) in the JobSet's network subdomain. */
static void test_backend(void **state)
{
	kft_backend be = {.name = "test", .pod_address = local_address, .service_port = local_port};
	fixture f;
	fixture_init(&f, JAX);
	json_decref(f.info->template_spec);
	f.info->template_spec = J("{`network`:{`subdomain`:`net`}}");
	kft_container *c = add_container(add_pod_set(&f, "workers", "trainer", 2), 0, "node");
	fixture_job(&f, JOB("j", "{}"));
	assert_int_equal(enforce(&f, &be), 0);
	assert_jax_env(c, "2", "127.0.0.1:41000");
	assert_json_text(c->ports, "[{`containerPort`:41000}]");
	fixture_free(&f);
}

#define N_CASES (sizeof(cases) / sizeof(*cases))

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	        cmocka_unit_test(test_info_nil),
	        cmocka_unit_test(test_no_jax_policy),
	        cmocka_unit_test(test_no_trainer_pod_set),
	        cmocka_unit_test(test_no_trainer_section),
	        cmocka_unit_test(test_backend),
	};
	size_t n = 0;
	struct CMUnitTest tests[sizeof(fixed) / sizeof(*fixed) + N_CASES];
	for (size_t i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
		tests[n++] = fixed[i];
	for (size_t i = 0; i < N_CASES; i++)
		tests[n++] = (struct CMUnitTest){.name = cases[i].pins,
		                                 .test_func = run_case,
		                                 .initial_state = (void *)&cases[i]};
	return _cmocka_run_group_tests("plugin_jax", tests, n, NULL, NULL);
}
