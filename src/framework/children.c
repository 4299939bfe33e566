/*
 * children.c - what several plugins put into the objects they build: the
 * TrainJob as controlling owner, and the size of a gang (PodGroup minMember
 * and minResources) over every pod set. See kftrainer/framework.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "kftrainer/quantity.h"

json_t *kft_owner_reference(const kft_plugin_ctx *ctx, const kft_trainjob *job)
{
	const char *uid = ctx->backend->trainjob_uid(ctx->backend->self, job->obj);
	json_t *ref = json_pack("{s:s, s:s, s:s}", "apiVersion", KFT_API_VERSION, "kind",
	                        KFT_KIND_TRAINJOB, "name", job->name);
	if (ref && uid && json_object_set_new(ref, "uid", json_string(uid)) != 0)
		goto fail;
	if (ref && (json_object_set_new(ref, "controller", json_true()) != 0 ||
	            json_object_set_new(ref, "blockOwnerDeletion", json_true()) != 0))
		goto fail;
	return ref;
fail:
	json_decref(ref);
	return NULL;
}

int kft_child_exists(const kft_plugin_ctx *ctx, const kft_trainjob *job, const char *api_version,
                     const char *kind, const char *name)
{
	json_t *have =
	        ctx->backend->get_object(ctx->backend->self, api_version, kind, job->ns, name);
	json_decref(have);
	return have != NULL;
}

typedef struct resource_total {
	const char *name; /* borrowed from a pod set's single_pod_requests */
	kft_quantity sum;
} resource_total;

typedef struct totals {
	resource_total *items;
	size_t n, cap;
	json_t *index; /* name -> position in items */
} totals;

static resource_total *total_for(totals *t, const char *name)
{
	json_t *at = json_object_get(t->index, name);
	if (at)
		return &t->items[json_integer_value(at)];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		resource_total *grown = realloc(t->items, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		t->items = grown;
		t->cap = cap;
	}
	if (json_object_set_new(t->index, name, json_integer((json_int_t)t->n)) != 0)
		return NULL;
	t->items[t->n] = (resource_total){.name = name};
	return &t->items[t->n++];
}

/* Adds count x each of a pod set's single-pod requests into the totals. */
static int add_pod_set(totals *t, const kft_pod_set *ps, kft_error *err)
{
	const char *name;
	json_t *v;
	json_object_foreach(ps->single_pod_requests, name, v)
	{
		kft_quantity q;
		resource_total *rt = total_for(t, name);
		if (!rt)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		int rc = kft_quantity_from_json(v, &q, err);
		if (rc == 0)
			rc = kft_quantity_mul_int(&q, ps->count, err);
		if (rc == 0)
			rc = kft_quantity_add(&rt->sum, &q, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const resource_total *)a)->name, ((const resource_total *)b)->name);
}

/* The totals as a ResourceList, keys sorted as Go marshals a map. */
static json_t *resource_list(totals *t)
{
	json_t *out = json_object();
	if (!out)
		return NULL;
	if (t->n)
		qsort(t->items, t->n, sizeof(*t->items), by_name);
	for (size_t i = 0; i < t->n; i++) {
		char buf[KFT_QUANTITY_STRING_MAX];
		if (kft_quantity_format_canonical(&t->items[i].sum, buf, sizeof(buf)) != 0 ||
		    json_object_set_new(out, t->items[i].name, json_string(buf)) != 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/* minMember and minResources over every pod set. */
int kft_pod_group_size(const kft_runtime_info *info, int32_t *min_member, json_t **min_res,
                       kft_error *err)
{
	totals t = {.index = json_object()};
	int64_t members = 0;
	int rc = t.index ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < info->n_pod_sets; i++) {
		members += info->pod_sets[i].count;
		if (members > INT32_MAX)
			rc = kft_error_set(err, KFT_ELIMIT, "the PodGroup's minMember exceeds %d",
			                   INT32_MAX);
		else
			rc = add_pod_set(&t, &info->pod_sets[i], err);
	}
	if (rc == 0 && !(*min_res = resource_list(&t)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	*min_member = (int32_t)members;
	free(t.items);
	json_decref(t.index);
	return rc;
}

int kft_build_pod_group(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                        const kft_trainjob *job, const char *api_version, kft_pod_group_maker make,
                        json_t *objects, kft_error *err)
{
	int32_t min_member = 0;
	json_t *min_res = NULL;
	if (!job ||
	    (!job->suspend && kft_child_exists(ctx, job, api_version, "PodGroup", job->name)))
		return 0;
	int rc = kft_pod_group_size(info, &min_member, &min_res, err);
	if (rc != 0)
		return rc;
	json_t *pg = make(ctx, info, job, min_member, min_res);
	if (!pg || json_array_append_new(objects, pg) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}
