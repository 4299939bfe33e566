/*
 * test_controller_trim.c - what the controller's informer caches keep
 * (src/controller/trim.c). These are our own memory choices ("ours"); the
 * constraint from upstream is only that every field a reconcile reads
 * survives: a JobSet's status and spec.suspend (kubeflow/trainer v2.3.0
 * pkg/runtime/framework/plugins/jobset: Build reads spec.suspend, Status
 * reads status), a TrainJob's runtime snapshot ConfigMap whole when it
 * comes whole. Secrets and ConfigMaps are otherwise cached as metadata (the
 * informers ask for metadata only; upstream #3374 is what watching every
 * body costs); the webhook certificate Secret the TrainJobStatus plugin
 * reads has an informer of its own, without this transform.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/cm_internal.h"

static json_t *parse(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);
	if (!v)
		fail_msg("bad test JSON: %s", text);
	return v;
}

#define OWNED                                                                                      \
	"\"ownerReferences\":[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":"         \
	"\"TrainJob\",\"name\":\"job\",\"uid\":\"u\",\"controller\":true}]"

static int setup(void **state)
{
	kft_cm *cm = calloc(1, sizeof(*cm));
	kft_cm_config *cfg = calloc(1, sizeof(*cfg));
	assert_int_equal(kft_cm_config_defaults(cfg, NULL), 0);
	cm->cfg = cfg;
	*state = cm;
	return 0;
}

static int teardown(void **state)
{
	kft_cm *cm = *state;
	kft_cm_config_free((kft_cm_config *)cm->cfg);
	free((void *)cm->cfg);
	free(cm);
	return 0;
}

static void test_jobset(void **state)
{
	json_t *js = parse("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	                   "\"metadata\":{\"name\":\"job\",\"labels\":{\"a\":\"b\"},"
	                   "\"uid\":\"u\",\"generation\":3,\"creationTimestamp\":\"t\","
	                   "\"annotations\":{\"kubectl.kubernetes.io/"
	                   "last-applied-configuration\":\"{...}\"}},"
	                   "\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"node\"}]},"
	                   "\"status\":{\"conditions\":[{\"type\":\"Suspended\"},{\"type\":"
	                   "\"Completed\"},{\"type\":\"StartupPolicyCompleted\"},{\"type\":"
	                   "\"Failed\"}],\"restarts\":2}}");
	kft_cm_trim_object(js, *state);
	/* jobset_status.c reads the Completed and Failed conditions only */
	json_t *want = parse("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	                     "\"metadata\":{\"name\":\"job\",\"labels\":{\"a\":\"b\"}},"
	                     "\"spec\":{\"suspend\":true},"
	                     "\"status\":{\"conditions\":[{\"type\":\"Completed\"},{\"type\":"
	                     "\"Failed\"}]}}");
	assert_true(json_equal(js, want));
	assert_true(kft_cm_trimmed_kind(js));
	json_decref(want);
	json_decref(js);
}

static void test_secrets_and_configmaps(void **state)
{
	kft_cm *cm = *state;
	json_t *mine = parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
	                     "\"job-mpi-ssh-auth\"," OWNED "},\"data\":{\"k\":\"dg==\"}}");
	json_t *other =
	        parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	              "\"x\"},\"data\":{\"k\":\"v\"},\"binaryData\":{\"b\":\"AA==\"}}");
	char cert[256];
	snprintf(cert, sizeof(cert),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\"},"
	         "\"data\":{\"ca.crt\":\"eA==\"}}",
	         cm->cfg->cert_webhook_secret);
	json_t *webhook = parse(cert);
	kft_cm_trim_object(mine, cm);
	kft_cm_trim_object(other, cm);
	kft_cm_trim_object(webhook, cm);
	/* an owned Secret (the MPI key pair) is only checked for existence */
	assert_null(json_object_get(mine, "data"));
	assert_non_null(json_object_get(mine, "metadata"));
	assert_null(json_object_get(other, "data"));
	assert_null(json_object_get(other, "binaryData"));
	assert_non_null(json_object_get(other, "metadata"));
	assert_null(json_object_get(webhook, "data"));
	assert_true(kft_cm_trimmed_kind(other));
	assert_true(kft_cm_metadata_kind(other));
	assert_true(kft_cm_metadata_kind(mine));
	json_decref(mine);
	json_decref(other);
	json_decref(webhook);
}

/* A TrainJob's runtime snapshot is what it builds from (upstream v2.3.0
 * pkg/runtime/core/snapshot.go): its data stays whole in the cache. */
static void test_snapshots_keep_their_text(void **state)
{
	json_t *cm =
	        parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	              "\"a-runtime-snapshot\"," OWNED "},\"data\":{\"runtime\":\"kind: X\\n\"}}");
	kft_cm_trim_object(cm, *state);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(cm, "data"), "runtime")),
	        "kind: X\n");
	json_decref(cm);
}

/* What an apply's no-op check compares for a metadata-only kind: the
 * identity and metadata, never the body the cache may lack. */
static void test_projection(void **state)
{
	(void)state;
	json_t *cm = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                   "\"a-hostfile\"," OWNED "},\"data\":{\"hostfile\":\"a slots=1\\n\"}}");
	kft_cm_trim_projection(cm);
	assert_null(json_object_get(cm, "data"));
	assert_non_null(json_object_get(json_object_get(cm, "metadata"), "ownerReferences"));
	json_t *js = parse("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
	                   "\"metadata\":{\"name\":\"job\"},\"spec\":{\"suspend\":true,"
	                   "\"replicatedJobs\":[]}}");
	kft_cm_trim_projection(js);
	assert_null(json_object_get(json_object_get(js, "spec"), "replicatedJobs"));
	assert_true(json_is_true(json_object_get(json_object_get(js, "spec"), "suspend")));
	json_decref(cm);
	json_decref(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_jobset, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_secrets_and_configmaps, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_snapshots_keep_their_text, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_projection, setup, teardown),
	};
	return cmocka_run_group_tests_name("controller_trim", tests, NULL, NULL);
}
