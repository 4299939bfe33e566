/*
 * info.c - RuntimeInfo lookups, the upsert helpers plugins change it with,
 * and freeing it. See kftrainer/framework.h; construction is in
 * runtime_info.c.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "framework/runtime_info.h"
#include "kftrainer/quantity.h"

kft_pod_set *kft_runtime_info_find_ancestor(const kft_runtime_info *info, const char *ancestor)
{
	for (size_t i = 0; i < info->n_pod_sets; i++)
		if (info->pod_sets[i].ancestor && strcmp(info->pod_sets[i].ancestor, ancestor) == 0)
			return &info->pod_sets[i];
	return NULL;
}

kft_pod_set *kft_runtime_info_find_pod_set(const kft_runtime_info *info, const char *name)
{
	for (size_t i = 0; i < info->n_pod_sets; i++)
		if (strcmp(info->pod_sets[i].name, name) == 0)
			return &info->pod_sets[i];
	return NULL;
}

kft_container *kft_pod_set_find_container(const kft_pod_set *ps, const char *name)
{
	for (size_t i = 0; i < ps->n_containers; i++)
		if (strcmp(ps->containers[i].name, name) == 0)
			return &ps->containers[i];
	return NULL;
}

int kft_upsert_by_key(json_t *list, const char *key, const json_t *item)
{
	const json_t *want = json_object_get(item, key);
	json_t *copy = json_deep_copy(item);
	if (!copy)
		return KFT_ENOMEM;
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
	{
		const json_t *have = json_object_get(x, key);
		if (want && have && json_equal((json_t *)want, (json_t *)have))
			return json_array_set_new(list, i, copy) == 0 ? 0 : KFT_ENOMEM;
	}
	return json_array_append_new(list, copy) == 0 ? 0 : KFT_ENOMEM;
}

int kft_upsert_env_object(json_t *env, const json_t *item)
{
	return kft_upsert_by_key(env, "name", item);
}

int kft_upsert_env(json_t *env, const char *name, const char *value)
{
	json_t *item = json_pack("{s:s, s:s}", "name", name, "value", value);
	if (!item)
		return KFT_ENOMEM;
	int rc = kft_upsert_env_object(env, item);
	json_decref(item);
	return rc;
}

static void container_free(kft_container *c)
{
	free(c->name);
	free(c->image);
	json_decref(c->command);
	json_decref(c->args);
	json_decref(c->env);
	json_decref(c->ports);
	json_decref(c->volume_mounts);
}

static void pod_set_free(kft_pod_set *ps)
{
	free(ps->name);
	free(ps->ancestor);
	for (size_t i = 0; i < ps->n_init_containers; i++)
		container_free(&ps->init_containers[i]);
	for (size_t i = 0; i < ps->n_containers; i++)
		container_free(&ps->containers[i]);
	free(ps->init_containers);
	free(ps->containers);
	for (size_t i = 0; i < ps->n_endpoints; i++)
		free(ps->endpoints[i]);
	free(ps->endpoints);
	json_decref(ps->volumes);
	json_decref(ps->single_pod_requests);
}

void kft_runtime_info_free(kft_runtime_info *info)
{
	if (!info)
		return;
	for (size_t i = 0; i < info->n_pod_sets; i++)
		pod_set_free(&info->pod_sets[i]);
	free(info->pod_sets);
	json_decref(info->labels);
	json_decref(info->annotations);
	json_decref(info->scheduler_pod_labels);
	json_decref(info->scheduler_pod_annotations);
	json_decref(info->template_spec);
	free(info->runtime_kind);
	free(info->runtime_name);
	free(info);
}
int kft_upsert_port(json_t *ports, int port)
{
	json_t *item = json_pack("{s:i}", "containerPort", port);
	size_t i;
	json_t *p;
	if (!item)
		return KFT_ENOMEM;
	json_array_foreach(ports, i, p)
	{
		const json_t *have = json_object_get(p, "containerPort");
		int same_port = json_is_integer(have) && json_integer_value(have) == port;
		if (same_port || !json_object_get(p, "name"))
			return json_array_set_new(ports, i, item) ? KFT_ENOMEM : 0;
	}
	return json_array_append_new(ports, item) ? KFT_ENOMEM : 0;
}

static int has_name(const json_t *obj, const char *name)
{
	const char *n = json_string_value(json_object_get(obj, "name"));
	return n && strcmp(n, name) == 0;
}

const json_t *kft_runtime_info_node_resources(const kft_runtime_info *info, const kft_trainjob *job)
{
	if (job && job->resources_per_node)
		return job->resources_per_node;
	size_t i, j;
	const json_t *rjob, *c;
	json_array_foreach(json_object_get(info->template_spec, "replicatedJobs"), i, rjob)
	{
		const json_t *tmpl = json_object_get(rjob, "template");
		const json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");
		const char *anc = json_string_value(json_object_get(labels, KFT_LABEL_ANCESTOR));
		if (!has_name(rjob, KFT_CONTAINER_NODE) &&
		    !(anc && strcmp(anc, KFT_ANCESTOR_TRAINER) == 0))
			continue;
		const json_t *pod = json_object_get(json_object_get(tmpl, "spec"), "template");
		/* Upstream reads an apply configuration in which every container has
		 * a (possibly empty) resources block, so the first node container
		 * decides even when it names no resources. */
		json_array_foreach(
		        json_object_get(json_object_get(pod, "spec"), "containers"), j,
		        c) if (has_name(c, KFT_CONTAINER_NODE)) return json_object_get(c,
		                                                                       "resources");
	}
	return NULL;
}

/* Quantity.Value() of the first resource whose name contains "gpu" in any
 * case (upstream's numGPU; a Go map has no order, ours is the document's). A
 * quantity that does not parse is an error naming the resource: upstream's
 * typed Quantity could never hold one, and reading it as 0 GPUs would let a
 * typo place a job on no GPU at all. */
/* A GPU resource name (nvidia.com/gpu, amd.com/gpu ...), as upstream's
 * GetNumGPUPerNode recognises one. */
static int is_gpu_resource(const char *name)
{
	return strcasestr(name, "gpu") != NULL;
}

static int gpus_in(const json_t *list, const char *which, int64_t *out, kft_error *err)
{
	const char *key;
	const json_t *q;
	*out = 0;
	json_object_foreach((json_t *)list, key, q)
	{
		if (!is_gpu_resource(key))
			continue;
		kft_quantity v;
		kft_error qerr;
		if (kft_quantity_from_json(q, &v, &qerr) != 0)
			return kft_error_set(err, KFT_EINVAL, "trainer resources: %s[%s]: %s",
			                     which, key, qerr.message);
		*out = kft_quantity_value(&v);
		return 0;
	}
	return 0;
}

int kft_resources_gpus(const json_t *resources, int64_t *out, kft_error *err)
{
	int64_t lim = 0;
	int rc = gpus_in(json_object_get(resources, "requests"), "requests", out, err);
	if (rc == 0)
		rc = gpus_in(json_object_get(resources, "limits"), "limits", &lim, err);
	if (rc != 0)
		*out = 0;
	else if (*out == 0 && lim > 0) /* GetNumGPUPerNode: requests, else limits */
		*out = lim;
	return rc;
}

int kft_resources_drop_gpus(json_t *resources)
{
	static const char *const parts[] = {"limits", "requests"};
	int n = 0;
	for (size_t p = 0; p < 2; p++) {
		json_t *list = json_object_get(resources, parts[p]);
		const char *key;
		json_t *q;
		void *tmp;
		json_object_foreach_safe(list, tmp, key, q)
		{
			if (is_gpu_resource(key) && json_object_del(list, key) == 0)
				n++;
		}
		/* a list left empty goes: readers tell "no limits" from "limits
		 * naming nothing" (the SDK refuses the second) */
		if (list && json_object_size(list) == 0)
			json_object_del(resources, parts[p]);
	}
	return n;
}
