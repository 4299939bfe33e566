/*
 * admission.h - AdmissionReview decoding and the webhooks' verdicts as pure functions (internal to
 * src/controller/ and its tests).
 */
#ifndef KFT_CONTROLLER_ADMISSION_H
#define KFT_CONTROLLER_ADMISSION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/controller.h"
#include "kftrainer/framework.h"
#include "kftrainer/schema.h"
#include "kftrainer/validation.h"

/* ---- admission webhooks (src/controller/admission.c) ---------------------- */

/* The webhooks upstream v2.3.0 registers, by the path each is served on,
 * and kftrainer's for upstream master's OptimizationJob (which upstream
 * checks with CEL rules only: the webhook adds kftrainer's checks of its
 * annotations, placeholders and grid, src/hpo/check.c). */
typedef enum kft_cm_webhook {
	KFT_CM_WEBHOOK_NONE,
	KFT_CM_WEBHOOK_DEFAULT_TRAINJOB,  /* /mutate-trainer-kubeflow-org-v1alpha1-trainjob */
	KFT_CM_WEBHOOK_VALIDATE_TRAINJOB, /* /validate-trainer-kubeflow-org-v1alpha1-trainjob */
	KFT_CM_WEBHOOK_VALIDATE_RUNTIME,  /* /validate-...-trainingruntime */
	KFT_CM_WEBHOOK_VALIDATE_CLUSTER_RUNTIME, /* /validate-...-clustertrainingruntime */
	KFT_CM_WEBHOOK_VALIDATE_OPTIMIZATIONJOB, /* /validate-...-optimizationjob (ours) */
} kft_cm_webhook;

/* The webhook a request path names, or KFT_CM_WEBHOOK_NONE. */
kft_cm_webhook kft_cm_webhook_for_path(const char *path);

/* The longest and the default time the API server waits for a webhook
 * (admissionregistration/v1 timeoutSeconds: at most 30, default 10). */
#define KFT_CM_ADMISSION_TIMEOUT_MAX_MS     30000
#define KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS 10000

/*
 * How long the API server waits for the answer to this request, in ms:
 * the `timeout` parameter of `query`, the request's raw query string
 * (untrusted; k8s.io/apiserver's webhook dispatcher sets it
 * from the webhook's timeoutSeconds, "10s"), the default when absent or not
 * a Go duration, at most the maximum and at least 1 ms.
 */
int64_t kft_cm_admission_timeout_ms(const char *query);

/* A decoded AdmissionReview request. Every pointer is borrowed from
 * `review`, which the struct owns (free with kft_cm_admission_free). */
typedef struct kft_cm_admission {
	json_t *review;
	const char *uid, *operation, *ns;
	const char *group, *kind; /* request.kind */
	const json_t *object;     /* request.object, or NULL */
	const json_t *old_object; /* request.oldObject, or NULL */
} kft_cm_admission;

/*
 * Decodes an AdmissionReview request body (untrusted: any bytes). Only
 * admission.k8s.io/v1 is served, as upstream registers. Errors, with the
 * words the 400 answer carries: KFT_EINVAL (empty body, not an
 * AdmissionReview v1, no request, no uid/operation/kind, an object that is
 * not a JSON object), KFT_EPARSE (not JSON). out is empty on error.
 */
int kft_cm_admission_decode(const char *body, size_t len, kft_cm_admission *out, kft_error *err);
void kft_cm_admission_free(kft_cm_admission *a);

/* Fetches a runtime from the caller's caches: kind is "TrainingRuntime" (ns
 * set) or "ClusterTrainingRuntime" (ns NULL). A new reference, or NULL when
 * there is none. Called from several threads at once. */
typedef json_t *(*kft_cm_runtime_get_fn)(void *ctx, const char *kind, const char *ns,
                                         const char *name);

/* What the validators judge with (all borrowed). now is RFC 3339 in
 * seconds, the defaulter's time stamp. */
typedef struct kft_cm_admission_env {
	const kft_schema *schema;
	const kft_framework *fw;
	const kft_backend *backend;
	kft_cm_runtime_get_fn get_runtime;
	void *ctx;
	const char *now;
} kft_cm_admission_env;

/*
 * The AdmissionReview answering req on webhook `which`: allowed (with any
 * warnings; for the defaulter a JSONPatch), or denied with 403 Forbidden and
 * the message `kftrainer validate` prints for the same object, or errored
 * (400) for a request of another kind. New reference; NULL only when out of
 * memory.
 */
json_t *kft_cm_admission_review(kft_cm_webhook which, const kft_cm_admission *req,
                                const kft_cm_admission_env *env);

/* An errored AdmissionReview (allowed false, status code and message), as
 * controller-runtime answers a request it cannot decode. New reference. */
json_t *kft_cm_admission_errored(const char *uid, int code, const char *message);

/* The field errors as one message: apimachinery's aggregate Error() ("a";
 * "[a, b]"; a repeated message once). Caller frees; NULL when out of memory. */
char *kft_cm_admission_message(const kft_field_errors *errs);

/* The defaulter's JSON patch (an array of operations, maybe empty) for a
 * TrainJob and, on update, its stored version (else NULL): upstream's
 * runtimePatches[].time rules (see admission.c). New reference. */
json_t *kft_cm_admission_default_patch(const json_t *job, const json_t *old_job, const char *now);

#endif
