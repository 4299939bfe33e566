/*
 * plugin_fixture.h - what the ML-policy plugin tests share: JSON written
 * with ` for ", JSON equality asserts that print both sides, and a
 * hand-built RuntimeInfo with pod sets and containers, so each test states
 * only the runtime shape and the TrainJob its upstream case uses. Include
 * after <cmocka.h>; the functions are static inline so a test may use any
 * subset of them.
 */
#ifndef KFT_TESTS_PLUGIN_FIXTURE_H
#define KFT_TESTS_PLUGIN_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "kftrainer/framework.h"

static inline json_t *J(const char *text)
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

static inline void assert_json(const json_t *got, const json_t *want)
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

static inline void assert_json_text(const json_t *got, const char *want)
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

static inline void fixture_init(fixture *f, const char *policy)
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

static inline void fixture_job(fixture *f, const char *job)
{
	f->job_obj = J(job);
	assert_int_equal(kft_trainjob_view(f->job_obj, &f->job, NULL), 0);
}

static inline void fixture_free(fixture *f)
{
	kft_runtime_info_free(f->info);
	json_decref(f->policy);
	json_decref(f->job_obj);
}

static inline kft_pod_set *add_pod_set(fixture *f, const char *name, const char *ancestor,
                                       int count)
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

static inline kft_container *add_container(kft_pod_set *ps, int init, const char *name)
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
static inline kft_container *trainer_node(fixture *f, int count)
{
	return add_container(add_pod_set(f, "node", "trainer", count), 0, "node");
}

#endif
