/*
 * test_plugin_flux.c - the Flux plugin (src/plugins/flux.c).
 *
 * Cases named "flux_test.go: ..." port upstream v2.3.0's
 * pkg/runtime/framework/plugins/flux/flux_test.go: TestFlux and TestValidate
 * with upstream's inputs and expected RuntimeInfo and objects; the helper
 * tests (TestGenerateRange, TestGenerateHostlist, TestEncodeZ85,
 * TestBuildCurveSecret, TestGetOriginalCommand) through what those helpers
 * produce in the objects, since ours are static. Cases marked "ours" pin our
 * documented differences: hosts from the endpoints, a random CURVE key kept
 * while its Secret exists (upstream's TestDeterministicCurve pins the
 * opposite, UID-derived keys, and is deliberately not ported), broker.toml
 * and the host list as ConfigMap keys, and scripts that bash accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/evp.h>

#include "kftrainer/framework.h"
#include "plugins/builtin.h"

/* ---- fixtures ----------------------------------------------------------------- */

#define FIXTURE_JOB_NAME "test-job"
#define FIXTURE_JOB_UID  "test-uid"
#include "mlpolicy_fixture.h"

static int fake_port(void *self, const char *job, const char *service, int default_port)
{
	return strcmp(service, "flux") == 0 ? 18050 : default_port;
}

static kft_container make_container(const char *name, const char *command, const char *env)
{
	kft_container c = {.name = strdup(name),
	                   .command = parse(command ? command : "[]"),
	                   .env = parse(env ? env : "[]"),
	                   .ports = json_array(),
	                   .volume_mounts = json_array()};
	return c;
}

/* A pod set; the array has room for MAX_POD_SETS so pointers stay valid. */
static kft_pod_set *add_pod_set(fixture *f, const char *name, const char *ancestor,
                                const char *const *endpoints)
{
	kft_runtime_info *info = f->info;
	assert_true(info->n_pod_sets < MAX_POD_SETS);
	kft_pod_set *ps = &info->pod_sets[info->n_pod_sets++];
	ps->name = strdup(name);
	ps->ancestor = ancestor ? strdup(ancestor) : NULL;
	ps->count = 1;
	ps->replicas = 1;
	ps->volumes = json_array();
	ps->single_pod_requests = json_object();
	for (size_t i = 0; endpoints && endpoints[i]; i++) {
		ps->endpoints = realloc(ps->endpoints, (ps->n_endpoints + 1) * sizeof(char *));
		ps->endpoints[ps->n_endpoints++] = strdup(endpoints[i]);
	}
	return ps;
}

static void add_container(kft_pod_set *ps, kft_container c)
{
	ps->containers = realloc(ps->containers, (ps->n_containers + 1) * sizeof(kft_container));
	ps->containers[ps->n_containers++] = c;
}

static void add_init_container(kft_pod_set *ps, kft_container c)
{
	ps->init_containers =
	        realloc(ps->init_containers, (ps->n_init_containers + 1) * sizeof(kft_container));
	ps->init_containers[ps->n_init_containers++] = c;
}

static const char *const two_nodes[] = {"test-job-node-0-0.test-job", "test-job-node-0-1.test-job",
                                        NULL};

/* A "node" pod set of the trainer with a "node" container. */
static kft_pod_set *node_pod_set(fixture *f, const char *const *endpoints)
{
	kft_pod_set *ps = add_pod_set(f, "node", "trainer", endpoints);
	add_container(ps, make_container("node", NULL, NULL));
	return ps;
}

static void run_ml_policy(fixture *f)
{
	kft_error err;
	if (kft_plugin_flux.enforce_ml_policy(&f->ctx, f->info, &f->job, &err) != 0)
		fail_msg("enforce_ml_policy: %s", err.message);
}

static void run_build(fixture *f)
{
	kft_error err;
	if (kft_plugin_flux.component_builder(&f->ctx, f->info, &f->job, f->objects, &err) != 0)
		fail_msg("component_builder: %s", err.message);
}

static const char *cm_data(fixture *f, const char *key)
{
	const json_t *cm = json_array_get(f->objects, 0);
	assert_string_equal(json_string_value(json_object_get(cm, "kind")), "ConfigMap");
	const char *v = json_string_value(json_object_get(json_object_get(cm, "data"), key));
	assert_non_null(v);
	return v;
}

/* The decoded curve.cert of the Secret at objects[i]; caller frees. */
static char *curve_cert_of(fixture *f, size_t i)
{
	const json_t *s = json_array_get(f->objects, i);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "Secret");
	const json_t *data = json_object_get(s, "data");
	assert_int_equal(json_object_size(data), 1);
	const char *b64 = json_string_value(json_object_get(data, "curve.cert"));
	assert_non_null(b64);
	size_t n = strlen(b64);
	unsigned char *out = calloc(1, n + 1);
	assert_non_null(out);
	assert_true(EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n) >= 0);
	return (char *)out;
}

static char *build_cert(const char *uid)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
	json_object_set_new(json_object_get(f.job_obj, "metadata"), "uid", json_string(uid));
	node_pod_set(&f, two_nodes);
	run_build(&f);
	char *cert = curve_cert_of(&f, 1);
	fixture_free(&f);
	return cert;
}

/* ---- TestFlux ---------------------------------------------------------------------- */

/* flux_test.go: "no action when flux policy is nil" */
static void test_no_flux_policy(void **state)
{
	const char *policies[] = {NULL, "{}", "{\"mpi\": {}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, "{\"numNodes\": 2}", policies[i], NULL);
		kft_pod_set *ps = node_pod_set(&f, two_nodes);
		run_ml_policy(&f);
		assert_int_equal(ps->n_init_containers, 0);
		expect_json(ps->volumes, "[]");
		expect_json(ps->containers[0].volume_mounts, "[]");
		expect_json(ps->containers[0].command, "[]");
		run_build(&f);
		assert_int_equal(json_array_size(f.objects), 0);
		fixture_free(&f);
	}
	fixture f;
	fixture_init(&f, NULL, NULL, NULL);
	assert_int_equal(kft_plugin_flux.enforce_ml_policy(&f.ctx, NULL, &f.job, NULL), 0);
	assert_int_equal(kft_plugin_flux.component_builder(&f.ctx, NULL, &f.job, f.objects, NULL),
	                 0);
	fixture_free(&f);
}

#define CM_NAME "test-job-flux-entrypoint"
#define OWNER                                                                                      \
	"[{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\", "            \
	"\"name\": \"test-job\", \"uid\": \"test-uid\", \"controller\": true, "                    \
	"\"blockOwnerDeletion\": true}]"

/* flux_test.go: "flux mutations are applied correctly" */
static void test_flux_mutations(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 2}", "{\"flux\": {\"numProcPerNode\": 1}}", NULL);
	kft_pod_set *ps = node_pod_set(&f, two_nodes);
	run_ml_policy(&f);

	assert_int_equal(ps->count, 1);
	assert_int_equal(ps->n_init_containers, 1);
	kft_container *ic = &ps->init_containers[0];
	assert_string_equal(ic->name, "flux-installer");
	assert_string_equal(ic->image, "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy");
	expect_json(ic->command, "[\"/bin/bash\", \"/etc/flux-config/init.sh\"]");
	expect_json(ic->volume_mounts,
	            "[{\"name\": \"flux-install\", \"mountPath\": \"/mnt/flux\"}, "
	            "{\"name\": \"" CM_NAME "\", \"mountPath\": \"/etc/flux-config\", "
	            "\"readOnly\": true}]");
	expect_json(ic->env, "[]");
	expect_json(
	        ps->containers[0].volume_mounts,
	        "[{\"name\": \"flux-install\", \"mountPath\": \"/mnt/flux\"}, "
	        "{\"name\": \"spack-install\", \"mountPath\": \"/opt/software\"}, "
	        "{\"name\": \"" CM_NAME "\", \"mountPath\": \"/etc/flux-config\", "
	        "\"readOnly\": true}, "
	        "{\"name\": \"flux-curve\", \"mountPath\": \"/curve\", \"readOnly\": true}, "
	        "{\"name\": \"shared-memory\", \"mountPath\": \"/dev/shm\", \"readOnly\": true}]");
	expect_json(
	        ps->volumes,
	        "[{\"name\": \"spack-install\", \"emptyDir\": {}}, "
	        "{\"name\": \"flux-install\", \"emptyDir\": {}}, "
	        "{\"name\": \"" CM_NAME "\", \"configMap\": {\"name\": \"" CM_NAME "\", "
	        "\"defaultMode\": 493}}, "
	        "{\"name\": \"shared-memory\", \"emptyDir\": {\"medium\": \"Memory\"}}, "
	        "{\"name\": \"flux-curve\", \"secret\": {\"secretName\": \"test-job-flux-curve\", "
	        "\"defaultMode\": 256}}]");
	/* upstream: trainJob.Spec.Trainer.Command = [bash, entrypoint.sh, ""] */
	expect_json(ps->containers[0].command,
	            "[\"/bin/bash\", \"/etc/flux-config/entrypoint.sh\", \"\"]");

	run_build(&f);
	assert_int_equal(json_array_size(f.objects), 2);
	const json_t *cm = json_array_get(f.objects, 0), *secret = json_array_get(f.objects, 1);
	assert_string_equal(json_string_value(json_object_get(cm, "apiVersion")), "v1");
	expect_json(json_object_get(cm, "metadata"),
	            "{\"name\": \"" CM_NAME "\", \"namespace\": "
	            "\"default\", \"ownerReferences\": " OWNER "}");
	assert_string_equal(json_string_value(json_object_get(secret, "apiVersion")), "v1");
	assert_string_equal(json_string_value(json_object_get(secret, "kind")), "Secret");
	expect_json(json_object_get(secret, "metadata"),
	            "{\"name\": \"test-job-flux-curve\", \"namespace\": \"default\", "
	            "\"ownerReferences\": " OWNER "}");
	assert_null(json_object_get(secret, "type"));
	fixture_free(&f);
}

/* ---- TestValidate -------------------------------------------------------------------- */

static void assert_validation(fixture *f, const char *want)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_plugin_flux.custom_validation(&f->ctx, f->info, NULL, f->job_obj, &errs);
	char got[1024] = "";
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "\n" : "", line);
		free(line);
	}
	kft_field_errors_free(&errs);
	assert_string_equal(got, want);
}

#define PROCS_ERROR                                                                                \
	"spec.trainer.numProcPerNode: Invalid value: 0: must be greater than or equal to 1 for "   \
	"Flux TrainJob"

/* flux_test.go: "valid when flux policy is nil", "valid when flux policy is present" */
static void test_validate_valid(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL, NULL);
	assert_validation(&f, "");
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_plugin_flux.custom_validation(&f.ctx, NULL, NULL, f.job_obj, &errs);
	assert_int_equal(errs.count, 0);
	kft_field_errors_free(&errs);
	fixture_free(&f);
	fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

/* flux_test.go: "invalid when runtime policy numProcPerNode is less than one" */
static void test_validate_runtime_procs(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {\"numProcPerNode\": 0}}", NULL);
	assert_validation(&f, PROCS_ERROR);
	fixture_free(&f);
	/* ours: the TrainJob's valid value wins over the runtime's */
	fixture_init(&f, "{\"numProcPerNode\": 2}", "{\"flux\": {\"numProcPerNode\": 0}}", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

/* flux_test.go: "invalid when trainJob numProcPerNode is less than one" */
static void test_validate_trainjob_procs(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numProcPerNode\": 0}", "{\"flux\": {\"numProcPerNode\": 1}}", NULL);
	assert_validation(&f, PROCS_ERROR);
	fixture_free(&f);
}

/* flux_test.go: "invalid when node podSet includes reserved flux installer init container" */
static void test_validate_reserved_init_container(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
	kft_pod_set *ps = add_pod_set(&f, "node", NULL, NULL);
	add_init_container(ps, make_container("flux-installer", NULL, NULL));
	/* ours: only the "node" pod set reserves the name */
	kft_pod_set *other = add_pod_set(&f, "dataset-initializer", NULL, NULL);
	add_init_container(other, make_container("flux-installer", NULL, NULL));
	assert_validation(&f, "spec.trainer.initContainers: Invalid value: \"flux-installer\": "
	                      "InitContainer 'flux-installer' is reserved");
	fixture_free(&f);
}

/* ---- the helpers, through the objects ------------------------------------------------ */

/* flux_test.go TestGenerateHostlist: "prefix with one node", "prefix with
 * four nodes", "empty prefix handled"; TestGenerateRange "multiple nodes
 * with offset start" through hosts numbered from 10. */
static void test_hostlist(void **state)
{
	static const char *const one[] = {"lammps-job-node-0-0.lammps-job", NULL};
	static const char *const four[] = {"flux-cluster-node-0-0.s", "flux-cluster-node-0-1.s",
	                                   "flux-cluster-node-0-2.s", "flux-cluster-node-0-3.s",
	                                   NULL};
	static const char *const empty_prefix[] = {"-node-0-0.s", "-node-0-1.s", NULL};
	static const char *const offset[] = {"h-10.s", "h-11.s", "h-12.s", NULL};
	static const char *const mixed[] = {"a-1.s", "a-2.s",  "a-5.s", "b-0.s",
	                                    "c.s",   "a-01.s", NULL};
	const char *const *inputs[] = {one, four, empty_prefix, offset, mixed};
	const char *want[] = {"lammps-job-node-0-[0]\n", "flux-cluster-node-0-[0-3]\n",
	                      "-node-0-[0-1]\n", "h-[10-12]\n", "a-[1-2,5],b-[0],c,a-01\n"};
	for (size_t i = 0; i < 5; i++) {
		fixture f;
		fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
		node_pod_set(&f, inputs[i]);
		run_build(&f);
		assert_string_equal(cm_data(&f, "hostlist"), want[i]);
		fixture_free(&f);
	}
}

/* The line of text starting with `prefix` in s. */
static void assert_line(const char *s, const char *line)
{
	const char *p = s;
	size_t n = strlen(line);
	while ((p = strstr(p, line)) != NULL) {
		if ((p == s || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return;
		p++;
	}
	fail_msg("no line \"%s\" in:\n%s", line, s);
}

/* flux_test.go TestGenerateRange "single node" and "multiple nodes starting
 * at zero" through the cores of R; and upstream's -N/-n/-g flags: nodes from
 * the endpoints, tasks from the TrainJob over the runtime, GPUs from
 * resourcesPerNode. */
static void test_entrypoint_flags(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {\"numProcPerNode\": 1}}", NULL);
	node_pod_set(&f, two_nodes);
	run_build(&f);
	const char *sh = cm_data(&f, "entrypoint.sh");
	assert_memory_equal(sh, "#!/bin/bash\n", 12);
	assert_line(sh, "main_host='test-job-node-0-0'");
	assert_line(sh, "resource_spec='--cores=0'");
	assert_line(sh, "run_flags='-N 2 -n 2'");
	fixture_free(&f);

	fixture_init(&f,
	             "{\"numProcPerNode\": 4, \"resourcesPerNode\": {\"limits\": "
	             "{\"nvidia.com/gpu\": \"2\"}}}",
	             "{\"flux\": {\"numProcPerNode\": 1}}", NULL);
	node_pod_set(&f, two_nodes);
	run_build(&f);
	sh = cm_data(&f, "entrypoint.sh");
	assert_line(sh, "resource_spec='--cores=0-3 --gpu=0-1'");
	assert_line(sh, "run_flags='-N 2 -n 8 -g 2'");
	fixture_free(&f);

	/* the runtime's numProcPerNode and the template's GPUs */
	fixture_init(&f, NULL, "{\"flux\": {\"numProcPerNode\": 3}}", NULL);
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(
	        "{\"replicatedJobs\": [{\"name\": \"node\", \"template\": {\"spec\": "
	        "{\"template\": "
	        "{\"spec\": {\"containers\": [{\"name\": \"node\", \"resources\": {\"requests\": "
	        "{\"amd.com/gpu\": 1}}}]}}}}}]}");
	static const char *const one[] = {"test-job-node-0-0.test-job", NULL};
	node_pod_set(&f, one);
	run_build(&f);
	sh = cm_data(&f, "entrypoint.sh");
	assert_line(sh, "resource_spec='--cores=0-2 --gpu=0'");
	assert_line(sh, "run_flags='-N 1 -n 3 -g 1'");
	fixture_free(&f);
}

/* flux_test.go TestGetOriginalCommand: "full command and args", "command
 * and args with extra spaces"; ours: the template's command when the
 * TrainJob has none (its args still apply). */
static void test_original_command(void **state)
{
	const char *trainers[] = {
	        "{\"image\": \"image\", \"command\": [\"python\"], \"args\": [\"train.py\", "
	        "\"--epochs\", \"10\"]}",
	        "{\"image\": \"image\", \"command\": [\"  python  \"], \"args\": [\" script.py "
	        "\"]}",
	        "{\"args\": [\"--lr\", \"0.1\"]}",
	};
	const char *want[] = {"python train.py --epochs 10", "python    script.py",
	                      "torchrun train.py --lr 0.1"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, trainers[i], "{\"flux\": {}}", NULL);
		kft_pod_set *ps = add_pod_set(&f, "node", "trainer", two_nodes);
		add_container(ps, make_container("node", "[\"torchrun\", \"train.py\"]", NULL));
		run_ml_policy(&f);
		const json_t *cmd = ps->containers[0].command;
		assert_int_equal(json_array_size(cmd), 3);
		assert_string_equal(json_string_value(json_array_get(cmd, 2)), want[i]);
		fixture_free(&f);
	}
}

/* Z85 decoding, written from ZeroMQ RFC 32 independently of flux.c. */
static int z85_value(char c)
{
	static const char digits[] =
	        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        ".-:+=^!/*?&<>()[]{}@%$#";
	const char *p = strchr(digits, c);
	assert_true(c != '\0' && p != NULL);
	return (int)(p - digits);
}

static void z85_decode(const char *s, unsigned char *out)
{
	size_t n = strlen(s);
	assert_int_equal(n % 5, 0);
	for (size_t i = 0; i < n; i += 5) {
		uint64_t v = 0;
		for (size_t k = 0; k < 5; k++)
			v = v * 85 + (uint64_t)z85_value(s[i + k]);
		for (int k = 3; k >= 0; k--) {
			out[i / 5 * 4 + (size_t)k] = (unsigned char)(v & 0xff);
			v >>= 8;
		}
	}
}

/* The quoted value after `key = "` in the cert. */
static void cert_value(const char *cert, const char *key, char *out, size_t size)
{
	const char *p = strstr(cert, key);
	assert_non_null(p);
	p += strlen(key);
	const char *end = strchr(p, '"');
	assert_non_null(end);
	assert_true((size_t)(end - p) < size);
	memcpy(out, p, (size_t)(end - p));
	out[end - p] = '\0';
}

/* flux_test.go TestEncodeZ85 "32 bytes produces 40 characters", "all zeros
 * produces zeros in Z85" (through the RFC's own example, checked by our
 * decoder), TestBuildCurveSecret: name, ZPL layout, 4-space indentation.
 * And the keys are a real X25519 pair: the public key is the secret key's. */
static void test_curve_certificate(void **state)
{
	unsigned char hello[8];
	z85_decode("HelloWorld", hello);
	const unsigned char rfc[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
	assert_memory_equal(hello, rfc, 8);
	z85_decode("00000", hello);
	assert_memory_equal(hello, "\0\0\0\0", 4);

	char *cert = build_cert("12345-67890");
	const char *lines[] = {"metadata", "    name = \"test-job\"", "curve"};
	for (size_t i = 0; i < 3; i++)
		assert_line(cert, lines[i]);
	assert_non_null(strstr(cert, "\n    public-key = \""));
	assert_non_null(strstr(cert, "\n    secret-key = \""));
	assert_true(cert[0] == '#');

	char pub_z85[64], sec_z85[64];
	cert_value(cert, "public-key = \"", pub_z85, sizeof(pub_z85));
	cert_value(cert, "secret-key = \"", sec_z85, sizeof(sec_z85));
	assert_int_equal(strlen(pub_z85), 40);
	assert_int_equal(strlen(sec_z85), 40);
	unsigned char pub[32], sec[32], derived[32];
	z85_decode(pub_z85, pub);
	z85_decode(sec_z85, sec);
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, sec, 32);
	assert_non_null(k);
	size_t len = sizeof(derived);
	assert_int_equal(EVP_PKEY_get_raw_public_key(k, derived, &len), 1);
	assert_int_equal(len, 32);
	assert_memory_equal(derived, pub, 32);
	EVP_PKEY_free(k);
	free(cert);
}

/* flux_test.go TestBuildCurveSecret "Check Uniqueness" (ours goes further:
 * every generation is fresh, even for the same UID), and the Secret is not
 * emitted again while it exists - which is how all pods share one key. */
static void test_curve_secret_fresh_and_kept(void **state)
{
	char *a = build_cert("uid-123"), *b = build_cert("uid-123");
	assert_string_not_equal(a, b);
	free(a);
	free(b);

	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {}}",
	             "[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": "
	             "\"test-job-flux-curve\", \"namespace\": \"default\"}}]");
	node_pod_set(&f, two_nodes);
	run_build(&f);
	assert_int_equal(json_array_size(f.objects), 1);
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(f.objects, 0), "kind")),
	        "ConfigMap");
	fixture_free(&f);
}

/* ---- ours ------------------------------------------------------------------------- */

/* broker.toml from the endpoints, the backend's port and the settings, the
 * TrainJob's env overriding the runtime container's. */
static void test_broker_toml(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"env\": [{\"name\": \"FLUX_QUEUE_POLICY\", \"value\": \"easy\"}, "
	             "{\"name\": \"OTHER\", \"value\": \"x\"}]}",
	             "{\"flux\": {}}", NULL);
	f.backend.service_port = fake_port;
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", two_nodes);
	add_container(ps,
	              make_container("node", NULL,
	                             "[{\"name\": \"FLUX_NETWORK_DEVICE\", \"value\": \"net1\"}, "
	                             "{\"name\": \"FLUX_QUEUE_POLICY\", \"value\": \"fcfs\"}, "
	                             "{\"name\": \"FLUX_VIEW_IMAGE\", \"value\": \"my/view:1\"}]"));
	run_ml_policy(&f);
	assert_string_equal(ps->init_containers[0].image, "my/view:1");
	run_build(&f);
	assert_string_equal(cm_data(&f, "broker.toml"),
	                    "# Flux broker configuration for TrainJob test-job (kftrainer).\n"
	                    "[access]\nallow-guest-user = true\nallow-root-owner = true\n\n"
	                    "# The resource set entrypoint.sh writes with flux R encode.\n"
	                    "[resource]\npath = \"/mnt/flux/config/etc/flux/system/R\"\n\n"
	                    "[bootstrap]\n"
	                    "curve_cert = \"/mnt/flux/config/etc/curve/curve.cert\"\n"
	                    "default_port = 18050\n"
	                    "default_bind = \"tcp://net1:%p\"\n"
	                    "default_connect = \"tcp://%h.test-job:%p\"\n"
	                    "hosts = [\n  { host = \"test-job-node-0-[0-1]\" },\n]\n\n"
	                    "[archive]\n"
	                    "dbpath = \"/mnt/flux/config/var/lib/flux/job-archive.sqlite\"\n"
	                    "period = \"1m\"\nbusytimeout = \"50s\"\n\n"
	                    "[sched-fluxion-qmanager]\nqueue-policy = \"easy\"\n");
	fixture_free(&f);
}

/* Endpoints without one shared domain: one hosts entry each, with its own
 * connect URI; hostile settings stay inside their TOML strings. */
static void test_broker_toml_per_host(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"env\": [{\"name\": \"FLUX_NETWORK_DEVICE\", \"value\": \"a\\\"b\\\\\"}]}",
	             "{\"flux\": {}}", NULL);
	static const char *const eps[] = {"10.0.0.1", "node-b.other", NULL};
	node_pod_set(&f, eps);
	run_build(&f);
	const char *toml = cm_data(&f, "broker.toml");
	assert_line(toml, "default_bind = \"tcp://a\\\"b\\\\:%p\"");
	assert_line(toml, "default_connect = \"tcp://%h:%p\"");
	assert_line(toml, "  { host = \"10.0.0.1\", connect = \"tcp://10.0.0.1:%p\" },");
	assert_line(toml, "  { host = \"node-b\", connect = \"tcp://node-b.other:%p\" },");
	assert_string_equal(cm_data(&f, "hostlist"), "10.0.0.1,node-b\n");
	assert_line(cm_data(&f, "entrypoint.sh"), "main_host='10.0.0.1'");
	fixture_free(&f);
}

/* The ConfigMap carries four files; both scripts parse with bash -n. */
static void test_scripts_parse(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
	static const char *const quote[] = {"it's-node-0-0.x", NULL};
	node_pod_set(&f, quote);
	run_build(&f);
	const json_t *data = json_object_get(json_array_get(f.objects, 0), "data");
	assert_int_equal(json_object_size(data), 4);
	assert_line(cm_data(&f, "entrypoint.sh"), "main_host='it'\\''s-node-0-0'");
	if (access("/bin/bash", X_OK) != 0) {
		fixture_free(&f);
		skip();
	}
	const char *scripts[] = {"init.sh", "entrypoint.sh"};
	for (size_t i = 0; i < 2; i++) {
		char path[] = "/tmp/kft-flux-XXXXXX";
		int fd = mkstemp(path);
		assert_true(fd >= 0);
		const char *text = cm_data(&f, scripts[i]);
		assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "/bin/bash -n %s", path);
		int status = system(cmd);
		unlink(path);
		if (status != 0)
			fail_msg("bash -n rejects %s", scripts[i]);
	}
	fixture_free(&f);
}

/* A Flux runtime needs a "node" job with endpoints to build. */
static void test_build_needs_node_endpoints(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"flux\": {}}", NULL);
	add_pod_set(&f, "trainer", "trainer", two_nodes);
	kft_error err;
	assert_int_equal(kft_plugin_flux.component_builder(&f.ctx, f.info, &f.job, f.objects, &err),
	                 KFT_EINVAL);
	assert_string_equal(err.message, "Flux needs the endpoints of the runtime's \"node\" job");
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

static void test_plugin_table(void **state)
{
	assert_int_equal(kft_plugin_flux.abi_version, KFT_PLUGIN_ABI_VERSION);
	assert_string_equal(kft_plugin_flux.name, "Flux");
	assert_string_equal(kft_plugin_flux.watch_kinds[0], "v1/ConfigMap");
	assert_string_equal(kft_plugin_flux.watch_kinds[1], "v1/Secret");
	assert_null(kft_plugin_flux.watch_kinds[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_flux_policy),
	        cmocka_unit_test(test_flux_mutations),
	        cmocka_unit_test(test_validate_valid),
	        cmocka_unit_test(test_validate_runtime_procs),
	        cmocka_unit_test(test_validate_trainjob_procs),
	        cmocka_unit_test(test_validate_reserved_init_container),
	        cmocka_unit_test(test_hostlist),
	        cmocka_unit_test(test_entrypoint_flags),
	        cmocka_unit_test(test_original_command),
	        cmocka_unit_test(test_curve_certificate),
	        cmocka_unit_test(test_curve_secret_fresh_and_kept),
	        cmocka_unit_test(test_broker_toml),
	        cmocka_unit_test(test_broker_toml_per_host),
	        cmocka_unit_test(test_scripts_parse),
	        cmocka_unit_test(test_build_needs_node_endpoints),
	        cmocka_unit_test(test_plugin_table),
	};
	return cmocka_run_group_tests_name("plugin_flux", tests, NULL, NULL);
}
