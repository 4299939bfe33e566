/*
 * jobset_build.c - the JobSet plugin's ComponentBuilder: the TrainJob's
 * JobSet, as upstream v2.3.0's jobset.go Build and builder.go make it.
 *
 * The JobSet spec starts as a copy of RuntimeInfo's template (runtime
 * patches merged, counts settled). Then, in upstream's order:
 *
 *   1. each pod set is written back into the replicated job at its
 *      position: volumes upserted by name; per container (by position) the
 *      command and image when set, the args (none when empty), env upserted
 *      by name, ports by containerPort or name, mounts by mountPath; init
 *      containers the pod set has beyond the template's are appended;
 *   2. initializer jobs (by ancestor label) get replicas 1 and, in the
 *      container named like the step, STORAGE_URI, the initializer's env
 *      and its secretRef as an envFrom;
 *   3. the trainer job gets replicas 1, and the trainer's env goes into its
 *      `node` container, and into `node` of the replicated job named `node`
 *      when MPI runs the launcher as a node;
 *   4. every pod template gets the scheduler's pod labels and annotations
 *      (and a metadata object, as upstream's apply configuration has);
 *   5. spec.suspend is the TrainJob's, or absent when the TrainJob has none;
 *   6. container resource quantities are written as Go's resource.Quantity
 *      writes them (canonical strings).
 *
 * Upserts match as upstream's do on its optional fields: a key absent from
 * both sides matches, so two unnamed ports are the same port. Env from the
 * TrainJob is rewritten the way upstream's apply.EnvVar converts it (a
 * value, or the four references it knows), so the output is the same.
 *
 * Upstream's builder also copies the TrainJob's image, command and args
 * into the trainer's `node` container at this point, after plugins may
 * have rewritten the TrainJob's command (Flux, TorchTune). Here RuntimeInfo
 * puts them into that container's pod set instead (plugins cannot change
 * the TrainJob), so step 1 writes them, rewritten or not; copying them
 * again would undo the plugins' work.
 *
 * A JobSet that exists and is not suspended, for a TrainJob that is not
 * suspended either, is left alone: nothing is emitted.
 */
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"
#include "plugins/jobset_internal.h"

#define ENOMEM_MSG "out of memory"

static int oom(kft_error *err)
{
	return kft_error_set(err, KFT_ENOMEM, ENOMEM_MSG);
}

/* ---- upserts ---------------------------------------------------------------- */

/* An optional field compared as upstream compares its pointers: absent on
 * both sides is equal, and (after upstream's typed round trip) an empty
 * string or zero is the same as absent. */
static int is_zero(const json_t *v)
{
	return !v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) ||
	       (json_is_integer(v) && json_integer_value(v) == 0);
}

static int same_field(const json_t *a, const json_t *b, const char *key)
{
	const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
	if (is_zero(x) || is_zero(y))
		return is_zero(x) && is_zero(y);
	return json_equal((json_t *)x, (json_t *)y);
}

typedef int (*same_fn)(const json_t *a, const json_t *b);

static int same_name(const json_t *a, const json_t *b)
{
	return same_field(a, b, "name");
}

static int same_port(const json_t *a, const json_t *b)
{
	return same_field(a, b, "containerPort") || same_field(a, b, "name");
}

static int same_mount_path(const json_t *a, const json_t *b)
{
	return same_field(a, b, "mountPath");
}

/* obj[key] as an array, created when absent. NULL when it is something
 * else or memory ran out. */
static json_t *ensure_array(json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj, key);
	if (a && !json_is_null(a))
		return json_is_array(a) ? a : NULL;
	a = json_array();
	if (!a || json_object_set_new(obj, key, a) != 0)
		return NULL;
	return a;
}

/* Upserts a copy of `item` into list: it replaces the first match. */
static int upsert_one(json_t *list, const json_t *item, same_fn same)
{
	json_t *copy = json_deep_copy(item);
	if (!copy)
		return KFT_ENOMEM;
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
	{
		if (same(x, item))
			return json_array_set_new(list, i, copy) == 0 ? 0 : KFT_ENOMEM;
	}
	return json_array_append_new(list, copy) == 0 ? 0 : KFT_ENOMEM;
}

/* Upserts every item of `items` into obj[key]; no items, no list. */
static int upsert_all(json_t *obj, const char *key, const json_t *items, same_fn same,
                      kft_error *err)
{
	if (json_array_size(items) == 0)
		return 0;
	json_t *list = ensure_array(obj, key);
	if (!list)
		return kft_error_set(err, KFT_EINVAL, "%s: must be a list", key);
	size_t i;
	const json_t *x;
	json_array_foreach(items, i, x)
	{
		if (upsert_one(list, x, same) != 0)
			return oom(err);
	}
	return 0;
}

static int set_copy(json_t *obj, const char *key, const json_t *v, kft_error *err)
{
	json_t *c = json_deep_copy(v);
	return c && json_object_set_new(obj, key, c) == 0 ? 0 : oom(err);
}

/* ---- 1. pod sets back into the template -------------------------------------- */

static int write_container(json_t *tc, const kft_container *c, kft_error *err)
{
	int rc = 0;
	if (json_array_size(c->command) > 0)
		rc = set_copy(tc, "command", c->command, err);
	if (rc == 0 && json_array_size(c->args) > 0)
		rc = set_copy(tc, "args", c->args, err);
	else if (rc == 0)
		json_object_del(tc, "args");
	if (rc == 0 && c->image && *c->image &&
	    json_object_set_new(tc, "image", json_string(c->image)) != 0)
		rc = oom(err);
	if (rc == 0)
		rc = upsert_all(tc, "env", c->env, same_name, err);
	if (rc == 0)
		rc = upsert_all(tc, "ports", c->ports, same_port, err);
	if (rc == 0)
		rc = upsert_all(tc, "volumeMounts", c->volume_mounts, same_mount_path, err);
	return rc;
}

/* Regular containers pair with the template's by position; a pod set
 * never has more (it was built from the template). */
static int write_containers(json_t *pod_spec, const kft_pod_set *ps, kft_error *err)
{
	json_t *list = json_object_get(pod_spec, "containers");
	for (size_t i = 0; i < ps->n_containers; i++) {
		json_t *tc = json_array_get(list, i);
		if (!json_is_object(tc))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "replicated job %s has no container %zu for its pod set", ps->name,
			        i);
		int rc = write_container(tc, &ps->containers[i], err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Init containers a plugin added to the pod set get a slot of their own. */
static int write_init_containers(json_t *pod_spec, const kft_pod_set *ps, kft_error *err)
{
	if (ps->n_init_containers == 0)
		return 0;
	json_t *list = ensure_array(pod_spec, "initContainers");
	if (!list)
		return kft_error_set(err, KFT_EINVAL,
		                     "replicated job %s: initContainers: "
		                     "must be a list",
		                     ps->name);
	for (size_t i = 0; i < ps->n_init_containers; i++) {
		const kft_container *c = &ps->init_containers[i];
		if (i >= json_array_size(list) &&
		    json_array_append_new(list, json_pack("{s:s}", "name", c->name)) != 0)
			return oom(err);
		json_t *tc = json_array_get(list, i);
		if (!json_is_object(tc))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "replicated job %s: init container %zu is not an object", ps->name,
			        i);
		int rc = write_container(tc, c, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int write_pod_sets(json_t *spec, const kft_runtime_info *info, kft_error *err)
{
	json_t *rjobs = json_object_get(spec, "replicatedJobs");
	if (json_array_size(rjobs) < info->n_pod_sets)
		return kft_error_set(err, KFT_EINVAL,
		                     "runtime template has %zu replicatedJobs but runtime info has "
		                     "%zu podSets",
		                     json_array_size(rjobs), info->n_pod_sets);
	for (size_t i = 0; i < info->n_pod_sets; i++) {
		const kft_pod_set *ps = &info->pod_sets[i];
		json_t *pod_spec =
		        kft_jobset_dig(json_array_get(rjobs, i), kft_jobset_pod_spec_path, 1);
		if (!pod_spec)
			return kft_error_set(err, KFT_EINVAL,
			                     "replicated job %s: its pod template is not an object",
			                     ps->name);
		int rc = upsert_all(pod_spec, "volumes", ps->volumes, same_name, err);
		if (rc == 0)
			rc = write_containers(pod_spec, ps, err);
		if (rc == 0)
			rc = write_init_containers(pod_spec, ps, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- env as upstream's apply.EnvVar rewrites it ---------------------------- */

static const char *str_or_empty(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key)) ?: "";
}

static json_t *key_selector(const json_t *ref)
{
	json_t *sel = json_pack("{s:s, s:s}", "name", str_or_empty(ref, "name"), "key",
	                        str_or_empty(ref, "key"));
	const json_t *optional = json_object_get(ref, "optional");
	if (sel && json_is_boolean(optional) &&
	    json_object_set(sel, "optional", (json_t *)optional) != 0) {
		json_decref(sel);
		return NULL;
	}
	return sel;
}

/* *out = a resource divisor in its canonical form ("0" when unset). */
static int divisor(const json_t *ref, json_t **out, kft_error *err)
{
	const json_t *d = json_object_get(ref, "divisor");
	kft_quantity q = {0};
	if (d && !json_is_null(d)) {
		int rc = kft_quantity_from_json(d, &q, err);
		if (rc != 0)
			return rc;
	}
	char buf[KFT_QUANTITY_STRING_MAX];
	kft_quantity_format_canonical(&q, buf, sizeof(buf));
	*out = json_string(buf);
	return *out ? 0 : oom(err);
}

/* Sets src[key] to the converted reference `from[key]` when it is an object. */
static int add_ref(json_t *src, const json_t *from, const char *key, kft_error *err)
{
	const json_t *ref = json_object_get(from, key);
	if (!json_is_object(ref))
		return 0;
	json_t *v = NULL;
	if (strcmp(key, "fieldRef") == 0) {
		v = json_pack("{s:s}", "fieldPath", str_or_empty(ref, "fieldPath"));
	} else if (strcmp(key, "resourceFieldRef") == 0) {
		json_t *div;
		int rc = divisor(ref, &div, err);
		if (rc != 0)
			return rc;
		v = json_pack("{s:s, s:s, s:o}", "containerName",
		              str_or_empty(ref, "containerName"), "resource",
		              str_or_empty(ref, "resource"), "divisor", div);
	} else {
		v = key_selector(ref);
	}
	return v && json_object_set_new(src, key, v) == 0 ? 0 : oom(err);
}

/* *out = the env var as upstream's apply.EnvVar rewrites it: a value ("" when
 * unset), or the sources it carries over (fieldRef with its fieldPath only,
 * resourceFieldRef, configMapKeyRef, secretKeyRef). */
static int apply_env(const json_t *e, json_t **out, kft_error *err)
{
	static const char *const refs[] = {"fieldRef", "resourceFieldRef", "configMapKeyRef",
	                                   "secretKeyRef"};
	const json_t *from = json_object_get(e, "valueFrom");
	*out = json_pack("{s:s}", "name", str_or_empty(e, "name"));
	if (!*out)
		return oom(err);
	int rc = 0;
	if (json_is_object(from)) {
		json_t *src = json_object();
		for (size_t i = 0; src && rc == 0 && i < 4; i++)
			rc = add_ref(src, from, refs[i], err);
		if (rc == 0 && (!src || json_object_set(*out, "valueFrom", src) != 0))
			rc = oom(err);
		json_decref(src);
	} else if (json_object_set_new(*out, "value", json_string(str_or_empty(e, "value")))) {
		rc = oom(err);
	}
	if (rc != 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

/* Upserts the TrainJob's env list `env` into container c. */
static int upsert_user_env(json_t *c, const json_t *env, kft_error *err)
{
	if (json_array_size(env) == 0)
		return 0;
	json_t *list = ensure_array(c, "env");
	if (!list)
		return kft_error_set(err, KFT_EINVAL, "env: must be a list");
	size_t i;
	const json_t *e;
	json_array_foreach(env, i, e)
	{
		json_t *item;
		int rc = apply_env(e, &item, err);
		if (rc != 0)
			return rc;
		rc = upsert_one(list, item, same_name);
		json_decref(item);
		if (rc != 0)
			return oom(err);
	}
	return 0;
}

/* ---- 2. initializers --------------------------------------------------------- */

static const char *ancestor_of(json_t *rjob)
{
	const json_t *labels = kft_jobset_dig(rjob, kft_jobset_job_labels_path, 0);
	return json_string_value(json_object_get(labels, KFT_LABEL_ANCESTOR));
}

static int set_replicas_one(json_t *rjob, kft_error *err)
{
	return json_object_set_new(rjob, "replicas", json_integer(1)) == 0 ? 0 : oom(err);
}

/* storageUri, env and secretRef of spec.initializer.dataset (or .model). */
static int configure_initializer(json_t *c, const json_t *cfg, kft_error *err)
{
	const json_t *uri = json_object_get(cfg, "storageUri");
	int rc = 0;
	if (json_is_string(uri)) {
		json_t *one =
		        json_pack("[{s:s, s:O}]", "name", KFT_JOBSET_ENV_STORAGE_URI, "value", uri);
		rc = one ? upsert_all(c, "env", one, same_name, err) : oom(err);
		json_decref(one);
	}
	if (rc == 0)
		rc = upsert_user_env(c, json_object_get(cfg, "env"), err);
	const json_t *secret = json_object_get(cfg, "secretRef");
	if (rc == 0 && json_is_object(secret)) {
		/* Appended, not upserted: upstream's WithEnvFrom appends. */
		json_t *from = ensure_array(c, "envFrom");
		if (!from)
			rc = kft_error_set(err, KFT_EINVAL, "envFrom: must be a list");
		else if (json_array_append_new(from, json_pack("{s:{s:s}}", "secretRef", "name",
		                                               str_or_empty(secret, "name"))) != 0)
			rc = oom(err);
	}
	return rc;
}

/* Containers named `name` in a replicated job's pod spec, one by one. */
static json_t *next_named(json_t *rjob, const char *name, size_t *i)
{
	json_t *list =
	        json_object_get(kft_jobset_dig(rjob, kft_jobset_pod_spec_path, 0), "containers");
	for (; *i < json_array_size(list); (*i)++) {
		json_t *c = json_array_get(list, *i);
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n && strcmp(n, name) == 0) {
			(*i)++;
			return c;
		}
	}
	return NULL;
}

static int initializer_job(json_t *rjob, const char *step, const json_t *cfg, kft_error *err)
{
	int rc = set_replicas_one(rjob, err);
	size_t i = 0;
	json_t *c;
	while (rc == 0 && cfg && (c = next_named(rjob, step, &i)))
		rc = configure_initializer(c, cfg, err);
	return rc;
}

static int apply_initializers(json_t *spec, const kft_trainjob *job, kft_error *err)
{
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		const char *anc = ancestor_of(rjob);
		int rc = 0;
		if (anc && strcmp(anc, KFT_DATASET_INITIALIZER) == 0)
			rc = initializer_job(rjob, KFT_DATASET_INITIALIZER, job->dataset, err);
		else if (anc && strcmp(anc, KFT_MODEL_INITIALIZER) == 0)
			rc = initializer_job(rjob, KFT_MODEL_INITIALIZER, job->model, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- 3. the trainer ----------------------------------------------------------- */

static int launcher_runs_as_node(const kft_runtime_info *info)
{
	const json_t *mpi = json_object_get(info->ml_policy, "mpi");
	return json_is_true(json_object_get(mpi, "runLauncherAsNode"));
}

static int trainer_job(json_t *rjob, const kft_runtime_info *info, const kft_trainjob *job,
                       kft_error *err)
{
	const char *anc = ancestor_of(rjob);
	const char *name = json_string_value(json_object_get(rjob, "name"));
	int is_trainer = anc && strcmp(anc, KFT_ANCESTOR_TRAINER) == 0;
	int gets_env = is_trainer || (launcher_runs_as_node(info) && name &&
	                              strcmp(name, KFT_CONTAINER_NODE) == 0);
	int rc = is_trainer ? set_replicas_one(rjob, err) : 0;
	size_t i = 0;
	json_t *c;
	while (rc == 0 && gets_env && job->trainer &&
	       (c = next_named(rjob, KFT_CONTAINER_NODE, &i)))
		rc = upsert_user_env(c, job->env, err);
	return rc;
}

static int apply_trainer(json_t *spec, const kft_runtime_info *info, const kft_trainjob *job,
                         kft_error *err)
{
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		int rc = trainer_job(rjob, info, job, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- 4. pod labels and annotations; 5. suspend ------------------------------------- */

static int apply_pod_metadata(json_t *spec, const char *which, const json_t *entries,
                              kft_error *err)
{
	static const char *const meta_path[] = {"metadata", NULL};
	static const char *const job_spec_path[] = {"template", "spec", NULL};
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		json_t *tmpl = kft_jobset_dig(rjob, kft_jobset_pod_template_path, 1);
		const json_t *have = json_object_get(tmpl, "metadata");
		if (tmpl && (!have || json_is_null(have)))
			tmpl = kft_jobset_set_first(kft_jobset_dig(rjob, job_spec_path, 0),
			                            "template", tmpl, "metadata", json_object());
		json_t *meta = tmpl ? kft_jobset_dig(tmpl, meta_path, 0) : NULL;
		if (!meta)
			return kft_error_set(
			        err, KFT_EINVAL,
			        "replicatedJobs[%zu]: its pod template is not an object", i);
		if (json_object_size(entries) == 0)
			continue;
		const char *const key_path[] = {which, NULL};
		json_t *into = kft_jobset_dig(meta, key_path, 1);
		if (!into || json_object_update(into, (json_t *)entries) != 0)
			return kft_error_set(err, KFT_EINVAL,
			                     "replicatedJobs[%zu]: pod template %s: must be an "
			                     "object",
			                     i, which);
	}
	return 0;
}

/*
 * 6. Resource quantities as Go writes them. Upstream's JobSet passes through
 * resource.Quantity, which marshals every value as its canonical string:
 * a runtime's `nvidia.com/gpu: 2` (a JSON number once kubectl stores it)
 * reaches the JobSet as "2". Sending the number instead would be stored as
 * a number on an update (JobSet's defaulting webhook, which re-encodes,
 * runs on CREATE only), so every container's limits and requests are
 * written canonically here.
 */
static int canonical_container(json_t *c, size_t rjob, const char *kind, size_t n, kft_error *err)
{
	static const char *const lists[] = {"limits", "requests", NULL};
	json_t *res = json_object_get(c, "resources");
	for (int l = 0; lists[l]; l++) {
		kft_error qe = {0};
		if (kft_quantity_canonical_list(json_object_get(res, lists[l]), &qe) == 0)
			continue;
		if (qe.code == KFT_ENOMEM)
			return oom(err);
		return kft_error_set(err, KFT_EINVAL,
		                     "replicatedJobs[%zu] %s[%zu].resources.%s[%s]", rjob, kind, n,
		                     lists[l], qe.message);
	}
	return 0;
}

static int canonical_resources(json_t *spec, kft_error *err)
{
	static const char *const kinds[] = {"initContainers", "containers", NULL};
	size_t i, j;
	json_t *rjob, *c;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		json_t *pod = json_object_get(kft_jobset_dig(rjob, kft_jobset_pod_template_path, 0),
		                              "spec");
		for (int kd = 0; kinds[kd]; kd++)
			json_array_foreach(json_object_get(pod, kinds[kd]), j, c)
			{
				int rc = canonical_container(c, i, kinds[kd], j, err);
				if (rc)
					return rc;
			}
	}
	return 0;
}

static int apply_suspend(json_t *spec, const kft_trainjob *job, kft_error *err)
{
	const json_t *s = json_object_get(json_object_get(job->obj, "spec"), "suspend");
	if (!json_is_boolean(s)) {
		json_object_del(spec, "suspend");
		return 0;
	}
	return json_object_set_new(spec, "suspend", json_boolean(json_is_true(s))) == 0 ? 0
	                                                                                : oom(err);
}

/* ---- the object -------------------------------------------------------------------- */

static json_t *metadata(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                        const kft_trainjob *job)
{
	json_t *meta = json_pack("{s:s, s:s}", "name", job->name, "namespace", job->ns);
	int bad = !meta;
	if (!bad && json_object_size(info->labels) > 0)
		bad = json_object_set_new(meta, "labels", json_deep_copy(info->labels)) != 0;
	if (!bad && json_object_size(info->annotations) > 0)
		bad = json_object_set_new(meta, "annotations", json_deep_copy(info->annotations)) !=
		      0;
	json_t *owner = bad ? NULL : kft_owner_reference(ctx, job);
	if (bad || !owner ||
	    json_object_set_new(meta, "ownerReferences", json_pack("[o]", owner))) {
		json_decref(meta);
		return NULL;
	}
	return meta;
}

/* Whether a JobSet already runs (existing, borrowed, may be NULL): then
 * upstream leaves it be. */
static int jobset_running(const json_t *existing, const kft_trainjob *job)
{
	if (!existing)
		return 0;
	return !job->suspend &&
	       !json_is_true(json_object_get(json_object_get(existing, "spec"), "suspend"));
}

/*
 * spec.volumeClaimPolicies of an existing JobSet is immutable (JobSet's CRD:
 * self == oldSelf), and what is stored is not what was sent: JobSet's
 * create-only mutating webhook adds retentionPolicy and the PVC templates'
 * empty status. Re-applying the runtime's value when a suspended JobSet is
 * resumed would be refused ("Value is immutable"), so the live value is
 * sent back: it is the only one the API server accepts.
 */
static int keep_claim_policies(json_t *spec, const json_t *existing, kft_error *err)
{
	const json_t *live =
	        json_object_get(json_object_get(existing, "spec"), "volumeClaimPolicies");
	if (!live)
		return 0;
	return json_object_set_new(spec, "volumeClaimPolicies", json_deep_copy(live)) == 0
	               ? 0
	               : oom(err);
}

static int build_spec(json_t *spec, const kft_runtime_info *info, const kft_trainjob *job,
                      kft_error *err)
{
	int rc = write_pod_sets(spec, info, err);
	if (rc == 0)
		rc = apply_initializers(spec, job, err);
	if (rc == 0)
		rc = apply_trainer(spec, info, job, err);
	if (rc == 0)
		rc = apply_pod_metadata(spec, "labels", info->scheduler_pod_labels, err);
	if (rc == 0)
		rc = apply_pod_metadata(spec, "annotations", info->scheduler_pod_annotations, err);
	if (rc == 0)
		rc = apply_suspend(spec, job, err);
	if (rc == 0)
		rc = canonical_resources(spec, err);
	return rc;
}

int kft_jobset_build(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                     const kft_trainjob *job, json_t *objects, kft_error *err)
{
	if (!info || !job)
		return kft_error_set(err, KFT_EINVAL, "runtime info or object is missing");
	json_t *existing = kft_jobset_get(ctx, job);
	if (jobset_running(existing, job)) {
		json_decref(existing);
		return 0;
	}
	json_t *spec = json_is_object(info->template_spec) ? json_deep_copy(info->template_spec)
	                                                   : json_object();
	int rc = spec ? build_spec(spec, info, job, err) : oom(err);
	if (rc == 0)
		rc = keep_claim_policies(spec, existing, err);
	json_decref(existing);
	if (!spec)
		return rc;
	json_t *meta = rc == 0 ? metadata(ctx, info, job) : NULL;
	if (rc == 0 && !meta)
		rc = oom(err);
	if (rc != 0) {
		json_decref(spec);
		return rc;
	}
	json_t *obj = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", KFT_JOBSET_API_VERSION,
	                        "kind", KFT_JOBSET_KIND, "metadata", meta, "spec", spec);
	if (!obj || json_array_append_new(objects, obj) != 0)
		return oom(err);
	return 0;
}
