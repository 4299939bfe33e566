/*
 * optstore.h - OptimizationJobs in the local store (internal to the local
 * backend and its CLI).
 *
 * One row per OptimizationJob, keyed by namespace and name: the object as
 * submitted (defaulted), its status (upstream's conditions and result plus
 * status.trials, src/hpo/hpo.h), what its trials inherit, where its
 * supervisor has read each trial's output, and the supervisor's identity;
 * beside it its Events and the metric values its trials reported (for the
 * dashboard's charts). Its trials are TrainJobs of the jobs table.
 *
 * Conventions as store.h: 0 or a negative kft_status, err filled; a
 * missing OptimizationJob is KFT_ENOTFOUND in kubectl's words
 * (optimizationjobs.trainer.kubeflow.org "NAME" not found); strings and
 * JSON passed in are borrowed, those handed out owned by the caller.
 */
#ifndef KFT_LOCAL_OPTSTORE_H
#define KFT_LOCAL_OPTSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "local/store.h"

/* What every trial of a search inherits, fixed at submit. */
typedef struct kft_opt_exec {
	json_t *runtime;  /* the runtime the template references, as resolved at submit */
	json_t *plugins;  /* plugin files (array of paths) or NULL */
	char *workdir;    /* default working directory, or NULL */
	json_t *base_env; /* "K=V" strings, or NULL */
	bool job_workdir; /* each trial in a working directory of its own */
	int64_t seed;     /* the spec's seed, or one drawn at submit */
} kft_opt_exec;

void kft_opt_exec_free(kft_opt_exec *e);

/* Records a new OptimizationJob (metadata.name set; namespace "default"
 * when unset; status kept when present) and what its trials inherit.
 * *uid_out (may be NULL) receives its new uid, malloc'd. Errors: KFT_EINVAL
 * (already exists, kubectl's wording), KFT_ELIMIT, KFT_EIO. */
int kft_optstore_create(kft_store *s, const json_t *opt, const kft_opt_exec *exec, char **uid_out,
                        kft_error *err);

/* The OptimizationJob with metadata.uid, namespace, creationTimestamp,
 * deletionTimestamp while being deleted, and status. *out is a new
 * reference. Errors: KFT_ENOTFOUND, KFT_EPARSE, KFT_EIO. */
int kft_optstore_get(kft_store *s, const char *ns, const char *name, json_t **out, kft_error *err);

/* Every OptimizationJob in ns (NULL: all), by namespace then name; a row
 * that cannot be read is passed over and named to the warn hook. */
int kft_optstore_list(kft_store *s, const char *ns, json_t **out, kft_error *err);

/* What the trials inherit (fills *out; release with kft_opt_exec_free). */
int kft_optstore_exec(kft_store *s, const char *ns, const char *name, kft_opt_exec *out,
                      kft_error *err);

/* Replaces the status and the read cursors (cursors NULL: unchanged);
 * finished sets the finish time unless set. Errors: KFT_ENOTFOUND,
 * KFT_ELIMIT, KFT_EIO. */
int kft_optstore_set_status(kft_store *s, const char *ns, const char *name, const json_t *status,
                            const json_t *cursors, bool finished, kft_error *err);

/* The read cursors ({trial: {"log": bytes, "report": id}}), a new
 * reference ({} when none). */
int kft_optstore_cursors(kft_store *s, const char *ns, const char *name, json_t **out,
                         kft_error *err);

/* The supervisor's pid and start ticks (0, 0: none), as
 * kft_store_set_supervisor / kft_store_get_supervisor for jobs. */
int kft_optstore_set_supervisor(kft_store *s, const char *ns, const char *name, int pid,
                                long long ticks, kft_error *err);
int kft_optstore_get_supervisor(kft_store *s, const char *ns, const char *name, int *pid,
                                long long *ticks, kft_error *err);

/* Marks it as being deleted (deletionTimestamp; kept when already set). */
int kft_optstore_mark_deleting(kft_store *s, const char *ns, const char *name, kft_error *err);

/* Removes it, its Events and observations, when its uid is still uid
 * (a new one of the same name is not touched: KFT_ENOTFOUND). */
int kft_optstore_delete(kft_store *s, const char *ns, const char *name, const char *uid,
                        kft_error *err);

/* Appends a core/v1 Event about it. */
int kft_optstore_event_add(kft_store *s, const char *ns, const char *name, const json_t *event,
                           kft_error *err);

/* Its Events in the order recorded, a new array reference. */
int kft_optstore_events(kft_store *s, const char *ns, const char *name, json_t **out,
                        kft_error *err);

/* The metric values a trial reported, at most KFT_OPTSTORE_OBSERVATIONS_MAX
 * per trial (the first ones: a chart of each trial's curve from its start;
 * min/max/latest in the status count every value). */
#define KFT_OPTSTORE_OBSERVATIONS_MAX 1000
int kft_optstore_observe(kft_store *s, const char *ns, const char *name, const char *trial,
                         const char *metric, const char *value, kft_error *err);

/* Observations with an id greater than after (0: all), oldest first, as a
 * new array of {"id", "trial", "metric", "value", "recorded"}. */
int kft_optstore_observations(kft_store *s, const char *ns, const char *name, long long after,
                              json_t **out, kft_error *err);

#endif
