/*
 * tracking.h - a local job's MLflow run and its model export, as the
 * supervisor drives them (internal to src/local; tracking.c, export.c).
 *
 * The supervisor's engine calls three hooks: open when the job is loaded,
 * report for each TrainerStatus recorded, close when the loop is over; and,
 * when the job completed with tracking.kftrainer.dev/export-to, export.
 * The job's tracking settings are those of its base environment (what the
 * CLI or the SDK had at submit: MLFLOW_TRACKING_URI and MLflow's other
 * variables), so a resume or a restarted supervisor sends to the same
 * server. Nothing here fails the job: problems go to the supervisor's log.
 */
#ifndef KFT_LOCAL_TRACKING_H
#define KFT_LOCAL_TRACKING_H

#include <stdbool.h>

#include <jansson.h>

#include "kftrainer/store.h"
#include "track/tracker.h"

/* How long a finished job's supervisor waits for an unavailable tracking
 * server before it gives up what is still queued (seconds;
 * KFTRAINER_TRACKING_DRAIN in the supervisor's environment overrides it). */
#define KFT_LOCAL_TRACKING_DRAIN_S 60

/* A tracker for job tj (borrowed) when its environment names a tracking
 * server and the job wants a run, with the run's start queued; else NULL.
 * The reports the store already holds for it count toward its steps. */
kft_tracker *kft_local_tracking_open(kft_store *s, const json_t *tj, char *const *env);

/* A TrainerStatus the supervisor recorded for tj, now. NULL t: nothing. */
void kft_local_tracking_report(kft_tracker *t, const json_t *tj, const json_t *ts);

/* The loop is over: the run ends when tj finished (or was deleted: KILLED;
 * a suspended job's run stays open), after the pods' logs when the job asks
 * for them as artifacts; then waits for what is queued (bounded) and frees
 * t. NULL t: nothing. */
void kft_local_tracking_close(kft_tracker *t, kft_store *s, const json_t *tj);

#endif
