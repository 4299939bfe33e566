/*
 * test_local.c - the local backend end to end with real processes: submit,
 * a real detached supervisor, and what get/delete/suspend see.
 *
 * The supervisor is this very test program: main() turns into
 * `supervise --state-dir DIR --go-fd FD` when started that way, so the test
 * runs the same code path as `kftrainer supervise` without needing the CLI.
 * Each test has a fresh state directory and checks that no process of the
 * job is left behind.
 */
#include <dirent.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "framework/conditions.h"
#include "kftrainer/framework.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "util/rfc3339.h"

/* ---- fixtures
 * ---------------------------------------------------------------- */

typedef struct fx {
	char dir[256];
	kft_local *l;
	kft_framework *fw;
} fx;

static json_t *J(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *J(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	for (char *p = s; *p; p++)
		if (*p == '`')
			*p = '"';
	json_error_t e;
	json_t *v = json_loads(s, 0, &e);
	if (!v)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	free(s);
	return v;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	kft_error err = {0};
	snprintf(f->dir, sizeof(f->dir), "/tmp/kft-test-local-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(kft_local_open(f->dir, NULL, &f->l, &err), 0);
	assert_int_equal(kft_framework_new(0, &f->fw, &err), 0);
	*state = f;
	return 0;
}

/* A supervisor built with sanitizers reports into its log: any report there
 * fails the test that ran it. */
static void check_supervisor_logs(const fx *f)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd),
	         "cat %s/jobs/*/*/supervisor.log 2>/dev/null | grep -qE 'Sanitizer|runtime error'",
	         f->dir);
	if (system(cmd) == 0)
		fail_msg("a supervisor reported a sanitizer error; see %s/jobs/*/*/supervisor.log",
		         f->dir);
}

static int teardown(void **state)
{
	fx *f = *state;
	check_supervisor_logs(f);
	kft_framework_free(f->fw);
	kft_local_close(f->l);
	assert_int_equal(kft_local_rmtree(f->dir, NULL), 0);
	free(f);
	return 0;
}

/* upstream manifests/base/runtimes/torch_distributed.yaml, trimmed. */
static json_t *torch_runtime(const char *extra_spec)
{
	return J("{`apiVersion`:`trainer.kubeflow.org/"
	         "v1alpha1`,`kind`:`ClusterTrainingRuntime`,"
	         "`metadata`:{`name`:`torch-distributed`},"
	         "`spec`:{`mlPolicy`:{`numNodes`:1,`torch`:{}},`template`:{`spec`:{%s"
	         "`replicatedJobs`:[{`name`:`node`,`template`:{`metadata`:{`labels`:"
	         "{`trainer.kubeflow.org/trainjob-ancestor-step`:`trainer`}},"
	         "`spec`:{`template`:{`spec`:{`containers`:[{`name`:`node`,"
	         "`image`:`pytorch/pytorch`}]}}}}}]}}}}",
	         extra_spec ? extra_spec : "");
}

static json_t *trainjob(const char *name, int nodes, const char *cmd, const char *extra)
{
	return J("{`apiVersion`:`trainer.kubeflow.org/v1alpha1`,`kind`:`TrainJob`,"
	         "`metadata`:{`name`:`%s`,`namespace`:`default`},"
	         "`spec`:{`runtimeRef`:{`name`:`torch-distributed`,`kind`:`"
	         "ClusterTrainingRuntime`,"
	         "`apiGroup`:`trainer.kubeflow.org`},%s"
	         "`trainer`:{`numNodes`:%d,`command`:%s}}}",
	         name, extra ? extra : "", nodes, cmd);
}

static void submit(fx *f, json_t *tj, json_t *rt)
{
	kft_error err = {0};
	char *name = NULL;
	int rc = kft_local_submit(f->l, f->fw, tj, rt, NULL, &name, &err);
	if (rc)
		fail_msg("submit: %s", err.message);
	assert_string_equal(
	        name, json_string_value(json_object_get(json_object_get(tj, "metadata"), "name")));
	free(name);
	json_decref(tj);
	json_decref(rt);
}

static json_t *get(fx *f, const char *name)
{
	kft_error err = {0};
	json_t *tj = NULL;
	if (kft_local_get(f->l, "default", name, &tj, &err) != 0)
		fail_msg("get %s: %s", name, err.message);
	return tj;
}

/* Polls until the job has condition `type` True; returns it (new ref). */
static json_t *wait_for(fx *f, const char *name, const char *type, int seconds)
{
	for (int i = 0; i < seconds * 50; i++) {
		json_t *tj = get(f, name);
		if (kft_condition_is_true(json_object_get(tj, "status"), type))
			return tj;
		json_decref(tj);
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	json_t *tj = get(f, name);
	char *s = json_dumps(tj, JSON_COMPACT);
	fail_msg("job %s never became %s: %s", name, type, s);
	return NULL;
}

static const char *cond_field(const json_t *tj, const char *type, const char *field)
{
	return json_string_value(
	        json_object_get(kft_condition_find(json_object_get(tj, "status"), type), field));
}

static int supervisor_pid(fx *f, const char *name)
{
	int pid = 0;
	long long ticks = 0;
	assert_int_equal(kft_store_get_supervisor(kft_local_store(f->l), "default", name, &pid,
	                                          &ticks, NULL),
	                 0);
	return pid;
}

/* Waits for the recorded supervisor to exit (so its last writes are in). */
static void wait_supervisor_gone(fx *f, const char *name)
{
	int pid = supervisor_pid(f, name);
	for (int i = 0; pid > 0 && i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid || kill(pid, 0) != 0)
			return;
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Every process whose environment names this state directory's status
 * file is a process of one of the test's jobs: there must be none. */
static int processes_of(const fx *f)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;
	char needle[300];
	snprintf(needle, sizeof(needle), "KFTRAINER_STATUS_FILE=%s/", f->dir);
	while ((de = readdir(d)) != NULL) {
		char path[300], buf[65536];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		FILE *fp = fopen(path, "r");
		if (!fp)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
		for (size_t i = 0; i < len;) {
			if (strncmp(buf + i, needle, strlen(needle)) == 0) {
				bool zombie = false;
				long long t;
				if (kft_local_proc_ticks(atoi(de->d_name), &t, &zombie) == 0 &&
				    !zombie)
					n++;
				break;
			}
			i += strlen(buf + i) + 1;
		}
	}
	closedir(d);
	return n;
}

static void pods(fx *f, const char *name, kft_pod_record **recs, size_t *n)
{
	assert_int_equal(kft_store_pods(kft_local_store(f->l), "default", name, recs, n, NULL), 0);
}

/* ---- tests
 * -------------------------------------------------------------------- */

/* Two torch nodes that succeed: Complete with JobSet's reason and message
 * (jobset v0.12 AllJobsCompleted, copied by the jobset plugin's
 * TerminalCondition), jobsStatus counting one succeeded Job, and every pod
 * seeing the PET_* rendezvous env on a loopback port (upstream torch plugin).
 */
static void test_complete(void **state)
{
	fx *f = *state;
	submit(f,
	       trainjob("ok", 2,
	                "[`/bin/sh`,`-c`,`test $PET_MASTER_ADDR = 127.0.0.1 && "
	                "test $PET_NNODES = 2 && test $PET_MASTER_PORT != 29500`]",
	                NULL),
	       torch_runtime(NULL));
	json_t *tj = wait_for(f, "ok", KFT_CONDITION_COMPLETE, 30);
	assert_string_equal(cond_field(tj, "Complete", "reason"), "AllJobsCompleted");
	assert_string_equal(cond_field(tj, "Complete", "message"), "jobset completed successfully");
	json_t *js =
	        json_array_get(json_object_get(json_object_get(tj, "status"), "jobsStatus"), 0);
	assert_string_equal(json_string_value(json_object_get(js, "name")), "node");
	assert_int_equal(json_integer_value(json_object_get(js, "succeeded")), 1);
	json_decref(tj);
	kft_pod_record *recs;
	size_t n;
	pods(f, "ok", &recs, &n);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(recs[i].state, "Succeeded");
		assert_int_equal(recs[i].exit_code, 0);
		assert_int_equal((int)recs[i].index, (int)i);
	}
	kft_pod_records_free(recs, n);
	wait_supervisor_gone(f, "ok");
	assert_int_equal(processes_of(f), 0);
}

/* Node 1 exits 3 while node 0 sleeps: after the Job's backoffLimit the JobSet
 * fails (jobset v0.12 FailedJobs, "... (first failed job: NAME)"), the
 * message names the node and exit code, and the sleeping node is stopped. */
static void test_failure_names_node(void **state)
{
	fx *f = *state;
	submit(f,
	       trainjob("bad", 2, "[`/bin/sh`,`-c`,`test $PET_NODE_RANK = 1 && exit 3; sleep 60`]",
	                NULL),
	       torch_runtime(NULL));
	json_t *tj = wait_for(f, "bad", KFT_CONDITION_FAILED, 30);
	assert_string_equal(cond_field(tj, "Failed", "reason"), "FailedJobs");
	const char *msg = cond_field(tj, "Failed", "message");
	assert_non_null(strstr(msg, "jobset failed due to one or more job failures "
	                            "(first failed job: bad-node-0)"));
	assert_non_null(strstr(msg, "node-1 (pod bad-node-0-1-local)"));
	assert_non_null(strstr(msg, "exited with code 3"));
	json_decref(tj);
	kft_pod_record *recs;
	size_t n;
	pods(f, "bad", &recs, &n);
	assert_int_equal(n, 2);
	assert_string_equal(recs[1].state, "Failed");
	assert_int_equal(recs[1].exit_code, 3);
	assert_int_equal(recs[1].restarts, 6); /* batch/v1 default backoffLimit */
	assert_string_equal(recs[0].state, "Failed");
	assert_string_equal(recs[0].reason, "Stopped");
	kft_pod_records_free(recs, n);
	wait_supervisor_gone(f, "bad");
	assert_int_equal(processes_of(f), 0);
}

/* A command that does not exist: the pod fails to start with containerd's
 * wording and the job fails at once, its message naming the command. */
static void test_command_not_found(void **state)
{
	fx *f = *state;
	submit(f, trainjob("nocmd", 1, "[`no-such-command-kft`]", NULL), torch_runtime(NULL));
	json_t *tj = wait_for(f, "nocmd", KFT_CONDITION_FAILED, 30);
	const char *msg = cond_field(tj, "Failed", "message");
	assert_non_null(strstr(msg, "exec: \"no-such-command-kft\": executable file not found "
	                            "in $PATH"));
	json_decref(tj);
	kft_pod_record *recs;
	size_t n;
	pods(f, "nocmd", &recs, &n);
	assert_string_equal(recs[0].reason, "StartError");
	kft_pod_records_free(recs, n);
	wait_supervisor_gone(f, "nocmd");
}

/* Runs a job whose only node always exits 1 (backoffLimit 0) under the
 * given JobSet failurePolicy; returns how many times the command ran and
 * the TrainJob (new reference) once Failed. */
static int run_failing(fx *f, const char *name, const char *policy, json_t **tj)
{
	char marker[300], cmd[600], spec[400];
	snprintf(marker, sizeof(marker), "%s/runs-%s", f->dir, name);
	snprintf(cmd, sizeof(cmd), "[`/bin/sh`,`-c`,`echo x >> %s; exit 1`]", marker);
	snprintf(spec, sizeof(spec), "`failurePolicy`:%s,", policy);
	json_t *rt = torch_runtime(spec);
	json_t *rjob = json_array_get(
	        json_object_get(
	                json_object_get(json_object_get(json_object_get(rt, "spec"), "template"),
	                                "spec"),
	                "replicatedJobs"),
	        0);
	json_object_set_new(json_object_get(json_object_get(rjob, "template"), "spec"),
	                    "backoffLimit", json_integer(0));
	submit(f, trainjob(name, 1, cmd, NULL), rt);
	*tj = wait_for(f, name, KFT_CONDITION_FAILED, 30);
	wait_supervisor_gone(f, name);
	FILE *fp = fopen(marker, "r");
	int lines = 0;
	for (int c; fp && (c = fgetc(fp)) != EOF;)
		lines += c == '\n';
	if (fp)
		fclose(fp);
	return lines;
}

/* JobSet failurePolicy.maxRestarts 1: the whole JobSet is recreated once,
 * then fails with ReachedMaxRestarts (jobset v0.12 restartJobSetActionApplier). */
static void test_max_restarts(void **state)
{
	json_t *tj;
	assert_int_equal(run_failing(*state, "rs", "{`maxRestarts`:1}", &tj), 2);
	assert_string_equal(cond_field(tj, "Failed", "reason"), "ReachedMaxRestarts");
	assert_non_null(strstr(cond_field(tj, "Failed", "message"),
	                       "jobset failed due to reaching max number of restarts "
	                       "(first failed job: rs-node-0)"));
	json_decref(tj);
}

/* A FailJobSet rule fails at once despite maxRestarts (jobset v0.12
 * failJobSetActionApplier: FailJobSetFailurePolicyAction, "applying
 * FailJobSet failure policy action"). */
static void test_fail_rule(void **state)
{
	json_t *tj;
	assert_int_equal(run_failing(*state, "fr",
	                             "{`maxRestarts`:5,`rules`:[{`action`:`FailJobSet`,"
	                             "`targetReplicatedJobs`:[`node`]}]}",
	                             &tj),
	                 1);
	assert_string_equal(cond_field(tj, "Failed", "reason"), "FailJobSetFailurePolicyAction");
	assert_non_null(strstr(cond_field(tj, "Failed", "message"),
	                       "applying FailJobSet failure policy action (first failed job: "
	                       "fr-node-0)"));
	json_decref(tj);
}

/* Delete while running: no process of the job, no row, no directory. */
static void test_delete_leaves_nothing(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("del", 2, "[`sleep`,`60`]", NULL), torch_runtime(NULL));
	for (int i = 0; i < 250 && processes_of(f) < 2; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(processes_of(f), 2);
	int sup = supervisor_pid(f, "del");
	assert_int_equal(kft_local_delete(f->l, "default", "del", &err), 0);
	assert_int_equal(processes_of(f), 0);
	assert_int_not_equal(kill(sup, 0) == 0 && waitpid(sup, NULL, WNOHANG) == 0, 1);
	json_t *tj = NULL;
	assert_int_equal(kft_local_get(f->l, "default", "del", &tj, &err), KFT_ENOTFOUND);
	char *dir = kft_local_job_dir(f->l, "default", "del");
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0);
	free(dir);
}

/* kill -9 of the supervisor: the next get marks the job Failed with our
 * SupervisorLost reason, and the pods it left are gone. */
static void test_supervisor_killed(void **state)
{
	fx *f = *state;
	submit(f, trainjob("lost", 2, "[`sleep`,`60`]", NULL), torch_runtime(NULL));
	for (int i = 0; i < 250 && processes_of(f) < 2; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(processes_of(f), 2);
	int sup = supervisor_pid(f, "lost");
	assert_int_equal(kill(sup, SIGKILL), 0);
	waitpid(sup, NULL, 0);
	json_t *tj = get(f, "lost");
	assert_true(kft_condition_is_true(json_object_get(tj, "status"), "Failed"));
	assert_string_equal(cond_field(tj, "Failed", "reason"), "SupervisorLost");
	json_decref(tj);
	assert_int_equal(processes_of(f), 0);
}

/* spec.activeDeadlineSeconds: the TrainJob fails with DeadlineExceeded
 * (upstream trainjob_controller reconcileDeadline) and its pods are stopped. */
static void test_deadline(void **state)
{
	fx *f = *state;
	submit(f, trainjob("late", 1, "[`sleep`,`60`]", "`activeDeadlineSeconds`:1,"),
	       torch_runtime(NULL));
	json_t *tj = wait_for(f, "late", KFT_CONDITION_FAILED, 30);
	assert_string_equal(cond_field(tj, "Failed", "reason"), "DeadlineExceeded");
	assert_string_equal(cond_field(tj, "Failed", "message"),
	                    "TrainJob exceeded its active deadline");
	json_decref(tj);
	wait_supervisor_gone(f, "late");
	assert_int_equal(processes_of(f), 0);
}

/* JobSet dependsOn Complete: "second" starts only once every pod of "first"
 * has succeeded (jobset v0.12 depends_on.go). first leaves a marker just
 * before it exits; second fails unless it finds it. */
static void test_depends_on_order(void **state)
{
	fx *f = *state;
	char marker[300];
	snprintf(marker, sizeof(marker), "%s/first-done", f->dir);
	json_t *rt = J("{`apiVersion`:`trainer.kubeflow.org/"
	               "v1alpha1`,`kind`:`ClusterTrainingRuntime`,"
	               "`metadata`:{`name`:`torch-distributed`},`spec`:{`mlPolicy`:{`numNodes`"
	               ":1,"
	               "`torch`:{}},`template`:{`spec`:{`replicatedJobs`:["
	               "{`name`:`first`,`template`:{`spec`:{`template`:{`spec`:{`containers`:"
	               "[{`name`:`first`,`image`:`x`,`command`:[`/bin/sh`,`-c`,"
	               "`sleep 0.3; touch %s`]}]}}}}},"
	               "{`name`:`node`,`dependsOn`:[{`name`:`first`,`status`:`Complete`}],"
	               "`template`:{`metadata`:{`labels`:{`trainer.kubeflow.org/"
	               "trainjob-ancestor-step`:`trainer`}},`spec`:{`template`:{`spec`:"
	               "{`containers`:[{`name`:`node`,`image`:`x`}]}}}}}]}}}}",
	               marker);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "[`test`,`-f`,`%s`]", marker);
	json_t *tjin = trainjob("dep", 2, cmd, NULL);
	json_t *rjobs = json_object_get(
	        json_object_get(json_object_get(json_object_get(rt, "spec"), "template"), "spec"),
	        "replicatedJobs");
	json_object_set_new(
	        json_object_get(json_object_get(json_array_get(rjobs, 1), "template"), "spec"),
	        "backoffLimit", json_integer(0));
	submit(f, tjin, rt);
	json_t *tj = wait_for(f, "dep", KFT_CONDITION_COMPLETE, 30);
	json_decref(tj);
	wait_supervisor_gone(f, "dep");
}

/* The status file protocol: what the trainer writes to
 * $KFTRAINER_STATUS_FILE becomes status.trainerStatus (upstream v2.3.0
 * TrainerStatus shape), with lastUpdatedTime filled when missing. */
static void test_progress_file(void **state)
{
	fx *f = *state;
	submit(f,
	       trainjob("prog", 1,
	                "[`/bin/sh`,`-c`,`printf "
	                "'{\\\"trainerStatus\\\":{\\\"progressPercentage\\\":"
	                "42,\\\"estimatedRemainingSeconds\\\":7,\\\"metrics\\\":[{"
	                "\\\"name\\\":"
	                "\\\"loss\\\",\\\"value\\\":\\\"0.5\\\"}]}}' > "
	                "$KFTRAINER_STATUS_FILE`]",
	                NULL),
	       torch_runtime(NULL));
	json_t *tj = wait_for(f, "prog", KFT_CONDITION_COMPLETE, 30);
	const json_t *ts = json_object_get(json_object_get(tj, "status"), "trainerStatus");
	assert_int_equal(json_integer_value(json_object_get(ts, "progressPercentage")), 42);
	assert_int_equal(json_integer_value(json_object_get(ts, "estimatedRemainingSeconds")), 7);
	assert_string_equal(json_string_value(json_object_get(
	                            json_array_get(json_object_get(ts, "metrics"), 0), "value")),
	                    "0.5");
	int64_t ms;
	assert_int_equal(
	        kft_rfc3339_parse_ms(json_string_value(json_object_get(ts, "lastUpdatedTime")), &ms,
	                             NULL),
	        0);
	json_decref(tj);
	wait_supervisor_gone(f, "prog");
}

/* What a pod inherits: the base environment under the pod's env (the pod's
 * value wins), the submitter's working directory, and the status file. */
static void test_base_env_and_workdir(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	char *base[] = {"PATH=/usr/bin:/bin", "FROM_BASE=yes", "SHARED=base", NULL};
	kft_submit_opts opts = {.workdir = f->dir, .base_env = base};
	json_t *tj = trainjob("env", 1,
	                      "[`/bin/sh`,`-c`,`test \\\"$FROM_BASE\\\" = yes && test "
	                      "\\\"$SHARED\\\" = "
	                      "pod && test \\\"$(pwd)\\\" = \\\"$WANT_DIR\\\" && test -n "
	                      "\\\"$KFTRAINER_STATUS_FILE\\\"`]",
	                      NULL);
	json_t *env =
	        J("[{`name`:`SHARED`,`value`:`pod`},{`name`:`WANT_DIR`,`value`:`%s`}]", f->dir);
	json_object_set_new(json_object_get(json_object_get(tj, "spec"), "trainer"), "env", env);
	json_t *rt = torch_runtime(NULL);
	assert_int_equal(kft_local_submit(f->l, f->fw, tj, rt, &opts, NULL, &err), 0);
	json_decref(tj);
	json_decref(rt);
	json_decref(wait_for(f, "env", KFT_CONDITION_COMPLETE, 30));
	wait_supervisor_gone(f, "env");
}

/* An MPI runtime (upstream deepspeed-distributed): the node pods are not run,
 * the launcher's mpirun starts numNodes x numProcPerNode ranks here from the
 * rendered hostfile (merged for OpenMPI). */
static void test_mpi_launcher(void **state)
{
	fx *f = *state;
	if (access("/usr/bin/mpirun", X_OK) != 0)
		skip();
	char out[300];
	snprintf(out, sizeof(out), "%s/ranks", f->dir);
	json_t *rt = J("{`apiVersion`:`trainer.kubeflow.org/"
	               "v1alpha1`,`kind`:`ClusterTrainingRuntime`,"
	               "`metadata`:{`name`:`torch-distributed`},`spec`:{`mlPolicy`:{`"
	               "numNodes`:1,`mpi`:{"
	               "`mpiImplementation`:`OpenMPI`,`numProcPerNode`:1,`"
	               "runLauncherAsNode`:true,"
	               "`sshAuthMountPath`:`/home/mpiuser/"
	               ".ssh`}},`template`:{`spec`:{`successPolicy`:"
	               "{`operator`:`All`,`targetReplicatedJobs`:[`launcher`]},`"
	               "replicatedJobs`:["
	               "{`name`:`node`,`template`:{`spec`:{`template`:{`spec`:{`"
	               "containers`:[{`name`:"
	               "`node`,`image`:`x`,`command`:[`/usr/sbin/sshd`]}]}}}}},"
	               "{`name`:`launcher`,`dependsOn`:[{`name`:`node`,`status`:`"
	               "Ready`}],`template`:"
	               "{`metadata`:{`labels`:{`trainer.kubeflow.org/"
	               "trainjob-ancestor-step`:`trainer`}},"
	               "`spec`:{`template`:{`spec`:{`containers`:[{`name`:`node`,`"
	               "image`:`x`}]}}}}}]}}}}");
	char cmd[600];
	snprintf(cmd, sizeof(cmd),
	         "[`mpirun`,`--output-filename`,`%s`,`/bin/sh`,`-c`,`echo "
	         "$OMPI_COMM_WORLD_SIZE`]",
	         out);
	json_t *tj = trainjob("mpi", 2, cmd, NULL);
	json_object_set_new(json_object_get(json_object_get(tj, "spec"), "trainer"),
	                    "numProcPerNode", json_integer(2));
	submit(f, tj, rt);
	json_t *done = wait_for(f, "mpi", KFT_CONDITION_COMPLETE, 60);
	json_decref(done);
	char *log = NULL;
	char *dir = kft_local_job_dir(f->l, "default", "mpi");
	assert_true(asprintf(&log, "%s/logs/launcher-0.log", dir) > 0);
	FILE *fp = fopen(log, "r");
	assert_non_null(fp);
	char line[128];
	int fours = 0;
	while (fgets(line, sizeof(line), fp))
		fours += strcmp(line, "4\n") == 0;
	fclose(fp);
	assert_int_equal(fours, 4);
	free(log);
	free(dir);
	wait_supervisor_gone(f, "mpi");
}

/* Names: the SDK's (a letter and 11 hex digits) when none is given;
 * generateName's prefix plus 5 of the API server's characters. */
static void test_generated_names(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	char *name = NULL;
	json_t *tj = trainjob("x", 1, "[`true`]", "`suspend`:true,");
	json_t *rt = torch_runtime(NULL);
	json_object_del(json_object_get(tj, "metadata"), "name");
	assert_int_equal(kft_local_submit(f->l, f->fw, tj, rt, NULL, &name, &err), 0);
	assert_int_equal(strlen(name), 12);
	assert_true(name[0] >= 'a' && name[0] <= 'z');
	assert_int_equal(strspn(name + 1, "0123456789abcdef"), 11);
	json_t *got = get(f, name);
	assert_true(kft_condition_is_true(json_object_get(got, "status"), "Suspended"));
	json_decref(got);
	free(name);
	json_object_set_new(json_object_get(tj, "metadata"), "generateName", json_string("gen-"));
	assert_int_equal(kft_local_submit(f->l, f->fw, tj, rt, NULL, &name, &err), 0);
	assert_int_equal(strlen(name), 9);
	assert_int_equal(strncmp(name, "gen-", 4), 0);
	assert_int_equal(strspn(name + 4, "bcdfghjklmnpqrstvwxz2456789"), 5);
	free(name);
	json_decref(tj);
	json_decref(rt);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void wait_processes(fx *f, int n)
{
	for (int i = 0; i < 250 && processes_of(f) < n; i++)
		sleep_ms(20);
	assert_true(processes_of(f) >= n);
}

static bool has_deletion(const json_t *tj)
{
	return json_object_get(json_object_get(tj, "metadata"), "deletionTimestamp") != NULL;
}

/* A job marked as being deleted (the deletionTimestamp a delete writes
 * before it signals anything) is left alone by everyone but its deleter:
 * its supervisor, stopped by SIGTERM, writes no Failed/SupervisorLost; the
 * liveness check does not call it lost; suspend and resume are refused as
 * "being deleted" rather than "already finished"; get still shows it, with
 * metadata.deletionTimestamp, as the API server shows an object whose
 * deletion is under way (metav1.ObjectMeta.DeletionTimestamp). */
static void test_being_deleted_left_alone(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("del", 1, "[`sleep`,`60`]", NULL), torch_runtime(NULL));
	wait_processes(f, 1);
	assert_int_equal(kft_store_job_mark_deleting(kft_local_store(f->l), "default", "del", &err),
	                 0);
	json_t *tj = get(f, "del");
	assert_true(has_deletion(tj));
	json_decref(tj);
	assert_int_equal(kft_local_set_suspend(f->l, "default", "del", true, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "is being deleted"));
	assert_int_equal(kft_local_set_suspend(f->l, NULL, "del", false, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "is being deleted"));
	int sup = supervisor_pid(f, "del");
	assert_int_equal(kill(sup, SIGTERM), 0);
	assert_int_equal(waitpid(sup, NULL, 0), sup);
	assert_int_equal(processes_of(f), 0);
	tj = get(f, "del"); /* the supervisor is gone: liveness runs */
	assert_true(has_deletion(tj));
	assert_false(kft_condition_is_true(json_object_get(tj, "status"), "Failed"));
	json_decref(tj);
	assert_int_equal(kft_local_delete(f->l, "default", "del", &err), 0);
	json_t *gone = NULL;
	assert_int_equal(kft_local_get(f->l, "default", "del", &gone, &err), KFT_ENOTFOUND);
}

/* The race of issue 4 ("two CLIs acting on one job at once"): while a delete
 * is stopping a job (its pod ignores SIGTERM, so the stop takes the whole
 * grace period), another CLI's get shows the job being deleted, never
 * Failed, and its suspend is refused as "being deleted". */
static void test_delete_concurrent_with_suspend(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("slow", 1, "[`sh`,`-c`,`trap '' TERM; sleep 60`]", NULL),
	       torch_runtime(NULL));
	wait_processes(f, 1);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		kft_local *l = NULL;
		int ok = kft_local_open(f->dir, NULL, &l, NULL) == 0 &&
		         kft_local_delete(l, "default", "slow", NULL) == 0;
		kft_local_close(l);
		_exit(ok ? 0 : 1);
	}
	json_t *tj = NULL;
	for (int i = 0; i < 1000; i++) { /* 10 s: the child must open the store first */
		tj = get(f, "slow");
		if (has_deletion(tj))
			break;
		json_decref(tj);
		tj = NULL;
		sleep_ms(10);
	}
	assert_non_null(tj);
	assert_false(kft_condition_is_true(json_object_get(tj, "status"), "Failed"));
	json_decref(tj);
	assert_int_equal(kft_local_set_suspend(f->l, "default", "slow", true, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "is being deleted"));
	/* until it is gone, every read shows it being deleted, never Failed */
	for (;;) {
		tj = NULL;
		int rc = kft_local_get(f->l, "default", "slow", &tj, &err);
		if (rc == KFT_ENOTFOUND)
			break;
		assert_int_equal(rc, 0);
		assert_true(has_deletion(tj));
		assert_false(kft_condition_is_true(json_object_get(tj, "status"), "Failed"));
		json_decref(tj);
		sleep_ms(20);
	}
	int st = -1;
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(processes_of(f), 0);
}

/* local.h: a NULL namespace means "default" for every call. A resume with
 * NULL used to put NULL in the supervisor's argv (the supervisor then saw
 * no job name and never ran). */
static void test_null_namespace(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("ns", 1, "[`sleep`,`60`]", "`suspend`:true,"), torch_runtime(NULL));
	assert_int_equal(processes_of(f), 0);
	assert_int_equal(kft_local_set_suspend(f->l, NULL, "ns", false, &err), 0);
	wait_processes(f, 1);
	json_t *tj = NULL;
	assert_int_equal(kft_local_get(f->l, NULL, "ns", &tj, &err), 0);
	assert_false(kft_condition_is_true(json_object_get(tj, "status"), "Failed"));
	json_decref(tj);
	char *dir = kft_local_job_dir(f->l, NULL, "ns");
	assert_non_null(strstr(dir, "/jobs/default/ns"));
	free(dir);
	assert_int_equal(kft_local_set_suspend(f->l, NULL, "ns", true, &err), 0);
	assert_int_equal(processes_of(f), 0);
	assert_int_equal(kft_local_delete(f->l, NULL, "ns", &err), 0);
	assert_int_equal(kft_local_get(f->l, NULL, "ns", &tj, &err), KFT_ENOTFOUND);
}

/* The one name generator (local.h): the SDK's form, and generateName's
 * prefix cut to 58 bytes as the API server's SimpleNameGenerator does
 * (maxGeneratedNameLength = 63 - 5). */
static void test_generate_name(void **state)
{
	(void)state;
	char *n = NULL, longp[80];
	assert_int_equal(kft_local_generate_name(NULL, &n, NULL), 0);
	assert_int_equal(strlen(n), 12);
	assert_int_equal(strspn(n + 1, "0123456789abcdef"), 11);
	free(n);
	assert_int_equal(kft_local_generate_name("", &n, NULL), 0);
	assert_int_equal(strlen(n), 12);
	free(n);
	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(kft_local_generate_name(longp, &n, NULL), 0);
	assert_int_equal(strlen(n), 63);
	assert_int_equal(strncmp(n, longp, 58), 0); /* the suffix may itself hold a 'p' */
	assert_int_equal(strspn(n + 58, "bcdfghjklmnpqrstvwxz2456789"), 5);
	free(n);
}

/* Suspend stops every process and sets Suspended/Suspended "TrainJob is
 * suspended"; resume sets Suspended False/Resumed and starts the pods again
 * (upstream trainjob_controller setSuspendedCondition). */
static void test_suspend_resume(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("sr", 2, "[`sleep`,`60`]", NULL), torch_runtime(NULL));
	for (int i = 0; i < 250 && processes_of(f) < 2; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(processes_of(f), 2);
	assert_int_equal(kft_local_set_suspend(f->l, "default", "sr", true, &err), 0);
	assert_int_equal(processes_of(f), 0);
	json_t *tj = get(f, "sr");
	assert_string_equal(cond_field(tj, "Suspended", "reason"), "Suspended");
	assert_string_equal(cond_field(tj, "Suspended", "message"), "TrainJob is suspended");
	assert_true(json_is_true(json_object_get(json_object_get(tj, "spec"), "suspend")));
	json_decref(tj);
	assert_int_equal(kft_local_set_suspend(f->l, "default", "sr", false, &err), 0);
	for (int i = 0; i < 250 && processes_of(f) < 2; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(processes_of(f), 2);
	tj = get(f, "sr");
	assert_string_equal(cond_field(tj, "Suspended", "status"), "False");
	assert_string_equal(cond_field(tj, "Suspended", "reason"), "Resumed");
	json_decref(tj);
	assert_int_equal(kft_local_delete(f->l, "default", "sr", &err), 0);
	assert_int_equal(processes_of(f), 0);
}

/* Two CLIs reading a job whose supervisor died, at once: both succeed and
 * agree (the fix runs in one transaction that re-reads the job first). */
static void test_two_readers_after_loss(void **state)
{
	fx *f = *state;
	submit(f, trainjob("race", 1, "[`sleep`,`60`]", NULL), torch_runtime(NULL));
	for (int i = 0; i < 250 && processes_of(f) < 1; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	int sup = supervisor_pid(f, "race");
	assert_int_equal(kill(sup, SIGKILL), 0);
	waitpid(sup, NULL, 0);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			kft_local *l = NULL;
			json_t *tj = NULL;
			int ok = kft_local_open(f->dir, NULL, &l, NULL) == 0 &&
			         kft_local_get(l, "default", "race", &tj, NULL) == 0 &&
			         kft_condition_is_true(json_object_get(tj, "status"), "Failed");
			_exit(ok ? 0 : 1);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st = -1;
		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	json_t *tj = get(f, "race");
	assert_string_equal(cond_field(tj, "Failed", "reason"), "SupervisorLost");
	json_decref(tj);
	assert_int_equal(processes_of(f), 0);
}

/* A log that cannot be opened fails the pod at start (StartError) and the
 * job with a message naming the log, instead of hanging. A directory in the
 * log's place stands in for a full disk, which cannot be made here. */
static void test_log_unwritable(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("nolog", 1, "[`true`]", "`suspend`:true,"), torch_runtime(NULL));
	char *dir = kft_local_job_dir(f->l, "default", "nolog"), *blocker = NULL;
	assert_true(asprintf(&blocker, "%s/logs/node-0.log", dir) > 0);
	char *logs = strndup(blocker, strlen(blocker) - strlen("/node-0.log"));
	assert_int_equal(mkdir(logs, 0700), 0); /* the job directory exists from submit */
	assert_int_equal(mkdir(blocker, 0700), 0);
	assert_int_equal(kft_local_set_suspend(f->l, "default", "nolog", false, &err), 0);
	json_t *tj = wait_for(f, "nolog", KFT_CONDITION_FAILED, 30);
	const char *msg = cond_field(tj, "Failed", "message");
	assert_non_null(strstr(msg, blocker));
	json_decref(tj);
	free(blocker);
	free(logs);
	free(dir);
	wait_supervisor_gone(f, "nolog");
}

/* A failed submit stores nothing and starts nothing: a duplicate name gets
 * kubectl's wording and leaves the first job alone; a build error leaves no
 * row and no directory. */
static void test_submit_failures(void **state)
{
	fx *f = *state;
	kft_error err = {0};
	submit(f, trainjob("dup", 1, "[`true`]", "`suspend`:true,"), torch_runtime(NULL));
	json_t *tj = trainjob("dup", 1, "[`true`]", NULL), *rt = torch_runtime(NULL);
	assert_int_equal(kft_local_submit(f->l, f->fw, tj, rt, NULL, NULL, &err), KFT_EINVAL);
	assert_string_equal(err.message, "trainjobs.trainer.kubeflow.org \"dup\" already exists");
	char *dir = kft_local_job_dir(f->l, "default", "dup");
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	free(dir);
	json_decref(tj);
	json_decref(rt);
	/* a TrainJob without spec cannot be built (the caller should have
	 * validated it; the backend must still fail cleanly) */
	tj = J("{`apiVersion`:`trainer.kubeflow.org/v1alpha1`,`kind`:`TrainJob`,"
	       "`metadata`:{`name`:`broken`}}");
	rt = torch_runtime(NULL);
	assert_int_not_equal(kft_local_submit(f->l, f->fw, tj, rt, NULL, NULL, &err), 0);
	json_decref(tj);
	json_decref(rt);
	json_t *got = NULL;
	assert_int_equal(kft_local_get(f->l, "default", "broken", &got, &err), KFT_ENOTFOUND);
	dir = kft_local_job_dir(f->l, "default", "broken");
	assert_int_not_equal(stat(dir, &st), 0);
	free(dir);
	assert_int_equal(processes_of(f), 0);
}

/* Objects that cannot be run (a JobSet without replicated jobs) fail the
 * job at once with upstream's wording for resources that could not be
 * created (TrainJobResourcesCreationFailed, "TrainJob resources
 * reconciliation failed: ..."), instead of leaving it Running. */
static void test_unrunnable_objects(void **state)
{
	fx *f = *state;
	json_t *rt =
	        J("{`apiVersion`:`trainer.kubeflow.org/v1alpha1`,`kind`:`ClusterTrainingRuntime`,"
	          "`metadata`:{`name`:`torch-distributed`},`spec`:{`mlPolicy`:{`numNodes`:1,"
	          "`torch`:{}},`template`:{`spec`:{}}}}");
	submit(f, trainjob("empty", 1, "[`true`]", NULL), rt);
	json_t *tj = wait_for(f, "empty", KFT_CONDITION_FAILED, 30);
	assert_string_equal(cond_field(tj, "Failed", "reason"), "TrainJobResourcesCreationFailed");
	assert_non_null(strstr(cond_field(tj, "Failed", "message"),
	                       "TrainJob resources reconciliation failed: JobSet empty has no "
	                       "replicated jobs"));
	json_decref(tj);
	wait_supervisor_gone(f, "empty");
}

/* This process's children (zombies only, or all) into pids; returns how many
 * (at most max). */
static int children_of_mine(int *pids, int max, bool zombies)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && n < max && (e = readdir(d))) {
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		FILE *fp = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "re") : NULL;
		size_t len = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
		if (fp)
			fclose(fp);
		buf[len] = '\0';
		char *rp = strrchr(buf, ')'), st = 0;
		int ppid = 0;
		if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 && ppid == (int)getpid() &&
		    (!zombies || st == 'Z'))
			pids[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* A child of ours not among before[0..nbefore) (with zombies: one that has
 * exited and not been reaped), or -1: the supervisor started since (earlier
 * tests' supervisors may end meanwhile, and are among before). */
static pid_t new_child(const int *before, int nbefore, bool zombies)
{
	int now[256], n = children_of_mine(now, 256, zombies);
	for (int i = 0; i < n; i++) {
		bool old = false;
		for (int j = 0; j < nbefore; j++)
			old |= now[i] == before[j];
		if (!old)
			return now[i];
	}
	return -1;
}

/* A supervisor that died before its go (here: one that exits at once) does
 * not take its submitter down with SIGPIPE, which a notebook's process or
 * the dashboard would not survive: the submit returns, the job is committed,
 * and the next read finds it without its supervisor (SupervisorLost). */
static void test_supervisor_gone_before_go(void **state)
{
	fx *f = *state;
	kft_local *l = NULL;
	kft_error err = {0};
	char *name = NULL;
	int before[256], nbefore = children_of_mine(before, 256, false);
	setenv("KFT_TEST_SUPERVISOR_EXITS", "1", 1);
	assert_int_equal(kft_local_open_to_submit(f->dir, NULL, &l, &err), 0);
	unsetenv("KFT_TEST_SUPERVISOR_EXITS");
	/* Its supervisor has exited (the go pipe's reader is gone) before the go. */
	for (int i = 0; i < 500 && new_child(before, nbefore, true) < 0; i++)
		usleep(10000);
	assert_true(new_child(before, nbefore, true) > 0);
	json_t *tj = trainjob("orphan", 1, "[`true`]", NULL), *rt = torch_runtime(NULL);
	assert_int_equal(kft_local_submit(l, f->fw, tj, rt, NULL, &name, &err), 0);
	json_decref(tj);
	json_decref(rt);
	free(name);
	kft_local_close(l);
	tj = wait_for(f, "orphan", KFT_CONDITION_FAILED, 30);
	assert_string_equal(cond_field(tj, "Failed", "reason"), KFT_LOCAL_REASON_SUPERVISOR_LOST);
	json_decref(tj);
}

/* While its supervisor starts, the submitting thread keeps off one of its
 * CPUs (the one the supervisor was queued on then, which this test cannot
 * see: the supervisor may have moved since), and afterwards it may run
 * where it could before, whether the supervisor was let go or called off;
 * the supervisor (whose CPUs its pods inherit) keeps the submitter's CPUs.
 * kftrainer's own behaviour; what it buys is bench/bench_local's figure. */
static cpu_set_t cpus_at_start; /* this process's CPUs before any test (main) */

static void test_submitter_steps_aside(void **state)
{
	fx *f = *state;
	cpu_set_t mine, during, sup;
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	assert_true(CPU_EQUAL(&mine, &cpus_at_start)); /* the tests before gave them back */
	if (CPU_COUNT(&mine) < 2)
		skip(); /* nothing to step aside to */
	for (int go = 0; go < 2; go++) {
		kft_local *l = NULL;
		kft_error err = {0};
		int before[256], nbefore = children_of_mine(before, 256, false);
		assert_int_equal(kft_local_open_to_submit(f->dir, NULL, &l, &err), 0);
		pid_t pid = new_child(before, nbefore, false);
		assert_true(pid > 0);
		assert_int_equal(sched_getaffinity(0, sizeof(during), &during), 0);
		assert_int_equal(CPU_COUNT(&during), CPU_COUNT(&mine) - 1);
		CPU_AND(&during, &during, &mine);
		assert_int_equal(CPU_COUNT(&during), CPU_COUNT(&mine) - 1);
		assert_int_equal(sched_getaffinity(pid, sizeof(sup), &sup), 0);
		assert_true(CPU_EQUAL(&sup, &mine));
		if (go) {
			char *name = NULL;
			json_t *tj = trainjob("aside", 1, "[`true`]", NULL),
			       *rt = torch_runtime(NULL);
			assert_int_equal(kft_local_submit(l, f->fw, tj, rt, NULL, &name, &err), 0);
			json_decref(tj);
			json_decref(rt);
			free(name);
			assert_int_equal(sched_getaffinity(0, sizeof(during), &during), 0);
			assert_true(CPU_EQUAL(&during, &mine));
		}
		kft_local_close(l);
		assert_int_equal(sched_getaffinity(0, sizeof(during), &during), 0);
		assert_true(CPU_EQUAL(&during, &mine));
	}
	json_decref(wait_for(f, "aside", KFT_CONDITION_COMPLETE, 30));
}

int main(int argc, char **argv)
{
	/* this binary is the supervisor local.c starts:
	 * supervise --state-dir DIR --go-fd FD (the job comes on that pipe) */
	if (argc == 6 && strcmp(argv[1], "supervise") == 0) {
		if (getenv("KFT_TEST_SUPERVISOR_EXITS"))
			return 0;
		kft_error err = {0};
		int rc = kft_local_supervise(argv[3], NULL, NULL, atoi(argv[5]), &err);
		if (rc)
			fprintf(stderr, "supervise: %s\n", err.message);
		return rc ? 1 : 0;
	}
	sched_getaffinity(0, sizeof(cpus_at_start), &cpus_at_start);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_complete, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_supervisor_gone_before_go, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_submitter_steps_aside, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failure_names_node, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_command_not_found, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_max_restarts, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_fail_rule, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_delete_leaves_nothing, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_supervisor_killed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_depends_on_order, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_progress_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_base_env_and_workdir, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_mpi_launcher, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_generated_names, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_suspend_resume, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_being_deleted_left_alone, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_delete_concurrent_with_suspend, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_null_namespace, setup, teardown),
	        cmocka_unit_test(test_generate_name),
	        cmocka_unit_test_setup_teardown(test_two_readers_after_loss, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_log_unwritable, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_submit_failures, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unrunnable_objects, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
