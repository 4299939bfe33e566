/*
 * coscheduling.c - the CoScheduling plugin: gang scheduling through the
 * Kubernetes scheduler-plugins "coscheduling" plugin (upstream v2.3.0,
 * pkg/runtime/framework/plugins/coscheduling).
 *
 * When the runtime's podGroupPolicy has `coscheduling`, every pod of the
 * TrainJob gets the label scheduling.x-k8s.io/pod-group=<job name>, and the
 * plugin emits one scheduling.x-k8s.io/v1alpha1 PodGroup of that name. The
 * scheduler then starts no pod of the group until it can start minMember of
 * them. minMember is the sum of the pod sets' counts (their parallelism, or
 * numNodes for the trainer) over every pod set, initializers included, and
 * minResources the sum of each pod set's single-pod requests times its
 * count. Replicas of a replicated job are not multiplied in: upstream does
 * not (its TODO on replicas > 1), and matching it is what keeps the object
 * identical to the one upstream's controller would apply.
 *
 * An existing PodGroup is left alone while the TrainJob runs: its size may
 * only change while the job is suspended, when no pod is waiting on it.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"

#define POD_GROUP_LABEL          "scheduling.x-k8s.io/pod-group"
#define POD_GROUP_API_VERSION    "scheduling.x-k8s.io/v1alpha1"
#define POD_GROUP_KIND           "PodGroup"
#define DEFAULT_SCHEDULE_TIMEOUT 60 /* the CRD default of scheduleTimeoutSeconds */

/* podGroupPolicy.coscheduling, or NULL when the runtime does not ask for it. */
static const json_t *coscheduling_policy(const kft_runtime_info *info)
{
	const json_t *c = info ? json_object_get(info->pod_group_policy, "coscheduling") : NULL;
	return json_is_object(c) ? c : NULL;
}

static int enforce_pod_group_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                    const kft_trainjob *job, kft_error *err)
{
	if (!coscheduling_policy(info) || !job)
		return 0;
	if (!info->scheduler_pod_labels && !(info->scheduler_pod_labels = json_object()))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (json_object_set_new(info->scheduler_pod_labels, POD_GROUP_LABEL,
	                        json_string(job->name)) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

/* ---- minMember and minResources ------------------------------------------- */

/* ---- the PodGroup ----------------------------------------------------------- */

static json_int_t schedule_timeout(const json_t *policy)
{
	const json_t *t = json_object_get(policy, "scheduleTimeoutSeconds");
	return json_is_integer(t) ? json_integer_value(t) : DEFAULT_SCHEDULE_TIMEOUT;
}

/* The PodGroup (a kft_pod_group_maker); min_res is consumed whatever happens. */
static json_t *pod_group(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                         const kft_trainjob *job, int32_t min_member, json_t *min_res)
{
	json_t *owner = kft_owner_reference(ctx, job);
	if (!owner) {
		json_decref(min_res);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:i, s:o, s:I}}", "apiVersion",
	                 POD_GROUP_API_VERSION, "kind", POD_GROUP_KIND, "metadata", "name",
	                 job->name, "namespace", job->ns, "ownerReferences", owner, "spec",
	                 "minMember", (int)min_member, "minResources", min_res,
	                 "scheduleTimeoutSeconds", schedule_timeout(coscheduling_policy(info)));
}

static int component_builder(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                             const kft_trainjob *job, json_t *objects, kft_error *err)
{
	if (!coscheduling_policy(info))
		return 0;
	return kft_build_pod_group(ctx, info, job, POD_GROUP_API_VERSION, pod_group, objects, err);
}

/* Only the PodGroups it owns. The LimitRange and RuntimeClass watches that
 * requeue suspended TrainJobs (as upstream's do) are not children: the
 * controller sets them up (src/controller/manager.c, runtime_refs.c). */
static const char *const watch_kinds[] = {POD_GROUP_API_VERSION "/" POD_GROUP_KIND, NULL};

const kft_plugin kft_plugin_coscheduling = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "CoScheduling",
        .watch_kinds = watch_kinds,
        .enforce_pod_group_policy = enforce_pod_group_policy,
        .component_builder = component_builder,
};
