/*
 * runtime_info.h - building RuntimeInfo (internal; see kftrainer/framework.h
 * for the type and the pipeline that uses it).
 */
#ifndef KFT_FRAMEWORK_RUNTIME_INFO_H
#define KFT_FRAMEWORK_RUNTIME_INFO_H

#include "kftrainer/framework.h"

/* RuntimeInfo for job against runtime, before any plugin has run. */
int kft_runtime_info_build(const json_t *runtime, const kft_trainjob *job, kft_runtime_info **out,
                           kft_error *err);

/* Where the backend has no GPUs (backend.h has_gpus): every GPU request
 * (a resource whose name contains "gpu", as kft_resources_gpus counts them)
 * removed from the template's pods and the pod sets' requests. */
void kft_runtime_info_drop_gpus(kft_runtime_info *info);

/* Removes the GPU entries from a ResourceRequirements object's limits and
 * requests (NULL or not an object: nothing), and either list it leaves
 * empty. Returns how many entries. */
int kft_resources_drop_gpus(json_t *resources);

#endif
