/*
 * local_internal.h - what the local backend's own files share (internal to
 * src/local; nothing outside includes it).
 *
 * Process identity: a pid alone does not name a process for long, since the
 * kernel reuses pids. Everything the local backend records about a process
 * (its supervisor, each pod) is a pid plus the process's start time in clock
 * ticks since boot, read from /proc/PID/stat; a process is "the same" only
 * when both match.
 */
#ifndef KFT_LOCAL_INTERNAL_H
#define KFT_LOCAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "kftrainer/backend.h"
#include "kftrainer/error.h"
#include "kftrainer/framework.h"
#include "local/store.h"
#include "local/local.h"

/* The reason and message the liveness check writes when a job's supervisor
 * is gone while the job runs (ours, not upstream's: upstream has no
 * supervisor). */
#define KFT_LOCAL_REASON_SUPERVISOR_LOST "SupervisorLost"

/* The supervisor's output, in its job's directory. */
#define KFT_LOCAL_SUPERVISOR_LOG "supervisor.log"

/* The go message's largest size (local.c): "g", a namespace and a name, each
 * ended by a NUL; below PIPE_BUF, so it is written and read whole. */
#define KFT_LOCAL_GO_MAX 512

/* The status servers' kept credentials, in the state directory
 * (statusserver.h). */
#define KFT_LOCAL_STATUS_CREDS "status-server.pem"

/* The job's own temporary directory under its job directory: every process
 * of the job gets it as TMPDIR, and it is removed with the job. */
#define KFT_LOCAL_JOB_TMP "tmp"

/* How a pod's log marks each attempt after the first (engine.c):
 *   ==> node-0: attempt 2, started 2026-01-02T03:04:05Z; the previous exited
 *   with code 1 (pod NAME) <==
 * on one line, after an empty one, like tail(1)'s file headers. */
#define KFT_LOCAL_ATTEMPT_MARK "==>"

/* The last lines (at most max_lines, each indented by two spaces, joined by
 * newlines) of the attempt a pod's log at path ends with, cleaned for a
 * message (logtail.c), into out (size bytes, always terminated; "" when the
 * log is missing or empty). Returns the number of lines written. */
size_t kft_local_log_tail(const char *path, size_t max_lines, char *out, size_t size);

/* Set to "off" (or "0") in the supervisor's environment, pods with volumes
 * run without a private mount view, their mount paths rewritten (podspec.h,
 * mountns.h); otherwise a view is used wherever the kernel allows one. */
#define KFT_LOCAL_MOUNT_NAMESPACE_ENV "KFTRAINER_MOUNT_NAMESPACE"

/* How long a stopped pod's process group gets between SIGTERM and SIGKILL. */
#define KFT_LOCAL_STOP_GRACE_MS 5000

/* Start time of pid in clock ticks since boot (field 22 of /proc/PID/stat)
 * into *ticks, and whether it is a zombie into *zombie (may be NULL).
 * Returns 0, or -1 when there is no such process or its stat is unreadable. */
int kft_local_proc_ticks(pid_t pid, long long *ticks, bool *zombie);

/* 1 when pid is a live (not zombie) process that started at `ticks`. */
int kft_local_proc_is(pid_t pid, long long ticks);

/* The CPU pid last ran on (field 39 of /proc/PID/stat), or -1. */
int kft_local_proc_cpu(pid_t pid);

/* SIGKILLs the process group pgid that a pod recorded with its leader's start
 * time, unless the number now belongs to another process: the group is
 * signalled when the leader still runs with that start time, or when no
 * process has that pid at all (its group may outlive it; the number cannot be
 * handed out again while the group exists). Returns 1 when a signal was
 * delivered, else 0. */
int kft_local_kill_group(pid_t pgid, long long ticks);

/* A free TCP port on 127.0.0.1 (bound and released at once; another
 * program may take it before the job does), or -1. */
int kft_local_free_port(void);

/* The job directory of ns/name under state_dir (malloc'd, NULL on ENOMEM). */
char *kft_local_job_dir_of(const char *state_dir, const char *ns, const char *name);

/* Makes dir and its missing parents below state_dir (mode 0700), and checks
 * that each of them is a real directory owned by this user: a symlink (or
 * anything else) planted there is refused rather than followed, so a job's
 * files cannot be redirected. dir must lie under state_dir. Errors: KFT_EIO
 * (naming the path and the problem), KFT_EINVAL, KFT_ENOMEM. */
int kft_local_mkdir_under(const char *state_dir, const char *dir, kft_error *err);

/* Removes a directory tree (does not follow symlinks; bounded depth).
 * Returns 0 or KFT_EIO naming the first path that could not be removed. */
int kft_local_rmtree(const char *path, kft_error *err);

/* Loads into fw the plugin files the job's submitter loaded (stored with
 * the job), so its supervisor runs the PostExecution points its objects
 * were built with. A file that cannot be loaded now (gone, replaced,
 * refused) is KFT_EINVAL naming it: "plugin PATH, loaded when the job was
 * submitted, cannot be loaded now: WHY". Errors of the store otherwise. */
int kft_local_load_job_plugins(kft_store *s, const char *ns, const char *name, kft_framework *fw,
                               kft_error *err);

/* Kills the recorded process groups of every pod of a job (as
 * kft_local_kill_group). Errors of kft_store_pods. */
int kft_local_kill_pods(kft_store *s, const char *ns, const char *name, kft_error *err);

/* A list just read from the store (rc its reading's status, *out the list)
 * with each object passed through check, which may replace it (e.g. marked
 * failed because its supervisor is gone); one deleted meanwhile stays as
 * read. On error *out is released and NULL. */
typedef int (*kft_local_live_fn)(kft_local *l, const char *ns, const char *name, json_t **obj,
                                 kft_error *err);
int kft_local_list_live(kft_local *l, int rc, json_t **out, kft_local_live_fn check,
                        kft_error *err);

/* The file a job's processes report progress to (<job dir>/trainer-status.json;
 * its path is also in every pod's environment). malloc'd, NULL on ENOMEM. */
char *kft_local_status_path(const char *state_dir, const char *ns, const char *name);

/* SIGKILLs every process of ours (never the caller) whose environment holds
 * KFTRAINER_STATUS_FILE=<status_path>: the pods of one job, including any
 * started after the store last recorded them and any that left their process
 * group. Waits up to 2 s for them to die. Returns how many were signalled. */
int kft_local_kill_by_env(const char *status_path);

/* SIGKILLs every descendant of the calling process: each process whose chain
 * of parents (from /proc/PID/stat) leads to it, whatever its session,
 * process group or environment; since the caller is a child subreaper,
 * processes a pod abandoned were reparented to it and are found too. Walks
 * /proc again after each round (a dying parent may just have forked) until
 * none is left or 2 s pass, reaping what becomes the caller's zombies, so it
 * must only run when no child's exit status is still wanted. Returns how
 * many were signalled. */
int kft_local_kill_descendants(void);

/* Waits up to ms for pid (with start time ticks) to end. 1 when gone. */
int kft_local_wait_gone(pid_t pid, long long ticks, int ms);

/* The native dataset/model initializer (initializer.c), run in a forked
 * child whose environment is the pod's: reads STORAGE_URI and the upstream
 * initializer's settings from the environment and fetches into
 * <workspace>/dataset or <workspace>/model. Returns a process exit code
 * (0 success) after printing what happened to stdout/stderr. */
int kft_local_initializer_main(const char *kind, const char *workspace);

/* How often an initializer logs a download's progress, at most. */
#define KFT_LOCAL_PROGRESS_MS 1000

/* A progress report a training process wrote to its status file (see
 * docs/local.md): {"trainerStatus": {...}} or the TrainerStatus itself,
 * checked against the schema's bounds (progressPercentage 0-100,
 * estimatedRemainingSeconds >= 0, at most 256 metrics with 1-64 character
 * names and values). Returns a new TrainerStatus with lastUpdatedTime set
 * (the report's when valid RFC 3339, else `now`), or NULL when the report
 * is malformed or out of bounds. */
json_t *kft_local_parse_report(const char *text, const char *now);

/* ---- the backend table (localbackend.c) ------------------------------------ */

#define KFT_LOCAL_MAX_SERVICES 8

/* The local answers to the framework's questions: every pod is 127.0.0.1,
 * each rendezvous service gets one free loopback port (the same for every
 * question about it during one build), the TrainJob's uid is the store's, and
 * the children that "exist" are those in `children` (borrowed; NULL: none).
 * A plain value; init then use &b->table. */
typedef struct kft_local_backend_state {
	kft_backend table;
	const char *uid;
	const json_t *children;
	const char *job_dir; /* borrowed; where the status endpoint's files go (NULL: unknown) */
	int status_port;     /* the status endpoint's port, chosen on first question */
	struct {
		char service[32];
		int port;
	} ports[KFT_LOCAL_MAX_SERVICES];
	size_t n_ports;
} kft_local_backend_state;

void kft_local_backend_init(kft_local_backend_state *b, const char *uid, const json_t *children);

/* The status endpoint's files under a job directory (statusserver.c writes
 * them, the local backend names them to the TrainJobStatus plugin). */
#define KFT_LOCAL_STATUS_CA_FILE    "status-server/ca.crt"
#define KFT_LOCAL_STATUS_TOKEN_FILE "status-server/token"

/* ---- the engine (engine.c) ------------------------------------------------- */

/* Runs job ns/name as its supervisor until it ends, is suspended or deleted
 * (the body of kft_local_supervise, which sets up the process first). The
 * store is taken over and closed before returning, on every path. creds
 * (borrowed, NULL: made when needed; waited for, when still being made,
 * only as the status server opens) serve the job's status endpoint. */
struct kft_statusserver_creds;
int kft_local_engine_run(const char *state_dir, kft_store *store, const char *ns, const char *name,
                         struct kft_statusserver_creds *creds, kft_error *err);

#endif
