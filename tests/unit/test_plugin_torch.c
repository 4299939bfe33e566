/*
 * test_plugin_torch.c - the Torch plugin and its torchtune rules.
 *
 * Ported from upstream Kubeflow Trainer v2.3.0:
 *   pkg/runtime/framework/plugins/torch/torch_test.go
 *       TestTorchEnforceMLPolicy (28 cases)  -> enforce_cases[] and test_* below
 *       TestTorchValidate (15 cases)         -> validate_cases[]
 *   pkg/runtime/framework/plugins/torch/torchtune_test.go
 *       TestGetModelFromRuntimeRef (5), TestIsLoraConfigEnabled (3),
 *       TestIsUseQLoraFinetune (6), TestGetRecipeAndConfig (9),
 *       TestExtractOverridesFromRuntime (4)  -> test_torchtune_*
 * Every case names the upstream case it pins ("torch_test.go: '<name>'").
 * Cases marked "kftrainer:" pin what upstream lacks: the v2.0 runtime
 * numProcPerNode, elasticPolicy, and taking addresses from the backend.
 *
 * JSON in this file is written with ` for " so the tables stay readable.
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
#include "plugins/torchtune.h"

#define RANK_PATH "metadata.annotations['batch.kubernetes.io/job-completion-index']"

/* ---- fixtures ------------------------------------------------------------------ */

#include "plugin_fixture.h"

static int enforce(fixture *f, const kft_backend *backend, kft_error *err)
{
	kft_plugin_ctx ctx = {.backend = backend ? backend : kft_backend_default()};
	return kft_plugin_torch.enforce_ml_policy(&ctx, f->info, &f->job, err);
}

/* The PET_* env upstream expects, master endpoint included unless host is
 * NULL (torchtune's main container). */
static json_t *pet_env(const char *nnodes, const char *nproc, const char *host, int port)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", port);
	json_t *env =
	        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:{s:{s:s}}}]", "name", "PET_NNODES", "value",
	                  nnodes, "name", "PET_NPROC_PER_NODE", "value", nproc, "name",
	                  "PET_NODE_RANK", "valueFrom", "fieldRef", "fieldPath", RANK_PATH);
	if (host) {
		json_array_append_new(
		        env, json_pack("{s:s,s:s}", "name", "PET_MASTER_ADDR", "value", host));
		json_array_append_new(
		        env, json_pack("{s:s,s:s}", "name", "PET_MASTER_PORT", "value", p));
	}
	return env;
}

static void assert_pet(const kft_container *c, const char *nnodes, const char *nproc,
                       const char *host)
{
	json_t *want = pet_env(nnodes, nproc, host, 29500);
	assert_json(c->env, want);
	json_decref(want);
}

/* TrainJobs: name, runtimeRef name, spec.trainer. */
#define JOB(name, trainer) JOB_REF(name, "torch-distributed", trainer)
#define JOB_REF(name, ref, trainer)                                                                \
	"{`metadata`:{`name`:`" name "`,`namespace`:`default`},"                                   \
	"`spec`:{`runtimeRef`:{`name`:`" ref "`},`trainer`:" trainer "}}"
#define JOB_NO_TRAINER(name)                                                                       \
	"{`metadata`:{`name`:`" name "`,`namespace`:`default`},"                                   \
	"`spec`:{`runtimeRef`:{`name`:`torch-distributed`}}}"
#define TORCH "{`torch`:{}}"

/* ---- EnforceMLPolicy: the table ------------------------------------------------------ */

typedef struct enforce_case {
	const char *pins;
	const char *policy;
	int count; /* the trainer pod set's count before the plugin runs */
	const char *job;
	int want_count;
	const char *nnodes, *nproc;
	const char *master;       /* PET_MASTER_ADDR, NULL for torchtune */
	const char *want_command; /* the node container's command, NULL: untouched */
} enforce_case;

#define TUNE_ARGS                                                                                  \
	"[`dtype=fp16`,`batch_size=32`,`epochs=10`,"                                               \
	"`loss=torchtune.modules.loss.CEWithChunkedOutputLoss`]"

static const enforce_case enforce_cases[] = {
        {"torch_test.go: 'trainJob numNodes is respected rather than mlPolicy one'", TORCH, 1,
         JOB("trainJob", "{`numNodes`:2}"), 2, "2", "1", "trainJob-node-0-0.trainJob", NULL},
        {"torch_test.go: 'nproc_per_node=auto with CPU limit'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`4`}}}"), 1,
         "1", "4", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with no CPU resources'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{}}"), 1, "1", "1",
         "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with low CPU limit'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`2`}}}"), 1,
         "1", "2", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with CPU request but no limit'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`3`}}}"), 1,
         "1", "3", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with millicore CPU limit'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`2.5`}}}"), 1,
         "1", "3", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with fractional CPU limit'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`0.7`}}}"), 1,
         "1", "1", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with GPU request should remain auto'", TORCH, 1,
         JOB("test-job",
             "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`example.com/gpu`:`2`}}}"),
         1, "1", "auto", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'explicitly set nproc_per_node should be preserved'", TORCH, 1,
         JOB("test-job", "{`numProcPerNode`:3,`image`:`test:image`,"
                         "`resourcesPerNode`:{`requests`:{`cpu`:`8`}}}"),
         1, "1", "3", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto with millicore CPU limit in m format'", TORCH, 1,
         JOB("test-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`2500m`}}}"),
         1, "1", "3", "test-job-node-0-0.test-job", NULL},
        {"torch_test.go: 'nproc_per_node=cpu with CPU limit'", TORCH, 1,
         JOB("cpu-job", "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`4`}}}"), 1,
         "1", "4", "cpu-job-node-0-0.cpu-job", NULL},
        {"torch_test.go: 'nproc_per_node=auto resolves to GPU count when GPU resources present'",
         TORCH, 1,
         JOB("cpu-gpu-job", "{`image`:`test:image`,"
                            "`resourcesPerNode`:{`requests`:{`cpu`:`6`,`example.com/gpu`:`2`}}}"),
         1, "1", "auto", "cpu-gpu-job-node-0-0.cpu-gpu-job", NULL},
        {"torch_test.go: 'nproc_per_node=cpu with fractional CPU'", TORCH, 1,
         JOB("cpu-frac-job",
             "{`image`:`test:image`,`resourcesPerNode`:{`requests`:{`cpu`:`3.7`}}}"),
         1, "1", "4", "cpu-frac-job-node-0-0.cpu-frac-job", NULL},
        {"torch_test.go: 'multi-node multi-GPU training with complete info'", TORCH, 2,
         JOB("gpu-job", "{`numNodes`:4,`image`:`pytorch/pytorch:2.0.0-cuda11.7-cudnn8-runtime`,"
                        "`resourcesPerNode`:{`requests`:{`cpu`:`8`,`memory`:`16Gi`,"
                        "`example.com/gpu`:`4`}}}"),
         4, "4", "auto", "gpu-job-node-0-0.gpu-job", NULL},
        {"torch_test.go: 'multi-devices full fine-tuning with torchtune'", TORCH, 1,
         JOB_REF("torchtune-job", "torchtune-llama3.2-1b",
                 "{`numNodes`:1,`image`:`ghcr.io/kubeflow/trainer/torchtune-trainer`,"
                 "`command`:[`tune`,`run`],`args`:" TUNE_ARGS ","
                 "`resourcesPerNode`:{`requests`:{`cpu`:`8`,`memory`:`16Gi`,`example.com/"
                 "gpu`:`4`}}}"),
         1, "1", "auto", NULL,
         "[`tune`,`run`,`--rdzv_endpoint=torchtune-job-node-0-0.torchtune-job:29500`,"
         "`full_finetune_distributed`,`--config`,`llama3_2/1B_full`]"},
        {"torch_test.go: 'single-device full fine-tuning with torchtune'", TORCH, 1,
         JOB_REF("torchtune-job", "torchtune-llama3.2-1b",
                 "{`numNodes`:1,`numProcPerNode`:1,`image`:`ghcr.io/kubeflow/trainer/"
                 "torchtune-trainer`,"
                 "`command`:[`tune`,`run`],`args`:" TUNE_ARGS ","
                 "`resourcesPerNode`:{`requests`:{`cpu`:`8`,`memory`:`16Gi`,`example.com/"
                 "gpu`:`1`}}}"),
         1, "1", "1", NULL,
         "[`tune`,`run`,`full_finetune_single_device`,`--config`,"
         "`llama3_2/1B_full_single_device`]"},
        {"torch_test.go: 'multi-nodes full fine-tuning with torchtune'", TORCH, 2,
         JOB_REF("torchtune-job", "torchtune-llama3.3-70b",
                 "{`numNodes`:2,`numProcPerNode`:8,`image`:`ghcr.io/kubeflow/trainer/"
                 "torchtune-trainer`,"
                 "`command`:[`tune`,`run`],`args`:" TUNE_ARGS ","
                 "`resourcesPerNode`:{`requests`:{`cpu`:`8`,`memory`:`16Gi`,`example.com/"
                 "gpu`:`8`}}}"),
         2, "2", "8", NULL,
         "[`tune`,`run`,`--rdzv_endpoint=torchtune-job-node-0-0.torchtune-job:29500`,"
         "`full_finetune_distributed`,`--config`,`llama3_3/70B_full_multinode`]"},

        /* numProcPerNode in the runtime, as v2.0 resolved it when the TrainJob
         * does not set one. */
        {"kftrainer: runtime numProcPerNode integer", "{`torch`:{`numProcPerNode`:4}}", 1,
         JOB("job", "{`resourcesPerNode`:{`requests`:{`cpu`:`16`}}}"), 1, "1", "4",
         "job-node-0-0.job", NULL},
        {"kftrainer: TrainJob numProcPerNode wins over the runtime's",
         "{`torch`:{`numProcPerNode`:`cpu`}}", 1,
         JOB("job", "{`numProcPerNode`:2,`resourcesPerNode`:{`requests`:{`cpu`:`16`}}}"), 1, "1",
         "2", "job-node-0-0.job", NULL},
        {"kftrainer: runtime auto resolves as v2.3.0 does", "{`torch`:{`numProcPerNode`:`auto`}}",
         1, JOB("job", "{`resourcesPerNode`:{`requests`:{`cpu`:`4`}}}"), 1, "1", "4",
         "job-node-0-0.job", NULL},
        {"kftrainer: runtime cpu takes the CPU limit first (v2.0)",
         "{`torch`:{`numProcPerNode`:`cpu`}}", 1,
         JOB("job", "{`resourcesPerNode`:{`limits`:{`cpu`:`3`},`requests`:{`cpu`:`2`}}}"), 1, "1",
         "3", "job-node-0-0.job", NULL},
        {"kftrainer: runtime cpu falls back to the CPU request (v2.0)",
         "{`torch`:{`numProcPerNode`:`cpu`}}", 1,
         JOB("job", "{`resourcesPerNode`:{`limits`:{`memory`:`1Gi`},`requests`:{`cpu`:`2500m`}}}"),
         1, "1", "3", "job-node-0-0.job", NULL},
        {"kftrainer: runtime cpu without any CPU is 1 (v2.0)", "{`torch`:{`numProcPerNode`:`cpu`}}",
         1, JOB("job", "{`resourcesPerNode`:{`requests`:{`memory`:`1Gi`}}}"), 1, "1", "1",
         "job-node-0-0.job", NULL},
        {"kftrainer: runtime cpu without resources is left to torchrun",
         "{`torch`:{`numProcPerNode`:`cpu`}}", 1, JOB("job", "{}"), 1, "1", "cpu",
         "job-node-0-0.job", NULL},
        {"kftrainer: runtime gpu stays gpu (v2.0)", "{`torch`:{`numProcPerNode`:`gpu`}}", 1,
         JOB("job", "{`resourcesPerNode`:{`limits`:{`nvidia.com/gpu`:`2`,`cpu`:`4`}}}"), 1, "1",
         "gpu", "job-node-0-0.job", NULL},
        {"kftrainer: GPUs in limits only keep auto", TORCH, 1,
         JOB("job",
             "{`resourcesPerNode`:{`limits`:{`nvidia.com/GPU`:`1`},`requests`:{`cpu`:`4`}}}"),
         1, "1", "auto", "job-node-0-0.job", NULL},
        {"kftrainer: a TrainJob without trainer leaves the main container alone", TORCH, 3,
         JOB_NO_TRAINER("job"), 3, NULL, NULL, NULL, NULL},
};

static void run_enforce_case(void **state)
{
	const enforce_case *tc = *state;
	fixture f;
	kft_error err = {0};
	fixture_init(&f, tc->policy);
	kft_container *c = trainer_node(&f, tc->count);
	fixture_job(&f, tc->job);
	assert_int_equal(enforce(&f, NULL, &err), 0);
	c = &f.info->pod_sets[0].containers[0];
	assert_int_equal(f.info->pod_sets[0].count, tc->want_count);
	if (!tc->nnodes) {
		assert_int_equal(json_array_size(c->env), 0);
		assert_int_equal(json_array_size(c->ports), 0);
		fixture_free(&f);
		return;
	}
	assert_pet(c, tc->nnodes, tc->nproc, tc->master);
	assert_json_text(c->ports, "[{`containerPort`:29500}]");
	if (tc->want_command)
		assert_json_text(c->command, tc->want_command);
	else
		assert_int_equal(json_array_size(c->command), 0);
	fixture_free(&f);
}

/* ---- EnforceMLPolicy: cases with their own shape ------------------------------------ */

/* torch_test.go: 'no action when info is nil' */
static void test_enforce_info_nil(void **state)
{
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	assert_int_equal(kft_plugin_torch.enforce_ml_policy(&ctx, NULL, NULL, NULL), 0);
}

/* torch_test.go: 'no action when mlPolicySource is nil' and
 * 'no action when mlPolicySource torch is null' */
static void test_enforce_no_torch_policy(void **state)
{
	const char *policies[] = {NULL, "{}", "{`numNodes`:2,`jax`:{}}"};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		trainer_node(&f, 1);
		fixture_job(&f, JOB("job", "{`numNodes`:5}"));
		assert_int_equal(enforce(&f, NULL, NULL), 0);
		assert_int_equal(f.info->pod_sets[0].count, 1);
		assert_int_equal(json_array_size(f.info->pod_sets[0].containers[0].env), 0);
		assert_int_equal(json_array_size(f.info->pod_sets[0].containers[0].ports), 0);
		fixture_free(&f);
	}
}

#define INJECT(job, containers)                                                                    \
	"{`torch`:{`envInjection`:{`targets`:[{`jobName`:`" job "`,`containerNames`:" containers   \
	"}]}}}"

/* torch_test.go: 'envInjection with init container' */
static void test_inject_init_container(void **state)
{
	fixture f;
	fixture_init(&f, INJECT("node", "[`preflight-check`]"));
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 2);
	add_container(ps, 1, "preflight-check");
	add_container(ps, 0, "node");
	fixture_job(&f, JOB("test-job", "{`numNodes`:2}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_pet(&ps->init_containers[0], "2", "1", "test-job-node-0-0.test-job");
	assert_pet(&ps->containers[0], "2", "1", "test-job-node-0-0.test-job");
	assert_int_equal(json_array_size(ps->init_containers[0].ports), 0);
	assert_json_text(ps->containers[0].ports, "[{`containerPort`:29500}]");
	fixture_free(&f);
}

/* torch_test.go: 'envInjection target container does not exist' and
 * 'envInjection target job does not exist': the main container is done,
 * then the error names the target. */
static void test_inject_missing_target(void **state)
{
	const char *policies[] = {INJECT("node", "[`non-existent-container`]"),
	                          INJECT("missing-job", "[`preflight-check`]")};
	const char *errors[] = {
	        "envInjection target podSet \"node\" container \"non-existent-container\" not "
	        "found in runtime template",
	        "envInjection target podSet \"missing-job\" container \"preflight-check\" not "
	        "found in runtime template"};
	for (size_t i = 0; i < 2; i++) {
		fixture f;
		kft_error err = {0};
		fixture_init(&f, policies[i]);
		kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 1);
		if (i == 0)
			add_container(ps, 1, "preflight-check");
		add_container(ps, 0, "node");
		fixture_job(&f, JOB("test-job", "{}"));
		assert_int_equal(enforce(&f, NULL, &err), KFT_EINVAL);
		assert_string_equal(err.message, errors[i]);
		assert_pet(&ps->containers[0], "1", "1", "test-job-node-0-0.test-job");
		if (i == 0)
			assert_int_equal(json_array_size(ps->init_containers[0].env), 0);
		fixture_free(&f);
	}
}

/* torch_test.go: 'envInjection with torchtune command': the target gets
 * the master endpoint, the torchtune main container does not. */
static void test_inject_torchtune(void **state)
{
	fixture f;
	fixture_init(&f, INJECT("node", "[`preflight-check`]"));
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 2);
	add_container(ps, 1, "preflight-check");
	add_container(ps, 0, "node");
	fixture_job(&f,
	            JOB_REF("test-job", "torchtune-llama3.2-1b",
	                    "{`numNodes`:2,`image`:`ghcr.io/kubeflow/trainer/torchtune-trainer`,"
	                    "`command`:[`tune`,`run`],`args`:[`dtype=fp16`],"
	                    "`resourcesPerNode`:{`requests`:{`cpu`:`8`,`example.com/gpu`:`4`}}}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(ps->count, 2);
	assert_pet(&ps->init_containers[0], "2", "auto", "test-job-node-0-0.test-job");
	assert_pet(&ps->containers[0], "2", "auto", NULL);
	assert_json_text(ps->containers[0].ports, "[{`containerPort`:29500}]");
	assert_json_text(ps->containers[0].command,
	                 "[`tune`,`run`,`--rdzv_endpoint=test-job-node-0-0.test-job:29500`,"
	                 "`full_finetune_distributed`,`--config`,`llama3_2/1B_full_multinode`]");
	fixture_free(&f);
}

/* torch_test.go: 'envInjection with multiple containers in same target' */
static void test_inject_two_containers(void **state)
{
	fixture f;
	fixture_init(&f, INJECT("node", "[`nccl-check`,`driver-check`]"));
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 2);
	add_container(ps, 1, "nccl-check");
	add_container(ps, 1, "driver-check");
	add_container(ps, 0, "node");
	fixture_job(&f, JOB("test-job", "{`numNodes`:2}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	for (size_t i = 0; i < 2; i++)
		assert_pet(&ps->init_containers[i], "2", "1", "test-job-node-0-0.test-job");
	assert_pet(&ps->containers[0], "2", "1", "test-job-node-0-0.test-job");
	fixture_free(&f);
}

/* torch_test.go: 'envInjection with sidecar (regular container)' */
static void test_inject_sidecar(void **state)
{
	fixture f;
	fixture_init(&f, INJECT("node", "[`sidecar`]"));
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 1);
	add_container(ps, 0, "sidecar");
	add_container(ps, 0, "node");
	fixture_job(&f, JOB("test-job", "{}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_pet(&ps->containers[0], "1", "1", "test-job-node-0-0.test-job");
	assert_pet(&ps->containers[1], "1", "1", "test-job-node-0-0.test-job");
	assert_int_equal(json_array_size(ps->containers[0].ports), 0);
	assert_json_text(ps->containers[1].ports, "[{`containerPort`:29500}]");
	fixture_free(&f);
}

/* torch_test.go: 'envInjection with empty targets (no additional injection)' */
static void test_inject_empty_targets(void **state)
{
	fixture f;
	fixture_init(&f, "{`torch`:{`envInjection`:{`targets`:[]}}}");
	kft_pod_set *ps = add_pod_set(&f, "node", "trainer", 1);
	add_container(ps, 1, "preflight-check");
	add_container(ps, 0, "node");
	fixture_job(&f, JOB("test-job", "{}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(json_array_size(ps->init_containers[0].env), 0);
	assert_pet(&ps->containers[0], "1", "1", "test-job-node-0-0.test-job");
	fixture_free(&f);
}

/* torch_test.go: 'envInjection with multiple targets in different jobs leaves
 * unlisted init container unchanged' */
static void test_inject_two_jobs(void **state)
{
	fixture f;
	fixture_init(&f, "{`torch`:{`envInjection`:{`targets`:["
	                 "{`jobName`:`node`,`containerNames`:[`sidecar`]},"
	                 "{`jobName`:`worker`,`containerNames`:[`worker-check`]}]}}}");
	kft_pod_set *node = add_pod_set(&f, "node", "trainer", 2);
	kft_pod_set *worker = add_pod_set(&f, "worker", NULL, 1);
	node = &f.info->pod_sets[0]; /* the array moved */
	add_container(node, 1, "preflight-check");
	add_container(node, 0, "sidecar");
	add_container(node, 0, "node");
	add_container(worker, 1, "worker-check");
	add_container(worker, 0, "worker");
	fixture_job(&f, JOB("test-job", "{`numNodes`:2}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(json_array_size(node->init_containers[0].env), 0);
	assert_pet(&node->containers[0], "2", "1", "test-job-node-0-0.test-job");
	assert_pet(&node->containers[1], "2", "1", "test-job-node-0-0.test-job");
	assert_pet(&worker->init_containers[0], "2", "1", "test-job-node-0-0.test-job");
	assert_int_equal(json_array_size(worker->containers[0].env), 0);
	assert_int_equal(worker->count, 1);
	fixture_free(&f);
}

/* kftrainer: the TrainJob's env goes in first and wins by name; PET_* are
 * upserted in place over a runtime's own value. */
static void test_enforce_job_env(void **state)
{
	fixture f;
	fixture_init(&f, TORCH);
	kft_container *c = trainer_node(&f, 1);
	json_decref(c->env);
	c->env = J("[{`name`:`PET_NNODES`,`value`:`9`},{`name`:`A`,`value`:`runtime`}]");
	fixture_job(&f, JOB("j", "{`env`:[{`name`:`A`,`value`:`job`},{`name`:`B`,`value`:`b`}]}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_json_text(c->env,
	                 "[{`name`:`PET_NNODES`,`value`:`1`},{`name`:`A`,`value`:`job`},"
	                 "{`name`:`B`,`value`:`b`},{`name`:`PET_NPROC_PER_NODE`,`value`:`1`},"
	                 "{`name`:`PET_NODE_RANK`,`valueFrom`:{`fieldRef`:{`fieldPath`:"
	                 "`" RANK_PATH "`}}},"
	                 "{`name`:`PET_MASTER_ADDR`,`value`:`j-node-0-0.j`},"
	                 "{`name`:`PET_MASTER_PORT`,`value`:`29500`}]");
	fixture_free(&f);
}

/* kftrainer: upstream's port upsert replaces an unnamed port (two absent
 * names compare equal) and keeps a named one. */
static void test_enforce_port_upsert(void **state)
{
	fixture f;
	fixture_init(&f, TORCH);
	kft_container *c = trainer_node(&f, 1);
	json_decref(c->ports);
	c->ports = J("[{`name`:`metrics`,`containerPort`:9090},{`containerPort`:8080}]");
	fixture_job(&f, JOB("j", "{}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_json_text(c->ports,
	                 "[{`name`:`metrics`,`containerPort`:9090},{`containerPort`:29500}]");
	fixture_free(&f);
}

/* kftrainer: the runtime template's node resources count when the TrainJob
 * gives none; the TrainJob's replace them whole. */
static void test_enforce_template_resources(void **state)
{
	const char *tmpl = "{`replicatedJobs`:[{`name`:`node`,`template`:{`metadata`:{`labels`:"
	                   "{`trainer.kubeflow.org/trainjob-ancestor-step`:`trainer`}},"
	                   "`spec`:{`template`:{`spec`:{`containers`:[{`name`:`node`,"
	                   "`resources`:{`requests`:{`cpu`:`6`}}}]}}}}}]}";
	const char *jobs[] = {JOB("j", "{}"),
	                      JOB("j", "{`resourcesPerNode`:{`limits`:{`cpu`:`2`}}}")};
	const char *want[] = {"6", "2"};
	for (size_t i = 0; i < 2; i++) {
		fixture f;
		fixture_init(&f, TORCH);
		json_decref(f.info->template_spec);
		f.info->template_spec = J(tmpl);
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, jobs[i]);
		assert_int_equal(enforce(&f, NULL, NULL), 0);
		assert_pet(c, "1", want[i], "j-node-0-0.j");
		fixture_free(&f);
	}
}

/* kftrainer: a runtime numProcPerNode outside auto/cpu/gpu/int is refused. */
static void test_enforce_bad_runtime_nproc(void **state)
{
	fixture f;
	kft_error err = {0};
	fixture_init(&f, "{`torch`:{`numProcPerNode`:`many`}}");
	trainer_node(&f, 1);
	fixture_job(&f, JOB("j", "{}"));
	assert_int_equal(enforce(&f, NULL, &err), KFT_EINVAL);
	assert_string_equal(err.message,
	                    "mlPolicy.torch.numProcPerNode must be auto, cpu, gpu or an integer");
	fixture_free(&f);
}

/* ---- the backend answers addresses and ports -------------------------------------- */

typedef struct seen {
	char rjob[64], subdomain[64], service[16];
} seen;

static int test_pod_address(void *self, const char *job, const char *rjob, int replica, int pod,
                            const char *subdomain, char *buf, size_t size)
{
	seen *s = self;
	snprintf(s->rjob, sizeof(s->rjob), "%s", rjob);
	snprintf(s->subdomain, sizeof(s->subdomain), "%s", subdomain);
	assert_int_equal(replica, 0);
	assert_int_equal(pod, 0);
	return snprintf(buf, size, "%s", strcmp(job, "v6") == 0 ? "::1" : "127.0.0.1") < 0;
}

static int test_service_port(void *self, const char *job, const char *service, int dflt)
{
	seen *s = self;
	snprintf(s->service, sizeof(s->service), "%s", service);
	assert_int_equal(dflt, 29500);
	return 40123;
}

/* kftrainer: PET_MASTER_ADDR/PORT and the container port come from the
 * backend, asked about the trainer pod set by its own name and the JobSet's
 * network subdomain. */
static void test_enforce_backend(void **state)
{
	seen s = {0};
	kft_backend be = {.name = "test",
	                  .self = &s,
	                  .pod_address = test_pod_address,
	                  .service_port = test_service_port};
	fixture f;
	fixture_init(&f, TORCH);
	json_decref(f.info->template_spec);
	f.info->template_spec = J("{`network`:{`subdomain`:`svc`}}");
	kft_container *c = add_container(add_pod_set(&f, "trainer-job", "trainer", 2), 0, "node");
	fixture_job(&f, JOB("j", "{}"));
	assert_int_equal(enforce(&f, &be, NULL), 0);
	assert_string_equal(s.rjob, "trainer-job");
	assert_string_equal(s.subdomain, "svc");
	assert_string_equal(s.service, "torch");
	json_t *want = pet_env("2", "1", "127.0.0.1", 40123);
	assert_json(c->env, want);
	json_decref(want);
	assert_json_text(c->ports, "[{`containerPort`:40123}]");
	fixture_free(&f);
}

/* kftrainer: an IPv6 rendezvous host is bracketed in host:port. */
static void test_enforce_backend_ipv6(void **state)
{
	seen s = {0};
	kft_backend be = {
	        .self = &s, .pod_address = test_pod_address, .service_port = test_service_port};
	fixture f;
	fixture_init(&f, TORCH);
	kft_container *c = trainer_node(&f, 2);
	fixture_job(&f, JOB_REF("v6", "torchtune-llama3.3-70b",
	                        "{`numNodes`:2,`command`:[`tune`,`run`]}"));
	assert_int_equal(enforce(&f, &be, NULL), 0);
	assert_string_equal(s.subdomain, "v6");
	assert_json_text(c->command, "[`tune`,`run`,`--rdzv_endpoint=[::1]:40123`,"
	                             "`full_finetune_distributed`,`--config`,"
	                             "`llama3_3/70B_full_multinode`]");
	fixture_free(&f);
}

/* kftrainer: the runtime's immutable torchtune settings end the command. */
static void test_enforce_torchtune_overrides(void **state)
{
	fixture f;
	fixture_init(&f, TORCH);
	json_decref(f.info->template_spec);
	f.info->template_spec =
	        J("{`replicatedJobs`:[{`name`:`node`,`template`:{`metadata`:{`labels`:"
	          "{`trainer.kubeflow.org/trainjob-ancestor-step`:`trainer`}},`spec`:{`template`:"
	          "{`spec`:{`containers`:[{`name`:`node`,`command`:[`tune`,`run`,"
	          "`output_dir=/workspace/output`,`tokenizer.path=/workspace/model/tok.model`,"
	          "`checkpointer.checkpoint_dir=/workspace/model`,`epochs=1`]}]}}}}}]}");
	kft_container *c = trainer_node(&f, 1);
	fixture_job(&f, JOB_REF("tt", "torchtune-qwen2.5-1.5b",
	                        "{`command`:[`tune`,`run`],`numProcPerNode`:1,"
	                        "`args`:[`model.lora_attn_modules=[q_proj]`]}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_json_text(c->command,
	                 "[`tune`,`run`,`lora_finetune_single_device`,`--config`,"
	                 "`qwen2_5/1.5B_lora_single_device`,`output_dir=/workspace/output`,"
	                 "`tokenizer.path=/workspace/model/tok.model`,"
	                 "`checkpointer.checkpoint_dir=/workspace/model`]");
	fixture_free(&f);
}

static int no_gpus(void *self)
{
	(void)self;
	return 0;
}

/* kftrainer: on a backend without GPUs (a machine with none, backend.h) the
 * torchtune command gets what a CPU needs after the runtime's settings (the
 * configs say device: cuda, dtype: bf16; the full single-device ones a
 * bitsandbytes optimizer, CUDA only), before the user's args, which win. */
static void test_enforce_torchtune_cpu(void **state)
{
	kft_backend be = {.has_gpus = no_gpus};
	fixture f;
	fixture_init(&f, TORCH);
	kft_container *c = trainer_node(&f, 1);
	fixture_job(&f, JOB_REF("tt", "torchtune-llama3.2-1b",
	                        "{`command`:[`tune`,`run`],`numProcPerNode`:1,"
	                        "`args`:[`dtype=bf16`]}"));
	assert_int_equal(enforce(&f, &be, NULL), 0);
	assert_json_text(c->command, "[`tune`,`run`,`full_finetune_single_device`,`--config`,"
	                             "`llama3_2/1B_full_single_device`,`device=cpu`,`dtype=fp32`,"
	                             "`optimizer._component_=torch.optim.AdamW`]");
	fixture_free(&f);

	fixture_init(&f, TORCH);
	c = trainer_node(&f, 1);
	/* four CPUs are still one device: one process, the single-device recipe
	 * (torchtune 0.6.1's distributed LoRA recipe asks for NCCL) */
	fixture_job(&f, JOB_REF("tt", "torchtune-llama3.2-1b",
	                        "{`command`:[`tune`,`run`],`resourcesPerNode`:{`limits`:{`cpu`:4}},"
	                        "`args`:[`model.lora_attn_modules=[q_proj]`]}"));
	assert_int_equal(enforce(&f, &be, NULL), 0);
	assert_json_text(c->command, "[`tune`,`run`,`lora_finetune_single_device`,`--config`,"
	                             "`llama3_2/1B_lora_single_device`,`device=cpu`,`dtype=fp32`]");
	fixture_free(&f);
}

/* ---- elastic (kftrainer) ---------------------------------------------------------- */

static json_t *elastic_env(const char *job, const char *nnodes, const char *restarts)
{
	char host[64], endpoint[80];
	snprintf(host, sizeof(host), "%s-node-0-0.%s", job, job);
	snprintf(endpoint, sizeof(endpoint), "%s:29500", host);
	json_t *env = pet_env(nnodes, "1", NULL, 0);
	json_array_append_new(env,
	                      json_pack("{s:s,s:s}", "name", "PET_RDZV_BACKEND", "value", "c10d"));
	json_array_append_new(
	        env, json_pack("{s:s,s:s}", "name", "PET_RDZV_ENDPOINT", "value", endpoint));
	json_array_append_new(env, json_pack("{s:s,s:s}", "name", "PET_RDZV_ID", "value", job));
	if (restarts)
		json_array_append_new(
		        env, json_pack("{s:s,s:s}", "name", "PET_MAX_RESTARTS", "value", restarts));
	json_array_append_new(env,
	                      json_pack("{s:s,s:s}", "name", "PET_MASTER_ADDR", "value", host));
	json_array_append_new(env,
	                      json_pack("{s:s,s:s}", "name", "PET_MASTER_PORT", "value", "29500"));
	return env;
}

/* kftrainer: minNodes:maxNodes, c10d on the master, maxNodes pods, and
 * maxRestarts for torchrun and the JobSet. */
static void test_elastic(void **state)
{
	fixture f;
	fixture_init(&f, "{`torch`:{`elasticPolicy`:{`minNodes`:2,`maxNodes`:4,`maxRestarts`:3}}}");
	kft_container *c = trainer_node(&f, 1);
	fixture_job(&f, JOB("el", "{}"));
	assert_int_equal(enforce(&f, NULL, NULL), 0);
	assert_int_equal(f.info->pod_sets[0].count, 4);
	json_t *want = elastic_env("el", "2:4", "3");
	assert_json(c->env, want);
	json_decref(want);
	assert_json_text(f.info->template_spec, "{`failurePolicy`:{`maxRestarts`:3}}");
	fixture_free(&f);
}

/* kftrainer: missing bounds make a fixed-size run; a runtime's own JobSet
 * failurePolicy.maxRestarts is kept. */
static void test_elastic_defaults(void **state)
{
	const char *policies[] = {"{`torch`:{`elasticPolicy`:{`maxNodes`:3}}}",
	                          "{`torch`:{`elasticPolicy`:{`minNodes`:3,`maxRestarts`:5}}}",
	                          "{`torch`:{`elasticPolicy`:{}}}"};
	const char *nnodes[] = {"3:3", "3:3", "1:1"};
	const char *restarts[] = {NULL, "5", NULL};
	const int count[] = {3, 3, 1};
	for (size_t i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, policies[i]);
		json_decref(f.info->template_spec);
		f.info->template_spec = J("{`failurePolicy`:{`maxRestarts`:1}}");
		kft_container *c = trainer_node(&f, 1);
		fixture_job(&f, JOB("el", "{}"));
		assert_int_equal(enforce(&f, NULL, NULL), 0);
		assert_int_equal(f.info->pod_sets[0].count, count[i]);
		json_t *want = elastic_env("el", nnodes[i], restarts[i]);
		assert_json(c->env, want);
		json_decref(want);
		assert_json_text(f.info->template_spec, "{`failurePolicy`:{`maxRestarts`:1}}");
		fixture_free(&f);
	}
}

/* kftrainer: contradictory bounds fail the build with a clear message. */
static void test_elastic_invalid(void **state)
{
	const char *policies[] = {"{`torch`:{`elasticPolicy`:{`minNodes`:5,`maxNodes`:2}}}",
	                          "{`torch`:{`elasticPolicy`:{`minNodes`:0,`maxNodes`:2}}}",
	                          "{`torch`:{`elasticPolicy`:{`maxRestarts`:-1}}}",
	                          "{`torch`:{`elasticPolicy`:{`maxNodes`:`4`}}}"};
	const char *errors[] = {
	        "mlPolicy.torch.elasticPolicy.minNodes (5) must not be greater than maxNodes (2)",
	        "mlPolicy.torch.elasticPolicy.minNodes must be at least 1",
	        "mlPolicy.torch.elasticPolicy.maxRestarts must not be negative",
	        "mlPolicy.torch.elasticPolicy.maxNodes must be an int32"};
	for (size_t i = 0; i < 4; i++) {
		fixture f;
		kft_error err = {0};
		fixture_init(&f, policies[i]);
		trainer_node(&f, 1);
		fixture_job(&f, JOB("el", "{}"));
		assert_int_equal(enforce(&f, NULL, &err), KFT_EINVAL);
		assert_string_equal(err.message, errors[i]);
		fixture_free(&f);
	}
}

/* ---- CustomValidation ------------------------------------------------------------------ */

typedef struct validate_case {
	const char *pins;
	const char *policy; /* "nil": no RuntimeInfo at all */
	const char *job;
	const char *want; /* formatted errors, one per line; "" for none */
	const char *want_warning;
} validate_case;

#define TUNE(ref, trainer) JOB_REF("test", ref, trainer)
#define LORA               "`model.lora_attn_modules=[q_proj, v_proj, output_proj]`"

static const validate_case validate_cases[] = {
        {"torch_test.go: 'no action when info is nil'", "nil", JOB_NO_TRAINER("test"), "", NULL},
        {"torch_test.go: 'no action when info does not have MLPolicySource'", NULL,
         JOB_NO_TRAINER("test"), "", NULL},
        {"torch_test.go: 'no action when info has MLPolicySource but no Torch policy'", "{}",
         JOB_NO_TRAINER("test"), "", NULL},
        {"torch_test.go: 'envInjection target container does not exist'",
         INJECT("node", "[`missing-container`]"), JOB_NO_TRAINER("test"),
         "spec.runtimeRef: Invalid value: {\"jobName\":\"node\",\"containerNames\":"
         "[\"missing-container\"]}: envInjection target podSet \"node\" container "
         "\"missing-container\" not found in runtime template",
         NULL},
        {"torch_test.go: 'no action when info does not have numProcPerNode'", TORCH,
         JOB("test", "{}"), "", NULL},
        {"torch_test.go: 'valid environment variable present'", TORCH,
         JOB("test", "{`env`:[{`name`:`test`,`value`:`value`},{`name`:`test2`,`value`:`value`}]}"),
         "", NULL},
        {"torch_test.go: 'reserved environment variable present'", TORCH,
         JOB("test", "{`env`:[{`value`:`value`,`name`:`test`},"
                     "{`name`:`PET_NPROC_PER_NODE`,`value`:`value`}]}"),
         "spec.trainer.env: Invalid value: [{\"name\":\"test\",\"value\":\"value\"},"
         "{\"name\":\"PET_NPROC_PER_NODE\",\"value\":\"value\"}]: must not have reserved envs, "
         "invalid envs configured: [PET_NPROC_PER_NODE]",
         NULL},
        {"torch_test.go: 'unsupported pretrained model'", TORCH,
         TUNE("torchtune-llama3.1-70b",
              "{`numNodes`:1,`image`:`ghcr.io/kubeflow/trainer/torchtune-trainer`,"
              "`command`:[`tune`,`run`],`resourcesPerNode`:{`requests`:{}}}"),
         "spec.runtimeRef.name: Invalid value: \"torchtune-llama3.1-70b\": must have a supported "
         "pretrained model, invalid model configured: llama3_1/70B",
         NULL},
        {"torch_test.go: 'multi-node mode is only enabled for Llama-3.3-70b'", TORCH,
         TUNE("torchtune-llama3.2-3b", "{`numNodes`:2,`command`:[`tune`,`run`],"
                                       "`resourcesPerNode`:{`requests`:{}}}"),
         "spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/3B model", NULL},
        {"torch_test.go: 'qlora is not supported for qwen in torchtune'", TORCH,
         TUNE("torchtune-qwen2.5-1.5b", "{`numNodes`:1,`command`:[`tune`,`run`],"
                                        "`args`:[" LORA ",`model.quantize_base=True`],"
                                        "`resourcesPerNode`:{`requests`:{}}}"),
         "spec.runtimeRef.name: Invalid value: \"torchtune-qwen2.5-1.5b\": QLoRA is not "
         "supported for qwen2_5/1.5B model",
         NULL},
        {"torch_test.go: 'muti-devices qlora is not supported for llama3.2-1b in torchtune'", TORCH,
         TUNE("torchtune-llama3.2-1b", "{`numNodes`:1,`command`:[`tune`,`run`],"
                                       "`args`:[" LORA ",`model.quantize_base=True`],"
                                       "`resourcesPerNode`:{`requests`:{`example.com/gpu`:`2`}}}"),
         "spec.trainer.numProcPerNode: Invalid value: \"auto\": must be auto or 1 for "
         "llama3_2/1B model when using QLoRA\n"
         "spec.trainer.resourcesPerNode: Invalid value: "
         "{\"requests\":{\"example.com/gpu\":\"2\"}}: "
         "must have gpu resource with value 1 for llama3_2/1B model when using QLoRA",
         NULL},
        {"torch_test.go: 'lora is not supported for multi-node training in torchtune'", TORCH,
         TUNE("torchtune-llama3.3-70b", "{`numNodes`:2,`command`:[`tune`,`run`],"
                                        "`args`:[" LORA "],`resourcesPerNode`:{`requests`:{}}}"),
         "spec.trainer.numNodes: Invalid value: 2: LoRA fine-tuning is not supported for "
         "multi-node training in TorchTune",
         NULL},
        {"torch_test.go: 'lora is supported for single-node training in torchtune'", TORCH,
         TUNE("torchtune-llama3.3-70b", "{`numNodes`:1,`command`:[`tune`,`run`],"
                                        "`args`:[" LORA "],`resourcesPerNode`:{`requests`:{}}}"),
         "", NULL},
        {"torch_test.go: 'immutable runtime config must not be set in trainer args'", TORCH,
         TUNE("torchtune-llama3.2-1b", "{`numNodes`:1,`command`:[`tune`,`run`],"
                                       "`args`:[`output_dir=/custom/output`]}"),
         "spec.trainer.args[0]: Invalid value: \"output_dir=/custom/output\": must not set "
         "immutable config \"output_dir\" in trainer args; it is managed by the runtime",
         NULL},
        {"torch_test.go: 'multiple immutable runtime configs must not be set in trainer args'",
         TORCH,
         TUNE("torchtune-llama3.2-1b",
              "{`numNodes`:1,`command`:[`tune`,`run`],"
              "`args`:[`output_dir=custom-output`,`tokenizer.path=/some/path`]}"),
         "spec.trainer.args[0]: Invalid value: \"output_dir=custom-output\": must not set "
         "immutable config \"output_dir\" in trainer args; it is managed by the runtime\n"
         "spec.trainer.args[1]: Invalid value: \"tokenizer.path=/some/path\": must not set "
         "immutable config \"tokenizer.path\" in trainer args; it is managed by the runtime",
         NULL},

        /* kftrainer additions */
        {"kftrainer: reserved envs are listed sorted, once, values rendered as Go does", TORCH,
         JOB("test", "{`env`:[{`name`:`PET_NNODES`,`value`:`<2>`},{`name`:`PET_MASTER_ADDR`},"
                     "{`name`:`PET_NNODES`,`value`:`3`},{`name`:`PET_RDZV_ID`,`value`:`x`}]}"),
         "spec.trainer.env: Invalid value: "
         "[{\"name\":\"PET_NNODES\",\"value\":\"\\u003c2\\u003e\"},"
         "{\"name\":\"PET_MASTER_ADDR\"},{\"name\":\"PET_NNODES\",\"value\":\"3\"},"
         "{\"name\":\"PET_RDZV_ID\",\"value\":\"x\"}]: must not have reserved envs, invalid envs "
         "configured: [PET_MASTER_ADDR PET_NNODES]",
         NULL},
        {"kftrainer: a TrainJob with only generateName is checked too", TORCH,
         "{`metadata`:{`generateName`:`x-`},`spec`:{`trainer`:{`env`:[{`name`:`PET_NODE_RANK`,"
         "`value`:`0`}]}}}",
         "spec.trainer.env: Invalid value: [{\"name\":\"PET_NODE_RANK\",\"value\":\"0\"}]: must "
         "not "
         "have reserved envs, invalid envs configured: [PET_NODE_RANK]",
         NULL},
        {"kftrainer: elastic runs also reserve the rendezvous envs",
         "{`torch`:{`elasticPolicy`:{`maxNodes`:2}}}",
         JOB("test", "{`env`:[{`name`:`PET_RDZV_ID`,`value`:`x`},{`name`:`PET_MAX_RESTARTS`,"
                     "`valueFrom`:{`fieldRef`:{`fieldPath`:`metadata.name`,`apiVersion`:`v1`}}}]}"),
         "spec.trainer.env: Invalid value: [{\"name\":\"PET_RDZV_ID\",\"value\":\"x\"},"
         "{\"name\":\"PET_MAX_RESTARTS\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
         "\"fieldPath\":\"metadata.name\"}}}]: must not have reserved envs, invalid envs "
         "configured: [PET_MAX_RESTARTS PET_RDZV_ID]",
         NULL},
        {"kftrainer: elastic runs take their node count from the runtime",
         "{`torch`:{`elasticPolicy`:{`maxNodes`:2}}}", JOB("test", "{`numNodes`:3}"),
         "spec.trainer.numNodes: Invalid value: 3: should not be set if the runtime's "
         "torch.elasticPolicy is configured",
         NULL},
        {"kftrainer: contradictory elastic bounds are reported at the runtime reference",
         "{`torch`:{`elasticPolicy`:{`maxNodes`:1,`minNodes`:2,`maxRestarts`:1}}}",
         JOB("test", "{}"),
         "spec.runtimeRef: Invalid value: {\"maxRestarts\":1,\"minNodes\":2,\"maxNodes\":1}: "
         "mlPolicy.torch.elasticPolicy.minNodes (2) must not be greater than maxNodes (1)",
         NULL},
        {"kftrainer: elastic metrics are ignored with a warning",
         "{`torch`:{`elasticPolicy`:{`maxNodes`:2,`metrics`:[{`type`:`Resource`}]}}}",
         JOB("test", "{}"), "",
         "mlPolicy.torch.elasticPolicy.metrics of the runtime are ignored: kftrainer does not "
         "autoscale TrainJobs"},
        {"kftrainer: QLoRA numProcPerNode comes from the runtime when the TrainJob has none",
         "{`torch`:{`numProcPerNode`:2}}",
         TUNE("torchtune-llama3.2-3b", "{`command`:[`tune`,`run`],"
                                       "`args`:[`model.quantize_base=true`]}"),
         "spec.trainer.numProcPerNode: Invalid value: 2: must be auto or 1 for llama3_2/3B model "
         "when using QLoRA\n"
         "spec.trainer.resourcesPerNode: Invalid value: null: must have gpu resource with value 1 "
         "for llama3_2/3B model when using QLoRA",
         NULL},
};

static char *format_errors(const kft_field_errors *errs)
{
	size_t cap = 1, len = 0;
	char *out = calloc(1, 1);
	for (size_t i = 0; out && i < errs->count; i++) {
		char *line = kft_field_error_format(&errs->items[i]);
		assert_non_null(line);
		cap += strlen(line) + 1;
		out = realloc(out, cap);
		len += (size_t)sprintf(out + len, "%s%s", i ? "\n" : "", line);
		free(line);
	}
	return out;
}

static void run_validate_case(void **state)
{
	const validate_case *tc = *state;
	fixture f;
	kft_field_errors errs;
	kft_plugin_ctx ctx = {.backend = kft_backend_default()};
	int nil = tc->policy && strcmp(tc->policy, "nil") == 0;
	fixture_init(&f, nil ? NULL : tc->policy);
	trainer_node(&f, 1);
	json_t *job = J(tc->job);
	kft_field_errors_init(&errs);
	kft_plugin_torch.custom_validation(&ctx, nil ? NULL : f.info, NULL, job, &errs);
	char *got = format_errors(&errs);
	assert_string_equal(got, tc->want);
	assert_int_equal(errs.nwarnings, tc->want_warning ? 1 : 0);
	if (tc->want_warning)
		assert_string_equal(errs.warnings[0], tc->want_warning);
	assert_int_equal(errs.oom, 0);
	free(got);
	kft_field_errors_free(&errs);
	json_decref(job);
	fixture_free(&f);
}

/* ---- torchtune_test.go ----------------------------------------------------------------- */

/* torchtune_test.go: TestGetModelFromRuntimeRef, all 5 cases */
static void test_torchtune_model(void **state)
{
	static const char *const cases[][2] = {
	        {"torchtune-llama3.2-1b", "llama3_2/1B"},   /* 'llama3.2 1B is normalized' */
	        {"torchtune-qwen2.5-1.5b", "qwen2_5/1.5B"}, /* 'qwen2.5 1.5B is normalized' */
	        {"torchtune-llama3.2", ""},          /* 'fewer than three parts returns empty' */
	        {"torchtune-llama3.2-1b-extra", ""}, /* 'more than three parts returns empty' */
	        {"", ""},                            /* 'empty name returns empty' */
	};
	char buf[64];
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(kft_torchtune_model(cases[i][0], buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i][1]);
	}
	assert_int_equal(kft_torchtune_model("a-bbbbbbbb-c", buf, 4), KFT_ELIMIT);
	assert_string_equal(buf, "");
}

/* torchtune_test.go: TestIsLoraConfigEnabled, all 3 cases */
static void test_torchtune_lora(void **state)
{
	json_t *on = J("[`batch_size=32`,`model.lora_attn_modules=['q_proj','v_proj']`]");
	json_t *off = J("[`batch_size=32`,`epochs=10`]");
	assert_true(kft_torchtune_lora_enabled(on));    /* 'lora attn modules present' */
	assert_false(kft_torchtune_lora_enabled(off));  /* 'no lora args' */
	assert_false(kft_torchtune_lora_enabled(NULL)); /* 'empty args' */
	json_decref(on);
	json_decref(off);
}

/* torchtune_test.go: TestIsUseQLoraFinetune, all 6 cases */
static void test_torchtune_qlora(void **state)
{
	static const struct {
		const char *args;
		int want;
	} cases[] = {
	        {"[`model.quantize_base=True`]", 1},  /* 'quantize base enabled' */
	        {"[`model.quantize_base=False`]", 0}, /* 'quantize base explicitly disabled' */
	        /* 'dora short-circuits even when quantize base is set' */
	        {"[`model.quantize_base=True`,`model.use_dora=True`]", 0},
	        /* 'dora explicitly disabled with quantize base set' */
	        {"[`model.quantize_base=True`,`model.use_dora=False`]", 1},
	        {"[`batch_size=32`]", 0}, /* 'neither quantize base nor dora' */
	        {"[]", 0},                /* 'empty args' */
	        /* kftrainer: the key must hold the item, the value is trimmed */
	        {"[`x=model.quantize_base=true`]", 0},
	        {"[`model.quantize_base= TRUE `]", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		json_t *args = J(cases[i].args);
		assert_int_equal(kft_torchtune_qlora_enabled(args), cases[i].want);
		json_decref(args);
	}
}

/* torchtune_test.go: TestGetRecipeAndConfig, all 9 cases */
static void test_torchtune_recipe_config(void **state)
{
	static const struct {
		int32_t nodes;
		kft_torch_nproc npp;
		int64_t gpus;
		const char *args, *recipe, *config;
	} cases[] = {
	        /* 'single device full' */
	        {1,
	         {.str = "auto"},
	         1,
	         "[]",
	         "full_finetune_single_device",
	         "llama3_2/1B_full_single_device"},
	        /* 'single device lora' */
	        {1,
	         {.str = "auto"},
	         1,
	         "[`model.lora_attn_modules=['q_proj']`]",
	         "lora_finetune_single_device",
	         "llama3_2/1B_lora_single_device"},
	        /* 'single device qlora' */
	        {1,
	         {.str = "auto"},
	         1,
	         "[`model.quantize_base=True`]",
	         "lora_finetune_single_device",
	         "llama3_2/1B_qlora_single_device"},
	        /* 'single node multi-gpu full' */
	        {1, {.str = "auto"}, 4, "[]", "full_finetune_distributed", "llama3_2/1B_full"},
	        /* 'single node multi-gpu lora' */
	        {1,
	         {.str = "auto"},
	         4,
	         "[`model.lora_attn_modules=['q_proj']`]",
	         "lora_finetune_distributed",
	         "llama3_2/1B_lora"},
	        /* 'single node multi-gpu qlora' */
	        {1,
	         {.str = "auto"},
	         4,
	         "[`model.quantize_base=True`]",
	         "lora_finetune_distributed",
	         "llama3_2/1B_qlora"},
	        /* 'multi-node full' */
	        {2,
	         {.str = "auto"},
	         8,
	         "[]",
	         "full_finetune_distributed",
	         "llama3_2/1B_full_multinode"},
	        /* 'numProcPerNode=1 forces single device even with multiple gpus' */
	        {1,
	         {.is_int = 1, .n = 1},
	         4,
	         "[]",
	         "full_finetune_single_device",
	         "llama3_2/1B_full_single_device"},
	        /* 'numProcPerNode>1 uses distributed' */
	        {1,
	         {.is_int = 1, .n = 4},
	         4,
	         "[]",
	         "full_finetune_distributed",
	         "llama3_2/1B_full"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		json_t *args = J(cases[i].args);
		const char *recipe = NULL;
		char config[64];
		assert_int_equal(kft_torchtune_recipe_config(
		                         cases[i].nodes, &cases[i].npp, cases[i].gpus, args,
		                         "torchtune-llama3.2-1b", &recipe, config, sizeof(config)),
		                 0);
		assert_string_equal(recipe, cases[i].recipe);
		assert_string_equal(config, cases[i].config);
		json_decref(args);
	}
}

/* torchtune_test.go: TestExtractOverridesFromRuntime, all 4 cases */
static void test_torchtune_overrides(void **state)
{
#define RJOB(ancestor, container)                                                                  \
	"{`replicatedJobs`:[{`template`:{`metadata`:{`labels`:"                                    \
	"{`trainer.kubeflow.org/trainjob-ancestor-step`:`" ancestor "`}},`spec`:{`template`:"      \
	"{`spec`:{`containers`:[{`name`:`" container "`,`command`:"                                \
	"[`output_dir=/out`,`tokenizer.path=/tok`,`batch_size=32`]}]}}}}}]}"
	static const char *const cases[][2] = {
	        {"{}", "[]"}, /* 'no jobset template' */
	        /* 'trainer node container returns only immutable configs' */
	        {RJOB("trainer", "node"), "[`output_dir=/out`,`tokenizer.path=/tok`]"},
	        {RJOB("other", "node"), "[]"},      /* 'non-trainer ancestor is ignored' */
	        {RJOB("trainer", "sidecar"), "[]"}, /* 'non-node container is ignored' */
	};
#undef RJOB
	for (size_t i = 0; i < 4; i++) {
		json_t *tmpl = J(cases[i][0]);
		json_t *got = kft_torchtune_runtime_overrides(tmpl);
		assert_json_text(got, cases[i][1]);
		json_decref(got);
		json_decref(tmpl);
	}
	json_t *got = kft_torchtune_runtime_overrides(NULL);
	assert_json_text(got, "[]");
	json_decref(got);
}

/* torch.go's rule behind torch_test.go's torchtune cases: a rendezvous
 * endpoint only for several nodes or several processes per node. */
static void test_torchtune_rendezvous(void **state)
{
	static const struct {
		int32_t nodes;
		kft_torch_nproc npp;
		int64_t gpus;
		int want;
	} cases[] = {
	        {1, {.str = "auto"}, 1, 0},       {1, {.str = "auto"}, 2, 1},
	        {2, {.is_int = 1, .n = 1}, 0, 1}, {1, {.is_int = 1, .n = 1}, 8, 0},
	        {1, {.is_int = 1, .n = 2}, 0, 1}, {1, {.str = "cpu"}, 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		assert_int_equal(kft_torchtune_needs_rendezvous(cases[i].nodes, &cases[i].npp,
		                                                cases[i].gpus),
		                 cases[i].want);
}

/* kftrainer: the entrypoint is exactly ["tune", "run"]; keys split at '='. */
static void test_torchtune_entrypoint_and_keys(void **state)
{
	json_t *yes = J("[`tune`,`run`]"), *more = J("[`tune`,`run`,`x`]"), *no = J("[`tune`]");
	char key[32];
	assert_true(kft_torchtune_is_entrypoint(yes));
	assert_false(kft_torchtune_is_entrypoint(more));
	assert_false(kft_torchtune_is_entrypoint(no));
	assert_false(kft_torchtune_is_entrypoint(NULL));
	assert_true(kft_torchtune_immutable_key("tokenizer.merges_file=a=b", key, sizeof(key)));
	assert_string_equal(key, "tokenizer.merges_file");
	assert_true(kft_torchtune_immutable_key("checkpointer.checkpoint_dir", key, sizeof(key)));
	assert_false(kft_torchtune_immutable_key("output_dirx=1", key, sizeof(key)));
	assert_true(kft_torchtune_model_supported("llama3_3/70B"));
	assert_false(kft_torchtune_model_supported("llama3_1/70B"));
	json_decref(yes);
	json_decref(more);
	json_decref(no);
}

/* ---- main ------------------------------------------------------------------------------ */

#define N_ENFORCE  (sizeof(enforce_cases) / sizeof(*enforce_cases))
#define N_VALIDATE (sizeof(validate_cases) / sizeof(*validate_cases))

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	        cmocka_unit_test(test_enforce_info_nil),
	        cmocka_unit_test(test_enforce_no_torch_policy),
	        cmocka_unit_test(test_inject_init_container),
	        cmocka_unit_test(test_inject_missing_target),
	        cmocka_unit_test(test_inject_torchtune),
	        cmocka_unit_test(test_inject_two_containers),
	        cmocka_unit_test(test_inject_sidecar),
	        cmocka_unit_test(test_inject_empty_targets),
	        cmocka_unit_test(test_inject_two_jobs),
	        cmocka_unit_test(test_enforce_job_env),
	        cmocka_unit_test(test_enforce_port_upsert),
	        cmocka_unit_test(test_enforce_template_resources),
	        cmocka_unit_test(test_enforce_bad_runtime_nproc),
	        cmocka_unit_test(test_enforce_backend),
	        cmocka_unit_test(test_enforce_backend_ipv6),
	        cmocka_unit_test(test_enforce_torchtune_overrides),
	        cmocka_unit_test(test_enforce_torchtune_cpu),
	        cmocka_unit_test(test_elastic),
	        cmocka_unit_test(test_elastic_defaults),
	        cmocka_unit_test(test_elastic_invalid),
	        cmocka_unit_test(test_torchtune_model),
	        cmocka_unit_test(test_torchtune_lora),
	        cmocka_unit_test(test_torchtune_qlora),
	        cmocka_unit_test(test_torchtune_recipe_config),
	        cmocka_unit_test(test_torchtune_overrides),
	        cmocka_unit_test(test_torchtune_rendezvous),
	        cmocka_unit_test(test_torchtune_entrypoint_and_keys),
	};
	size_t n_fixed = sizeof(fixed) / sizeof(*fixed), n = 0;
	struct CMUnitTest tests[sizeof(fixed) / sizeof(*fixed) + N_ENFORCE + N_VALIDATE];
	for (size_t i = 0; i < n_fixed; i++)
		tests[n++] = fixed[i];
	for (size_t i = 0; i < N_ENFORCE; i++)
		tests[n++] = (struct CMUnitTest){.name = enforce_cases[i].pins,
		                                 .test_func = run_enforce_case,
		                                 .initial_state = (void *)&enforce_cases[i]};
	for (size_t i = 0; i < N_VALIDATE; i++)
		tests[n++] = (struct CMUnitTest){.name = validate_cases[i].pins,
		                                 .test_func = run_validate_case,
		                                 .initial_state = (void *)&validate_cases[i]};
	return _cmocka_run_group_tests("plugin_torch", tests, n, NULL, NULL);
}
