/*
 * optsuper.c - the supervisor of one OptimizationJob (see optimizer.h).
 *
 * One loop, a tick every 200 ms or as soon as a running trial's own
 * supervisor exits (a pidfd per trial in the poll):
 *  - each running trial: new lines of its primary node's log (node-0)
 *    through Katib's StdOut filter, and new reports its training sent to
 *    the status endpoint, are folded into its status entry (src/hpo); the
 *    median rule may condemn it (it is stopped: EarlyStopped); once its
 *    TrainJob has ended, what is left is read and the trial ends with it;
 *  - each pending trial (waiting for GPUs) is tried again, once a second;
 *  - the plan (src/hpo/plan.c) says how many trials to start, or that the
 *    search is over: then what still runs is stopped and the condition set;
 *  - the status, the read cursors, new Events and metric observations are
 *    written in one transaction, so a supervisor that dies between two
 *    ticks leaves nothing counted twice or lost.
 * Trial names are deterministic and checked before each submit, so a
 * TrainJob submitted just before a crash is adopted, never made twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpo/hpo.h"
#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "local/local_internal.h"
#include "local/optimizer.h"
#include "local/optstore.h"
#include "util/clock.h"
#include "util/rfc3339.h"
#include "util/strbuf.h"

#define TICK_MS          200
#define PENDING_RETRY_MS 1000
#define READ_CHUNK       (256 * 1024)
#define READ_CHUNKS      4
#define MAX_WRITE_FAILS  50
#define KIND             KFT_KIND_OPTIMIZATIONJOB

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

typedef struct watch {
	char trial[64];
	int fd;
	int pid;
} watch;

typedef struct run {
	kft_local *l;
	kft_store *s;
	const char *ns, *name;
	json_t *opt, *status, *cursors;
	json_t *events, *observations; /* written with the next status */
	kft_opt_exec exec;
	kft_hpo_spec spec;
	kft_framework *fw;
	char **env; /* exec.base_env as argv-style strings, or NULL */
	bool dirty;
	int write_fails;
	int64_t next_pending_ms;
	watch watches[KFT_HPO_MAX_PARAMS];
	size_t n_watches;
} run;

/* ---- events and writing -------------------------------------------------------- */

static void event(run *r, const char *type, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void event(run *r, const char *type, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(r->events,
	                      kft_local_event_new(r->ns, type, reason, KIND, r->name, msg));
	fprintf(stderr, "%s: %s\n", reason, msg);
}

static int write_all(run *r, bool finished, kft_error *err)
{
	size_t i;
	const json_t *x;
	int rc = kft_store_begin(r->s, err);
	if (rc == 0)
		rc = kft_optstore_set_status(r->s, r->ns, r->name, r->status, r->cursors, finished,
		                             err);
	json_array_foreach(rc == 0 ? r->events : NULL, i, x)
	{
		if ((rc = kft_optstore_event_add(r->s, r->ns, r->name, x, err)) != 0)
			break;
	}
	json_array_foreach(rc == 0 ? r->observations : NULL, i, x)
	{
		rc = kft_optstore_observe(r->s, r->ns, r->name,
		                          json_string_value(json_object_get(x, "trial")),
		                          json_string_value(json_object_get(x, "metric")),
		                          json_string_value(json_object_get(x, "value")), err);
		if (rc)
			break;
	}
	if (rc == 0)
		rc = kft_store_commit(r->s, err);
	else
		kft_store_rollback(r->s);
	if (rc == 0) {
		json_array_clear(r->events);
		json_array_clear(r->observations);
		r->dirty = false;
	}
	return rc;
}

/* ---- watching trials' supervisors -------------------------------------------------- */

static int pidfd_open_(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Watches the trial's supervisor, so its exit wakes the loop at once. */
static void watch_trial(run *r, const char *trial)
{
	int pid = 0;
	long long ticks = 0;
	if (r->n_watches >= sizeof(r->watches) / sizeof(r->watches[0]) ||
	    kft_store_get_supervisor(r->s, r->ns, trial, &pid, &ticks, NULL) != 0 || pid <= 0 ||
	    !kft_local_proc_is(pid, ticks))
		return;
	int fd = pidfd_open_(pid);
	if (fd < 0)
		return;
	watch *w = &r->watches[r->n_watches++];
	snprintf(w->trial, sizeof(w->trial), "%s", trial);
	w->fd = fd;
	w->pid = pid;
}

static void unwatch_trial(run *r, const char *trial)
{
	for (size_t i = 0; i < r->n_watches; i++) {
		if (strcmp(r->watches[i].trial, trial) != 0)
			continue;
		close(r->watches[i].fd);
		waitpid(r->watches[i].pid, NULL, WNOHANG); /* ours when we submitted it */
		r->watches[i] = r->watches[--r->n_watches];
		return;
	}
}

static void wait_tick(run *r)
{
	struct pollfd fds[sizeof(r->watches) / sizeof(r->watches[0])];
	for (size_t i = 0; i < r->n_watches; i++)
		fds[i] = (struct pollfd){.fd = r->watches[i].fd, .events = POLLIN};
	poll(fds, r->n_watches, TICK_MS);
}

/* ---- reading a trial's metrics -------------------------------------------------------- */

typedef struct fold_ctx {
	run *r;
	json_t *trial;
	bool stop;
} fold_ctx;

/* One reported value: folded into the trial, kept for the charts. */
static void take(fold_ctx *c, const char *metric, const char *value)
{
	if (strlen(value) > KFT_HPO_VALUE_MAX)
		return; /* no number is written that long; the status would refuse it */
	int v = kft_hpo_observe(&c->r->spec, c->trial, metric, value);
	if (v < 0)
		return;
	c->stop = c->stop || v == 1;
	json_array_append_new(c->r->observations, json_pack("{s:O, s:s, s:s}", "trial",
	                                                    json_object_get(c->trial, "name"),
	                                                    "metric", metric, "value", value));
	c->r->dirty = true;
}

static void take_match(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen)
{
	fold_ctx *c = ctx;
	char n[KFT_HPO_VALUE_MAX + 1], v[KFT_HPO_VALUE_MAX + 1];
	if (!kft_hpo_is_metric(&c->r->spec, name, nlen) || vlen > KFT_HPO_VALUE_MAX)
		return;
	snprintf(n, sizeof(n), "%.*s", (int)nlen, name);
	snprintf(v, sizeof(v), "%.*s", (int)vlen, value);
	take(c, n, v);
}

/* The node-0 pod's log path, or NULL (malloc'd). */
static char *primary_log(run *r, const char *trial)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	char *path = NULL;
	if (kft_store_pods(r->s, r->ns, trial, &recs, &n, NULL) != 0)
		return NULL;
	for (size_t i = 0; i < n && !path; i++)
		if (recs[i].step && strcmp(recs[i].step, KFT_CONTAINER_NODE) == 0 &&
		    recs[i].index == 0 && recs[i].log_path)
			path = strdup(recs[i].log_path);
	kft_pod_records_free(recs, n);
	return path;
}

/* One line of output through the filter; the engine's own attempt marks
 * are not the trial's output. */
static void one_line(fold_ctx *c, const char *line, size_t len)
{
	size_t mark = strlen(KFT_LOCAL_ATTEMPT_MARK);
	if (len < mark || memcmp(line, KFT_LOCAL_ATTEMPT_MARK, mark) != 0)
		kft_hpo_stdout_line(line, len, take_match, c);
}

/* The lines of buf[0..got); returns the bytes consumed: through the last
 * newline, or everything when `all`. */
static size_t scan_lines(fold_ctx *c, const char *buf, size_t got, bool all)
{
	size_t used = 0;
	for (size_t i = 0; i < got; i++)
		if (buf[i] == '\n') {
			one_line(c, buf + used, i - used);
			used = i + 1;
		}
	if (all && used < got) {
		one_line(c, buf + used, got - used);
		used = got;
	}
	return used;
}

/* New whole lines of the primary node's output, from the cursor on, at
 * most READ_CHUNKS chunks a tick; `final` (the job has ended) reads to the
 * end, a last line without its newline included. */
static void read_output(run *r, fold_ctx *c, json_t *cursor, bool final)
{
	const char *trial = json_string_value(json_object_get(c->trial, "name"));
	char *path = primary_log(r, trial);
	json_int_t off = json_integer_value(json_object_get(cursor, "log")), start = off;
	int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	char *buf = fd >= 0 ? malloc(READ_CHUNK) : NULL;
	for (int n = 0; buf && (final || n < READ_CHUNKS); n++) {
		ssize_t got = pread(fd, buf, READ_CHUNK, (off_t)off);
		if (got <= 0)
			break;
		bool full = got == READ_CHUNK;
		/* a line longer than a chunk is read as it is */
		size_t used = scan_lines(c, buf, (size_t)got, final && !full);
		if (used == 0 && full)
			used = scan_lines(c, buf, (size_t)got, true);
		off += (json_int_t)used;
		if (!full || used == 0)
			break;
	}
	if (off != start) {
		json_object_set_new(cursor, "log", json_integer(off));
		r->dirty = true;
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	free(path);
}

/* New reports the trial's training sent (status.trainerStatus history). */
static void read_reports(run *r, fold_ctx *c, json_t *cursor)
{
	const char *trial = json_string_value(json_object_get(c->trial, "name"));
	json_t *reports = NULL;
	json_int_t after = json_integer_value(json_object_get(cursor, "report"));
	size_t i, k;
	const json_t *rep, *m;
	if (kft_store_reports(r->s, r->ns, trial, after, &reports, NULL) != 0)
		return;
	json_array_foreach(reports, i, rep)
	{
		const json_t *ms =
		        json_object_get(json_object_get(rep, "trainerStatus"), "metrics");
		json_array_foreach(ms, k, m)
		{
			const char *name = json_string_value(json_object_get(m, "name"));
			const char *value = json_string_value(json_object_get(m, "value"));
			if (name && value && kft_hpo_is_metric(&r->spec, name, strlen(name)))
				take(c, name, value);
		}
		json_object_set_new(cursor, "report", json_incref(json_object_get(rep, "id")));
		r->dirty = true;
	}
	json_decref(reports);
}

static json_t *cursor_of(run *r, const char *trial)
{
	json_t *c = json_object_get(r->cursors, trial);
	if (!c) {
		c = json_pack("{s:i, s:i}", "log", 0, "report", 0);
		json_object_set_new(r->cursors, trial, c);
	}
	return c;
}

/* ---- trials ----------------------------------------------------------------------- */

static void end_trial(run *r, json_t *t, kft_hpo_outcome outcome, const char *message)
{
	char now[32], reason[48];
	const char *name = json_string_value(json_object_get(t, "name"));
	kft_rfc3339_now(now);
	kft_hpo_trial_end(&r->spec, t, outcome, message, now);
	unwatch_trial(r, name);
	const char *state = json_string_value(json_object_get(t, "state"));
	const char *v = kft_hpo_objective_value(&r->spec, t);
	bool bad = strcmp(state, KFT_HPO_FAILED) == 0 || strcmp(state, KFT_HPO_UNAVAILABLE) == 0;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "Trial %s %s", name, state);
	if (v)
		kft_strbuf_printf(&b, ": %s=%s", r->spec.objective, v);
	message = json_string_value(json_object_get(t, "message"));
	if (message)
		kft_strbuf_printf(&b, "%s%s", v ? "; " : ": ", message);
	snprintf(reason, sizeof(reason), "Trial%s", state);
	event(r, bad ? "Warning" : "Normal", reason, "%s", kft_strbuf_str(&b));
	kft_strbuf_free(&b);
	r->dirty = true;
}

static void early_stop(run *r, json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const json_t *m = kft_hpo_trial_metric(t, r->spec.objective);
	char msg[512];
	snprintf(msg, sizeof(msg),
	         "median stopping: the best %s of its first %lld reports, %s, is worse than "
	         "the median rule's %s",
	         r->spec.objective, r->spec.start_step,
	         json_string_value(json_object_get(m, r->spec.maximize ? "max" : "min")),
	         json_string_value(json_object_get(t, "medianStop")));
	kft_local_stop(r->l, r->ns, name, KFT_LOCAL_REASON_EARLY_STOPPED, msg, NULL);
	end_trial(r, t, KFT_HPO_JOB_EARLY_STOP, msg);
}

/* How the trial's TrainJob ended: 1 complete, 0 failed (with its
 * message), -1 not ended. */
static int job_outcome(const json_t *job, const char **message)
{
	const json_t *st = json_object_get(job, "status");
	if (kft_condition_is_true(st, KFT_CONDITION_COMPLETE))
		return 1;
	if (!kft_condition_is_true(st, KFT_CONDITION_FAILED))
		return -1;
	*message = json_string_value(
	        json_object_get(kft_condition_find(st, KFT_CONDITION_FAILED), "message"));
	return 0;
}

static void follow_trial(run *r, json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	json_t *cursor = cursor_of(r, name), *job = NULL;
	fold_ctx c = {r, t, false};
	read_output(r, &c, cursor, false);
	read_reports(r, &c, cursor);
	if (c.stop) {
		early_stop(r, t);
		return;
	}
	kft_error err;
	int rc = kft_local_get(r->l, r->ns, name, &job, &err);
	const char *message = NULL;
	int outcome = rc == 0 ? job_outcome(job, &message) : -1;
	if (rc == KFT_ENOTFOUND) {
		end_trial(r, t, KFT_HPO_JOB_FAILED, "its TrainJob was deleted");
	} else if (outcome >= 0) {
		/* what the job wrote before it ended */
		read_output(r, &c, cursor, true);
		read_reports(r, &c, cursor);
		end_trial(r, t, outcome ? KFT_HPO_JOB_COMPLETE : KFT_HPO_JOB_FAILED, message);
	}
	json_decref(job);
}

/* The trial's TrainJob exists already: ours (labelled as this trial) is
 * adopted, anything else is refused. */
static void adopt(run *r, json_t *t, uint64_t index)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	json_t *job = NULL;
	char idx[24];
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long)index);
	kft_store_job_get(r->s, r->ns, name, &job, NULL);
	const json_t *labels = json_object_get(json_object_get(job, "metadata"), "labels");
	const char *owner = json_string_value(json_object_get(labels, KFT_HPO_LABEL_JOB));
	const char *trial = json_string_value(json_object_get(labels, KFT_HPO_LABEL_TRIAL));
	if (owner && trial && strcmp(owner, r->name) == 0 && strcmp(trial, idx) == 0) {
		json_object_set_new(t, "state", json_string(KFT_HPO_RUNNING));
		json_object_del(t, "message");
		watch_trial(r, name);
		r->dirty = true;
	} else {
		end_trial(r, t, KFT_HPO_JOB_CREATE_ERROR,
		          "a TrainJob of that name exists and is not this trial");
	}
	json_decref(job);
}

static void submit_trial(run *r, json_t *t, json_t *job)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const char *was = json_string_value(json_object_get(t, "message"));
	kft_submit_opts o = {.workdir = r->exec.workdir,
	                     .job_workdir = r->exec.job_workdir,
	                     .base_env = r->env,
	                     .plugins = r->exec.plugins};
	kft_error err;
	int rc = kft_local_submit(r->l, r->fw, job, r->exec.runtime, &o, NULL, &err);
	if (rc == KFT_EUNAVAILABLE) {
		if (!was || strcmp(was, err.message) != 0) {
			json_object_set_new(t, "message", json_string(err.message));
			event(r, "Normal", "TrialWaiting", "Trial %s waits: %s", name, err.message);
			r->dirty = true;
		}
		return;
	}
	if (rc) {
		end_trial(r, t, KFT_HPO_JOB_CREATE_ERROR, err.message);
		return;
	}
	json_object_set_new(t, "state", json_string(KFT_HPO_RUNNING));
	json_object_del(t, "message");
	watch_trial(r, name);
	char params[512] = "";
	size_t i, used = 0;
	const json_t *a;
	json_array_foreach(json_object_get(t, "parameters"), i, a)
	{
		int w = snprintf(params + used, sizeof(params) - used, "%s%s=%s", i ? ", " : "",
		                 json_string_value(json_object_get(a, "name")),
		                 json_string_value(json_object_get(a, "value")));
		used = w > 0 && (size_t)w < sizeof(params) - used ? used + (size_t)w : used;
	}
	event(r, "Normal", "TrialCreated", "Created trial TrainJob %s: %s", name, params);
	r->dirty = true;
}

static void start_trial(run *r, json_t *t, uint64_t index)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	json_t *job = NULL;
	kft_error err;
	kft_job_info info;
	int exists = kft_store_job_info(r->s, r->ns, name, &info, NULL) == 0;
	kft_job_info_free(&info);
	if (exists) {
		adopt(r, t, index);
		return;
	}
	int rc = kft_hpo_trial_job(&r->spec, name, index, json_object_get(t, "parameters"), &job,
	                           &err);
	if (rc == 0)
		rc = kft_local_trial_check(r->fw, r->exec.runtime, &job, &err);
	if (rc)
		end_trial(r, t, KFT_HPO_JOB_CREATE_ERROR, err.message);
	else
		submit_trial(r, t, job);
	json_decref(job);
}

/* Appends trial `index` (Pending) with its parameters and median rule. */
static json_t *new_trial(run *r, uint64_t index)
{
	json_t *trials = json_object_get(r->status, "trials"), *params = NULL, *t = NULL;
	char now[32], *name = kft_hpo_trial_name(r->name, index);
	char *rule = kft_hpo_median_rule(&r->spec, trials);
	kft_error err;
	kft_rfc3339_now(now);
	if (name && kft_hpo_suggest(&r->spec, trials, r->exec.seed, index, &params, &err) == 0)
		t = kft_hpo_trial_new(name, params, rule, now);
	else if (name)
		fprintf(stderr, "trial %s: %s\n", name, err.message);
	if (t && json_array_append_new(trials, t) != 0)
		t = NULL;
	free(name);
	free(rule);
	json_decref(params);
	return t;
}

/* ---- the loop --------------------------------------------------------------------- */

/* The search is over: stop what runs, set the condition. */
static void finish(run *r, const kft_hpo_plan *plan)
{
	char now[32];
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(r->status, "trials"), i, t)
	{
		if (kft_local_trial_stop(r->l, r->ns, t, plan->message))
			end_trial(r, t, KFT_HPO_JOB_KILLED, "the OptimizationJob ended");
	}
	kft_rfc3339_now(now);
	kft_condition_set(r->status, plan->finish, KFT_CONDITION_TRUE, plan->reason, plan->message,
	                  now, NULL);
	bool failed = strcmp(plan->finish, KFT_CONDITION_FAILED) == 0;
	event(r, failed ? "Warning" : "Normal", plan->reason, "%s", plan->message);
	r->dirty = true;
}

/* One pass; *done when the search is over. */
static void tick(run *r, bool *done)
{
	json_t *trials = json_object_get(r->status, "trials"), *t;
	int64_t now_ms = kft_clock_mono_ms();
	bool retry = now_ms >= r->next_pending_ms;
	size_t i;
	json_array_foreach(trials, i, t)
	{
		const char *state = json_string_value(json_object_get(t, "state"));
		if (strcmp(state, KFT_HPO_RUNNING) == 0)
			follow_trial(r, t);
		else if (strcmp(state, KFT_HPO_PENDING) == 0 && retry)
			start_trial(r, t, i);
	}
	if (retry)
		r->next_pending_ms = now_ms + PENDING_RETRY_MS;
	kft_hpo_plan plan;
	kft_hpo_plan_next(&r->spec, r->status, &plan);
	if (plan.finish) {
		finish(r, &plan);
		*done = true;
	}
	for (size_t k = 0; !plan.finish && k < plan.create; k++) {
		size_t index = json_array_size(trials);
		if ((t = new_trial(r, index)) == NULL)
			break;
		start_trial(r, t, index);
		r->dirty = true;
	}
	json_t *before = json_deep_copy(json_object_get(r->status, "result"));
	kft_hpo_set_result(&r->spec, r->status);
	if (!json_equal(before, json_object_get(r->status, "result")))
		r->dirty = true;
	json_decref(before);
}

/* Records this process as the supervisor unless another live one is;
 * *go is false when there is nothing to do. */
static int claim(run *r, bool *go, kft_error *err)
{
	int pid = 0;
	long long ticks = 0, mine = 0;
	*go = false;
	int rc = kft_store_begin(r->s, err);
	if (rc == 0)
		rc = kft_optstore_get(r->s, r->ns, r->name, &r->opt, err);
	if (rc == 0)
		rc = kft_optstore_get_supervisor(r->s, r->ns, r->name, &pid, &ticks, err);
	const json_t *st = json_object_get(r->opt, "status");
	bool over = kft_condition_is_true(st, KFT_CONDITION_COMPLETE) ||
	            kft_condition_is_true(st, KFT_CONDITION_FAILED) ||
	            json_object_get(json_object_get(r->opt, "metadata"), "deletionTimestamp");
	if (rc == 0 && !over) {
		kft_local_proc_ticks(getpid(), &mine, NULL);
		if (pid > 0 && !(pid == getpid() && ticks == mine) && kft_local_proc_is(pid, ticks))
			rc = kft_error_set(err, KFT_EINVAL,
			                   "OptimizationJob %s already has a supervisor (pid %d)",
			                   r->name, pid);
		else if ((rc = kft_optstore_set_supervisor(r->s, r->ns, r->name, getpid(), mine,
		                                           err)) == 0)
			*go = true;
	}
	if (rc == 0)
		return kft_store_commit(r->s, err);
	kft_store_rollback(r->s);
	return rc;
}

/* Everything the loop needs, read once. */
static int prepare(run *r, kft_error *err)
{
	r->status = json_object_get(r->opt, "status");
	if (!r->status) {
		r->status = json_object();
		json_object_set_new(r->opt, "status", r->status);
	}
	if (!json_is_array(json_object_get(r->status, "trials")))
		json_object_set_new(r->status, "trials", json_array());
	r->events = json_array();
	r->observations = json_array();
	int rc = kft_optstore_exec(r->s, r->ns, r->name, &r->exec, err);
	if (rc == 0)
		rc = kft_optstore_cursors(r->s, r->ns, r->name, &r->cursors, err);
	if (rc == 0)
		rc = kft_hpo_spec_parse(r->opt, &r->spec, err);
	if (rc == 0)
		rc = kft_framework_new(KFT_LOCAL_FEATURES, &r->fw, err);
	size_t i, n = json_array_size(r->exec.base_env);
	const json_t *x;
	json_array_foreach(rc == 0 ? r->exec.plugins : NULL, i, x)
	{
		if ((rc = kft_framework_load_plugin(r->fw, json_string_value(x), err)) != 0)
			break;
	}
	if (rc == 0 && r->exec.base_env && !(r->env = calloc(n + 1, sizeof(char *))))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (i = 0; rc == 0 && r->env && i < n; i++)
		r->env[i] = (char *)json_string_value(json_array_get(r->exec.base_env, i));
	json_array_foreach(json_object_get(r->status, "trials"), i, x)
	{
		const char *state = json_string_value(json_object_get(x, "state"));
		if (state && strcmp(state, KFT_HPO_RUNNING) == 0)
			watch_trial(r, json_string_value(json_object_get(x, "name")));
	}
	return rc;
}

static void release_run(run *r)
{
	for (size_t i = 0; i < r->n_watches; i++)
		close(r->watches[i].fd);
	free(r->env);
	kft_framework_free(r->fw);
	kft_hpo_spec_free(&r->spec);
	kft_opt_exec_free(&r->exec);
	json_decref(r->opt);
	json_decref(r->cursors);
	json_decref(r->events);
	json_decref(r->observations);
	kft_local_close(r->l);
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term; /* no SA_RESTART: the poll wakes */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int kft_local_optimization_supervise(const char *state_dir, const char *ns, const char *name,
                                     kft_error *err)
{
	run r = {.ns = ns && *ns ? ns : "default", .name = name};
	bool go = false, done = false;
	catch_signals();
	int rc = kft_local_open(state_dir, NULL, &r.l, err);
	if (rc == 0) {
		r.s = kft_local_store(r.l);
		rc = claim(&r, &go, err);
	}
	if (rc == 0 && go)
		rc = prepare(&r, err);
	while (rc == 0 && go && !done && !stop_requested) {
		kft_error werr;
		tick(&r, &done);
		if (r.dirty && write_all(&r, done, &werr) != 0) {
			fprintf(stderr, "writing the status: %s\n", werr.message);
			if (++r.write_fails >= MAX_WRITE_FAILS)
				rc = kft_error_set(err, werr.code, "%s", werr.message);
			done = false;
		} else {
			r.write_fails = 0;
		}
		if (!done)
			wait_tick(&r);
	}
	release_run(&r);
	return rc;
}
