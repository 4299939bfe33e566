/*
 * reconcile.h - the TrainJob and runtime reconcile decisions as pure functions over JSON, and the
 * Kubernetes backend (internal to src/controller/ and its tests).
 */
#ifndef KFT_CONTROLLER_RECONCILE_H
#define KFT_CONTROLLER_RECONCILE_H

#include <jansson.h>
#include <stddef.h>

#include "controller/controller.h"
#include "kftrainer/backend.h"
#include "kftrainer/framework.h"

/* ---- reconcile decisions --------------------------------------------------- */

/*
 * The child objects of one TrainJob as a backend: answers get_object from
 * `lookup` (e.g. informer caches), trainjob_uid from metadata.uid; the
 * rest is the default Kubernetes answer. self is passed to lookup.
 */
typedef json_t *(*kft_cm_lookup_fn)(void *self, const char *api_version, const char *kind,
                                    const char *ns, const char *name);
void kft_cm_backend_init(kft_backend *b, kft_cm_lookup_fn lookup, void *self);

/*
 * Whether applying `desired` to the live object `live` would change
 * nothing: every field desired sets has the same value in live (objects
 * compared member by member, lists element by element with equal length,
 * scalars by value, numbers across integer/real). live may hold more
 * (server defaults, status). 1 when unchanged, else 0.
 */
int kft_cm_apply_is_noop(const json_t *desired, const json_t *live);

/*
 * A JSON merge patch (RFC 7386) turning `from` into `to`: changed members
 * replaced, removed ones null, lists replaced whole. New reference; an
 * empty object when equal; NULL on allocation failure.
 */
json_t *kft_cm_merge_patch(const json_t *from, const json_t *to);

/*
 * The runtime snapshot ConfigMap upstream v2.3.0 writes for a TrainJob
 * (pkg/runtime/core/snapshot.go): name "<trainjob>-runtime-snapshot",
 * controlled by the TrainJob (controller and blockOwnerDeletion true),
 * data.runtime = the runtime (borrowed) as YAML with its keys sorted, as
 * sigs.k8s.io/yaml prints it, managedFields left out. New reference, or
 * NULL with err filled (KFT_ENOMEM, KFT_EINVAL for a TrainJob without a
 * name or uid).
 */
json_t *kft_cm_snapshot_configmap(const json_t *trainjob, const json_t *runtime, kft_error *err);

/*
 * Reads a runtime back from a snapshot ConfigMap (borrowed). Fails as
 * upstream does, with its messages: not controlled by this TrainJob
 * ("invalid runtime snapshot: a snapshot configmap exists but is owned by
 * another object"), missing key, undecodable YAML, or a runtime other than
 * the one spec.runtimeRef names. *runtime is a new reference.
 */
int kft_cm_snapshot_runtime(const json_t *trainjob, const json_t *configmap, json_t **runtime,
                            kft_error *err);

/* What the TrainJob reconciler should do, computed by kft_cm_trainjob_plan. */
typedef struct kft_cm_plan {
	int skip;                 /* managed by another controller: do nothing */
	int build;                /* build and apply the children */
	json_t *status_patch;     /* merge patch {"status": ...} to send, or NULL */
	int delete_jobset;        /* deadline exceeded: delete the JobSet */
	int64_t requeue_after_ms; /* > 0: look again then */
	char *error;              /* an error to return (unsupported runtime ...), or NULL */
} kft_cm_plan;

void kft_cm_plan_free(kft_cm_plan *p);

/*
 * Step 1 of a TrainJob reconcile (before any children are built): whether
 * it is ours, and whether its runtime kind is supported. `job` is the
 * working copy (borrowed, modified: the Failed condition cleared or set).
 * Sets plan->skip, plan->build, plan->error.
 */
int kft_cm_trainjob_begin(json_t *job, const char *now, kft_cm_plan *plan, kft_error *err);

/*
 * The rest, after the children were built and applied (or not), in
 * upstream's order: the Suspended condition; the status the framework
 * computes from the children (kft_framework_status with fw and backend;
 * skipped when fw is NULL, e.g. an unsupported runtime); the active
 * deadline (plan->delete_jobset, plan->requeue_after_ms); and
 * plan->status_patch, the merge patch {"status": ...} from `stored` (the
 * TrainJob as read, borrowed) to `job`, or NULL when the status did not
 * change. `job` (borrowed) is modified. Errors: the framework's, KFT_EPARSE
 * for a bad timestamp, KFT_ENOMEM.
 */
int kft_cm_trainjob_finish(json_t *job, const json_t *stored, const kft_framework *fw,
                           const kft_backend *backend, const char *now, kft_cm_plan *plan,
                           kft_error *err);

/* Whether a runtime carries the resource-in-use finalizer; *patch is the
 * merge patch removing it (metadata.finalizers without it), or NULL. */
int kft_cm_runtime_finalizer_patch(const json_t *runtime, json_t **patch, kft_error *err);

/*
 * With the RuntimeInUseFinalizer gate, Trainer v2.2's rule for a runtime
 * (borrowed) that `in_use` TrainJobs reference: add the finalizer when
 * TrainJobs use it and it lacks it (not while it is being deleted: the API
 * server forbids new finalizers then); remove it once the runtime is being
 * deleted and no TrainJob uses it; otherwise leave it. *patch is the merge
 * patch of metadata.finalizers to send, or NULL for nothing. KFT_ENOMEM.
 */
int kft_cm_runtime_in_use_patch(const json_t *runtime, size_t in_use, json_t **patch,
                                kft_error *err);

/*
 * The runtime a TrainJob (borrowed) references, as the TrainJob informer's
 * "runtime" index value: "TrainingRuntime/<namespace>/<name>" or
 * "ClusterTrainingRuntime/<name>", for spec.runtimeRef with apiGroup
 * trainer.kubeflow.org (upstream's RuntimeRefIsTrainingRuntime and
 * RuntimeRefIsClusterTrainingRuntime). KFT_ENOTFOUND for any other
 * reference, KFT_ELIMIT when buf is too small.
 */
int kft_cm_trainjob_runtime_key(const json_t *job, char *buf, size_t size);

/*
 * The runtimeClassName of every replicated job's pod template of a
 * TrainingRuntime or ClusterTrainingRuntime (borrowed), as upstream's
 * runtimeClass indexes list them: a new array of strings (duplicates
 * kept once), empty when none; NULL on allocation failure.
 */
json_t *kft_cm_runtime_class_names(const json_t *runtime);

/* Whether a TrainJob (borrowed) has spec.suspend true: the TrainJobs the
 * PodGroup plugins' LimitRange and RuntimeClass watches requeue. */
int kft_cm_trainjob_suspended(const json_t *job);

#endif
