/*
 * local.h - the local backend: TrainJobs run as processes on this machine
 * (internal; the CLI is its only caller).
 *
 * The objects a job runs from are the ones the framework builds for a cluster
 * (what `kftrainer render` prints), built with this backend's answers:
 * every pod's address is 127.0.0.1 and every rendezvous port is a free
 * loopback port picked when the job is submitted. They are stored with the
 * job in the SQLite store (store.h). A detached supervisor process per job
 * (`kftrainer supervise`, hidden) plays the JobSet, Job and kubelet
 * controllers: it starts initializer pods, then trainer pods, in the order
 * the JobSet's dependsOn gives, applies the success and failure policies,
 * restarts, activeDeadlineSeconds and suspend, and keeps the job's status
 * (TrainJob conditions with upstream's reasons, jobsStatus, trainerStatus)
 * and per-pod records in the store. Logs are files under the job directory.
 *
 * The CLI may exit at any time: everything it shows comes from the store.
 * Reading a job also checks its supervisor is alive; a running job whose
 * supervisor died is marked Failed and its processes are stopped.
 *
 * Conventions as store.h: 0 or a negative kft_status, err filled when
 * non-NULL; jobs addressed by namespace (NULL or "" = "default") and name.
 */
#ifndef KFT_LOCAL_LOCAL_H
#define KFT_LOCAL_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "kftrainer/backend.h"
#include "kftrainer/error.h"
#include "kftrainer/framework.h"
#include "local/store.h"

/* The environment variable naming the file a training process may write its
 * progress to (upstream v2.3.0 trainerStatus as JSON; see docs/local.md). */
#define KFT_LOCAL_STATUS_FILE_ENV "KFTRAINER_STATUS_FILE"

/* The feature gates the local backend runs with: TrainJobStatus is alpha
 * and off by default upstream, but here its endpoint is the job's own
 * supervisor on loopback, so nothing needs enabling on a cluster first.
 * Every framework that builds or runs a local job is made with these. */
#define KFT_LOCAL_FEATURES KFT_FEATURE_TRAINJOB_STATUS

typedef struct kft_local kft_local;

/* Opens the local backend on state_dir (NULL: kft_store_default_dir()).
 * `exe` is the kftrainer binary supervisors are started from (NULL:
 * /proc/self/exe, resolved at open). Free with kft_local_close. */
int kft_local_open(const char *state_dir, const char *exe, kft_local **out, kft_error *err);
/* The same, for a caller about to submit: it first starts the supervisor the
 * next kft_local_submit hands its job to, so that process's start-up
 * overlaps the store's opening and the caller's own checks. Closing l
 * without a submit just ends that supervisor. */
int kft_local_open_to_submit(const char *state_dir, const char *exe, kft_local **out,
                             kft_error *err);
void kft_local_close(kft_local *l);

/* The store and state directory (borrowed, live as long as l). */
kft_store *kft_local_store(kft_local *l);
const char *kft_local_state_dir(const kft_local *l);

/* The directory holding job ns/name's logs, volumes and status files:
 * <state_dir>/jobs/<ns>/<name>. malloc'd, caller frees; NULL on ENOMEM. */
char *kft_local_job_dir(const kft_local *l, const char *ns, const char *name);

/* A name for a TrainJob created without one; submit uses it for a job
 * without metadata.name, and the CLI for names it must know before
 * submitting. With generate_name non-NULL and non-empty, the API server's
 * generateName form: the prefix (cut to 58 bytes) and 5 random characters of
 * "bcdfghjklmnpqrstvwxz2456789"; otherwise the Kubeflow SDK's TrainJob name,
 * a lowercase letter and 11 hex digits. *out is malloc'd (caller frees; NULL
 * on error). Errors: KFT_EIO (no randomness), KFT_ENOMEM. */
int kft_local_generate_name(const char *generate_name, char **out, kft_error *err);

/* What `train` was asked beyond the TrainJob itself. */
typedef struct kft_submit_opts {
	const char *workdir;   /* default working directory of the job's processes
	                        * (containers without workingDir); NULL: the caller's cwd */
	bool job_workdir;      /* instead: a fresh directory of the job's own,
	                        * <job_dir>/work, made at submit and removed with the
	                        * job (what the Kubeflow SDK's functions expect: they
	                        * write their script file into the working directory) */
	char *const *base_env; /* "K=V" strings (NULL-terminated) standing in for the
	                        * image's environment under each pod's env; NULL: a
	                        * documented allow-list of the caller's environment */
	const json_t *objects; /* array or NULL: the user's own Secrets and ConfigMaps
	                        * (apiVersion v1) in the TrainJob's namespace, which
	                        * its pods may reference as they would on a cluster
	                        * (e.g. an initializer's secretRef); stored after the
	                        * built objects, which win on a name clash. Other
	                        * kinds and namespaces are ignored. */
	const json_t *plugins; /* array of absolute paths or NULL: the plugin files fw
	                        * loaded, recorded so the job's supervisor (now and
	                        * after a resume) loads the very same ones */
} kft_submit_opts;

/*
 * Submits a TrainJob that the caller has already checked (kft_object_check,
 * runtime resolution, kft_framework_validate: exactly what `validate` and
 * `render` do; field errors are the caller's to print). trainjob is the
 * defaulted object; a missing metadata.name is generated as upstream's SDK
 * does. The framework builds the objects with the local backend; the job and
 * its objects are stored; unless spec.suspend is true a supervisor is started
 * and detached. On success *name_out (when non-NULL) receives the job's name,
 * malloc'd. On failure nothing is stored and nothing runs. Errors: KFT_EINVAL
 * (already exists: kubectl's wording; more GPUs than this machine has),
 * KFT_EUNAVAILABLE (the GPUs exist but jobs that have not finished hold
 * them: trying again later may succeed), KFT_EIO, errors of
 * kft_framework_build.
 */
int kft_local_submit(kft_local *l, const kft_framework *fw, const json_t *trainjob,
                     const json_t *runtime, const kft_submit_opts *opts, char **name_out,
                     kft_error *err);

/* The TrainJob with its current status (after the liveness check above), as
 * kft_store_job_get returns it. *out is a new reference. A job found without
 * its supervisor gets Failed, reason "SupervisorLost" (docs/local.md). */
int kft_local_get(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err);

/* Every job in ns (NULL: all namespaces), each as kft_local_get gives it. */
int kft_local_list(kft_local *l, const char *ns, json_t **out, kft_error *err);

/* suspend=true stops every process of the job and sets the Suspended
 * condition; false clears suspend and starts a supervisor again. Acting on a
 * finished job ("has already finished") or on one being deleted ("is being
 * deleted") is KFT_EINVAL; a job already gone is KFT_ENOTFOUND. */
int kft_local_set_suspend(kft_local *l, const char *ns, const char *name, bool suspend,
                          kft_error *err);

/* Stops every process of a running job for good and marks it Failed with
 * this reason and message (e.g. a trial stopped early by its search): it is
 * suspended (its conditions keep Suspended, how it was stopped), then
 * ended, so it cannot be resumed and holds no GPUs. A job that ended or
 * began to be deleted meanwhile keeps its outcome (0 returned).
 * Errors: KFT_ENOTFOUND, KFT_EIO. */
int kft_local_stop(kft_local *l, const char *ns, const char *name, const char *reason,
                   const char *message, kft_error *err);

/* Marks the job as being deleted (metadata.deletionTimestamp; get and list
 * keep showing it until it is gone, and its supervisor, the liveness check
 * and suspend/resume leave it alone), stops the supervisor and every process
 * of the job (none is left), removes its directory, then its rows. Two
 * deletes at once both stop everything; one removes the rows and the other
 * gets KFT_ENOTFOUND. A delete that was interrupted is finished by running it
 * again. */
int kft_local_delete(kft_local *l, const char *ns, const char *name, kft_error *err);

/* Starts `kftrainer supervise --state-dir STATE [FLAG] NS NAME` detached:
 * its own session, stdin /dev/null, output appended to DIR/supervisor.log
 * (DIR made below the state directory), cwd "/". flag NULL: a TrainJob's
 * supervisor. *pid is the child's; it is reaped by l. Errors: KFT_EIO,
 * KFT_ENOMEM. */
int kft_local_start_detached(kft_local *l, const char *dir, const char *flag, const char *ns,
                             const char *name, pid_t *pid, kft_error *err);

/* The supervisor's body, run by the hidden `kftrainer supervise` verb: runs
 * job ns/name to its end (or until it is suspended or deleted), then
 * returns. go_fd, when not -1, is the submitter's go pipe (local.c), and ns
 * and name are NULL: the supervisor prepares, waits for the go message
 * naming its job (returns 0 at once when the submit was called off) and
 * then sends its output to the job's supervisor.log. Not for other
 * callers. */
int kft_local_supervise(const char *state_dir, const char *ns, const char *name, int go_fd,
                        kft_error *err);

/*
 * Download progress in an initializer's log. While a file downloads, the
 * dataset and model initializers log at most one line a second:
 *   dataset-initializer: downloading FILE: 12.3 MiB / 40.0 MiB (31%)
 *   dataset-initializer: downloading FILE: 12.3 MiB        (size unknown)
 * kft_local_progress_format writes one (kind "dataset" or "model") into buf,
 * truncated to size, and returns snprintf's count. kft_local_progress_parse
 * says whether line[0..len) (no newline) is one: then *what is the offset of
 * "FILE: ..." and *percent the percentage, -1 when the size is unknown.
 */
#define KFT_LOCAL_PROGRESS_WORD "downloading"
int kft_local_progress_format(char *buf, size_t size, const char *kind, const char *file,
                              uint64_t done, uint64_t total);
bool kft_local_progress_parse(const char *line, size_t len, size_t *what, int *percent);

/*
 * Events (events.c). kft_local_event_new builds one core/v1 Event about
 * object `object` of kind `kind` ("Pod", "Job", "JobSet", "TrainJob") in ns,
 * stamped now, with the recording component a cluster would name (kubelet,
 * job-controller, jobset-controller, trainer-controller-manager); every
 * string is borrowed and must be non-NULL. Returns a new reference, NULL on
 * ENOMEM. kft_local_events reads job ns/name's Events (name NULL: every job's
 * in ns) as a v1 EventList; *out is a new reference. Errors as
 * kft_store_events.
 */
json_t *kft_local_event_new(const char *ns, const char *type, const char *reason, const char *kind,
                            const char *object, const char *message);
int kft_local_events(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err);

/* Job ns/name's pods as a v1 PodList (pods.c): one Pod per pod the engine
 * has recorded, named and labelled as the Job controller names and labels
 * them, with the rendered template's spec and a status the kubelet would
 * report (phase, start time, the run container's state, exit code, restart
 * count). *out is a new reference. Errors: KFT_ENOTFOUND, KFT_EIO,
 * KFT_EPARSE, KFT_ENOMEM. */
int kft_local_pods(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err);

/* Where `path`, as a pod of job ns/name sees it, is on this machine: under
 * the longest volume mount of the pod's main container that contains it, that
 * volume's directory (the job's own, under its job directory). The pod is
 * completion index 0 of replicated job `rjob`, or, with rjob NULL, of the
 * trainer's (the replicated job labelled trainjob-ancestor-step: trainer, else
 * "node"). Nothing is written. *out is malloc'd. Errors: KFT_ENOTFOUND (no
 * such job or replicated job; path on no volume of the pod, the message then
 * listing the mount paths), KFT_EINVAL (a relative path), KFT_ENOMEM. */
int kft_local_host_path(kft_local *l, const char *ns, const char *name, const char *rjob,
                        const char *path, char **out, kft_error *err);

/* What a replicated job runs, as JobSet and the Job controller read it
 * (jobset_model.c; the engine, the GPU request, the pod view and the CLI's
 * NODES and log counts all use this one rule): its replicas (1 when absent),
 * each Job's parallelism (1 when absent) and completions (the parallelism
 * when absent); its pods number replicas x completions. A count that is not
 * an integer is taken as absent. */
typedef struct kft_rjob_counts {
	int64_t replicas, parallelism, completions;
} kft_rjob_counts;

/* The counts of rjob (a replicatedJobs entry, borrowed). 0, or -1 when one
 * is negative (c filled either way). */
int kft_rjob_counts_of(const json_t *rjob, kft_rjob_counts *c);

/* The backend table (backend.h) the local backend builds with. */
const kft_backend *kft_local_backend(kft_local *l);

#endif
