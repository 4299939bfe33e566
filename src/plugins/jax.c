/*
 * jax.c - the JAX plugin: jax.distributed.initialize() reads its process
 * count, process id and coordinator from the environment.
 *
 * One JAX process runs per trainer pod, so the trainer's `node` container
 * gets JAX_NUM_PROCESSES (the trainer pod count, TrainJob numNodes winning),
 * JAX_PROCESS_ID (the pod's Job completion index, a fieldRef) and
 * JAX_COORDINATOR_ADDRESS (the first trainer pod and the "jax" service port,
 * 29500 on Kubernetes), and declares that port. The env names and values
 * are upstream Kubeflow Trainer v2.3.0's; the address and the port are asked
 * of the backend, so a local run coordinates over loopback.
 */
#include <stdio.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "plugins/builtin.h"

#define JAX_ENV_NUM_PROCESSES "JAX_NUM_PROCESSES"
#define JAX_ENV_PROCESS_ID    "JAX_PROCESS_ID"
#define JAX_ENV_COORDINATOR   "JAX_COORDINATOR_ADDRESS"
#define JAX_SERVICE           "jax"
#define TRAINER_PORT          29500
#define COMPLETION_INDEX_PATH "metadata.annotations['batch.kubernetes.io/job-completion-index']"

/* "<first trainer pod>:<port>" as the backend names them. */
static int coordinator(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                       const kft_trainjob *job, const kft_pod_set *ps, int *port, char *buf,
                       size_t size, kft_error *err)
{
	const kft_backend *dflt = kft_backend_default(), *be = ctx ? ctx->backend : NULL;
	const kft_backend *addr_be = be && be->pod_address ? be : dflt;
	const kft_backend *port_be = be && be->service_port ? be : dflt;
	const char *sub = json_string_value(
	        json_object_get(json_object_get(info->template_spec, "network"), "subdomain"));
	char host[512];
	if (!sub || !*sub)
		sub = job->name;
	*port = port_be->service_port(port_be->self, job->name, JAX_SERVICE, TRAINER_PORT);
	if (*port < 1 || *port > 65535)
		return kft_error_set(err, KFT_EINVAL, "backend gave jax port %d", *port);
	if (addr_be->pod_address(addr_be->self, job->name, ps->name, 0, 0, sub, host,
	                         sizeof(host)) != 0)
		return kft_error_set(err, KFT_ELIMIT, "the coordinator address of %s is too long",
		                     job->name);
	snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, *port);
	return 0;
}

static int jax_env(json_t *env, int32_t count, const char *coord)
{
	char n[16];
	snprintf(n, sizeof(n), "%d", (int)count);
	json_t *rank = json_pack("{s:s, s:{s:{s:s}}}", "name", JAX_ENV_PROCESS_ID, "valueFrom",
	                         "fieldRef", "fieldPath", COMPLETION_INDEX_PATH);
	int rc = rank ? 0 : KFT_ENOMEM;
	rc = rc ? rc : kft_upsert_env(env, JAX_ENV_NUM_PROCESSES, n);
	rc = rc ? rc : kft_upsert_env_object(env, rank);
	rc = rc ? rc : kft_upsert_env(env, JAX_ENV_COORDINATOR, coord);
	json_decref(rank);
	return rc;
}

static int jax_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                 const kft_trainjob *job, kft_error *err)
{
	if (!info || !job || !json_is_object(json_object_get(info->ml_policy, "jax")))
		return 0;
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	if (ps && job->has_num_nodes)
		ps->count = job->num_nodes;
	kft_container *c =
	        ps && job->trainer ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
	if (!c)
		return 0;
	char coord[600];
	int port, rc = coordinator(ctx, info, job, ps, &port, coord, sizeof(coord), err);
	if (rc != 0)
		return rc;
	if (jax_env(c->env, ps->count, coord) != 0 || kft_upsert_port(c->ports, port) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

const kft_plugin kft_plugin_jax = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "JAX",
        .enforce_ml_policy = jax_enforce_ml_policy,
};
