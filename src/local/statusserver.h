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
 * statusreq.c decodes and judges one request (pure: no I/O, fuzzed);
 * statusserver.c owns the sockets and TLS, inside the supervisor's poll
 * loop without ever blocking it.
 */
#ifndef KFT_LOCAL_STATUSSERVER_H
#define KFT_LOCAL_STATUSSERVER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kftrainer/error.h"

/* Our request head limit (Go's server allows 1 MiB; a status report's head
 * is a few hundred bytes) and upstream's body limit (maxBodySize, 1 << 16). */
#define KFT_STATUSREQ_HEAD_MAX 8192
#define KFT_STATUSREQ_BODY_MAX 65536

/* ---- statusreq.c: one request ---------------------------------------------- */

typedef struct kft_statusreq_head {
	char method[16];
	char path[KFT_STATUSREQ_HEAD_MAX + 1]; /* percent-decoded, no query */
	char auth[1024];                       /* Authorization, "" when absent or too long */
	size_t content_length;                 /* 0 when absent */
	size_t head_len;                       /* the head's bytes, blank line included */
} kft_statusreq_head;

/* What the server answers. body is malloc'd (NULL only on ENOMEM); report is
 * the TrainerStatus to record (a new reference), set only for a 200 that
 * carries one. */
typedef struct kft_statusreq_answer {
	int code;
	const char *content_type;
	char *body;
	json_t *report;
} kft_statusreq_answer;

/* The job a server answers for. trainjob (borrowed, may be NULL) is the
 * stored TrainJob a report is validated into, as the API server validates
 * the applied status against the CRD. */
typedef struct kft_statusreq_target {
	const char *ns, *name, *token;
	const json_t *trainjob;
} kft_statusreq_target;

/* Looks for a whole request head at the start of buf (len bytes, any bytes).
 * Returns 0 when more bytes are needed, 1 when it is complete and acceptable
 * (h filled, its length in h->head_len), KFT_ENOMEM, or an HTTP error code
 * for which a is filled: 400 (malformed; a bad Content-Length), 431
 * (no head within KFT_STATUSREQ_HEAD_MAX), 505, 411 (a chunked body: not
 * served here), 413 (Content-Length over KFT_STATUSREQ_BODY_MAX, upstream's
 * metav1.Status "Payload too large"). */
int kft_statusreq_head_parse(const char *buf, size_t len, kft_statusreq_head *h,
                             kft_statusreq_answer *a);

/* Judges a complete request as upstream's server does, in its order: not
 * POST to the status path → 404 "Not found"; a token that is not this
 * job's (another job's path included: its token would be another) → 403
 * "Forbidden"; a body that is not an UpdateTrainJobStatusRequest → 422
 * "Invalid payload"; no trainerStatus → 200 echoing {}; a status the CRD
 * refuses → 422 with the API server's message; else 200 echoing the
 * request as Go encodes it, with a->report set. lastUpdatedTime is stored
 * as metav1.Time writes it (UTC, whole seconds). Returns 0 or KFT_ENOMEM. */
int kft_statusreq_judge(const kft_statusreq_target *t, const kft_statusreq_head *h,
                        const char *body, size_t len, kft_statusreq_answer *a);

/* Frees body and report. */
void kft_statusreq_answer_free(kft_statusreq_answer *a);

/* The full HTTP/1.1 response (status line, headers, body, Connection:
 * close) for a, malloc'd, its length in *len; NULL on ENOMEM. */
char *kft_statusreq_response(const kft_statusreq_answer *a, size_t *len);

/* ---- statusserver.c: the server --------------------------------------------- */

typedef struct kft_statusserver kft_statusserver;

/* Makes the job's CA, serving certificate and token, writes ca_path and
 * token_path (0600, replacing older ones) and listens on the loopback port
 * of url (the KUBEFLOW_TRAINER_SERVER_URL its pods were given; it must be
 * https://127.0.0.1:PORT/ or https://localhost:PORT/ followed by this job's
 * status path). t's strings are copied; t->trainjob is borrowed and read on
 * every report (keep it current). KFT_EINVAL for another URL, KFT_EIO when
 * the port cannot be bound or a file written. */
int kft_statusserver_open(const char *url, const char *ca_path, const char *token_path,
                          const char *ns, const char *name, const json_t *trainjob,
                          kft_statusserver **out, kft_error *err);

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
