/*
 * test_plugin_mpi.c - the MPI plugin (src/plugins/mpi.c).
 *
 * Cases named "mpi_test.go: ..." port upstream v2.3.0's
 * pkg/runtime/framework/plugins/mpi/mpi_test.go (TestMPI and TestValidate):
 * the same RuntimeInfo, TrainJob and backend contents, and the volumes,
 * mounts, environment, counts and objects upstream expects, written as the
 * JSON its apply configurations serialise to. Like upstream's
 * MPISecretDataComparer, the Secret's key data is checked for shape, never
 * for bytes (test_sshkey.c checks the keys themselves). Cases marked "ours"
 * pin behaviour upstream lacks: Intel MPI and MPICH, and our choices.
 *
 * Not ported: "failed to get sshAuth secret due to API error" - a backend's
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

#include <openssl/evp.h>

#include "kftrainer/framework.h"
#include "plugins/builtin.h"
#include "plugins/mpi.h"

/* ---- fixtures ----------------------------------------------------------------- */

#define FIXTURE_JOB_NAME "trainJob"
#define FIXTURE_JOB_UID  "trainJob"
#include "mlpolicy_fixture.h"

static kft_container make_container(const char *name)
{
	kft_container c = {.name = strdup(name),
	                   .command = json_array(),
	                   .env = json_array(),
	                   .ports = json_array(),
	                   .volume_mounts = json_array()};
	return c;
}

/* A pod set with the named "containers" (space-separated, may be "") and
 * endpoints (NULL-terminated). The array has room for MAX_POD_SETS, so the
 * pointers returned stay valid. */
static kft_pod_set *add_pod_set(fixture *f, const char *name, const char *ancestor, int32_t count,
                                const char *containers, const char *const *endpoints)
{
	kft_runtime_info *info = f->info;
	assert_true(info->n_pod_sets < MAX_POD_SETS);
	kft_pod_set *ps = &info->pod_sets[info->n_pod_sets++];
	memset(ps, 0, sizeof(*ps));
	ps->name = strdup(name);
	ps->ancestor = ancestor ? strdup(ancestor) : NULL;
	ps->count = count;
	ps->replicas = 1;
	ps->volumes = json_array();
	ps->single_pod_requests = json_object();
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", containers);
	for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
		ps->containers =
		        realloc(ps->containers, (ps->n_containers + 1) * sizeof(kft_container));
		ps->containers[ps->n_containers++] = make_container(tok);
	}
	for (size_t i = 0; endpoints && endpoints[i]; i++) {
		ps->endpoints = realloc(ps->endpoints, (ps->n_endpoints + 1) * sizeof(char *));
		ps->endpoints[ps->n_endpoints++] = strdup(endpoints[i]);
	}
	return ps;
}

static int run_ml_policy(fixture *f, kft_error *err)
{
	return kft_plugin_mpi.enforce_ml_policy(&f->ctx, f->info, &f->job, err);
}

static int run_build(fixture *f)
{
	kft_error err;
	int rc = kft_plugin_mpi.component_builder(&f->ctx, f->info, &f->job, f->objects, &err);
	if (rc != 0)
		fail_msg("component_builder: %s", err.message);
	return rc;
}

/* ---- expectations ----------------------------------------------------------------- */

#define SSH_VOLUME                                                                                 \
	"{\"name\": \"mpi-ssh-auth\", \"secret\": {\"secretName\": \"trainJob-mpi-ssh-auth\", "    \
	"\"defaultMode\": 256, \"items\": ["                                                       \
	"{\"key\": \"ssh-privatekey\", \"path\": \"id_rsa\", \"mode\": 416}, "                     \
	"{\"key\": \"ssh-publickey\", \"path\": \"id_rsa.pub\", \"mode\": 420}, "                  \
	"{\"key\": \"ssh-publickey\", \"path\": \"authorized_keys\", \"mode\": 420}]}}"
#define HOSTFILE_VOLUME                                                                            \
	"{\"name\": \"mpi-hostfile\", \"configMap\": {\"name\": \"trainJob-mpi-hostfile\", "       \
	"\"items\": [{\"key\": \"hostfile\", \"path\": \"hostfile\", \"mode\": 292}]}}"
#define OWNER                                                                                      \
	"[{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"TrainJob\", "            \
	"\"name\": \"trainJob\", \"uid\": \"trainJob\", \"controller\": true, "                    \
	"\"blockOwnerDeletion\": true}]"
#define OPENMPI_ENV(slots)                                                                         \
	"[{\"name\": \"OMPI_MCA_orte_default_hostfile\", \"value\": \"/etc/mpi/hostfile\"}, "      \
	"{\"name\": \"OMPI_MCA_orte_keep_fqdn_hostnames\", \"value\": \"true\"}, "                 \
	"{\"name\": \"OMPI_MCA_orte_set_default_slots\", \"value\": \"" slots "\"}, "              \
	"{\"name\": \"OMPI_MCA_plm_rsh_args\", \"value\": \"-o ConnectionAttempts=10\"}]"

#define OPENMPI_POLICY(extra)                                                                      \
	"{\"mpi\": {\"numProcPerNode\": 1, \"mpiImplementation\": \"OpenMPI\", "                   \
	"\"sshAuthMountPath\": \"/root/.ssh\"" extra "}}"

static const char *const launcher_ep[] = {"trainJob-launcher-0-0.trainJob", NULL};

static char *base64_decode(const char *b64)
{
	size_t n = strlen(b64);
	unsigned char *out = calloc(1, n + 1);
	assert_non_null(out);
	int got = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
	assert_true(got >= 0);
	return (char *)out;
}

/* The Secret upstream builds, with its data checked for shape only. */
static void assert_ssh_secret(const json_t *secret)
{
	assert_string_equal(json_string_value(json_object_get(secret, "apiVersion")), "v1");
	assert_string_equal(json_string_value(json_object_get(secret, "kind")), "Secret");
	expect_json(json_object_get(secret, "metadata"),
	            "{\"name\": \"trainJob-mpi-ssh-auth\", \"namespace\": \"default\", "
	            "\"ownerReferences\": " OWNER "}");
	assert_true(json_is_true(json_object_get(secret, "immutable")));
	assert_string_equal(json_string_value(json_object_get(secret, "type")),
	                    "kubernetes.io/ssh-auth");
	const json_t *data = json_object_get(secret, "data");
	assert_int_equal(json_object_size(data), 2);
	char *priv = base64_decode(json_string_value(json_object_get(data, "ssh-privatekey")));
	char *pub = base64_decode(json_string_value(json_object_get(data, "ssh-publickey")));
	assert_memory_equal(priv, "-----BEGIN EC PRIVATE KEY-----\n", 31);
	assert_memory_equal(pub, "ecdsa-sha2-nistp521 AAAA", 24);
	free(priv);
	free(pub);
}

static void assert_hostfile_configmap(const json_t *cm, const char *hostfile)
{
	assert_string_equal(json_string_value(json_object_get(cm, "apiVersion")), "v1");
	assert_string_equal(json_string_value(json_object_get(cm, "kind")), "ConfigMap");
	expect_json(json_object_get(cm, "metadata"),
	            "{\"name\": \"trainJob-mpi-hostfile\", \"namespace\": \"default\", "
	            "\"ownerReferences\": " OWNER "}");
	const json_t *data = json_object_get(cm, "data");
	assert_int_equal(json_object_size(data), 1);
	assert_string_equal(json_string_value(json_object_get(data, "hostfile")), hostfile);
}

/* ---- TestMPI ---------------------------------------------------------------------- */

/* mpi_test.go: "no action when info is nil" */
static void test_no_info(void **state)
{
	fixture f;
	fixture_init(&f, NULL, NULL, NULL);
	assert_int_equal(kft_plugin_mpi.enforce_ml_policy(&f.ctx, NULL, &f.job, NULL), 0);
	assert_int_equal(kft_plugin_mpi.component_builder(&f.ctx, NULL, &f.job, f.objects, NULL),
	                 0);
	assert_int_equal(json_array_size(f.objects), 0);
	fixture_free(&f);
}

/* mpi_test.go: "no action when mlPolicySource is nil" and "no action when
 * mlPolicySource mpi is null" */
static void test_no_mpi_policy(void **state)
{
	const char *policies[] = {NULL, "{}", "{\"torch\": {}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, "{\"numNodes\": 3}", policies[i], NULL);
		json_object_set_new(f.info->labels, "key", json_string("value"));
		kft_pod_set *node = add_pod_set(&f, "node", "trainer", 1, "node", NULL);
		assert_int_equal(run_ml_policy(&f, NULL), 0);
		assert_int_equal(node->count, 1);
		assert_int_equal(json_array_size(node->volumes), 0);
		assert_int_equal(json_array_size(node->containers[0].volume_mounts), 0);
		expect_json(f.info->labels, "{\"key\": \"value\"}");
		assert_int_equal(run_build(&f), 0);
		assert_int_equal(json_array_size(f.objects), 0);
		fixture_free(&f);
	}
}

/* mpi_test.go: "trainJob numNodes is respected rather than mlPolicy one" */
static void test_trainjob_num_nodes(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 2}", OPENMPI_POLICY(""), NULL);
	const char *const node_ep[] = {"trainJob-node-1-0.trainJob", "trainJob-node-1-1.trainJob",
	                               NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "", launcher_ep);
	kft_pod_set *node = add_pod_set(&f, "node", "trainer", 1, "", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(launcher->count, 1);
	assert_int_equal(node->count, 2);
	expect_json(launcher->volumes, "[" SSH_VOLUME ", " HOSTFILE_VOLUME "]");
	expect_json(node->volumes, "[" SSH_VOLUME "]");

	assert_int_equal(run_build(&f), 0);
	assert_int_equal(json_array_size(f.objects), 2);
	assert_ssh_secret(json_array_get(f.objects, 0));
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-node-1-0.trainJob slots=1\n"
	                          "trainJob-node-1-1.trainJob slots=1\n");
	fixture_free(&f);
}

/* mpi_test.go: "trainJob numProcPerNode is respected rather than mlPolicy one" */
static void test_trainjob_num_proc_per_node(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 1, \"numProcPerNode\": 2}", OPENMPI_POLICY(""), NULL);
	const char *const node_ep[] = {"trainJob-node-1-0.trainJob", NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "", launcher_ep);
	kft_pod_set *node = add_pod_set(&f, "node", "trainer", 1, "", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(node->count, 1);
	expect_json(launcher->volumes, "[" SSH_VOLUME ", " HOSTFILE_VOLUME "]");
	expect_json(node->volumes, "[" SSH_VOLUME "]");

	assert_int_equal(run_build(&f), 0);
	assert_int_equal(json_array_size(f.objects), 2);
	assert_ssh_secret(json_array_get(f.objects, 0));
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-node-1-0.trainJob slots=2\n");
	fixture_free(&f);
}

/* mpi_test.go: "numProcPerNode is set to number of GPUs in TrainJob" */
static void test_gpus_in_trainjob(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"numNodes\": 1, \"image\": \"test:trainjob\", \"command\": [\"trainjob\"], "
	             "\"args\": [\"trainjob\"], \"resourcesPerNode\": {\"requests\": "
	             "{\"custom.com/gpu\": \"5\"}}}",
	             OPENMPI_POLICY(""), NULL);
	const char *const node_ep[] = {"trainJob-node-1-0.trainJob", NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "", launcher_ep);
	kft_pod_set *node = add_pod_set(&f, "node", "trainer", 1, "", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(launcher->volumes, "[" SSH_VOLUME ", " HOSTFILE_VOLUME "]");
	expect_json(node->volumes, "[" SSH_VOLUME "]");

	assert_int_equal(run_build(&f), 0);
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-node-1-0.trainJob slots=5\n");
	fixture_free(&f);
}

/* mpi_test.go: "runLauncherAsNode is true" */
static void test_run_launcher_as_node(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 10}", OPENMPI_POLICY(", \"runLauncherAsNode\": true"),
	             NULL);
	const char *const node_ep[] = {"trainJob-node-1-0.trainJob", NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "node", launcher_ep);
	kft_pod_set *node = add_pod_set(&f, "node", "trainer", 1, "node", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(launcher->count, 1);
	assert_int_equal(node->count, 9);
	expect_json(launcher->containers[0].volume_mounts,
	            "[{\"name\": \"mpi-ssh-auth\", \"mountPath\": \"/root/.ssh\"}, "
	            "{\"name\": \"mpi-hostfile\", \"mountPath\": \"/etc/mpi\"}]");
	expect_json(launcher->containers[0].env, OPENMPI_ENV("1"));
	expect_json(launcher->volumes, "[" SSH_VOLUME ", " HOSTFILE_VOLUME "]");
	expect_json(node->containers[0].volume_mounts,
	            "[{\"name\": \"mpi-ssh-auth\", \"mountPath\": \"/root/.ssh\"}]");
	expect_json(node->containers[0].env, "[]");
	expect_json(node->volumes, "[" SSH_VOLUME "]");

	assert_int_equal(run_build(&f), 0);
	assert_int_equal(json_array_size(f.objects), 2);
	assert_ssh_secret(json_array_get(f.objects, 0));
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-launcher-0-0.trainJob slots=1\n"
	                          "trainJob-node-1-0.trainJob slots=1\n");
	fixture_free(&f);
}

/* mpi_test.go: "sshAuth secret already has existed in the cluster" */
static void test_existing_secret_is_kept(void **state)
{
	fixture f;
	fixture_init(
	        &f, NULL, OPENMPI_POLICY(", \"runLauncherAsNode\": true"),
	        "[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": "
	        "\"trainJob-mpi-ssh-auth\", \"namespace\": \"default\"}, \"immutable\": true}]");
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "", launcher_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(launcher->volumes, "[" SSH_VOLUME ", " HOSTFILE_VOLUME "]");

	assert_int_equal(run_build(&f), 0);
	assert_int_equal(json_array_size(f.objects), 1);
	assert_hostfile_configmap(json_array_get(f.objects, 0),
	                          "trainJob-launcher-0-0.trainJob slots=1\n");
	fixture_free(&f);
}

/* One GPU count for every plugin (kft_resources_gpus): a GPU quantity that
 * does not parse is an error naming the resource, as torch and xgboost gave,
 * where MPI used to read it as no GPU and start one rank per node. */
static void test_procs_bad_gpu_quantity(void **state)
{
	(void)state;
	fixture f;
	kft_error err = {0};
	fixture_init(&f, "{\"resourcesPerNode\": {\"limits\": {\"nvidia.com/gpu\": \"two\"}}}",
	             "{\"mpi\": {\"numProcPerNode\": 1}}", NULL);
	assert_int_equal(run_ml_policy(&f, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "trainer resources: limits[nvidia.com/gpu]"));
	fixture_free(&f);
}

/* ours: a runtime numProcPerNode other than 1 is kept even with GPUs, and
 * a runtime of 1 takes the GPU limits of the template's node container
 * (ExtractResourcePerNodeFromRuntime) when requests name none. */
static void test_procs_from_runtime(void **state)
{
	const char *const node_ep[] = {"trainJob-node-0-0.trainJob", NULL};
	fixture f;
	fixture_init(&f, "{\"resourcesPerNode\": {\"limits\": {\"nvidia.com/gpu\": 4}}}",
	             "{\"mpi\": {\"numProcPerNode\": 3}}", NULL);
	add_pod_set(&f, "node", "trainer", 1, "", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(run_build(&f), 0);
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-node-0-0.trainJob slots=3\n");
	fixture_free(&f);

	fixture_init(&f, NULL, "{\"mpi\": {\"numProcPerNode\": 1}}", NULL);
	json_decref(f.info->template_spec);
	f.info->template_spec =
	        parse("{\"replicatedJobs\": [{\"name\": \"node\", \"template\": {\"spec\": "
	              "{\"template\": {\"spec\": {\"containers\": [{\"name\": \"node\", "
	              "\"resources\": {\"requests\": {\"cpu\": \"1\"}, \"limits\": "
	              "{\"example.com/GPU\": \"2\"}}}]}}}}}]}");
	add_pod_set(&f, "node", "trainer", 1, "", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(run_build(&f), 0);
	assert_hostfile_configmap(json_array_get(f.objects, 1),
	                          "trainJob-node-0-0.trainJob slots=2\n");
	fixture_free(&f);
}

/* ours: sshAuthMountPath is where the key goes; defaults apply to an
 * undefaulted policy (OpenMPI, /root/.ssh, 1 process). */
static void test_mount_path_and_defaults(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"mpi\": {\"sshAuthMountPath\": \"/home/mpiuser/.ssh\"}}", NULL);
	kft_pod_set *launcher = add_pod_set(&f, "launcher", "trainer", 1, "node", launcher_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(launcher->containers[0].volume_mounts,
	            "[{\"name\": \"mpi-ssh-auth\", \"mountPath\": \"/home/mpiuser/.ssh\"}, "
	            "{\"name\": \"mpi-hostfile\", \"mountPath\": \"/etc/mpi\"}]");
	expect_json(launcher->containers[0].env, OPENMPI_ENV("1"));
	fixture_free(&f);
}

/* ours: "" is the documented default, OpenMPI; anything else the plugin
 * does not drive fails with upstream's message when the launcher is wired. */
static void test_implementation_names(void **state)
{
	fixture f;
	fixture_init(&f, NULL, "{\"mpi\": {\"mpiImplementation\": \"\"}}", NULL);
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "node", launcher_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(launcher->containers[0].env, OPENMPI_ENV("1"));
	fixture_free(&f);

	fixture_init(&f, NULL, "{\"mpi\": {\"mpiImplementation\": \"MVAPICH\"}}", NULL);
	add_pod_set(&f, "launcher", NULL, 1, "node", launcher_ep);
	kft_error err;
	assert_int_equal(run_ml_policy(&f, &err), KFT_EINVAL);
	assert_string_equal(err.message, "MPI implementation for MVAPICH doesn't supported");
	fixture_free(&f);
}

/* ours: Intel MPI - "host:slots" lines, I_MPI_* variables, and the node
 * pods' DNS search domain so Hydra proxies can reach the launcher. */
static void test_intel_mpi(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 2, \"numProcPerNode\": 4}",
	             "{\"mpi\": {\"mpiImplementation\": \"Intel\"}}", NULL);
	json_decref(f.info->template_spec);
	f.info->template_spec = parse(
	        "{\"replicatedJobs\": [{\"name\": \"launcher\", \"template\": {\"spec\": "
	        "{\"template\": "
	        "{\"spec\": {\"containers\": [{\"name\": \"node\"}]}}}}}, {\"name\": \"node\", "
	        "\"template\": {\"spec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": "
	        "\"node\"}], \"dnsConfig\": {\"searches\": [\"example.org\"]}}}}}}]}");
	const char *const node_ep[] = {"trainJob-node-0-0.trainJob", "trainJob-node-0-1.trainJob",
	                               NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "node", launcher_ep);
	add_pod_set(&f, "node", "trainer", 1, "node", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(
	        launcher->containers[0].env,
	        "[{\"name\": \"I_MPI_HYDRA_HOST_FILE\", \"value\": \"/etc/mpi/hostfile\"}, "
	        "{\"name\": \"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS\", \"value\": "
	        "\"-o ConnectionAttempts=10\"}, {\"name\": \"I_MPI_PERHOST\", \"value\": \"4\"}]");
	assert_int_equal(kft_plugin_mpi.enforce_pod_spec(&f.ctx, f.info, &f.job, NULL), 0);
	/* twice: the domain is added once */
	assert_int_equal(kft_plugin_mpi.enforce_pod_spec(&f.ctx, f.info, &f.job, NULL), 0);
	const json_t *rjobs = json_object_get(f.info->template_spec, "replicatedJobs");
	expect_json(json_array_get(rjobs, 1),
	            "{\"name\": \"node\", \"template\": {\"spec\": {\"template\": {\"spec\": "
	            "{\"containers\": [{\"name\": \"node\"}], \"dnsConfig\": {\"searches\": "
	            "[\"example.org\", \"trainJob.default.svc.cluster.local\"]}}}}}}");
	assert_null(json_object_get(
	        json_object_get(
	                json_object_get(json_object_get(json_object_get(json_array_get(rjobs, 0),
	                                                                "template"),
	                                                "spec"),
	                                "template"),
	                "spec"),
	        "dnsConfig"));

	assert_int_equal(run_build(&f), 0);
	assert_hostfile_configmap(json_array_get(f.objects, 1), "trainJob-node-0-0.trainJob:4\n"
	                                                        "trainJob-node-0-1.trainJob:4\n");
	fixture_free(&f);
}

/* ours: MPICH - "host:slots" lines (runLauncherAsNode adds the launcher),
 * HYDRA_* variables, no slots variable; a node template without dnsConfig
 * gets one. */
static void test_mpich(void **state)
{
	fixture f;
	fixture_init(&f, NULL,
	             "{\"mpi\": {\"mpiImplementation\": \"MPICH\", \"numProcPerNode\": 2, "
	             "\"runLauncherAsNode\": true}}",
	             NULL);
	json_decref(f.info->template_spec);
	f.info->template_spec = parse("{\"replicatedJobs\": [{\"name\": \"node\", \"template\": "
	                              "{\"spec\": {\"template\": {\"spec\": {}}}}}]}");
	const char *const node_ep[] = {"trainJob-node-0-0.trainJob", NULL};
	kft_pod_set *launcher = add_pod_set(&f, "launcher", NULL, 1, "node", launcher_ep);
	add_pod_set(&f, "node", "trainer", 1, "node", node_ep);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	expect_json(launcher->containers[0].env,
	            "[{\"name\": \"HYDRA_HOST_FILE\", \"value\": \"/etc/mpi/hostfile\"}, "
	            "{\"name\": \"HYDRA_LAUNCH_EXTRA_ARGS\", \"value\": "
	            "\"-o ConnectionAttempts=10\"}]");
	assert_int_equal(kft_plugin_mpi.enforce_pod_spec(&f.ctx, f.info, &f.job, NULL), 0);
	expect_json(f.info->template_spec,
	            "{\"replicatedJobs\": [{\"name\": \"node\", \"template\": {\"spec\": "
	            "{\"template\": {\"spec\": {\"dnsConfig\": {\"searches\": "
	            "[\"trainJob.default.svc.cluster.local\"]}}}}}}]}");
	assert_int_equal(run_build(&f), 0);
	assert_hostfile_configmap(json_array_get(f.objects, 1), "trainJob-launcher-0-0.trainJob:2\n"
	                                                        "trainJob-node-0-0.trainJob:2\n");
	fixture_free(&f);
}

/* ours: addresses without a domain (a local backend's) get no search
 * domain; OpenMPI never does. */
static void test_no_search_domain(void **state)
{
	const char *policies[] = {"{\"mpi\": {\"mpiImplementation\": \"Intel\"}}",
	                          "{\"mpi\": {\"mpiImplementation\": \"MPICH\"}}",
	                          "{\"mpi\": {\"mpiImplementation\": \"OpenMPI\"}}"};
	const char *const local_ep[] = {"127.0.0.1", NULL};
	const char *const short_ep[] = {"localhost", NULL};
	const char *const *eps[] = {local_ep, short_ep, launcher_ep};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, NULL, policies[i], NULL);
		json_decref(f.info->template_spec);
		f.info->template_spec = parse("{\"replicatedJobs\": [{\"name\": \"node\", "
		                              "\"template\": {\"spec\": {\"template\": {\"spec\": "
		                              "{}}}}}]}");
		add_pod_set(&f, "launcher", NULL, 1, "node", eps[i]);
		add_pod_set(&f, "node", "trainer", 1, "node", NULL);
		assert_int_equal(kft_plugin_mpi.enforce_pod_spec(&f.ctx, f.info, &f.job, NULL), 0);
		expect_json(f.info->template_spec,
		            "{\"replicatedJobs\": [{\"name\": \"node\", \"template\": {\"spec\": "
		            "{\"template\": {\"spec\": {}}}}}]}");
		fixture_free(&f);
	}
}

/* ours: a backend that runs several pods on one host (the local engine:
 * every pod is 127.0.0.1) gets one hostfile line per host with the slots
 * summed, in first-seen order, for OpenMPI 4.1 refuses a repeated host;
 * distinct addresses (a cluster's) are listed as they are. */
static void test_hostfile_merges_repeated_hosts(void **state)
{
	(void)state;
	static const char *const same[] = {"127.0.0.1", "127.0.0.1", "127.0.0.1", NULL};
	static const char *const two[] = {"127.0.0.2", "127.0.0.1", NULL};
	const struct {
		const char *policy;
		const char *const *launcher, *const *node;
		const char *want;
	} cases[] = {
	        {OPENMPI_POLICY(""), launcher_ep, same, "127.0.0.1 slots=3\n"},
	        {"{\"mpi\": {\"mpiImplementation\": \"Intel\"}}", launcher_ep, two,
	         "127.0.0.2:1\n127.0.0.1:1\n"},
	        {"{\"mpi\": {\"mpiImplementation\": \"MPICH\", \"runLauncherAsNode\": true}}", same,
	         same, "127.0.0.1:6\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fixture f;
		fixture_init(&f, NULL, cases[i].policy, NULL);
		add_pod_set(&f, "launcher", NULL, 1, "", cases[i].launcher);
		add_pod_set(&f, "node", "trainer", 1, "", cases[i].node);
		assert_int_equal(run_ml_policy(&f, NULL), 0);
		assert_int_equal(run_build(&f), 0);
		const json_t *cm = json_array_get(f.objects, 1);
		assert_string_equal(
		        json_string_value(json_object_get(json_object_get(cm, "data"), "hostfile")),
		        cases[i].want);
		fixture_free(&f);
	}
}

/* ours: what the local engine asks instead of knowing the launcher's name:
 * the node job of a JobSet with a launcher is started by it. */
static void test_started_by_launcher(void **state)
{
	(void)state;
	json_t *mpi = parse("{\"replicatedJobs\": [{\"name\": \"launcher\"}, "
	                    "{\"name\": \"node\"}]}");
	json_t *torch = parse("{\"replicatedJobs\": [{\"name\": \"node\"}]}");
	assert_true(kft_mpi_started_by_launcher(mpi, "node"));
	assert_false(kft_mpi_started_by_launcher(mpi, "launcher"));
	assert_false(kft_mpi_started_by_launcher(mpi, NULL));
	assert_false(kft_mpi_started_by_launcher(torch, "node"));
	assert_false(kft_mpi_started_by_launcher(NULL, "node"));
	json_decref(mpi);
	json_decref(torch);
}

/* ours: with the default backend (render) there is no UID, and the owner
 * reference leaves it out; the hostfile is empty without endpoints. */
static void test_render_backend(void **state)
{
	fixture f;
	fixture_init(&f, NULL, OPENMPI_POLICY(""), NULL);
	f.ctx.backend = kft_backend_default();
	add_pod_set(&f, "node", "trainer", 1, "", NULL);
	assert_int_equal(run_ml_policy(&f, NULL), 0);
	assert_int_equal(run_build(&f), 0);
	assert_int_equal(json_array_size(f.objects), 2);
	const json_t *cm = json_array_get(f.objects, 1);
	expect_json(json_object_get(cm, "metadata"),
	            "{\"name\": \"trainJob-mpi-hostfile\", \"namespace\": \"default\", "
	            "\"ownerReferences\": [{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", "
	            "\"kind\": \"TrainJob\", \"name\": \"trainJob\", \"controller\": true, "
	            "\"blockOwnerDeletion\": true}]}");
	expect_json(json_object_get(cm, "data"), "{\"hostfile\": \"\"}");
	fixture_free(&f);
}

/* ---- TestValidate ----------------------------------------------------------------- */

/* Runs CustomValidation and compares every error line with want
 * ("\n"-joined; "" for none). */
static void assert_validation(fixture *f, const char *want)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_plugin_mpi.custom_validation(&f->ctx, f->info, NULL, f->job_obj, &errs);
	char got[2048] = "";
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "\n" : "", line);
		free(line);
	}
	assert_int_equal(errs.nwarnings, 0);
	kft_field_errors_free(&errs);
	assert_string_equal(got, want);
}

/* mpi_test.go: "no action when info is nil ", "no action when info does not
 * have MLPolicySource", "info does not have MPIPolicySource" */
static void test_validate_without_mpi(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 2, \"env\": [{\"name\": \"OMPI_MCA_plm_rsh_args\"}]}",
	             "{}", NULL);
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_plugin_mpi.custom_validation(&f.ctx, NULL, NULL, f.job_obj, &errs);
	assert_int_equal(errs.count, 0);
	kft_field_errors_free(&errs);
	assert_validation(&f, "");
	f.info->ml_policy = NULL;
	assert_validation(&f, "");
	fixture_free(&f);
}

/* mpi_test.go: "numProcPerNode typed is int" */
static void test_validate_num_proc_per_node(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numProcPerNode\": 8}", "{\"mpi\": {\"numProcPerNode\": 1}}", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

#define LAUNCHER_AS_NODE_POLICY "{\"mpi\": {\"numProcPerNode\": 1, \"runLauncherAsNode\": true}}"
#define LAUNCHER_AS_NODE_ERROR                                                                     \
	"spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with "      \
	"enabled runLauncherAsNode does not have either launcher and node"

/* mpi_test.go: "runtime does not have Launcher but TrainJob has only 1 numNodes" */
static void test_validate_one_node_without_launcher(void **state)
{
	fixture f;
	fixture_init(&f, "{\"numNodes\": 1}", LAUNCHER_AS_NODE_POLICY, NULL);
	add_pod_set(&f, "node", "trainer", 1, "node", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

/* mpi_test.go: "runtime does not have Launcher even though MPI with
 * runLauncherAsNode has 2 numNodes", "runtime does not have Node ...",
 * "runtime does not have Launcher and Node ..." */
static void test_validate_two_nodes_missing_jobs(void **state)
{
	const char *sets[] = {"node", "launcher", NULL};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, "{\"numNodes\": 2}", LAUNCHER_AS_NODE_POLICY, NULL);
		if (sets[i])
			add_pod_set(&f, sets[i], NULL, 1, "node", NULL);
		assert_validation(&f, LAUNCHER_AS_NODE_ERROR);
		fixture_free(&f);
	}
	/* ours: with both jobs, or without runLauncherAsNode, 2 nodes are fine */
	fixture f;
	fixture_init(&f, "{\"numNodes\": 2}", LAUNCHER_AS_NODE_POLICY, NULL);
	add_pod_set(&f, "launcher", NULL, 1, "node", NULL);
	add_pod_set(&f, "node", "trainer", 1, "node", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
	fixture_init(&f, "{\"numNodes\": 2}", "{\"mpi\": {}}", NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

/* mpi_test.go: "trainer has reserved MPI env OMPI_MCA_orte_default_hostfile" */
static void test_validate_reserved_env(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"env\": [{\"value\": \"/custom/hostfile\", \"name\": "
	             "\"OMPI_MCA_orte_default_hostfile\"}]}",
	             "{\"mpi\": {\"numProcPerNode\": 1, \"mpiImplementation\": \"OpenMPI\"}}",
	             NULL);
	assert_validation(&f, "spec.trainer.env: Invalid value: "
	                      "[{\"name\":\"OMPI_MCA_orte_default_hostfile\",\"value\":\"/custom/"
	                      "hostfile\"}]: must not have reserved envs, invalid envs configured: "
	                      "[OMPI_MCA_orte_default_hostfile]");
	fixture_free(&f);
}

/* mpi_test.go: "trainer has multiple reserved MPI envs" */
static void test_validate_multiple_reserved_env(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"env\": [{\"name\": \"OMPI_MCA_orte_default_hostfile\", \"value\": "
	             "\"/custom/hostfile\"}, {\"name\": \"OMPI_MCA_plm_rsh_args\", \"value\": "
	             "\"custom-args\"}]}",
	             "{\"mpi\": {\"numProcPerNode\": 1, \"mpiImplementation\": \"OpenMPI\"}}",
	             NULL);
	assert_validation(&f, "spec.trainer.env: Invalid value: "
	                      "[{\"name\":\"OMPI_MCA_orte_default_hostfile\",\"value\":\"/custom/"
	                      "hostfile\"},{\"name\":\"OMPI_MCA_plm_rsh_args\",\"value\":\"custom-"
	                      "args\"}]: must not have reserved envs, invalid envs configured: "
	                      "[OMPI_MCA_orte_default_hostfile OMPI_MCA_plm_rsh_args]");
	fixture_free(&f);
}

/* mpi_test.go: "trainer has non-reserved env is valid" */
static void test_validate_plain_env(void **state)
{
	fixture f;
	fixture_init(&f, "{\"env\": [{\"name\": \"CUSTOM_ENV\", \"value\": \"custom-value\"}]}",
	             "{\"mpi\": {\"numProcPerNode\": 1, \"mpiImplementation\": \"OpenMPI\"}}",
	             NULL);
	assert_validation(&f, "");
	fixture_free(&f);
}

/* ours: an Intel runtime reserves its own variables besides OpenMPI's;
 * names are listed sorted and once; valueFrom is shown as Go marshals it. */
static void test_validate_intel_reserved_env(void **state)
{
	fixture f;
	fixture_init(&f,
	             "{\"env\": [{\"name\": \"I_MPI_PERHOST\", \"value\": \"2\"}, {\"name\": "
	             "\"OMPI_MCA_orte_set_default_slots\", \"valueFrom\": {\"fieldRef\": "
	             "{\"fieldPath\": \"x\"}}}, {\"name\": \"I_MPI_PERHOST\", \"value\": \"\"}, "
	             "{\"name\": \"HYDRA_HOST_FILE\"}]}",
	             "{\"mpi\": {\"mpiImplementation\": \"Intel\"}}", NULL);
	assert_validation(&f,
	                  "spec.trainer.env: Invalid value: "
	                  "[{\"name\":\"I_MPI_PERHOST\",\"value\":\"2\"},{\"name\":\"OMPI_MCA_"
	                  "orte_set_default_slots\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
	                  "\"x\"}}},{\"name\":\"I_MPI_PERHOST\"},{\"name\":\"HYDRA_HOST_FILE\"}]: "
	                  "must not have reserved envs, invalid envs configured: "
	                  "[I_MPI_PERHOST OMPI_MCA_orte_set_default_slots]");
	fixture_free(&f);
}

static void test_plugin_table(void **state)
{
	assert_int_equal(kft_plugin_mpi.abi_version, KFT_PLUGIN_ABI_VERSION);
	assert_string_equal(kft_plugin_mpi.name, "MPI");
	assert_string_equal(kft_plugin_mpi.watch_kinds[0], "v1/ConfigMap");
	assert_string_equal(kft_plugin_mpi.watch_kinds[1], "v1/Secret");
	assert_null(kft_plugin_mpi.watch_kinds[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_no_info),
	        cmocka_unit_test(test_no_mpi_policy),
	        cmocka_unit_test(test_trainjob_num_nodes),
	        cmocka_unit_test(test_trainjob_num_proc_per_node),
	        cmocka_unit_test(test_gpus_in_trainjob),
	        cmocka_unit_test(test_run_launcher_as_node),
	        cmocka_unit_test(test_existing_secret_is_kept),
	        cmocka_unit_test(test_procs_from_runtime),
	        cmocka_unit_test(test_procs_bad_gpu_quantity),
	        cmocka_unit_test(test_mount_path_and_defaults),
	        cmocka_unit_test(test_implementation_names),
	        cmocka_unit_test(test_intel_mpi),
	        cmocka_unit_test(test_mpich),
	        cmocka_unit_test(test_no_search_domain),
	        cmocka_unit_test(test_render_backend),
	        cmocka_unit_test(test_hostfile_merges_repeated_hosts),
	        cmocka_unit_test(test_started_by_launcher),
	        cmocka_unit_test(test_validate_without_mpi),
	        cmocka_unit_test(test_validate_num_proc_per_node),
	        cmocka_unit_test(test_validate_one_node_without_launcher),
	        cmocka_unit_test(test_validate_two_nodes_missing_jobs),
	        cmocka_unit_test(test_validate_reserved_env),
	        cmocka_unit_test(test_validate_multiple_reserved_env),
	        cmocka_unit_test(test_validate_plain_env),
	        cmocka_unit_test(test_validate_intel_reserved_env),
	        cmocka_unit_test(test_plugin_table),
	};
	return cmocka_run_group_tests_name("plugin_mpi", tests, NULL, NULL);
}
