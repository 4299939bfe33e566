/*
 * optimizer.c - OptimizationJobs on the local engine: submit, read, delete
 * (see optimizer.h; the supervisor's loop is optsuper.c).
 *
 * Design in plain words, as local.c for TrainJobs:
 *  - Submitting is one store transaction: the OptimizationJob, what its
 *    trials inherit, its supervisor started and recorded. A failure rolls
 *    everything back and stops the supervisor before it reads anything.
 *  - Reading one checks that a search still running has its supervisor;
 *    if not, the check and the fix (running trials stopped, Failed with
 *    SupervisorLost) happen inside one transaction that re-reads it first.
 *  - Delete marks it first (deletionTimestamp, committed before any
 *    signal), so the supervisor stopped on purpose is not taken for lost;
 *    then the supervisor goes, then every TrainJob labelled as its trial
 *    (also one submitted just before a crash and not yet in its status),
 *    then its directory and rows.
 */
#include "local/optimizer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hpo/hpo.h"
#include "framework/conditions.h"
#include "kftrainer/corev1.h"
#include "kftrainer/object.h"
#include "local/local_internal.h"
#include "local/optstore.h"
#include "util/rfc3339.h"
#include "util/strbuf.h"

#define OPT_STOP_MS (KFT_LOCAL_STOP_GRACE_MS + 3000)

static const char *ns_of(const char *ns)
{
	return ns && *ns ? ns : "default";
}

char *kft_local_optimization_dir(const char *state_dir, const char *ns, const char *name)
{
	char *out = NULL;
	return asprintf(&out, "%s/optimizations/%s/%s", state_dir, ns_of(ns), name) < 0 ? NULL
	                                                                                : out;
}

/* ---- checking a trial ------------------------------------------------------------ */

/* The first field error of errs into err (KFT_EINVAL). */
static int first_error(const kft_field_errors *errs, const char *name, kft_error *err)
{
	if (errs->oom)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	char *line = kft_field_error_format(&errs->items[0]);
	int rc = kft_error_set(err, KFT_EINVAL,
	                       "TrainJob.trainer.kubeflow.org \"%s\" is invalid: %s%s", name,
	                       line ? line : "(no memory)", errs->count > 1 ? " (and more)" : "");
	free(line);
	return rc;
}

int kft_local_trial_check(const kft_framework *fw, const json_t *runtime, json_t **job,
                          kft_error *err)
{
	const char *name =
	        json_string_value(json_object_get(json_object_get(*job, "metadata"), "name"));
	const kft_schema *schema = kft_schema_builtin(err);
	json_t *runtimes = json_pack("[O]", runtime);
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	int rc = !schema     ? KFT_EINVAL
	         : !runtimes ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                     : 0;
	if (rc == 0)
		kft_object_check(schema, *job, NULL, &errs, NULL);
	if (rc == 0 && errs.count == 0)
		kft_corev1_check_env(json_object_get(*job, "spec"), "spec", &errs);
	const json_t *rt =
	        rc == 0 && errs.count == 0 ? kft_resolve_runtime(*job, runtimes, &errs) : NULL;
	if (rt)
		rc = kft_framework_validate(fw, NULL, rt, NULL, *job, &errs, err);
	if (rc == 0 && (errs.count || errs.oom))
		rc = first_error(&errs, name ? name : "", err);
	kft_field_errors_free(&errs);
	json_decref(runtimes);
	return rc;
}

/* ---- submit -------------------------------------------------------------------- */

static int ensure_name(json_t *opt, kft_error *err)
{
	json_t *meta = json_object_get(opt, "metadata");
	char *name = NULL;
	if (!json_is_object(meta))
		return kft_error_set(err, KFT_EINVAL, "metadata: Required value");
	if (!json_string_value(json_object_get(meta, "namespace")))
		json_object_set_new(meta, "namespace", json_string("default"));
	if (json_string_value(json_object_get(meta, "name")))
		return 0;
	int rc = kft_local_generate_name(json_string_value(json_object_get(meta, "generateName")),
	                                 &name, err);
	if (rc == 0)
		json_object_set_new(meta, "name", json_string(name));
	free(name);
	return rc;
}

/* The search's seed: the spec's, or one drawn now and kept, so that the
 * whole search (and a restart of its supervisor) draws from one stream. */
static int pick_seed(const kft_hpo_spec *spec, int64_t *seed, kft_error *err)
{
	uint64_t r;
	if (spec->has_seed) {
		*seed = spec->seed;
		return 0;
	}
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return kft_error_set(err, KFT_EIO, "cannot draw a seed: %s", strerror(errno));
	*seed = (int64_t)(r >> 1);
	return 0;
}

/* Trial 0 as the supervisor will make it, checked now. */
static int check_first_trial(const kft_framework *fw, const kft_hpo_spec *spec,
                             const json_t *runtime, int64_t seed, kft_error *err)
{
	json_t *params = NULL, *job = NULL, *none = json_array();
	char *name = kft_hpo_trial_name(spec->name, 0);
	int rc = !name || !none ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                        : kft_hpo_suggest(spec, none, seed, 0, &params, err);
	if (rc == 0)
		rc = kft_hpo_trial_job(spec, name, 0, params, &job, err);
	if (rc == 0)
		rc = kft_local_trial_check(fw, runtime, &job, err);
	if (rc == KFT_EINVAL && !strstr(err->message, "trial"))
		kft_error_set(err, KFT_EINVAL,
		              "OptimizationJob \"%s\": its trials' TrainJob would be invalid: %s",
		              spec->name, err->message);
	json_decref(params);
	json_decref(job);
	json_decref(none);
	free(name);
	return rc;
}

/* The given base environment as JSON; NULL when none was given (each trial
 * then takes the allow-list of the supervisor's environment, which is the
 * submitter's, as `train` takes the caller's). */
static json_t *base_env_json(char *const *given)
{
	json_t *arr = given ? json_array() : NULL;
	for (char *const *e = given; arr && *e; e++)
		json_array_append_new(arr, json_string(*e));
	return arr;
}

/* The initial status: Created, no trials yet. */
static json_t *initial_status(void)
{
	char now[32];
	json_t *st = json_pack("{s:[]}", "trials");
	kft_rfc3339_now(now);
	if (st && kft_condition_set(st, KFT_HPO_CONDITION_CREATED, KFT_CONDITION_TRUE,
	                            KFT_HPO_REASON_CREATED, "OptimizationJob is created", now,
	                            NULL) != 0) {
		json_decref(st);
		st = NULL;
	}
	return st;
}

/* Stores the search and starts its supervisor, in the caller's transaction. */
static int record(kft_local *l, json_t *opt, const kft_opt_exec *exec, kft_error *err)
{
	const json_t *meta = json_object_get(opt, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	char *dir = kft_local_optimization_dir(kft_local_state_dir(l), ns, name);
	pid_t pid = -1;
	long long ticks = 0;
	int rc = dir ? kft_optstore_create(kft_local_store(l), opt, exec, NULL, err)
	             : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_local_start_detached(l, dir, KFT_LOCAL_OPTIMIZATION_FLAG, ns, name, &pid,
		                              err);
	if (rc == 0) {
		kft_local_proc_ticks(pid, &ticks, NULL);
		rc = kft_optstore_set_supervisor(kft_local_store(l), ns, name, (int)pid, ticks,
		                                 err);
		if (rc)
			kill(pid, SIGKILL);
	}
	free(dir);
	return rc;
}

int kft_local_optimize(kft_local *l, const kft_framework *fw, const json_t *opt,
                       const json_t *runtime, const kft_optimize_opts *opts, char **name_out,
                       kft_error *err)
{
	kft_hpo_spec spec;
	kft_opt_exec exec = {0};
	char cwd[4096];
	json_t *copy = json_deep_copy(opt);
	if (name_out)
		*name_out = NULL;
	int rc = copy ? ensure_name(copy, err) : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_hpo_spec_parse(copy, &spec, err);
	if (rc) {
		json_decref(copy);
		return rc;
	}
	exec.runtime = json_incref((json_t *)runtime);
	exec.plugins = opts && opts->plugins ? json_incref((json_t *)opts->plugins) : NULL;
	exec.job_workdir = opts && opts->job_workdir;
	exec.workdir = strdup(opts && opts->workdir ? opts->workdir : getcwd(cwd, sizeof(cwd)));
	exec.base_env = base_env_json(opts ? opts->base_env : NULL);
	json_t *status = initial_status();
	rc = !exec.workdir || !status ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                              : pick_seed(&spec, &exec.seed, err);
	if (rc == 0)
		rc = check_first_trial(fw, &spec, runtime, exec.seed, err);
	if (rc == 0)
		json_object_set_new(copy, "status", json_incref(status));
	if (rc == 0 && (rc = kft_store_begin(kft_local_store(l), err)) == 0) {
		rc = record(l, copy, &exec, err);
		if (rc == 0)
			rc = kft_store_commit(kft_local_store(l), err);
		else
			kft_store_rollback(kft_local_store(l));
	}
	if (rc == 0 && name_out && !(*name_out = strdup(spec.name)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(status);
	kft_hpo_spec_free(&spec);
	kft_opt_exec_free(&exec);
	json_decref(copy);
	return rc;
}

/* ---- liveness --------------------------------------------------------------------- */

static bool is_finished(const json_t *opt)
{
	const json_t *st = json_object_get(opt, "status");
	return kft_condition_is_true(st, KFT_CONDITION_COMPLETE) ||
	       kft_condition_is_true(st, KFT_CONDITION_FAILED);
}

static bool being_deleted(const json_t *opt)
{
	return json_object_get(json_object_get(opt, "metadata"), "deletionTimestamp") != NULL;
}

static bool supervisor_alive(kft_local *l, const char *ns, const char *name)
{
	int pid = 0;
	long long ticks = 0;
	return kft_optstore_get_supervisor(kft_local_store(l), ns, name, &pid, &ticks, NULL) == 0 &&
	       pid > 0 && kft_local_proc_is(pid, ticks);
}

bool kft_local_trial_stop(kft_local *l, const char *ns, const json_t *trial, const char *why)
{
	const char *state = json_string_value(json_object_get(trial, "state"));
	const char *name = json_string_value(json_object_get(trial, "name"));
	if (!state || !name)
		return false;
	if (strcmp(state, KFT_HPO_RUNNING) == 0)
		kft_local_stop(l, ns, name, KFT_LOCAL_REASON_SEARCH_ENDED, why, NULL);
	return strcmp(state, KFT_HPO_RUNNING) == 0 || strcmp(state, KFT_HPO_PENDING) == 0;
}

/* Stops the trials still running, marking them Killed (status changed in
 * place). */
static void stop_running(kft_local *l, const char *ns, json_t *status, const char *why)
{
	char now[32];
	size_t i;
	json_t *t;
	kft_rfc3339_now(now);
	json_array_foreach(json_object_get(status, "trials"), i, t)
	{
		if (kft_local_trial_stop(l, ns, t, why))
			kft_hpo_trial_end(NULL, t, KFT_HPO_JOB_KILLED, why, now);
	}
}

/* The search's supervisor is gone while it ran: its trials are stopped and
 * it fails. Re-reads inside a transaction so two readers cannot both act. */
static int mark_lost(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	kft_store *s = kft_local_store(l);
	json_t *opt = NULL;
	char now[32], msg[160];
	int pid = 0;
	long long ticks = 0;
	int rc = kft_optstore_get(s, ns, name, &opt, err);
	if (rc || is_finished(opt) || being_deleted(opt) || supervisor_alive(l, ns, name)) {
		json_decref(opt);
		return rc;
	}
	kft_optstore_get_supervisor(s, ns, name, &pid, &ticks, NULL);
	snprintf(msg, sizeof(msg),
	         "the OptimizationJob's supervisor (pid %d) is gone; its running trials were "
	         "stopped",
	         pid);
	json_t *status = json_object_get(opt, "status");
	if (!status) {
		status = json_object();
		json_object_set_new(opt, "status", status);
	}
	stop_running(l, ns, status, msg);
	kft_rfc3339_now(now);
	rc = kft_condition_set(status, KFT_CONDITION_FAILED, KFT_CONDITION_TRUE,
	                       KFT_LOCAL_REASON_SUPERVISOR_LOST, msg, now, err);
	if (rc == 0)
		rc = kft_optstore_set_status(s, ns, name, status, NULL, true, err);
	json_decref(opt);
	return rc;
}

static int check_live(kft_local *l, const char *ns, const char *name, json_t **opt, kft_error *err)
{
	if (is_finished(*opt) || being_deleted(*opt) || supervisor_alive(l, ns, name))
		return 0;
	/* Stopping trials takes their own transactions: none is held here. */
	int rc = mark_lost(l, ns, name, err);
	if (rc == 0) {
		json_decref(*opt);
		*opt = NULL;
		rc = kft_optstore_get(kft_local_store(l), ns, name, opt, err);
	}
	return rc;
}

int kft_local_optimization_get(kft_local *l, const char *ns, const char *name, json_t **out,
                               kft_error *err)
{
	ns = ns_of(ns);
	int rc = kft_optstore_get(kft_local_store(l), ns, name, out, err);
	if (rc == 0)
		rc = check_live(l, ns, name, out, err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int kft_local_optimization_list(kft_local *l, const char *ns, json_t **out, kft_error *err)
{
	int rc = kft_optstore_list(kft_local_store(l), ns ? ns_of(ns) : NULL, out, err);
	return kft_local_list_live(l, rc, out, check_live, err);
}

int kft_local_optimization_events(kft_local *l, const char *ns, const char *name, json_t **out,
                                  kft_error *err)
{
	json_t *items = NULL;
	*out = NULL;
	int rc = kft_optstore_events(kft_local_store(l), ns_of(ns), name, &items, err);
	if (rc)
		return rc;
	*out = json_pack("{s:s, s:s, s:{}, s:o}", "apiVersion", "v1", "kind", "EventList",
	                 "metadata", "items", items);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- delete ---------------------------------------------------------------------- */

/* Marks it, and reads its supervisor and uid, in one transaction. */
static int begin_delete(kft_local *l, const char *ns, const char *name, int *pid, long long *ticks,
                        char **uid, kft_error *err)
{
	kft_store *s = kft_local_store(l);
	json_t *opt = NULL;
	int rc = kft_store_begin(s, err);
	if (rc)
		return rc;
	rc = kft_optstore_mark_deleting(s, ns, name, err);
	if (rc == 0)
		rc = kft_optstore_get_supervisor(s, ns, name, pid, ticks, err);
	if (rc == 0)
		rc = kft_optstore_get(s, ns, name, &opt, err);
	const char *u = json_string_value(json_object_get(json_object_get(opt, "metadata"), "uid"));
	if (rc == 0 && !(*uid = strdup(u ? u : "")))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(opt);
	if (rc == 0)
		return kft_store_commit(s, err);
	kft_store_rollback(s);
	return rc;
}

static void stop_supervisor(int pid, long long ticks)
{
	if (pid <= 0 || !kft_local_proc_is(pid, ticks))
		return;
	kill(pid, SIGTERM);
	if (!kft_local_wait_gone(pid, ticks, OPT_STOP_MS) && kft_local_proc_is(pid, ticks))
		kill(pid, SIGKILL);
	kft_local_wait_gone(pid, ticks, 1000);
}

/* Every TrainJob in ns labelled as a trial of name. */
static int delete_trials(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	json_t *jobs = NULL;
	int rc = kft_store_job_list(kft_local_store(l), ns, &jobs, err);
	size_t i;
	const json_t *tj;
	json_array_foreach(rc == 0 ? jobs : NULL, i, tj)
	{
		const json_t *meta = json_object_get(tj, "metadata");
		const char *owner = json_string_value(
		        json_object_get(json_object_get(meta, "labels"), KFT_HPO_LABEL_JOB));
		const char *trial = json_string_value(json_object_get(meta, "name"));
		if (!owner || !trial || strcmp(owner, name) != 0)
			continue;
		rc = kft_local_delete(l, ns, trial, err);
		if (rc == KFT_ENOTFOUND)
			rc = 0; /* another delete got there first */
		if (rc)
			break;
	}
	json_decref(jobs);
	return rc;
}

int kft_local_optimization_delete(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	int pid = 0;
	long long ticks = 0;
	char *uid = NULL, *dir = NULL;
	ns = ns_of(ns);
	int rc = begin_delete(l, ns, name, &pid, &ticks, &uid, err);
	if (rc)
		return rc;
	stop_supervisor(pid, ticks);
	rc = delete_trials(l, ns, name, err);
	if (rc == 0 && !(dir = kft_local_optimization_dir(kft_local_state_dir(l), ns, name)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_local_rmtree(dir, err);
	if (rc == 0)
		rc = kft_optstore_delete(kft_local_store(l), ns, name, uid, err);
	free(dir);
	free(uid);
	return rc;
}
