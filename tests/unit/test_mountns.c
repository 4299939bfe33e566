/*
 * test_mountns.c - a local pod's private filesystem view, with real
 * processes in real namespaces.
 *
 * What it pins is what a container gives a pod (the kubelet binds each
 * volume at its mountPath, readOnly mounts refuse writes, the rest of the
 * image is visible as before): a process that writes at a mount path writes
 * into its job's directory, however the path reaches it, and never creates
 * the mount path on the host. Mount paths are made unique per run under "/"
 * and under /etc, so the test can tell the host's tree was left alone.
 * Run as root it also runs the same checks as an unprivileged user (through
 * a user namespace); where the kernel refuses those, that case is skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local/mountns.h"
#include "local/spawn.h"

typedef struct fixture {
	char dir[64];   /* the "job directory", under /tmp */
	char vol[128];  /* a volume directory in it */
	char conf[128]; /* a read-only volume */
	char log[128];
	char ws[64];      /* a mount path under /, unique */
	char etc[64];     /* a mount path under /etc, unique */
	char ws_out[128]; /* ws + "/output", a second volume below the first */
	char out_vol[128];
} fixture;

static char *const base_env[] = {"PATH=/usr/bin:/bin", NULL};

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/kft-mountns-XXXXXX");
	if (!mkdtemp(f->dir) || chmod(f->dir, 0755) != 0) {
		free(f);
		return -1;
	}
	const char *id = f->dir + strlen("/tmp/kft-mountns-");
	snprintf(f->vol, sizeof(f->vol), "%s/vol", f->dir);
	snprintf(f->conf, sizeof(f->conf), "%s/conf", f->dir);
	snprintf(f->out_vol, sizeof(f->out_vol), "%s/out", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/pod.log", f->dir);
	snprintf(f->ws, sizeof(f->ws), "/kft-ws-%s", id);
	snprintf(f->etc, sizeof(f->etc), "/etc/kft-mpi-%s", id);
	snprintf(f->ws_out, sizeof(f->ws_out), "%s/output", f->ws);
	if (mkdir(f->vol, 0777) != 0 || mkdir(f->conf, 0755) != 0 || mkdir(f->out_vol, 0777) != 0)
		return -1;
	chmod(f->vol, 0777);
	chmod(f->out_vol, 0777);
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

static const char *read_file(const char *path)
{
	static char buf[8192];
	FILE *fp = fopen(path, "r");
	size_t n = 0;
	if (fp) {
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	return buf;
}

static kft_mountns *plan(const fixture *f)
{
	kft_mount m[] = {{(char *)f->ws, (char *)f->vol, 0},
	                 {(char *)f->ws_out, (char *)f->out_vol, 0},
	                 {(char *)f->etc, (char *)f->conf, 1}};
	kft_mountns *ns = NULL;
	kft_error err;
	if (kft_mountns_plan(m, 3, &ns, &err) != 0)
		fail_msg("plan: %s", err.message);
	return ns;
}

/* Runs script with sh -c in the view; returns its exit code. */
static int run_in(const kft_mountns *ns, const fixture *f, const char *cwd, const char *script)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};
	kft_proc p;
	kft_error err;
	int code = -1, sig = 0;
	if (kft_proc_start_in(ns, argv, base_env, cwd, f->log, &p, &err) != 0)
		fail_msg("start: %s", err.message);
	assert_int_equal(kft_proc_wait(&p, &code, &sig), 0);
	assert_int_equal(sig, 0);
	return code;
}

static void assert_absent(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		fail_msg("%s exists on the host", path);
	assert_int_equal(errno, ENOENT);
}

/* Every form in which a path reaches a process: an argv word, a value after
 * '=' (torchtune's key=value overrides), a flag's value, the program's own
 * code (a shell script here), an env value, the working directory. */
static void check_writes_land_in_the_job(const fixture *f, const kft_mountns *ns)
{
	char script[1024], path[256];
	snprintf(script, sizeof(script),
	         "set -e; echo word > %1$s/a; x=output_dir=%1$s/output; echo kv > ${x#*=}/b; "
	         "mkdir -p %1$s/output/ckpt && echo deep > %1$s/output/ckpt/c; "
	         "echo here > ./d; test \"$(pwd)\" = %1$s; "
	         "cat /etc/passwd > /dev/null; test -d /proc/self; ls %2$s > /dev/null",
	         f->ws, f->dir);
	assert_int_equal(run_in(ns, f, f->ws, script), 0);
	snprintf(path, sizeof(path), "%s/a", f->vol);
	assert_string_equal(read_file(path), "word\n");
	snprintf(path, sizeof(path), "%s/d", f->vol);
	assert_string_equal(read_file(path), "here\n");
	snprintf(path, sizeof(path), "%s/b", f->out_vol);
	assert_string_equal(read_file(path), "kv\n");
	snprintf(path, sizeof(path), "%s/ckpt/c", f->out_vol);
	assert_string_equal(read_file(path), "deep\n");
	assert_absent(f->ws);
	assert_absent(f->etc);
}

static void test_writes_stay_in_the_job(void **state)
{
	fixture *f = *state;
	kft_mountns *ns = plan(f);
	check_writes_land_in_the_job(f, ns);
	kft_mountns_free(ns);
}

/* A readOnly volume refuses writes (a configMap or Secret volume, or a
 * claim mounted readOnly), and its files are readable at the mount path,
 * under a host directory (/etc) that keeps its own files visible. */
static void test_read_only_volume_under_etc(void **state)
{
	fixture *f = *state;
	char path[256], script[512];
	snprintf(path, sizeof(path), "%s/hostfile", f->conf);
	write_text(path, "localhost slots=2\n", 0644);
	kft_mountns *ns = plan(f);
	snprintf(script, sizeof(script),
	         "set -e; grep -q slots=2 %1$s/hostfile; test -r /etc/passwd; "
	         "if echo x > %1$s/new 2>/dev/null; then exit 9; fi",
	         f->etc);
	assert_int_equal(run_in(ns, f, "/", script), 0);
	snprintf(path, sizeof(path), "%s/new", f->conf);
	assert_absent(path);
	assert_absent(f->etc);
	kft_mountns_free(ns);
}

/* A command that lives in a volume runs by its path in the view, named
 * directly or found through a PATH entry in the view. */
static void test_command_from_a_volume(void **state)
{
	fixture *f = *state;
	char path[320], bin[192], envpath[256], word[256];
	snprintf(bin, sizeof(bin), "%s/bin", f->vol);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(path, sizeof(path), "%s/hello", bin);
	write_text(path, "#!/bin/sh\necho \"hello from $0\"\n", 0755);
	kft_mountns *ns = plan(f);
	snprintf(envpath, sizeof(envpath), "PATH=%s/bin:/usr/bin:/bin", f->ws);
	char *env[] = {envpath, NULL};
	char *argv[] = {"hello", NULL};
	kft_proc p;
	kft_error err;
	int code = -1, sig = 0;
	assert_int_equal(kft_proc_start_in(ns, argv, env, NULL, f->log, &p, &err), 0);
	assert_int_equal(kft_proc_wait(&p, &code, &sig), 0);
	assert_int_equal(code, 0);
	snprintf(word, sizeof(word), "hello from %s/bin/hello\n", f->ws);
	assert_string_equal(read_file(f->log), word);
	kft_mountns_free(ns);
}

/* A working directory missing in the view is the chdir error, not a failed
 * namespace (the caller would otherwise retry without one). */
static void test_missing_cwd(void **state)
{
	fixture *f = *state;
	char cwd[128];
	snprintf(cwd, sizeof(cwd), "%s/nope", f->ws);
	kft_mountns *ns = plan(f);
	char *argv[] = {"true", NULL};
	kft_proc p;
	kft_error err;
	assert_int_equal(kft_proc_start_in(ns, argv, base_env, cwd, f->log, &p, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "chdir"));
	assert_int_equal(p.pid, -1);
	kft_mountns_free(ns);
}

/* The same as an unprivileged user: the view then needs a user namespace
 * (the uid stays the caller's, so the volume's files are the caller's). */
static void test_unprivileged_user(void **state)
{
	fixture *f = *state;
	if (geteuid() != 0)
		skip(); /* the whole file already ran unprivileged */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* as a user who logged in: changing uids left this process
		 * undumpable, which would make its /proc/self files root's */
		if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
		    prctl(PR_SET_DUMPABLE, 1) != 0)
			_exit(3);
		kft_mountns *ns = plan(f);
		char *argv[] = {"sh", "-c", "echo $(id -u) > ./who", NULL};
		kft_proc p;
		kft_error err;
		int code = -1, sig = 0;
		char log[160];
		snprintf(log, sizeof(log), "%s/nobody.log", f->vol);
		int rc = kft_proc_start_in(ns, argv, base_env, f->ws, log, &p, &err);
		if (rc == KFT_EUNAVAILABLE) {
			fprintf(stderr, "skipped: %s\n", err.message);
			_exit(77);
		}
		if (rc != 0 || kft_proc_wait(&p, &code, &sig) != 0 || code != 0)
			_exit(4);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip(); /* this kernel does not allow unprivileged user namespaces */
	assert_int_equal(WEXITSTATUS(status), 0);
	char path[256];
	snprintf(path, sizeof(path), "%s/who", f->vol);
	assert_string_equal(read_file(path), "65534\n");
	assert_absent(f->ws);
}

static void test_host_path(void **state)
{
	fixture *f = *state;
	kft_mountns *ns = plan(f);
	char buf[256], in[128], want[256];
	snprintf(in, sizeof(in), "%s/output/x", f->ws);
	snprintf(want, sizeof(want), "%s/x", f->out_vol);
	assert_string_equal(kft_mountns_host_path(ns, in, buf, sizeof(buf)), want);
	snprintf(in, sizeof(in), "%sx/y", f->ws); /* not at a path boundary */
	assert_string_equal(kft_mountns_host_path(ns, in, buf, sizeof(buf)), in);
	assert_string_equal(kft_mountns_host_path(NULL, "/a", buf, sizeof(buf)), "/a");
	assert_null(kft_mountns_host_path(ns, in, buf, 4));
	assert_string_equal(kft_mountns_describe(ns, -1, buf, sizeof(buf)),
	                    "create the namespaces");
	kft_mountns_free(ns);
}

/* A step that fails (here: a volume directory that went away) is the view's
 * failure, named, with nothing started: the caller may start without one. */
static void test_failed_step(void **state)
{
	fixture *f = *state;
	char gone[160];
	snprintf(gone, sizeof(gone), "%s/gone", f->dir);
	kft_mount m = {f->ws, gone, 0};
	kft_mountns *ns = NULL;
	kft_error err;
	assert_int_equal(kft_mountns_plan(&m, 1, &ns, &err), 0);
	char *argv[] = {"true", NULL};
	kft_proc p;
	assert_int_equal(kft_proc_start_in(ns, argv, base_env, NULL, f->log, &p, &err),
	                 KFT_EUNAVAILABLE);
	char want[512];
	snprintf(want, sizeof(want), "mount namespace: bind %s onto %s: No such file or directory",
	         gone, f->ws);
	assert_string_equal(err.message, want);
	assert_int_equal(p.pid, -1);
	kft_mountns_free(ns);
}

static void test_bad_plans(void **state)
{
	(void)state;
	kft_mount rel = {"workspace", "/tmp", 0}, root = {"/", "/tmp", 0};
	kft_mountns *ns = (kft_mountns *)1;
	kft_error err;
	assert_int_equal(kft_mountns_plan(&rel, 1, &ns, &err), KFT_EINVAL);
	assert_null(ns);
	assert_int_equal(kft_mountns_plan(&root, 1, &ns, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "must be absolute and not /"));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_writes_stay_in_the_job),
	        T(test_read_only_volume_under_etc),
	        T(test_command_from_a_volume),
	        T(test_missing_cwd),
	        T(test_unprivileged_user),
	        T(test_host_path),
	        T(test_failed_step),
	        cmocka_unit_test(test_bad_plans),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
