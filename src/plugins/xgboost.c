/*
 * xgboost.c - the XGBoost plugin: distributed XGBoost through its collective
 * (Rabit) tracker, configured by DMLC_* environment variables.
 *
 * The first trainer pod runs the tracker; every worker learns where it is
 * (DMLC_TRACKER_URI, DMLC_TRACKER_PORT), its own rank (DMLC_TASK_ID, the
 * pod's Job completion index) and the world size (DMLC_NUM_WORKER). A node
 * runs one worker per GPU, or one worker when it has none, so the world size
 * is nodes x workers per node, the GPUs read from the runtime's node
 * container unless the TrainJob's resourcesPerNode replaces them. The names
 * and the rules are upstream Kubeflow Trainer v2.3.0's; the tracker's
 * address and port ("xgboost", 29500 on Kubernetes) are asked of the backend.
 * A TrainJob may not set the DMLC_* variables itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"

#define XGB_ENV_TRACKER_URI   "DMLC_TRACKER_URI"
#define XGB_ENV_TRACKER_PORT  "DMLC_TRACKER_PORT"
#define XGB_ENV_TASK_ID       "DMLC_TASK_ID"
#define XGB_ENV_NUM_WORKER    "DMLC_NUM_WORKER"
#define XGB_SERVICE           "xgboost"
#define TRAINER_PORT          29500
#define COMPLETION_INDEX_PATH "metadata.annotations['batch.kubernetes.io/job-completion-index']"

static const char *const reserved_env[] = {XGB_ENV_TRACKER_URI, XGB_ENV_TRACKER_PORT,
                                           XGB_ENV_TASK_ID, XGB_ENV_NUM_WORKER, NULL};

static int has_policy(const kft_runtime_info *info)
{
	return info && json_is_object(json_object_get(info->ml_policy, "xgboost"));
}

/* ---- EnforceMLPolicy ---------------------------------------------------------- */

/* The tracker's host (the first trainer pod) and port, as the backend says. */
static int tracker(const kft_plugin_ctx *ctx, const kft_runtime_info *info, const kft_trainjob *job,
                   const kft_pod_set *ps, char *host, size_t size, int *port, kft_error *err)
{
	const kft_backend *dflt = kft_backend_default(), *be = ctx ? ctx->backend : NULL;
	const kft_backend *addr_be = be && be->pod_address ? be : dflt;
	const kft_backend *port_be = be && be->service_port ? be : dflt;
	const char *sub = json_string_value(
	        json_object_get(json_object_get(info->template_spec, "network"), "subdomain"));
	if (!sub || !*sub)
		sub = job->name;
	*port = port_be->service_port(port_be->self, job->name, XGB_SERVICE, TRAINER_PORT);
	if (*port < 1 || *port > 65535)
		return kft_error_set(err, KFT_EINVAL, "backend gave xgboost port %d", *port);
	if (addr_be->pod_address(addr_be->self, job->name, ps->name, 0, 0, sub, host, size) != 0)
		return kft_error_set(err, KFT_ELIMIT, "the tracker address of %s is too long",
		                     job->name);
	return 0;
}

static int xgb_env(json_t *env, const char *host, int port, long long workers)
{
	char p[16], w[32];
	snprintf(p, sizeof(p), "%d", port);
	snprintf(w, sizeof(w), "%lld", workers);
	json_t *rank = json_pack("{s:s, s:{s:{s:s}}}", "name", XGB_ENV_TASK_ID, "valueFrom",
	                         "fieldRef", "fieldPath", COMPLETION_INDEX_PATH);
	int rc = rank ? 0 : KFT_ENOMEM;
	rc = rc ? rc : kft_upsert_env(env, XGB_ENV_TRACKER_URI, host);
	rc = rc ? rc : kft_upsert_env(env, XGB_ENV_TRACKER_PORT, p);
	rc = rc ? rc : kft_upsert_env_object(env, rank);
	rc = rc ? rc : kft_upsert_env(env, XGB_ENV_NUM_WORKER, w);
	json_decref(rank);
	return rc;
}

static int xgboost_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                     const kft_trainjob *job, kft_error *err)
{
	kft_pod_set *ps = has_policy(info) && job
	                          ? kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER)
	                          : NULL;
	if (!ps)
		return 0;
	if (job->has_num_nodes)
		ps->count = job->num_nodes;
	kft_container *c = job->trainer ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
	if (!c)
		return 0;
	const json_t *res = kft_runtime_info_node_resources(info, job);
	int64_t gpus = 0;
	char host[512];
	int port, rc = kft_resources_gpus(res, &gpus, err);
	if (rc == 0)
		rc = tracker(ctx, info, job, ps, host, sizeof(host), &port, err);
	if (rc != 0)
		return rc;
	if (gpus > INT32_MAX)
		return kft_error_set(err, KFT_EINVAL, "trainer resources: %lld GPUs per node",
		                     (long long)gpus);
	long long workers = (long long)ps->count * (gpus > 0 ? gpus : 1);
	if (xgb_env(c->env, host, port, workers) != 0 || kft_upsert_port(c->ports, port) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

/* ---- CustomValidation ------------------------------------------------------------- */

static void xgboost_validate(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                             const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	const json_t *trainer = json_object_get(json_object_get(new_job, "spec"), "trainer");
	size_t i;
	const json_t *e;
	if (!has_policy(info) || !json_is_object(trainer))
		return;
	json_array_foreach(json_object_get(trainer, "env"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		for (size_t k = 0; name && reserved_env[k]; k++) {
			if (strcmp(name, reserved_env[k]) != 0)
				continue;
			char field[48];
			snprintf(field, sizeof(field), "spec.trainer.env[%zu]", i);
			kft_field_errors_add(errs, KFT_FIELD_FORBIDDEN, field, NULL,
			                     "%s is reserved for the XGBoost runtime", name);
		}
	}
}

const kft_plugin kft_plugin_xgboost = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "XGBoost",
        .custom_validation = xgboost_validate,
        .enforce_ml_policy = xgboost_enforce_ml_policy,
};
