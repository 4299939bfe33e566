/*
 * supervisor.c - the body of `kftrainer supervise`: one detached process per
 * running job (see local.h for its place, engine.c for its loop).
 *
 * Started by a submit before the submitter has checked and stored anything
 * (by `train` before it has even opened the store), it starts making its
 * status server's credentials (its costliest start-up work) on a thread of
 * their own, which the engine waits for only as it opens that server, and
 * opens the store while the submitter works, then waits for the go message,
 * sent after the commit (local.c), which names its job: no supervisor reads
 * a job that is not there yet, nor waits on the store's lock. Then it sends
 * its output to the job's supervisor.log (the job's directory exists by
 * then).
 *
 * Before running the job it makes itself a child subreaper, so processes a
 * pod's command forks and abandons are reparented to it (and reaped, and
 * reachable when the pod is stopped) instead of escaping to init; and it
 * makes sure the store names it as the job's supervisor, which the submitter
 * normally did already when it started it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/conditions.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "local/statusserver.h"

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

/* Reads the go message: "g", then the job's namespace and name, each ended
 * by a NUL (the submitter closes the pipe without it when the submit failed).
 * *ns and *name are malloc'd; false when there is nothing to run. */
static bool wait_for_go(int fd, char **ns, char **name)
{
	char msg[KFT_LOCAL_GO_MAX];
	size_t len = 0;
	ssize_t n;
	*ns = *name = NULL;
	do { /* one write of less than PIPE_BUF, then the close: read to the end */
		n = read(fd, msg + len, sizeof(msg) - len);
		if (n > 0)
			len += (size_t)n;
	} while ((n > 0 && len < sizeof(msg)) || (n < 0 && errno == EINTR));
	close(fd);
	const char *a = msg + 1, *b = a + strnlen(a, len > 1 ? len - 1 : 0) + 1;
	if (len < 5 || msg[0] != 'g' || msg[len - 1] != '\0' || b >= msg + len || !*a || !*b ||
	    b + strlen(b) + 1 != msg + len)
		return false;
	*ns = strdup(a);
	*name = strdup(b);
	return *ns && *name;
}

/* Whether the submit was called off already: the pipe closed with nothing
 * in it (a trial that waits for GPUs is submitted again and again, and each
 * try starts a supervisor; those need no keys). */
static bool called_off(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

/* Standard output and error to the job's supervisor.log. */
static void log_to_job(const char *state_dir, const char *ns, const char *name)
{
	char *dir = kft_local_job_dir_of(state_dir, ns, name), *path = NULL;
	int fd = dir && asprintf(&path, "%s/" KFT_LOCAL_SUPERVISOR_LOG, dir) >= 0
	                 ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600)
	                 : -1;
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	free(path);
	free(dir);
}

/* The store, opened while the submitter works when it exists already (a
 * first submit creates it; opening it meanwhile would only wait on that). */
static kft_store *open_early(const char *state_dir)
{
	char *path = NULL;
	struct stat st;
	kft_store *s = NULL;
	kft_error ignored = {0}; /* opened again, and reported, after the go */
	if (asprintf(&path, "%s/%s", state_dir, KFT_STORE_DB_NAME) >= 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && st.st_size > 0)
		kft_store_open(state_dir, &s, &ignored);
	free(path);
	return s;
}

/* Whether anything waits on the go pipe: the go, or the submitter's close. */
static bool go_arrived(void *fd)
{
	struct pollfd p = {.fd = *(int *)fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

/* Makes, for a name no TrainJob can have ("_" is no DNS label), the reads
 * a start makes after its go (the claim, then the engine's load): SQLite
 * prepares their statements now, into the store's cache, while the
 * submitter works, rather than on the way to the first pod; then prepares
 * the writes the engine makes as the pods start. Stops as soon as the go is
 * there (a statement not prepared yet is prepared when first used): on a
 * busy machine the submitter may be done first, and the go must not wait. */
static void prepare_statements(kft_store *s, int go_fd)
{
	static const char ns[] = "default", none[] = "_";
	json_t *j = NULL;
	char *workdir = NULL;
	int pid = 0;
	long long ticks = 0;
	kft_job_info info = {0};
	kft_error ignored = {0};
	for (int step = 0; step < 6 && !go_arrived(&go_fd); step++) {
		switch (step) {
		case 0: kft_store_job_get(s, ns, none, &j, &ignored); break;
		case 1: kft_store_get_supervisor(s, ns, none, &pid, &ticks, &ignored); break;
		case 2: kft_store_job_objects(s, ns, none, &j, &ignored); break;
		case 3:
			kft_store_job_info(s, ns, none, &info, &ignored);
			kft_job_info_free(&info);
			break;
		case 4:
			kft_store_job_get_exec(s, ns, none, &workdir, &j, &ignored);
			free(workdir);
			break;
		default: kft_store_job_get_plugins(s, ns, none, &j, &ignored);
		}
		json_decref(j);
		j = NULL;
	}
	kft_store_prepare_job_writes(s, go_arrived, &go_fd);
}

int kft_local_supervise(const char *state_dir, const char *ns, const char *name, int go_fd,
                        kft_error *err)
{
	kft_store *s = NULL;
	kft_statusserver_creds creds = {0};
	char *go_ns = NULL, *go_name = NULL;
	bool run = false;
	if (!state_dir || (go_fd < 0 && !name))
		return kft_error_set(err, KFT_EINVAL,
		                     "a state directory and a job name are required");
	if (go_fd >= 0) {
		if (!called_off(go_fd)) {
			char *kept = NULL;
			if (asprintf(&kept, "%s/" KFT_LOCAL_STATUS_CREDS, state_dir) < 0)
				kept = NULL; /* made, not kept */
			kft_statusserver_creds_start(&creds, kept);
			free(kept);
			s = open_early(state_dir);
			if (s)
				prepare_statements(s, go_fd);
		}
		if (!wait_for_go(go_fd, &go_ns, &go_name)) {
			kft_store_close(s);
			kft_statusserver_creds_free(&creds);
			free(go_ns);
			free(go_name);
			return 0;
		}
		ns = go_ns;
		name = go_name;
		log_to_job(state_dir, ns, name);
	}
	int rc = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
	                 ? kft_error_set(err, KFT_EIO, "cannot become a child subreaper")
	         : s ? 0
	             : kft_store_open(state_dir, &s, err);
	if (rc == 0)
		rc = claim(s, ns, name, &run, err);
	if (rc == 0 && run) {
		rc = kft_local_engine_run(state_dir, s, ns, name, &creds, err);
		s = NULL; /* the engine closed it */
	}
	kft_store_close(s);
	kft_statusserver_creds_free(&creds);
	free(go_ns);
	free(go_name);
	return rc;
}
