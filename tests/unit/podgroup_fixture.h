/*
 * podgroup_fixture.h - what the CoScheduling and Volcano tests share: a
 * backend and RuntimeInfo built by hand, running the plugin's
 * EnforcePodGroupPolicy and ComponentBuilder, and JSON equality that prints
 * both sides. Define PLUGIN_UNDER_TEST (the plugin table) before including
 * it, after <cmocka.h>; the functions are static inline.
 */
#ifndef KFT_TESTS_PODGROUP_FIXTURE_H
#define KFT_TESTS_PODGROUP_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/framework.h"

static inline json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (!v)
		fail_msg("bad test JSON (%s): %s", e.text, text);
	return v;
}

/* A backend whose cluster holds the objects of a JSON array (self), and
 * whose TrainJob UID is metadata.uid. */
static inline json_t *fake_get(void *self, const char *api_version, const char *kind,
                               const char *ns, const char *name)
{
	size_t i;
	json_t *o;
	json_array_foreach((json_t *)self, i, o)
	{
		const json_t *m = json_object_get(o, "metadata");
		const char *ons = json_string_value(json_object_get(m, "namespace"));
		if (strcmp(json_string_value(json_object_get(o, "apiVersion")), api_version) == 0 &&
		    strcmp(json_string_value(json_object_get(o, "kind")), kind) == 0 &&
		    strcmp(json_string_value(json_object_get(m, "name")), name) == 0 &&
		    (!ns || (ons && strcmp(ons, ns) == 0)))
			return json_incref(o);
	}
	return NULL;
}

static inline const char *fake_uid(void *self, const json_t *trainjob)
{
	return json_string_value(json_object_get(json_object_get(trainjob, "metadata"), "uid"));
}

typedef struct fixture {
	json_t *cluster;
	kft_backend backend;
	kft_plugin_ctx ctx;
	json_t *job_obj;
	kft_trainjob job;
	kft_runtime_info *info;
	json_t *objects;
} fixture;

static inline void fixture_init(fixture *f, const char *trainjob, const char *cluster)
{
	memset(f, 0, sizeof(*f));
	f->cluster = parse(cluster ? cluster : "[]");
	f->backend = (kft_backend){.name = "test",
	                           .self = f->cluster,
	                           .pod_address = kft_backend_default()->pod_address,
	                           .service_port = kft_backend_default()->service_port,
	                           .get_object = fake_get,
	                           .trainjob_uid = fake_uid};
	f->ctx = (kft_plugin_ctx){.backend = &f->backend};
	if (trainjob) {
		f->job_obj = parse(trainjob);
		assert_int_equal(kft_trainjob_view(f->job_obj, &f->job, NULL), 0);
	}
	f->info = calloc(1, sizeof(*f->info));
	f->info->labels = json_object();
	f->info->annotations = json_object();
	f->info->scheduler_pod_labels = json_object();
	f->info->scheduler_pod_annotations = json_object();
	f->info->template_spec = json_object();
	f->objects = json_array();
}

static inline void fixture_free(fixture *f)
{
	kft_runtime_info_free(f->info);
	json_decref(f->objects);
	json_decref(f->job_obj);
	json_decref(f->cluster);
}

static inline kft_pod_set *add_pod_set(kft_runtime_info *info, const char *name, int32_t count,
                                       const char *requests)
{
	info->pod_sets = realloc(info->pod_sets, (info->n_pod_sets + 1) * sizeof(kft_pod_set));
	kft_pod_set *ps = &info->pod_sets[info->n_pod_sets++];
	memset(ps, 0, sizeof(*ps));
	ps->name = strdup(name);
	ps->count = count;
	ps->replicas = 1;
	ps->volumes = json_array();
	ps->single_pod_requests = parse(requests ? requests : "{}");
	return ps;
}

static inline const kft_trainjob *job_of(fixture *f)
{
	return f->job_obj ? &f->job : NULL;
}

/* Runs EnforcePodGroupPolicy and then ComponentBuilder, both expected to
 * succeed. info may be NULL (the "nil info" case). */
static inline void run(fixture *f, kft_runtime_info *info)
{
	kft_error err = {0};
	const kft_plugin *p = &PLUGIN_UNDER_TEST;
	if (p->enforce_pod_group_policy(&f->ctx, info, job_of(f), &err) != 0)
		fail_msg("EnforcePodGroupPolicy: %s", err.message);
	if (p->component_builder(&f->ctx, info, job_of(f), f->objects, &err) != 0)
		fail_msg("ComponentBuilder: %s", err.message);
}

static inline void expect_json(const json_t *got, const char *want_text)
{
	json_t *want = parse(want_text);
	if (!json_equal((json_t *)got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_ENCODE_ANY);
		fprintf(stderr, "got:  %s\nwant: %s\n", g, w);
		free(g);
		free(w);
		json_decref(want);
		fail();
	}
	json_decref(want);
}

#endif
