/*
 * resolve.c - runtime resolution: which TrainingRuntime or
 * ClusterTrainingRuntime a TrainJob's spec.runtimeRef names, with the errors
 * and warnings upstream's TrainJob webhook gives (pkg/webhooks
 * trainjob_webhook.go, pkg/runtime/core/{cluster,}trainingruntime.go,
 * v2.3.0), including its field paths ("spec.RuntimeRef" for cluster
 * runtimes is upstream's spelling).
 */
#include <stdio.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"

static const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static const json_t *find_runtime(const json_t *runtimes, const char *kind, const char *name,
                                  const char *ns)
{
	size_t i;
	const json_t *r;
	json_array_foreach(runtimes, i, r)
	{
		const char *k = json_string_value(json_object_get(r, "kind"));
		const char *av = json_string_value(json_object_get(r, "apiVersion"));
		const char *n = meta_str(r, "name");
		const char *rns = meta_str(r, "namespace");
		if (!k || !av || !n || strcmp(k, kind) != 0 || strcmp(n, name) != 0 ||
		    strcmp(av, KFT_API_VERSION) != 0)
			continue;
		if (ns && strcmp(rns ? rns : "default", ns) != 0)
			continue;
		return r;
	}
	return NULL;
}

const json_t *kft_resolve_runtime(const json_t *trainjob, const json_t *runtimes,
                                  kft_field_errors *errs)
{
	const json_t *ref = json_object_get(json_object_get(trainjob, "spec"), "runtimeRef");
	const char *name = json_string_value(json_object_get(ref, "name"));
	const char *group = json_string_value(json_object_get(ref, "apiGroup"));
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	const char *ns = meta_str(trainjob, "namespace");
	if (!group)
		group = "";
	if (!kind)
		kind = "";
	int cluster = strcmp(kind, KFT_KIND_CLUSTER_RUNTIME) == 0;
	if (strcmp(group, KFT_GROUP) != 0 || (!cluster && strcmp(kind, KFT_KIND_RUNTIME) != 0)) {
		/* schema.GroupKind.String(): "Kind.group", or just "Kind". */
		kft_field_errors_add(errs, KFT_FIELD_NOT_SUPPORTED, "spec.runtimeRef", NULL,
		                     "unsupported runtime: %s%s%s", kind, *group ? "." : "", group);
		return NULL;
	}
	const json_t *found = find_runtime(runtimes, kind, name ? name : "",
	                                   cluster ? NULL : (ns ? ns : "default"));
	if (!found) {
		/* The value prints as Go marshals RuntimeRef: name, apiGroup, kind.
		 * The error is the NotFound of controller-runtime's cache reader,
		 * which names the kind, not the resource: "TrainingRuntime.
		 * trainer.kubeflow.org" (seen from upstream's webhook, cluster tier
		 * 91-controller-webhooks.sh). */
		json_t *shown = json_pack("{s:s, s:s, s:s}", "name", name ? name : "", "apiGroup",
		                          group, "kind", kind);
		kft_field_errors_add(errs, KFT_FIELD_INVALID,
		                     cluster ? "spec.RuntimeRef" : "spec.runtimeRef", shown,
		                     "%s.%s \"%s\" not found: specified %s must be created before "
		                     "the TrainJob is created",
		                     kind, KFT_GROUP, name ? name : "",
		                     cluster ? "clusterTrainingRuntime" : "trainingRuntime");
		json_decref(shown);
		return NULL;
	}
	const char *support = json_string_value(json_object_get(
	        json_object_get(json_object_get(found, "metadata"), "labels"), KFT_LABEL_SUPPORT));
	if (cluster && support && strcmp(support, KFT_SUPPORT_DEPRECATED) == 0)
		kft_field_errors_warn(
		        errs,
		        "Referenced ClusterTrainingRuntime \"%s\" is deprecated and "
		        "will be removed in a future release of Kubeflow Trainer. See "
		        "runtime deprecation policy: %s",
		        name, KFT_RUNTIME_DEPRECATION_POLICY_URL);
	return found;
}
