/*
 * test_spawn.c - the process launcher against real processes.
 *
 * Every test works in a fresh temporary directory and starts real programs
 * from the base system (/bin/true, /bin/sh as a scripted child, /usr/bin/env).
 * Nothing asserts on timing: stop tests only check that processes are gone
 * afterwards, using pids the children wrote into their log.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local/spawn.h"

typedef struct fixture {
	char dir[64];
	char log[128];
} fixture;

static char *const base_env[] = {"PATH=/usr/bin:/bin", NULL};

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/kft-spawn-XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->log, sizeof(f->log), "%s/out.log", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	int rc = system(cmd);
	free(f);
	return rc == 0 ? 0 : -1;
}

/* Reads the whole log into a static buffer (tests are single-threaded). */
static const char *read_log(const fixture *f)
{
	static char buf[16384];
	FILE *fp = fopen(f->log, "r");
	size_t n = 0;
	if (fp) {
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	return buf;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void run(fixture *f, char *const argv[], char *const envp[], const char *cwd, int *code,
                int *sig)
{
	kft_proc p;
	kft_error err;
	int rc = kft_proc_start(argv, envp, cwd, f->log, &p, &err);
	if (rc != 0)
		fail_msg("start failed: %s", err.message);
	assert_true(p.pid > 0);
	assert_int_equal(p.pgid, p.pid);
	assert_int_equal(kft_proc_wait(&p, code, sig), 0);
	assert_int_equal(p.log_fd, -1);
}

static void test_true_exits_zero(void **state)
{
	char *argv[] = {"true", NULL};
	int code = -1, sig = -1;
	run(*state, argv, base_env, NULL, &code, &sig);
	assert_int_equal(code, 0);
	assert_int_equal(sig, 0);
}

static void test_exit_code(void **state)
{
	char *argv[] = {"sh", "-c", "exit 3", NULL};
	int code = -1, sig = -1;
	run(*state, argv, base_env, NULL, &code, &sig);
	assert_int_equal(code, 3);
	assert_int_equal(sig, 0);
}

static void test_killed_by_signal(void **state)
{
	char *argv[] = {"sh", "-c", "kill -KILL $$", NULL};
	int code = -1, sig = -1;
	run(*state, argv, base_env, NULL, &code, &sig);
	assert_int_equal(sig, SIGKILL);
	assert_int_equal(code, 128 + SIGKILL);
}

static void assert_no_children(void)
{
	int status;
	errno = 0;
	assert_int_equal(waitpid(-1, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void test_missing_command(void **state)
{
	fixture *f = *state;
	char *argv[] = {"kft-no-such-command", NULL};
	kft_proc p;
	kft_error err;
	int before = count_fds();
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, &err), KFT_ENOTFOUND);
	assert_string_equal(err.message,
	                    "exec: \"kft-no-such-command\": executable file not found in $PATH");
	assert_int_equal(p.pid, -1);
	assert_int_equal(count_fds(), before);
	assert_no_children();
}

/* A path that exists but cannot be executed fails inside posix_spawn itself:
 * the error must still come back to the parent and leave no zombie. */
static void test_exec_failure_reported(void **state)
{
	fixture *f = *state;
	char script[160];
	snprintf(script, sizeof(script), "%s/noexec.sh", f->dir);
	FILE *fp = fopen(script, "w");
	assert_non_null(fp);
	fputs("garbage that is not a program\n", fp);
	fclose(fp);
	assert_int_equal(chmod(script, 0755), 0);
	char *argv[] = {script, NULL};
	kft_proc p;
	kft_error err;
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "exec: \""));
	assert_non_null(strstr(err.message, "noexec.sh"));
	assert_no_children();

	char *absent[] = {"/nonexistent/kft-bin", NULL};
	assert_int_equal(kft_proc_start(absent, base_env, NULL, f->log, &p, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "exec: \"/nonexistent/kft-bin\""));
	assert_no_children();
}

/* PATH comes from envp, not from the test's own environment. */
static void test_path_from_envp(void **state)
{
	fixture *f = *state;
	char *argv[] = {"true", NULL};
	char *const env[] = {"PATH=/kft-nowhere", NULL};
	kft_proc p;
	kft_error err;
	assert_int_equal(kft_proc_start(argv, env, NULL, f->log, &p, &err), KFT_ENOTFOUND);
	assert_no_children();
}

static void test_stdout_and_stderr_logged(void **state)
{
	fixture *f = *state;
	char *argv[] = {"sh", "-c", "echo to-out; echo to-err >&2; read x || echo stdin-eof", NULL};
	int code = -1;
	mode_t old = umask(022); /* so the mode seen is exactly the one asked for */
	run(f, argv, base_env, NULL, &code, NULL);
	assert_int_equal(code, 0);
	/* A second run appends rather than truncates. */
	run(f, argv, base_env, NULL, &code, NULL);
	assert_string_equal(read_log(f), "to-out\nto-err\nstdin-eof\nto-out\nto-err\nstdin-eof\n");
	struct stat st;
	umask(old);
	assert_int_equal(stat(f->log, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
}

static void test_env_is_exactly_envp(void **state)
{
	fixture *f = *state;
	char *argv[] = {"/usr/bin/env", NULL};
	char *const env[] = {"PATH=/usr/bin:/bin", "KFT_A=1", "PET_NNODES=2", NULL};
	setenv("KFT_SPAWN_LEAK", "yes", 1);
	run(f, argv, env, NULL, NULL, NULL);
	unsetenv("KFT_SPAWN_LEAK");
	assert_string_equal(read_log(f), "PATH=/usr/bin:/bin\nKFT_A=1\nPET_NNODES=2\n");
}

static void test_empty_env(void **state)
{
	fixture *f = *state;
	char *argv[] = {"/usr/bin/env", NULL};
	run(f, argv, NULL, NULL, NULL, NULL);
	assert_string_equal(read_log(f), "");
}

static void test_cwd_honoured(void **state)
{
	fixture *f = *state;
	char *argv[] = {"/bin/pwd", NULL};
	char expect[128];
	run(f, argv, base_env, f->dir, NULL, NULL);
	snprintf(expect, sizeof(expect), "%s\n", f->dir);
	assert_string_equal(read_log(f), expect);
}

static void test_bad_cwd(void **state)
{
	fixture *f = *state;
	char *argv[] = {"true", NULL};
	kft_proc p;
	kft_error err;
	assert_int_equal(kft_proc_start(argv, base_env, "/kft-no-such-dir", f->log, &p, &err),
	                 KFT_EIO);
	assert_non_null(strstr(err.message, "chdir /kft-no-such-dir"));
	assert_no_children();
}

static void test_bad_args(void **state)
{
	fixture *f = *state;
	char *empty[] = {NULL};
	kft_proc p;
	assert_int_equal(kft_proc_start(empty, base_env, NULL, f->log, &p, NULL), KFT_EINVAL);
	char *argv[] = {"true", NULL};
	assert_int_equal(kft_proc_start(argv, base_env, NULL, NULL, &p, NULL), KFT_EINVAL);
}

/* The child gets 0, 1, 2 and nothing else, even though we hold an extra fd
 * without close-on-exec. ls runs as the shell's child and lists the shell's
 * fds, so its own directory handle does not show. */
static void test_child_sees_only_stdio(void **state)
{
	fixture *f = *state;
	int extra = dup(STDERR_FILENO);
	assert_true(extra > 2);
	char *argv[] = {"sh", "-c", "ls /proc/$$/fd", NULL};
	run(f, argv, base_env, NULL, NULL, NULL);
	close(extra);
	assert_string_equal(read_log(f), "0\n1\n2\n");
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* The child starts with default dispositions and an empty mask whatever the
 * starter ignores, catches or blocks (posix_spawn's POSIX_SPAWN_SETSIGDEF
 * and SETSIGMASK, as the kubelet's runtime starts a container), and the
 * starter's own mask and handlers are as they were: signals are blocked
 * only across the start of a child that shares its memory (spawn.c). */
static void test_signals_reset_and_restored(void **state)
{
	fixture *f = *state;
	struct sigaction usr1 = {.sa_handler = on_usr1}, old_usr1, got;
	sigset_t block, old_mask, now;
	void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	assert_int_equal(sigaction(SIGUSR1, &usr1, &old_usr1), 0);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old_mask), 0);
	char *argv[] = {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL};
	run(f, argv, base_env, NULL, NULL, NULL);
	assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &now), 0);
	assert_true(sigismember(&now, SIGUSR2));
	assert_false(sigismember(&now, SIGUSR1));
	assert_int_equal(sigaction(SIGUSR1, NULL, &got), 0);
	assert_ptr_equal(got.sa_handler, on_usr1);
	assert_ptr_equal(signal(SIGPIPE, old_pipe), SIG_IGN);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	/* Signals 32 up to SIGRTMIN are the C library's own: sigaction refuses
	 * them, so one the starter's environment ignored stays ignored (glibc
	 * installs its handlers for them in every program it starts anyway). */
	unsigned long long blk, ign, libc_own = 0;
	assert_int_equal(sscanf(read_log(f), "SigBlk:\t%llx\nSigIgn:\t%llx\n", &blk, &ign), 2);
	for (int sig = 32; sig < SIGRTMIN; sig++)
		libc_own |= 1ULL << (sig - 1);
	assert_int_equal(blk, 0);
	assert_int_equal(ign & ~libc_own, 0);
}

static void test_no_fd_leak(void **state)
{
	fixture *f = *state;
	char *argv[] = {"true", NULL};
	int before = count_fds();
	for (int i = 0; i < 100; i++) {
		int code = -1;
		run(f, argv, base_env, f->dir, &code, NULL);
		assert_int_equal(code, 0);
	}
	assert_int_equal(count_fds(), before);
}

static void test_poll(void **state)
{
	fixture *f = *state;
	char *argv[] = {"sh", "-c", "read x; exit 7", NULL};
	kft_proc p;
	int exited = -1, code = -1, sig = -1;
	/* stdin is /dev/null, so `read` returns at once; poll until it has ended. */
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, NULL), 0);
	do
		assert_int_equal(kft_proc_poll(&p, &exited, &code, &sig), 0);
	while (!exited);
	assert_int_equal(code, 7);
	assert_int_equal(sig, 0);
	/* Asking again reports the same result. */
	exited = 0;
	assert_int_equal(kft_proc_poll(&p, &exited, &code, NULL), 0);
	assert_int_equal(exited, 1);
	assert_int_equal(code, 7);
}

static void test_poll_running(void **state)
{
	fixture *f = *state;
	char *argv[] = {"sleep", "100", NULL};
	kft_proc p;
	int exited = -1;
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, NULL), 0);
	assert_int_equal(kft_proc_poll(&p, &exited, NULL, NULL), 0);
	assert_int_equal(exited, 0);
	assert_int_equal(kft_proc_stop(&p, 1000), 0);
	assert_int_equal(kill(p.pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* Reads two pids the child printed ("PARENT CHILD\n") once both are logged. */
static void read_pids(fixture *f, long *a, long *b)
{
	/* Bounded only so a broken child cannot hang the suite (minutes). */
	for (int i = 0; i < 30000; i++) {
		if (sscanf(read_log(f), "%ld %ld\n", a, b) == 2)
			return;
		usleep(10000);
	}
	fail_msg("the child never logged its pids: %s", read_log(f));
}

static void assert_gone(long pid)
{
	errno = 0;
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* A shell that starts a grandchild and ignores SIGTERM: stop must escalate to
 * SIGKILL and take the whole group down. We are a subreaper so the orphaned
 * grandchild comes back to us and stop can reap it. */
static void test_stop_kills_tree(void **state)
{
	fixture *f = *state;
	char *argv[] = {"sh", "-c", "trap '' TERM; sleep 100 & echo $$ $!; wait", NULL};
	kft_proc p;
	long parent, child;
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, NULL), 0);
	read_pids(f, &parent, &child);
	assert_int_equal(parent, p.pid);
	assert_int_equal(kft_proc_stop(&p, 50), 0);
	assert_true(p.reaped);
	assert_int_equal(p.log_fd, -1);
	assert_gone(parent);
	assert_gone(child);
	int code = -1, sig = -1;
	assert_int_equal(kft_proc_wait(&p, &code, &sig), 0);
	assert_int_equal(sig, SIGKILL);
	assert_no_children();
}

/* A well-behaved tree ends on SIGTERM; stop reports how it ended. */
static void test_stop_term(void **state)
{
	fixture *f = *state;
	char *argv[] = {"sh", "-c", "sleep 100 & echo $$ $!; wait", NULL};
	kft_proc p;
	long parent, child;
	assert_int_equal(kft_proc_start(argv, base_env, NULL, f->log, &p, NULL), 0);
	read_pids(f, &parent, &child);
	assert_int_equal(kft_proc_stop(&p, 60000), 0);
	assert_gone(parent);
	assert_gone(child);
	int sig = -1;
	assert_int_equal(kft_proc_wait(&p, NULL, &sig), 0);
	assert_int_equal(sig, SIGTERM); /* within the grace period: never SIGKILL */
	/* Stopping again is harmless. */
	assert_int_equal(kft_proc_stop(&p, 0), 0);
	assert_no_children();
}

static void test_prefixer(void **state)
{
	(void)state;
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);
	assert_non_null(fp);
	kft_prefixer pf;
	kft_prefixer_init(&pf, "[node-0 rank 1] ");
	assert_int_equal(kft_prefixer_feed(&pf, "hel", 3, fp), 0);
	assert_int_equal(kft_prefixer_feed(&pf, "lo\nwor", 6, fp), 0);
	assert_int_equal(kft_prefixer_feed(&pf, "ld\n\npart", 8, fp), 0);
	assert_int_equal(kft_prefixer_flush(&pf, fp), 0);
	fclose(fp);
	assert_string_equal(out, "[node-0 rank 1] hello\n[node-0 rank 1] world\n[node-0 rank 1] \n"
	                         "[node-0 rank 1] part\n");
	free(out);
}

/* A line writer replaces the plain form for every line, whole or flushed,
 * with the prefix and whether a newline ends it. */
static int bracket_line(void *user, const char *prefix, const char *s, size_t n, int newline,
                        FILE *out)
{
	(*(int *)user)++;
	fprintf(out, "<%s|%.*s|%d>", prefix, (int)n, s, newline);
	return 0;
}

static void test_prefixer_line_fn(void **state)
{
	(void)state;
	char *out = NULL;
	size_t len = 0;
	int calls = 0;
	FILE *fp = open_memstream(&out, &len);
	assert_non_null(fp);
	kft_prefixer pf;
	kft_prefixer_init(&pf, "p ");
	kft_prefixer_set_line_fn(&pf, bracket_line, &calls);
	assert_int_equal(kft_prefixer_feed(&pf, "a\nbc", 4, fp), 0);
	assert_int_equal(kft_prefixer_flush(&pf, fp), 0);
	fclose(fp);
	assert_string_equal(out, "<p |a|1><p |bc|1>");
	assert_int_equal(calls, 2);
	free(out);
}

static void test_prefixer_long_line_and_copy(void **state)
{
	(void)state;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	char *big = malloc(KFT_PREFIXER_LINE_MAX + 10);
	assert_non_null(big);
	memset(big, 'x', KFT_PREFIXER_LINE_MAX + 10);
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);
	kft_prefixer pf;
	kft_prefixer_init(&pf, "> ");
	assert_int_equal(kft_prefixer_feed(&pf, big, KFT_PREFIXER_LINE_MAX + 10, fp), 0);
	free(big);
	assert_int_equal(write(fds[1], "tail", 4), 4);
	close(fds[1]);
	assert_int_equal(kft_prefixer_copy(&pf, fds[0], fp, NULL), 4);
	assert_int_equal(kft_prefixer_copy(&pf, fds[0], fp, NULL), 0);
	close(fds[0]);
	fclose(fp);
	/* Two prefixed lines: the full buffer, then the remainder plus "tail". */
	assert_int_equal(len, 2 + KFT_PREFIXER_LINE_MAX + 1 + 2 + 10 + 4 + 1);
	assert_memory_equal(out, "> xx", 4);
	assert_string_equal(out + len - 8, "xxxtail\n");
	assert_int_equal(out[2 + KFT_PREFIXER_LINE_MAX], '\n');
	free(out);
}

int main(void)
{
	/* Orphaned grandchildren of a stopped tree come back to us to reap. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		return 1;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_true_exits_zero),
	        T(test_exit_code),
	        T(test_killed_by_signal),
	        T(test_missing_command),
	        T(test_exec_failure_reported),
	        T(test_path_from_envp),
	        T(test_stdout_and_stderr_logged),
	        T(test_env_is_exactly_envp),
	        T(test_empty_env),
	        T(test_cwd_honoured),
	        T(test_bad_cwd),
	        T(test_bad_args),
	        T(test_child_sees_only_stdio),
	        T(test_signals_reset_and_restored),
	        T(test_no_fd_leak),
	        T(test_poll),
	        T(test_poll_running),
	        T(test_stop_kills_tree),
	        T(test_stop_term),
	        cmocka_unit_test(test_prefixer),
	        cmocka_unit_test(test_prefixer_line_fn),
	        cmocka_unit_test(test_prefixer_long_line_and_copy),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
