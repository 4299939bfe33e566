/*
 * runtime_info.c - RuntimeInfo: the typed view plugins compute with, and the
 * upsert helpers they use to change it. See kftrainer/framework.h.
 *
 * Construction mirrors upstream's newRuntimeInfo (pkg/runtime/core/
 * trainingruntime.go, v2.3.0): the runtime's JobSet template with the
 * TrainJob's runtimePatches merged, one pod set per replicated job, the
 * trainer's count from mlPolicy.numNodes, resourcesPerNode merged into the
 * `node` container, and each container's env, ports and mounts copied from
 * the template so plugins upsert into what is already there.
 */
#include "framework/runtime_info.h"

#include <stdlib.h>
#include <string.h>

#include "framework/runtime_patches.h"
#include "kftrainer/constants.h"
#include "kftrainer/quantity.h"

static json_t *array_copy_or_empty(const json_t *x)
{
	return json_is_array(x) ? json_deep_copy(x) : json_array();
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int container_init(kft_container *c, const json_t *tmpl)
{
	c->name = strdup(json_string_value(json_object_get(tmpl, "name")) ?: "");
	c->image = dup_or_null(json_string_value(json_object_get(tmpl, "image")));
	c->command = array_copy_or_empty(json_object_get(tmpl, "command"));
	c->args = array_copy_or_empty(json_object_get(tmpl, "args"));
	c->env = array_copy_or_empty(json_object_get(tmpl, "env"));
	c->ports = array_copy_or_empty(json_object_get(tmpl, "ports"));
	c->volume_mounts = array_copy_or_empty(json_object_get(tmpl, "volumeMounts"));
	return (c->name && c->command && c->args && c->env && c->ports && c->volume_mounts)
	               ? 0
	               : KFT_ENOMEM;
}

static int containers_init(const json_t *list, kft_container **out, size_t *n)
{
	*n = json_array_size(list);
	*out = calloc(*n ? *n : 1, sizeof(**out));
	if (!*out)
		return KFT_ENOMEM;
	for (size_t i = 0; i < *n; i++)
		if (container_init(&(*out)[i], json_array_get(list, i)) != 0)
			return KFT_ENOMEM;
	return 0;
}

static const json_t *get_path(const json_t *v, const char *const *keys)
{
	for (; *keys && v; keys++)
		v = json_object_get(v, *keys);
	return v;
}

static int32_t int_or(const json_t *v, int32_t dflt)
{
	return json_is_integer(v) ? (int32_t)json_integer_value(v) : dflt;
}

/* Adds every quantity of `from` into `into` (a ResourceList). */
static int add_resources(json_t *into, const json_t *from, kft_error *err)
{
	const char *name;
	const json_t *v;
	json_object_foreach((json_t *)from, name, v)
	{
		kft_quantity sum = {0}, q;
		const json_t *have = json_object_get(into, name);
		/* A single contribution keeps its text (and so its format, as a
		 * Go Quantity copy would); only real sums are re-printed. */
		if (!have) {
			json_object_set_new(into, name, json_deep_copy(v));
			continue;
		}
		if (kft_quantity_from_json(have, &sum, err) != 0 ||
		    kft_quantity_from_json(v, &q, err) != 0 || kft_quantity_add(&sum, &q, err) != 0)
			return err ? err->code : KFT_EINVAL;
		char buf[KFT_QUANTITY_STRING_MAX];
		kft_quantity_format_canonical(&sum, buf, sizeof(buf));
		json_object_set_new(into, name, json_string(buf));
	}
	return 0;
}

/* Keeps the larger of each quantity, with the larger one's own text
 * (maxResourceList copies the winning Quantity). */
static int max_resources(json_t *into, const json_t *from, kft_error *err)
{
	const char *name;
	const json_t *v;
	json_object_foreach((json_t *)from, name, v)
	{
		kft_quantity cur = {0}, q;
		const json_t *have = json_object_get(into, name);
		if ((have && kft_quantity_from_json(have, &cur, err) != 0) ||
		    kft_quantity_from_json(v, &q, err) != 0)
			return err ? err->code : KFT_EINVAL;
		if (!have || kft_quantity_cmp(&q, &cur) > 0)
			json_object_set_new(into, name, json_deep_copy(v));
	}
	return 0;
}

/* A container's requests as k8s resourcehelpers reads them from a template:
 * only what `requests` says (limits are not copied into requests until the
 * API server defaults a real Pod). Borrowed; NULL when there are none. */
static const json_t *container_requests(const json_t *c)
{
	const json_t *r = json_object_get(json_object_get(c, "resources"), "requests");
	return json_is_object(r) ? r : NULL;
}

/* Pod-level requests replace the containers' sum for cpu, memory and
 * hugepages-* (PodLevelResources). */
static int is_pod_level_resource(const char *name)
{
	return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
	       strncmp(name, "hugepages-", 10) == 0;
}

/* k8s resourcehelpers.PodRequests: the containers' requests summed; each
 * init container's, on top of the sidecars (restartPolicy Always) started
 * before it, raises that to their maximum, and sidecars add to the sum;
 * pod-level requests then replace what they name, and the pod's overhead
 * adds. */
static json_t *pod_requests(const json_t *pod_spec, kft_error *err)
{
	json_t *sum = json_object(), *sidecars = json_object(), *init_max = json_object();
	size_t i;
	const json_t *c;
	int rc = 0;
	json_array_foreach(json_object_get(pod_spec, "containers"), i, c)
	{
		const json_t *r = container_requests(c);
		if (r && rc == 0)
			rc = add_resources(sum, r, err);
	}
	json_array_foreach(json_object_get(pod_spec, "initContainers"), i, c)
	{
		const json_t *r = container_requests(c);
		const char *restart = json_string_value(json_object_get(c, "restartPolicy"));
		if (rc != 0)
			break;
		if (restart && strcmp(restart, "Always") == 0) {
			if (r && (rc = add_resources(sum, r, err)) == 0)
				rc = add_resources(sidecars, r, err);
			if (rc == 0)
				rc = max_resources(init_max, sidecars, err);
		} else {
			json_t *use = json_object();
			if (r)
				rc = add_resources(use, r, err);
			if (rc == 0)
				rc = add_resources(use, sidecars, err);
			if (rc == 0)
				rc = max_resources(init_max, use, err);
			json_decref(use);
		}
	}
	if (rc == 0)
		rc = max_resources(sum, init_max, err);
	const char *name;
	const json_t *v;
	json_object_foreach(
	        (json_t *)json_object_get(json_object_get(pod_spec, "resources"), "requests"), name,
	        v)
	{
		if (is_pod_level_resource(name))
			json_object_set_new(sum, name, json_deep_copy(v));
	}
	const json_t *overhead = json_object_get(pod_spec, "overhead");
	if (rc == 0 && json_is_object(overhead))
		rc = add_resources(sum, overhead, err);
	json_decref(sidecars);
	json_decref(init_max);
	if (rc != 0) {
		json_decref(sum);
		return NULL;
	}
	return sum;
}

/* trainer.resourcesPerNode over the node container's resources: the TrainJob
 * wins per resource name, in limits and requests separately. */
static void merge_resources_per_node(json_t *pod_spec, const json_t *per_node)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(pod_spec, "containers"), i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		if (!name || strcmp(name, KFT_CONTAINER_NODE) != 0)
			continue;
		json_t *res = json_object_get(c, "resources");
		if (!res) {
			res = json_object();
			json_object_set_new(c, "resources", res);
		}
		static const char *const parts[] = {"limits", "requests"};
		for (size_t p = 0; p < 2; p++) {
			const json_t *src = json_object_get(per_node, parts[p]);
			if (!json_is_object(src))
				continue;
			json_t *dst = json_object_get(res, parts[p]);
			if (!dst) {
				dst = json_object();
				json_object_set_new(res, parts[p], dst);
			}
			json_object_update(dst, (json_t *)src);
		}
		return;
	}
}

static int replace_array(json_t **dst, const json_t *src)
{
	json_t *copy = json_deep_copy(src);
	if (!copy)
		return KFT_ENOMEM;
	json_decref(*dst);
	*dst = copy;
	return 0;
}

/* The TrainJob's image, command and args replace the template's in the
 * trainer's node container (upstream's JobSet builder Trainer() step), here
 * rather than in the JobSet plugin so that plugins rewriting the command see
 * the user's. */
static int apply_trainer(kft_container *node, const kft_trainjob *job, kft_error *err)
{
	if (!node)
		return 0;
	if (job->image) {
		char *image = strdup(job->image);
		if (!image)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		free(node->image);
		node->image = image;
	}
	if ((job->command && replace_array(&node->command, job->command) != 0) ||
	    (job->args && replace_array(&node->args, job->args) != 0))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int pod_set_init(kft_pod_set *ps, json_t *rjob, const json_t *ml_policy,
                        const kft_trainjob *job, kft_error *err)
{
	static const char *const labels_path[] = {"template", "metadata", "labels", NULL};
	static const char *const parallelism_path[] = {"template", "spec", "parallelism", NULL};
	static const char *const pod_spec_path[] = {"template", "spec", "template", "spec", NULL};
	const char *name = json_string_value(json_object_get(rjob, "name"));
	const char *ancestor =
	        json_string_value(json_object_get(get_path(rjob, labels_path), KFT_LABEL_ANCESTOR));
	ps->name = strdup(name ? name : "");
	ps->ancestor = dup_or_null(ancestor);
	ps->count = int_or(get_path(rjob, parallelism_path), 1);
	ps->replicas = int_or(json_object_get(rjob, "replicas"), 1);
	int is_trainer = ancestor && strcmp(ancestor, KFT_ANCESTOR_TRAINER) == 0 && ml_policy;
	if (is_trainer)
		ps->count = int_or(json_object_get(ml_policy, "numNodes"), 1);
	if (ps->count < 1)
		ps->count = 1;
	json_t *pod_spec = (json_t *)get_path(rjob, pod_spec_path);
	const json_t *mpi = json_object_get(ml_policy, "mpi");
	int launcher_as_node = mpi && json_is_true(json_object_get(mpi, "runLauncherAsNode")) &&
	                       name && strcmp(name, KFT_CONTAINER_NODE) == 0;
	if (job->resources_per_node && json_is_object(pod_spec) && (is_trainer || launcher_as_node))
		merge_resources_per_node(pod_spec, job->resources_per_node);
	ps->volumes = array_copy_or_empty(json_object_get(pod_spec, "volumes"));
	ps->single_pod_requests = pod_requests(pod_spec, err);
	if (!ps->name || !ps->volumes || !ps->single_pod_requests)
		return err && err->code ? err->code
		                        : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (containers_init(json_object_get(pod_spec, "initContainers"), &ps->init_containers,
	                    &ps->n_init_containers) != 0 ||
	    containers_init(json_object_get(pod_spec, "containers"), &ps->containers,
	                    &ps->n_containers) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (ancestor && strcmp(ancestor, KFT_ANCESTOR_TRAINER) == 0)
		return apply_trainer(kft_pod_set_find_container(ps, KFT_CONTAINER_NODE), job, err);
	return 0;
}

/* Labels and annotations of the runtime template, then of every patch. */
static void propagate_metadata(kft_runtime_info *info, const json_t *tmpl_meta,
                               const json_t *patches)
{
	json_object_update(info->labels, json_object_get(tmpl_meta, "labels"));
	json_object_update(info->annotations, json_object_get(tmpl_meta, "annotations"));
	static const char *const meta_path[] = {"trainingRuntimeSpec", "template", "metadata",
	                                        NULL};
	size_t i;
	const json_t *p;
	json_array_foreach(patches, i, p)
	{
		const json_t *m = get_path(p, meta_path);
		json_object_update(info->labels, json_object_get(m, "labels"));
		json_object_update(info->annotations, json_object_get(m, "annotations"));
	}
}

int kft_runtime_info_build(const json_t *runtime, const kft_trainjob *job, kft_runtime_info **out,
                           kft_error *err)
{
	*out = NULL;
	kft_runtime_info *info = calloc(1, sizeof(*info));
	if (!info)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	const json_t *spec = json_object_get(runtime, "spec");
	json_t *tmpl = json_deep_copy(json_object_get(spec, "template"));
	if (!tmpl)
		tmpl = json_object();
	info->labels = json_object();
	info->annotations = json_object();
	info->scheduler_pod_labels = json_object();
	info->scheduler_pod_annotations = json_object();
	info->ml_policy = json_object_get(spec, "mlPolicy");
	info->pod_group_policy = json_object_get(spec, "podGroupPolicy");
	info->runtime_kind = dup_or_null(json_string_value(json_object_get(runtime, "kind")));
	info->runtime_name = dup_or_null(
	        json_string_value(json_object_get(json_object_get(runtime, "metadata"), "name")));
	propagate_metadata(info, json_object_get(tmpl, "metadata"), job->runtime_patches);
	int rc = kft_runtime_patches_merge(tmpl, job->runtime_patches, err);
	if (rc == 0) {
		info->template_spec = json_incref(json_object_get(tmpl, "spec"));
		if (!info->template_spec)
			info->template_spec = json_object();
		json_t *rjobs = json_object_get(info->template_spec, "replicatedJobs");
		info->n_pod_sets = json_array_size(rjobs);
		info->pod_sets =
		        calloc(info->n_pod_sets ? info->n_pod_sets : 1, sizeof(*info->pod_sets));
		if (!info->pod_sets)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		for (size_t i = 0; rc == 0 && i < info->n_pod_sets; i++)
			rc = pod_set_init(&info->pod_sets[i], json_array_get(rjobs, i),
			                  info->ml_policy, job, err);
	}
	json_decref(tmpl);
	if (rc != 0) {
		kft_runtime_info_free(info);
		return rc;
	}
	*out = info;
	return 0;
}

/* Every container's resources in a pod spec, GPUs removed. */
static void drop_pod_gpus(json_t *pod_spec)
{
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < 2; l++) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(pod_spec, lists[l]), i, c)
		        kft_resources_drop_gpus(json_object_get(c, "resources"));
	}
}

void kft_runtime_info_drop_gpus(kft_runtime_info *info)
{
	static const char *const pod_spec_path[] = {"template", "spec", "template", "spec", NULL};
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(info->template_spec, "replicatedJobs"), i, rjob)
	        drop_pod_gpus((json_t *)get_path(rjob, pod_spec_path));
	for (size_t k = 0; k < info->n_pod_sets; k++) {
		json_t *wrap =
		        json_pack("{s:O}", "requests", info->pod_sets[k].single_pod_requests);
		kft_resources_drop_gpus(wrap);
		json_decref(wrap);
	}
}
