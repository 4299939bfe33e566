/*
 * hpo.h - hyperparameter search (internal): the decisions of an
 * OptimizationJob, as pure functions over its JSON.
 *
 * An OptimizationJob (trainer.kubeflow.org/v1alpha1, upstream master's
 * kind, kubeflow/trainer#3552) names an objective, a search space, an
 * algorithm and limits, and a TrainJob template; its trials are TrainJobs.
 * Two drivers run it: the local engine's optimization supervisor
 * (src/local/optimizer.c) and the controller manager's reconciler
 * (src/controller/optimization.c). Everything they must agree on lives
 * here, with no I/O: reading the spec, choosing each trial's parameters
 * (random, grid, TPE), writing the trial's TrainJob (Katib's
 * ${trialParameters.NAME} substitution), reading metrics (Katib's StdOut
 * filter), folding them into per-trial min/max/latest, Katib's median-stop
 * rule, the next step (how many trials to start, whether the job is over)
 * and the best trial.
 *
 * The state is the OptimizationJob's status: upstream's conditions and
 * result, plus `trials` (a kftrainer extension, docs/api-schema.md), one
 * entry per trial:
 *
 *   {"name", "parameters": [{"name", "value"}], "state",
 *    "metrics": [{"name", "min", "max", "latest"}],
 *    "objectiveReports": N, "objectiveHead": ["v", ...], "medianStop": "v",
 *    "creationTimestamp", "completionTimestamp", "message", "lastReportTime"}
 *
 * so a restarted driver resumes from it, and every reader (CLI, SDK, UI)
 * reads one shape on both backends.
 *
 * Conventions: 0 or a negative kft_status with err filled (when non-NULL);
 * JSON handed out is a new reference; strings and JSON passed in are
 * borrowed. A kft_hpo_spec borrows from the OptimizationJob it was parsed
 * from, which must outlive it.
 */
#ifndef KFT_HPO_HPO_H
#define KFT_HPO_HPO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kftrainer/error.h"
#include "kftrainer/validation.h"

#define KFT_KIND_OPTIMIZATIONJOB     "OptimizationJob"
#define KFT_HPO_RESOURCE             "optimizationjob.trainer.kubeflow.org"
#define KFT_HPO_RESOURCES            "optimizationjobs.trainer.kubeflow.org"
#define KFT_HPO_CONTROLLER_COMPONENT "optimizationjob-controller"

/* What upstream's OptimizationJob does not say, as annotations on it (so
 * the object stays valid against upstream's CRD) and as labels and
 * annotations on each trial TrainJob. */
#define KFT_HPO_PREFIX                "optimizer.kftrainer.dev/"
#define KFT_HPO_ANN_ALGORITHM         KFT_HPO_PREFIX "algorithm"
#define KFT_HPO_ANN_ALGORITHM_SETTING KFT_HPO_PREFIX "algorithm-settings"
#define KFT_HPO_ANN_EARLY_STOPPING    KFT_HPO_PREFIX "early-stopping"
#define KFT_HPO_ANN_EARLY_SETTINGS    KFT_HPO_PREFIX "early-stopping-settings"
#define KFT_HPO_ANN_MAX_FAILED        KFT_HPO_PREFIX "max-failed-trials"
#define KFT_HPO_ANN_METRICS           KFT_HPO_PREFIX "additional-metrics"
#define KFT_HPO_LABEL_JOB             KFT_HPO_PREFIX "optimization-job"
#define KFT_HPO_LABEL_TRIAL           KFT_HPO_PREFIX "trial"
#define KFT_HPO_ANN_PARAMETERS        KFT_HPO_PREFIX "parameters"

/* Katib's placeholder (consts.TrialTemplateParamReplaceFormat) and the
 * upstream KEP's environment variable prefix. */
#define KFT_HPO_PLACEHOLDER "${trialParameters."
#define KFT_HPO_ENV_PREFIX  "KUBEFLOW_TRAINER_OPT_"

/* Trial states (Katib's trial conditions, and Pending: parameters chosen,
 * TrainJob not created yet, e.g. waiting for free GPUs). */
#define KFT_HPO_PENDING       "Pending"
#define KFT_HPO_RUNNING       "Running"
#define KFT_HPO_SUCCEEDED     "Succeeded"
#define KFT_HPO_FAILED        "Failed"
#define KFT_HPO_EARLY_STOPPED "EarlyStopped"
#define KFT_HPO_UNAVAILABLE   "MetricsUnavailable"
#define KFT_HPO_KILLED        "Killed"

/* The OptimizationJob's conditions (the KEP's Created, Complete, Failed). */
#define KFT_HPO_CONDITION_CREATED  "Created"
#define KFT_HPO_REASON_CREATED     "OptimizationJobCreated"
#define KFT_HPO_REASON_MAX_TRIALS  "MaxTrialsReached"
#define KFT_HPO_REASON_MAX_FAILED  "MaxFailedTrialsReached"
#define KFT_HPO_REASON_CREATE_FAIL "TrainJobsCreationFailed"

#define KFT_HPO_MAX_PARAMS  100 /* spec.parameters maxItems */
#define KFT_HPO_MAX_CHOICES 100 /* categorical.choices maxItems */
#define KFT_HPO_VALUE_MAX   64  /* a ParameterAssignment value's maxLength */

typedef enum kft_hpo_dist {
	KFT_HPO_UNIFORM,
	KFT_HPO_LOG_UNIFORM,
	KFT_HPO_CATEGORICAL,
} kft_hpo_dist;

typedef struct kft_hpo_param {
	const char *name; /* borrowed */
	kft_hpo_dist dist;
	bool is_int;           /* type: Int (uniform and logUniform) */
	double min, max;       /* uniform and logUniform */
	const json_t *choices; /* categorical: the array of strings, borrowed */
} kft_hpo_param;

typedef enum kft_hpo_algorithm {
	KFT_HPO_RANDOM,
	KFT_HPO_GRID,
	KFT_HPO_TPE,
} kft_hpo_algorithm;

typedef struct kft_hpo_spec {
	const char *name, *ns; /* metadata; ns "default" when unset */
	const char *objective; /* the objective metric */
	bool maximize;
	const char **metrics; /* objective first, then the additional metrics */
	size_t n_metrics;
	char *metrics_text; /* private: the copy the additional names point into */
	kft_hpo_param *params;
	size_t n_params;
	kft_hpo_algorithm algorithm;
	bool has_seed;
	int64_t seed;
	long long n_startup_trials, n_ei_candidates; /* TPE (Optuna's defaults 10, 24) */
	bool median_stop;
	long long min_trials_required, start_step; /* Katib's medianstop (3, 4) */
	long long num_trials, parallel_trials;
	long long max_failed;   /* -1: no limit (the SDK's max_failed_trials None) */
	const json_t *template; /* spec.trainJobTemplate */
} kft_hpo_spec;

/*
 * Reads an OptimizationJob the schema has accepted (kft_object_check) into
 * *spec, and the kftrainer annotations above. Errors name the field:
 * KFT_EINVAL for an unknown algorithm or setting, a setting out of range, a
 * bad metric list or limit, min >= max; KFT_ENOMEM. On error *spec holds
 * nothing to free. Release with kft_hpo_spec_free.
 */
int kft_hpo_spec_parse(const json_t *opt, kft_hpo_spec *spec, kft_error *err);
void kft_hpo_spec_free(kft_hpo_spec *spec);

/*
 * kftrainer's webhook checks of an OptimizationJob the schema accepted
 * (check.c; kft_object_check runs them): the annotations, every
 * placeholder of the template naming a parameter, Katib's grid rules. Each
 * problem is added to errs.
 */
void kft_hpo_validate(const json_t *opt, kft_field_errors *errs);

/*
 * An algorithm's settings as Katib takes them (name=value pairs), written in
 * an annotation as "name=value,name=value". Each entry of table names a
 * setting, its bounds and where its value goes (left alone when the text
 * does not name it). field names the annotation in errors; algorithm the
 * algorithm, in Katib's wording ("unknown setting x for algorithm
 * medianstop"). Returns 0 or KFT_EINVAL. text is fuzzed
 * (fuzz_hpo_settings).
 */
typedef struct kft_hpo_setting {
	const char *name;
	long long min, max;
	long long *value;
} kft_hpo_setting;
int kft_hpo_settings_parse(const char *text, const kft_hpo_setting *table, size_t n,
                           const char *field, const char *algorithm, kft_error *err);

/* ---- choosing parameters (sample.c, tpe.c, suggest.c) -------------------- */

/*
 * Trial `index`'s parameters drawn at random (uniform, log-uniform, or one
 * of the choices, each with equal chance), as a new array of
 * {"name", "value"}. The draw depends only on (seed, index), so a seeded
 * search is reproducible and a restarted driver draws the same trial again.
 * Values: a Float as the shortest text that reads back to the same double,
 * an Int as an integer, a choice as given. NULL on ENOMEM.
 */
json_t *kft_hpo_random(const kft_hpo_spec *spec, int64_t seed, uint64_t index);

/*
 * Katib's grid (pkg/suggestion/v1beta1/internal/search_space.py): Int
 * ranges min..max step 1, a Float needs a step (which upstream's API has
 * not: "Param NAME step is nil; ..."), choices as listed; numTrials larger
 * than the number of points is refused ("Max Trial Count: N > all possible
 * search combinations: M"). *count receives the number of points. Errors:
 * KFT_EINVAL.
 */
int kft_hpo_grid_count(const kft_hpo_spec *spec, uint64_t *count, kft_error *err);

/* The index-th point of the grid (index < count), the last parameter
 * varying fastest (itertools.product's order). NULL on ENOMEM. */
json_t *kft_hpo_grid(const kft_hpo_spec *spec, uint64_t index);

/*
 * Tree-structured Parzen Estimator (Optuna's univariate TPESampler, the
 * default of Katib's "tpe"): random for the first n_startup_trials trials
 * with an objective value; then, per parameter, n_ei_candidates draws from
 * the density of the best trials (the gamma(n) = min(ceil(0.1 n), 25)
 * best), keeping the one with the highest ratio of that density to the
 * density of the others. trials is status.trials. Deterministic in (seed,
 * index, the trials' values). NULL on ENOMEM.
 */
json_t *kft_hpo_tpe(const kft_hpo_spec *spec, const json_t *trials, int64_t seed, uint64_t index);

/* Trial index's parameters by the spec's algorithm. Errors: KFT_EINVAL
 * (grid: index past the last point), KFT_ENOMEM. */
int kft_hpo_suggest(const kft_hpo_spec *spec, const json_t *trials, int64_t seed, uint64_t index,
                    json_t **out, kft_error *err);

/* Writes v as the shortest decimal text that reads back to v ("0.001",
 * "1e-05", "3"), as Python's repr does (values.c). Returns buf. */
char *kft_hpo_format_double(double v, char buf[32]);

/* ---- trials and their TrainJobs (trial.c) -------------------------------- */

/* The name of trial `index` (0-based) of OptimizationJob opt_name:
 * "<opt_name>-<index+1>", the prefix cut so the whole is a DNS label of at
 * most 63 characters. Deterministic, so a driver that restarts after
 * creating a trial finds it instead of creating another. malloc'd; NULL
 * on ENOMEM. */
char *kft_hpo_trial_name(const char *opt_name, uint64_t index);

/*
 * The trial's TrainJob: spec.trainJobTemplate's spec and metadata with
 * every "${trialParameters.NAME}" in a string replaced by the parameter's
 * value (Katib's substitution, which the Kubeflow SDK relies on for
 * func_args), KUBEFLOW_TRAINER_OPT_<NAME> added to spec.trainer.env (the
 * upstream KEP's way), named trial_name in the OptimizationJob's namespace,
 * labelled KFT_HPO_LABEL_JOB/KFT_HPO_LABEL_TRIAL and annotated
 * KFT_HPO_ANN_PARAMETERS (the assignments as JSON). Errors: KFT_EINVAL (a
 * placeholder naming no parameter), KFT_ENOMEM.
 */
int kft_hpo_trial_job(const kft_hpo_spec *spec, const char *trial_name, uint64_t index,
                      const json_t *parameters, json_t **out, kft_error *err);

/* Checks every "${trialParameters.NAME}" of the template names a parameter;
 * KFT_EINVAL names the first that does not, with its field path. */
int kft_hpo_check_placeholders(const kft_hpo_spec *spec, kft_error *err);

/* A new status.trials entry: state Pending, the parameters (borrowed,
 * copied), medianStop when median_rule is non-NULL. NULL on ENOMEM. */
json_t *kft_hpo_trial_new(const char *name, const json_t *parameters, const char *median_rule,
                          const char *now);

/* The entry of status.trials named name (borrowed), or NULL. */
json_t *kft_hpo_trial_find(const json_t *status, const char *name);

/* ---- metrics (metrics.c) ------------------------------------------------- */

/*
 * Katib's StdOut metrics collector filter over one line of output, its
 * default (pkg/metricscollector/v1beta1/common DefaultFilter):
 *
 *     ([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)
 *
 * with Go's regexp semantics (ASCII \w, \s = [\t\n\f\r ], leftmost-first,
 * non-overlapping, as FindAllStringSubmatch): fn(ctx, name, value) for each
 * match, in order, name and value as (pointer, length) into line (the value
 * may be empty: "loss=nan" matches with ""). line need not be
 * NUL-terminated. Fuzzed (fuzz_hpo_stdout).
 */
typedef void (*kft_hpo_metric_fn)(void *ctx, const char *name, size_t name_len, const char *value,
                                  size_t value_len);
void kft_hpo_stdout_line(const char *line, size_t len, kft_hpo_metric_fn fn, void *ctx);

/* The trial's metrics entry for name ({"name", "min", "max", "latest"},
 * borrowed), or NULL (values.c). */
json_t *kft_hpo_trial_metric(const json_t *trial, const char *name);

/* Whether name is one of the spec's metrics (the objective or an
 * additional one). */
bool kft_hpo_is_metric(const kft_hpo_spec *spec, const char *name, size_t len);

/*
 * Folds one reported value of metric into the trial (a status.trials
 * entry), as Katib's trial controller does (getMetrics): min and max over
 * the values that parse as numbers, starting at the first such value,
 * latest the last value reported whatever it is; a metric nobody reported
 * stays "unavailable" (Katib's UnavailableMetricValue) until one is. Numeric
 * objective values are also counted, the first start_step of them kept
 * (objectiveHead, for the median rule). Returns 1 when the trial's
 * median-stop rule says stop (below), 0 otherwise, KFT_ENOMEM.
 */
int kft_hpo_observe(const kft_hpo_spec *spec, json_t *trial, const char *metric, const char *value);

/* ---- early stopping (medianstop.c) --------------------------------------- */

/*
 * Katib's medianstop (pkg/earlystopping/v1beta1/medianstop): for a trial
 * about to start, the rule value from the trials that succeeded so far: the
 * average of each one's first start_step objective values, averaged over
 * those trials (Katib's "median" is that mean), once at least
 * min_trials_required trials have succeeded. NULL when there are too few
 * (no rule) or the spec asks for no early stopping; else malloc'd text.
 */
char *kft_hpo_median_rule(const kft_hpo_spec *spec, const json_t *trials);

/*
 * The rule's verdict, as Katib's metrics collector applies it: once, when
 * the objective has been reported start_step times, with the best value so
 * far (the minimum when minimizing): stop when it is worse than the rule's
 * value (greater when minimizing, less when maximizing). 1 stop, 0 not.
 */
int kft_hpo_median_says_stop(const kft_hpo_spec *spec, const json_t *trial);

/* ---- the job (plan.c) ---------------------------------------------------- */

/* How a trial's TrainJob ended, for kft_hpo_trial_end. */
typedef enum kft_hpo_outcome {
	KFT_HPO_JOB_COMPLETE,     /* Complete=True */
	KFT_HPO_JOB_FAILED,       /* Failed=True */
	KFT_HPO_JOB_EARLY_STOP,   /* stopped by the median rule */
	KFT_HPO_JOB_KILLED,       /* stopped because the OptimizationJob ended */
	KFT_HPO_JOB_CREATE_ERROR, /* its TrainJob could not be created */
} kft_hpo_outcome;

/* Ends the trial: Succeeded (complete and the objective was reported),
 * MetricsUnavailable (complete without it), Failed, EarlyStopped or
 * Killed, with completionTimestamp now and message (may be NULL). spec
 * is read only for KFT_HPO_JOB_COMPLETE (may be NULL otherwise). Returns 0
 * or KFT_ENOMEM. */
int kft_hpo_trial_end(const kft_hpo_spec *spec, json_t *trial, kft_hpo_outcome outcome,
                      const char *message, const char *now);

/* Counts of status.trials by state. */
typedef struct kft_hpo_counts {
	size_t total, pending, running, succeeded, failed, early_stopped, unavailable, killed;
} kft_hpo_counts;
void kft_hpo_count(const json_t *status, kft_hpo_counts *c);

/* The next step: how many trials to create now, or that the job is over.
 * finish is NULL while it runs, else KFT_CONDITION_COMPLETE or
 * KFT_CONDITION_FAILED with reason and message set. */
typedef struct kft_hpo_plan {
	size_t create;
	const char *finish;
	const char *reason;
	char message[256];
	kft_hpo_counts counts;
} kft_hpo_plan;

/*
 * Katib's UpdateExperimentStatusCondition: failed trials (Failed and
 * MetricsUnavailable) reaching max-failed-trials (when set, and at least
 * one failed) fails the job; otherwise finished trials reaching numTrials
 * completes it; otherwise as many new trials as keep parallelTrials
 * running without starting more than numTrials in all.
 */
void kft_hpo_plan_next(const kft_hpo_spec *spec, const json_t *status, kft_hpo_plan *plan);

/*
 * Katib's best trial (experiment/util updateTrialsSummary): over every
 * trial, the objective by its strategy (min when minimizing, max when
 * maximizing, latest when neither is available); the first strictly best
 * numeric value wins; a value that is not a number makes that trial the
 * best for now, as Katib does. Index into status.trials, or -1.
 */
long kft_hpo_best(const kft_hpo_spec *spec, const json_t *status);

/* The objective value kft_hpo_best compares for one trial, or NULL when
 * it is unavailable (borrowed from the trial). */
const char *kft_hpo_objective_value(const kft_hpo_spec *spec, const json_t *trial);

/* The search's state in one word, for people (CLI, dashboard):
 * Terminating while a delete runs, Complete or Failed by its conditions,
 * Running while a trial runs or waits, else Created. Static string. */
const char *kft_hpo_phase(const json_t *opt);

/* Sets status.result (upstream's: trainJobName and parameters) from the
 * best trial, or removes it when there is none. Returns 0 or KFT_ENOMEM. */
int kft_hpo_set_result(const kft_hpo_spec *spec, json_t *status);

#endif
