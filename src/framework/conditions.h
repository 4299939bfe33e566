/*
 * conditions.h - the TrainJob's status conditions and the rules that move
 * them, the same for the controller, the local backend and tests.
 *
 * A TrainJob (upstream v2.3.0) carries at most these conditions:
 *
 *   Suspended  True  / Suspended  "TrainJob is suspended"   spec.suspend is true
 *              False / Resumed    "TrainJob is resumed"     suspend went from true to false
 *   Complete   True  / copied from the child (JobSet: AllJobsCompleted ...)
 *   Failed     True  / copied from the child (JobSet: FailedJobs ...)
 *                    / TrainingRuntimeNotSupported "unsupported runtime: <Kind>.<group>"
 *                    / DeadlineExceeded "TrainJob exceeded its active deadline"
 *
 * Upstream sets no "Created" condition in v2.3.0.
 *
 * Conditions are metav1.Condition objects in status.conditions, changed
 * with Kubernetes' meta.SetStatusCondition rules: a condition is found by
 * type; every field is overwritten; lastTransitionTime moves only when the
 * status (True/False/Unknown) changes, or is set when the condition is new.
 *
 * One reconcile of a TrainJob applies, in upstream's order:
 *
 *   1. kft_trainjob_clear_failed               (a DeadlineExceeded failure stays)
 *   2. either kft_trainjob_set_unsupported_runtime, when the runtimeRef names no
 *      known runtime kind; or, unless kft_trainjob_is_finished, build and apply
 *      the children (on error: an event, kft_trainjob_reconcile_failed_message)
 *   3. kft_trainjob_set_suspended
 *   4. kft_trainjob_adopt_status with the status the framework computed from
 *      the children (kft_framework_status)
 *   5. kft_trainjob_reconcile_deadline         (on EXCEEDED: delete the JobSet)
 *   6. write the status back when it differs from the stored one.
 *
 * Times are RFC 3339 strings. `now` is what the caller's clock says
 * ("2025-01-02T03:04:05Z"); it is stored as given, so pass whole seconds in
 * UTC as Kubernetes does (metav1.Time has second precision on the wire).
 *
 * Everything here works on jansson trees the caller owns; nothing keeps
 * state between calls.
 */
#ifndef KFT_FRAMEWORK_CONDITIONS_H
#define KFT_FRAMEWORK_CONDITIONS_H

#include <jansson.h>
#include <stdint.h>

#include "kftrainer/error.h"

/* Condition types of a TrainJob. */
#define KFT_CONDITION_SUSPENDED "Suspended"
#define KFT_CONDITION_COMPLETE  "Complete"
#define KFT_CONDITION_FAILED    "Failed"

/* metav1.ConditionStatus values. */
#define KFT_CONDITION_TRUE    "True"
#define KFT_CONDITION_FALSE   "False"
#define KFT_CONDITION_UNKNOWN "Unknown"

/* Reasons the TrainJob controller itself sets. */
#define KFT_REASON_SUSPENDED             "Suspended"
#define KFT_REASON_RESUMED               "Resumed"
#define KFT_REASON_RUNTIME_NOT_SUPPORTED "TrainingRuntimeNotSupported"
#define KFT_REASON_DEADLINE_EXCEEDED     "DeadlineExceeded"

/* And their messages. */
#define KFT_MESSAGE_SUSPENDED         "TrainJob is suspended"
#define KFT_MESSAGE_RESUMED           "TrainJob is resumed"
#define KFT_MESSAGE_DEADLINE_EXCEEDED "TrainJob exceeded its active deadline"

/* The JobSet conditions the JobSet plugin turns into Complete and Failed,
 * with JobSet v0.12's reasons and messages. */
#define KFT_JOBSET_CONDITION_COMPLETED "Completed"
#define KFT_JOBSET_CONDITION_FAILED    "Failed"
#define KFT_JOBSET_REASON_COMPLETED    "AllJobsCompleted"
#define KFT_JOBSET_MESSAGE_COMPLETED   "jobset completed successfully"
#define KFT_JOBSET_REASON_FAILED       "FailedJobs"
#define KFT_JOBSET_MESSAGE_FAILED      "jobset failed due to one or more job failures"

/* The Warning event the controller records when building or applying the
 * children fails (reason, action). */
#define KFT_EVENT_RESOURCES_CREATION_FAILED "TrainJobResourcesCreationFailed"
#define KFT_EVENT_ACTION_RECONCILING        "Reconciling"

/* spec.managedBy of a TrainJob the built-in controller reconciles (also the
 * value assumed when managedBy is unset). */
#define KFT_TRAINJOB_CONTROLLER_NAME "trainer.kubeflow.org/trainjob-controller"

/* ---- conditions in a status object ---------------------------------------- */

/* The condition of this type in status.conditions (borrowed), or NULL when
 * there is none or status/conditions are not an object/array. */
const json_t *kft_condition_find(const json_t *status, const char *type);

/* 1 when the condition of this type exists with status "True", else 0. */
int kft_condition_is_true(const json_t *status, const char *type);

/*
 * Sets a condition in status.conditions like meta.SetStatusCondition, for a
 * new condition without observedGeneration or lastTransitionTime: inserts
 * it (lastTransitionTime = now) or updates the one of the same type
 * (lastTransitionTime = now only if cond_status changes). status is an
 * object; "conditions" is created when missing. type, cond_status and now
 * are required; reason and message may be NULL (stored as "").
 * Returns 0, KFT_EINVAL (status not an object, conditions not an array,
 * a required argument NULL) or KFT_ENOMEM.
 */
int kft_condition_set(json_t *status, const char *type, const char *cond_status, const char *reason,
                      const char *message, const char *now, kft_error *err);

/*
 * The general form: cond is a whole metav1.Condition object (borrowed,
 * copied), e.g. a child's condition. Its lastTransitionTime, when present
 * and not empty, is used instead of now; its observedGeneration (absent = 0)
 * replaces the stored one. *changed (may be NULL) is set to 1 when anything
 * changed, else 0. Errors as kft_condition_set, plus KFT_EINVAL when cond
 * has no string type or status.
 */
int kft_condition_set_object(json_t *status, const json_t *cond, const char *now, int *changed,
                             kft_error *err);

/* Removes the condition of this type; returns 1 when one was removed, else 0.
 * An emptied conditions array is deleted (Go omits an empty list). */
int kft_condition_remove(json_t *status, const char *type);

/*
 * Copies the child's condition child_type (from child_status.conditions),
 * when it is True, into status as `type`, with the child's reason, message,
 * lastTransitionTime and observedGeneration (the JobSet plugin's Completed
 * -> Complete and Failed -> Failed). Nothing happens when the child has no
 * such True condition. Errors as kft_condition_set_object.
 */
int kft_condition_copy_from_child(json_t *status, const json_t *child_status,
                                  const char *child_type, const char *type, const char *now,
                                  kft_error *err);

/* ---- a TrainJob --------------------------------------------------------- */

/* 1 when the TrainJob has Complete=True or Failed=True, else 0. */
int kft_trainjob_is_finished(const json_t *trainjob);

/* 1 when spec.managedBy names a controller other than ours (the TrainJob is
 * then left alone), else 0. */
int kft_trainjob_is_managed_externally(const json_t *trainjob);

/* "<kind>.<apiGroup>" of spec.runtimeRef (just "<kind>" when the group is
 * empty), the key upstream reports runtimes by. Caller frees; NULL on
 * allocation failure. */
char *kft_trainjob_runtime_key(const json_t *trainjob);

/* Step 1: removes Failed unless its reason is DeadlineExceeded, so that a
 * change to the spec can take the TrainJob out of a failed state. */
void kft_trainjob_clear_failed(json_t *trainjob);

/* Sets Failed=True with this message and reason (creating status when
 * missing). Errors as kft_condition_set. */
int kft_trainjob_set_failed(json_t *trainjob, const char *message, const char *reason,
                            const char *now, kft_error *err);

/* Step 2, runtime not supported: Failed=True, TrainingRuntimeNotSupported,
 * "unsupported runtime: <runtime key>". */
int kft_trainjob_set_unsupported_runtime(json_t *trainjob, const char *now, kft_error *err);

/* Step 3: Suspended=True/Suspended while spec.suspend is true; when it is
 * not but Suspended is True, Suspended=False/Resumed; otherwise nothing. */
int kft_trainjob_set_suspended(json_t *trainjob, const char *now, kft_error *err);

/*
 * Step 4: replaces trainjob.status with new_status (a reference is stolen;
 * NULL keeps the current status, as upstream does when the finished job's
 * JobSet is gone) and then puts back a DeadlineExceeded Failed condition
 * the old status had. On error new_status is still consumed.
 */
int kft_trainjob_adopt_status(json_t *trainjob, json_t *new_status, const char *now,
                              kft_error *err);

typedef enum kft_deadline_state {
	KFT_DEADLINE_NONE,     /* no deadline applies (none set, finished, suspended ...) */
	KFT_DEADLINE_PENDING,  /* look again after *requeue_after_ms */
	KFT_DEADLINE_EXCEEDED, /* Failed/DeadlineExceeded was set: delete the JobSet */
} kft_deadline_state;

/*
 * Step 5: spec.activeDeadlineSeconds. The clock starts at
 * metadata.creationTimestamp, or at the last resume (the lastTransitionTime
 * of Suspended=False). Nothing applies when the deadline is 0 or unset, the
 * job is finished or suspended, or no start time is known. When now is past
 * start + deadline, sets Failed=True/DeadlineExceeded and returns EXCEEDED;
 * otherwise PENDING with *requeue_after_ms = the time left (1000 when none
 * is left). *state receives the outcome. Returns 0, or KFT_EPARSE when now
 * or a stored timestamp is not RFC 3339, or an error of kft_condition_set.
 */
int kft_trainjob_reconcile_deadline(json_t *trainjob, const char *now, kft_deadline_state *state,
                                    int64_t *requeue_after_ms, kft_error *err);

/* The message of the KFT_EVENT_RESOURCES_CREATION_FAILED event for an error
 * text: "TrainJob resources reconciliation failed: <text>", the text cut to
 * 950 characters (UTF-8 code points) with " ..." appended when it was
 * longer than 950 bytes. Caller frees; NULL on allocation failure. */
char *kft_trainjob_reconcile_failed_message(const char *error_text);

#endif
