/*
 * engine.c - the supervisor's loop: one stored TrainJob run as processes.
 *
 * Design in plain words. The supervisor loads the job, its objects and what
 * its processes inherit from the store once, then loops: wait (on a signalfd
 * for SIGCHLD and the stop signals, at most TICK_MS so the deadline and the
 * progress file are looked at), collect exited pods, judge (Job backoff,
 * JobSet failure and success policies, dependsOn), act (start, restart,
 * stop), and when anything changed write the pod records and the status in
 * one store transaction. Single-threaded, no sleeping before the first
 * pods, and the framework is asked for the status only when something
 * changed, so a job of 16 processes costs a few MB and no CPU while it runs.
 *
 * The TrainJob's status comes from the same plugins as on a cluster: the
 * engine keeps a JobSet object with the status the JobSet controller would
 * give it (conditions, restarts, replicatedJobsStatus) and hands it to
 * kft_framework_status through the local backend's get_object.
 *
 * Things a cluster does that are decided differently here (docs/local.md):
 *  - a container that cannot start (command not found, log not writable)
 *    fails its Job at once instead of being retried: no retry can help;
 *  - the crash-loop back-off starts at 50 ms instead of the kubelet's 10 s;
 *  - a pod whose main process ended has the rest of its process group
 *    killed, as a container's cgroup would be;
 *  - MPI "node" pods (sshd) are not run: they are Ready placeholders while
 *    the launcher's mpirun starts every rank here.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "local/engine.h"
#include "local/gpus.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "local/podspec.h"
#include "local/statusserver.h"
#include "local/tracking.h"
#include "plugins/mpi.h"
#include "util/rfc3339.h"
#include "util/clock.h"
#include "util/json.h"

#define TICK_MS             100
#define JOB_DIR_CHECK_TICKS 20
#define FINAL_RETRY_MS      1000 /* how often an ended job retries recording its end */
#define RESTART_BACKOFF_MS  50   /* the first restart's delay; doubles, up to 2^8 times */
#define DEFAULT_BACKOFF     6    /* batch/v1 Job's default backoffLimit */
#define MAX_PODS            4096
#define STATUS_FILE_MAX     (64 * 1024)
#define JOBSET_API          "jobset.x-k8s.io/v1alpha2"

/* JobSet v0.12's words for a failure policy that ran out of restarts. */
#define JOBSET_REASON_REACHED_MAX  "ReachedMaxRestarts"
#define JOBSET_MESSAGE_REACHED_MAX "jobset failed due to reaching max number of restarts"
#define JOBSET_REASON_SUSPENDED    "SuspendedJobs"
#define JOBSET_MESSAGE_SUSPENDED   "jobset is suspended"
#define JOBSET_CONDITION_SUSPENDED "Suspended"
#define JOBSET_REASON_FAIL_ACTION  "FailJobSetFailurePolicyAction"
#define JOBSET_MESSAGE_FAIL_ACTION "applying FailJobSet failure policy action"
/* batch/v1's reason and message for a Job out of retries: what a local Job
 * failure is matched against in failurePolicy rules. */
#define JOB_REASON_BACKOFF  "BackoffLimitExceeded"
#define JOB_MESSAGE_BACKOFF "Job has reached the specified backoff limit"

typedef struct engine {
	const char *state_dir, *ns, *name;
	kft_store *store;
	kft_framework *fw;
	json_t *tj;      /* the TrainJob, status kept current in memory */
	json_t *objects; /* what the framework built */
	const json_t *jobset;
	const json_t *gpus; /* the GPUAllocation (gpus.h) among objects; NULL: none */
	const char *jobset_name;
	json_t *children; /* [JobSet stub with status] for the backend */
	kft_local_backend_state backend;
	kft_job_info info;
	char *job_dir, *workdir, *status_path;
	char **base_env, **extra_env;
	eng_rjob *rjobs;
	size_t n_rjobs;
	int restarts, max_restarts;
	const json_t *failure_policy; /* the JobSet's, borrowed; NULL: none */
	int restarts_toward_max;
	int64_t fail_seq;
	json_t *conditions; /* the JobSet's conditions */
	bool finished, dirty, stop_requested, any_started;
	int stop_signal;
	int sfd;
	int ticks_since_dir_check;
	bool write_failing;
	struct timespec status_mtime;
	off_t status_size;
	json_t *events;                  /* Events recorded since the last write (events.c) */
	json_t *reports;                 /* TrainerStatus reports since the last write (history) */
	kft_statusserver *status_server; /* upstream's endpoint; NULL: none */
	kft_tracker *tracker;            /* the job's MLflow run (tracking.h); NULL: none */
	kft_statusserver_creds *creds;   /* being made by the supervisor, or NULL */
	bool no_views; /* pods' volumes by path rewriting, not in a view (mountns.h):
	                * KFTRAINER_MOUNT_NAMESPACE=off, or the kernel refused one */
} engine;

/* ---- small helpers ---------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int jint(const json_t *o, const char *k, int dflt)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static void set_str(char **dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_str(char **dst, const char *fmt, ...)
{
	va_list ap;
	free(*dst);
	*dst = NULL;
	if (!fmt)
		return;
	va_start(ap, fmt);
	if (vasprintf(dst, fmt, ap) < 0)
		*dst = NULL;
	va_end(ap);
}

/* Records an Event about one of the job's objects; it reaches the store with
 * the next write. Losing one to a full memory is not worth stopping a job. */
static void note_event(engine *e, const char *type, const char *reason, const char *kind,
                       const char *object, const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));
static void note_event(engine *e, const char *type, const char *reason, const char *kind,
                       const char *object, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *ev = kft_local_event_new(e->ns, type, reason, kind, object, msg);
	if (ev && e->events)
		json_array_append(e->events, ev);
	json_decref(ev);
	e->dirty = true;
}

/* The pod's name, as podspec.h names it. */
static void pod_name(const engine *e, const eng_rjob *rj, const eng_pod *p, char *buf, size_t size)
{
	snprintf(buf, size, "%s-%s-%d-%d-" KFT_POD_NAME_SUFFIX, e->jobset_name, rj->name,
	         p->replica, p->index);
}

/* The Job's name, as the JobSet controller names it. */
static void job_name(const engine *e, const eng_rjob *rj, int replica, char *buf, size_t size)
{
	snprintf(buf, size, "%s-%s-%d", e->jobset_name, rj->name, replica);
}

static char **json_to_vec(const json_t *arr)
{
	size_t n = json_array_size(arr), k = 0;
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (s && !(v[k++] = strdup(s)))
			return v; /* shorter but still NULL-terminated */
	}
	return v;
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- loading ---------------------------------------------------------------- */

/* An initializer container without a command is an upstream initializer image
 * whose program does not exist here: the engine does its work natively. */
/* A replicated job whose processes another one starts (the MPI plugin's
 * node job, started by its launcher's mpirun) is a placeholder here. */
static rjob_kind kind_of(const json_t *rspec, const char *container, bool started_elsewhere)
{
	const json_t *cs = json_object_get(
	        json_object_get(
	                json_object_get(json_object_get(json_object_get(rspec, "template"), "spec"),
	                                "template"),
	                "spec"),
	        "containers");
	size_t i;
	const json_t *c;
	if (started_elsewhere)
		return RJOB_PLACEHOLDER;
	json_array_foreach(cs, i, c)
	{
		if (!container || !jstr(c, "name") || strcmp(jstr(c, "name"), container) != 0 ||
		    json_array_size(json_object_get(c, "command")) > 0)
			continue;
		if (strcmp(container, KFT_DATASET_INITIALIZER) == 0)
			return RJOB_DATASET_INIT;
		if (strcmp(container, KFT_MODEL_INITIALIZER) == 0)
			return RJOB_MODEL_INIT;
	}
	return RJOB_RUN;
}

static int setup_rjob(eng_rjob *rj, const json_t *jobset_spec, const json_t *rspec, size_t *total,
                      kft_error *err)
{
	const json_t *jspec = json_object_get(json_object_get(rspec, "template"), "spec");
	kft_rjob_counts counts;
	int bad = kft_rjob_counts_of(rspec, &counts) != 0 || counts.replicas > INT32_MAX ||
	          counts.parallelism > INT32_MAX || counts.completions > INT32_MAX;
	rj->spec = rspec;
	rj->name = jstr(rspec, "name");
	rj->replicas = (int)counts.replicas;
	rj->parallelism = (int)counts.parallelism;
	rj->completions = (int)counts.completions;
	rj->backoff_limit = jint(jspec, "backoffLimit", DEFAULT_BACKOFF);
	if (!rj->name || bad || rj->backoff_limit < 0)
		return kft_error_set(err, KFT_EINVAL, "JobSet replicated job %s has bad counts",
		                     rj->name ? rj->name : "(unnamed)");
	size_t n = (size_t)rj->replicas * (size_t)rj->completions;
	if (n > MAX_PODS || (*total += n) > MAX_PODS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d pods: too many to run locally",
		                     MAX_PODS);
	rj->container = kft_pod_main_container(rspec, rj->name);
	rj->kind =
	        kind_of(rspec, rj->container, kft_mpi_started_by_launcher(jobset_spec, rj->name));
	rj->jobs = calloc((size_t)rj->replicas + 1, sizeof(eng_job));
	rj->pods = calloc(n + 1, sizeof(eng_pod));
	if (!rj->jobs || !rj->pods)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (int r = 0; r < rj->replicas; r++)
		for (int i = 0; i < rj->completions; i++) {
			eng_pod *p = &rj->pods[r * rj->completions + i];
			p->replica = r;
			p->index = i;
			p->rec_index = r * rj->completions + i;
			p->proc.pid = -1;
			p->proc.log_fd = -1;
		}
	return 0;
}

static int setup_model(engine *e, kft_error *err)
{
	const json_t *spec = json_object_get(e->jobset, "spec");
	const json_t *rjs = json_object_get(spec, "replicatedJobs");
	const json_t *fp = json_object_get(spec, "failurePolicy");
	size_t total = 0;
	e->n_rjobs = json_array_size(rjs);
	if (e->n_rjobs == 0)
		return kft_error_set(err, KFT_EINVAL, "JobSet %s has no replicated jobs to run",
		                     e->jobset_name);
	e->rjobs = calloc(e->n_rjobs + 1, sizeof(eng_rjob));
	if (!e->rjobs)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < e->n_rjobs; i++) {
		int rc = setup_rjob(&e->rjobs[i], spec, json_array_get(rjs, i), &total, err);
		if (rc)
			return rc;
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++)
			e->rjobs[i].pods[k].rj = (int)i;
	}
	e->failure_policy = fp;
	e->max_restarts = jint(fp, "maxRestarts", 0);
	return 0;
}

/* Sets NAME=value in the base environment (under the pod's own env, which
 * wins), replacing the submitter's value when `replace`. */
static int set_base_env(engine *e, const char *name, const char *value, bool replace)
{
	size_t n = 0, len = strlen(name);
	char *kv = NULL;
	while (e->base_env[n] &&
	       !(strncmp(e->base_env[n], name, len) == 0 && e->base_env[n][len] == '='))
		n++;
	if (e->base_env[n] && !replace)
		return 0;
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return KFT_ENOMEM;
	if (e->base_env[n]) {
		free(e->base_env[n]);
		e->base_env[n] = kv;
		return 0;
	}
	char **grown = realloc(e->base_env, (n + 2) * sizeof(char *));
	if (!grown) {
		free(kv);
		return KFT_ENOMEM;
	}
	e->base_env = grown;
	grown[n] = kv;
	grown[n + 1] = NULL;
	return 0;
}

/* What every process of the job gets beyond the submitter's environment:
 *  - TMPDIR, a directory of the job's own under its job directory, so what
 *    a framework leaves there (torchrun's torchelastic_* folders) goes with
 *    the job when it is deleted instead of piling up in the system's;
 *  - PYTHONUNBUFFERED=1 unless the submitter set it: Python buffers a file
 *    8 KiB at a time, so without it a node's lines reach its log (and
 *    `logs -f`) in late blocks rather than as they are printed. */
static int job_env(engine *e, kft_error *err)
{
	char *tmp = NULL;
	if (asprintf(&tmp, "%s/%s", e->job_dir, KFT_LOCAL_JOB_TMP) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_local_mkdir_under(e->state_dir, tmp, err);
	if (rc) {
		free(tmp);
		return rc;
	}
	rc = set_base_env(e, "TMPDIR", tmp, true);
	free(tmp);
	if (rc == 0)
		rc = set_base_env(e, "PYTHONUNBUFFERED", "1", false);
	return rc ? kft_error_set(err, rc, "out of memory") : 0;
}

static int load_exec(engine *e, kft_error *err)
{
	json_t *base = NULL;
	int rc = kft_store_job_get_exec(e->store, e->ns, e->name, &e->workdir, &base, err);
	if (rc)
		return rc;
	e->base_env = json_to_vec(base);
	json_decref(base);
	size_t n = 0;
	while (e->base_env && e->base_env[n])
		n++;
	/* OpenMPI's mpirun refuses to run as root without both of these; a
	 * root user asking for a local run has already chosen to run as root. */
	if (geteuid() == 0 && e->base_env) {
		char **grown = realloc(e->base_env, (n + 3) * sizeof(char *));
		if (grown) {
			e->base_env = grown;
			grown[n] = strdup("OMPI_ALLOW_RUN_AS_ROOT=1");
			grown[n + 1] = grown[n] ? strdup("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1") : NULL;
			grown[n + 2] = NULL;
		}
	}
	rc = e->base_env ? job_env(e, err) : 0;
	if (rc)
		return rc;
	e->extra_env = calloc(2, sizeof(char *));
	if (!e->base_env || !e->extra_env ||
	    asprintf(&e->extra_env[0], "%s=%s", KFT_LOCAL_STATUS_FILE_ENV, e->status_path) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

/* Serves upstream's status endpoint where the TrainJobStatus plugin told the
 * trainer's pods it is (their environment in the JobSet). A job built
 * without the plugin has none; one whose port was taken since it was built
 * runs without it, its reports refused, rather than not at all. */
static void open_status_server(engine *e)
{
	kft_error err = {0};
	const char *url = NULL, *ca = NULL, *token = NULL;
	/* The credentials' thread ends here, whether or not they serve: a native
	 * initializer's child runs without exec, which no other thread may race. */
	if (e->creds)
		kft_statusserver_creds_wait(e->creds);
	kft_statusserver_find_env(e->jobset, &url, &ca, &token);
	if (url && kft_statusserver_open(url, ca, token, e->ns, e->name, e->tj, e->creds,
	                                 &e->status_server, &err) != 0)
		fprintf(stderr, "kftrainer supervise: %s\n", err.message);
}

static int load(engine *e, kft_error *err)
{
	int rc = kft_store_job_get(e->store, e->ns, e->name, &e->tj, err);
	if (rc == 0)
		rc = kft_store_job_objects(e->store, e->ns, e->name, &e->objects, err);
	if (rc == 0)
		rc = kft_store_job_info(e->store, e->ns, e->name, &e->info, err);
	if (rc)
		return rc;
	e->jobset = kft_json_find(e->objects, "kind", "JobSet");
	e->gpus = kft_local_gpus_find(e->objects);
	e->jobset_name = jstr(json_object_get(e->jobset, "metadata"), "name");
	if (!e->jobset || !e->jobset_name)
		return kft_error_set(err, KFT_EINVAL, "TrainJob %s has no JobSet to run", e->name);
	e->job_dir = kft_local_job_dir_of(e->state_dir, e->ns, e->name);
	e->status_path = kft_local_status_path(e->state_dir, e->ns, e->name);
	if (!e->job_dir || !e->status_path)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	char *logs = NULL;
	if (asprintf(&logs, "%s/logs", e->job_dir) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	rc = kft_local_mkdir_under(e->state_dir, logs, err);
	free(logs);
	if (rc)
		return rc;
	e->conditions = json_array();
	e->children = json_array();
	e->events = json_array();
	e->reports = json_array();
	if (!e->conditions || !e->children || !e->events || !e->reports)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_local_backend_init(&e->backend, e->info.uid, e->children);
	rc = kft_framework_new(KFT_LOCAL_FEATURES, &e->fw, err);
	if (rc == 0)
		rc = kft_local_load_job_plugins(e->store, e->ns, e->name, e->fw, err);
	if (rc == 0)
		rc = load_exec(e, err);
	if (rc == 0)
		rc = setup_model(e, err);
	if (rc == 0)
		open_status_server(e);
	if (rc == 0)
		e->tracker = kft_local_tracking_open(e->store, e->tj, e->base_env);
	return rc;
}

/* ---- pods ------------------------------------------------------------------- */

static char *log_path(const engine *e, const eng_rjob *rj, const eng_pod *p)
{
	char *s = NULL;
	if (asprintf(&s, "%s/logs/%s-%d.log", e->job_dir, rj->name, p->rec_index) < 0)
		return NULL;
	return s;
}

static void pod_failed(eng_pod *p, const char *reason, const char *msg)
{
	p->phase = POD_FAILED;
	kft_rfc3339_now(p->finished);
	set_str(&p->reason, "%s", reason);
	set_str(&p->message, "%s", msg);
	p->dirty = true;
}

static const char *workspace_of(const kft_podspec *spec)
{
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (strcmp(spec->mounts[i].mount_path, "/workspace") == 0)
			return spec->mounts[i].host_path;
	return NULL;
}

/* The child half of a native initializer: a pod's process without exec. */
static void initializer_child(const kft_podspec *spec, const char *log, rjob_kind kind,
                              pid_t parent)
{
	sigset_t none;
	/* dies with the supervisor, as every pod does (spawn.c) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
		_exit(127);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(127);
	closefrom(3);
	clearenv();
	for (size_t i = 0; spec->envp && spec->envp[i]; i++)
		putenv(spec->envp[i]);
	if (spec->workdir && chdir(spec->workdir) != 0) {
		/* stderr is the pod's log by now: say why, as a failed spawn does */
		fprintf(stderr, "cannot change to the working directory %s: %s\n", spec->workdir,
		        strerror(errno));
		_exit(127);
	}
	const char *ws = workspace_of(spec);
	_exit(kft_local_initializer_main(kind == RJOB_DATASET_INIT ? "dataset" : "model",
	                                 ws ? ws : ""));
}

static int start_native(const kft_podspec *spec, const char *log, rjob_kind kind, kft_proc *proc,
                        kft_error *err)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "log %s: %s", log, strerror(errno));
	close(fd);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0)
		return kft_error_set(err, KFT_EIO, "fork: %s", strerror(errno));
	if (pid == 0)
		initializer_child(spec, log, kind, parent);
	setpgid(pid, pid); /* also done in the child: whichever runs first wins */
	*proc = (kft_proc){.pid = pid, .pgid = pid, .log_fd = -1};
	return 0;
}

/* The pod's process in its volumes' view (mountns.h). The first time the
 * kernel refuses a view, this supervisor stops asking for them: the event
 * and a line in the pod's log say so once, and the pod starts again with its
 * mount paths rewritten (podspec.h). */
static int start_in_view(engine *e, eng_rjob *rj, eng_pod *p, kft_podspec_defaults *d,
                         kft_podspec *spec, const char *log, kft_error *err)
{
	kft_mountns *ns = NULL;
	int rc = d->view && spec->n_mounts
	                 ? kft_mountns_plan(spec->mounts, spec->n_mounts, &ns, err)
	                 : 0;
	if (rc == 0)
		rc = kft_proc_start_in(ns, spec->argv, spec->envp, spec->workdir, log, &p->proc,
		                       err);
	kft_mountns_free(ns);
	if (rc != KFT_EUNAVAILABLE || !d->view)
		return rc;
	char pod[600];
	pod_name(e, rj, p, pod, sizeof(pod));
	e->no_views = true;
	note_event(e, "Warning", "MountNamespaceUnavailable", "Pod", pod,
	           "%s; mount paths are rewritten in arguments and env values instead",
	           err->message);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd >= 0) {
		dprintf(fd, KFT_LOCAL_ATTEMPT_MARK " %s: no private mount view here (%s) <==\n",
		        pod, err->message);
		close(fd);
	}
	kft_podspec_free(spec);
	d->view = 0;
	rc = kft_podspec_build_with(e->jobset, e->objects, rj->name, p->replica, p->index,
	                            rj->container, e->job_dir, d, spec, err);
	return rc ? rc : kft_proc_start(spec->argv, spec->envp, spec->workdir, log, &p->proc, err);
}

static int start_process(engine *e, eng_rjob *rj, eng_pod *p, const char *log, kft_error *err)
{
	/* the pod's GPU slice, set over everything as the device plugin does */
	const char *slice = kft_local_gpus_slice(e->gpus, rj->name, p->rec_index);
	char *cuda = NULL, *extra[] = {e->extra_env[0], NULL, NULL};
	bool native = rj->kind == RJOB_DATASET_INIT || rj->kind == RJOB_MODEL_INIT;
	if (slice && asprintf(&cuda, "%s=%s", KFT_LOCAL_GPUS_CUDA_ENV, slice) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	extra[1] = cuda;
	kft_podspec_defaults d = {.base_env = e->base_env,
	                          .extra_env = extra,
	                          .workdir = e->workdir,
	                          .restart_attempt = e->restarts,
	                          .native = native,
	                          .view = !native && !e->no_views};
	kft_podspec spec;
	int rc = kft_podspec_build_with(e->jobset, e->objects, rj->name, p->replica, p->index,
	                                rj->container, e->job_dir, &d, &spec, err);
	if (rc == 0 && slice)
		rc = kft_local_gpus_resolve_nproc(spec.envp, slice, err);
	if (rc == 0 && native)
		rc = start_native(&spec, log, rj->kind, &p->proc, err);
	else if (rc == 0)
		rc = start_in_view(e, rj, p, &d, &spec, log, err);
	free(cuda);
	kft_podspec_free(&spec);
	return rc;
}

/* A line in the pod's log before each attempt but the first, so a
 * crash retried four times reads as four marked attempts (the mark is
 * documented in docs/local.md; `grep '^==> '` finds them). Only when the
 * log already holds something: a pod that never wrote gets no mark. */
static void mark_attempt(const engine *e, const eng_rjob *rj, const eng_pod *p, const char *log)
{
	char now[32], why[64] = "";
	struct stat st;
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return; /* starting the process reports it */
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		kft_rfc3339_now(now);
		if (p->sig)
			snprintf(why, sizeof(why), "; the previous was killed by signal %d",
			         p->sig);
		else if (p->exit_code)
			snprintf(why, sizeof(why), "; the previous exited with code %d",
			         p->exit_code);
		dprintf(fd,
		        "\n" KFT_LOCAL_ATTEMPT_MARK
		        " %s-%d: attempt %d, started %s%s (pod %s-%s-%d-%d-" KFT_POD_NAME_SUFFIX
		        ") <==\n",
		        rj->name, p->rec_index, p->attempts, now, why, e->jobset_name, rj->name,
		        p->replica, p->index);
	}
	close(fd);
}

/* A job run on CPU on a machine with no GPU (gpus.h) says so once: first in
 * its trainer's log, and a Warning event NoGPU on the TrainJob. */
static void note_cpu(engine *e, const eng_rjob *rj, const char *log)
{
	const char *msg = kft_local_gpus_cpu_message(e->gpus);
	const json_t *labels = json_object_get(
	        json_object_get(json_object_get(rj->spec, "template"), "metadata"), "labels");
	const char *ancestor = jstr(labels, KFT_LABEL_ANCESTOR);
	struct stat st;
	if (!msg || !ancestor || strcmp(ancestor, KFT_ANCESTOR_TRAINER) != 0 ||
	    (stat(log, &st) == 0 && st.st_size > 0))
		return;
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd >= 0) {
		dprintf(fd, KFT_LOCAL_ATTEMPT_MARK " %s <==\n", msg);
		close(fd);
	}
	note_event(e, "Warning", "NoGPU", "TrainJob", e->name, "%s", msg);
}

static void start_pod(engine *e, eng_rjob *rj, eng_pod *p)
{
	kft_error err = {0};
	char *log = log_path(e, rj, p);
	p->attempts++;
	if (log && rj->kind != RJOB_PLACEHOLDER)
		mark_attempt(e, rj, p, log);
	if (log && rj->kind == RJOB_RUN && p->rec_index == 0)
		note_cpu(e, rj, log);
	p->phase = POD_RUNNING;
	p->dirty = true;
	kft_rfc3339_now(p->started);
	p->finished[0] = '\0';
	p->exit_code = 0;
	p->sig = 0;
	set_str(&p->reason, NULL);
	set_str(&p->message, NULL);
	p->started_once = true;
	e->any_started = true;
	char pod[600];
	pod_name(e, rj, p, pod, sizeof(pod));
	if (rj->kind == RJOB_PLACEHOLDER) {
		note_event(e, "Normal", "Started", "Pod", pod, "Started container %s",
		           rj->container);
		free(log);
		return;
	}
	int rc = log ? start_process(e, rj, p, log, &err)
	             : kft_error_set(&err, KFT_ENOMEM, "out of memory");
	free(log);
	if (rc) {
		char msg[1200];
		snprintf(msg, sizeof(msg), "%s-%d (pod %s-%s-%d-%d-" KFT_POD_NAME_SUFFIX "): %s",
		         rj->name, p->rec_index, e->jobset_name, rj->name, p->replica, p->index,
		         err.message);
		pod_failed(p, "StartError", msg);
		p->exit_code = 128;
		note_event(e, "Warning", "Failed", "Pod", pod, "Error: %s", err.message);
		return;
	}
	note_event(e, "Normal", "Created", "Pod", pod, "Created container %s", rj->container);
	note_event(e, "Normal", "Started", "Pod", pod, "Started container %s", rj->container);
	p->running = true;
	if (kft_local_proc_ticks(p->proc.pid, &p->ticks, NULL) != 0)
		p->ticks = 0;
}

static void job_failed(engine *e, eng_rjob *rj, int replica);

static void start_job(engine *e, eng_rjob *rj, int r)
{
	eng_job *j = &rj->jobs[r];
	j->state = rj->completions == 0 ? JOB_SUCCEEDED : JOB_ACTIVE;
	for (int i = 0; i < rj->completions && i < rj->parallelism; i++) {
		eng_pod *p = &rj->pods[r * rj->completions + i];
		start_pod(e, rj, p);
		if (p->phase == POD_FAILED) {
			job_failed(e, rj, r);
			return;
		}
	}
}

/* The next pod of a Job whose completions exceed its parallelism. */
static void start_next(engine *e, eng_rjob *rj, int r)
{
	int running = 0;
	for (int i = 0; i < rj->completions; i++)
		running += rj->pods[r * rj->completions + i].phase == POD_RUNNING;
	for (int i = 0; i < rj->completions && running < rj->parallelism; i++) {
		eng_pod *p = &rj->pods[r * rj->completions + i];
		if (p->phase == POD_PENDING && !p->started_once) {
			start_pod(e, rj, p);
			running++;
		}
	}
}

/* Whether stop_pods' selection (one Job, or every pod when only is NULL)
 * includes p. */
static bool selected(const eng_rjob *rj, const eng_pod *p, const eng_rjob *only, int replica)
{
	return !only || (rj == only && p->replica == replica);
}

/* The end of a stopped pod: a placeholder, or any pod when the JobSet
 * succeeded, has served its purpose; any other was cut short. */
static void settle_stopped(eng_rjob *rj, eng_pod *p, bool as_success)
{
	p->restart_at = 0;
	if (p->phase != POD_RUNNING)
		return;
	if (as_success || rj->kind == RJOB_PLACEHOLDER) {
		p->phase = POD_SUCCEEDED;
		kft_rfc3339_now(p->finished);
		p->dirty = true;
	} else
		pod_failed(p, "Stopped", "stopped: another pod of the job ended it");
}

/* SIGTERM to every selected pod at once, one shared grace period, then
 * SIGKILL and reap: stopping 16 pods costs one grace period, not 16. When
 * every pod stops, so does every other descendant: a process that left its
 * pod's group (setsid) and ignores SIGTERM is not in any group signalled
 * here, and no pod is left to own it. */
static void stop_pods(engine *e, eng_rjob *only, int only_replica, bool as_success)
{
	int64_t end = kft_clock_mono_ms() + KFT_LOCAL_STOP_GRACE_MS;
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++) {
			eng_pod *p = &e->rjobs[i].pods[k];
			if (p->running && selected(&e->rjobs[i], p, only, only_replica))
				kill(-p->proc.pgid, SIGTERM);
		}
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++) {
			eng_pod *p = &e->rjobs[i].pods[k];
			if (!selected(&e->rjobs[i], p, only, only_replica))
				continue;
			if (p->running) {
				int64_t left = end - kft_clock_mono_ms();
				kft_proc_stop(&p->proc, left > 0 ? (int)left : 0);
				kft_proc_poll(&p->proc, NULL, &p->exit_code, &p->sig);
				p->running = false;
			}
			settle_stopped(&e->rjobs[i], p, as_success);
		}
	if (!only)
		kft_local_kill_descendants();
}

static void job_failed(engine *e, eng_rjob *rj, int replica)
{
	char job[600];
	job_name(e, rj, replica, job, sizeof(job));
	note_event(e, "Warning", JOB_REASON_BACKOFF, "Job", job, JOB_MESSAGE_BACKOFF);
	rj->jobs[replica].state = JOB_FAILED;
	rj->jobs[replica].failed_at = ++e->fail_seq;
	stop_pods(e, rj, replica, false);
	e->dirty = true;
}

static void job_check_done(engine *e, eng_rjob *rj, int r)
{
	int ok = 0;
	for (int i = 0; i < rj->completions; i++)
		ok += rj->pods[r * rj->completions + i].phase == POD_SUCCEEDED;
	if (ok == rj->completions) {
		char job[600];
		job_name(e, rj, r, job, sizeof(job));
		note_event(e, "Normal", "Completed", "Job", job, "Job completed");
		rj->jobs[r].state = JOB_SUCCEEDED;
		e->dirty = true;
	} else
		start_next(e, rj, r);
}

/* "node-1 (pod NAME) exited with code 3; its last lines: ...": the node and
 * the code, which a user looks for first, the pod's full name for the logs,
 * and the end of what the attempt wrote (logtail.c), which usually says
 * why; the job's Failed condition carries it. */
static void exit_message(const engine *e, const eng_rjob *rj, eng_pod *p)
{
	char how[64], tail[1024] = "";
	char *log = log_path(e, rj, p);
	if (log)
		kft_local_log_tail(log, 8, tail, sizeof(tail));
	free(log);
	if (p->sig)
		snprintf(how, sizeof(how), "was killed by signal %d (exit code %d)", p->sig,
		         p->exit_code);
	else
		snprintf(how, sizeof(how), "exited with code %d", p->exit_code);
	set_str(&p->message, "%s-%d (pod %s-%s-%d-%d-" KFT_POD_NAME_SUFFIX ") %s%s%s", rj->name,
	        p->rec_index, e->jobset_name, rj->name, p->replica, p->index, how,
	        tail[0] ? "; its last lines:\n" : "", tail);
}

/* restartPolicy OnFailure: the same pod again, after a back-off that doubles
 * like the kubelet's but from 50 ms, so a crash loop costs little CPU while
 * the default backoffLimit still ends in seconds. */
static void schedule_restart(eng_pod *p)
{
	p->restarts++;
	int shift = p->restarts < 9 ? p->restarts : 9;
	p->restart_at = kft_clock_mono_ms() + (RESTART_BACKOFF_MS << (shift - 1));
	set_str(&p->reason, "CrashLoopBackOff");
}

static void pod_exited(engine *e, eng_rjob *rj, eng_pod *p)
{
	int exited = 0;
	if (kft_proc_poll(&p->proc, &exited, &p->exit_code, &p->sig) != 0 || !exited)
		return;
	p->running = false;
	p->dirty = true;
	e->dirty = true;
	if (p->exit_code == 0) {
		p->phase = POD_SUCCEEDED;
		kft_rfc3339_now(p->finished);
		set_str(&p->reason, "Completed");
		job_check_done(e, rj, p->replica);
		return;
	}
	exit_message(e, rj, p);
	if (++rj->jobs[p->replica].failures <= rj->backoff_limit) {
		char pod[600];
		pod_name(e, rj, p, pod, sizeof(pod));
		/* the kubelet's words for a crash-looping container */
		note_event(e, "Warning", "BackOff", "Pod", pod,
		           "Back-off restarting failed container %s in pod %s", rj->container, pod);
		schedule_restart(p);
		return;
	}
	p->phase = POD_FAILED;
	kft_rfc3339_now(p->finished);
	set_str(&p->reason, "Error");
	job_failed(e, rj, p->replica);
}

/* Pods whose restart back-off has passed start again. */
static void restart_due(engine *e)
{
	int64_t now = kft_clock_mono_ms();
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++) {
			eng_pod *p = &e->rjobs[i].pods[k];
			if (!p->restart_at || p->restart_at > now || p->phase != POD_RUNNING)
				continue;
			p->restart_at = 0;
			start_pod(e, &e->rjobs[i], p);
			if (p->phase == POD_FAILED)
				job_failed(e, &e->rjobs[i], p->replica);
			e->dirty = true;
		}
}

static eng_pod *pod_by_pid(engine *e, pid_t pid, eng_rjob **rj_out)
{
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++)
			if (e->rjobs[i].pods[k].running && e->rjobs[i].pods[k].proc.pid == pid) {
				*rj_out = &e->rjobs[i];
				return &e->rjobs[i].pods[k];
			}
	return NULL;
}

/* Peek at each exited child before reaping it: a pod leader's group is
 * killed while the zombie still holds the number, so the signal cannot reach
 * a process that reused it. Other children (orphans we adopted as
 * subreaper) are just reaped. */
static void reap_children(engine *e)
{
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
			return;
		eng_rjob *rj = NULL;
		eng_pod *p = pod_by_pid(e, si.si_pid, &rj);
		if (p) {
			kill(-si.si_pid, SIGKILL);
			pod_exited(e, rj, p);
			if (p->running) { /* not collected: never report the same zombie twice */
				waitpid(si.si_pid, NULL, WNOHANG);
				p->running = false;
			}
		} else
			waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/* ---- the JobSet's judgement ------------------------------------------------- */

static void set_jobset_condition(engine *e, const char *type, const char *reason, const char *msg)
{
	char now[32];
	note_event(e, strcmp(type, KFT_JOBSET_CONDITION_FAILED) == 0 ? "Warning" : "Normal", reason,
	           "JobSet", e->jobset_name, "%s", msg);
	json_t *holder = json_pack("{s:O}", "conditions", e->conditions);
	kft_rfc3339_now(now);
	if (holder)
		kft_condition_set(holder, type, KFT_CONDITION_TRUE, reason, msg, now, NULL);
	json_decref(e->conditions);
	e->conditions = json_incref(json_object_get(holder, "conditions"));
	if (!e->conditions)
		e->conditions = json_array();
	json_decref(holder);
}

static void reset_model(engine *e)
{
	for (size_t i = 0; i < e->n_rjobs; i++) {
		eng_rjob *rj = &e->rjobs[i];
		rj->started = false;
		memset(rj->jobs, 0, (size_t)rj->replicas * sizeof(eng_job));
		for (int k = 0; k < rj->replicas * rj->completions; k++) {
			eng_pod *p = &rj->pods[k];
			p->phase = POD_PENDING;
			p->started_once = false;
			p->restarts = 0;
			p->restart_at = 0;
			p->dirty = true;
		}
	}
}

static void restart_jobset(engine *e, bool counts)
{
	stop_pods(e, NULL, 0, false);
	e->restarts++;
	e->restarts_toward_max += counts;
	reset_model(e);
	e->dirty = true;
}

static void jobset_failed(engine *e, const char *reason, const char *base, const char *first,
                          const eng_pod *pod)
{
	char msg[2048];
	snprintf(msg, sizeof(msg), "%s (first failed job: %s)%s%s", base, first,
	         pod && pod->message ? ": " : "", pod && pod->message ? pod->message : "");
	stop_pods(e, NULL, 0, false);
	set_jobset_condition(e, KFT_JOBSET_CONDITION_FAILED, reason, msg);
	e->finished = true;
	e->dirty = true;
}

/* JobSet v0.12 executeFailurePolicy: no policy fails the JobSet; otherwise
 * the first applicable rule's action, by default RestartJobSet, which fails
 * it once restartsCountTowardsMax reaches maxRestarts. The RestartJob
 * actions need a JobSet feature gate that is off by default; they take the
 * default action here. */
static void fail_jobset(engine *e)
{
	char first[512];
	const eng_pod *pod = NULL;
	const char *rjob = NULL;
	kft_jobset_model_first_failed(e->jobset_name, e->rjobs, e->n_rjobs, first, sizeof(first),
	                              &pod, &rjob);
	if (!e->failure_policy) {
		jobset_failed(e, KFT_JOBSET_REASON_FAILED, KFT_JOBSET_MESSAGE_FAILED, first, pod);
		return;
	}
	const char *action = kft_jobset_model_rule_action(e->failure_policy, rjob,
	                                                  JOB_REASON_BACKOFF, JOB_MESSAGE_BACKOFF);
	if (action && strcmp(action, "FailJobSet") == 0)
		jobset_failed(e, JOBSET_REASON_FAIL_ACTION, JOBSET_MESSAGE_FAIL_ACTION, first, pod);
	else if (action && strcmp(action, "RestartJobSetAndIgnoreMaxRestarts") == 0)
		restart_jobset(e, false);
	else if (e->restarts_toward_max < e->max_restarts)
		restart_jobset(e, true);
	else
		jobset_failed(e, JOBSET_REASON_REACHED_MAX, JOBSET_MESSAGE_REACHED_MAX, first, pod);
}

static bool any_job_failed(const engine *e)
{
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int r = 0; r < e->rjobs[i].replicas; r++)
			if (e->rjobs[i].jobs[r].state == JOB_FAILED)
				return true;
	return false;
}

static void start_ready(engine *e)
{
	for (size_t i = 0; i < e->n_rjobs && !e->finished; i++) {
		eng_rjob *rj = &e->rjobs[i];
		if (rj->started || !kft_jobset_model_depends_met(e->rjobs, e->n_rjobs, rj) ||
		    !kft_jobset_model_in_order_met(json_object_get(e->jobset, "spec"), e->rjobs, i))
			continue;
		rj->started = true;
		e->dirty = true;
		for (int r = 0; r < rj->replicas; r++)
			start_job(e, rj, r);
	}
}

/* One round of judgement; repeats while starting pods changes what is met
 * (a placeholder is Ready at once, so its dependants start in the same tick). */
static void judge(engine *e)
{
	for (int round = 0; round < 8 && !e->finished; round++) {
		bool before = e->dirty;
		e->dirty = false;
		if (any_job_failed(e))
			fail_jobset(e);
		else if (kft_jobset_model_success(json_object_get(e->jobset, "spec"), e->rjobs,
		                                  e->n_rjobs)) {
			stop_pods(e, NULL, 0, true);
			set_jobset_condition(e, KFT_JOBSET_CONDITION_COMPLETED,
			                     KFT_JOBSET_REASON_COMPLETED,
			                     KFT_JOBSET_MESSAGE_COMPLETED);
			e->finished = true;
			e->dirty = true;
		} else
			start_ready(e);
		bool changed = e->dirty;
		e->dirty = before || changed;
		if (!changed)
			break;
	}
}

/* ---- writing the store ------------------------------------------------------- */

static json_t *jobset_stub(engine *e, bool suspended)
{
	json_t *rs = kft_jobset_model_rjobs_status(e->rjobs, e->n_rjobs, suspended);
	json_t *st = json_pack("{s:O, s:i, s:i, s:o*}", "conditions", e->conditions, "restarts",
	                       e->restarts, "restartsCountTowardsMax", e->restarts_toward_max,
	                       "replicatedJobsStatus", rs);
	if (st && e->finished) {
		const char *ts = kft_condition_find(st, KFT_JOBSET_CONDITION_COMPLETED)
		                         ? KFT_JOBSET_CONDITION_COMPLETED
		                         : KFT_JOBSET_CONDITION_FAILED;
		json_object_set_new(st, "terminalState", json_string(ts));
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o*}", "apiVersion", JOBSET_API, "kind",
	                 "JobSet", "metadata", "name", e->jobset_name, "namespace", e->ns, "status",
	                 st);
}

static int compute_status(engine *e, bool suspended, kft_error *err)
{
	char now[32];
	json_t *status = NULL, *stub = jobset_stub(e, suspended);
	json_t *trainer =
	        json_incref(json_object_get(json_object_get(e->tj, "status"), "trainerStatus"));
	if (!stub) {
		json_decref(trainer);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	json_array_clear(e->children);
	json_array_append_new(e->children, stub);
	kft_rfc3339_now(now);
	int rc = kft_framework_status(e->fw, &e->backend.table, e->tj, now, &status, err);
	if (rc == 0)
		rc = kft_trainjob_adopt_status(e->tj, status, now, err);
	if (rc == 0 && suspended)
		rc = kft_trainjob_set_suspended(e->tj, now, err);
	if (rc == 0 && trainer)
		json_object_set(json_object_get(e->tj, "status"), "trainerStatus", trainer);
	json_decref(trainer);
	return rc;
}

static int write_pod(engine *e, const eng_rjob *rj, eng_pod *p, kft_error *err)
{
	static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed"};
	char *log = log_path(e, rj, p);
	kft_pod_record rec = {.step = (char *)rj->name,
	                      .index = p->rec_index,
	                      .state = (char *)phases[p->phase],
	                      .pid = p->running ? p->proc.pid : 0,
	                      .exit_code = p->exit_code,
	                      .signal = p->sig,
	                      .restarts = p->attempts > 1 ? p->attempts - 1 : 0,
	                      .started = p->started[0] ? p->started : NULL,
	                      .finished = p->finished[0] ? p->finished : NULL,
	                      .log_path = log,
	                      .start_ticks = p->running ? p->ticks : 0,
	                      .reason = p->reason,
	                      .message = p->message};
	/* A running pod's pid stays recorded after it ends so a reader can tell
	 * which process it was; only the live flag matters for signalling. */
	int rc = kft_store_pod_upsert(e->store, e->ns, e->name, &rec, err);
	free(log);
	if (rc == 0)
		p->dirty = false;
	return rc;
}

static int write_all(engine *e, bool suspended, kft_error *err)
{
	int rc = compute_status(e, suspended, err);
	if (rc)
		return rc;
	/* A plugin's TerminalCondition may end the job before its JobSet has:
	 * a finished TrainJob's processes have nothing left to do here. */
	if (!e->finished && !suspended && kft_trainjob_is_finished(e->tj)) {
		stop_pods(e, NULL, 0, false);
		e->finished = true;
	}
	rc = kft_store_begin(e->store, err);
	for (size_t i = 0; rc == 0 && i < e->n_rjobs; i++)
		for (int k = 0; rc == 0 && k < e->rjobs[i].replicas * e->rjobs[i].completions; k++)
			if (e->rjobs[i].pods[k].dirty)
				rc = write_pod(e, &e->rjobs[i], &e->rjobs[i].pods[k], err);
	if (rc == 0)
		rc = kft_store_job_set_status(e->store, e->ns, e->name,
		                              json_object_get(e->tj, "status"), err);
	if (rc == 0 && e->any_started)
		rc = kft_store_job_mark(e->store, e->ns, e->name, KFT_JOB_STARTED, err);
	if (rc == 0 && kft_trainjob_is_finished(e->tj))
		rc = kft_store_job_mark(e->store, e->ns, e->name, KFT_JOB_FINISHED, err);
	for (size_t i = 0; rc == 0 && i < json_array_size(e->events); i++)
		rc = kft_store_event_add(e->store, e->ns, e->name, json_array_get(e->events, i),
		                         err);
	for (size_t i = 0; rc == 0 && i < json_array_size(e->reports); i++)
		rc = kft_store_report_add(e->store, e->ns, e->name, json_array_get(e->reports, i),
		                          err);
	if (rc == 0 && (rc = kft_store_commit(e->store, err)) == 0) {
		json_array_clear(e->events);
		json_array_clear(e->reports);
	}
	if (rc == 0)
		return 0;
	kft_store_rollback(e->store);
	return rc;
}

/* ---- progress reports ---------------------------------------------------------- */

/* A TrainerStatus reported by the file or the endpoint (consumed; NULL: none)
 * replaces the job's, as the status server's apply does. */
static void record_report(engine *e, json_t *ts)
{
	json_t *status = json_object_get(e->tj, "status");
	if (ts && !status) {
		json_object_set_new(e->tj, "status", json_object());
		status = json_object_get(e->tj, "status");
	}
	if (ts && !json_equal(ts, json_object_get(status, "trainerStatus"))) {
		json_object_set(status, "trainerStatus", ts);
		/* The history keeps every distinct report, bounded by the store
		 * and here (a report flood between two writes). */
		if (json_array_size(e->reports) < KFT_STORE_REPORTS_MAX)
			json_array_append(e->reports, ts);
		kft_local_tracking_report(e->tracker, e->tj, ts);
		e->dirty = true;
	}
	json_decref(ts);
}

static void read_report(engine *e)
{
	struct stat st;
	char now[32], *buf;
	if (stat(e->status_path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > STATUS_FILE_MAX)
		return;
	if (st.st_mtim.tv_sec == e->status_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == e->status_mtime.tv_nsec && st.st_size == e->status_size)
		return;
	e->status_mtime = st.st_mtim;
	e->status_size = st.st_size;
	int fd = open(e->status_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	buf = fd >= 0 ? malloc(STATUS_FILE_MAX + 1) : NULL;
	ssize_t n = buf ? read(fd, buf, STATUS_FILE_MAX) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		buf[n] = '\0';
		kft_rfc3339_now(now);
		record_report(e, kft_local_parse_report(buf, now));
	}
	free(buf);
}

/* ---- deadline, stop signals ---------------------------------------------------- */

static void check_deadline(engine *e)
{
	char now[32];
	kft_deadline_state st = KFT_DEADLINE_NONE;
	int64_t left;
	kft_rfc3339_now(now);
	if (kft_trainjob_reconcile_deadline(e->tj, now, &st, &left, NULL) != 0 ||
	    st != KFT_DEADLINE_EXCEEDED)
		return;
	stop_pods(e, NULL, 0, false);
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++)
			if (e->rjobs[i].pods[k].reason &&
			    strcmp(e->rjobs[i].pods[k].reason, "Stopped") == 0)
				set_str(&e->rjobs[i].pods[k].reason, KFT_REASON_DEADLINE_EXCEEDED);
	e->finished = true;
	e->dirty = true;
}

/* Pods of a suspended job are deleted on a cluster; here their records say
 * so and wait for the resume. */
static void mark_suspended(engine *e)
{
	for (size_t i = 0; i < e->n_rjobs; i++)
		for (int k = 0; k < e->rjobs[i].replicas * e->rjobs[i].completions; k++) {
			eng_pod *p = &e->rjobs[i].pods[k];
			if (p->phase == POD_SUCCEEDED)
				continue;
			p->phase = POD_PENDING;
			set_str(&p->reason, KFT_REASON_SUSPENDED);
			set_str(&p->message, KFT_MESSAGE_SUSPENDED);
			p->dirty = true;
		}
	set_jobset_condition(e, JOBSET_CONDITION_SUSPENDED, JOBSET_REASON_SUSPENDED,
	                     JOBSET_MESSAGE_SUSPENDED);
}

/* A stop signal: the CLI suspended or deleted the job, or someone else
 * stopped the supervisor. Pods go first; then what the store says decides. */
static int on_stop(engine *e, kft_error *err)
{
	kft_job_info info = {0};
	stop_pods(e, NULL, 0, false);
	int rc = kft_store_job_info(e->store, e->ns, e->name, &info, err);
	if (rc == KFT_ENOTFOUND)
		return 0; /* deleted: nothing to write */
	if (rc)
		return rc;
	bool suspended = info.suspended, deleting = info.deleting != NULL;
	kft_job_info_free(&info);
	if (deleting)
		return 0; /* the deleter removes everything: writing would only race it */
	if (suspended) {
		mark_suspended(e);
		json_object_set_new(json_object_get(e->tj, "spec"), "suspend", json_true());
		return write_all(e, true, err);
	}
	char now[32], msg[256];
	kft_rfc3339_now(now);
	snprintf(msg, sizeof(msg),
	         "the job's supervisor was stopped by signal %d; its processes were stopped",
	         e->stop_signal);
	rc = kft_trainjob_set_failed(e->tj, msg, KFT_LOCAL_REASON_SUPERVISOR_LOST, now, err);
	return rc ? rc : write_all(e, false, err);
}

/* ---- the loop ------------------------------------------------------------------- */

/* The job directory removed under a running job (the state directory
 * deleted by hand): nothing would ever stop its pods, so the supervisor
 * does. Looked at every JOB_DIR_CHECK_TICKS ticks. */
static bool job_dir_gone(engine *e)
{
	struct stat st;
	if (++e->ticks_since_dir_check < JOB_DIR_CHECK_TICKS)
		return false;
	e->ticks_since_dir_check = 0;
	return stat(e->job_dir, &st) != 0 && errno == ENOENT;
}

static int open_signals(engine *e, kft_error *err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
	    (e->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		return kft_error_set(err, KFT_EIO, "signalfd: %s", strerror(errno));
	return 0;
}

static void drain_signals(engine *e)
{
	struct signalfd_siginfo si;
	while (read(e->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			e->stop_requested = true;
			e->stop_signal = (int)si.ssi_signo;
		}
	}
}

/* Writes what changed. A full disk or a store that stays busy must not stop
 * the job: the write is retried on the next turn (and the first failure of a
 * streak is said in the supervisor's log). */
static void flush(engine *e)
{
	kft_error err = {0};
	if (!e->dirty)
		return;
	e->dirty = false;
	if (write_all(e, false, &err) == 0) {
		e->write_failing = false;
		return;
	}
	e->dirty = true;
	if (!e->write_failing)
		fprintf(stderr,
		        "kftrainer supervise: cannot record the job's state (will retry): %s\n",
		        err.message);
	e->write_failing = true;
}

/* Runs until the job has ended and that is recorded, or a stop signal. */
static int loop(engine *e, kft_error *err)
{
	struct pollfd pfd[2];
	judge(e);
	e->dirty = true;
	for (;;) {
		flush(e);
		if (e->finished && !e->dirty)
			return 0;
		pfd[0] = (struct pollfd){.fd = e->sfd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = kft_statusserver_fd(e->status_server),
		                         .events = POLLIN};
		if (poll(pfd, 2, e->finished ? FINAL_RETRY_MS : TICK_MS) < 0 && errno != EINTR)
			return kft_error_set(err, KFT_EIO, "poll: %s", strerror(errno));
		record_report(e, kft_statusserver_take(e->status_server));
		drain_signals(e);
		if (e->stop_requested)
			return on_stop(e, err);
		if (job_dir_gone(e)) {
			stop_pods(e, NULL, 0, false);
			return 0;
		}
		reap_children(e);
		if (!e->finished) {
			restart_due(e);
			judge(e);
		}
		if (!e->finished)
			check_deadline(e);
		read_report(e);
	}
}

/* A job whose objects cannot be run fails at once, worded as upstream's
 * controller words a failure to create a TrainJob's resources, rather than
 * waiting for the liveness check to call its supervisor lost. */
static void fail_unrunnable(engine *e, const kft_error *why)
{
	char now[32];
	char *msg = kft_trainjob_reconcile_failed_message(why ? why->message : "unknown error");
	kft_rfc3339_now(now);
	if (msg &&
	    kft_trainjob_set_failed(e->tj, msg, KFT_EVENT_RESOURCES_CREATION_FAILED, now, NULL) ==
	            0 &&
	    kft_store_begin(e->store, NULL) == 0) {
		if (kft_store_job_set_status(e->store, e->ns, e->name,
		                             json_object_get(e->tj, "status"), NULL) == 0 &&
		    kft_store_job_mark(e->store, e->ns, e->name, KFT_JOB_FINISHED, NULL) == 0)
			kft_store_commit(e->store, NULL);
		else
			kft_store_rollback(e->store);
	}
	free(msg);
}

static void engine_free(engine *e)
{
	for (size_t i = 0; e->rjobs && i < e->n_rjobs; i++) {
		eng_rjob *rj = &e->rjobs[i];
		for (int k = 0; rj->pods && k < rj->replicas * rj->completions; k++) {
			if (rj->pods[k].running)
				kft_proc_stop(&rj->pods[k].proc, KFT_LOCAL_STOP_GRACE_MS);
			free(rj->pods[k].reason);
			free(rj->pods[k].message);
		}
		free(rj->pods);
		free(rj->jobs);
	}
	/* nothing the job started outlives its supervisor, however it ended */
	kft_local_kill_descendants();
	free(e->rjobs);
	if (e->sfd >= 0)
		close(e->sfd);
	kft_framework_free(e->fw);
	json_decref(e->tj);
	json_decref(e->objects);
	json_decref(e->children);
	json_decref(e->conditions);
	json_decref(e->events);
	json_decref(e->reports);
	kft_job_info_free(&e->info);
	free(e->job_dir);
	free(e->workdir);
	free(e->status_path);
	kft_statusserver_close(e->status_server);
	free_vec(e->base_env);
	free_vec(e->extra_env);
	kft_store_close(e->store);
}

int kft_local_engine_run(const char *state_dir, kft_store *store, const char *ns, const char *name,
                         kft_statusserver_creds *creds, kft_error *err)
{
	const char *views = getenv(KFT_LOCAL_MOUNT_NAMESPACE_ENV);
	engine e = {.state_dir = state_dir,
	            .store = store,
	            .creds = creds,
	            .ns = ns && *ns ? ns : "default",
	            .name = name,
	            .sfd = -1,
	            .no_views = views && (strcmp(views, "off") == 0 || strcmp(views, "0") == 0)};
	int rc = open_signals(&e, err);
	if (rc == 0 && (rc = load(&e, err)) != 0 && rc != KFT_ENOTFOUND && e.tj)
		fail_unrunnable(&e, err);
	if (rc == 0)
		rc = loop(&e, err);
	if (rc == 0 && e.finished)
		kft_local_export_step(state_dir, e.job_dir, e.tj, e.sfd);
	kft_local_tracking_close(e.tracker, e.store, e.tj);
	engine_free(&e);
	return rc;
}
