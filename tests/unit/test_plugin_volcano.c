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

#define PLUGIN_UNDER_TEST kft_plugin_volcano
#include "podgroup_fixture.h"

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
