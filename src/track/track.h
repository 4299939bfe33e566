/*
 * track.h - experiment tracking and model hand-off, the pure half
 * (internal): what an MLflow run of a TrainJob or an OptimizationJob says,
 * which metrics a progress report becomes, which end status a finished job
 * gives its run, how long to wait before the next try, and where a model
 * goes. No I/O: plan.c (run descriptions, metrics, statuses, back-off) and
 * dest.c (export destinations) decide; mlflow.c, tracker.c and export.c
 * act on the decisions, in the local supervisor and in the controller
 * alike. Fuzzed: tests/fuzz/fuzz_track_plan.c.
 *
 * Ownership: every kft_track_* output is the caller's, freed with the
 * matching _free (json_t members with json_decref). Errors: KFT_ENOMEM, and
 * KFT_EINVAL naming the field for what a TrainJob declares wrongly.
 */
#ifndef KFT_TRACK_TRACK_H
#define KFT_TRACK_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "framework/conditions.h"
#include "kftrainer/error.h"
#include "kftrainer/validation.h"

/* ---- what a TrainJob declares (annotations in kftrainer's own domain) ------ */

#define KFT_TRACK_PREFIX "tracking.kftrainer.dev/"
/* The MLflow experiment of the job's run (else the tracker's default:
 * MLFLOW_EXPERIMENT_NAME where it runs, else MLflow's "Default"). */
#define KFT_TRACK_ANN_EXPERIMENT KFT_TRACK_PREFIX "experiment"
/* "false": this job is not tracked even where a tracking URI is set. */
#define KFT_TRACK_ANN_ENABLED KFT_TRACK_PREFIX "enabled"
/* A JSON object of more run parameters (the SDK writes CustomTrainer's
 * func_args here). */
#define KFT_TRACK_ANN_PARAMS KFT_TRACK_PREFIX "params"
/* "true": the job's logs are uploaded as artifacts of its run at the end. */
#define KFT_TRACK_ANN_LOGS KFT_TRACK_PREFIX "log-artifacts"
/* Where the trained model goes when the job completes, and from where (a
 * path as the trainer's node pod sees it; default KFT_TRACK_DEFAULT_FROM).
 * The Secret whose keys become the exporter's environment (credentials). */
#define KFT_TRACK_ANN_EXPORT_TO     KFT_TRACK_PREFIX "export-to"
#define KFT_TRACK_ANN_EXPORT_FROM   KFT_TRACK_PREFIX "export-from"
#define KFT_TRACK_ANN_EXPORT_SECRET KFT_TRACK_PREFIX "export-secret"
#define KFT_TRACK_DEFAULT_FROM      "/workspace/output"
/* Once exported to s3:// or file://, the files become a version (named
 * after the TrainJob) of this registered model in the Kubeflow Model
 * Registry that KFTRAINER_MODEL_REGISTRY_URL names (modelreg.h). */
#define KFT_TRACK_ANN_REGISTER_TO KFT_TRACK_PREFIX "register-to"

/* hpo's labels and annotation on a trial TrainJob (src/hpo/hpo.h), read
 * here by value so tracking needs no part of the search. */
#define KFT_TRACK_HPO_LABEL_JOB   "optimizer.kftrainer.dev/optimization-job"
#define KFT_TRACK_HPO_LABEL_TRIAL "optimizer.kftrainer.dev/trial"
#define KFT_TRACK_HPO_ANN_PARAMS  "optimizer.kftrainer.dev/parameters"

/* The condition a TrainJob with export-to carries once it completed. */
#define KFT_TRACK_CONDITION_EXPORTED KFT_CONDITION_MODEL_EXPORTED
#define KFT_TRACK_REASON_EXPORTING   "Exporting"
#define KFT_TRACK_REASON_EXPORTED    "Exported"
#define KFT_TRACK_REASON_FAILED      "ExportFailed"

/* The run tags kftrainer sets; a run is found again by KFT_TRACK_TAG_UID. */
#define KFT_TRACK_TAG_UID       "kftrainer.uid"
#define KFT_TRACK_TAG_KIND      "kftrainer.kind"
#define KFT_TRACK_TAG_NAMESPACE "kftrainer.namespace"
#define KFT_TRACK_TAG_NAME      "kftrainer.name"
#define KFT_TRACK_TAG_RUNTIME   "kftrainer.runtime"
#define KFT_TRACK_TAG_PARENT    "mlflow.parentRunId"

/* MLflow's limits (mlflow/utils/validation.py): log-batch entries, the key
 * and value lengths a server accepts. Longer values are cut, never refused. */
#define KFT_TRACK_BATCH_METRICS 1000
#define KFT_TRACK_BATCH_PARAMS  100
#define KFT_TRACK_BATCH_TAGS    100
#define KFT_TRACK_KEY_MAX       250
#define KFT_TRACK_PARAM_MAX     6000
#define KFT_TRACK_TAG_MAX       8000

/* ---- checks (check.c) -------------------------------------------------------- */

/* The tracking annotations of a TrainJob as field errors (kft_object_check,
 * so validate, train and the webhook refuse alike): enabled and
 * log-artifacts "true"/"false", export-to a destination dest.c takes,
 * export-from an absolute path, params a JSON object. */
void kft_track_validate(const json_t *trainjob, kft_field_errors *errs);

/* ---- runs ------------------------------------------------------------------ */

/* What an MLflow run of one job says from the start. */
typedef struct kft_track_run {
	char *uid;        /* metadata.uid: the run is found again by it */
	char *experiment; /* experiment name */
	char *name;       /* the run's name: the object's name */
	json_t *tags;     /* [{"key","value"}], MLflow's RunTag list */
	json_t *params;   /* [{"key","value"}], MLflow's Param list */
	/* A trial's search: "NAMESPACE/NAME" of the OptimizationJob whose run is
	 * this run's parent (tag mlflow.parentRunId), NULL for other jobs. */
	char *parent;
	bool log_artifacts; /* tracking.kftrainer.dev/log-artifacts: "true" */
} kft_track_run;

/* Whether obj (a TrainJob or OptimizationJob) wants a run: not when
 * tracking.kftrainer.dev/enabled is "false". */
bool kft_track_wanted(const json_t *obj);

/*
 * The run of a TrainJob (borrowed): uid, name, namespace and runtime as
 * tags; as parameters the runtime, numNodes, numProcPerNode, the image, the
 * command and args (each "key=value" or "--key=value" argument its own
 * parameter, the rest as "args"), a trial's assignments and the params
 * annotation's members. default_experiment (may be NULL) is used when the
 * job names none. KFT_EINVAL names a field that cannot be read (no uid or
 * name, a params annotation that is not a JSON object).
 */
int kft_track_run_of_trainjob(const json_t *trainjob, const char *default_experiment,
                              kft_track_run *out, kft_error *err);

/* The parent run of an OptimizationJob's trials: its parameters are the
 * search's (objective, algorithm, trial counts, the search space as
 * "space.NAME"). */
int kft_track_run_of_search(const json_t *optjob, const char *default_experiment,
                            kft_track_run *out, kft_error *err);

void kft_track_run_free(kft_track_run *r);

/* The key a search's parent run is tagged with (KFT_TRACK_TAG_UID's value
 * for it): "search:NAMESPACE/NAME", so a trial names it from its label. */
char *kft_track_search_key(const char *ns, const char *name);

/* ---- metrics --------------------------------------------------------------- */

/*
 * The MLflow metrics of one progress report (a TrainerStatus, borrowed),
 * appended to `metrics` (an array of {"key","value","timestamp","step"}):
 * every metric whose value is a number, progressPercentage and
 * estimatedRemainingSeconds. The step is the report's own "step" metric
 * when it is a whole number (torchtune's status logger sends one), else
 * `seq` (the report's place in the job, from 1). time_ms stamps them.
 * Returns the number appended, or KFT_ENOMEM.
 */
int kft_track_report_metrics(const json_t *trainer_status, int64_t time_ms, int64_t seq,
                             json_t *metrics);

/* ---- end status ------------------------------------------------------------ */

/* MLflow's RunStatus for a job's run: "FINISHED" (Complete), "FAILED"
 * (Failed), "KILLED" when deleted = true and neither, NULL while it runs. */
const char *kft_track_end_status(const json_t *trainjob, bool deleted);

/* ---- back-off -------------------------------------------------------------- */

/* The wait before try number `attempt` (1: the first retry) of a request to
 * an unavailable server: 1 s doubling to at most max_ms, with the upper
 * quarter jittered by `jitter` (0..1). */
int64_t kft_track_backoff_ms(int attempt, int64_t max_ms, double jitter);

/* ---- export destinations (dest.c) ------------------------------------------ */

typedef enum kft_track_dest_kind {
	KFT_DEST_S3,     /* s3://BUCKET[/PREFIX] */
	KFT_DEST_FILE,   /* file:///ABSOLUTE/DIR */
	KFT_DEST_MLFLOW, /* models:/NAME: a new version of a registered model */
} kft_track_dest_kind;

typedef struct kft_track_dest {
	kft_track_dest_kind kind;
	char *bucket; /* S3 */
	char *path;   /* S3: the key prefix without trailing "/" ("" at the root);
	               * FILE: the directory; MLFLOW: the registered model's name */
} kft_track_dest;

/* Reads an export-to value. KFT_EINVAL names the annotation and says which
 * forms are accepted. */
int kft_track_dest_parse(const char *uri, kft_track_dest *out, kft_error *err);
void kft_track_dest_free(kft_track_dest *d);

/* The object key of one file of the exported tree under an S3 destination:
 * PREFIX/REL (REL alone at the root). Caller frees; NULL on ENOMEM. */
char *kft_track_dest_key(const kft_track_dest *d, const char *rel);

/* ---- the export Job on a cluster (exportjob.c) ---------------------------- */

#define KFT_TRACK_EXPORT_JOB_SUFFIX   "-model-export"
#define KFT_TRACK_EXPORT_CONTAINER    "model-exporter"
#define KFT_TRACK_LABEL_EXPORT        KFT_TRACK_PREFIX "export"
#define KFT_TRACK_LABEL_TRAINJOB      "trainer.kubeflow.org/trainjob-name"
#define KFT_TRACK_EXPORT_TRAINJOB_ENV "KFTRAINER_EXPORT_TRAINJOB"
/* Held on a TrainJob from the export's start until it succeeded (or its
 * export-to annotation is removed): its output outlives no export. */
#define KFT_TRACK_FINALIZER KFT_TRACK_PREFIX "export"

/* What the controller's configuration gives the Job (borrowed). */
typedef struct kft_track_export_cfg {
	const char *image;                     /* runs kftrainer-export; required */
	const char *tracking_uri, *experiment; /* NULL: none */
} kft_track_export_cfg;

/* TRAINJOB-model-export, cut to 63 characters. Caller frees. */
char *kft_track_export_job_name(const char *trainjob);

/* The batch/v1 Job exporting tj's model (tj and its JobSet borrowed): owned
 * by tj, its pod mounting what the trainer's first node mounts (volumes,
 * the JobSet's claims), running kftrainer-export --from FROM --to TO.
 * Errors: KFT_EINVAL (no export-to or image), KFT_ENOTFOUND (no trainer
 * node in the JobSet), KFT_ENOMEM. */
int kft_track_export_job(const json_t *tj, const json_t *jobset, const kft_track_export_cfg *cfg,
                         json_t **out, kft_error *err);

/* The ModelExported condition an export Job's status gives (termination:
 * the exporter container's termination message, may be NULL): True/Exported
 * once Complete, False/ExportFailed once Failed (done set for both),
 * Unknown/Exporting before. message is malloc'd (the caller frees).
 * Returns 0 or KFT_ENOMEM. */
typedef struct kft_track_export_state {
	const char *status, *reason;
	char *message;
	bool done;
} kft_track_export_state;
int kft_track_export_observe(const json_t *tj, const json_t *job, const char *termination,
                             kft_track_export_state *out);

#endif
