/*
 * local.c - the local backend's front: what the CLI calls (see local.h).
 *
 * Design in plain words:
 *  - Submitting is one store transaction: record the job (the store makes
 *    its uid), build its objects with the local backend and that uid, record
 *    them and what the processes inherit, start the supervisor and record its
 *    pid, commit. The supervisor's first read waits for the commit, and any
 *    failure rolls everything back and stops the supervisor, so a job is
 *    either fully submitted or not at all.
 *  - The supervisor is started with posix_spawn in a session of its own,
 *    stdin and output on /dev/null, cwd "/", so it outlives the CLI and
 *    holds nothing of it, and a pipe on its fd 3: the submitter writes "g"
 *    and the job's namespace and name (each ended by a NUL) after its commit,
 *    or closes the pipe to call the start off, and the supervisor then sends
 *    its output to <job dir>/supervisor.log and claims the job. So no
 *    supervisor ever waits on the store's lock, and a supervisor is started
 *    before the submitter's own checks and writes (by `train`, before it
 *    even opens the store: it learns which job is its own from the go
 *    message). Meanwhile the supervisor starts, loads its status server's
 *    kept credentials (or makes them, the costliest part of a start: two
 *    P-256 keys; on a thread of their own that the engine waits for only as
 *    the status server opens), opens the store and prepares the statements
 *    its start reads with (supervisor.c).
 *  - "Meanwhile" needs a second CPU, and a kernel may leave the new
 *    supervisor queued behind its submitter on the submitter's CPU while
 *    another idles (a VM's kernel that packs tasks onto few vCPUs does: the
 *    two then run one after the other). So the submitting thread steps
 *    aside: it runs on its other CPUs until it lets the supervisor go, and
 *    then on all of them again, after moving off the CPU the go's wake-up
 *    queued the supervisor on if that is its own. The supervisor's own
 *    CPUs, which its pods inherit, are never touched.
 *  - Reading a job checks that a job still running has a live supervisor
 *    (pid and start time). If not, the check and the fix (kill what its pods
 *    left, mark the job Failed) happen inside one transaction that re-reads
 *    the job first, so two CLIs cannot both act.
 *  - Suspend and delete stop the supervisor with SIGTERM (it stops its pods
 *    and exits), fall back to SIGKILL, then kill any recorded pod group that
 *    is still there. Delete first marks the job as being deleted (a
 *    deletionTimestamp, committed before any signal), so the supervisor it
 *    stops, the liveness check and a concurrent suspend/resume all see a
 *    deletion rather than a crash or a running job.
 *  - Every entry point normalises its namespace once (NULL or "" means
 *    "default"), so nothing below ever sees NULL.
 */
#include "local/local.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kftrainer/constants.h"
#include "framework/conditions.h"
#include "local/gpus.h"
#include "local/torchtune_env.h"
#include "plugins/torchtune.h"
#include "local/local_internal.h"
#include "local/statusserver.h"
#include "util/json.h"
#include "util/rfc3339.h"
#include "util/strbuf.h"

extern char **environ;

#define MAX_CHILDREN       64
#define SUPERVISOR_STOP_MS (KFT_LOCAL_STOP_GRACE_MS + 3000)
#define GO_FD              3 /* the supervisor's go pipe (see the top) */
#define GO_FD_STRING       "3"

struct kft_local {
	char *state_dir, *exe;
	kft_store *store;
	kft_local_backend_state backend;
	pid_t children[MAX_CHILDREN]; /* supervisors we started and must reap */
	size_t n_children;
	pid_t pending;        /* a supervisor started for the transaction under way, or -1 */
	int pending_go;       /* the write end of its go pipe, or -1 */
	bool aside;           /* a thread stepped aside from its CPU (see the top) */
	pid_t aside_tid;      /* which one */
	cpu_set_t aside_cpus; /* the CPUs it may run on otherwise */
};

/* local.h promises NULL or "" means "default": every entry point that takes
 * a namespace normalises it here once, so nothing below (supervisor argv,
 * paths, store keys) ever sees NULL. */
static const char *ns_of(const char *ns)
{
	return ns && *ns ? ns : "default";
}

/* ---- opening ------------------------------------------------------------------ */

static int spawn_supervisor(kft_local *l, kft_error *err);

static int open_local(const char *state_dir, const char *exe, bool prestart, kft_local **out,
                      kft_error *err)
{
	*out = NULL;
	kft_local *l = calloc(1, sizeof(*l));
	char buf[PATH_MAX];
	if (!l)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	l->pending = -1;
	l->pending_go = -1;
	l->state_dir = state_dir ? strdup(state_dir) : kft_store_default_dir();
	if (!exe) {
		ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		exe = buf;
	}
	l->exe = strdup(exe);
	int rc = !l->state_dir
	                 ? kft_error_set(err, KFT_EINVAL,
	                                 "no state directory: set KFTRAINER_STATE_DIR or HOME")
	         : !l->exe ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                   : 0;
	if (rc == 0 && prestart)
		rc = spawn_supervisor(l, err);
	if (rc == 0)
		rc = kft_store_open(l->state_dir, &l->store, err);
	/* CLI calls are brief; the supervisor, which writes a job's outcome,
	 * opens the store itself and keeps SQLite's checkpoint at close. */
	if (rc == 0)
		rc = kft_store_skip_close_checkpoint(l->store, err);
	if (rc) {
		kft_local_close(l);
		return rc;
	}
	kft_local_backend_init(&l->backend, NULL, NULL);
	*out = l;
	return 0;
}

int kft_local_open(const char *state_dir, const char *exe, kft_local **out, kft_error *err)
{
	return open_local(state_dir, exe, false, out, err);
}

int kft_local_open_to_submit(const char *state_dir, const char *exe, kft_local **out,
                             kft_error *err)
{
	return open_local(state_dir, exe, true, out, err);
}

static void reap_children(kft_local *l)
{
	size_t k = 0;
	for (size_t i = 0; i < l->n_children; i++)
		if (waitpid(l->children[i], NULL, WNOHANG) == 0)
			l->children[k++] = l->children[i];
	l->n_children = k;
}

static void release_supervisor(kft_local *l, const char *ns, const char *name);

void kft_local_close(kft_local *l)
{
	if (!l)
		return;
	release_supervisor(l, NULL, NULL);
	reap_children(l);
	kft_store_close(l->store);
	free(l->state_dir);
	free(l->exe);
	free(l);
}

kft_store *kft_local_store(kft_local *l)
{
	return l->store;
}

const char *kft_local_state_dir(const kft_local *l)
{
	return l->state_dir;
}

char *kft_local_job_dir(const kft_local *l, const char *ns, const char *name)
{
	return kft_local_job_dir_of(l->state_dir, ns_of(ns), name);
}

const kft_backend *kft_local_backend(kft_local *l)
{
	return &l->backend.table;
}

/* ---- names -------------------------------------------------------------------- */

/* 63 (a DNS label) less the 5 random characters: the API server's
 * maxGeneratedNameLength. */
#define GENERATED_PREFIX_MAX 58

int kft_local_generate_name(const char *generate_name, char **out, kft_error *err)
{
	static const char k8s[] = "bcdfghjklmnpqrstvwxz2456789", hex[] = "0123456789abcdef";
	unsigned char r[12];
	char sfx[13];
	*out = NULL;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return kft_error_set(err, KFT_EIO, "cannot generate a name: %s", strerror(errno));
	if (generate_name && *generate_name) {
		size_t n = strlen(generate_name);
		for (int i = 0; i < 5; i++)
			sfx[i] = k8s[r[i] % (sizeof(k8s) - 1)];
		sfx[5] = '\0';
		if (asprintf(out, "%.*s%s",
		             (int)(n > GENERATED_PREFIX_MAX ? GENERATED_PREFIX_MAX : n),
		             generate_name, sfx) < 0) {
			*out = NULL;
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		return 0;
	}
	/* the SDK: random.choice(ascii_lowercase) + uuid4().hex[:11]; the first
	 * 11 hex digits of a uuid4 are all random */
	sfx[0] = (char)('a' + r[0] % 26);
	for (int i = 1; i < 12; i++)
		sfx[i] = hex[r[i] & 0xf];
	sfx[12] = '\0';
	*out = strdup(sfx);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

static int ensure_name(json_t *tj, kft_error *err)
{
	json_t *meta = json_object_get(tj, "metadata");
	char *name = NULL;
	if (!meta) {
		json_object_set_new(tj, "metadata", json_object());
		meta = json_object_get(tj, "metadata");
	}
	if (!json_is_object(meta))
		return kft_error_set(err, KFT_EINVAL, "metadata must be an object");
	if (json_string_value(json_object_get(meta, "name")))
		return 0;
	int rc = kft_local_generate_name(json_string_value(json_object_get(meta, "generateName")),
	                                 &name, err);
	if (rc)
		return rc;
	json_object_set_new(meta, "name", json_string(name));
	free(name);
	return 0;
}

/* ---- what the processes inherit ----------------------------------------------- */

/* Variables of the submitter that stand in for an image's environment. */
static bool allowed_env(const char *kv)
{
	static const char *const names[] = {
	        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	        "TERM", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "HF_HOME",
	        "HF_ENDPOINT", "HF_TOKEN", "CUDA_VISIBLE_DEVICES",
	        /* what the initializers' HTTPS needs to reach a
	         * server through a proxy or signed by a private
	         * CA, read as curl's tool reads them */
	        "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "http_proxy", "https_proxy",
	        "no_proxy", "HTTPS_PROXY", "NO_PROXY"};
	size_t n = strcspn(kv, "=");
	if (kv[n] != '=')
		return false;
	/* LC_*, and MLflow's client settings: the job's run is made with
	 * them (local/tracking.h), and its code sees the same server */
	if (strncmp(kv, "LC_", 3) == 0 || strncmp(kv, "MLFLOW_", 7) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncmp(kv, names[i], n) == 0)
			return true;
	return false;
}

static json_t *base_env_json(char *const *given)
{
	json_t *arr = json_array();
	char *const *src = given ? given : environ;
	for (size_t i = 0; arr && src && src[i]; i++)
		if ((given || allowed_env(src[i])) && strchr(src[i], '='))
			json_array_append_new(arr, json_string(src[i]));
	return arr;
}

/* ---- starting a supervisor ----------------------------------------------------- */

/* A supervisor outlives the command that starts it: a session of its own (no
 * terminal's signals) and no signal blocked. */
static void supervisor_attr(posix_spawnattr_t *at)
{
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_init(at);
	posix_spawnattr_setflags(at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
	                                     POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(at, &none);
	posix_spawnattr_setsigdefault(at, &none);
}

int kft_local_start_detached(kft_local *l, const char *dir, const char *flag, const char *ns,
                             const char *name, pid_t *pid, kft_error *err)
{
	char *logp = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *argv[] = {l->exe,
	                "supervise",
	                "--state-dir",
	                l->state_dir,
	                (char *)(flag ? flag : ns),
	                (char *)(flag ? ns : name),
	                (char *)(flag ? name : NULL),
	                NULL};
	if (asprintf(&logp, "%s/%s", dir, KFT_LOCAL_SUPERVISOR_LOG) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_local_mkdir_under(l->state_dir, dir, err);
	if (rc == 0) {
		posix_spawn_file_actions_init(&fa);
		supervisor_attr(&at);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 1, logp,
		                                 O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
		posix_spawn_file_actions_addclosefrom_np(&fa, 3);
		posix_spawn_file_actions_addchdir_np(&fa, "/");
		int e = posix_spawn(pid, l->exe, &fa, &at, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
		if (e != 0)
			rc = kft_error_set(err, KFT_EIO, "cannot start the supervisor %s: %s",
			                   l->exe, strerror(e));
		else if (l->n_children < MAX_CHILDREN)
			l->children[l->n_children++] = *pid;
	}
	free(logp);
	return rc;
}

/* Keeps the calling thread off the CPU the new supervisor `child` is queued
 * on until the supervisor is let go or called off (see the top). Nothing
 * changes where the thread may run on one CPU only, or when the CPU cannot
 * be known. */
static void step_aside(kft_local *l, pid_t child)
{
	int cpu = kft_local_proc_cpu(child);
	cpu_set_t others;
	if (l->aside || cpu < 0 || cpu >= CPU_SETSIZE ||
	    sched_getaffinity(0, sizeof(l->aside_cpus), &l->aside_cpus) != 0 ||
	    !CPU_ISSET(cpu, &l->aside_cpus) || CPU_COUNT(&l->aside_cpus) < 2)
		return;
	others = l->aside_cpus;
	CPU_CLR(cpu, &others);
	l->aside_tid = gettid();
	l->aside = sched_setaffinity(0, sizeof(others), &others) == 0;
}

/* Gives the thread that stepped aside its CPUs back once the supervisor
 * `sup` has its go (or has been called off). The go's wake-up queues the
 * supervisor on the waker's CPU, as a pipe's does; if that is where the
 * thread runs, the thread moves to another first, so the supervisor need
 * not wait for it to finish (or exit, for `train`). */
static void step_back(kft_local *l, pid_t sup)
{
	if (!l->aside)
		return;
	int cpu = sup > 0 && gettid() == l->aside_tid ? kft_local_proc_cpu(sup) : -1;
	if (cpu >= 0 && cpu < CPU_SETSIZE && cpu == sched_getcpu()) {
		cpu_set_t others = l->aside_cpus;
		CPU_CLR(cpu, &others);
		if (CPU_COUNT(&others) > 0)
			sched_setaffinity(0, sizeof(others), &others);
	}
	/* from another thread: only while that number is still a thread of ours */
	if (gettid() == l->aside_tid || tgkill(getpid(), l->aside_tid, 0) == 0)
		sched_setaffinity(l->aside_tid, sizeof(l->aside_cpus), &l->aside_cpus);
	l->aside = false;
}

/* Starts `kftrainer supervise`, waiting on a go pipe (see the top) for the
 * job it is to run; the pipe's write end becomes l->pending_go and the pid
 * l->pending. */
static int spawn_supervisor(kft_local *l, kft_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *argv[] = {l->exe,    "supervise",  "--state-dir", l->state_dir,
	                "--go-fd", GO_FD_STRING, NULL};
	int go[2];
	pid_t pid = -1;
	if (pipe2(go, O_CLOEXEC) != 0)
		return kft_error_set(err, KFT_EIO, "cannot start the supervisor: pipe: %s",
		                     strerror(errno));
	posix_spawn_file_actions_init(&fa);
	supervisor_attr(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_adddup2(&fa, go[0], GO_FD);
	posix_spawn_file_actions_addclosefrom_np(&fa, GO_FD + 1);
	posix_spawn_file_actions_addchdir_np(&fa, "/");
	int e = posix_spawn(&pid, l->exe, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(go[0]);
	if (e != 0) {
		close(go[1]);
		return kft_error_set(err, KFT_EIO, "cannot start the supervisor %s: %s", l->exe,
		                     strerror(e));
	}
	if (l->n_children < MAX_CHILDREN)
		l->children[l->n_children++] = pid;
	l->pending = pid;
	l->pending_go = go[1];
	step_aside(l, pid);
	return 0;
}

/* Writes the go message, one write of less than PIPE_BUF bytes, so it
 * arrives whole. A supervisor that died meanwhile must not take its
 * submitter (a CLI, a notebook's process) down with SIGPIPE: the signal is
 * held back for the write, and the one an EPIPE raised is taken. The job,
 * committed already, is then found without its supervisor at the next read
 * (SupervisorLost). */
static void send_go(int fd, const char *msg, size_t len)
{
	sigset_t pipe_sig, old;
	struct timespec now = {0, 0};
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, &old);
	ssize_t n;
	while ((n = write(fd, msg, len)) < 0 && errno == EINTR)
		;
	if (n < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE))
		sigtimedwait(&pipe_sig, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Lets the pending supervisor go for job ns/name (after the commit) or, with
 * ns NULL, calls it off: it then exits at once, and is reaped later. */
static void release_supervisor(kft_local *l, const char *ns, const char *name)
{
	bool go = false;
	if (l->pending_go >= 0) {
		char msg[KFT_LOCAL_GO_MAX];
		int n = ns && name ? snprintf(msg, sizeof(msg), "g%s%c%s%c", ns, 0, name, 0) : 0;
		if ((go = n > 0 && (size_t)n < sizeof(msg)))
			send_go(l->pending_go, msg, (size_t)n);
		close(l->pending_go);
	}
	step_back(l, go ? l->pending : -1);
	l->pending_go = -1;
	l->pending = -1;
}

/* Records the pending supervisor (started now when none is) as the job's;
 * the caller holds the transaction and releases the supervisor after it. */
static int start_supervisor(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	long long ticks = 0;
	int rc = l->pending < 0 ? spawn_supervisor(l, err) : 0;
	if (rc)
		return rc;
	kft_local_proc_ticks(l->pending, &ticks, NULL); /* our unreaped child: it exists */
	rc = kft_store_set_supervisor(l->store, ns, name, (int)l->pending, ticks, err);
	if (rc)
		release_supervisor(l, NULL, NULL);
	return rc;
}

/* ---- submit --------------------------------------------------------------------- */

/* Appends copies of the user's v1 Secrets and ConfigMaps in namespace ns
 * (namespace set when absent) to the built objects: what a cluster would
 * already hold when the TrainJob's pods start. */
static int add_user_objects(json_t *objects, const json_t *user, const char *ns, kft_error *err)
{
	size_t i;
	const json_t *o;
	json_array_foreach(user, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *av = json_string_value(json_object_get(o, "apiVersion"));
		const json_t *meta = json_object_get(o, "metadata");
		const char *ons = json_string_value(json_object_get(meta, "namespace"));
		if (!kind || !av || strcmp(av, "v1") != 0 ||
		    (strcmp(kind, "Secret") != 0 && strcmp(kind, "ConfigMap") != 0) ||
		    !json_is_string(json_object_get(meta, "name")) || (ons && strcmp(ons, ns) != 0))
			continue;
		json_t *copy = json_deep_copy(o);
		if (copy && json_object_set_new(json_object_get(copy, "metadata"), "namespace",
		                                json_string(ns)) != 0) {
			json_decref(copy);
			copy = NULL;
		}
		if (!copy || json_array_append_new(objects, copy) != 0) /* steals copy */
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	return 0;
}

/* <job_dir>/work (made) into *out, malloc'd, when the caller asked for a
 * working directory of the job's own; else *out stays NULL. */
static int own_workdir(const char *state_dir, const kft_submit_opts *opts, const char *job_dir,
                       char **out, kft_error *err)
{
	*out = NULL;
	if (!opts || !opts->job_workdir)
		return 0;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s/work", job_dir);
	*out = kft_strbuf_detach(&b);
	return *out ? kft_local_mkdir_under(state_dir, *out, err)
	            : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- GPUs (gpus.h) ------------------------------------------------------------- */

static bool needs_supervisor(const json_t *tj);
static bool supervisor_alive(kft_local *l, const char *ns, const char *name, kft_error *err,
                             int *rc);

/* The devices every job that has not finished holds, inside the submit's
 * transaction so two submits cannot hand out one GPU twice. A suspended job
 * keeps its GPUs (its resume must find them); a job whose supervisor is gone
 * no longer runs anything and holds none. `who` lists the holders. */
static int gpus_held(kft_local *l, kft_local_gpus *held, char *who, size_t size, kft_error *err)
{
	json_t *jobs = NULL;
	size_t i, used = 0;
	json_t *tj;
	int rc = kft_store_job_list(l->store, NULL, &jobs, err);
	who[0] = '\0';
	json_array_foreach(rc == 0 ? jobs : NULL, i, tj)
	{
		const json_t *meta = json_object_get(tj, "metadata");
		const char *ns = json_string_value(json_object_get(meta, "namespace"));
		const char *name = json_string_value(json_object_get(meta, "name"));
		json_t *objects = NULL;
		size_t n = 0;
		int lost_rc = 0;
		if (!ns || !name || kft_trainjob_is_finished(tj) ||
		    (needs_supervisor(tj) && !supervisor_alive(l, ns, name, NULL, &lost_rc)))
			continue;
		rc = kft_store_job_objects(l->store, ns, name, &objects, err);
		if (rc == 0)
			rc = kft_local_gpus_held_by(kft_local_gpus_find(objects), held, &n, err);
		json_decref(objects);
		if (rc)
			break;
		if (n && used < size) {
			int w = snprintf(who + used, size - used, "%s%s/%s: %zu", used ? ", " : "",
			                 ns, name, n);
			used += w > 0 ? (size_t)w : 0;
		}
	}
	json_decref(jobs);
	return rc;
}

/* Where the GPU request came from, for the refusal. */
static const char *gpus_field(const json_t *tj)
{
	const json_t *t = json_object_get(json_object_get(tj, "spec"), "trainer");
	return json_object_get(t, "resourcesPerNode") ? "spec.trainer.resourcesPerNode"
	                                              : "the runtime's node container resources";
}

/* ---- no GPU at all: CPU (backend.h has_gpus) ------------------------------------ */

static int no_gpus(void *self)
{
	(void)self;
	return 0;
}

/* On a machine with no GPU at all, a job that asks for GPUs (want, in all)
 * runs on CPU rather than being refused: it is built again with a backend
 * whose has_gpus says 0, so every plugin sees CPU nodes, and the job's
 * GPUAllocation carries the words the supervisor says it with (gpus.h).
 * *objects is replaced. */
static int run_on_cpu(const kft_framework *fw, const json_t *tj, const json_t *runtime,
                      kft_local_backend_state *b, int64_t want, const char *source,
                      json_t **objects, kft_error *err)
{
	char msg[512];
	snprintf(msg, sizeof(msg),
	         "this machine has no GPU (%s found none; %s names them): the %lld GPUs the "
	         "job asks for are left out and it runs on CPU, with the settings a CPU needs "
	         "(torchtune: device=cpu dtype=fp32)",
	         source, KFT_LOCAL_GPUS_ENV, (long long)want);
	b->table.has_gpus = no_gpus;
	json_decref(*objects);
	*objects = NULL;
	int rc = kft_framework_build(fw, &b->table, tj, runtime, objects, err);
	json_t *alloc = kft_local_gpus_cpu_allocation(want, msg);
	if (rc == 0 && (!alloc || json_array_append(*objects, alloc) != 0))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(alloc);
	return rc;
}

/* Gives each pod that asks for GPUs its slice (a GPUAllocation appended to
 * *objects), runs the job on CPU where this machine has no GPU at all
 * (run_on_cpu), or refuses it naming the field when fewer are free than
 * asked. Nothing is asked of NVML for a job without GPUs. */
static int place_gpus(kft_local *l, const kft_framework *fw, const json_t *tj,
                      const json_t *runtime, kft_local_backend_state *b, json_t **objects,
                      kft_error *err)
{
	const json_t *js = NULL;
	size_t i;
	const json_t *o;
	json_array_foreach(*objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (!js && kind && strcmp(kind, "JobSet") == 0)
			js = o;
	}
	int64_t want = 0;
	int rc = kft_local_gpus_request(js, &want, err);
	if (rc || want == 0)
		return rc;
	kft_local_gpus all = {0}, held = {0}, avail = {0};
	const char *source = "";
	char who[512];
	json_t *alloc = NULL;
	rc = kft_local_gpus_inventory(&all, &source, err);
	if (rc == 0)
		rc = gpus_held(l, &held, who, sizeof(who), err);
	if (rc == 0)
		rc = kft_local_gpus_minus(&all, &held, &avail, err);
	if (rc == 0 && all.n == 0) {
		kft_local_gpus_free(&all);
		kft_local_gpus_free(&held);
		kft_local_gpus_free(&avail);
		return run_on_cpu(fw, tj, runtime, b, want, source, objects, err);
	}
	if (rc == 0 && (uint64_t)want > avail.n)
		rc = kft_error_set(
		        err, (uint64_t)want <= all.n ? KFT_EUNAVAILABLE : KFT_EINVAL,
		        "%s: %lld GPUs requested, but only %zu of this machine's %zu are "
		        "free (from %s)%s%s",
		        gpus_field(tj), (long long)want, avail.n, all.n, source,
		        who[0] ? "; held by jobs that have not finished: " : "", who);
	if (rc == 0)
		rc = kft_local_gpus_place(js, &avail, &alloc, err);
	if (rc == 0 && json_array_append_new(*objects, alloc) != 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_local_gpus_free(&all);
	kft_local_gpus_free(&held);
	kft_local_gpus_free(&avail);
	return rc;
}

/* ---- what a process cannot take ------------------------------------------------ */

/* Finds a string holding a NUL in v, writing its path (from len on) into
 * path. Annotations are passed over: they are data the store keeps as given
 * and no process receives them. */
static bool nul_find(const json_t *v, char *path, size_t len, size_t cap)
{
	const char *key;
	const json_t *c;
	size_t i;
	if (json_is_string(v))
		return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
	if (json_is_array(v)) {
		json_array_foreach(v, i, c)
		{
			int n = snprintf(path + len, cap - len, "[%zu]", i);
			if (nul_find(c, path, n > 0 && (size_t)n < cap - len ? len + n : len, cap))
				return true;
		}
	}
	json_object_foreach((json_t *)v, key, c)
	{
		if (strcmp(key, "annotations") == 0)
			continue;
		int n = snprintf(path + len, cap - len, ".%s", key);
		if (nul_find(c, path, n > 0 && (size_t)n < cap - len ? len + n : len, cap))
			return true;
	}
	path[len] = '\0';
	return false;
}

/* A process takes its argv, environment, working directory and paths as C
 * strings, which cannot hold a NUL; the API server stores one in any string.
 * So the local engine refuses such a job at submission, naming the field,
 * instead of running a cut-off argument (annotations and labels are stored
 * faithfully). what/v: "spec" of the TrainJob, or a built JobSet whose
 * strings came from the runtime. */
static int refuse_nul(const char *what, const json_t *v, const char *name, kft_error *err)
{
	char path[512];
	int n = snprintf(path, sizeof(path), "%s", what);
	if (!nul_find(v, path, (size_t)n, sizeof(path)))
		return 0;
	return kft_error_set(err, KFT_EINVAL,
	                     "TrainJob.trainer.kubeflow.org \"%s\" is invalid: %s: Invalid value: "
	                     "a NUL character (\\u0000) cannot be passed to a process: the local "
	                     "engine runs each container as one",
	                     name, path);
}

/* The JobSets among the built objects, checked as refuse_nul says. */
static int refuse_nul_objects(const json_t *objects, const char *name, kft_error *err)
{
	size_t i;
	const json_t *o;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		char what[128];
		if (!kind || strcmp(kind, "JobSet") != 0)
			continue;
		snprintf(what, sizeof(what), "the runtime's JobSet: spec");
		int rc = refuse_nul(what, json_object_get(o, "spec"), name, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The config `tune run` names in the built JobSet's trainer (the Torch
 * plugin's choice), or NULL. Borrowed from objects. */
static const char *torchtune_config(const json_t *objects)
{
	const json_t *o, *rj, *c, *w;
	size_t i, j, k, m;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (!kind || strcmp(kind, "JobSet") != 0)
			continue;
		json_array_foreach(json_object_get(json_object_get(o, "spec"), "replicatedJobs"), j,
		                   rj)
		{
			const json_t *pod = json_object_get(
			        json_object_get(json_object_get(rj, "template"), "spec"),
			        "template");
			json_array_foreach(
			        json_object_get(json_object_get(pod, "spec"), "containers"), k, c)
			{
				const json_t *cmd = json_object_get(c, "command");
				const char *a0 = json_string_value(json_array_get(cmd, 0));
				if (!a0 || strcmp(a0, "tune") != 0)
					continue;
				json_array_foreach(cmd, m, w)
				{
					const char *s = json_string_value(w);
					if (s && strcmp(s, "--config") == 0)
						return json_string_value(
						        json_array_get(cmd, m + 1));
				}
			}
		}
	}
	return NULL;
}

/* A torchtune job (`tune run`) runs only with the tested torchtune set and a
 * config that set ships (torchtune_env.h): checked before anything starts. */
static int check_torchtune(const json_t *tj, const json_t *objects, const kft_submit_opts *opts,
                           kft_error *err)
{
	const json_t *trainer = json_object_get(json_object_get(tj, "spec"), "trainer");
	if (!kft_torchtune_is_entrypoint(json_object_get(trainer, "command")))
		return 0;
	return kft_torchtune_env_check(opts ? opts->base_env : NULL, torchtune_config(objects),
	                               err);
}

static int record_job(kft_local *l, const kft_framework *fw, json_t *tj, const json_t *runtime,
                      const kft_submit_opts *opts, bool *made_dir, kft_error *err)
{
	const char *ns =
	        json_string_value(json_object_get(json_object_get(tj, "metadata"), "namespace"));
	const char *name =
	        json_string_value(json_object_get(json_object_get(tj, "metadata"), "name"));
	char *uid = NULL, cwd[PATH_MAX];
	json_t *objects = NULL, *env = NULL;
	kft_local_backend_state b;
	int rc = kft_store_job_create(l->store, tj, NULL, &uid, err);
	if (rc)
		return rc;
	char *dir = kft_local_job_dir(l, ns, name);
	if (!dir) {
		free(uid);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	kft_local_backend_init(&b, uid, NULL);
	b.job_dir = dir;
	/* The plugins run before anything exists on disk: one that fails, or
	 * takes the process down, leaves no directory behind (the store's
	 * transaction is not committed either). */
	rc = kft_framework_build(fw, &b.table, tj, runtime, &objects, err);
	if (rc == 0)
		rc = refuse_nul_objects(objects, name, err);
	if (rc == 0)
		rc = check_torchtune(tj, objects, opts, err);
	/* the job is new (the store said so under its lock): its directory is ours */
	*made_dir = rc == 0;
	if (rc == 0)
		rc = kft_local_mkdir_under(l->state_dir, dir, err);
	char *own_wd = NULL;
	if (rc == 0)
		rc = own_workdir(l->state_dir, opts, dir, &own_wd, err);
	if (rc == 0)
		rc = place_gpus(l, fw, tj, runtime, &b, &objects, err);
	free(dir);
	if (rc == 0 && opts && opts->objects)
		rc = add_user_objects(objects, opts->objects, ns, err);
	if (rc == 0)
		rc = kft_store_job_set_objects(l->store, ns, name, objects, err);
	if (rc == 0 && opts && json_array_size(opts->plugins))
		rc = kft_store_job_set_plugins(l->store, ns, name, opts->plugins, err);
	const char *wd = own_wd                  ? own_wd
	                 : opts && opts->workdir ? opts->workdir
	                                         : getcwd(cwd, sizeof(cwd));
	env = base_env_json(opts ? opts->base_env : NULL);
	if (rc == 0)
		rc = env ? kft_store_job_set_exec(l->store, ns, name, wd, env, err)
		         : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(env);
	json_decref(objects);
	free(own_wd);
	free(uid);
	if (rc == 0 && json_is_true(json_object_get(json_object_get(tj, "spec"), "suspend"))) {
		char now[32];
		kft_rfc3339_now(now);
		rc = kft_trainjob_set_suspended(tj, now, err);
		if (rc == 0)
			rc = kft_store_job_set_status(l->store, ns, name,
			                              json_object_get(tj, "status"), err);
	} else if (rc == 0)
		rc = start_supervisor(l, ns, name, err);
	return rc;
}

static void remove_job_dir(kft_local *l, const json_t *meta)
{
	char *dir = kft_local_job_dir(l, json_string_value(json_object_get(meta, "namespace")),
	                              json_string_value(json_object_get(meta, "name")));
	if (dir)
		kft_local_rmtree(dir, NULL);
	free(dir);
}

int kft_local_submit(kft_local *l, const kft_framework *fw, const json_t *trainjob,
                     const json_t *runtime, const kft_submit_opts *opts, char **name_out,
                     kft_error *err)
{
	if (name_out)
		*name_out = NULL;
	json_t *tj = json_deep_copy(trainjob);
	if (!tj)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = ensure_name(tj, err);
	json_t *meta = json_object_get(tj, "metadata");
	if (rc == 0)
		rc = refuse_nul("spec", json_object_get(tj, "spec"),
		                json_string_value(json_object_get(meta, "name")), err);
	const char *given_ns = json_string_value(json_object_get(meta, "namespace"));
	if (rc == 0 && (!given_ns || !*given_ns))
		json_object_set_new(meta, "namespace", json_string(ns_of(NULL)));
	/* The supervisor first (see the top) unless one is waiting already; a
	 * suspended job gets none. */
	bool suspended = json_is_true(json_object_get(json_object_get(tj, "spec"), "suspend"));
	if (rc == 0 && !suspended && l->pending < 0)
		rc = spawn_supervisor(l, err);
	if (rc == 0)
		rc = kft_store_begin(l->store, err);
	if (rc == 0) {
		bool made_dir = false;
		rc = record_job(l, fw, tj, runtime, opts, &made_dir, err);
		if (rc == 0)
			rc = kft_store_commit(l->store, err);
		else
			kft_store_rollback(l->store);
		if (rc && made_dir)
			remove_job_dir(l, meta);
	}
	const char *name = json_string_value(json_object_get(meta, "name"));
	bool go = rc == 0 && !suspended;
	release_supervisor(l, go ? json_string_value(json_object_get(meta, "namespace")) : NULL,
	                   name);
	if (rc == 0 && name_out && !(*name_out = strdup(name)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(tj);
	return rc;
}

/* Kills what a job left: its recorded pod groups, then anything still
 * carrying its status file in the environment. */
static void kill_leftovers(kft_local *l, const char *ns, const char *name)
{
	char *sp = kft_local_status_path(l->state_dir, ns, name);
	kft_local_kill_pods(l->store, ns, name, NULL);
	if (sp)
		kft_local_kill_by_env(sp);
	free(sp);
}

/* ---- liveness ------------------------------------------------------------------- */

/* A job being deleted is its deleter's to clean up: its supervisor is
 * stopped on purpose, so it is never "lost". */
static bool being_deleted(const json_t *tj)
{
	return json_object_get(json_object_get(tj, "metadata"), "deletionTimestamp") != NULL;
}

static bool needs_supervisor(const json_t *tj)
{
	return !kft_trainjob_is_finished(tj) && !being_deleted(tj) &&
	       !json_is_true(json_object_get(json_object_get(tj, "spec"), "suspend"));
}

static bool supervisor_alive(kft_local *l, const char *ns, const char *name, kft_error *err,
                             int *rc)
{
	int pid = 0;
	long long ticks = 0;
	reap_children(l);
	*rc = kft_store_get_supervisor(l->store, ns, name, &pid, &ticks, err);
	return *rc == 0 && pid > 0 && kft_local_proc_is(pid, ticks);
}

/* Why the supervisor died, when it said so last: the report of a plugin
 * that crashed it (framework/guard.h), the last line of its log, into
 * why (size n, "" when there is none). Once a supervisor has crashed the
 * job is finished, so such a line is always the latest supervisor's. */
static void last_words(kft_local *l, const char *ns, const char *name, char *why, size_t n)
{
	char *dir = kft_local_job_dir(l, ns, name), *path = NULL, tail[1024];
	why[0] = '\0';
	FILE *f = dir && asprintf(&path, "%s/%s", dir, KFT_LOCAL_SUPERVISOR_LOG) >= 0
	                  ? fopen(path, "r")
	                  : NULL;
	free(dir);
	free(path);
	if (!f)
		return;
	size_t got = 0;
	if (fseek(f, -(long)(sizeof(tail) - 1), SEEK_END) != 0)
		rewind(f);
	got = fread(tail, 1, sizeof(tail) - 1, f);
	fclose(f);
	while (got && tail[got - 1] == '\n')
		got--;
	tail[got] = '\0';
	char *line = strrchr(tail, '\n');
	line = line ? line + 1 : tail;
	const char *report = strstr(line, ": plugin ");
	if (report && strstr(report, " crashed ("))
		snprintf(why, n, ": %s", report + 2);
}

/* The pods a lost supervisor ran were just killed with it: their Running
 * and Pending records become Failed (exit 137, SIGKILL, reason
 * SupervisorLost), as a kubelet reports containers killed under a pod, so
 * no pod says Running beside a failed job. */
static int settle_pods(kft_local *l, const char *ns, const char *name, const char *now,
                       kft_error *err)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	int rc = kft_store_pods(l->store, ns, name, &recs, &n, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		kft_pod_record r = recs[i];
		if (strcmp(r.state, "Running") != 0 && strcmp(r.state, "Pending") != 0)
			continue;
		r.state = "Failed";
		r.exit_code = strcmp(recs[i].state, "Running") == 0 ? 128 + SIGKILL : 0;
		r.signal = r.exit_code ? SIGKILL : 0;
		r.finished = (char *)now;
		r.reason = KFT_LOCAL_REASON_SUPERVISOR_LOST;
		r.message = "stopped: the job's supervisor is gone";
		rc = kft_store_pod_upsert(l->store, ns, name, &r, err);
	}
	kft_pod_records_free(recs, n);
	return rc;
}

/* The same for the status the supervisor last wrote: Jobs it counted
 * active or ready have failed with their pods. */
static void settle_jobs_status(json_t *status)
{
	size_t i;
	json_t *js;
	json_array_foreach(json_object_get(status, "jobsStatus"), i, js)
	{
		json_int_t lost = json_integer_value(json_object_get(js, "active"));
		if (!json_is_integer(json_object_get(js, "failed")))
			continue;
		json_object_set_new(
		        js, "failed",
		        json_integer(json_integer_value(json_object_get(js, "failed")) + lost));
		json_object_set_new(js, "active", json_integer(0));
		json_object_set_new(js, "ready", json_integer(0));
	}
}

/* Inside the caller's transaction: the job re-read, still orphaned. */
static int mark_lost(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	json_t *tj = NULL;
	int pid = 0, rc;
	long long ticks;
	char now[32], msg[1536], why[1100];
	rc = kft_store_job_get(l->store, ns, name, &tj, err);
	if (rc == 0 && needs_supervisor(tj) && !supervisor_alive(l, ns, name, err, &rc) &&
	    rc == 0) {
		kft_store_get_supervisor(l->store, ns, name, &pid, &ticks, NULL);
		kill_leftovers(l, ns, name);
		kft_rfc3339_now(now);
		last_words(l, ns, name, why, sizeof(why));
		snprintf(msg, sizeof(msg),
		         "the job's supervisor (pid %d) is gone%s; its processes were stopped", pid,
		         why);
		rc = kft_trainjob_set_failed(tj, msg, KFT_LOCAL_REASON_SUPERVISOR_LOST, now, err);
		settle_jobs_status(json_object_get(tj, "status"));
		if (rc == 0)
			rc = settle_pods(l, ns, name, now, err);
		if (rc == 0)
			rc = kft_store_job_set_status(l->store, ns, name,
			                              json_object_get(tj, "status"), err);
		if (rc == 0)
			rc = kft_store_job_mark(l->store, ns, name, KFT_JOB_FINISHED, err);
	}
	json_decref(tj);
	return rc;
}

static int check_live(kft_local *l, const char *ns, const char *name, json_t **tj, kft_error *err)
{
	int rc = 0;
	if (!needs_supervisor(*tj) || supervisor_alive(l, ns, name, err, &rc) || rc)
		return rc;
	rc = kft_store_begin(l->store, err);
	if (rc)
		return rc;
	rc = mark_lost(l, ns, name, err);
	if (rc == 0)
		rc = kft_store_commit(l->store, err);
	else
		kft_store_rollback(l->store);
	if (rc == 0) {
		json_decref(*tj);
		*tj = NULL;
		rc = kft_store_job_get(l->store, ns, name, tj, err);
	}
	return rc;
}

int kft_local_get(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err)
{
	*out = NULL;
	ns = ns_of(ns);
	int rc = kft_store_job_get(l->store, ns, name, out, err);
	if (rc == 0)
		rc = check_live(l, ns, name, out, err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int kft_local_list_live(kft_local *l, int rc, json_t **out, kft_local_live_fn check, kft_error *err)
{
	size_t i;
	json_t *obj;
	json_array_foreach(rc == 0 ? *out : NULL, i, obj)
	{
		const json_t *meta = json_object_get(obj, "metadata");
		json_t *cur = json_incref(obj);
		rc = check(l, json_string_value(json_object_get(meta, "namespace")),
		           json_string_value(json_object_get(meta, "name")), &cur, err);
		if (rc == KFT_ENOTFOUND) /* deleted meanwhile: list what is there */
			rc = 0;
		else if (rc == 0 && cur != obj)
			json_array_set(*out, i, cur);
		json_decref(cur);
		if (rc)
			break;
	}
	if (rc && *out) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int kft_local_list(kft_local *l, const char *ns, json_t **out, kft_error *err)
{
	if (ns) /* NULL stays "every namespace" */
		ns = ns_of(ns);
	return kft_local_list_live(l, kft_store_job_list(l->store, ns, out, err), out, check_live,
	                           err);
}

/* ---- stopping a supervisor ---------------------------------------------------------- */

static void stop_supervisor(kft_local *l, const char *ns, const char *name, int pid,
                            long long ticks)
{
	if (pid > 0 && kft_local_proc_is(pid, ticks)) {
		kill(pid, SIGTERM);
		reap_children(l);
		if (!kft_local_wait_gone(pid, ticks, SUPERVISOR_STOP_MS) &&
		    kft_local_proc_is(pid, ticks))
			kill(pid, SIGKILL);
		kft_local_wait_gone(pid, ticks, 1000);
		reap_children(l);
	}
	kill_leftovers(l, ns, name);
}

static int refuse_finished(const json_t *tj, const char *name, kft_error *err)
{
	if (being_deleted(tj))
		return kft_error_set(err, KFT_EINVAL, "TrainJob %s is being deleted", name);
	return kft_trainjob_is_finished(tj)
	               ? kft_error_set(err, KFT_EINVAL, "TrainJob %s has already finished", name)
	               : 0;
}

static int suspend_job(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	int pid = 0, rc;
	long long ticks = 0;
	char now[32];
	json_t *tj = NULL;
	rc = kft_store_get_supervisor(l->store, ns, name, &pid, &ticks, err);
	if (rc)
		return rc;
	stop_supervisor(l, ns, name, pid, ticks);
	/* The supervisor wrote Suspended when it stopped in time; when it did
	 * not (killed, already gone) the condition is written here. */
	rc = kft_store_begin(l->store, err);
	if (rc == 0)
		rc = kft_store_job_get(l->store, ns, name, &tj, err);
	/* A delete that began meanwhile owns the job now: the suspend took
	 * effect before it, and nothing more is written. */
	if (rc == 0 && !kft_trainjob_is_finished(tj) && !being_deleted(tj)) {
		kft_rfc3339_now(now);
		rc = kft_trainjob_set_suspended(tj, now, err);
		if (rc == 0)
			rc = kft_store_job_set_status(l->store, ns, name,
			                              json_object_get(tj, "status"), err);
	}
	if (rc == 0)
		rc = kft_store_set_supervisor(l->store, ns, name, 0, 0, err);
	json_decref(tj);
	if (rc == 0)
		return kft_store_commit(l->store, err);
	kft_store_rollback(l->store);
	return rc;
}

int kft_local_load_job_plugins(kft_store *s, const char *ns, const char *name, kft_framework *fw,
                               kft_error *err)
{
	json_t *paths = NULL;
	int rc = kft_store_job_get_plugins(s, ns, name, &paths, err);
	size_t i;
	json_t *p;
	json_array_foreach(rc == 0 ? paths : NULL, i, p)
	{
		const char *path = json_string_value(p);
		if (!path) {
			rc = kft_error_set(err, KFT_EPARSE,
			                   "stored plugin list holds a non-string");
		} else if ((rc = kft_framework_load_plugin(fw, path, err)) != 0) {
			char why[KFT_ERROR_MESSAGE_MAX];
			snprintf(why, sizeof(why), "%s", err ? err->message : "");
			rc = kft_error_set(
			        err, KFT_EINVAL,
			        "plugin %s, loaded when the job was submitted, cannot be "
			        "loaded now: %s",
			        path, why);
		}
		if (rc)
			break;
	}
	json_decref(paths);
	return rc;
}

/* The plugins a job's supervisor will load must load: a resume that would
 * start a supervisor only to fail refuses instead, the job left as it was. */
static int check_job_plugins(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	kft_framework *fw = NULL;
	int rc = kft_framework_new(KFT_LOCAL_FEATURES, &fw, err);
	if (rc == 0)
		rc = kft_local_load_job_plugins(l->store, ns, name, fw, err);
	kft_framework_free(fw);
	return rc;
}

/* The job's pods were told where its status endpoint is when it was built;
 * a port another process took meanwhile is said now, not found out by the
 * training code's first report. */
static int status_port_free(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	json_t *objects = NULL;
	int rc = kft_store_job_objects(l->store, ns, name, &objects, err);
	if (rc == 0)
		rc = kft_statusserver_check_port(kft_json_find(objects, "kind", "JobSet"), err);
	json_decref(objects);
	return rc;
}

static int resume_job(kft_local *l, const char *ns, const char *name, json_t *tj, kft_error *err)
{
	int rc = check_job_plugins(l, ns, name, err);
	if (rc == 0)
		rc = status_port_free(l, ns, name, err);
	if (rc)
		return rc;
	char now[32];
	kft_rfc3339_now(now);
	json_object_set_new(json_object_get(tj, "spec"), "suspend", json_false());
	rc = kft_trainjob_set_suspended(tj, now, err);
	if (rc == 0)
		rc = kft_store_job_set_suspend(l->store, ns, name, false, err);
	if (rc == 0)
		rc = kft_store_job_set_status(l->store, ns, name, json_object_get(tj, "status"),
		                              err);
	if (rc == 0)
		rc = kft_store_pods_clear(l->store, ns, name, err);
	return rc ? rc : start_supervisor(l, ns, name, err);
}

int kft_local_set_suspend(kft_local *l, const char *ns, const char *name, bool suspend,
                          kft_error *err)
{
	json_t *tj = NULL;
	kft_job_info info = {0};
	ns = ns_of(ns);
	int rc = kft_store_begin(l->store, err);
	if (rc)
		return rc;
	rc = kft_store_job_get(l->store, ns, name, &tj, err);
	if (rc == 0)
		rc = kft_store_job_info(l->store, ns, name, &info, err);
	if (rc == 0)
		rc = refuse_finished(tj, name, err);
	bool change = rc == 0 && info.suspended != suspend;
	if (change && suspend)
		rc = kft_store_job_set_suspend(l->store, ns, name, true, err);
	else if (change)
		rc = resume_job(l, ns, name, tj, err);
	kft_job_info_free(&info);
	json_decref(tj);
	if (rc) {
		kft_store_rollback(l->store);
		release_supervisor(l, NULL, NULL);
		return rc;
	}
	rc = kft_store_commit(l->store, err);
	release_supervisor(l, rc == 0 ? ns : NULL, name); /* a resume's */
	return rc == 0 && change && suspend ? suspend_job(l, ns, name, err) : rc;
}

/* ---- delete ----------------------------------------------------------------------- */

/* Marks the job as being deleted (its deletionTimestamp; unless mark is
 * false) and reads its supervisor and uid, in one transaction: from then on
 * the supervisor, the liveness check and suspend/resume know that the stop
 * which follows is a deletion. *uid is malloc'd. */
static int begin_delete(kft_local *l, const char *ns, const char *name, bool mark, int *pid,
                        long long *ticks, char **uid, kft_error *err)
{
	kft_job_info info = {0};
	int rc = kft_store_begin(l->store, err);
	if (rc)
		return rc;
	rc = mark ? kft_store_job_mark_deleting(l->store, ns, name, err) : 0;
	if (rc == 0)
		rc = kft_store_get_supervisor(l->store, ns, name, pid, ticks, err);
	if (rc == 0)
		rc = kft_store_job_info(l->store, ns, name, &info, err);
	*uid = info.uid;
	info.uid = NULL;
	kft_job_info_free(&info);
	if (rc == 0)
		return kft_store_commit(l->store, err);
	kft_store_rollback(l->store);
	free(*uid);
	*uid = NULL;
	return rc;
}

/* Whether ns/name is still the job this delete marked: after another
 * delete removed it, a new job of the same name may have been submitted,
 * whose directory and rows are not ours to remove. */
static int still_ours(kft_local *l, const char *ns, const char *name, const char *uid,
                      kft_error *err)
{
	kft_job_info info = {0};
	int rc = kft_store_job_info(l->store, ns, name, &info, err);
	if (rc == 0 && (!info.uid || strcmp(info.uid, uid) != 0))
		rc = kft_error_set(err, KFT_ENOTFOUND,
		                   "trainjobs.trainer.kubeflow.org \"%s\" not found", name);
	kft_job_info_free(&info);
	return rc;
}

static int remove_rows(kft_local *l, const char *ns, const char *name, const char *uid,
                       kft_error *err)
{
	int rc = kft_store_begin(l->store, err);
	if (rc)
		return rc;
	rc = still_ours(l, ns, name, uid, err);
	if (rc == 0)
		rc = kft_store_job_delete(l->store, ns, name, err);
	if (rc == 0)
		return kft_store_commit(l->store, err);
	kft_store_rollback(l->store);
	return rc;
}

/* Stops everything and frees the disk before removing the rows: on a full
 * disk the store cannot take the deletion until the job's logs are gone.
 * Every step may run twice (two deletes at once, or a delete run again
 * after one was interrupted): the one that removes the rows wins and the
 * other sees NotFound. */
int kft_local_delete(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	int pid = 0;
	long long ticks = 0;
	char *uid = NULL, *dir = NULL;
	ns = ns_of(ns);
	int rc = begin_delete(l, ns, name, true, &pid, &ticks, &uid, err);
	if (rc == KFT_EIO) {
		/* The store cannot be written (a full disk): delete anyway, unmarked,
		 * since only removing the job frees the space for the next write. */
		kft_error_clear(err);
		rc = begin_delete(l, ns, name, false, &pid, &ticks, &uid, err);
	}
	if (rc == 0)
		rc = kft_store_pods(l->store, ns, name, &recs, &n, err);
	if (rc) {
		free(uid);
		return rc;
	}
	stop_supervisor(l, ns, name, pid, ticks);
	for (size_t i = 0; i < n; i++)
		if (recs[i].pid > 0)
			kft_local_kill_group(recs[i].pid, recs[i].start_ticks);
	kft_pod_records_free(recs, n);
	rc = uid ? still_ours(l, ns, name, uid, err)
	         : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0 && !(dir = kft_local_job_dir(l, ns, name)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_local_rmtree(dir, err);
	if (rc == 0)
		rc = remove_rows(l, ns, name, uid, err);
	free(dir);
	free(uid);
	return rc;
}

/* ---- stopping a job for good ------------------------------------------------------ */

int kft_local_stop(kft_local *l, const char *ns, const char *name, const char *reason,
                   const char *message, kft_error *err)
{
	json_t *tj = NULL;
	char now[32];
	ns = ns_of(ns);
	/* Stopped as suspend stops a job (its supervisor told, its pods
	 * stopped and marked), then ended for good. */
	int rc = kft_local_set_suspend(l, ns, name, true, err);
	if (rc == KFT_EINVAL) {
		kft_error_clear(err);
		return 0; /* finished meanwhile, or being deleted: its outcome stands */
	}
	if (rc == 0)
		rc = kft_store_begin(l->store, err);
	if (rc)
		return rc;
	rc = kft_store_job_get(l->store, ns, name, &tj, err);
	if (rc == 0 && !kft_trainjob_is_finished(tj) && !being_deleted(tj)) {
		kft_rfc3339_now(now);
		rc = kft_trainjob_set_failed(tj, message, reason, now, err);
		if (rc == 0)
			rc = kft_store_job_set_status(l->store, ns, name,
			                              json_object_get(tj, "status"), err);
		if (rc == 0)
			rc = kft_store_job_mark(l->store, ns, name, KFT_JOB_FINISHED, err);
	}
	json_decref(tj);
	if (rc == 0)
		return kft_store_commit(l->store, err);
	kft_store_rollback(l->store);
	return rc;
}
