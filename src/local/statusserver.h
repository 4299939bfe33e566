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
 * supervisor serves the same endpoint for its one job, with a per-job CA,
 * a serving certificate for 127.0.0.1/localhost and a random bearer token
 * in place of the service-account token.
 *
 * src/api/statusreq.h decodes and judges one request (pure: no I/O, fuzzed;
 * the controller's status server shares it);
 * statusserver.c owns the sockets and TLS, inside the supervisor's poll
 * loop without ever blocking it.
 */
#ifndef KFT_LOCAL_STATUSSERVER_H
#define KFT_LOCAL_STATUSSERVER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/statusreq.h"
#include "kftrainer/error.h"

/* ---- statusserver.c: the server --------------------------------------------- */

typedef struct kft_statusserver kft_statusserver;

/* What a server presents: a CA certificate (the file pods trust), and the
 * serving certificate for 127.0.0.1/localhost it signed with its key, all
 * PEM. Making them (two P-256 keys, two signatures) is most of a
 * supervisor's start-up CPU, so a supervisor makes them while it waits for
 * its job to be committed (supervisor.c). The key stays in memory. */
typedef struct kft_statusserver_creds {
	char *ca_pem, *cert_pem, *key_pem;
} kft_statusserver_creds;

/* Makes new credentials into c (zeroed first). KFT_ENOMEM, KFT_EIO. */
int kft_statusserver_creds_make(kft_statusserver_creds *c, kft_error *err);

/* Wipes the key and frees the strings; c is left empty. */
void kft_statusserver_creds_free(kft_statusserver_creds *c);

/* With the credentials creds (borrowed; NULL or empty: made here), writes
 * the CA to ca_path and a new token to token_path (0600, replacing older
 * ones) and listens on the loopback port of url (the
 * KUBEFLOW_TRAINER_SERVER_URL its pods were given; it must be
 * https://127.0.0.1:PORT/ or https://localhost:PORT/ followed by this job's
 * status path). ns and name are copied; trainjob is borrowed and read on
 * every report (keep it current). KFT_EINVAL for another URL, KFT_EIO when
 * the port cannot be bound or a file written. */
int kft_statusserver_open(const char *url, const char *ca_path, const char *token_path,
                          const char *ns, const char *name, const json_t *trainjob,
                          const kft_statusserver_creds *creds, kft_statusserver **out,
                          kft_error *err);

/* Fills up to cap pollfds (the listener, then each connection with what it
 * waits for); returns how many. */
size_t kft_statusserver_pollfds(const kft_statusserver *s, struct pollfd *pfd, size_t cap);

/* Serves whatever poll found ready (pfd and n as kft_statusserver_pollfds
 * filled them, revents set) and drops connections past their deadlines.
 * Never blocks. Returns the last valid report received (a new reference
 * the caller records), or NULL. */
json_t *kft_statusserver_serve(kft_statusserver *s, const struct pollfd *pfd, size_t n);

/* The TrainJobStatus plugin's three variables as the first container of
 * jobset's pods that has KUBEFLOW_TRAINER_SERVER_URL holds them (borrowed
 * from jobset; all NULL when no container has the three). */
void kft_statusserver_find_env(const json_t *jobset, const char **url, const char **ca,
                               const char **token);

/* Closes every socket and frees s. NULL is a no-op. */
void kft_statusserver_close(kft_statusserver *s);

#endif
