/*
 * mlpolicy_fixture.h - what the MPI and Flux tests share: a backend whose
 * cluster is a JSON array of objects, a TrainJob named FIXTURE_JOB_NAME with
 * uid FIXTURE_JOB_UID (each test file defines both, as its upstream test
 * names them), and a hand-built RuntimeInfo with room for MAX_POD_SETS pod
 * sets. Include after <cmocka.h>; the functions are static inline.
 */
#ifndef KFT_TESTS_MLPOLICY_FIXTURE_H
#define KFT_TESTS_MLPOLICY_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "kftrainer/framework.h"
#include "json_fixture.h"

/* The cluster is a JSON array of objects (self); the UID is metadata.uid. */
static inline json_t *fake_get(void *self, const char *api_version, const char *kind,
                               const char *ns, const char *name)
{
	size_t i;
	json_t *o;
	json_array_foreach((json_t *)self, i, o)
	{
		const json_t *m = json_object_get(o, "metadata");
		if (strcmp(json_string_value(json_object_get(o, "apiVersion")), api_version) == 0 &&
		    strcmp(json_string_value(json_object_get(o, "kind")), kind) == 0 &&
		    strcmp(json_string_value(json_object_get(m, "name")), name) == 0 &&
		    strcmp(json_string_value(json_object_get(m, "namespace")), ns) == 0)
			return json_incref(o);
	}
	return NULL;
}

static inline const char *fake_uid(void *self, const json_t *trainjob)
{
	return json_string_value(json_object_get(json_object_get(trainjob, "metadata"), "uid"));
}

#define MAX_POD_SETS 4

typedef struct fixture {
	json_t *cluster;
	kft_backend backend;
	kft_plugin_ctx ctx;
	json_t *job_obj;
	kft_trainjob job;
	json_t *ml_policy;
	kft_runtime_info *info;
	json_t *objects;
} fixture;

/* A TrainJob FIXTURE_JOB_NAME (uid FIXTURE_JOB_UID) with trainer as its
 * spec.trainer JSON (or none), a runtime spec.mlPolicy (or none), and the
 * cluster's objects (a JSON array, or NULL for none). */
static inline void fixture_init(fixture *f, const char *trainer, const char *policy,
                                const char *cluster)
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
	f->job_obj = parse("{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": "
	                   "\"TrainJob\", \"metadata\": {\"name\": \"" FIXTURE_JOB_NAME "\", "
	                   "\"namespace\": \"default\", \"uid\": \"" FIXTURE_JOB_UID "\"}, "
	                   "\"spec\": {}}");
	if (trainer)
		json_object_set_new(json_object_get(f->job_obj, "spec"), "trainer", parse(trainer));
	assert_int_equal(kft_trainjob_view(f->job_obj, &f->job, NULL), 0);
	f->ml_policy = policy ? parse(policy) : NULL;
	f->info = calloc(1, sizeof(*f->info));
	f->info->labels = json_object();
	f->info->annotations = json_object();
	f->info->scheduler_pod_labels = json_object();
	f->info->scheduler_pod_annotations = json_object();
	f->info->template_spec = parse("{\"replicatedJobs\": []}");
	f->info->ml_policy = f->ml_policy;
	f->info->pod_sets = calloc(MAX_POD_SETS, sizeof(kft_pod_set));
	f->objects = json_array();
}

static inline void fixture_free(fixture *f)
{
	kft_runtime_info_free(f->info);
	json_decref(f->objects);
	json_decref(f->job_obj);
	json_decref(f->ml_policy);
	json_decref(f->cluster);
}

#endif
