/*
 * shared_config.c - an out-of-tree kftrainer plugin that uses the Build and
 * PostExecution points, beside require-team-label's PreExecution one:
 *
 *   ComponentBuilder  a ConfigMap <trainjob>-shared-config, owned by the
 *                     TrainJob, holding team.conf (the job's team and name);
 *   EnforcePodSpec    mounts it read-only at /etc/kftrainer/shared in the
 *                     trainer's `node` container, so every trainer pod reads
 *                     the same file on a cluster and on a laptop (the local
 *                     engine materialises configMap volumes);
 *   TerminalCondition ends a TrainJob annotated
 *                     example.kftrainer.dev/stop: "true" as Complete, reason
 *                     StopRequested: a team's way to stop a job cleanly.
 *
 * Build and load it as require-team-label (README.md, docs/plugins.md).
 */
#include <string.h>

#include <kftrainer/constants.h>
#include <kftrainer/framework.h>
#include <kftrainer/plugin.h>

#define VOLUME      "shared-config"
#define MOUNT_PATH  "/etc/kftrainer/shared"
#define SUFFIX      "-shared-config"
#define STOP_ANNOT  "example.kftrainer.dev/stop"
#define STOP_REASON "StopRequested"

static int oom(kft_error *err)
{
	return kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* "<trainjob>-shared-config" into buf; -1 when it does not fit. */
static int configmap_name(const kft_trainjob *job, char *buf, size_t size)
{
	size_t n = strlen(job->name);
	if (n + sizeof(SUFFIX) > size)
		return -1;
	memcpy(buf, job->name, n);
	memcpy(buf + n, SUFFIX, sizeof(SUFFIX));
	return 0;
}

static int mount_config(const kft_plugin_ctx *ctx, kft_runtime_info *info, const kft_trainjob *job,
                        kft_error *err)
{
	(void)ctx;
	char name[300];
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	kft_container *node = ps ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
	if (!node)
		return 0; /* a runtime without a trainer node: nothing to mount into */
	if (configmap_name(job, name, sizeof(name)) != 0)
		return kft_error_set(err, KFT_EINVAL, "SharedConfig: TrainJob name too long");
	json_t *vol = json_pack("{s:s, s:{s:s}}", "name", VOLUME, "configMap", "name", name);
	json_t *vm = json_pack("{s:s, s:s, s:b}", "name", VOLUME, "mountPath", MOUNT_PATH,
	                       "readOnly", 1);
	int rc = vol && vm && kft_upsert_by_key(ps->volumes, "name", vol) == 0 &&
	                         kft_upsert_by_key(node->volume_mounts, "mountPath", vm) == 0
	                 ? 0
	                 : oom(err);
	json_decref(vol);
	json_decref(vm);
	return rc;
}

static int build_config(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                        const kft_trainjob *job, json_t *objects, kft_error *err)
{
	(void)info;
	char name[300];
	const json_t *labels = json_object_get(json_object_get(job->obj, "metadata"), "labels");
	const char *team = json_string_value(json_object_get(labels, "team"));
	if (configmap_name(job, name, sizeof(name)) != 0)
		return kft_error_set(err, KFT_EINVAL, "SharedConfig: TrainJob name too long");
	json_t *owner = kft_owner_reference(ctx, job);
	json_t *data = json_pack("{s:s++++}", "team.conf", "team=", team ? team : "unknown",
	                         "\njob=", job->name, "\n");
	/* "o" steals both references, also when packing fails (or either is
	 * NULL, which fails it). */
	json_t *cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:o}", "apiVersion", "v1", "kind",
	                       "ConfigMap", "metadata", "name", name, "namespace", job->ns,
	                       "ownerReferences", owner, "data", data);
	if (!cm)
		return oom(err);
	return json_array_append_new(objects, cm) == 0 ? 0 : oom(err);
}

static int stop_requested(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t **condition,
                          kft_error *err)
{
	(void)ctx;
	const json_t *ann = json_object_get(json_object_get(job->obj, "metadata"), "annotations");
	const char *stop = json_string_value(json_object_get(ann, STOP_ANNOT));
	if (!stop || strcmp(stop, "true") != 0)
		return 0;
	*condition =
	        json_pack("{s:s, s:s, s:s, s:s}", "type", "Complete", "status", "True", "reason",
	                  STOP_REASON, "message", "stopped at the team's request (" STOP_ANNOT ")");
	return *condition ? 0 : oom(err);
}

static const char *const watched[] = {"v1/ConfigMap", NULL};

static const kft_plugin plugin = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "SharedConfig",
        .watch_kinds = watched,
        .enforce_pod_spec = mount_config,
        .component_builder = build_config,
        .terminal_condition = stop_requested,
};

KFT_PLUGIN_ENTRY
{
	return &plugin;
}
