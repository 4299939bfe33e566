/*
 * spawn.c - the local backend's process launcher.
 *
 * Processes start as glibc's posix_spawn starts them, plus one thing it
 * cannot do: the child arms PR_SET_PDEATHSIG (SIGKILL), so a supervisor
 * killed with -9 takes its pods with it at once. The child shares the
 * parent's memory until its exec (clone with CLONE_VM | CLONE_VFORK, on a
 * stack of its own, every signal blocked across the clone): nothing of the
 * supervisor (its libraries, heap and server threads' stacks) is copied for
 * it, nor torn down again at its exec, and the parent goes on as soon as the
 * exec is done. A process entering a mount namespace is forked instead, as
 * kft_mountns_enter expects (mountns.h); a view's mount calls outweigh the
 * copy. A failed exec is carried back over a close-on-exec pipe and the
 * failed child reaped, so a missing or unrunnable command is an error in the
 * parent, never a fake exit code.
 *
 * In the child, in this order: the death signal (and a check that the parent
 * is still there), the pod's private filesystem view when it has one
 * (mountns.h; then the working directory is changed to by name, in the
 * view), a new process group, default signal handling and an empty
 * mask (so a parent that ignores SIGPIPE or blocks SIGCHLD does not pass that
 * on), fchdir into the working directory opened beforehand by the parent (so
 * a bad cwd is reported as such, not as a failed exec), stdin from /dev/null,
 * stdout and stderr onto the log, and every other descriptor closed.
 *
 * PATH is looked up here, not by posix_spawnp, because the search must use the
 * PATH of the child's environment, which is not ours.
 */
#include "local/spawn.h"
#include "local/mountns.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PATH  "/bin:/usr/bin"
#define STOP_POLL_MS  10
#define AFTER_KILL_MS 2000
#define CHILD_STACK   (64 * 1024) /* a shared-memory child's, until its exec */

/* ---- PATH lookup ---------------------------------------------------------- */

static const char *env_path(char *const envp[])
{
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			return envp[i] + 5;
	return DEFAULT_PATH;
}

/* Joins dir and name; a relative dir is taken relative to the child's cwd. */
static int join_candidate(char *buf, size_t cap, const char *cwd, const char *dir, size_t dlen,
                          const char *name)
{
	int n;
	if (dlen == 0) {
		dir = ".";
		dlen = 1;
	}
	if (dir[0] != '/' && cwd)
		n = snprintf(buf, cap, "%s/%.*s/%s", cwd, (int)dlen, dir, name);
	else
		n = snprintf(buf, cap, "%.*s/%s", (int)dlen, dir, name);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* 0 when path (in the view ns, NULL: the host's) is an executable regular
 * file; else the errno exec would see. */
static int check_executable(const kft_mountns *ns, const char *path)
{
	struct stat st;
	char host[4096];
	if (!(path = kft_mountns_host_path(ns, path, host, sizeof(host))))
		return ENAMETOOLONG;
	if (stat(path, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	return access(path, X_OK) == 0 ? 0 : errno;
}

/* Finds name in the PATH of envp. Remembers EACCES like execvpe does, so a
 * command present but not executable is told apart from an absent one. */
static int resolve(const kft_mountns *ns, const char *name, char *const envp[], const char *cwd,
                   char *buf, size_t cap, kft_error *err)
{
	const char *p = env_path(envp);
	int denied = 0;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t dlen = end ? (size_t)(end - p) : strlen(p);
		if (join_candidate(buf, cap, cwd, p, dlen, name) == 0) {
			int e = check_executable(ns, buf);
			if (e == 0)
				return 0;
			denied |= e == EACCES;
		}
		if (!end)
			break;
		p = end + 1;
	}
	if (denied)
		return kft_error_set(err, KFT_EIO, "exec: \"%s\": %s", name, strerror(EACCES));
	return kft_error_set(err, KFT_ENOTFOUND, "exec: \"%s\": executable file not found in $PATH",
	                     name);
}

/* ---- start ---------------------------------------------------------------- */

/* Opens the log above fd 2 so that dup2 onto 1 and 2 always copies it. */
static int open_log(const char *path, kft_error *err)
{
	int fd;
	do
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "open log %s: %s", path, strerror(errno));
	if (fd <= STDERR_FILENO) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
		int saved = errno;
		close(fd);
		if (high < 0)
			return kft_error_set(err, KFT_EIO, "open log %s: %s", path,
			                     strerror(saved));
		fd = high;
	}
	return fd;
}

static int open_dir(const char *cwd, kft_error *err)
{
	int fd;
	do
		fd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "chdir %s: %s", cwd, strerror(errno));
	return fd;
}

/* What a failed child reports over the pipe: errno, and which stage failed
 * (EXEC_STAGE: the exec or the descriptors before it; otherwise the failing
 * step of entering the mount namespace, as kft_mountns_enter numbers it). */
#define EXEC_STAGE INT_MIN
typedef struct child_report {
	int err;
	int stage;
} child_report;

static void report_and_exit(int report_fd, int stage)
{
	child_report r = {errno, stage};
	while (write(report_fd, &r, sizeof(r)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* What the child needs, all set before it starts (a shared-memory child
 * reads it from the parent's memory, which it must not change). */
typedef struct child_args {
	const char *path;
	char *const *argv, *const *envp;
	const kft_mountns *ns;
	const char *cwd;
	int dir_fd, log_fd, report_fd;
	pid_t parent;
} child_args;

/* In the child, between its start and exec: only async-signal-safe calls,
 * and no write to memory but its own stack (errno aside: a shared-memory
 * child's is the parent's, which the parent reads only when the clone
 * failed). The order matters: the death signal first, then the check that
 * the parent did not die before it was armed (the child would then wait for
 * nothing). The mount namespace comes before the descriptors are
 * rearranged, so a failure in it still reaches the parent over the report
 * pipe. Every signal handler is reset before the mask is emptied, so none of
 * the parent's runs here. */
static int child_exec(void *arg)
{
	static char *const empty_env[] = {NULL};
	const child_args *a = arg;
	int report_fd = a->report_fd, log_fd = a->log_fd, dir_fd = a->dir_fd;
	sigset_t none;
	int stage;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != a->parent)
		_exit(127);
	if (a->ns && kft_mountns_enter(a->ns, a->cwd, &stage) != 0)
		report_and_exit(report_fd, stage);
	setpgid(0, 0);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL); /* fails harmlessly for KILL, STOP and the gaps */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int null_fd = open("/dev/null", O_RDONLY);
	if ((dir_fd >= 0 && fchdir(dir_fd) != 0) || null_fd < 0 ||
	    dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
	    dup2(log_fd, STDERR_FILENO) < 0)
		report_and_exit(report_fd, EXEC_STAGE);
	/* everything above 2 goes, but the close-on-exec report channel */
	if (report_fd > STDERR_FILENO + 1)
		close_range(STDERR_FILENO + 1, (unsigned)report_fd - 1, 0);
	close_range((unsigned)report_fd + 1, ~0u, 0);
	execve(a->path, a->argv, a->envp ? a->envp : empty_env);
	report_and_exit(report_fd, EXEC_STAGE);
	return 127; /* not reached */
}

/* Starts the child: forked for a mount namespace, else sharing our memory
 * (see the top) on a stack of its own, which is free again once clone
 * returns (the child has exec'd or exited by then). -1 and *error on
 * failure. */
static pid_t start_child(child_args *a, int *error)
{
	if (a->ns) {
		pid_t pid = fork();
		if (pid == 0)
			child_exec(a);
		*error = errno;
		return pid;
	}
	char *stack = malloc(CHILD_STACK);
	sigset_t all, old;
	if (!stack) {
		*error = ENOMEM;
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(child_exec, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
	*error = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(stack);
	return pid;
}

/* A failed child's report as an error: a namespace that could not be made
 * is KFT_EUNAVAILABLE (the caller may run without one), the rest as exec. */
static int child_error(const kft_mountns *ns, const char *cmd, const char *cwd,
                       const child_report *r, kft_error *err)
{
	char what[4200];
	if (r->stage == KFT_MOUNTNS_STEP_CWD)
		return kft_error_set(err, KFT_EIO, "chdir %s: %s", cwd ? cwd : "/",
		                     strerror(r->err));
	if (r->stage != EXEC_STAGE)
		return kft_error_set(err, KFT_EUNAVAILABLE, "mount namespace: %s: %s",
		                     kft_mountns_describe(ns, r->stage, what, sizeof(what)),
		                     strerror(r->err));
	return kft_error_set(err, r->err == ENOENT ? KFT_ENOTFOUND : KFT_EIO, "exec: \"%s\": %s",
	                     cmd, strerror(r->err));
}

/* Our own start rather than posix_spawn, for what posix_spawn cannot do:
 * PR_SET_PDEATHSIG, which the child must set on itself, and entering a mount
 * namespace. The death signal kills the process when the supervisor dies,
 * even by SIGKILL, instead of leaving it for the next CLI call to notice; it
 * fires when the *thread* that started it ends: the supervisor starts pods
 * from its main thread only (its status server's threads never start
 * processes). A failed exec is reported back over a close-on-exec pipe, as
 * glibc's posix_spawn does, and the failed child is reaped here. */
static int spawn_resolved(const char *path, char *const argv[], char *const envp[],
                          const kft_mountns *ns, const char *cwd, int dir_fd, int log_fd,
                          pid_t *pid, kft_error *err)
{
	int report[2];
	child_report r;
	ssize_t n;
	if (pipe2(report, O_CLOEXEC) != 0)
		return kft_error_set(err, KFT_EIO, "exec: \"%s\": pipe: %s", argv[0],
		                     strerror(errno));
	child_args a = {.path = path,
	                .argv = argv,
	                .envp = envp,
	                .ns = ns,
	                .cwd = cwd,
	                .dir_fd = dir_fd,
	                .log_fd = log_fd,
	                .report_fd = report[1],
	                .parent = getpid()};
	int start_errno = 0;
	*pid = start_child(&a, &start_errno);
	close(report[1]);
	if (*pid < 0) {
		close(report[0]);
		return kft_error_set(err, KFT_EIO, "exec: \"%s\": fork: %s", argv[0],
		                     strerror(start_errno));
	}
	setpgid(*pid, *pid); /* also done in the child: whichever runs first wins */
	do
		n = read(report[0], &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(report[0]);
	if (n <= 0)
		return 0; /* EOF: the exec succeeded and closed the pipe */
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
	if (n != (ssize_t)sizeof(r))
		r = (child_report){EIO, EXEC_STAGE};
	return child_error(ns, argv[0], cwd, &r, err);
}

int kft_proc_start(char *const argv[], char *const envp[], const char *cwd, const char *log_path,
                   kft_proc *out, kft_error *err)
{
	return kft_proc_start_in(NULL, argv, envp, cwd, log_path, out, err);
}

int kft_proc_start_in(const kft_mountns *ns, char *const argv[], char *const envp[],
                      const char *cwd, const char *log_path, kft_proc *out, kft_error *err)
{
	char found[4096];
	const char *path;
	int dir_fd = -1, log_fd, rc;
	pid_t pid = -1;

	*out = (kft_proc){.pid = -1, .pgid = -1, .log_fd = -1};
	if (!argv || !argv[0] || !argv[0][0])
		return kft_error_set(err, KFT_EINVAL, "exec: no command given");
	if (!log_path)
		return kft_error_set(err, KFT_EINVAL, "exec: \"%s\": no log path", argv[0]);
	path = argv[0];
	if (!strchr(path, '/')) {
		if ((rc = resolve(ns, path, envp, cwd, found, sizeof(found), err)) != 0)
			return rc;
		path = found;
	}
	/* a bad cwd is reported as such: opened here for the child's fchdir,
	 * or, in a view, changed to by name in the child (stage -3) */
	if (cwd && !ns && (dir_fd = open_dir(cwd, err)) < 0)
		return dir_fd;
	log_fd = open_log(log_path, err);
	if (log_fd < 0) {
		if (dir_fd >= 0)
			close(dir_fd);
		return log_fd;
	}
	rc = spawn_resolved(path, argv, envp, ns, cwd, dir_fd, log_fd, &pid, err);
	if (dir_fd >= 0)
		close(dir_fd);
	if (rc != 0) {
		close(log_fd);
		return rc;
	}
	*out = (kft_proc){.pid = pid, .pgid = pid, .log_fd = log_fd};
	return 0;
}

/* ---- reaping -------------------------------------------------------------- */

static void mark_reaped(kft_proc *p, int status)
{
	p->reaped = 1;
	p->status = status;
	if (p->log_fd >= 0) {
		close(p->log_fd);
		p->log_fd = -1;
	}
}

static void report(const kft_proc *p, int *exit_code, int *signal)
{
	int code = 0, sig = 0;
	if (WIFEXITED(p->status)) {
		code = WEXITSTATUS(p->status);
	} else if (WIFSIGNALED(p->status)) {
		sig = WTERMSIG(p->status);
		code = 128 + sig;
	}
	if (exit_code)
		*exit_code = code;
	if (signal)
		*signal = sig;
}

/* One waitpid on the process, retried on EINTR. 1: reaped, 0: still running. */
static int reap(kft_proc *p, int flags)
{
	int status;
	pid_t r;
	if (p->reaped)
		return 1;
	if (p->pid <= 0)
		return -1;
	do
		r = waitpid(p->pid, &status, flags);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -1;
	if (r == 0)
		return 0;
	mark_reaped(p, status);
	return 1;
}

int kft_proc_poll(kft_proc *p, int *exited, int *exit_code, int *signal)
{
	int r = reap(p, WNOHANG);
	if (r < 0)
		return KFT_EIO;
	if (exited)
		*exited = r;
	if (r)
		report(p, exit_code, signal);
	return 0;
}

int kft_proc_wait(kft_proc *p, int *exit_code, int *signal)
{
	if (reap(p, 0) < 0)
		return KFT_EIO;
	report(p, exit_code, signal);
	return 0;
}

/* ---- stopping ------------------------------------------------------------- */

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL); /* an early wake-up only means an earlier re-check */
}

/* Reaps every group member that is our child (the process itself, and
 * grandchildren reparented to us when we are a subreaper). */
static void reap_group(kft_proc *p)
{
	int status;
	pid_t r;
	for (;;) {
		r = waitpid(-p->pgid, &status, WNOHANG);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (r == p->pid)
			mark_reaped(p, status);
	}
}

static int group_empty(const kft_proc *p)
{
	return killpg(p->pgid, 0) != 0 && errno == ESRCH;
}

/* Waits until the group is empty or the deadline passes; 1 when empty. */
static int wait_group(kft_proc *p, long long deadline)
{
	for (;;) {
		reap_group(p);
		if (p->reaped && group_empty(p))
			return 1;
		if (kft_clock_mono_ms() >= deadline)
			return 0;
		sleep_ms(STOP_POLL_MS);
	}
}

static int signal_group(const kft_proc *p, int sig)
{
	return killpg(p->pgid, sig) == 0 || errno == ESRCH ? 0 : -1;
}

int kft_proc_stop(kft_proc *p, int grace_ms)
{
	if (p->pid <= 0 || p->pgid <= 0)
		return KFT_EINVAL;
	if (grace_ms < 0)
		grace_ms = 0;
	if (signal_group(p, SIGTERM) != 0)
		return KFT_EIO;
	/* A stopped (SIGSTOP) group would never act on SIGTERM otherwise. */
	signal_group(p, SIGCONT);
	if (wait_group(p, kft_clock_mono_ms() + grace_ms))
		return 0;
	if (signal_group(p, SIGKILL) != 0)
		return KFT_EIO;
	/* The leader may have moved itself to another group; it still must die. */
	if (!p->reaped)
		kill(p->pid, SIGKILL);
	if (!p->reaped && reap(p, 0) < 0)
		return KFT_EIO;
	return wait_group(p, kft_clock_mono_ms() + AFTER_KILL_MS) ? 0 : KFT_EIO;
}

/* ---- log line prefixing --------------------------------------------------- */

void kft_prefixer_init(kft_prefixer *pf, const char *prefix)
{
	pf->prefix = prefix ? prefix : "";
	pf->len = 0;
	pf->on_line = NULL;
	pf->on_line_user = NULL;
}

void kft_prefixer_set_line_fn(kft_prefixer *pf, kft_prefixer_line_fn fn, void *user)
{
	pf->on_line = fn;
	pf->on_line_user = user;
}

static int emit(kft_prefixer *pf, const char *s, size_t n, int newline, FILE *out)
{
	if (pf->on_line)
		return pf->on_line(pf->on_line_user, pf->prefix, s, n, newline, out);
	if (fputs(pf->prefix, out) == EOF)
		return KFT_EIO;
	if (n && fwrite(s, 1, n, out) != n)
		return KFT_EIO;
	if (newline && fputc('\n', out) == EOF)
		return KFT_EIO;
	return 0;
}

int kft_prefixer_feed(kft_prefixer *pf, const char *buf, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			if (emit(pf, pf->line, pf->len, 1, out) != 0)
				return KFT_EIO;
			pf->len = 0;
			continue;
		}
		if (pf->len == sizeof(pf->line)) {
			/* An over-long line goes out in pieces, each on a line of its own. */
			if (emit(pf, pf->line, pf->len, 1, out) != 0)
				return KFT_EIO;
			pf->len = 0;
		}
		pf->line[pf->len++] = buf[i];
	}
	return fflush(out) == 0 ? 0 : KFT_EIO;
}

int kft_prefixer_flush(kft_prefixer *pf, FILE *out)
{
	if (pf->len == 0)
		return 0;
	if (emit(pf, pf->line, pf->len, 1, out) != 0)
		return KFT_EIO;
	pf->len = 0;
	return fflush(out) == 0 ? 0 : KFT_EIO;
}

int kft_prefixer_copy(kft_prefixer *pf, int fd, FILE *out, int *would_block)
{
	char buf[4096];
	ssize_t r;
	if (would_block)
		*would_block = 0;
	do
		r = read(fd, buf, sizeof(buf));
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return KFT_EIO;
		if (would_block)
			*would_block = 1;
		return 0;
	}
	if (r == 0)
		return kft_prefixer_flush(pf, out);
	return kft_prefixer_feed(pf, buf, (size_t)r, out) == 0 ? (int)r : KFT_EIO;
}
