/*
 * backend_fixture.h - what plugin tests that need a cluster share: a backend
 * whose cluster is a JSON array of objects, a TrainJob view and a
 * RuntimeInfo built by hand, with pod sets added to it. Include after <cmocka.h>. The texts given
 * to fixture_init are read with FIXTURE_PARSE (define it before including to read them another way,
 * e.g. as YAML); the default is json_fixture.h's parse. The functions are static inline.
 */
#ifndef KFT_TESTS_BACKEND_FIXTURE_H
#define KFT_TESTS_BACKEND_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "json_fixture.h"
#include "kftrainer/framework.h"

#ifndef FIXTURE_PARSE
#define FIXTURE_PARSE parse
#endif

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
	json_t *runtime; /* optional: what info borrows its policies from */
	json_t *objects;
} fixture;

static inline void fixture_init(fixture *f, const char *trainjob, const char *cluster)
{
	memset(f, 0, sizeof(*f));
	f->cluster = FIXTURE_PARSE(cluster ? cluster : "[]");
	f->backend = (kft_backend){.name = "test",
	                           .self = f->cluster,
	                           .pod_address = kft_backend_default()->pod_address,
	                           .service_port = kft_backend_default()->service_port,
	                           .get_object = fake_get,
	                           .trainjob_uid = fake_uid};
	f->ctx = (kft_plugin_ctx){.backend = &f->backend};
	if (trainjob) {
		f->job_obj = FIXTURE_PARSE(trainjob);
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
	json_decref(f->runtime);
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

#endif
