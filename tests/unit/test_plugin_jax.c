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

static json_t *J(const char *text)
{
	char *s = strdup(text);
	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '`')
			*p = '"';
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	free(s);
	return v;
}

static void assert_json(const json_t *got, const json_t *want)
{
	if (json_equal((json_t *)got, (json_t *)want))
		return;
	char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
	char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
	print_error("want %s\n got %s\n", w, g);
	free(g);
	free(w);
	fail();
}

static void assert_json_text(const json_t *got, const char *want)
{
	json_t *w = J(want);
	assert_json(got, w);
	json_decref(w);
}

/* An empty RuntimeInfo with the given spec.mlPolicy (owned by the fixture). */
typedef struct fixture {
	kft_runtime_info *info;
	json_t *policy;
	json_t *job_obj;
	kft_trainjob job;
} fixture;

static void fixture_init(fixture *f, const char *policy)
{
	memset(f, 0, sizeof(*f));
	f->policy = policy ? J(policy) : NULL;
	f->info = calloc(1, sizeof(*f->info));
	assert_non_null(f->info);
	f->info->labels = json_object();
	f->info->annotations = json_object();
	f->info->scheduler_pod_labels = json_object();
	f->info->scheduler_pod_annotations = json_object();
	f->info->template_spec = json_object();
	f->info->ml_policy = f->policy;
}

static void fixture_job(fixture *f, const char *job)
{
	f->job_obj = J(job);
	assert_int_equal(kft_trainjob_view(f->job_obj, &f->job, NULL), 0);
}

static void fixture_free(fixture *f)
{
	kft_runtime_info_free(f->info);
	json_decref(f->policy);
	json_decref(f->job_obj);
}

static kft_pod_set *add_pod_set(fixture *f, const char *name, const char *ancestor, int count)
{
	kft_runtime_info *info = f->info;
	info->pod_sets = realloc(info->pod_sets, (info->n_pod_sets + 1) * sizeof(*info->pod_sets));
	assert_non_null(info->pod_sets);
	kft_pod_set *ps = &info->pod_sets[info->n_pod_sets++];
	memset(ps, 0, sizeof(*ps));
	ps->name = strdup(name);
	ps->ancestor = ancestor ? strdup(ancestor) : NULL;
	ps->count = count;
	ps->replicas = 1;
	ps->volumes = json_array();
	ps->single_pod_requests = json_object();
	return ps;
}

static kft_container *add_container(kft_pod_set *ps, int init, const char *name)
{
	kft_container **list = init ? &ps->init_containers : &ps->containers;
	size_t *n = init ? &ps->n_init_containers : &ps->n_containers;
	*list = realloc(*list, (*n + 1) * sizeof(**list));
	assert_non_null(*list);
	kft_container *c = &(*list)[(*n)++];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	c->command = json_array();
	c->env = json_array();
	c->ports = json_array();
	c->volume_mounts = json_array();
	return c;
}

/* The usual runtime: one trainer replicated job `node` with a `node`
 * container. */
static kft_container *trainer_node(fixture *f, int count)
{
	return add_container(add_pod_set(f, "node", "trainer", count), 0, "node");
}

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
