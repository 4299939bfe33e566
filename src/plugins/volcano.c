/*
 * volcano.c - the Volcano plugin: gang scheduling through the Volcano
 * scheduler (upstream v2.3.0, pkg/runtime/framework/plugins/volcano).
 *
 * When the runtime's podGroupPolicy has `volcano`, every pod gets the
 * annotation scheduling.k8s.io/group-name=<job name> and the plugin emits a
 * scheduling.volcano.sh/v1beta1 PodGroup of that name. Its size is computed
 * as the CoScheduling plugin computes it (every pod set's count, replicas
 * not multiplied in, and count x single-pod requests); besides, it carries
 *   - queue: the scheduling.volcano.sh/queue-name annotation of the runtime
 *     template (a TrainJob's runtime patches may override it);
 *   - priorityClassName: the last replicated job's pod template that names
 *     one (upstream overwrites as it walks the list);
 *   - networkTopology: podGroupPolicy.volcano.networkTopology.
 *
 * Validation mirrors upstream: an empty queue name is refused, and a
 * priority class must exist (asked of the backend) unless it is one of the
 * two built-in system classes. Upstream stops looking at the first system
 * class it meets, so later replicated jobs go unchecked; so do we.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/quantity.h"
#include "kftrainer/validation.h"
#include "plugins/builtin.h"

#define GROUP_NAME_ANNOTATION "scheduling.k8s.io/group-name"
#define QUEUE_ANNOTATION      "scheduling.volcano.sh/queue-name"
#define POD_GROUP_API_VERSION "scheduling.volcano.sh/v1beta1"
#define POD_GROUP_KIND        "PodGroup"
/* The CRD defaults of networkTopology's fields. */
#define DEFAULT_TOPOLOGY_MODE "hard"
#define DEFAULT_HIGHEST_TIER  1

/* podGroupPolicy.volcano, or NULL when the runtime does not ask for it. */
static const json_t *volcano_policy(const kft_runtime_info *info)
{
	const json_t *v = info ? json_object_get(info->pod_group_policy, "volcano") : NULL;
	return json_is_object(v) ? v : NULL;
}

static int enforce_pod_group_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                    const kft_trainjob *job, kft_error *err)
{
	if (!volcano_policy(info) || !job)
		return 0;
	if (!info->scheduler_pod_annotations && !(info->scheduler_pod_annotations = json_object()))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (json_object_set_new(info->scheduler_pod_annotations, GROUP_NAME_ANNOTATION,
	                        json_string(job->name)) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

/* ---- the runtime's pod templates ------------------------------------------------ */

/* replicatedJobs[i].template.spec.template.spec, or NULL. */
static const json_t *pod_spec_of(const json_t *rjob)
{
	const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
	return json_object_get(json_object_get(job_spec, "template"), "spec");
}

static const json_t *priority_class_value(const json_t *rjob)
{
	const json_t *pc = json_object_get(pod_spec_of(rjob), "priorityClassName");
	return json_is_string(pc) ? pc : NULL;
}

static const char *priority_class_of(const json_t *rjob)
{
	return json_string_value(priority_class_value(rjob));
}

static const json_t *replicated_jobs(const kft_runtime_info *info)
{
	return json_object_get(info->template_spec, "replicatedJobs");
}

/* ---- validation ----------------------------------------------------------------- */

static void check_queue(const kft_runtime_info *info, kft_field_errors *errs)
{
	const json_t *queue = json_object_get(info->annotations, QUEUE_ANNOTATION);
	if (json_is_string(queue) && json_string_length(queue) == 0)
		kft_field_errors_add(errs, KFT_FIELD_INVALID,
		                     "spec.annotations[" QUEUE_ANNOTATION "]", queue,
		                     "Volcano queue name must not be empty");
}

/* What the API client says when the lookup fails: upstream appends it. */
static void missing_priority_class(const json_t *value, kft_field_errors *errs)
{
	const char *name = json_string_value(value);
	char *quoted = kft_go_quote(name);
	if (!quoted) {
		errs->oom = 1;
		return;
	}
	if (*name)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.templateSpec.priorityClassName",
		                     value,
		                     "PriorityClass %s doesn't exist: "
		                     "priorityclasses.scheduling.k8s.io %s not found",
		                     quoted, quoted);
	else
		kft_field_errors_add(
		        errs, KFT_FIELD_INVALID, "spec.templateSpec.priorityClassName", value,
		        "PriorityClass %s doesn't exist: resource name may not be empty", quoted);
	free(quoted);
}

/* Every named priority class must exist, unless a system class comes first. */
static void check_priority_classes(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                   kft_field_errors *errs)
{
	size_t i;
	const json_t *rjob;
	json_array_foreach(replicated_jobs(info), i, rjob)
	{
		const char *pc = priority_class_of(rjob);
		if (!pc)
			continue;
		if (strcmp(pc, "system-cluster-critical") == 0 ||
		    strcmp(pc, "system-node-critical") == 0)
			return;
		json_t *found =
		        *pc ? ctx->backend->get_object(ctx->backend->self, "scheduling.k8s.io/v1",
		                                       "PriorityClass", NULL, pc)
		            : NULL;
		if (!found)
			missing_priority_class(priority_class_value(rjob), errs);
		json_decref(found);
	}
}

static void custom_validation(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                              const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	if (!volcano_policy(info) || !new_job)
		return;
	check_queue(info, errs);
	check_priority_classes(ctx, info, errs);
}

/* ---- minMember and minResources (as in coscheduling.c) ---------------------------- */

/* ---- the PodGroup ------------------------------------------------------------------- */

/* networkTopology with the CRD's defaults for fields left out. */
static json_t *network_topology(const json_t *policy)
{
	const json_t *nt = json_object_get(policy, "networkTopology");
	if (!json_is_object(nt))
		return NULL;
	const char *mode = json_string_value(json_object_get(nt, "mode"));
	const json_t *tier = json_object_get(nt, "highestTierAllowed");
	return json_pack("{s:s, s:I}", "mode", mode ? mode : DEFAULT_TOPOLOGY_MODE,
	                 "highestTierAllowed",
	                 json_is_integer(tier) ? json_integer_value(tier)
	                                       : (json_int_t)DEFAULT_HIGHEST_TIER);
}

/* queue, priorityClassName, minResources and networkTopology, in the
 * order of Volcano's PodGroupSpec. */
static int fill_spec(json_t *spec, const kft_runtime_info *info, json_t *min_res)
{
	const json_t *queue = json_object_get(info->annotations, QUEUE_ANNOTATION);
	const char *pc = NULL;
	size_t i;
	const json_t *rjob;
	json_array_foreach(replicated_jobs(info), i, rjob)
	{
		if (priority_class_of(rjob))
			pc = priority_class_of(rjob);
	}
	int bad = 0;
	if (json_is_string(queue))
		bad |= json_object_set_new(spec, "queue", json_string(json_string_value(queue)));
	if (pc)
		bad |= json_object_set_new(spec, "priorityClassName", json_string(pc));
	bad |= json_object_set_new(spec, "minResources", min_res);
	json_t *nt = network_topology(volcano_policy(info));
	if (nt)
		bad |= json_object_set_new(spec, "networkTopology", nt);
	return bad ? KFT_ENOMEM : 0;
}

/* The PodGroup (a kft_pod_group_maker); min_res is consumed whatever happens. */
static json_t *pod_group(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                         const kft_trainjob *job, int32_t min_member, json_t *min_res)
{
	json_t *spec = json_pack("{s:i}", "minMember", (int)min_member);
	if (!spec) {
		json_decref(min_res);
		return NULL;
	}
	json_t *owner = fill_spec(spec, info, min_res) == 0 ? kft_owner_reference(ctx, job) : NULL;
	if (!owner) {
		json_decref(spec);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:o}", "apiVersion",
	                 POD_GROUP_API_VERSION, "kind", POD_GROUP_KIND, "metadata", "name",
	                 job->name, "namespace", job->ns, "ownerReferences", owner, "spec", spec);
}

static int component_builder(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                             const kft_trainjob *job, json_t *objects, kft_error *err)
{
	if (!volcano_policy(info))
		return 0;
	return kft_build_pod_group(ctx, info, job, POD_GROUP_API_VERSION, pod_group, objects, err);
}

/* Only the PodGroups it owns. The LimitRange and RuntimeClass watches that
 * requeue suspended TrainJobs (as upstream's do) are not children: the
 * controller sets them up (src/controller/manager.c, runtime_refs.c). */
static const char *const watch_kinds[] = {POD_GROUP_API_VERSION "/" POD_GROUP_KIND, NULL};

const kft_plugin kft_plugin_volcano = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "Volcano",
        .watch_kinds = watch_kinds,
        .custom_validation = custom_validation,
        .enforce_pod_group_policy = enforce_pod_group_policy,
        .component_builder = component_builder,
};
