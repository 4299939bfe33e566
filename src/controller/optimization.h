/*
 * optimization.h - the OptimizationJob controller (internal to
 * src/controller/): its decision as a pure function over JSON
 * (optplan.c), and the reconcile that reads the caches and writes what the
 * decision says (optimization.c).
 *
 * Upstream master defines the kind and has no controller for it yet; this
 * one follows the KEP (kubeflow/trainer#3552): trials are TrainJobs owned
 * by the OptimizationJob (deleting it deletes them), their values in the
 * trainer's env (KUBEFLOW_TRAINER_OPT_<NAME>) and an annotation, metrics
 * read from each trial's status.trainerStatus (what the status server
 * writes), and status.conditions (Created, Complete, Failed) and
 * status.result with the best trial. What the status also keeps,
 * status.trials (src/hpo/hpo.h), is what lets a restarted controller carry
 * on: trial names are deterministic, so a trial created just before a
 * crash is found and adopted, never created twice.
 */
#ifndef KFT_CONTROLLER_OPTIMIZATION_H
#define KFT_CONTROLLER_OPTIMIZATION_H

#include <jansson.h>
#include <stdint.h>

#include "kftrainer/error.h"

#define KFT_CM_OPTIMIZATION_CONTROLLER "optimizationjob_controller"
#define KFT_CM_OPTIMIZATION_RECORDER   "trainer-optimizationjob-controller"
/* An index of the TrainJob informer: trials by "NAMESPACE/OPTIMIZATIONJOB". */
#define KFT_CM_INDEX_OPTIMIZATION "optimization"

/* What one reconcile of an OptimizationJob does. */
typedef struct kft_cm_opt_plan {
	json_t *status;           /* the status to write (new reference), NULL: unchanged */
	json_t *create;           /* TrainJobs to create, in order (array) */
	json_t *stop;             /* names of trial TrainJobs to suspend (array) */
	json_t *events;           /* [{"type", "reason", "message"}] to record */
	int64_t requeue_after_ms; /* > 0: look again then (a trial not in the cache yet) */
} kft_cm_opt_plan;

/*
 * The decision for OptimizationJob opt (as cached) given jobs, the TrainJobs
 * labelled as its trials (any order), at time now (RFC 3339): trials whose
 * TrainJob is missing from status.trials are adopted; each running trial's
 * new report (status.trainerStatus, told apart by its lastUpdatedTime and
 * metrics) is folded in, and the median rule may stop it; an ended TrainJob
 * ends its trial; then src/hpo's plan says which trials to create (each a
 * TrainJob owned by opt, named as kft_hpo_trial_name) or that the search is
 * over (running trials stopped, Complete or Failed set). seed is the
 * spec's, or, without one, fresh randomness of the caller's for this
 * reconcile. Errors: KFT_EINVAL (the spec cannot be read: the caller
 * records it), KFT_ENOMEM. Free with kft_cm_opt_plan_free.
 */
int kft_cm_optimization_plan(const json_t *opt, const json_t *jobs, const char *now, int64_t seed,
                             kft_cm_opt_plan *out, kft_error *err);
void kft_cm_opt_plan_free(kft_cm_opt_plan *p);

/* The index key of a TrainJob that is a trial ("NS/OPTIMIZATIONJOB" from
 * its KFT_HPO_LABEL_JOB label) into buf; -1 when it is none. */
int kft_cm_optimization_key(const json_t *trainjob, char *buf, size_t size);

#endif
