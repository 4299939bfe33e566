/*
 * mlflow.h - a client of MLflow's tracking server REST API (internal):
 * experiments, runs, log-batch, run status, artifacts served by the
 * tracking server (mlflow-artifacts:) and the model registry. One
 * connection (a curl handle, reused) per kft_mlflow: not thread-safe, so
 * the tracker's thread and an exporter each open their own.
 *
 * Errors map MLflow's error_code and the transport: KFT_EUNAVAILABLE for
 * what a retry may cure (cannot connect, a timeout, 429, 5xx),
 * KFT_ENOTFOUND (RESOURCE_DOES_NOT_EXIST, 404), KFT_EEXIST
 * (RESOURCE_ALREADY_EXISTS), KFT_EDENIED (401, 403), KFT_EINVAL (other 4xx,
 * the server's message), KFT_EPARSE (a reply that is not the JSON expected),
 * KFT_ENOMEM. Messages name the server and the call, never a credential.
 */
#ifndef KFT_TRACK_MLFLOW_H
#define KFT_TRACK_MLFLOW_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"

/* The settings MLflow's own client reads from its environment. Strings are
 * borrowed. */
typedef struct kft_mlflow_opts {
	const char *uri;                 /* MLFLOW_TRACKING_URI: http(s)://HOST[:PORT][/PATH] */
	const char *token;               /* MLFLOW_TRACKING_TOKEN: Authorization: Bearer */
	const char *username, *password; /* MLFLOW_TRACKING_USERNAME/_PASSWORD: Basic */
	const char *ca_file;             /* MLFLOW_TRACKING_SERVER_CERT_PATH */
	bool insecure;                   /* MLFLOW_TRACKING_INSECURE_TLS=true */
	long timeout_s;                  /* per request; 0: 30 */
	/* Another JSON REST server reached the same way (modelreg.c): its
	 * setting's name and its own name in messages; NULL: MLflow's. */
	const char *setting, *label;
} kft_mlflow_opts;

/* The value of NAME in env (an array of "NAME=VALUE", NULL-terminated; NULL:
 * this process's environment), NULL when unset or empty. Borrowed. */
const char *kft_mlflow_env(char *const *env, const char *name);

/* Fills o from env (see kft_mlflow_env). o->uri is NULL when tracking is
 * not configured. */
void kft_mlflow_opts_from_env(char *const *env, kft_mlflow_opts *o);

typedef struct kft_mlflow kft_mlflow;

/* A client of the server o->uri names (copied). KFT_EINVAL for a URI that
 * is not http(s):// (MLflow's file: and databricks URIs have no server
 * here), KFT_ENOMEM. */
int kft_mlflow_open(const kft_mlflow_opts *o, kft_mlflow **out, kft_error *err);
void kft_mlflow_close(kft_mlflow *m);

/* The server's URI as given (borrowed). */
const char *kft_mlflow_uri(const kft_mlflow *m);

/* One call of the REST API: METHOD {uri}/api/2.0/mlflow/{path}, body (may
 * be NULL) as JSON. *reply (may be NULL to ignore) is the reply's JSON
 * object, a new reference. */
int kft_mlflow_call(kft_mlflow *m, const char *method, const char *path, const json_t *body,
                    json_t **reply, kft_error *err);
/* The same at {uri}/{path}: another REST API of JSON documents (an HTTP 409
 * is KFT_EEXIST, a 404 KFT_ENOTFOUND). */
int kft_mlflow_call_at(kft_mlflow *m, const char *method, const char *path, const json_t *body,
                       json_t **reply, kft_error *err);

/* The id of the experiment named name (malloc'd into *id), created when
 * there is none. */
int kft_mlflow_experiment(kft_mlflow *m, const char *name, char **id, kft_error *err);

/* The newest run of experiment exp_id whose tag key has this value: its
 * RunInfo (a new reference) and, when tags is not NULL, its tags as
 * [{"key","value"}]. KFT_ENOTFOUND when there is none. */
int kft_mlflow_run_find(kft_mlflow *m, const char *exp_id, const char *key, const char *value,
                        json_t **info, kft_error *err);

/* A new run: its RunInfo in *info (a new reference). tags: [{"key","value"}]
 * or NULL. */
int kft_mlflow_run_create(kft_mlflow *m, const char *exp_id, const char *name, int64_t start_ms,
                          const json_t *tags, json_t **info, kft_error *err);

/* The newest run of exp_id tagged key=value, else a new one (name,
 * start_ms, tags as kft_mlflow_run_create). *info as there. */
int kft_mlflow_run_ensure(kft_mlflow *m, const char *exp_id, const char *key, const char *value,
                          const char *name, int64_t start_ms, const json_t *tags, json_t **info,
                          kft_error *err);

/* runs/log-batch; each list may be NULL. The caller keeps within MLflow's
 * batch limits (track.h). */
int kft_mlflow_log_batch(kft_mlflow *m, const char *run_id, const json_t *metrics,
                         const json_t *params, const json_t *tags, kft_error *err);

/* runs/update: the run's status and, for an end status, its end time. */
int kft_mlflow_run_update(kft_mlflow *m, const char *run_id, const char *status, int64_t end_ms,
                          kft_error *err);

/* Uploads the local file `path` as the artifact `rel` ('/'-separated) of a
 * run whose artifact_uri is mlflow-artifacts:/... (the tracking server's
 * proxied artifact store: PUT {uri}/api/2.0/mlflow-artifacts/artifacts/...).
 * KFT_EINVAL for another kind of artifact URI (see export.c). */
int kft_mlflow_artifact_put(kft_mlflow *m, const char *artifact_uri, const char *rel,
                            const char *path, kft_error *err);

/* A new version of the registered model `name` (created when missing) from
 * `source` (an artifact URI), linked to run_id (may be NULL). *version is
 * the version's number (malloc'd). */
int kft_mlflow_model_version(kft_mlflow *m, const char *name, const char *source,
                             const char *run_id, char **version, kft_error *err);

#endif
