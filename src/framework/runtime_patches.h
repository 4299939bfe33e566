/*
 * runtime_patches.h - merging a TrainJob's spec.runtimePatches into the JobSet
 * template of its runtime (internal; RuntimeInfo construction calls it).
 *
 * Upstream (v2.3.0, pkg/runtime/core/trainingruntime.go) applies each patch's
 * template.spec to the runtime's JobSetSpec as a Kubernetes strategic merge
 * patch, in list order, and then puts the replicated jobs back in the order
 * the runtime declared them. The patch first goes through Go's typed
 * decoding, which keeps only the fields the patch types declare. This module
 * reproduces both: see runtime_patches.c for the rules.
 */
#ifndef KFT_FRAMEWORK_RUNTIME_PATCHES_H
#define KFT_FRAMEWORK_RUNTIME_PATCHES_H

#include <jansson.h>

#include "kftrainer/error.h"

/* Upstream's bound on spec.runtimePatches (MaxItems). */
#define KFT_RUNTIME_PATCHES_MAX 16

/*
 * Merges `runtime_patches` (a TrainJob's spec.runtimePatches: an array, or
 * NULL for none) into `tmpl`, a runtime's spec.template object
 * {metadata, spec}, in place:
 *
 *   - tmpl.metadata.labels / .annotations gain every patch's
 *     trainingRuntimeSpec.template.metadata labels / annotations (later
 *     patches win); nothing else of that metadata is used, as upstream;
 *   - tmpl.spec receives every patch's trainingRuntimeSpec.template.spec as a
 *     strategic merge patch against JobSetSpec (replicated jobs merged by
 *     name, containers and init containers by name, env by name, volume
 *     mounts by mountPath, volumes / imagePullSecrets / schedulingGates by
 *     name, metadata finalizers as a set; maps merged key by key; every other
 *     list, tolerations included, replaced);
 *   - replicatedJobs end in the runtime's order (a stable sort on each
 *     name's position in the runtime); a name the runtime lacks is added by
 *     the merge, as upstream adds it, and sorts as position 0, level with
 *     the runtime's first job.
 *
 * Both arguments are borrowed; `tmpl` must be a JSON object. Returns 0;
 * KFT_EINVAL when a patch has the wrong shape (a non-object where an object
 * belongs, a merge-list item without its key, mixed item types) with the
 * offending path in err; KFT_ELIMIT for more than KFT_RUNTIME_PATCHES_MAX
 * patches or nesting deeper than KFT_DECODE_MAX_DEPTH; KFT_ENOMEM. On error
 * `tmpl` may be partly merged: callers discard it.
 */
int kft_runtime_patches_merge(json_t *tmpl, const json_t *runtime_patches, kft_error *err);

#endif
