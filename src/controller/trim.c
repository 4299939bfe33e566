/*
 * trim.c - what the informer caches keep of each object, so the
 * controller's memory grows slowly with the number of TrainJobs (it is
 * benchmarked against upstream's with 1,000 of them).
 *
 *   - JobSets: name, namespace, resourceVersion, deletionTimestamp,
 *     labels, annotations and ownerReferences, spec.suspend,
 *     spec.volumeClaimPolicies, status.replicatedJobsStatus and the
 *     Completed and Failed conditions. The reconciler reads a JobSet only
 *     for its status (PostExecution: those two conditions and the jobs'
 *     counts), whether it is suspended (the JobSet plugin rebuilds only a
 *     suspended JobSet) and its immutable claim policies (sent back
 *     unchanged on that rebuild); the pod templates are most of a JobSet
 *     and nobody reads them back, nor its uid, generation or creation
 *     time.
 *   - Secrets and ConfigMaps: metadata only. Their informers ask the API
 *     server for metadata alone (PartialObjectMetadata), so a cluster's
 *     unrelated ConfigMaps and Secrets, however many and large, cost little
 *     (upstream #3374). Bodies the reconciler reads are fetched by name and
 *     supplied to the cache (kft_informer_supply): a TrainJob's runtime
 *     snapshot ConfigMap keeps its data when it comes that way (from the
 *     apply that wrote it, or a GET), and a metadata event of the same
 *     version keeps it. The webhook certificate Secret the TrainJobStatus
 *     plugin reads has an informer of its own, for that one name, whole.
 *   - Every object: kubectl's last-applied-configuration annotation, a
 *     second copy of the object that no reconciler reads.
 *
 * The informer stores what is left as compact JSON text (kube_cache.h) and
 * keeps a large top-level member that many objects carry once: the runtime
 * snapshot ConfigMaps of TrainJobs made from one runtime share their data.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "kftrainer/constants.h"

static int owned_by_trainjob(const json_t *obj)
{
	char key[KFT_CACHE_KEY_MAX];
	return kft_cache_controller_owner_key(obj, KFT_GROUP, KFT_KIND_TRAINJOB, key,
	                                      sizeof(key)) == 0;
}

static void keep_only(json_t *obj, const char *const *keep)
{
	if (!json_is_object(obj))
		return;
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(obj, tmp, k, v)
	{
		size_t i = 0;
		while (keep[i] && strcmp(keep[i], k) != 0)
			i++;
		if (!keep[i])
			json_object_del(obj, k);
	}
}

/* What every cached object's metadata keeps: its identity, the owners that
 * route its events, what an apply sets (compared for a no-op), and what the
 * cache's own bookkeeping needs. */
static const char *const meta_kept[] = {"name",       "namespace",         "resourceVersion",
                                        "labels",     "annotations",       "ownerReferences",
                                        "finalizers", "deletionTimestamp", NULL};

/* Only the JobSet conditions the TrainJob's status is made of. */
static void keep_terminal_conditions(json_t *status)
{
	json_t *conds = json_object_get(status, "conditions");
	for (size_t i = json_array_size(conds); i-- > 0;) {
		const char *t =
		        json_string_value(json_object_get(json_array_get(conds, i), "type"));
		if (!t || (strcmp(t, "Completed") != 0 && strcmp(t, "Failed") != 0))
			json_array_remove(conds, i);
	}
}

static void trim_jobset(json_t *obj)
{
	static const char *const spec[] = {"suspend", "volumeClaimPolicies", NULL};
	static const char *const status[] = {"conditions", "replicatedJobsStatus", NULL};
	keep_only(json_object_get(obj, "metadata"), meta_kept);
	keep_only(json_object_get(obj, "spec"), spec);
	keep_only(json_object_get(obj, "status"), status);
	keep_terminal_conditions(json_object_get(obj, "status"));
}

static const char *const type_and_metadata[] = {"apiVersion", "kind", "metadata", NULL};

static void drop_last_applied(json_t *obj)
{
	json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	if (!json_is_object(ann))
		return;
	json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
	if (json_object_size(ann) == 0)
		json_object_del(json_object_get(obj, "metadata"), "annotations");
}

static int core_kind(const char *api_version, const char *kind)
{
	return strcmp(api_version, "v1") == 0 &&
	       (strcmp(kind, "Secret") == 0 || strcmp(kind, "ConfigMap") == 0);
}

void kft_cm_trim_object(json_t *obj, void *ctx)
{
	(void)ctx;
	drop_last_applied(obj);
	const json_t *kind = json_object_get(obj, "kind");
	const json_t *av = json_object_get(obj, "apiVersion");
	if (!json_is_string(kind) || !json_is_string(av))
		return;
	const char *k = json_string_value(kind), *a = json_string_value(av);
	if (strcmp(k, "JobSet") == 0 && strncmp(a, "jobset.x-k8s.io/", 16) == 0)
		trim_jobset(obj);
	else if (core_kind(a, k)) {
		if (!(strcmp(k, "ConfigMap") == 0 && owned_by_trainjob(obj)))
			keep_only(obj, type_and_metadata);
		keep_only(json_object_get(obj, "metadata"), meta_kept);
	}
}

void kft_cm_trim_projection(json_t *obj)
{
	drop_last_applied(obj);
	if (kft_cm_metadata_kind(obj))
		keep_only(obj, type_and_metadata);
	else
		kft_cm_trim_object(obj, NULL);
}

int kft_cm_metadata_kind(const json_t *obj)
{
	const char *k = json_string_value(json_object_get(obj, "kind"));
	const char *a = json_string_value(json_object_get(obj, "apiVersion"));
	return k && a && core_kind(a, k);
}

int kft_cm_trimmed_kind(const json_t *obj)
{
	const json_t *kind = json_object_get(obj, "kind");
	return kft_cm_metadata_kind(obj) ||
	       (json_is_string(kind) && strcmp(json_string_value(kind), "JobSet") == 0);
}
