/*
 * spawn.h - start, watch and stop the processes that stand in for pods.
 *
 * Internal to the local backend (not installed). One kft_proc is one
 * container's main process. It runs in a process group of its own, so
 * stopping it reaches every process it forked (launchers such as torchrun or
 * mpirun fork workers). Its stdout and stderr are appended to one log file and
 * its stdin is /dev/null, as with a container that has no TTY.
 *
 * Nothing here installs signal handlers or touches SIGCHLD: the supervisor
 * that owns these processes decides how it learns of child exits. The
 * supervisor should make itself a child subreaper (prctl
 * PR_SET_CHILD_SUBREAPER) so that kft_proc_stop() can also reap orphaned
 * grandchildren of a stopped process.
 */
#ifndef KFT_LOCAL_SPAWN_H
#define KFT_LOCAL_SPAWN_H

#include <stdio.h>
#include <sys/types.h>

#include "kftrainer/error.h"

typedef struct kft_proc {
	pid_t pid;  /* the started process; its group id is the same number */
	pid_t pgid; /* the process group to signal; equals pid */
	int log_fd; /* the parent's handle on the log file, -1 once reaped */
	int reaped; /* 1 once the process's exit status has been collected */
	int status; /* the raw wait status, valid once reaped */
} kft_proc;

/*
 * Starts argv[0] with arguments argv (NULL-terminated) and environment exactly
 * envp (NULL-terminated; NULL means an empty environment). A bare name is
 * looked up in the PATH found in envp, as execvpe would (no PATH there means
 * "/bin:/usr/bin"); no shell is involved. cwd (NULL: the caller's) is the
 * working directory. Output is appended to log_path, created with mode 0640
 * when missing (never through a symlink: O_NOFOLLOW). The child gets fds 0 (/dev/null), 1 and 2
 * (the log) and no other descriptor, default signal dispositions and an empty signal mask, and
 * PR_SET_PDEATHSIG SIGKILL: it is killed when the calling *thread* ends (the
 * supervisor is single-threaded, so: when the supervisor dies).
 *
 * On success fills *out; the caller must eventually collect the process with
 * kft_proc_wait(), kft_proc_poll() (until it reports an exit) or
 * kft_proc_stop(), which also close out->log_fd. Errors: KFT_EINVAL for an
 * empty argv; KFT_ENOTFOUND when the command cannot be found, with the message
 * `exec: "NAME": executable file not found in $PATH`; KFT_EIO when the log,
 * cwd or exec fails (message names which). On failure no process is left
 * behind, not even a zombie, and *out holds pid -1 and log_fd -1.
 */
int kft_proc_start(char *const argv[], char *const envp[], const char *cwd, const char *log_path,
                   kft_proc *out, kft_error *err);

/*
 * kft_proc_start in the private filesystem view ns plans (mountns.h; NULL:
 * the host's, exactly kft_proc_start). argv[0], PATH entries and cwd are
 * paths in the view: a command under a mount path is looked up through the
 * mount's host directory, and the child changes to cwd once in the view (a
 * missing cwd is then KFT_EIO "chdir ..."). When the view cannot be entered
 * (the kernel refuses the namespaces, or a step fails) nothing runs and the
 * error is KFT_EUNAVAILABLE, "mount namespace: STEP: REASON": the caller may
 * start the process again without a view. Other errors as kft_proc_start.
 */
typedef struct kft_mountns kft_mountns;
int kft_proc_start_in(const kft_mountns *ns, char *const argv[], char *const envp[],
                      const char *cwd, const char *log_path, kft_proc *out, kft_error *err);

/*
 * Checks without blocking whether the process has ended. *exited becomes 1
 * once it has; then *exit_code is its exit status (0-255) and *signal is 0, or
 * *exit_code is 128+N and *signal is N when signal N killed it (the container
 * convention). Any output pointer may be NULL. Calling again after the exit
 * was seen reports the same values. Returns 0, or KFT_EIO when waitpid fails
 * (for example because someone else reaped the process).
 */
int kft_proc_poll(kft_proc *p, int *exited, int *exit_code, int *signal);

/* Like kft_proc_poll() but blocks until the process ends. */
int kft_proc_wait(kft_proc *p, int *exit_code, int *signal);

/*
 * Sends SIGTERM to the whole process group, waits up to grace_ms for the
 * group to empty, then sends SIGKILL. Reaps the process (and any group member
 * that was reparented to the caller) and closes log_fd. Safe to call on a
 * process that already ended. Returns 0, KFT_EINVAL for a kft_proc that never
 * started, or KFT_EIO when the group could not be signalled or still had
 * members shortly after SIGKILL (members that are zombies owned by some other
 * parent cannot be collected from here).
 */
int kft_proc_stop(kft_proc *p, int grace_ms);

/* ---- log line prefixing (for `logs -f`) --------------------------------- */

#define KFT_PREFIXER_LINE_MAX 8192

/*
 * Copies text to a FILE *, putting a fixed prefix such as "[node-0 rank 1] "
 * before every line. Bytes may arrive in arbitrary pieces: a line is written
 * only once its newline arrives (or it fills the buffer, in which case it is
 * written in KFT_PREFIXER_LINE_MAX pieces, each prefixed). Plain value; holds
 * no heap memory; the prefix string is borrowed.
 */
/* Writes one line (n bytes at s, no newline; newline says whether to end
 * it) with its prefix to out, in place of the plain "prefix line\n".
 * Returns 0 or KFT_EIO. */
typedef int (*kft_prefixer_line_fn)(void *user, const char *prefix, const char *s, size_t n,
                                    int newline, FILE *out);

typedef struct kft_prefixer {
	const char *prefix;
	size_t len;
	kft_prefixer_line_fn on_line; /* NULL: the plain form */
	void *on_line_user;
	char line[KFT_PREFIXER_LINE_MAX];
} kft_prefixer;

/* Sets up pf to write with the given prefix (borrowed; must outlive pf),
 * each line in the plain form. */
void kft_prefixer_init(kft_prefixer *pf, const char *prefix);

/* Has every line of pf written by fn (user passed back) instead. */
void kft_prefixer_set_line_fn(kft_prefixer *pf, kft_prefixer_line_fn fn, void *user);

/* Feeds n bytes; writes every completed line to out. Returns 0 or KFT_EIO. */
int kft_prefixer_feed(kft_prefixer *pf, const char *buf, size_t n, FILE *out);

/* Writes a held partial line (adding a newline), e.g. at end of file. */
int kft_prefixer_flush(kft_prefixer *pf, FILE *out);

/*
 * Reads whatever fd has (one read(2), retried on EINTR) and feeds it to pf.
 * Returns the number of bytes read (0 at end of file; then the partial line
 * is flushed), or KFT_EIO on a read error other than EAGAIN, for which it
 * returns 0 with *would_block set. would_block may be NULL.
 */
int kft_prefixer_copy(kft_prefixer *pf, int fd, FILE *out, int *would_block);

#endif
