/*
 * torchtune_status.c - a torchtune fine-tune reports its progress (see
 * torchtune.h). With the TrainJobStatus plugin on, a TrainJob whose trainer
 * runs `tune run` gets torchtune_status.py (embedded at build time) in a
 * ConfigMap "<name>-torchtune-status", mounted read-only into the trainer's
 * node container, PYTHONPATH naming its directory, and torchtune's
 * metric_logger pointed at its StatusLogger: torchtune's DiskLogger that also
 * sends each logged step to the status endpoint the plugin already names.
 * The override follows the runtime's settings in the command, so a
 * metric_logger the user gives in args still wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "plugins/builtin.h"
#include "plugins/torchtune.h"

#define STATUS_VOLUME    "kftrainer-torchtune-status"
#define STATUS_DIR       "/var/run/kftrainer/torchtune"
#define STATUS_MODULE    "kubeflow_trainer_torchtune"
#define STATUS_CM_SUFFIX "-torchtune-status"
#define LOGGER_OVERRIDE  "metric_logger._component_=" STATUS_MODULE ".StatusLogger"
#define ENV_PYTHONPATH   "PYTHONPATH"

/* Defined by the build (cmake/embed_text.cmake). */
extern const char kft_torchtune_status_py[];

static char *config_map_name(const char *job)
{
	char *name = NULL;
	return asprintf(&name, "%s" STATUS_CM_SUFFIX, job) < 0 ? NULL : name;
}

/* PYTHONPATH with the module's directory first: the container's own value
 * after it, when the runtime or the TrainJob sets one. */
static int prepend_pythonpath(json_t *env)
{
	size_t i;
	const json_t *e;
	const char *old = NULL;
	json_array_foreach(env, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && strcmp(n, ENV_PYTHONPATH) == 0)
			old = json_string_value(json_object_get(e, "value"));
	}
	char *value = NULL;
	if (old && *old ? asprintf(&value, STATUS_DIR ":%s", old) < 0
	                : !(value = strdup(STATUS_DIR)))
		return KFT_ENOMEM;
	int rc = kft_upsert_env(env, ENV_PYTHONPATH, value);
	free(value);
	return rc;
}

int kft_torchtune_instrument(kft_pod_set *ps, const kft_trainjob *job)
{
	kft_container *c = kft_pod_set_find_container(ps, KFT_CONTAINER_NODE);
	if (!c || !kft_torchtune_is_entrypoint(job->command))
		return 0;
	char *cm = config_map_name(job->name);
	json_t *mount = json_pack("{s:s, s:b, s:s}", "name", STATUS_VOLUME, "readOnly", 1,
	                          "mountPath", STATUS_DIR);
	json_t *vol =
	        cm ? json_pack("{s:s, s:{s:s}}", "name", STATUS_VOLUME, "configMap", "name", cm)
	           : NULL;
	int rc = mount && vol && json_is_array(c->command) ? 0 : KFT_ENOMEM;
	if (rc == 0)
		rc = json_array_append_new(c->command, json_string(LOGGER_OVERRIDE)) ||
		                     prepend_pythonpath(c->env) ||
		                     kft_upsert_by_key(c->volume_mounts, "mountPath", mount) ||
		                     kft_upsert_by_key(ps->volumes, "name", vol)
		             ? KFT_ENOMEM
		             : 0;
	json_decref(mount);
	json_decref(vol);
	free(cm);
	return rc;
}

json_t *kft_torchtune_status_config_map(const kft_plugin_ctx *ctx, const kft_trainjob *job)
{
	char *name = config_map_name(job->name);
	json_t *owner = name ? kft_owner_reference(ctx, job) : NULL;
	json_t *out = owner ? json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:s}}", "apiVersion",
	                                "v1", "kind", "ConfigMap", "metadata", "name", name,
	                                "namespace", job->ns, "ownerReferences", owner, "data",
	                                STATUS_MODULE ".py", kft_torchtune_status_py)
	                    : NULL;
	free(name);
	return out;
}
