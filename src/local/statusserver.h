/*
 * statusserver.h - upstream's TrainJob status endpoint, served by a local
 * job's supervisor on loopback (internal to src/local; see docs/local.md).
 *
 * Upstream v2.3.0's controller serves
 *   POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status
 * over HTTPS (pkg/statusserver): a body of at most 64 KiB holding an
 * UpdateTrainJobStatusRequest, a projected service-account token whose
 * audience names the job, and it server-side-applies status.trainerStatus.
 * The Kubeflow SDK's update_trainjob_status() posts there. Locally each
 * supervisor serves the same endpoint for its one job, with the state
 * directory's CA and serving certificate for 127.0.0.1/localhost and a
 * random per-job bearer token in place of the service-account token.
 *
 * src/api/statusreq.h decodes and judges one request (pure: no I/O, fuzzed;
 * the controller's status server shares it); the server core
 * (src/http/server.h) serves it on threads of its own, which never fork,
 * so the supervisor's loop only learns of valid reports, through one
 * descriptor it polls. A request without this job's token is refused on
 * the core's poll thread, before it takes a worker: other local users
 * cannot crowd out the job's own reports.
 */
#ifndef KFT_LOCAL_STATUSSERVER_H
#define KFT_LOCAL_STATUSSERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/statusreq.h"
#include "http/server.h"
#include "kftrainer/error.h"

/* ---- statusserver.c: the server --------------------------------------------- */

typedef struct kft_statusserver kft_statusserver;

/* What a server presents: a CA certificate (the file pods trust), and the
 * serving certificate for 127.0.0.1/localhost it signed with its key, all
 * PEM. Making them (two P-256 keys, two signatures) takes 1.6 ms of CPU
 * here, as much as the rest of a supervisor's start-up, so they are kept:
 * one set per state directory, in a 0600 file beside the store, reused by
 * every job's supervisor until a year before they end (upstream's
 * controller likewise serves every TrainJob's status with one certificate).
 * A supervisor loads them, or makes and keeps new ones, on a thread of its
 * own while it waits for its job's commit and reads the job
 * (supervisor.c); that thread also parses the serving pair into the TLS
 * configuration the server will take (0.4M instructions that would
 * otherwise come between the job's go and its first pod). */
typedef struct kft_statusserver_creds {
	char *ca_pem, *cert_pem, *key_pem;
	kft_http_tls_ctx *tls; /* the serving pair, parsed; NULL: parsed at the open */
	char *keep_at;         /* the file they are kept in, or NULL */
	pthread_t maker;       /* kft_statusserver_creds_start's thread, while making */
	bool making;
} kft_statusserver_creds;

/* Makes new credentials into c (zeroed first). KFT_ENOMEM, KFT_EIO. */
int kft_statusserver_creds_make(kft_statusserver_creds *c, kft_error *err);

/* Starts getting credentials into c (zeroed first) on a thread of its own;
 * the caller goes on, and kft_statusserver_creds_wait (or _free, or
 * kft_statusserver_open) waits for them. With keep_at (a file path, copied),
 * the ones kept there are used when they still hold
 * (kft_cert_chain_holds, for another year) and the file is the caller's own,
 * not a link and 0600; otherwise new ones are made and written there (0600,
 * whole or not at all; when it cannot be written they are used all the
 * same). When no thread can start, c stays empty, and the server makes its
 * own as it opens. */
void kft_statusserver_creds_start(kft_statusserver_creds *c, const char *keep_at);

/* Reads kept credentials from text (a kept file's content: the CA
 * certificate, the serving certificate and its key, PEM, in that order) into
 * out (zeroed first): true when they still hold for another year
 * (kft_cert_chain_holds); else false with out empty. Pure. */
bool kft_statusserver_creds_parse(const char *text, kft_statusserver_creds *out);

/* Waits for credentials being made by kft_statusserver_creds_start; nothing
 * otherwise. Credentials that could not be made leave c empty. */
void kft_statusserver_creds_wait(kft_statusserver_creds *c);

/* Waits for c as kft_statusserver_creds_wait, then wipes the key and frees
 * the strings; c is left empty. */
void kft_statusserver_creds_free(kft_statusserver_creds *c);

/* With the credentials creds (borrowed, waited for when being made; NULL or
 * empty: made here), writes
 * the CA to ca_path and a new token to token_path (0600, replacing older
 * ones) and listens on the loopback port of url (the
 * KUBEFLOW_TRAINER_SERVER_URL its pods were given; it must be
 * https://127.0.0.1:PORT/ or https://localhost:PORT/ followed by this job's
 * status path). A report is validated into a copy of trainjob (only its
 * status.trainerStatus errors are told, which the report alone decides).
 * KFT_EINVAL for another URL, KFT_EIO when the port cannot be bound (the
 * message says so) or a file written. */
int kft_statusserver_open(const char *url, const char *ca_path, const char *token_path,
                          const char *ns, const char *name, const json_t *trainjob,
                          kft_statusserver_creds *creds, kft_statusserver **out, kft_error *err);

/* A descriptor that is readable while a report waits (-1 for NULL s). */
int kft_statusserver_fd(const kft_statusserver *s);

/* The last valid report received since the previous call (a new reference
 * the caller records), or NULL. Never blocks. */
json_t *kft_statusserver_take(kft_statusserver *s);

/* Whether the loopback port of jobset's status URL (see find_env) can be
 * listened on now: 0 (or no URL), else KFT_EIO saying the port is taken and
 * by what URL the job's pods will look for it. For `resume`, before a
 * supervisor is started. */
int kft_statusserver_check_port(const json_t *jobset, kft_error *err);

/* The TrainJobStatus plugin's three variables as the first container of
 * jobset's pods that has KUBEFLOW_TRAINER_SERVER_URL holds them (borrowed
 * from jobset; all NULL when no container has the three). */
void kft_statusserver_find_env(const json_t *jobset, const char **url, const char **ca,
                               const char **token);

/* Closes every socket and frees s. NULL is a no-op. */
void kft_statusserver_close(kft_statusserver *s);

#endif
