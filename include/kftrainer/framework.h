/*
 * framework.h - the extension framework: phases, extension points, plugins,
 * and RuntimeInfo. Every backend (the controller, the local executor,
 * `render`) runs this one pipeline, so one TrainJob yields the same objects
 * wherever it runs.
 *
 *   Startup        WatchExtension          which child kinds to watch
 *   PreExecution   CustomValidation        field errors against the runtime
 *   Build          EnforceMLPolicy         torch/MPI/JAX/... env, ports, counts
 *                  EnforcePodGroupPolicy   gang-scheduling labels, PodGroup sizes
 *                  PodNetwork              each pod set's endpoints (via the backend)
 *                  EnforcePodSpec          last word on pod specs
 *                  PreComponentBuilder     settle counts (parallelism, completions)
 *                  ComponentBuilder        emit objects: Secret, ConfigMap, PodGroup, JobSet
 *   PostExecution  TrainJobStatus          status fields from the children
 *                  TerminalCondition       Complete / Failed from the children
 *
 * A plugin is a named const struct of optional function pointers, one per
 * extension point (the shape of nginx's module tables). Plugins run in a
 * fixed order at every point: the built-ins in the order of
 * kft_framework_new's documentation, then out-of-tree plugins in the order
 * they were added. Upstream iterates a Go map, so its order is unspecified;
 * ours is fixed so results are reproducible.
 *
 * Objects stay JSON trees (jansson). RuntimeInfo is the typed view the
 * plugins compute with: pod sets with their containers, env, ports, mounts,
 * volumes, counts and endpoints. The JobSet plugin writes it back into the
 * JSON it emits.
 */
#ifndef KFTRAINER_FRAMEWORK_H
#define KFTRAINER_FRAMEWORK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kftrainer/backend.h"
#include "kftrainer/error.h"
#include "kftrainer/export.h"
#include "kftrainer/plugin.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RuntimeInfo ------------------------------------------------------ */

/* A container of a pod set: the fields plugins change. All json_t members
 * are owned arrays (possibly empty, never NULL) of the Kubernetes objects.
 * They start as the template's; for the trainer's `node` container the
 * TrainJob's image, command and args replace the template's first, so a
 * plugin that rewrites the command (TorchTune, Flux) sees and owns the
 * final one and the JobSet plugin writes back only what RuntimeInfo says. */
typedef struct kft_container {
	char *name;
	char *image;           /* NULL: keep the template's */
	json_t *command;       /* array of strings; empty: keep the template's */
	json_t *args;          /* array of strings; written back as is */
	json_t *env;           /* EnvVar objects, upserted by name into the template */
	json_t *ports;         /* ContainerPort objects, upserted as kft_upsert_port says */
	json_t *volume_mounts; /* VolumeMount objects, upserted by mountPath */
} kft_container;

/* One replicated job of the runtime's JobSet template. */
typedef struct kft_pod_set {
	char *name;     /* the replicated job's name */
	char *ancestor; /* trainjob-ancestor-step label value, or NULL */
	int32_t count;  /* pods per replica (the Job's parallelism) */
	int32_t replicas;
	kft_container *init_containers;
	size_t n_init_containers;
	kft_container *containers;
	size_t n_containers;
	json_t *volumes;  /* Volume objects, upserted by name into the template */
	char **endpoints; /* replicas*count addresses, set by PodNetwork */
	size_t n_endpoints;
	json_t *single_pod_requests; /* ResourceList: one pod's effective requests */
} kft_pod_set;

typedef struct kft_runtime_info {
	json_t *labels;                    /* object: labels for the JobSet */
	json_t *annotations;               /* object: annotations for the JobSet */
	const json_t *ml_policy;           /* the runtime's spec.mlPolicy (borrowed), or NULL */
	const json_t *pod_group_policy;    /* spec.podGroupPolicy (borrowed), or NULL */
	json_t *scheduler_pod_labels;      /* object: labels every pod gets */
	json_t *scheduler_pod_annotations; /* object: annotations every pod gets */
	json_t *template_spec;             /* the JobSet spec, runtime patches merged (owned) */
	kft_pod_set *pod_sets;
	size_t n_pod_sets;
	char *runtime_kind; /* "ClusterTrainingRuntime" or "TrainingRuntime" */
	char *runtime_name;
} kft_runtime_info;

/* The pod set whose ancestor label is `ancestor` ("trainer" ...), or NULL. */
KFT_EXPORT kft_pod_set *kft_runtime_info_find_ancestor(const kft_runtime_info *info,
                                                       const char *ancestor);
/* The pod set named `name`, or NULL. */
KFT_EXPORT kft_pod_set *kft_runtime_info_find_pod_set(const kft_runtime_info *info,
                                                      const char *name);
/* The container named `name` in a pod set, or NULL. */
KFT_EXPORT kft_container *kft_pod_set_find_container(const kft_pod_set *ps, const char *name);
KFT_EXPORT void kft_runtime_info_free(kft_runtime_info *info);

/* Upserts: replace the element with the same key, or append. `item` is
 * copied. Return 0 or KFT_ENOMEM. */
KFT_EXPORT int kft_upsert_env(json_t *env, const char *name, const char *value);
KFT_EXPORT int kft_upsert_env_object(json_t *env, const json_t *item);
KFT_EXPORT int kft_upsert_by_key(json_t *list, const char *key, const json_t *item);

/* ---- what plugins put into the objects they build ------------------------- */

/* The TrainJob as controlling owner of a child (controller and
 * blockOwnerDeletion true); its uid only when the backend knows one. New
 * reference, or NULL when out of memory. */
KFT_EXPORT json_t *kft_owner_reference(const kft_plugin_ctx *ctx, const kft_trainjob *job);

/* Whether the backend already has the TrainJob's child `name` of this
 * apiVersion and kind, in the TrainJob's namespace. Plugins use it not to
 * regenerate what running pods hold (key pairs, PodGroups). */
KFT_EXPORT int kft_child_exists(const kft_plugin_ctx *ctx, const kft_trainjob *job,
                                const char *api_version, const char *kind, const char *name);

/* A gang's size over every pod set: minMember (the pods of all pod sets)
 * and minResources (count x single-pod requests, summed exactly, keys
 * sorted), as upstream's PodGroup plugins compute them. *min_res is a new
 * reference. */
KFT_EXPORT int kft_pod_group_size(const kft_runtime_info *info, int32_t *min_member,
                                  json_t **min_res, kft_error *err);

/* Makes a PodGroup of the gang's size for job; consumes min_res whatever
 * happens. NULL on allocation failure. */
typedef json_t *(*kft_pod_group_maker)(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                       const kft_trainjob *job, int32_t min_member,
                                       json_t *min_res);

/* The ComponentBuilder of the gang-scheduling plugins, once their policy is
 * set: nothing while the job runs and its PodGroup (of api_version) exists,
 * as upstream leaves a running gang's PodGroup alone; otherwise the
 * PodGroup `make` builds from kft_pod_group_size is appended to objects.
 * Returns 0, or kft_pod_group_size's error, or KFT_ENOMEM. */
KFT_EXPORT int kft_build_pod_group(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                   const kft_trainjob *job, const char *api_version,
                                   kft_pod_group_maker make, json_t *objects, kft_error *err);

/* Upstream's port upsert: replaces the port with the same containerPort, or
 * the first unnamed one (two unnamed ports count as the same name), else
 * appends. Returns 0 or KFT_ENOMEM. */
KFT_EXPORT int kft_upsert_port(json_t *ports, int port);

/* One trainer node's resources: the TrainJob's resourcesPerNode when job
 * has it (it replaces the runtime's as a whole), else the `node` container's
 * resources in the trainer's (or the `node`) replicated job of the template.
 * Borrowed; NULL when neither exists. */
KFT_EXPORT const json_t *kft_runtime_info_node_resources(const kft_runtime_info *info,
                                                         const kft_trainjob *job);

/* GPUs per pod in a ResourceRequirements object (NULL: none), as upstream's
 * GetNumGPUPerNode: the first resource whose name contains "gpu" (any case)
 * in requests, else in limits, as Quantity.Value() (rounded up). The one
 * place GPUs are counted: the plugins and the local engine's GPU placement
 * all ask it. Returns 0 with *out set, or KFT_EINVAL naming the resource
 * ("trainer resources: limits[nvidia.com/gpu]: ...") when its quantity does
 * not parse; *out is then 0. */
KFT_EXPORT int kft_resources_gpus(const json_t *resources, int64_t *out, kft_error *err);

/* ---- the TrainJob as the framework reads it ---------------------------- */

/* A typed view of the TrainJob fields the framework computes with. Every
 * pointer is borrowed from `obj` and lives as long as it. */
struct kft_trainjob {
	const json_t *obj;
	const char *name, *ns;
	const json_t *trainer; /* spec.trainer, or NULL */
	int has_num_nodes;
	int32_t num_nodes;
	int has_num_proc_per_node;
	int32_t num_proc_per_node;
	const char *image;                /* spec.trainer.image or NULL */
	const json_t *command, *args;     /* arrays or NULL */
	const json_t *env;                /* array or NULL */
	const json_t *resources_per_node; /* object or NULL */
	const json_t *dataset, *model;    /* spec.initializer.{dataset,model} or NULL */
	const json_t *runtime_patches;    /* array or NULL */
	int suspend;
};

/* Fills the view from a defaulted, validated TrainJob. */
KFT_EXPORT int kft_trainjob_view(const json_t *obj, kft_trainjob *out, kft_error *err);

/* ---- the framework ------------------------------------------------------ */

/* Feature gates, as upstream's controller has them (all off by default). */
#define KFT_FEATURE_TRAINJOB_STATUS 0x1u /* the TrainJobStatus plugin (alpha upstream) */

/* A framework with the built-in plugins registered, in this order:
 * plainml, torch, mpi, jax, xgboost, flux, coscheduling, volcano, jobset,
 * and trainjobstatus when KFT_FEATURE_TRAINJOB_STATUS is in `features`
 * (the build's list, cmake/builtin_plugins.cmake; a unit test pins it).
 * Free with kft_framework_free. */
KFT_EXPORT int kft_framework_new(unsigned features, kft_framework **out, kft_error *err);
KFT_EXPORT void kft_framework_free(kft_framework *fw);

/* Registers a plugin after the built-ins (the table is borrowed and must
 * outlive the framework). Refuses a wrong ABI version or a duplicate name. */
KFT_EXPORT int kft_framework_add_plugin(kft_framework *fw, const kft_plugin *plugin,
                                        kft_error *err);

/* dlopen()s the file at path (a name without '/' is a file in the current
 * directory, not a library searched for), finds KFT_PLUGIN_SYMBOL, checks
 * the ABI version and registers the plugin. The library stays loaded until kft_framework_free.
 * Refused before loading (KFT_EINVAL, the message saying why): a file that
 * is not regular, or that a user other than this one or root could have
 * written or replaced - the file or any directory above it owned by another
 * user, or writable by group or others (a sticky directory such as /tmp
 * excepted). KFT_ENOTFOUND when it does not exist. */
KFT_EXPORT int kft_framework_load_plugin(kft_framework *fw, const char *path, kft_error *err);

KFT_EXPORT size_t kft_framework_plugin_count(const kft_framework *fw);
KFT_EXPORT const kft_plugin *kft_framework_plugin_at(const kft_framework *fw, size_t i);

/* ---- running the pipeline ------------------------------------------------ */

/* Runtime resolution: the runtime spec.runtimeRef names, among `runtimes`
 * (TrainingRuntime and ClusterTrainingRuntime objects). A TrainingRuntime
 * must be in the TrainJob's namespace. On failure appends upstream's error
 * to errs (field spec.runtimeRef) and returns NULL; a runtime labelled
 * deprecated adds a warning. Borrowed result. */
KFT_EXPORT const json_t *kft_resolve_runtime(const json_t *trainjob, const json_t *runtimes,
                                             kft_field_errors *errs);

/* Builds RuntimeInfo for trainjob against runtime (runtime patches merged,
 * pod sets extracted) and runs EnforceMLPolicy, EnforcePodGroupPolicy,
 * PodNetwork and EnforcePodSpec. Caller frees *out with
 * kft_runtime_info_free. */
KFT_EXPORT int kft_framework_runtime_info(const kft_framework *fw, const kft_backend *backend,
                                          const json_t *trainjob, const json_t *runtime,
                                          kft_runtime_info **out, kft_error *err);

/* PreExecution: CustomValidation of every plugin, given RuntimeInfo as the
 * runtime and new_job make it before any plugin has changed it (as
 * upstream's webhook builds it). Returns 0, or a negative kft_status when
 * RuntimeInfo cannot be built (err filled). */
KFT_EXPORT int kft_framework_validate(const kft_framework *fw, const kft_backend *backend,
                                      const json_t *runtime, const json_t *old_job,
                                      const json_t *new_job, kft_field_errors *errs,
                                      kft_error *err);

/* Build: RuntimeInfo, then PreComponentBuilder and ComponentBuilder.
 * *objects receives a new array of complete objects in apply order. */
KFT_EXPORT int kft_framework_build(const kft_framework *fw, const kft_backend *backend,
                                   const json_t *trainjob, const json_t *runtime, json_t **objects,
                                   kft_error *err);

/* PostExecution: a new status object for the TrainJob, from its current
 * status and its children (asked of the backend): every TrainJobStatus
 * point, then the first terminal condition a plugin reports, set with
 * timestamp `now` (RFC 3339). */
KFT_EXPORT int kft_framework_status(const kft_framework *fw, const kft_backend *backend,
                                    const json_t *trainjob, const char *now, json_t **status,
                                    kft_error *err);

/* The built-in backend used when none is given: Kubernetes addressing,
 * default ports, nothing exists yet, no UID (render). */
KFT_EXPORT const kft_backend *kft_backend_default(void);

#ifdef __cplusplus
}
#endif

#endif
