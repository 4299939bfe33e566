/*
 * jobset.c - the JobSet plugin (upstream v2.3.0,
 * pkg/runtime/framework/plugins/jobset): a TrainJob runs as one
 * jobset.x-k8s.io/v1alpha2 JobSet built from its runtime's template.
 *
 * This file holds the plugin table and the points that read or settle
 * RuntimeInfo:
 *
 *   PodNetwork           each pod set's endpoints, replica by replica and
 *                        pod by pod, as the backend addresses them; the
 *                        subdomain is the template's spec.network.subdomain
 *                        or the TrainJob's name (JobSet's default).
 *   PreComponentBuilder  every replicated job's parallelism and completions
 *                        become its pod set's count (upstream's
 *                        SyncParallelCount).
 *   CustomValidation     initializer jobs the TrainJob needs must exist with
 *                        their container and "initializer" mount; runtime
 *                        patches may only name replicated jobs and
 *                        containers the runtime has, may not set env on the
 *                        node and initializer containers, and may change
 *                        only while the TrainJob is or becomes suspended and
 *                        no replicated job is still active.
 *
 * Pod sets and replicated jobs are matched by position, as upstream does:
 * RuntimeInfo builds one pod set per replicated job, in order.
 * jobset_build.c emits the JobSet; jobset_status.c reads its status back.
 */
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/objectmeta.h"
#include "kftrainer/validation.h"
#include "plugins/builtin.h"
#include "plugins/jobset_internal.h"

/* No pod set has more endpoints than this: they are materialised, where
 * upstream yields them lazily, so a huge numNodes must not exhaust memory. */
#define MAX_ENDPOINTS (1 << 20)
#define ADDRESS_MAX   1024

#define RUNTIME_REF_PATH     "spec.runtimeRef"
#define RUNTIME_PATCHES_PATH "spec.runtimePatches"
/* apimachinery's httpPathFmt, quoted in its error. */
#define HTTP_PATH_FMT "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
#define HTTP_PATH_CHARS                                                                            \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~%!$&'()*+,;=:"

const char *const kft_jobset_pod_template_path[] = {"template", "spec", "template", NULL};
const char *const kft_jobset_pod_spec_path[] = {"template", "spec", "template", "spec", NULL};
const char *const kft_jobset_job_labels_path[] = {"template", "metadata", "labels", NULL};

static const char *const watch_kinds[] = {KFT_JOBSET_API_VERSION "/" KFT_JOBSET_KIND, NULL};

json_t *kft_jobset_dig(json_t *v, const char *const *keys, int create)
{
	for (; v && *keys; keys++) {
		json_t *next = json_object_get(v, *keys);
		if (create && (!next || json_is_null(next))) {
			next = json_object();
			if (!next || json_object_set_new(v, *keys, next) != 0)
				return NULL;
		}
		v = json_is_object(next) ? next : NULL;
	}
	return v;
}

json_t *kft_jobset_set_first(json_t *parent, const char *parent_key, json_t *obj, const char *key,
                             json_t *value)
{
	if (!value)
		return NULL;
	if (json_object_get(obj, key))
		return json_object_set_new(obj, key, value) == 0 ? obj : NULL;
	json_t *fresh = json_object();
	if (!fresh) {
		json_decref(value);
		return NULL;
	}
	if (json_object_set_new(fresh, key, value) != 0 || json_object_update(fresh, obj) != 0 ||
	    json_object_set_new(parent, parent_key, fresh)) {
		json_decref(fresh);
		return NULL;
	}
	return fresh;
}

json_t *kft_jobset_get(const kft_plugin_ctx *ctx, const kft_trainjob *job)
{
	const kft_backend *b = ctx->backend;
	return b->get_object(b->self, KFT_JOBSET_API_VERSION, KFT_JOBSET_KIND, job->ns, job->name);
}

/* ---- PodNetwork ------------------------------------------------------------- */

/* A replicated job's replicas as upstream reads them after its typed round
 * trip: absent and 0 (omitted when encoded) both mean the default. */
static json_int_t replicas_of(const json_t *rjob)
{
	const json_t *r = json_object_get(rjob, "replicas");
	json_int_t n = json_is_integer(r) ? json_integer_value(r) : 0;
	return n != 0 ? n : KFT_JOBSET_DEFAULT_JOB_REPLICAS;
}

static void free_endpoints(kft_pod_set *ps)
{
	for (size_t i = 0; i < ps->n_endpoints; i++)
		free(ps->endpoints[i]);
	free(ps->endpoints);
	ps->endpoints = NULL;
	ps->n_endpoints = 0;
}

static int set_endpoints(const kft_plugin_ctx *ctx, const kft_trainjob *job, kft_pod_set *ps,
                         const json_t *rjob, const char *subdomain, kft_error *err)
{
	const char *rname = json_string_value(json_object_get(rjob, "name")) ?: "";
	json_int_t replicas = replicas_of(rjob), count = ps->count;
	free_endpoints(ps);
	if (replicas <= 0 || count <= 0)
		return 0;
	if (replicas > MAX_ENDPOINTS / count)
		return kft_error_set(
		        err, KFT_ELIMIT,
		        "replicated job %s: %lld replicas of %lld pods exceed %d endpoints", rname,
		        (long long)replicas, (long long)count, MAX_ENDPOINTS);
	size_t n = (size_t)(replicas * count);
	ps->endpoints = calloc(n, sizeof(*ps->endpoints));
	if (!ps->endpoints)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	char buf[ADDRESS_MAX];
	for (int r = 0; r < replicas; r++) {
		for (int p = 0; p < count; p++) {
			if (ctx->backend->pod_address(ctx->backend->self, job->name, rname, r, p,
			                              subdomain, buf, sizeof(buf)) != 0)
				return kft_error_set(err, KFT_ELIMIT,
				                     "replicated job %s: a pod address is longer "
				                     "than %d bytes",
				                     rname, ADDRESS_MAX - 1);
			if (!(ps->endpoints[ps->n_endpoints] = strdup(buf)))
				return kft_error_set(err, KFT_ENOMEM, "out of memory");
			ps->n_endpoints++;
		}
	}
	return 0;
}

static int pod_network(const kft_plugin_ctx *ctx, kft_runtime_info *info, const kft_trainjob *job,
                       kft_error *err)
{
	if (!info || !job)
		return 0;
	const json_t *spec = info->template_spec;
	const char *subdomain =
	        json_string_value(json_object_get(json_object_get(spec, "network"), "subdomain"));
	if (!subdomain || !*subdomain)
		subdomain = job->name;
	const json_t *rjobs = json_object_get(spec, "replicatedJobs");
	for (size_t i = 0; i < json_array_size(rjobs) && i < info->n_pod_sets; i++) {
		int rc = set_endpoints(ctx, job, &info->pod_sets[i], json_array_get(rjobs, i),
		                       subdomain, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- PreComponentBuilder ---------------------------------------------------------- */

static int sync_parallel_count(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                               const kft_trainjob *job, kft_error *err)
{
	static const char *const job_spec_path[] = {"template", "spec", NULL};
	if (!info)
		return 0;
	json_t *rjobs = json_object_get(info->template_spec, "replicatedJobs");
	for (size_t i = 0; i < info->n_pod_sets; i++) {
		const kft_pod_set *ps = &info->pod_sets[i];
		size_t j;
		json_t *rjob;
		json_array_foreach(rjobs, j, rjob)
		{
			const char *name = json_string_value(json_object_get(rjob, "name"));
			if (!name || strcmp(name, ps->name) != 0)
				continue;
			json_t *js = kft_jobset_dig(rjob, job_spec_path, 1);
			json_t *tmpl = json_object_get(rjob, "template");
			if (js)
				js = kft_jobset_set_first(tmpl, "spec", js, "completions",
				                          json_integer(ps->count));
			if (js)
				js = kft_jobset_set_first(tmpl, "spec", js, "parallelism",
				                          json_integer(ps->count));
			if (!js)
				return kft_error_set(err, KFT_EINVAL,
				                     "replicated job %s: cannot set its Job's "
				                     "parallelism",
				                     name);
			break;
		}
	}
	return 0;
}

/* ---- CustomValidation --------------------------------------------------------------- */

/* Adds the names of a pod spec's containers (`which`) to the set `names`. */
static void add_names(json_t *names, const json_t *pod_spec, const char *which)
{
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(pod_spec, which), i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n)
			json_object_set_new(names, n, json_true());
	}
}

/* replicated job name -> set of its init and regular container names. */
static json_t *container_names(const json_t *spec)
{
	json_t *all = json_object();
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		const char *name = json_string_value(json_object_get(rjob, "name"));
		json_t *names = json_object();
		if (!all || !names || !name) {
			json_decref(names);
			continue;
		}
		const json_t *pod_spec = kft_jobset_dig(rjob, kft_jobset_pod_spec_path, 0);
		add_names(names, pod_spec, "initContainers");
		add_names(names, pod_spec, "containers");
		json_object_set_new(all, name, names);
	}
	return all;
}

/* Whether container `step` of replicated job `step` mounts "initializer". */
static int has_initializer_mount(const json_t *spec, const char *step)
{
	size_t i, j, k;
	json_t *rjob;
	const json_t *c, *m;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob)
	{
		const char *name = json_string_value(json_object_get(rjob, "name"));
		if (!name || strcmp(name, step) != 0)
			continue;
		const json_t *pod_spec = kft_jobset_dig(rjob, kft_jobset_pod_spec_path, 0);
		json_array_foreach(json_object_get(pod_spec, "containers"), j, c)
		{
			const char *cn = json_string_value(json_object_get(c, "name"));
			if (!cn || strcmp(cn, step) != 0)
				continue;
			json_array_foreach(json_object_get(c, "volumeMounts"), k, m)
			{
				const char *mn = json_string_value(json_object_get(m, "name"));
				if (mn && strcmp(mn, KFT_JOBSET_VOLUME_INITIALIZER) == 0)
					return 1;
			}
		}
	}
	return 0;
}

/* spec.runtimeRef as Go encodes the typed value: name, apiGroup, kind. */
static json_t *runtime_ref_value(const json_t *new_job)
{
	const json_t *ref = json_object_get(json_object_get(new_job, "spec"), "runtimeRef");
	static const char *const keys[] = {"name", "apiGroup", "kind"};
	json_t *v = json_object();
	for (size_t i = 0; v && i < 3; i++) {
		const json_t *x = json_object_get(ref, keys[i]);
		if (json_is_string(x) && (i > 0 || json_string_length(x) > 0))
			json_object_set(v, keys[i], (json_t *)x);
	}
	return v;
}

/* An initializer the TrainJob configures (`step` is "dataset-initializer"
 * or "model-initializer", `config` how upstream names the input). */
static void validate_initializer(const json_t *spec, const json_t *names, const json_t *new_job,
                                 const char *step, const char *config, kft_field_errors *errs)
{
	json_t *ref = runtime_ref_value(new_job);
	const json_t *containers = json_object_get(names, step);
	if (!containers)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_REF_PATH, ref,
		                     "must have %s job when trainJob is configured with input %s",
		                     step, config);
	else if (!json_object_get(containers, step))
		kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_REF_PATH, ref,
		                     "must have container with name - %s in the %s job", step,
		                     step);
	else if (!has_initializer_mount(spec, step))
		kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_REF_PATH, ref,
		                     "must have volumeMount with name - %s in container %s of the "
		                     "%s job",
		                     KFT_JOBSET_VOLUME_INITIALIZER, step, step);
	json_decref(ref);
}

static int suspended(const json_t *job)
{
	return json_is_true(json_object_get(json_object_get(job, "spec"), "suspend"));
}

static const json_t *runtime_patches(const json_t *job)
{
	return json_object_get(json_object_get(job, "spec"), "runtimePatches");
}

/* Go's semantic equality, for which an absent and an empty list agree. */
static int patches_equal(const json_t *a, const json_t *b)
{
	if (json_array_size(a) == 0 && json_array_size(b) == 0)
		return 1;
	return json_equal((json_t *)a, (json_t *)b);
}

static void validate_immutability(const kft_plugin_ctx *ctx, const json_t *old_job,
                                  const json_t *new_job, kft_field_errors *errs)
{
	if (!old_job || patches_equal(runtime_patches(old_job), runtime_patches(new_job)))
		return;
	if (!suspended(old_job) && !suspended(new_job)) {
		kft_field_errors_add(errs, KFT_FIELD_FORBIDDEN, RUNTIME_PATCHES_PATH, NULL,
		                     "RuntimePatches can only be modified when the TrainJob is "
		                     "suspended before or after the update");
		return;
	}
	kft_trainjob view;
	if (kft_trainjob_view(new_job, &view, NULL) != 0)
		return;
	json_t *jobset = kft_jobset_get(ctx, &view);
	size_t i;
	const json_t *rs;
	json_array_foreach(
	        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus"), i, rs)
	{
		const json_t *active = json_object_get(rs, "active");
		if (json_is_integer(active) && json_integer_value(active) > 0)
			kft_field_errors_add(
			        errs, KFT_FIELD_FORBIDDEN, RUNTIME_PATCHES_PATH, NULL,
			        "RuntimePatches cannot be modified when the JobSet's ReplicatedJob "
			        "%s is still active",
			        json_string_value(json_object_get(rs, "name")) ?: "");
	}
	json_decref(jobset);
}

/* apimachinery's IsDomainPrefixedPath, at upstream's (unindexed) path. */
static void validate_manager(const json_t *manager, kft_field_errors *errs)
{
	static const char *const path = RUNTIME_PATCHES_PATH ".manager";
	const char *m = json_string_value(manager) ?: "";
	const char *slash = strchr(m, '/');
	if (!*m) {
		kft_field_errors_add(errs, KFT_FIELD_REQUIRED, path, NULL, NULL);
		return;
	}
	if (!slash || slash == m || !slash[1]) {
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, manager,
		                     "must be a domain-prefixed path (such as \"acme.io/foo\")");
		return;
	}
	char *host = strndup(m, (size_t)(slash - m));
	json_t *msgs = json_array();
	json_t *host_value = host ? json_string(host) : NULL;
	if (host && msgs && !kft_is_dns1123_subdomain(host, msgs)) {
		size_t i;
		const json_t *msg;
		json_array_foreach(msgs, i, msg)
		{
			kft_field_errors_add(errs, KFT_FIELD_INVALID, path, host_value, "%s",
			                     json_string_value(msg));
		}
	}
	const char *rest = slash + 1;
	if (strspn(rest, HTTP_PATH_CHARS) != strlen(rest)) {
		json_t *rest_value = json_string(rest);
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, rest_value,
		                     "Invalid path (regex used for validation is '%s')",
		                     HTTP_PATH_FMT);
		json_decref(rest_value);
	}
	json_decref(host_value);
	json_decref(msgs);
	free(host);
}

static int reserved_env_container(const char *name)
{
	return strcmp(name, KFT_DATASET_INITIALIZER) == 0 ||
	       strcmp(name, KFT_MODEL_INITIALIZER) == 0 || strcmp(name, KFT_CONTAINER_NODE) == 0;
}

/* The containers (`which`) one replicated-job patch names. */
static void validate_patch_containers(const json_t *pod_spec, const char *which, const char *rjob,
                                      const json_t *containers, const json_t *patches,
                                      kft_field_errors *errs)
{
	int init = strcmp(which, "initContainers") == 0;
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(pod_spec, which), i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name")) ?: "";
		if (!json_object_get(containers, name))
			kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_PATCHES_PATH, patches,
			                     "must not have %s that doesn't exist in the runtime "
			                     "job %s",
			                     init ? "initContainer" : "container", rjob);
		else if (!init && json_array_size(json_object_get(c, "env")) > 0 &&
		         reserved_env_container(name))
			kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_PATCHES_PATH, patches,
			                     "must not have envs for the %s, %s, %s containers",
			                     KFT_DATASET_INITIALIZER, KFT_MODEL_INITIALIZER,
			                     KFT_CONTAINER_NODE);
	}
}

static void validate_patch(const json_t *patch, const json_t *names, const json_t *patches,
                           kft_field_errors *errs)
{
	static const char *const spec_path[] = {"trainingRuntimeSpec", "template", "spec", NULL};
	validate_manager(json_object_get(patch, "manager"), errs);
	const json_t *spec = kft_jobset_dig((json_t *)patch, spec_path, 0);
	size_t i;
	json_t *rp;
	json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rp)
	{
		const char *rjob = json_string_value(json_object_get(rp, "name")) ?: "";
		const json_t *containers = json_object_get(names, rjob);
		if (!containers) {
			kft_field_errors_add(errs, KFT_FIELD_INVALID, RUNTIME_PATCHES_PATH, patches,
			                     "must not have replicated job that doesn't exist in "
			                     "the runtime job template");
			continue;
		}
		const json_t *pod_spec = kft_jobset_dig(rp, kft_jobset_pod_spec_path, 0);
		validate_patch_containers(pod_spec, "initContainers", rjob, containers, patches,
		                          errs);
		validate_patch_containers(pod_spec, "containers", rjob, containers, patches, errs);
	}
}

static void custom_validation(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                              const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	if (!info || !new_job)
		return;
	json_t *names = container_names(info->template_spec);
	const json_t *init = json_object_get(json_object_get(new_job, "spec"), "initializer");
	const json_t *dataset = json_object_get(init, "dataset");
	const json_t *model = json_object_get(init, "model");
	if (json_is_object(dataset))
		validate_initializer(info->template_spec, names, new_job, KFT_DATASET_INITIALIZER,
		                     "datasetConfig", errs);
	if (json_is_object(model))
		validate_initializer(info->template_spec, names, new_job, KFT_MODEL_INITIALIZER,
		                     "modelConfig", errs);
	validate_immutability(ctx, old_job, new_job, errs);
	const json_t *patches = runtime_patches(new_job);
	size_t i;
	const json_t *patch;
	json_array_foreach(patches, i, patch) validate_patch(patch, names, patches, errs);
	json_decref(names);
}

/* ---- the plugin ----------------------------------------------------------------------- */

const kft_plugin kft_plugin_jobset = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = KFT_JOBSET_KIND,
        .watch_kinds = watch_kinds,
        .custom_validation = custom_validation,
        .pod_network = pod_network,
        .pre_component_builder = sync_parallel_count,
        .component_builder = kft_jobset_build,
        .trainjob_status = kft_jobset_status,
        .terminal_condition = kft_jobset_terminal_condition,
};
