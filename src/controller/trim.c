/*
 * trim.c - what the informer caches keep of each object, so the
 * controller's memory grows slowly with the number of TrainJobs (it is
 * benchmarked against upstream's with 1,000 of them).
 *
 *   - JobSets: identity and owner metadata, spec.suspend, and
 *     status.conditions and replicatedJobsStatus. The reconciler reads a
 *     JobSet only for its status (PostExecution) and whether it is
 *     suspended (the JobSet plugin rebuilds only a suspended JobSet); the
 *     pod templates are most of a JobSet and nobody reads them back.
 *   - Secrets and ConfigMaps not controlled by a TrainJob: metadata only.
 *     The webhook certificate Secret the TrainJobStatus plugin reads keeps
 *     its data.
 *   - Every object: kubectl's last-applied-configuration annotation, a
 *     second copy of the object that no reconciler reads.
 *   - Runtime snapshots (ConfigMaps "<trainjob>-runtime-snapshot"): the
 *     YAML text is interned, so 1,000 TrainJobs of one runtime share one
 *     copy of it.
 *
 * The interned strings are jansson strings shared between cached trees;
 * the cache never modifies an object after this transform, and readers
 * must not either (kube_cache.h), so sharing is safe. The table is bounded:
 * past its size new texts are simply not shared.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "kftrainer/constants.h"

#define INTERN_MAX 4096

static uint64_t hash_text(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* The shared string equal to v, or NULL when the table is full. */
static json_t *intern(kft_cm_intern *t, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	uint64_t h = hash_text(s, n);
	json_t *found = NULL;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n && !found; i++)
		if (t->hashes[i] == h && json_string_length(t->strings[i]) == n &&
		    memcmp(json_string_value(t->strings[i]), s, n) == 0)
			found = json_incref(t->strings[i]);
	if (!found && t->n < INTERN_MAX) {
		json_t *copy = json_stringn(s, n);
		if (copy) {
			t->hashes[t->n] = h;
			t->strings[t->n++] = copy;
			found = json_incref(copy);
		}
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}

int kft_cm_intern_init(kft_cm_intern *t)
{
	memset(t, 0, sizeof(*t));
	t->hashes = calloc(INTERN_MAX, sizeof(*t->hashes));
	t->strings = calloc(INTERN_MAX, sizeof(*t->strings));
	if (!t->hashes || !t->strings || pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t->hashes);
		free(t->strings);
		t->hashes = NULL;
		t->strings = NULL;
		return KFT_ENOMEM;
	}
	t->ready = 1;
	return 0;
}

void kft_cm_intern_free(kft_cm_intern *t)
{
	if (!t->ready)
		return;
	for (size_t i = 0; i < t->n; i++)
		json_decref(t->strings[i]);
	free(t->hashes);
	free(t->strings);
	pthread_mutex_destroy(&t->mu);
	t->ready = 0;
}

static int owned_by_trainjob(const json_t *obj)
{
	char key[KFT_CACHE_KEY_MAX];
	return kft_cache_controller_owner_key(obj, KFT_GROUP, KFT_KIND_TRAINJOB, key,
	                                      sizeof(key)) == 0;
}

static int name_ends_with(const json_t *obj, const char *suffix)
{
	const json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");
	size_t ln = json_string_length(n), ls = strlen(suffix);
	return json_is_string(n) && ln > ls && strcmp(json_string_value(n) + ln - ls, suffix) == 0;
}

/* Keeps only the members of obj named in keep (NULL-terminated). */
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

static void trim_jobset(json_t *obj)
{
	static const char *const meta[] = {"name",
	                                   "namespace",
	                                   "uid",
	                                   "resourceVersion",
	                                   "generation",
	                                   "creationTimestamp",
	                                   "deletionTimestamp",
	                                   "ownerReferences",
	                                   NULL};
	static const char *const spec[] = {"suspend", NULL};
	static const char *const status[] = {"conditions", "replicatedJobsStatus", NULL};
	keep_only(json_object_get(obj, "metadata"), meta);
	keep_only(json_object_get(obj, "spec"), spec);
	keep_only(json_object_get(obj, "status"), status);
}

static void trim_data(kft_cm *cm, json_t *obj, int is_secret)
{
	if (!owned_by_trainjob(obj)) {
		const json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");
		if (is_secret && json_is_string(n) && cm->cfg &&
		    strcmp(json_string_value(n), cm->cfg->cert_webhook_secret) == 0)
			return;
		json_object_del(obj, "data");
		json_object_del(obj, "binaryData");
		json_object_del(obj, "stringData");
		return;
	}
	if (is_secret || !name_ends_with(obj, KFT_CM_SNAPSHOT_SUFFIX))
		return;
	json_t *data = json_object_get(obj, "data");
	json_t *text = json_object_get(data, KFT_CM_SNAPSHOT_DATA_KEY);
	json_t *shared = json_is_string(text) ? intern(&cm->intern, text) : NULL;
	if (shared)
		json_object_set_new(data, KFT_CM_SNAPSHOT_DATA_KEY, shared);
}

static void drop_last_applied(json_t *obj)
{
	json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
	if (!json_is_object(ann))
		return;
	json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
	if (json_object_size(ann) == 0)
		json_object_del(json_object_get(obj, "metadata"), "annotations");
}

void kft_cm_trim_object(json_t *obj, void *ctx)
{
	kft_cm *cm = ctx;
	drop_last_applied(obj);
	const json_t *kind = json_object_get(obj, "kind");
	const json_t *av = json_object_get(obj, "apiVersion");
	if (!json_is_string(kind) || !json_is_string(av))
		return;
	const char *k = json_string_value(kind), *a = json_string_value(av);
	if (strcmp(k, "JobSet") == 0 && strncmp(a, "jobset.x-k8s.io/", 16) == 0)
		trim_jobset(obj);
	else if (strcmp(a, "v1") == 0 && strcmp(k, "Secret") == 0)
		trim_data(cm, obj, 1);
	else if (strcmp(a, "v1") == 0 && strcmp(k, "ConfigMap") == 0)
		trim_data(cm, obj, 0);
}

int kft_cm_trimmed_kind(const json_t *obj)
{
	const json_t *kind = json_object_get(obj, "kind");
	return json_is_string(kind) && strcmp(json_string_value(kind), "JobSet") == 0;
}
