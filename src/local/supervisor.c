/*
 * supervisor.c - the body of `kftrainer supervise`: one detached process per
 * running job (see local.h for its place, engine.c for its loop).
 *
 * Before running the job it makes itself a child subreaper, so processes a
 * pod's command forks and abandons are reparented to it (and reaped, and
 * reachable when the pod is stopped) instead of escaping to init; and it
 * makes sure the store names it as the job's supervisor, which the submitter
 * normally did already when it started it.
 */
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "framework/conditions.h"
#include "local/local.h"
#include "local/local_internal.h"

/* Records this process as the supervisor unless it is already recorded;
 * *run is false when there is nothing to supervise (finished, suspended,
 * being deleted). */
static int claim(kft_store *s, const char *ns, const char *name, bool *run, kft_error *err)
{
	json_t *tj = NULL;
	int pid = 0;
	long long ticks = 0, mine = 0;
	*run = false;
	int rc = kft_store_begin(s, err);
	if (rc)
		return rc;
	rc = kft_store_job_get(s, ns, name, &tj, err);
	if (rc == 0)
		rc = kft_store_get_supervisor(s, ns, name, &pid, &ticks, err);
	if (rc == 0 && !kft_trainjob_is_finished(tj) &&
	    !json_object_get(json_object_get(tj, "metadata"), "deletionTimestamp") &&
	    !json_is_true(json_object_get(json_object_get(tj, "spec"), "suspend"))) {
		kft_local_proc_ticks(getpid(), &mine, NULL);
		if (pid == getpid() && ticks == mine)
			*run = true;
		else if (pid > 0 && kft_local_proc_is(pid, ticks))
			rc = kft_error_set(err, KFT_EINVAL,
			                   "TrainJob %s already has a supervisor (pid %d)", name,
			                   pid);
		else if ((rc = kft_store_set_supervisor(s, ns, name, getpid(), mine, err)) == 0)
			*run = true;
	}
	json_decref(tj);
	if (rc == 0)
		return kft_store_commit(s, err);
	kft_store_rollback(s);
	return rc;
}

int kft_local_supervise(const char *state_dir, const char *ns, const char *name, kft_error *err)
{
	kft_store *s = NULL;
	bool run = false;
	if (!state_dir || !name)
		return kft_error_set(err, KFT_EINVAL,
		                     "a state directory and a job name are required");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return kft_error_set(err, KFT_EIO, "cannot become a child subreaper");
	int rc = kft_store_open(state_dir, &s, err);
	if (rc == 0)
		rc = claim(s, ns, name, &run, err);
	if (rc || !run) {
		kft_store_close(s);
		return rc;
	}
	return kft_local_engine_run(state_dir, s, ns, name, err);
}
