/*
 * store.h - the local backend's state: an embedded SQLite database.
 *
 * Every `kftrainer` CLI invocation and every job supervisor opens the same
 * database file in a per-user state directory. SQLite runs in WAL mode with a
 * busy timeout, so two processes acting on one job at once wait for each other
 * instead of failing. The schema carries a version (PRAGMA user_version) and
 * is migrated when the store is opened; a database written by a newer
 * kftrainer is refused rather than misread.
 *
 * What is kept per TrainJob (keyed by namespace + name, unique):
 *   - the TrainJob as submitted (after defaulting), its generated uid and
 *     creation time, the runtime it references, started/finished times,
 *     the suspend flag, the status block;
 *   - the objects the framework built for it, in apply order;
 *   - one record per step and pod index (state, pid, exit code, logs ...);
 *   - the pid and start time of the process supervising it.
 *
 * Conventions: functions return 0 or a negative kft_status and fill err when
 * it is non-NULL. A job is addressed by namespace (NULL or "" means
 * "default") and name. Missing jobs give KFT_ENOTFOUND with kubectl's wording
 * (trainjobs.trainer.kubeflow.org "NAME" not found); SQLite failures give
 * KFT_EIO with SQLite's message. Strings passed in are borrowed; strings and
 * JSON handed out are owned by the caller (free(), json_decref(), or the
 * matching _free function). A kft_store is not thread-safe: use one per
 * thread, or one per process, as many processes as you like.
 *
 * Timestamps are RFC 3339 in UTC with microseconds ("2026-01-02T03:04:05.123456Z").
 */
#ifndef KFT_LOCAL_STORE_H
#define KFT_LOCAL_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kftrainer/error.h"

/* The schema version this build writes and understands. */
#define KFT_STORE_SCHEMA_VERSION 7

/* The database file's name inside the state directory. */
#define KFT_STORE_DB_NAME "state.db"

typedef struct kft_store kft_store;

/*
 * Opens (creating when missing) the store in state_dir: the directory and its
 * missing parents are created with mode 0700, the database file with 0600.
 * Applies pending schema migrations. On success *out is a new store the
 * caller closes with kft_store_close. Errors: KFT_EIO (cannot create or open,
 * or the file is not a SQLite database), KFT_EVERSION (written by a newer
 * kftrainer), KFT_ENOMEM.
 */
int kft_store_open(const char *state_dir, kft_store **out, kft_error *err);

/* Closes the store, rolling back an open transaction. s may be NULL. */
void kft_store_close(kft_store *s);

/*
 * Where the store reports what it passed over instead of failing: a job
 * whose stored JSON cannot be read is left out of kft_store_job_list (one
 * damaged row must not make every job unreadable), and fn(ctx, message)
 * names it ("skipping TrainJob NS/NAME: why"). fn NULL (the default): the
 * row is skipped silently. message is borrowed for the call.
 */
typedef void (*kft_store_warn_fn)(void *ctx, const char *message);
void kft_store_set_warn(kft_store *s, kft_store_warn_fn fn, void *ctx);

/*
 * For a short-lived connection: its close leaves committed changes in the
 * write-ahead log instead of checkpointing them into the database file
 * (which costs two fdatasyncs when it is the last connection). They stay
 * readable by everyone and survive a crash; a later checkpoint (automatic as
 * the log grows, or another connection's close) flushes them, so only a power
 * cut before then can lose them. Errors: KFT_EIO.
 */
int kft_store_skip_close_checkpoint(kft_store *s, kft_error *err);

/* Prepares into s's statement cache the statements a running job's
 * supervisor writes with (its transactions, pods, events, status and
 * start/finish times), writing nothing: a process about to write them pays
 * their parse now rather than when it writes (the local supervisor, while
 * it waits for its job's go, instead of while its pods start). With stop,
 * asks stop(ctx) before each statement and returns when it says true (the
 * rest are prepared when first used). A statement that does not prepare is
 * left to fail its write. */
void kft_store_prepare_job_writes(kft_store *s, bool (*stop)(void *ctx), void *ctx);

/*
 * The default state directory: $KFTRAINER_STATE_DIR, else
 * $XDG_STATE_HOME/kftrainer, else $HOME/.local/state/kftrainer (only absolute
 * values of the variables count). Returns a malloc'd string the caller
 * frees, or NULL when none can be determined (no usable HOME) or on ENOMEM.
 */
char *kft_store_default_dir(void);

/*
 * Records a new TrainJob. trainjob must have metadata.name; a missing
 * metadata.namespace means "default". objects is NULL or an array of the
 * objects built for the job, kept in array order. Neither is modified or
 * stolen. On success *uid_out (when uid_out is non-NULL) receives the new
 * RFC 4122 v4 uid, malloc'd, caller frees. Errors: KFT_EINVAL
 * (trainjobs.trainer.kubeflow.org "NAME" already exists, or a malformed
 * argument), KFT_ELIMIT (JSON larger than KFT_STORE_MAX_JSON), KFT_EIO.
 */
#define KFT_STORE_MAX_JSON (16u * 1024u * 1024u)
int kft_store_job_create(kft_store *s, const json_t *trainjob, const json_t *objects,
                         char **uid_out, kft_error *err);

/*
 * The stored TrainJob with metadata.uid, metadata.namespace and
 * metadata.creationTimestamp (seconds precision, as Kubernetes prints it) set,
 * metadata.deletionTimestamp (likewise) while a delete is under way,
 * spec.suspend reflecting the current suspend flag, and "status" when one was
 * stored. *out is a new reference the caller json_decref()s.
 * Errors: KFT_ENOTFOUND, KFT_EIO, KFT_EPARSE (stored JSON damaged).
 */
int kft_store_job_get(kft_store *s, const char *ns, const char *name, json_t **out, kft_error *err);

/*
 * All jobs in ns (NULL: every namespace) as an array of what
 * kft_store_job_get returns, sorted by namespace then name; a job whose
 * stored JSON is damaged is left out and reported to the warn hook
 * (kft_store_set_warn). *out is a new reference (possibly an empty array).
 * Errors: KFT_EIO, KFT_ENOMEM.
 */
int kft_store_job_list(kft_store *s, const char *ns, json_t **out, kft_error *err);

/* Replaces the job's status block (status is borrowed; NULL clears it).
 * Errors: KFT_ENOTFOUND, KFT_ELIMIT, KFT_EIO. */
int kft_store_job_set_status(kft_store *s, const char *ns, const char *name, const json_t *status,
                             kft_error *err);

/* Sets the suspend flag. Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_job_set_suspend(kft_store *s, const char *ns, const char *name, bool suspend,
                              kft_error *err);

/* Which lifecycle time kft_store_job_mark sets. */
typedef enum kft_job_time { KFT_JOB_STARTED, KFT_JOB_FINISHED } kft_job_time;

/* Sets the job's started or finished time to now, unless already set
 * (the first start and the first finish are the ones that count).
 * Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_job_mark(kft_store *s, const char *ns, const char *name, kft_job_time which,
                       kft_error *err);

/* Lifecycle facts of a job not carried in the TrainJob JSON. Strings are
 * malloc'd or NULL when unset; release with kft_job_info_free. */
typedef struct kft_job_info {
	char *uid;
	char *created, *started, *finished;
	char *runtime_name, *runtime_kind;
	bool suspended;
	char *deleting; /* when a delete began (kft_store_job_mark_deleting); NULL: none */
} kft_job_info;

/* Fills *info (overwritten, not freed first). Errors: KFT_ENOTFOUND, KFT_EIO,
 * KFT_ENOMEM (*info then holds nothing to free). */
int kft_store_job_info(kft_store *s, const char *ns, const char *name, kft_job_info *info,
                       kft_error *err);
/* Frees the strings of info and zeroes it. info may be NULL. */
void kft_job_info_free(kft_job_info *info);

/* Marks the job as being deleted (its deletionTimestamp): sets the time to
 * now unless already set. The job stays readable until kft_store_job_delete;
 * readers see metadata.deletionTimestamp. Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_job_mark_deleting(kft_store *s, const char *ns, const char *name, kft_error *err);

/* Removes the job with its objects, pod records and supervisor record.
 * Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_job_delete(kft_store *s, const char *ns, const char *name, kft_error *err);

/* The objects recorded at creation, in apply order, as a new array reference
 * the caller json_decref()s. Errors: KFT_ENOTFOUND, KFT_EIO, KFT_EPARSE. */
int kft_store_job_objects(kft_store *s, const char *ns, const char *name, json_t **out,
                          kft_error *err);

/*
 * One pod of one step ("dataset-initializer", "node", "launcher" ...).
 * state is "Pending", "Running", "Succeeded" or "Failed". String members may
 * be NULL (stored as unset). pid, exit_code and signal are 0 when unknown.
 * start_ticks is the process's start time (field 22 of /proc/PID/stat), so a
 * later reader can tell the pod's process from another that reused its pid
 * (0: unknown). reason is a CamelCase word ("Error", "StartError" ...) and
 * message a sentence saying why the pod ended; both NULL while it runs.
 */
typedef struct kft_pod_record {
	char *step;
	int index;
	char *state;
	int pid;
	int exit_code;
	int signal;
	int restarts;
	char *started, *finished, *log_path;
	long long start_ticks;
	char *reason, *message;
} kft_pod_record;

/* Inserts or replaces the record for (rec->step, rec->index) of a job; rec is
 * borrowed. Errors: KFT_ENOTFOUND (no such job), KFT_EINVAL (no step, a
 * negative index, or an unknown state), KFT_EIO. */
int kft_store_pod_upsert(kft_store *s, const char *ns, const char *job, const kft_pod_record *rec,
                         kft_error *err);

/* All pod records of a job ordered by step, then index. *recs is a malloc'd
 * array of *n records (NULL when *n is 0) released with kft_pod_records_free.
 * Errors: KFT_ENOTFOUND, KFT_EIO, KFT_ENOMEM. */
int kft_store_pods(kft_store *s, const char *ns, const char *job, kft_pod_record **recs, size_t *n,
                   kft_error *err);

/* Frees n records and their strings. recs may be NULL. */
void kft_pod_records_free(kft_pod_record *recs, size_t n);

/* Records the supervising process: its pid and its start time in clock ticks
 * since boot (field 22 of /proc/PID/stat), which tells a live supervisor from
 * a reused pid. pid 0 clears it. Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_set_supervisor(kft_store *s, const char *ns, const char *job, int pid,
                             long long start_time_ticks, kft_error *err);

/* Reads what kft_store_set_supervisor recorded; both are 0 when none.
 * Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_get_supervisor(kft_store *s, const char *ns, const char *job, int *pid,
                             long long *start_time_ticks, kft_error *err);

/*
 * Events: what happened to a job's objects, each a core/v1 Event as the
 * cluster's controllers and kubelet would record it (involvedObject, type,
 * reason, message, timestamps), kept in the order recorded and removed with
 * the job. The store does not look inside an event beyond keeping it.
 */

/* Appends event (borrowed) to job ns/job's events. Errors: KFT_ENOTFOUND,
 * KFT_EINVAL (not an object), KFT_ELIMIT, KFT_EIO. */
int kft_store_event_add(kft_store *s, const char *ns, const char *job, const json_t *event,
                        kft_error *err);

/* The events of job ns/job in the order recorded, or, with job NULL, those of
 * every job in ns, job by job. *out is a new array reference the caller
 * json_decref()s. Errors: KFT_ENOTFOUND (a named job that does not exist),
 * KFT_EIO, KFT_EPARSE, KFT_ENOMEM. */
int kft_store_events(kft_store *s, const char *ns, const char *job, json_t **out, kft_error *err);

/*
 * Reports: the history of what a job's training reported (each TrainerStatus
 * the supervisor recorded, in order), for charts of progress and metrics
 * over time. At most KFT_STORE_REPORTS_MAX are kept per job (the oldest go
 * first); removed with the job.
 */
#define KFT_STORE_REPORTS_MAX 1000

/* Appends report (a TrainerStatus object, borrowed) to job ns/job's history,
 * stamped now. Errors: KFT_ENOTFOUND, KFT_EINVAL (not an object),
 * KFT_ELIMIT, KFT_EIO. */
int kft_store_report_add(kft_store *s, const char *ns, const char *job, const json_t *report,
                         kft_error *err);

/* Job ns/job's reports with an id greater than `after` (0: all), oldest
 * first, as a new array of {"id": N, "recorded": TIME, "trainerStatus": {...}}
 * the caller json_decref()s; ids grow, so a reader polls with the last id it
 * saw. Errors: KFT_ENOTFOUND, KFT_EIO, KFT_EPARSE, KFT_ENOMEM. */
int kft_store_reports(kft_store *s, const char *ns, const char *job, long long after, json_t **out,
                      kft_error *err);

/*
 * Groups several calls into one transaction. kft_store_begin takes the write
 * lock at once (BEGIN IMMEDIATE), waiting for other writers up to the busy
 * timeout, so a read-modify-write sequence cannot interleave with another
 * process's. Transactions do not nest: a second begin gives KFT_EINVAL.
 * kft_store_commit on failure leaves the transaction rolled back.
 * kft_store_rollback is a no-op outside a transaction.
 */
int kft_store_begin(kft_store *s, kft_error *err);
int kft_store_commit(kft_store *s, kft_error *err);
void kft_store_rollback(kft_store *s);

/* Replaces the objects recorded for a job with `objects` (an array, kept in
 * order; borrowed). Used by a submitter that must know the job's uid before
 * it can build them: create with NULL objects and set them in the same
 * transaction. Errors: KFT_ENOTFOUND, KFT_EINVAL, KFT_ELIMIT, KFT_EIO. */
int kft_store_job_set_objects(kft_store *s, const char *ns, const char *name, const json_t *objects,
                              kft_error *err);

/* Records what the job's processes inherit besides their pod spec: the
 * default working directory (NULL: unset) and the base environment, an array
 * of "K=V" strings (NULL: unset). Both borrowed. Errors: KFT_ENOTFOUND,
 * KFT_EINVAL (base_env not an array), KFT_ELIMIT, KFT_EIO. */
int kft_store_job_set_exec(kft_store *s, const char *ns, const char *name, const char *workdir,
                           const json_t *base_env, kft_error *err);

/* Reads them back: *workdir is malloc'd (caller frees) and *base_env a new
 * array reference (caller json_decref()s); each NULL when unset (a job
 * recorded by schema version 1). Errors: KFT_ENOTFOUND, KFT_EIO,
 * KFT_EPARSE, KFT_ENOMEM. */
int kft_store_job_get_exec(kft_store *s, const char *ns, const char *name, char **workdir,
                           json_t **base_env, kft_error *err);

/* Records the plugin files (an array of absolute paths, borrowed; NULL:
 * none) the job's framework loaded at submit, for its supervisor to load
 * the same. Errors: KFT_ENOTFOUND, KFT_EINVAL (not an array), KFT_ELIMIT,
 * KFT_EIO. */
int kft_store_job_set_plugins(kft_store *s, const char *ns, const char *name, const json_t *plugins,
                              kft_error *err);

/* Reads them back: *plugins is a new array reference (caller json_decref()s),
 * or NULL when none were recorded. Errors: KFT_ENOTFOUND, KFT_EIO,
 * KFT_EPARSE, KFT_ENOMEM. */
int kft_store_job_get_plugins(kft_store *s, const char *ns, const char *name, json_t **plugins,
                              kft_error *err);

/* Removes every pod record of a job (a resumed job starts its pods afresh).
 * Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_store_pods_clear(kft_store *s, const char *ns, const char *job, kft_error *err);

#endif
