/*
 * plainml.c - the PlainML plugin: training that needs no framework launcher.
 *
 * When the runtime selects none of the frameworks that configure the trainer
 * themselves (torch, mpi, jax), the TrainJob still decides two things: how
 * many trainer nodes run (spec.trainer.numNodes) and which extra env the
 * trainer's `node` container gets (spec.trainer.env, which wins over the
 * runtime's by name). A runtime with no mlPolicy at all is plain, and so are
 * xgboost and flux runtimes, as in upstream Kubeflow Trainer v2.3.0: their
 * own plugins add to what this one sets.
 */
#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "plugins/builtin.h"

/* 1 when the runtime's framework configures the trainer itself. */
static int framework_owns_trainer(const json_t *ml_policy)
{
	static const char *const owners[] = {"torch", "mpi", "jax"};
	for (size_t i = 0; i < sizeof(owners) / sizeof(*owners); i++)
		if (json_is_object(json_object_get(ml_policy, owners[i])))
			return 1;
	return 0;
}

static int plainml_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                     const kft_trainjob *job, kft_error *err)
{
	if (!info || !job || framework_owns_trainer(info->ml_policy))
		return 0;
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	if (ps && job->has_num_nodes)
		ps->count = job->num_nodes;
	kft_container *c =
	        ps && job->trainer ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
	size_t i;
	const json_t *e;
	json_array_foreach(c ? job->env : NULL, i, e)
	{
		if (kft_upsert_env_object(c->env, e) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	return 0;
}

const kft_plugin kft_plugin_plainml = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "PlainML",
        .enforce_ml_policy = plainml_enforce_ml_policy,
};
