/*
 * engine.h - the supervisor's model of one running TrainJob (internal to
 * src/local: engine.c runs it, jobset_model.c computes the JobSet's view of
 * it).
 *
 * The JobSet controller, the Job controller and the kubelet are folded into
 * one small state machine: a replicated job (rjob) has `replicas` Jobs; a Job
 * has `completions` pods of which at most `parallelism` run at once; a pod is
 * one process. Counts and states here are what the JobSet status object
 * (replicatedJobsStatus, conditions) is computed from.
 */
#ifndef KFT_LOCAL_ENGINE_H
#define KFT_LOCAL_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "local/spawn.h"

typedef enum pod_phase { POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED } pod_phase;
typedef enum job_state { JOB_WAITING, JOB_ACTIVE, JOB_SUCCEEDED, JOB_FAILED } job_state;

typedef struct eng_pod {
	int rj, replica, index; /* replicated job, Job (replica), completion index */
	int rec_index;          /* replica * completions + index: the pod record's index */
	pod_phase phase;
	kft_proc proc;
	bool running; /* proc holds a live process we must reap */
	bool started_once;
	int restarts, exit_code, sig;
	int attempts; /* processes started for this pod since the supervisor
	               * started (JobSet restarts included), for the log's
	               * attempt marks and the pod record's restarts */
	long long ticks;
	int64_t restart_at; /* monotonic ms when a crashed pod starts again; 0: none */
	char started[32], finished[32];
	char *reason, *message; /* malloc'd or NULL */
	bool dirty;             /* the store's record is behind */
} eng_pod;

typedef struct eng_job {
	job_state state;
	int failures;
	int64_t failed_at; /* order of failure, for "first failed job" */
} eng_job;

typedef enum rjob_kind { RJOB_RUN, RJOB_PLACEHOLDER, RJOB_DATASET_INIT, RJOB_MODEL_INIT } rjob_kind;

typedef struct eng_rjob {
	const char *name; /* borrowed from the JobSet */
	const json_t *spec;
	int replicas, parallelism, completions, backoff_limit;
	const char *container; /* the container run for each pod */
	rjob_kind kind;
	bool started;
	eng_job *jobs; /* replicas */
	eng_pod *pods; /* replicas * completions */
} eng_rjob;

/* ---- jobset_model.c -------------------------------------------------------- */

/* Whether every dependsOn entry of rj is met. */
bool kft_jobset_model_depends_met(const eng_rjob *rjobs, size_t n, const eng_rjob *rj);

/* JobSet startupPolicy InOrder: whether rjobs[i] may start (always, unless
 * the policy says InOrder and the replicated job before it is not ready). */
bool kft_jobset_model_in_order_met(const json_t *jobset_spec, const eng_rjob *rjobs, size_t i);

/* JobSet successPolicy: 1 when it is satisfied. */
bool kft_jobset_model_success(const json_t *jobset_spec, const eng_rjob *rjobs, size_t n);

/* replicatedJobsStatus as the JobSet controller counts it (new array). */
json_t *kft_jobset_model_rjobs_status(const eng_rjob *rjobs, size_t n, bool suspended);

/* The name of the first failed Job ("<jobset>-<rjob>-<replica>") into buf,
 * its replicated job's name into *rjob (borrowed) and the pod whose failure
 * failed it into *pod (NULL when none is known). buf is "" when no Job failed. */
void kft_jobset_model_first_failed(const char *jobset, const eng_rjob *rjobs, size_t n, char *buf,
                                   size_t size, const eng_pod **pod, const char **rjob);

/* The action of the first failurePolicy rule that applies to a Job of
 * replicated job rjob that failed with this reason and message (JobSet v0.12
 * ruleIsApplicable: every non-empty list of the rule must match), or NULL
 * when none does (the default action, RestartJobSet, then applies). */
const char *kft_jobset_model_rule_action(const json_t *failure_policy, const char *rjob,
                                         const char *job_reason, const char *job_message);

#endif
