/*
 * tracking.h - the controller manager's MLflow runs (internal to
 * src/controller): one tracker (src/track/tracker.h) for the whole manager,
 * told about TrainJobs by the TrainJob reconciler (a run starts when a job
 * is first seen, ends when it finishes or is deleted), about reports by
 * the status server (which may be a replica that is not the leader: a
 * report of a job not seen yet starts its run first), and about
 * OptimizationJobs by their reconciler (the parent runs of trials).
 *
 * The server is the Configuration's tracking.mlflowTrackingURI, the
 * --mlflow-tracking-uri flag, else MLFLOW_TRACKING_URI in the manager's
 * environment (with MLflow's other variables: token, user and password,
 * CA file). Every call is thread-safe and returns at once.
 */
#ifndef KFT_CONTROLLER_TRACKING_H
#define KFT_CONTROLLER_TRACKING_H

#include <stdint.h>

#include <jansson.h>

#include "controller/controller.h"

typedef struct kft_cm_tracking kft_cm_tracking;

/* A tracking client when a server is configured (*out NULL when none).
 * Errors: a tracking URI kftrainer cannot use (KFT_EINVAL), KFT_ENOMEM. */
int kft_cm_tracking_new(const kft_cm_config *cfg, kft_logger *lg, kft_cm_tracking **out,
                        kft_error *err);

/* After a TrainJob's reconcile (job borrowed, its status as written): its
 * run starts when first seen, unless it finished before the manager
 * started and more than KFT_CM_TRACKING_LATE_MS ago (a restart does not
 * reopen every old run); it ends once the job finishes. */
#define KFT_CM_TRACKING_LATE_MS (10 * 60 * 1000)
void kft_cm_tracking_trainjob(kft_cm_tracking *t, const json_t *job);

/* A TrainJob deleted (its informer key "NS/NAME"): a run still open ends
 * KILLED. */
void kft_cm_tracking_gone(kft_cm_tracking *t, const char *key);

/* A report the status server applied; job is the TrainJob the apply
 * returned. */
void kft_cm_tracking_report(kft_cm_tracking *t, const json_t *job, const json_t *trainer_status);

/* After an OptimizationJob's reconcile: the parent run starts, and ends
 * with the search (its status.result's values as best.*). */
void kft_cm_tracking_optimization(kft_cm_tracking *t, const json_t *opt);

/* Waits up to timeout_ms for what is queued, stops. NULL is a no-op. */
void kft_cm_tracking_free(kft_cm_tracking *t, int64_t timeout_ms);

#endif
