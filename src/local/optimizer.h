/*
 * optimizer.h - OptimizationJobs on the local engine (internal; the CLI is
 * its caller, and through it the Python package's OptimizerClient).
 *
 * A search runs as a process of its own, like a TrainJob's supervisor:
 * detached (`kftrainer supervise --optimization NS NAME`), so closing the
 * shell or the notebook that started it does not stop it, and every state
 * it reaches is in the store (optstore.h), so any later process sees it.
 * It creates each trial as a TrainJob of this engine (kft_local_submit),
 * its parameters put into the template as the Kubeflow SDK and Katib do
 * (src/hpo/), at most parallelTrials at once; a trial that asks for more
 * GPUs than are free waits (Pending) instead of being refused. It reads
 * each running trial's metrics from the primary node's output (node-0,
 * Katib's StdOut filter) and from the reports it sends through the status
 * endpoint (update_trainjob_status), stops a trial the median rule
 * condemns, and ends at numTrials or max-failed-trials, stopping what
 * still runs.
 *
 * Conventions as local.h. A missing OptimizationJob is KFT_ENOTFOUND
 * (optimizationjobs.trainer.kubeflow.org "NAME" not found).
 */
#ifndef KFT_LOCAL_OPTIMIZER_H
#define KFT_LOCAL_OPTIMIZER_H

#include <jansson.h>
#include <stdbool.h>

#include "kftrainer/error.h"
#include "kftrainer/framework.h"
#include "local/local.h"

/* The hidden supervise verb's flag for an OptimizationJob's supervisor. */
#define KFT_LOCAL_OPTIMIZATION_FLAG "--optimization"

/* Why a trial's TrainJob was stopped (the Failed reason it ends with). */
#define KFT_LOCAL_REASON_EARLY_STOPPED "EarlyStopped"
#define KFT_LOCAL_REASON_SEARCH_ENDED  "OptimizationJobEnded"

/* What optimize was asked beyond the OptimizationJob. */
typedef struct kft_optimize_opts {
	const char *workdir;   /* trials' default working directory; NULL: the caller's */
	bool job_workdir;      /* each trial in a directory of its own (train --job-workdir) */
	char *const *base_env; /* as kft_submit_opts.base_env */
	const json_t *plugins; /* plugin files fw loaded (array of paths) or NULL */
} kft_optimize_opts;

/*
 * Submits an OptimizationJob the caller has checked (kft_object_check,
 * which runs kftrainer's checks too) whose template references `runtime`
 * (resolved and checked by the caller). A missing metadata.name is
 * generated as for a TrainJob. Trial 0's TrainJob is built and checked as
 * `train` would check it, so a template that cannot make a valid TrainJob
 * is refused now, naming the field, rather than failing every trial. On
 * success the search is stored, its supervisor started and *name_out
 * (may be NULL) set, malloc'd. On failure nothing is stored and nothing
 * runs. Errors: KFT_EINVAL, KFT_EIO, KFT_ENOMEM.
 */
int kft_local_optimize(kft_local *l, const kft_framework *fw, const json_t *opt,
                       const json_t *runtime, const kft_optimize_opts *opts, char **name_out,
                       kft_error *err);

/* The OptimizationJob with its status (status.trials, src/hpo/hpo.h), after
 * checking that a search still running has its supervisor: one found without
 * it is marked Failed (reason SupervisorLost) and its running trials are
 * stopped. *out is a new reference. */
int kft_local_optimization_get(kft_local *l, const char *ns, const char *name, json_t **out,
                               kft_error *err);

/* Every OptimizationJob in ns (NULL: every namespace), each as _get. */
int kft_local_optimization_list(kft_local *l, const char *ns, json_t **out, kft_error *err);

/* Stops the search's supervisor, deletes every trial TrainJob it made (its
 * label, KFT_HPO_LABEL_JOB), its directory and its rows. Run again, an
 * interrupted delete finishes. */
int kft_local_optimization_delete(kft_local *l, const char *ns, const char *name, kft_error *err);

/* Its Events as a v1 EventList (*out a new reference). */
int kft_local_optimization_events(kft_local *l, const char *ns, const char *name, json_t **out,
                                  kft_error *err);

/* The supervisor's body (the hidden verb): runs the search until it ends
 * or is deleted. Not for other callers. */
int kft_local_optimization_supervise(const char *state_dir, const char *ns, const char *name,
                                     kft_error *err);

/* <state_dir>/optimizations/<ns>/<name>: the supervisor's log. malloc'd. */
char *kft_local_optimization_dir(const char *state_dir, const char *ns, const char *name);

/* Checks a trial's TrainJob as `train` checks one (defaults, schema,
 * metadata, env names, runtime resolution against `runtime`, the
 * plugins' CustomValidation), replacing *job with the defaulted object.
 * KFT_EINVAL names the first problem. (optimizer.c; the supervisor checks
 * every trial the same way.) */
int kft_local_trial_check(const kft_framework *fw, const json_t *runtime, json_t **job,
                          kft_error *err);

/* Whether a status.trials entry is unfinished (Running or Pending); a
 * Running one's TrainJob is stopped first (Failed, reason
 * KFT_LOCAL_REASON_SEARCH_ENDED, message why). The caller then ends the
 * entry Killed. (optimizer.c; the supervisor's end and a lost supervisor.) */
bool kft_local_trial_stop(kft_local *l, const char *ns, const json_t *trial, const char *why);

#endif
