/*
 * test_object.c - whole-object checks on the built-in schema: kind lookup,
 * kubectl's namespace default, ObjectMeta's strict fields, upstream's
 * immutability rules on update (trainjob_types.go `self == oldSelf`
 * markers), and the runtime webhook checks (pkg/webhooks
 * trainingruntime_webhook.go validateReplicatedJobs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/decode.h"
#include "kftrainer/object.h"

static json_t *parse(const char *yaml)
{
	kft_doc_list docs = {0};
	kft_error err;
	if (kft_decode(yaml, strlen(yaml), "t", &docs, &err) != 0)
		fail_msg("decode: %s", err.message);
	json_t *root = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return root;
}

typedef struct result {
	kft_object_class cls;
	char text[4096]; /* formatted errors, newline-separated */
	size_t nwarnings;
} result;

static result run(const char *yaml, const char *old_yaml)
{
	result r = {0};
	const kft_schema *s = kft_schema_builtin(NULL);
	assert_non_null(s);
	json_t *obj = parse(yaml), *old = old_yaml ? parse(old_yaml) : NULL;
	if (old) { /* the stored object was defaulted when it was created */
		kft_field_errors ignored;
		kft_field_errors_init(&ignored);
		kft_object_check(s, old, NULL, &ignored, NULL);
		kft_field_errors_free(&ignored);
	}
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	r.cls = kft_object_check(s, obj, old, &errs, NULL);
	size_t len = 0;
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		len += (size_t)snprintf(r.text + len, sizeof(r.text) - len, "%s%s", i ? "\n" : "",
		                        line);
		free(line);
	}
	r.nwarnings = errs.nwarnings;
	kft_field_errors_free(&errs);
	json_decref(obj);
	json_decref(old);
	return r;
}

#define TRAINJOB(spec)                                                                             \
	"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: job}\n"       \
	"spec: " spec "\n"

static void test_minimal_trainjob_is_valid_in_default_namespace(void **state)
{
	result r = run(TRAINJOB("{runtimeRef: {name: torch-distributed}}"), NULL);
	assert_int_equal(r.cls, KFT_OBJECT_OURS);
	assert_string_equal(r.text, "");
}

static void test_defaults_are_applied_in_place(void **state)
{
	const kft_schema *s = kft_schema_builtin(NULL);
	json_t *obj = parse(TRAINJOB("{runtimeRef: {name: torch-distributed}}"));
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_object_check(s, obj, NULL, &errs, NULL);
	json_t *spec = json_object_get(obj, "spec");
	json_t *ref = json_object_get(spec, "runtimeRef");
	/* trainjob_types.go: +kubebuilder:default markers */
	assert_string_equal(json_string_value(json_object_get(ref, "kind")),
	                    "ClusterTrainingRuntime");
	assert_string_equal(json_string_value(json_object_get(ref, "apiGroup")),
	                    "trainer.kubeflow.org");
	assert_true(json_is_false(json_object_get(spec, "suspend")));
	assert_string_equal(json_string_value(json_object_get(spec, "managedBy")),
	                    "trainer.kubeflow.org/trainjob-controller");
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace")),
	        "default");
	kft_field_errors_free(&errs);
	json_decref(obj);
}

static void test_immutable_fields_on_update(void **state)
{
	const char *old =
	        TRAINJOB("{runtimeRef: {name: torch-distributed}, trainer: {numNodes: 1}}");
	result same = run(old, old);
	assert_string_equal(same.text, "");
	result changed =
	        run(TRAINJOB("{runtimeRef: {name: other}, trainer: {numNodes: 2}, suspend: true}"),
	            old);
	/* suspend is mutable; runtimeRef and trainer are not. */
	assert_string_equal(changed.text, "spec.runtimeRef: Invalid value: field is immutable\n"
	                                  "spec.trainer: Invalid value: field is immutable");
}

static void test_metadata_is_strict(void **state)
{
	result r = run("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
	               "metadata: {name: job, colour: red}\n"
	               "spec: {runtimeRef: {name: x}}\n",
	               NULL);
	assert_string_equal(r.text, "metadata.colour: unknown field");
}

static void test_kinds_are_classified(void **state)
{
	assert_int_equal(run("apiVersion: apps/v1\nkind: Deployment\n", NULL).cls,
	                 KFT_OBJECT_EXTERNAL);
	result r = run("apiVersion: trainer.kubeflow.org/v1\nkind: TrainJob\n", NULL);
	assert_int_equal(r.cls, KFT_OBJECT_UNKNOWN);
	assert_string_equal(r.text, "kind: Invalid value: \"TrainJob\": no matches for kind "
	                            "\"TrainJob\" in version \"trainer.kubeflow.org/v1\"");
	r = run("metadata: {name: x}\n", NULL);
	assert_string_equal(r.text, "apiVersion: Required value: apiVersion not set\n"
	                            "kind: Required value: kind not set");
}

static void test_runtime_webhook_checks_and_deprecation(void **state)
{
	result r =
	        run("apiVersion: trainer.kubeflow.org/v1alpha1\n"
	            "kind: ClusterTrainingRuntime\n"
	            "metadata: {name: old, labels: {trainer.kubeflow.org/support: deprecated}}\n"
	            "spec:\n"
	            "  template:\n"
	            "    spec:\n"
	            "      replicatedJobs:\n"
	            "      - name: node\n"
	            "        replicas: 2\n"
	            "        template:\n"
	            "          metadata:\n"
	            "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
	            "          spec:\n"
	            "            template:\n"
	            "              spec:\n"
	            "                containers: [{name: main, image: busybox}]\n",
	            NULL);
	assert_string_equal(
	        r.text,
	        "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must "
	        "be 1\n"
	        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: "
	        "Invalid value: [{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{}}]: must "
	        "contain the "
	        "required container for the ancestor: trainer");
	assert_int_equal(r.nwarnings, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_minimal_trainjob_is_valid_in_default_namespace),
	        cmocka_unit_test(test_defaults_are_applied_in_place),
	        cmocka_unit_test(test_immutable_fields_on_update),
	        cmocka_unit_test(test_metadata_is_strict),
	        cmocka_unit_test(test_kinds_are_classified),
	        cmocka_unit_test(test_runtime_webhook_checks_and_deprecation),
	};
	return cmocka_run_group_tests_name("object", tests, NULL, NULL);
}
