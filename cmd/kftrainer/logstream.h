/*
 * logstream.h - printing a job's pod logs, once or following them: what
 * `kftrainer logs` and `kftrainer train --follow` share.
 *
 * Each pod's log is a file the supervisor's processes append to (its path is
 * in the pod's store record). When lines are prefixed, the prefix names the
 * pod by step and index, "[node-0] ", "[node-1] ", "[dataset-initializer-0] ",
 * "[launcher-0] ": the index is the node's rank among the job's nodes (its
 * JOB_COMPLETION_INDEX / PET_NODE_RANK). Lines are written whole, so pods'
 * lines never interleave mid-line.
 */
#ifndef KFT_CMD_LOGSTREAM_H
#define KFT_CMD_LOGSTREAM_H

#include <signal.h>
#include <stdbool.h>

#include "jobs.h"

typedef struct kft_logstream_opts {
	const char *ns, *name;       /* the job */
	const char *step;            /* only this step's pods; NULL: every step */
	int node;                    /* only this pod index; -1: every index */
	bool prefix;                 /* prefix every line (else only when several pods show) */
	bool follow;                 /* keep printing as logs grow until the job ends */
	bool through_suspend;        /* following: wait out a suspension instead of ending */
	volatile sig_atomic_t *stop; /* following ends early once *stop is set (may be NULL) */
} kft_logstream_opts;

/* How a stream ended. */
typedef enum kft_logstream_end {
	KFT_LOGSTREAM_DONE,      /* printed everything (not following), or the job finished
	                          */
	KFT_LOGSTREAM_STOPPED,   /* *stop was set, or stdout could not be written */
	KFT_LOGSTREAM_GONE,      /* the job was deleted while following */
	KFT_LOGSTREAM_SUSPENDED, /* following without through_suspend: the job is
	                            suspended */
} kft_logstream_end;

/*
 * Prints the selected pods' logs to stdout: not following, each pod's log in
 * turn (initializers first); following, whatever every selected pod appends,
 * picking up pods as they start, until the job ends and its logs are drained.
 * On success *end says why it returned and *job (when non-NULL) receives the
 * job as last read (new reference, NULL when it was deleted). Returns 0, or
 * KFT_EXIT_FAILED after reporting (job not found, nothing to show when not
 * following, an unreadable log).
 */
int kft_logstream_run(kft_local *l, const kft_logstream_opts *o, kft_logstream_end *end,
                      json_t **job);

#endif
