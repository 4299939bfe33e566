/*
 * test_plugin_trainjobstatus.c - the TrainJobStatus plugin
 * (src/plugins/trainjobstatus.c).
 *
 * Cases named "trainjobstatus_test.go: ..." port upstream v2.3.0's
 * pkg/runtime/framework/plugins/trainjobstatus/trainjobstatus_test.go
 * (TestEnforceMLPolicy, TestBuild) with upstream's default Configuration
 * (service kubeflow-trainer-controller-manager, Secret
 * kubeflow-trainer-webhook-cert, status server port 10443, operator
 * namespace kubeflow-system). Cases marked "ours" pin our own checks.
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

/* ---- fixtures ------------------------------------------------------------- */

#include "backend_fixture.h"

static void add_container(kft_pod_set *ps, const char *name)
{
	ps->containers = realloc(ps->containers, (ps->n_containers + 1) * sizeof(kft_container));
	kft_container *c = &ps->containers[ps->n_containers++];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	c->command = json_array();
	c->env = json_array();
	c->ports = json_array();
	c->volume_mounts = json_array();
}

/* A pod set with an ancestor label and containers of these names. */
static kft_pod_set *add_trainer(kft_runtime_info *info, const char *name, const char *ancestor,
                                int32_t count, const char *c1, const char *c2)
{
	kft_pod_set *ps = add_pod_set(info, name, count, NULL);
	ps->ancestor = ancestor ? strdup(ancestor) : NULL;
	add_container(ps, c1);
	if (c2)
		add_container(ps, c2);
	return ps;
}

/* Runs EnforceMLPolicy, expected to succeed. */
static void enforce(fixture *f, kft_runtime_info *info)
{
	kft_error err = {0};
	if (kft_plugin_trainjobstatus.enforce_ml_policy(&f->ctx, info, job_of(f), &err) != 0)
		fail_msg("EnforceMLPolicy: %s", err.message);
}

/* Runs ComponentBuilder; returns its status, err filled. */
static int build(fixture *f, kft_runtime_info *info, kft_error *err)
{
	return kft_plugin_trainjobstatus.component_builder(&f->ctx, info, job_of(f), f->objects,
	                                                   err);
}

#define TEST_JOB                                                                                   \
	"{\"metadata\": {\"name\": \"test-job\", \"namespace\": \"default\", \"uid\": "            \
	"\"test-uid\"}, \"spec\": {\"trainer\": {\"numNodes\": 2}}}"

#define WANT_ENV                                                                                   \
	"[{\"name\": \"KUBEFLOW_TRAINER_SERVER_URL\", \"value\": "                                 \
	"\"https://kubeflow-trainer-controller-manager.kubeflow-system.svc:10443/apis/"            \
	"trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status\"}, "          \
	"{\"name\": \"KUBEFLOW_TRAINER_SERVER_CA_CERT\", \"value\": "                              \
	"\"/var/run/secrets/kubeflow/trainer/ca.crt\"}, {\"name\": "                               \
	"\"KUBEFLOW_TRAINER_SERVER_TOKEN\", \"value\": "                                           \
	"\"/var/run/secrets/kubeflow/trainer/token\"}]"

#define WANT_MOUNTS                                                                                \
	"[{\"name\": \"kubeflow-trainer-token\", \"mountPath\": "                                  \
	"\"/var/run/secrets/kubeflow/trainer\", \"readOnly\": true}]"

#define WANT_VOLUMES                                                                               \
	"[{\"name\": \"kubeflow-trainer-token\", \"projected\": {\"sources\": "                    \
	"[{\"serviceAccountToken\": {\"audience\": "                                               \
	"\"trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status\", "         \
	"\"expirationSeconds\": 3600, \"path\": \"token\"}}, {\"configMap\": {\"name\": "          \
	"\"test-job-tls-config\", \"items\": [{\"key\": \"ca.crt\", \"path\": \"ca.crt\"}]}}]}}]"

/* ---- TestEnforceMLPolicy --------------------------------------------------------- */

/* trainjobstatus_test.go: "does nothing if no trainer pods" */
static void test_no_trainer_pods(void **state)
{
	fixture f;
	fixture_init(&f, TEST_JOB, NULL);
	kft_pod_set *ps = add_trainer(f.info, "launcher", NULL, 1, "launcher", NULL);
	enforce(&f, f.info);
	expect_json(ps->containers[0].env, "[]");
	expect_json(ps->containers[0].volume_mounts, "[]");
	expect_json(ps->volumes, "[]");
	fixture_free(&f);
}

/* trainjobstatus_test.go: "injects runtime configuration into trainer containers" */
static void test_inject_trainer(void **state)
{
	fixture f;
	fixture_init(&f, TEST_JOB, NULL);
	kft_pod_set *ps = add_trainer(f.info, "trainer", "trainer", 2, "node", NULL);
	enforce(&f, f.info);
	expect_json(ps->containers[0].env, WANT_ENV);
	expect_json(ps->containers[0].volume_mounts, WANT_MOUNTS);
	expect_json(ps->volumes, WANT_VOLUMES);
	assert_int_equal(ps->count, 2);
	fixture_free(&f);
}

/* trainjobstatus_test.go: "injects runtime configuration into multiple containers" */
static void test_inject_multiple_containers(void **state)
{
	fixture f;
	fixture_init(&f, TEST_JOB, NULL);
	kft_pod_set *ps = add_trainer(f.info, "trainer", "trainer", 1, "node", "sidecar");
	enforce(&f, f.info);
	for (int i = 0; i < 2; i++) {
		expect_json(ps->containers[i].env, WANT_ENV);
		expect_json(ps->containers[i].volume_mounts, WANT_MOUNTS);
	}
	expect_json(ps->volumes, WANT_VOLUMES);
	fixture_free(&f);
}

/* ours: running twice changes nothing more (upserts by name and path), and
 * a variable the runtime already set is replaced, not duplicated. */
static void test_inject_idempotent(void **state)
{
	fixture f;
	fixture_init(&f, TEST_JOB, NULL);
	kft_pod_set *ps = add_trainer(f.info, "trainer", "trainer", 1, "node", NULL);
	json_array_append_new(ps->containers[0].env,
	                      parse("{\"name\": \"KUBEFLOW_TRAINER_SERVER_TOKEN\", \"value\": "
	                            "\"/var/run/secrets/kubeflow/trainer/token\"}"));
	add_pod_set(f.info, "dataset-initializer", 1, NULL)->ancestor =
	        strdup("dataset-initializer");
	enforce(&f, f.info);
	enforce(&f, f.info);
	expect_json(
	        f.info->pod_sets[0].containers[0].env,
	        "[{\"name\": \"KUBEFLOW_TRAINER_SERVER_TOKEN\", \"value\": "
	        "\"/var/run/secrets/kubeflow/trainer/token\"}, {\"name\": "
	        "\"KUBEFLOW_TRAINER_SERVER_URL\", \"value\": "
	        "\"https://kubeflow-trainer-controller-manager.kubeflow-system.svc:10443/apis/"
	        "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status\"}, "
	        "{\"name\": \"KUBEFLOW_TRAINER_SERVER_CA_CERT\", \"value\": "
	        "\"/var/run/secrets/kubeflow/trainer/ca.crt\"}]");
	expect_json(f.info->pod_sets[0].volumes, WANT_VOLUMES);
	expect_json(f.info->pod_sets[1].volumes, "[]");
	(void)ps;
	fixture_free(&f);
}

/* ---- TestBuild ------------------------------------------------------------------- */

#define SECRET(data)                                                                               \
	"[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": "                \
	"\"kubeflow-trainer-webhook-cert\", \"namespace\": \"kubeflow-system\"}, \"data\": " data  \
	"}]"

/* trainjobstatus_test.go: "no action when info is nil" */
static void test_build_nil_info(void **state)
{
	fixture f;
	kft_error err = {0};
	fixture_init(&f, TEST_JOB, NULL);
	assert_int_equal(build(&f, NULL, &err), 0);
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* trainjobstatus_test.go: "no action when trainJob is nil" */
static void test_build_nil_trainjob(void **state)
{
	fixture f;
	kft_error err = {0};
	fixture_init(&f, NULL, NULL);
	add_trainer(f.info, "trainer", "trainer", 1, "node", NULL);
	assert_int_equal(build(&f, f.info, &err), 0);
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* trainjobstatus_test.go: "creates ConfigMap with CA cert from secret"
 * ("test-ca-cert-data", base64-encoded as a Secret stores it). */
static void test_build_config_map(void **state)
{
	fixture f;
	kft_error err = {0};
	fixture_init(&f, TEST_JOB, SECRET("{\"ca.crt\": \"dGVzdC1jYS1jZXJ0LWRhdGE=\"}"));
	add_trainer(f.info, "trainer", "trainer", 2, "node", NULL);
	assert_int_equal(build(&f, f.info, &err), 0);
	expect_json(f.objects,
	            "[{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": "
	            "\"test-job-tls-config\", \"namespace\": \"default\", \"ownerReferences\": "
	            "[{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\", "
	            "\"name\": \"test-job\", \"uid\": \"test-uid\", \"controller\": true, "
	            "\"blockOwnerDeletion\": true}]}, \"data\": {\"ca.crt\": "
	            "\"test-ca-cert-data\"}}]");
	fixture_free(&f);
}

static void expect_build_error(const char *cluster, const char *prefix)
{
	fixture f;
	kft_error err = {0};
	fixture_init(&f, TEST_JOB, cluster);
	add_trainer(f.info, "trainer", "trainer", 1, "node", NULL);
	assert_true(build(&f, f.info, &err) < 0);
	if (strncmp(err.message, prefix, strlen(prefix)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", err.message, prefix);
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* trainjobstatus_test.go: "returns error when webhook secret not found" */
static void test_build_no_secret(void **state)
{
	expect_build_error("[]", "failed to look up status server tls secret");
	/* The Secret must be in the operator's namespace. */
	expect_build_error("[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": "
	                   "{\"name\": \"kubeflow-trainer-webhook-cert\", \"namespace\": "
	                   "\"default\"}, \"data\": {\"ca.crt\": \"eA==\"}}]",
	                   "failed to look up status server tls secret: secrets "
	                   "\"kubeflow-trainer-webhook-cert\" not found");
}

/* trainjobstatus_test.go: "returns error when CA cert is missing in secret" */
static void test_build_no_ca_cert(void **state)
{
	expect_build_error(SECRET("{\"other-key\": \"b3RoZXItZGF0YQ==\"}"),
	                   "failed to find status server ca.crt in tls secret");
	/* ours: an empty ca.crt is missing too. */
	expect_build_error(SECRET("{\"ca.crt\": \"\"}"),
	                   "failed to find status server ca.crt in tls secret");
}

/* ours: ca.crt that is not base64 is refused; line breaks in it are not. */
static void test_build_base64(void **state)
{
	expect_build_error(SECRET("{\"ca.crt\": \"not base64!\"}"),
	                   "failed to look up status server tls secret");
	expect_build_error(SECRET("{\"ca.crt\": \"eA=\"}"),
	                   "failed to look up status server tls secret");
	expect_build_error(SECRET("{\"ca.crt\": \"e===\"}"),
	                   "failed to look up status server tls secret");

	fixture f;
	kft_error err = {0};
	fixture_init(&f, TEST_JOB, SECRET("{\"ca.crt\": \"LS0tLS1C\\nRUdJTg==\"}"));
	add_trainer(f.info, "trainer", "trainer", 1, "node", NULL);
	assert_int_equal(build(&f, f.info, &err), 0);
	expect_json(json_object_get(json_array_get(f.objects, 0), "data"),
	            "{\"ca.crt\": \"-----BEGIN\"}");
	fixture_free(&f);
}

/* ours: the table. Upstream's plugin has no other extension points. */
/* Ours: a backend that provides the CA and token files itself (the local
 * engine's supervisor serves the endpoint) gets the three variables with its
 * answer, and neither the projected volume nor the CA ConfigMap. */
static int local_endpoint(void *self, const char *ns, const char *job, kft_status_endpoint *out)
{
	(void)self;
	snprintf(out->base_url, sizeof(out->base_url), "https://127.0.0.1:4321");
	snprintf(out->ca_cert, sizeof(out->ca_cert), "/state/jobs/%s/%s/status-server/ca.crt", ns,
	         job);
	snprintf(out->token, sizeof(out->token), "/state/jobs/%s/%s/status-server/token", ns, job);
	out->files_provided = 1;
	return 0;
}

static void test_backend_provides_files(void **state)
{
	(void)state;
	fixture f;
	kft_error err = {0};
	fixture_init(&f, TEST_JOB, NULL);
	f.backend.status_endpoint = local_endpoint;
	kft_pod_set *ps = add_trainer(f.info, "trainer", "trainer", 2, "node", NULL);
	enforce(&f, f.info);
	expect_json(
	        ps->containers[0].env,
	        "[{\"name\": \"KUBEFLOW_TRAINER_SERVER_URL\", \"value\": "
	        "\"https://127.0.0.1:4321/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/"
	        "trainjobs/test-job/status\"}, {\"name\": \"KUBEFLOW_TRAINER_SERVER_CA_CERT\", "
	        "\"value\": \"/state/jobs/default/test-job/status-server/ca.crt\"}, {\"name\": "
	        "\"KUBEFLOW_TRAINER_SERVER_TOKEN\", \"value\": "
	        "\"/state/jobs/default/test-job/status-server/token\"}]");
	expect_json(ps->containers[0].volume_mounts, "[]");
	assert_int_equal(json_array_size(ps->volumes), 0);
	assert_int_equal(build(&f, f.info, &err), 0); /* no webhook Secret needed */
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* kftrainer: a torchtune fine-tune (trainer command `tune run`) cannot call
 * the endpoint itself, so the plugin gives its node container the status
 * logger: an item after the (torch plugin's) command, PYTHONPATH first
 * naming the mounted ConfigMap's directory (an existing value kept after
 * it), and the ConfigMap, owned by the TrainJob, holding the module. */
static void test_torchtune_status_logger(void **state)
{
	(void)state;
	fixture f;
	kft_error err = {0};
	fixture_init(&f,
	             "{\"metadata\": {\"name\": \"tt\", \"namespace\": \"default\", \"uid\": "
	             "\"u\"}, \"spec\": {\"trainer\": {\"command\": [\"tune\", \"run\"]}}}",
	             NULL);
	f.backend.status_endpoint = local_endpoint;
	kft_pod_set *ps = add_trainer(f.info, "node", "trainer", 1, "node", NULL);
	kft_container *c = &ps->containers[0];
	json_array_append_new(c->command, json_string("tune"));
	json_array_append_new(c->command, json_string("run"));
	kft_upsert_env(c->env, "PYTHONPATH", "/opt/mine");
	enforce(&f, f.info);
	assert_string_equal(json_string_value(json_array_get(c->command, 2)),
	                    "metric_logger._component_=kubeflow_trainer_torchtune.StatusLogger");
	expect_json(json_array_get(c->env, 0), "{\"name\": \"PYTHONPATH\", \"value\": "
	                                       "\"/var/run/kftrainer/torchtune:/opt/mine\"}");
	expect_json(c->volume_mounts, "[{\"name\": \"kftrainer-torchtune-status\", \"readOnly\": "
	                              "true, \"mountPath\": \"/var/run/kftrainer/torchtune\"}]");
	expect_json(ps->volumes, "[{\"name\": \"kftrainer-torchtune-status\", \"configMap\": "
	                         "{\"name\": \"tt-torchtune-status\"}}]");
	assert_int_equal(build(&f, f.info, &err), 0);
	assert_int_equal(json_array_size(f.objects), 1);
	const json_t *cm = json_array_get(f.objects, 0);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(cm, "metadata"), "name")),
	        "tt-torchtune-status");
	const char *py = json_string_value(
	        json_object_get(json_object_get(cm, "data"), "kubeflow_trainer_torchtune.py"));
	assert_non_null(py);
	assert_non_null(strstr(py, "class StatusLogger(DiskLogger):"));
	fixture_free(&f);
}

static void test_table(void **state)
{
	assert_string_equal(kft_plugin_trainjobstatus.name, "TrainJobStatus");
	assert_int_equal(kft_plugin_trainjobstatus.abi_version, KFT_PLUGIN_ABI_VERSION);
	assert_null(kft_plugin_trainjobstatus.watch_kinds);
	assert_null(kft_plugin_trainjobstatus.trainjob_status);
	assert_null(kft_plugin_trainjobstatus.enforce_pod_group_policy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_trainer_pods),
	        cmocka_unit_test(test_inject_trainer),
	        cmocka_unit_test(test_inject_multiple_containers),
	        cmocka_unit_test(test_inject_idempotent),
	        cmocka_unit_test(test_build_nil_info),
	        cmocka_unit_test(test_build_nil_trainjob),
	        cmocka_unit_test(test_build_config_map),
	        cmocka_unit_test(test_build_no_secret),
	        cmocka_unit_test(test_build_no_ca_cert),
	        cmocka_unit_test(test_build_base64),
	        cmocka_unit_test(test_backend_provides_files),
	        cmocka_unit_test(test_torchtune_status_logger),
	        cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests_name("plugin_trainjobstatus", tests, NULL, NULL);
}
