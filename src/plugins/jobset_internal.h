/*
 * jobset_internal.h - what the JobSet plugin's three files share (internal).
 *
 *   jobset.c         the plugin table, PodNetwork, PreComponentBuilder and
 *                    CustomValidation
 *   jobset_build.c   ComponentBuilder: the JobSet object itself
 *   jobset_status.c  TrainJobStatus and TerminalCondition from the JobSet
 */
#ifndef KFT_PLUGINS_JOBSET_INTERNAL_H
#define KFT_PLUGINS_JOBSET_INTERNAL_H

#include "kftrainer/framework.h"

/* Upstream's names (pkg/constants, plugins/jobset/constants). */
#define KFT_JOBSET_API_VERSION          "jobset.x-k8s.io/v1alpha2"
#define KFT_JOBSET_KIND                 "JobSet"
#define KFT_JOBSET_VOLUME_INITIALIZER   "initializer"
#define KFT_JOBSET_ENV_STORAGE_URI      "STORAGE_URI"
#define KFT_JOBSET_DEFAULT_JOB_REPLICAS 1

/* ComponentBuilder (jobset_build.c): appends the TrainJob's JobSet to
 * `objects`, or nothing when a running JobSet already exists. */
int kft_jobset_build(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                     const kft_trainjob *job, json_t *objects, kft_error *err);

/* TrainJobStatus and TerminalCondition (jobset_status.c). */
int kft_jobset_status(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t *status,
                      kft_error *err);
int kft_jobset_terminal_condition(const kft_plugin_ctx *ctx, const kft_trainjob *job,
                                  json_t **condition, kft_error *err);

/* The JobSet of the TrainJob as the backend has it (new reference), or
 * NULL. */
json_t *kft_jobset_get(const kft_plugin_ctx *ctx, const kft_trainjob *job);

/* v.keys[0].keys[1]... (`keys` ends with NULL): borrowed, or NULL when a
 * level is missing or not an object. With `create`, missing or null levels
 * are added as empty objects, so NULL then means a level of another type
 * or no memory. */
json_t *kft_jobset_dig(json_t *v, const char *const *keys, int create);

/* Sets obj[key] = value (reference taken). A new member goes first, where
 * upstream's encoding of the Kubernetes types puts the members we add
 * (metadata before spec, parallelism before template), so rendered output
 * reads as upstream's: obj is then replaced in parent[parent_key] by a copy
 * that starts with it. Returns the object now holding key (borrowed), or
 * NULL when out of memory. */
json_t *kft_jobset_set_first(json_t *parent, const char *parent_key, json_t *obj, const char *key,
                             json_t *value);

/* Paths below a replicated job. */
extern const char *const kft_jobset_pod_template_path[]; /* template.spec.template */
extern const char *const kft_jobset_pod_spec_path[];     /* template.spec.template.spec */
extern const char *const kft_jobset_job_labels_path[];   /* template.metadata.labels */

#endif
