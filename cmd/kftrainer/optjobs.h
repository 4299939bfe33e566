/*
 * optjobs.h - OptimizationJobs in the job verbs, with kubectl's habit of
 * naming the resource type first: `get optimizationjobs`, `get
 * optimizationjob NAME` (with its trials and the best one), `delete
 * optimizationjob/NAME`, `logs optimizationjob/NAME [--trial T]`, `events
 * optimizationjob/NAME`. A verb hands its operands here when the first one
 * names the type; the rest of each verb is unchanged.
 */
#ifndef KFT_CMD_OPTJOBS_H
#define KFT_CMD_OPTJOBS_H

#include <stdbool.h>

#include "cli.h"
#include "jobs.h"

/* Whether word names the type: "optimizationjob", "optimizationjobs"
 * (optionally with ".trainer.kubeflow.org"), or "optimizationjob/NAME"
 * (then *name points at NAME; otherwise it is set NULL). */
bool kft_cli_is_optjob(const char *word, const char **name);

/* The operands after the verb's options: names[0] names the type; the
 * OptimizationJob names are the words after it, or those of
 * "optimizationjob/NAME" words. Returns the names in a new NULL-terminated
 * array (*n of them; the strings borrowed from names), or NULL (reported,
 * KFT_EXIT_USAGE in *rc) when a word is neither. */
char **kft_cli_optjob_names(char **names, int count, int *n, int *rc);

/* `get`'s options as they apply to OptimizationJobs. */
typedef struct kft_cli_optjob_get {
	const char *ns;
	bool all_ns, no_headers;
	enum kft_cli_out_format format;
} kft_cli_optjob_get;

/* get: every OptimizationJob of the namespace (no names) or the named ones:
 * NAME STATUS TRIALS RUNNING SUCCEEDED FAILED BEST OBJECTIVE AGE; one NAME
 * in a table also lists its trials (values, state, metrics) and the best.
 * Returns an exit code. */
int kft_cli_optjob_get_run(kft_local *l, const kft_cli_optjob_get *o, char **names, int n);

/* delete: each OptimizationJob the operands name (as kft_cli_optjob_names
 * reads them), or with `all` every one of the namespace, with its trials.
 * Returns an exit code. */
int kft_cli_optjob_delete(kft_local *l, const char *ns, char **operands, int count, bool all,
                          bool ignore_not_found);

/* events: the OptimizationJob's Events and its trials' (EventList for
 * -o json|yaml). Returns an exit code. */
int kft_cli_optjob_events(kft_local *l, const char *ns, const char *name,
                          enum kft_cli_out_format format);

/* logs: the TrainJob whose logs to show: `trial` when given (it must be
 * one of the search's trials), else the best trial, else the first one
 * (the Kubeflow SDK's get_job_logs). *out is malloc'd. Returns an exit
 * code (reported). */
int kft_cli_optjob_trial(kft_local *l, const char *ns, const char *name, const char *trial,
                         char **out);

#endif
