/*
 * info.c - RuntimeInfo lookups, the upsert helpers plugins change it with,
 * and freeing it. See kftrainer/framework.h; construction is in
 * runtime_info.c.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/framework.h"

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
