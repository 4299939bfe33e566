/*
 * statusreq.h - one request to upstream v2.3.0's TrainJob status endpoint,
 *   POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status
 * taken apart and judged as upstream's pkg/statusserver does (internal).
 *
 * Pure: no I/O, fuzzed (tests/fuzz/fuzz_status_request.c). The HTTP is the
 * server core's (src/http/); this is what upstream's handler decides. Two
 * servers use it: a local job's supervisor (src/local/statusserver.c, a
 * per-job token, kft_statusreq_judge) and the controller's status server
 * (src/controller/statusserver.c, projected service-account tokens and a
 * server-side apply, over the pieces below).
 */
#ifndef KFT_API_STATUSREQ_H
#define KFT_API_STATUSREQ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Upstream's body limit (maxBodySize, 1 << 16). */
#define KFT_STATUSREQ_BODY_MAX 65536

/* One request as the status servers' HTTP core read it (borrowed). */
typedef struct kft_statusreq_request {
	const char *method;
	const char *path; /* percent-decoded, without the query */
	const char *auth; /* the Authorization field, "" when absent */
	const char *body;
	size_t len;
} kft_statusreq_request;

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

/* A body the server core refused to read (its kft_http_req.refused), as
 * upstream's server answers it: 413 is upstream's metav1.Status "Payload
 * too large" (bodySizeLimitMiddleware); 411 (chunked: not served here) and
 * anything else as Go's server words them. 0 or KFT_ENOMEM. */
int kft_statusreq_refused(int code, kft_statusreq_answer *a);

/* Judges a complete request as upstream's server does, in its order: not
 * POST to the status path → 404 "Not found"; a token that is not this
 * job's (another job's path included: its token would be another) → 403
 * "Forbidden"; a body that is not an UpdateTrainJobStatusRequest → 422
 * "Invalid payload"; no trainerStatus → 200 echoing {}; a status the CRD
 * refuses → 422 with the API server's message; else 200 echoing the
 * request as Go encodes it, with a->report set. lastUpdatedTime is stored
 * as metav1.Time writes it (UTC, whole seconds). Returns 0 or KFT_ENOMEM. */
int kft_statusreq_judge(const kft_statusreq_target *t, const kft_statusreq_request *r,
                        kft_statusreq_answer *a);

/* The first two steps of kft_statusreq_judge (routing, then this job's
 * token), for a server to refuse a request before it reads the body: 0 to
 * go on, else a is filled (404 or 403) and the code returned (KFT_ENOMEM
 * when it cannot be). */
int kft_statusreq_admit(const kft_statusreq_target *t, const kft_statusreq_request *r,
                        kft_statusreq_answer *a);

/* Frees body and report. */
void kft_statusreq_answer_free(kft_statusreq_answer *a);

/* ---- the pieces, for a server that authorizes and records elsewhere -------- */

/* Sizes of the namespace and name buffers kft_statusreq_route fills. */
#define KFT_STATUSREQ_NAME_MAX 256

/* Upstream's routing: a POST to
 * /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status
 * (each wildcard one whole non-empty segment, as Go's ServeMux matches)
 * fills ns and name (KFT_STATUSREQ_NAME_MAX bytes each) and returns 0;
 * anything else fills a with upstream's 404 "Not found" Status and returns
 * 404 (KFT_ENOMEM when that cannot be made). */
int kft_statusreq_route(const kft_statusreq_request *r, char *ns, char *name,
                        kft_statusreq_answer *a);

/* upstream's extractRawToken: the credentials of an Authorization value of
 * exactly two whitespace-separated fields, the first "Bearer" in any case.
 * Copies them into out (size bytes) and returns 1, else 0 (too long too). */
int kft_statusreq_bearer(const char *auth, char *out, size_t size);

/* Decodes a body as upstream's json.Decoder fills UpdateTrainJobStatusRequest
 * (at most KFT_STATUSREQ_BODY_MAX bytes are read). Returns the TrainerStatus
 * in Go's field order (a new reference; an empty object when the request
 * has none, *present then false), or NULL after filling a with upstream's
 * 422 "Invalid payload" (a->body NULL only on ENOMEM). */
json_t *kft_statusreq_decode(const char *body, size_t len, bool *present, kft_statusreq_answer *a);

/* a as upstream's badRequest() writes a metav1.Status failure. 0 or
 * KFT_ENOMEM. */
int kft_statusreq_failure(kft_statusreq_answer *a, int code, const char *message,
                          const char *reason);

/* a as upstream's 200: the request decoded and encoded again (ts as
 * kft_statusreq_decode returned it). 0 or KFT_ENOMEM. */
int kft_statusreq_echo(kft_statusreq_answer *a, const json_t *ts, bool present);

/* The server-side apply configuration upstream sends for ts: the TrainJob
 * ns/name with status.trainerStatus, lastUpdatedTime always present (null
 * when the request had none, as the apply configuration's pointer is set
 * to a nil time). A new reference, NULL on ENOMEM. */
json_t *kft_statusreq_apply_object(const char *ns, const char *name, const json_t *ts);

#endif
