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
