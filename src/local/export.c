/*
 * export.c - a local job's model export (see tracking.h and
 * src/track/export.h): where its output is on this machine, the
 * ModelExported condition in the store, and the supervisor's step that
 * runs `kftrainer export` in a process of its own once the job is
 * Complete (a delete or a stop signal ends it; the job's files stay until
 * the export is over).
 */
#include "local/tracking.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "framework/conditions.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "local/spawn.h"
#include "track/export.h"
#include "track/track.h"
#include "util/envnum.h"
#include "util/rfc3339.h"

extern char **environ;

static const char *annotation(const json_t *tj, const char *key)
{
	return json_string_value(json_object_get(
	        json_object_get(json_object_get(tj, "metadata"), "annotations"), key));
}

/* Records the condition in the stored status (one transaction). */
static int set_condition(kft_store *s, const char *ns, const char *name, const char *status,
                         const char *reason, const char *message, kft_error *err)
{
	json_t *tj = NULL;
	char now[KFT_RFC3339_MAX];
	kft_rfc3339_now(now);
	int rc = kft_store_begin(s, err);
	if (rc)
		return rc;
	rc = kft_store_job_get(s, ns, name, &tj, err);
	json_t *st = json_object_get(tj, "status");
	if (rc == 0 && !st && (rc = json_object_set_new(tj, "status", json_object())) == 0)
		st = json_object_get(tj, "status");
	if (rc == 0)
		rc = kft_condition_set(st, KFT_TRACK_CONDITION_EXPORTED, status, reason, message,
		                       now, err);
	if (rc == 0)
		rc = kft_store_job_set_status(s, ns, name, st, err);
	json_decref(tj);
	if (rc == 0)
		return kft_store_commit(s, err);
	kft_store_rollback(s);
	return rc;
}

static void progress_line(void *ctx, const char *line)
{
	fprintf(ctx, "%s\n", line);
	fflush(ctx);
}

/* The MLflow settings: this process's, else the job's own (its run's). */
static void mlflow_settings(kft_store *s, const char *ns, const char *name, kft_mlflow_opts *o,
                            char ***vec)
{
	json_t *base = NULL;
	char *wd = NULL;
	*vec = NULL;
	kft_mlflow_opts_from_env(NULL, o);
	if (o->uri || kft_store_job_get_exec(s, ns, name, &wd, &base, NULL) != 0)
		return;
	size_t n = json_array_size(base), k = 0;
	*vec = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; *vec && i < n; i++)
		if (json_string_value(json_array_get(base, i)))
			(*vec)[k++] = strdup(json_string_value(json_array_get(base, i)));
	kft_mlflow_opts_from_env(*vec ? *vec : NULL, o);
	if (!*vec)
		kft_mlflow_opts_from_env(NULL, o);
	free(wd);
	json_decref(base);
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int kft_local_export(kft_local *l, const char *ns, const char *name, const char *to, FILE *progress,
                     kft_error *err)
{
	json_t *tj = NULL;
	char *from = NULL, *where = NULL, **vec = NULL;
	kft_store *s = kft_local_store(l);
	int rc = kft_local_get(l, ns, name, &tj, err);
	const char *dest = to ? to : annotation(tj, KFT_TRACK_ANN_EXPORT_TO);
	const char *path = annotation(tj, KFT_TRACK_ANN_EXPORT_FROM);
	if (rc == 0 &&
	    !kft_condition_is_true(json_object_get(tj, "status"), KFT_CONDITION_COMPLETE))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "TrainJob %s has not completed: nothing to export", name);
	else if (rc == 0 && !dest)
		rc = kft_error_set(err, KFT_EINVAL,
		                   "TrainJob %s has no %s annotation (or give --to)", name,
		                   KFT_TRACK_ANN_EXPORT_TO);
	if (rc == 0) {
		const char *p = path ? path : KFT_TRACK_DEFAULT_FROM;
		rc = kft_local_host_path(l, ns, name, NULL, p, &from, err);
		/* on no volume: the pod saw this machine's own tree there */
		if (rc == KFT_ENOTFOUND && p[0] == '/')
			rc = (from = strdup(p)) ? 0
			                        : kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (rc) {
		json_decref(tj);
		return rc;
	}
	char msg[1024];
	snprintf(msg, sizeof(msg), "exporting %s to %s", path ? path : KFT_TRACK_DEFAULT_FROM,
	         dest);
	rc = set_condition(s, ns, name, KFT_CONDITION_UNKNOWN, KFT_TRACK_REASON_EXPORTING, msg,
	                   err);
	kft_export_opts o = {.from = from,
	                     .to = dest,
	                     .trainjob = tj,
	                     .progress = progress ? progress_line : NULL,
	                     .progress_ctx = progress};
	unsigned long long part = 0;
	bool bad_part = false;
	kft_env_whole("KFTRAINER_EXPORT_PART_SIZE", (unsigned long long)5 << 30, &part, &bad_part);
	if (bad_part && rc == 0)
		rc = kft_error_set(
		        err, KFT_EINVAL,
		        "KFTRAINER_EXPORT_PART_SIZE is not a whole number of bytes up to "
		        "5 GiB (S3's largest part)");
	o.part_size = part;
	mlflow_settings(s, ns, name, &o.mlflow, &vec);
	o.default_experiment = kft_mlflow_env(vec, "MLFLOW_EXPERIMENT_NAME");
	if (rc == 0)
		rc = kft_export_run(&o, &where, err);
	if (rc == 0) {
		snprintf(msg, sizeof(msg), "exported %s to %s",
		         path ? path : KFT_TRACK_DEFAULT_FROM, where);
		rc = set_condition(s, ns, name, KFT_CONDITION_TRUE, KFT_TRACK_REASON_EXPORTED, msg,
		                   err);
		if (rc == 0 && progress)
			progress_line(progress, msg);
	} else {
		set_condition(s, ns, name, KFT_CONDITION_FALSE, KFT_TRACK_REASON_FAILED,
		              err->message, NULL);
	}
	free_vec(vec);
	free(where);
	free(from);
	json_decref(tj);
	return rc;
}

int kft_local_export_pending(kft_local *l, const char *ns, const char *name, char *why, size_t size)
{
	json_t *tj = NULL;
	if (kft_local_get(l, ns, name, &tj, NULL) != 0)
		return 0;
	int pending = kft_local_export_wanted(tj);
	if (pending) {
		const json_t *c = kft_condition_find(json_object_get(tj, "status"),
		                                     KFT_TRACK_CONDITION_EXPORTED);
		const char *msg = json_string_value(json_object_get(c, "message"));
		snprintf(why, size, "%s", msg ? msg : "the export has not started yet");
	}
	json_decref(tj);
	return pending;
}

/* ---- the supervisor's step ---------------------------------------------------------- */

bool kft_local_export_wanted(const json_t *tj)
{
	const json_t *st = json_object_get(tj, "status");
	return annotation(tj, KFT_TRACK_ANN_EXPORT_TO) &&
	       kft_condition_is_true(st, KFT_CONDITION_COMPLETE) &&
	       !kft_condition_is_true(st, KFT_TRACK_CONDITION_EXPORTED);
}

/* Whether a stop signal came (the child is then stopped). */
static bool stop_came(int sfd)
{
	struct signalfd_siginfo si;
	bool stop = false;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			stop = true;
	return stop;
}

void kft_local_export_step(const char *state_dir, const char *job_dir, const json_t *tj, int sfd)
{
	const json_t *meta = json_object_get(tj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	char *argv[] = {"/proc/self/exe",
	                "--state-dir",
	                (char *)state_dir,
	                "export",
	                (char *)name,
	                "-n",
	                (char *)(ns ? ns : "default"),
	                NULL};
	char logp[4096];
	kft_proc p;
	kft_error err = {0};
	if (!name || !kft_local_export_wanted(tj))
		return;
	snprintf(logp, sizeof(logp), "%s/logs/" KFT_LOCAL_EXPORT_LOG, job_dir);
	if (kft_proc_start(argv, environ, NULL, logp, &p, &err) != 0) {
		fprintf(stderr, "kftrainer supervise: export: %s\n", err.message);
		return;
	}
	fprintf(stderr, "kftrainer supervise: exporting the model (log: %s)\n", logp);
	int exited = 0, code = 0;
	while (!exited) {
		struct pollfd pfd = {.fd = sfd, .events = POLLIN};
		if (poll(&pfd, 1, 500) > 0 && stop_came(sfd)) {
			kft_proc_stop(&p, KFT_LOCAL_STOP_GRACE_MS);
			fprintf(stderr, "kftrainer supervise: export stopped by a signal\n");
			return;
		}
		if (kft_proc_poll(&p, &exited, &code, NULL) != 0)
			break;
	}
	fprintf(stderr, "kftrainer supervise: export %s (exit %d)\n", code ? "failed" : "done",
	        code);
}
