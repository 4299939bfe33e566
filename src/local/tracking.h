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
#include <stdio.h>

#include <jansson.h>

#include "local/store.h"
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

/* An OptimizationJob's parent run (its trials' runs name it as their
 * parent): a tracker with the run's start queued, or NULL as for a job. */
kft_tracker *kft_local_tracking_open_search(const json_t *opt, char *const *env);

/* The search is over (or its supervisor stops): the parent run ends
 * FINISHED/FAILED by its conditions (KILLED when deleted, open otherwise),
 * after best ({"params": {NAME: VALUE}, "metrics": {NAME: VALUE}}, may be
 * NULL) is logged as best.NAME; then as kft_local_tracking_close. */
void kft_local_tracking_close_search(kft_tracker *t, const json_t *opt, const json_t *best,
                                     bool deleted);

/* ---- model export (export.c) --------------------------------------------------- */

/* The exporter's log in the job's logs directory. */
#define KFT_LOCAL_EXPORT_LOG "model-exporter.log"

typedef struct kft_local kft_local;

/*
 * Exports job ns/name's output (the directory its trainer's first node sees
 * at tracking.kftrainer.dev/export-from, default /workspace/output) to its
 * export-to, or to `to` when not NULL, recording the ModelExported
 * condition in the store: Unknown/Exporting, then True/Exported with where
 * it went, or False/ExportFailed with the error. MLflow settings are this
 * process's, else the job's environment's; S3 credentials this process's.
 * A line per file to progress (may be NULL). Errors: KFT_EINVAL (not
 * Complete, no destination, a destination refused), KFT_ENOTFOUND (no such
 * job, nothing to export) and the transfer's.
 */
int kft_local_export(kft_local *l, const char *ns, const char *name, const char *to, FILE *progress,
                     kft_error *err);

/* Whether deleting job ns/name now would delete a model not exported yet
 * (it completed with an export-to and ModelExported is not True): 1 with
 * the reason in why (size bytes), 0 when nothing stands in the way (no
 * such job included). */
int kft_local_export_pending(kft_local *l, const char *ns, const char *name, char *why,
                             size_t size);

/* Whether tj completed with an export-to and is not exported yet. */
bool kft_local_export_wanted(const json_t *tj);

/* The supervisor's step after its loop: when kft_local_export_wanted, runs
 * `kftrainer export NAME` (this program) with the supervisor's environment,
 * its output in the job's KFT_LOCAL_EXPORT_LOG, until it ends or a stop
 * signal comes on sfd (the child is then stopped). */
void kft_local_export_step(const char *state_dir, const char *job_dir, const json_t *tj, int sfd);

#endif
