/*
 * jobs.h - what the job verbs (train, get, logs, events, wait, suspend, resume,
 * delete) share on top of the local backend (src/local/local.h): opening it
 * on the state directory, reporting its errors in kubectl's words,
 * reading a stored TrainJob's conditions and pods, and kubectl's Events table.
 */
#ifndef KFT_CMD_JOBS_H
#define KFT_CMD_JOBS_H

#include <jansson.h>
#include <stdbool.h>

#include "local/local.h"

/* Opens the local backend on the state directory (--state-dir, else
 * KFTRAINER_STATE_DIR, else the per-user default). On success *out is the
 * caller's to kft_local_close. Returns 0 or KFT_EXIT_FAILED (reported). */
int kft_cli_open_local(kft_local **out);
/* The same for a verb that submits: kft_local_open_to_submit. */
int kft_cli_open_local_to_submit(kft_local **out);

/* Whether word names a resource type the kubectl way: "SINGULAR" or
 * "PLURAL", optionally with ".trainer.kubeflow.org", alone or as "TYPE/NAME"
 * (then *name points at NAME; otherwise it is set NULL). */
bool kft_cli_is_type(const char *word, const char *singular, const char *plural, const char **name);

/* Takes kubectl's type words off operands names[0..*count) in place: a
 * first type word (kft_cli_is_type) followed by names, or "TYPE/NAME" words
 * only. Operands that do not start with a type word are left as they are,
 * so a job named like the type needs the type first, as in kubectl.
 * Returns 0, or KFT_EXIT_USAGE (reported with kubectl's words) when the
 * two forms are mixed. */
int kft_cli_typed_operands(char **names, int *count, const char *singular, const char *plural);

/* kft_cli_typed_operands for TrainJobs, kubectl's habit in the TrainJob
 * verbs: `get trainjobs`, `delete trainjob NAME`, `wait trainjob/NAME`. */
int kft_cli_trainjob_operands(char **names, int *count);

/* The TrainJobs of namespace ns (NULL: every namespace) into *out, an array
 * the caller owns. Returns 0 or KFT_EXIT_FAILED (reported; *out untouched). */
int kft_cli_list_jobs(kft_local *l, const char *ns, json_t **out);

/* Reports a failure of a local-backend call about job `name`: kubectl's
 * NotFound line for KFT_ENOTFOUND, else "kftrainer: message". Returns
 * KFT_EXIT_FAILED. */
int kft_cli_job_error(const char *name, const kft_error *err);

/* The first condition of `type` whose status is `status`, or NULL (borrowed
 * from job). With nocase both are compared without regard to case, as
 * kubectl wait does. */
const json_t *kft_cli_condition_find(const json_t *job, const char *type, const char *status,
                                     bool nocase);

/* The condition of `type` whose status is "True", or NULL (borrowed from
 * job). */
const json_t *kft_cli_condition_true(const json_t *job, const char *type);

/* "Complete" or "Failed" when the job has finished, else NULL. */
const char *kft_cli_job_outcome(const json_t *job);

/* The job's state for people, one of Created, Running, Suspended, Complete,
 * Failed, Terminating: a delete under way (metadata.deletionTimestamp) wins,
 * then a terminal condition, then Suspended, then Running when any
 * child Job is active or any pod record is Running (the store's pods, read
 * through l), else Created. Static string. */
const char *kft_cli_job_phase(kft_local *l, const json_t *job);

/* RESTARTS of `get`: how often the job's pods' processes were started again
 * (a pod's Job back-off and JobSet restarts alike), summed over its pods, as
 * the pod records keep it since the job last started or resumed (0 when the
 * records cannot be read). */
long long kft_cli_job_restarts(kft_local *l, const json_t *job);

/* The job's name and namespace (borrowed from job; namespace "default" when
 * unset). */
const char *kft_cli_job_name(const json_t *job);
const char *kft_cli_job_ns(const json_t *job);

/* The stored JobSet of job ns/name (new reference) or NULL when there is
 * none or it cannot be read. */
json_t *kft_cli_job_jobset(kft_local *l, const char *ns, const char *name);

/* How many pods replicated job `rjob` of a JobSet runs, by
 * kft_rjob_counts_of's rule (local.h), at most 1,000,000; 0 when the JobSet
 * has no such replicated job or a count is negative. */
int kft_cli_rjob_pods(const json_t *jobset, const char *rjob);

/* `get`'s NODES cell for job into buf: spec.trainer.numNodes when the
 * TrainJob sets it, else the pods of the JobSet's "node" step plus an MPI
 * launcher labelled as the trainer step; "-" without a JobSet. */
void kft_cli_job_nodes(kft_local *l, const json_t *job, char *buf, size_t size);

/* kubectl events' table (LAST SEEN TYPE REASON OBJECT MESSAGE) of core/v1
 * Events (borrowed), on stdout: `events` prints a TrainJob's, `events
 * optimizationjob/NAME` its search's and trials'. */
void kft_cli_events_table(const json_t *items);

#endif
