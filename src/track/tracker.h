/*
 * tracker.h - jobs into MLflow runs, without ever holding a job up
 * (internal). The local supervisor and the controller manager each own one
 * tracker: they tell it what happens (a job started, it reported, it
 * ended) through calls that only queue and return at once; the tracker's
 * own thread talks to the tracking server (mlflow.h) in order, retrying
 * with back-off while the server is unavailable (each first failure of a
 * streak, and the recovery, go to the log function) and dropping, with one
 * log line, what the server refuses for good.
 *
 * While the server is down, reports wait in a bounded queue: past
 * max_reports the oldest report waiting is dropped (counted and logged),
 * never a start or an end. Every call is thread-safe. Strings and JSON
 * given are copied (borrowed for the call only).
 */
#ifndef KFT_TRACK_TRACKER_H
#define KFT_TRACK_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "track/mlflow.h"

/* Log levels of the tracker's lines: 0 information, 1 warning. */
typedef void (*kft_tracker_log_fn)(void *ctx, int level, const char *message);

typedef struct kft_tracker_opts {
	kft_mlflow_opts mlflow;         /* the server (strings copied) */
	const char *default_experiment; /* NULL: "Default" */
	size_t max_reports;             /* 0: 10000 */
	int64_t backoff_max_ms;         /* 0: 60000 */
	kft_tracker_log_fn log;         /* NULL: nothing is said */
	void *log_ctx;
} kft_tracker_opts;

typedef struct kft_tracker kft_tracker;

/* Starts the tracker's thread (with every signal blocked in it). Errors:
 * those of kft_mlflow_open (a tracking URI kftrainer cannot use),
 * KFT_ENOMEM, KFT_EIO (no thread). */
int kft_tracker_new(const kft_tracker_opts *o, kft_tracker **out, kft_error *err);

/* The run of a TrainJob (or, _search, the parent run of an
 * OptimizationJob's trials) starts, or is found again by its uid tag and
 * continues (a resumed job, a restarted supervisor or controller).
 * seq_base: reports already made (their steps continue from it). A job
 * that does not want a run (kft_track_wanted) is passed over; one whose
 * declarations cannot be read is logged and passed over. */
void kft_tracker_start(kft_tracker *t, const json_t *trainjob, int64_t start_ms, int64_t seq_base);
void kft_tracker_start_search(kft_tracker *t, const json_t *optjob, int64_t start_ms);

/* One progress report (a TrainerStatus) of the job with this uid, made at
 * time_ms. Passed over for a job the tracker was not told started. */
void kft_tracker_report(kft_tracker *t, const char *uid, const json_t *trainer_status,
                        int64_t time_ms);

/* The local file `path` becomes the artifact `rel` of the job's run (sent
 * before the run's end). */
void kft_tracker_artifact(kft_tracker *t, const char *uid, const char *rel, const char *path);

/* The run ends with an MLflow RunStatus (kft_track_end_status). For a
 * search, uid is the OptimizationJob's metadata.uid, and best (may be NULL)
 * is logged first: {"params": {...}, "metrics": {NAME: value}} of the best
 * trial. */
void kft_tracker_end(kft_tracker *t, const char *uid, const char *status, int64_t end_ms);
void kft_tracker_end_search(kft_tracker *t, const char *uid, const json_t *best, const char *status,
                            int64_t end_ms);

/* Waits until everything queued was sent or dropped, or timeout_ms passed.
 * Returns how many calls are still waiting (0: all done). */
size_t kft_tracker_flush(kft_tracker *t, int64_t timeout_ms);

/* Whether the job with this uid has a run, and its id (copied into buf of
 * size bytes); 0 when unknown yet. */
int kft_tracker_run_id(kft_tracker *t, const char *uid, char *buf, size_t size);

/* Stops the thread; what is still queued is dropped and said in one line.
 * NULL is a no-op. */
void kft_tracker_free(kft_tracker *t);

#endif
