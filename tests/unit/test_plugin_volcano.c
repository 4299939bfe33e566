/*
 * test_plugin_volcano.c - the Volcano plugin (src/plugins/volcano.c).
 *
 * Cases named "volcano_test.go: ..." port upstream v2.3.0's
 * pkg/runtime/framework/plugins/volcano/volcano_test.go (TestVolcano,
 * TestValidate): the same inputs and the objects and field errors upstream
 * expects. Cases marked "ours" pin behaviour upstream has but does not
 * test, or our documented choices.
 *
 * Not ported: "Error when getting existing PodGroup" - a backend's
 * get_object answers "exists" or "does not exist", it cannot fail.
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
#include "kftrainer/validation.h"
#include "plugins/builtin.h"

/* ---- fixtures ------------------------------------------------------------- */

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (!v)
		fail_msg("bad test JSON (%s): %s", e.text, text);
	return v;
}

/* A backend whose cluster holds the objects of a JSON array (self), and
 * whose TrainJob UID is metadata.uid. */
static json_t *fake_get(void *self, const char *api_version, const char *kind, const char *ns,
                        const char *name)
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

static const char *fake_uid(void *self, const json_t *trainjob)
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

static void fixture_init(fixture *f, const char *trainjob, const char *cluster)
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

static void fixture_free(fixture *f)
{
	kft_runtime_info_free(f->info);
	json_decref(f->objects);
	json_decref(f->job_obj);
	json_decref(f->cluster);
}

static kft_pod_set *add_pod_set(kft_runtime_info *info, const char *name, int32_t count,
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

static const kft_trainjob *job_of(fixture *f)
{
	return f->job_obj ? &f->job : NULL;
}

/* Runs EnforcePodGroupPolicy and then ComponentBuilder, both expected to
 * succeed. info may be NULL (the "nil info" case). */
static void run(fixture *f, kft_runtime_info *info)
{
	kft_error err = {0};
	const kft_plugin *p = &kft_plugin_volcano;
	if (p->enforce_pod_group_policy(&f->ctx, info, job_of(f), &err) != 0)
		fail_msg("EnforcePodGroupPolicy: %s", err.message);
	if (p->component_builder(&f->ctx, info, job_of(f), f->objects, &err) != 0)
		fail_msg("ComponentBuilder: %s", err.message);
}

static void expect_json(const json_t *got, const char *want_text)
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

/* The JobSet template of upstream's createBaseInfo: one replicated job,
 * "launcher", whose pods ask for priority class high-priority. */
#define BASE_TEMPLATE                                                                              \
	"{\"replicatedJobs\": [{\"name\": \"launcher\", \"template\": {\"spec\": {\"template\": "  \
	"{\"spec\": {\"priorityClassName\": \"high-priority\"}}}}}]}"

static void base_info(kft_runtime_info *info)
{
	json_decref(info->template_spec);
	info->template_spec = parse(BASE_TEMPLATE);
	add_pod_set(info, "launcher", 1, "{\"cpu\": \"300m\", \"memory\": \"1Gi\"}");
	add_pod_set(info, "worker", 4, "{\"cpu\": \"500m\", \"memory\": \"0.5Gi\"}");
}

#define EXISTING_PG(name)                                                                          \
	"[{\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": \"PodGroup\", "            \
	"\"metadata\": {\"name\": \"" name "\", \"namespace\": \"test-ns\"}}]"

/* ---- TestVolcano ---------------------------------------------------------- */

/* volcano_test.go: "Test nil info" */
static void test_nil_info(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	run(&f, NULL);
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* volcano_test.go: "inject group-name annotation" (no pod sets: an empty
 * PodGroup; no namespace given: ours is "default"; no UID: none is sent). */
static void test_inject_group_name(void **state)
{
	fixture f;
	fixture_init(&f, "{\"metadata\": {\"name\": \"test-trainjob\"}, \"spec\": {}}", "[]");
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	run(&f, f.info);
	expect_json(f.info->scheduler_pod_annotations,
	            "{\"scheduling.k8s.io/group-name\": \"test-trainjob\"}");
	expect_json(f.info->scheduler_pod_labels, "{}");
	expect_json(f.objects,
	            "[{\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": \"PodGroup\", "
	            "\"metadata\": {\"name\": \"test-trainjob\", \"namespace\": \"default\", "
	            "\"ownerReferences\": [{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", "
	            "\"kind\": \"TrainJob\", \"name\": \"test-trainjob\", \"controller\": true, "
	            "\"blockOwnerDeletion\": true}]}, \"spec\": {\"minMember\": 0, "
	            "\"minResources\": {}}}]");
	json_decref(policy);
	fixture_free(&f);
}

/* volcano_test.go: "PodGroup exists and trainjob not suspended" */
static void test_exists_not_suspended(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"metadata\": {\"name\": \"job-exist-running\", \"namespace\": \"test-ns\", "
	             "\"uid\": \"1\"}, \"spec\": {\"suspend\": false}}",
	             EXISTING_PG("job-exist-running"));
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	base_info(f.info);
	run(&f, f.info);
	expect_json(f.info->scheduler_pod_annotations,
	            "{\"scheduling.k8s.io/group-name\": \"job-exist-running\"}");
	assert_int_equal(json_array_size(f.objects), 0);
	json_decref(policy);
	fixture_free(&f);
}

/* volcano_test.go: "PodGroup exists but trainjob suspended" */
static void test_exists_suspended(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"metadata\": {\"name\": \"job-update\", \"namespace\": \"test-ns\", "
	             "\"uid\": \"2\"}, \"spec\": {\"suspend\": true}}",
	             EXISTING_PG("job-update"));
	json_t *policy = parse("{\"volcano\": {\"networkTopology\": {\"mode\": \"hard\", "
	                       "\"highestTierAllowed\": 1}}}");
	f.info->pod_group_policy = policy;
	json_object_set_new(f.info->annotations, "scheduling.volcano.sh/queue-name",
	                    json_string("q1"));
	base_info(f.info);
	run(&f, f.info);
	expect_json(f.info->scheduler_pod_annotations,
	            "{\"scheduling.k8s.io/group-name\": \"job-update\"}");
	expect_json(f.objects,
	            "[{\"apiVersion\": \"scheduling.volcano.sh/v1beta1\", \"kind\": \"PodGroup\", "
	            "\"metadata\": {\"name\": \"job-update\", \"namespace\": \"test-ns\", "
	            "\"ownerReferences\": [{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", "
	            "\"kind\": \"TrainJob\", \"name\": \"job-update\", \"uid\": \"2\", "
	            "\"controller\": true, \"blockOwnerDeletion\": true}]}, \"spec\": "
	            "{\"minMember\": 5, \"queue\": \"q1\", \"priorityClassName\": "
	            "\"high-priority\", \"minResources\": {\"cpu\": \"2300m\", \"memory\": "
	            "\"3Gi\"}, \"networkTopology\": {\"mode\": \"hard\", \"highestTierAllowed\": "
	            "1}}}]");
	json_decref(policy);
	fixture_free(&f);
}

/* ours: the last replicated job naming a priority class wins; a topology
 * without fields takes the CRD defaults (hard, 1); an empty queue name is
 * passed through as given (validation refuses it first). */
static void test_priority_and_topology_defaults(void **state)
{
	fixture f;
	fixture_init(&f, "{\"metadata\": {\"name\": \"j\", \"namespace\": \"ns\"}, \"spec\": {}}",
	             NULL);
	json_t *policy = parse("{\"volcano\": {\"networkTopology\": {}}}");
	f.info->pod_group_policy = policy;
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(
	        "{\"replicatedJobs\": [{\"name\": \"a\", \"template\": {\"spec\": {\"template\": "
	        "{\"spec\": {\"priorityClassName\": \"first\"}}}}}, {\"name\": \"b\"}, {\"name\": "
	        "\"c\", \"template\": {\"spec\": {\"template\": {\"spec\": {\"priorityClassName\": "
	        "\"last\"}}}}}, {\"name\": \"d\", \"template\": {}}]}");
	json_object_set_new(f.info->annotations, "scheduling.volcano.sh/queue-name",
	                    json_string(""));
	run(&f, f.info);
	expect_json(json_object_get(json_array_get(f.objects, 0), "spec"),
	            "{\"minMember\": 0, \"queue\": \"\", \"priorityClassName\": \"last\", "
	            "\"minResources\": {}, \"networkTopology\": {\"mode\": \"hard\", "
	            "\"highestTierAllowed\": 1}}");
	json_decref(policy);
	fixture_free(&f);
}

/* ours: Volcano changes pod annotations only, never pod labels. */
static void test_table(void **state)
{
	assert_string_equal(kft_plugin_volcano.name, "Volcano");
	assert_int_equal(kft_plugin_volcano.abi_version, KFT_PLUGIN_ABI_VERSION);
	assert_string_equal(kft_plugin_volcano.watch_kinds[0],
	                    "scheduling.volcano.sh/v1beta1/PodGroup");
	assert_null(kft_plugin_volcano.watch_kinds[1]);
	assert_non_null(kft_plugin_volcano.custom_validation);
}

/* ---- TestValidate ----------------------------------------------------------- */

/* Runs CustomValidation and returns the errors formatted one per line. */
static char *validate(fixture *f, const kft_runtime_info *info, const char *new_job)
{
	kft_field_errors errs;
	json_t *nj = new_job ? parse(new_job) : NULL;
	char *out = calloc(1, 1);
	size_t len = 0;
	kft_field_errors_init(&errs);
	kft_plugin_volcano.custom_validation(&f->ctx, info, NULL, nj, &errs);
	assert_int_equal(errs.oom, 0);
	assert_int_equal(errs.nwarnings, 0);
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		out = realloc(out, len + strlen(line) + 2);
		len += (size_t)sprintf(out + len, "%s\n", line);
		free(line);
	}
	kft_field_errors_free(&errs);
	json_decref(nj);
	return out;
}

#define TEST_JOB "{\"metadata\": {\"name\": \"test\", \"namespace\": \"default\"}, \"spec\": {}}"

static void expect_errors(fixture *f, const char *want)
{
	char *got = validate(f, f->info, TEST_JOB);
	assert_string_equal(got, want);
	free(got);
}

/* volcano_test.go: "no action when info is nil" */
static void test_validate_nil_info(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	char *got = validate(&f, NULL, NULL);
	assert_string_equal(got, "");
	free(got);
	fixture_free(&f);
}

/* volcano_test.go: "no action when Volcano policy not enabled" (an empty
 * queue name and a missing priority class are not looked at). */
static void test_validate_not_enabled(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	json_object_set_new(f.info->annotations, "scheduling.volcano.sh/queue-name",
	                    json_string(""));
	expect_errors(&f, "");
	fixture_free(&f);
}

/* volcano_test.go: "queue annotation is empty" */
static void test_validate_empty_queue(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	json_object_set_new(f.info->annotations, "scheduling.volcano.sh/queue-name",
	                    json_string(""));
	expect_errors(&f, "spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "
	                  "\"\": Volcano queue name must not be empty\n");
	json_decref(policy);
	fixture_free(&f);
}

#define ONE_PRIORITY_CLASS(pc)                                                                     \
	"{\"replicatedJobs\": [{\"template\": {\"spec\": {\"template\": {\"spec\": "               \
	"{\"priorityClassName\": \"" pc "\"}}}}}]}"

/* volcano_test.go: "priorityClassName does not exist" */
static void test_validate_missing_priority_class(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(ONE_PRIORITY_CLASS("non-existent"));
	expect_errors(&f, "spec.templateSpec.priorityClassName: Invalid value: \"non-existent\": "
	                  "PriorityClass \"non-existent\" doesn't exist: "
	                  "priorityclasses.scheduling.k8s.io \"non-existent\" not found\n");
	json_decref(policy);
	fixture_free(&f);
}

/* volcano_test.go: "priorityClassName exists" */
static void test_validate_priority_class_exists(void **state)
{
	fixture f;
	fixture_init(&f, NULL,
	             "[{\"apiVersion\": \"scheduling.k8s.io/v1\", \"kind\": \"PriorityClass\", "
	             "\"metadata\": {\"name\": \"existing-priority\"}, \"value\": 100}]");
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(ONE_PRIORITY_CLASS("existing-priority"));
	expect_errors(&f, "");
	json_decref(policy);
	fixture_free(&f);
}

/* ours: the two system classes need no PriorityClass object, and upstream
 * stops checking at the first one it meets. */
static void test_validate_system_priority_class(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL);
	json_t *policy = parse("{\"volcano\": {}}");
	f.info->pod_group_policy = policy;
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(
	        "{\"replicatedJobs\": [{\"template\": {\"spec\": {\"template\": {\"spec\": "
	        "{\"priorityClassName\": \"system-node-critical\"}}}}}, {\"template\": {\"spec\": "
	        "{\"template\": {\"spec\": {\"priorityClassName\": \"missing\"}}}}}]}");
	expect_errors(&f, "");
	/* In the other order the missing class is reported. */
	json_decref(f.info->template_spec);
	f.info->template_spec =
	        parse("{\"replicatedJobs\": [{\"template\": {\"spec\": {\"template\": {\"spec\": "
	              "{\"priorityClassName\": \"missing\"}}}}}, {\"template\": {\"spec\": "
	              "{\"template\": "
	              "{\"spec\": {\"priorityClassName\": \"system-cluster-critical\"}}}}}]}");
	expect_errors(&f, "spec.templateSpec.priorityClassName: Invalid value: \"missing\": "
	                  "PriorityClass \"missing\" doesn't exist: "
	                  "priorityclasses.scheduling.k8s.io \"missing\" not found\n");
	json_decref(policy);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nil_info),
	        cmocka_unit_test(test_inject_group_name),
	        cmocka_unit_test(test_exists_not_suspended),
	        cmocka_unit_test(test_exists_suspended),
	        cmocka_unit_test(test_priority_and_topology_defaults),
	        cmocka_unit_test(test_table),
	        cmocka_unit_test(test_validate_nil_info),
	        cmocka_unit_test(test_validate_not_enabled),
	        cmocka_unit_test(test_validate_empty_queue),
	        cmocka_unit_test(test_validate_missing_priority_class),
	        cmocka_unit_test(test_validate_priority_class_exists),
	        cmocka_unit_test(test_validate_system_priority_class),
	};
	return cmocka_run_group_tests_name("plugin_volcano", tests, NULL, NULL);
}
