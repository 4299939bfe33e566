/*
 * cm_internal.h - the controller manager's shared state (internal).
 *
 * One kft_cm holds everything a run needs: the API client, the framework,
 * informers for the three trainer kinds and for the child kinds the plugins
 * watch, one work queue and worker pool per controller, the metrics and the
 * logger. manager.c builds and tears it down; workers.c runs the queues;
 * reconcilers.c holds the reconcile functions.
 */
#ifndef KFT_CONTROLLER_CM_INTERNAL_H
#define KFT_CONTROLLER_CM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "controller/admission.h"
#include "controller/certs.h"
#include "controller/httpd.h"
#include "controller/metrics.h"
#include "controller/optimization.h"
#include "controller/reconcile.h"
#include "controller/controller.h"
#include "controller/tracking.h"
#include "kftrainer/framework.h"
#include "kube/kube.h"
#include "kube/kube_cache.h"

/* kftrainer's reason for a TrainJob the configured plugins' CustomValidation
 * refuses (there is no admission webhook to refuse it first). */
#define KFT_CM_REASON_VALIDATION_FAILED "ValidationFailed"

#define KFT_CM_MAX_CHILD_KINDS 8
/* Informer index names: TrainJobs by kft_cm_trainjob_runtime_key, and
 * runtimes by kft_cm_runtime_class_names. */
#define KFT_CM_INDEX_RUNTIME       "runtime"
#define KFT_CM_INDEX_RUNTIME_CLASS "runtimeClass"
#define KFT_CM_MAX_WORKERS         64
/* trainjob, trainingruntime, clustertrainingruntime, optimizationjob (the
 * last runs only where the API server serves OptimizationJobs) */
#define KFT_CM_N_CONTROLLERS 4
#define KFT_CM_OPTIMIZATION  3

typedef struct kft_cm kft_cm;
typedef struct kft_cm_webhooks kft_cm_webhooks;
typedef struct kft_cm_certs kft_cm_certs;

/* What one reconcile returns to its worker. */
typedef struct kft_cm_outcome {
	kft_reconcile_result result;
	int64_t requeue_after_ms;
	int conflict; /* the error was a 409: requeue quietly */
	kft_error err;
} kft_cm_outcome;

typedef void (*kft_cm_reconcile_fn)(kft_cm *cm, const char *key, const char *reconcile_id,
                                    kft_cm_outcome *out);

typedef struct kft_cm_controller {
	const char *name;
	kft_cm_reconcile_fn reconcile;
	kft_workqueue *queue;
	int workers;
	pthread_t threads[KFT_CM_MAX_WORKERS];
	int started;
	kft_cm *cm;
} kft_cm_controller;

typedef struct kft_cm_child {
	const kft_gvr *gvr;
	kft_informer *inf;
	/* Non-NULL: this informer holds the one object of this name (whole),
	 * for lookups of it; the kind's other informer holds the rest. */
	const char *only_name;
	/* Not waited for before the workers start (the LimitRange and
	 * RuntimeClass watches): without the permission to list them the
	 * controller still runs, only without their requeues. */
	int optional;
} kft_cm_child;

/* Remembers the hash of what was last applied per object, so a desired
 * object that changed is applied even where the live object looks the same
 * (a field we stopped setting). Bounded; cleared when full. */
typedef struct kft_cm_applied {
	pthread_mutex_t mu;
	uint64_t *keys;   /* FNV-1a of "apiVersion/kind/ns/name"; 0 = empty slot */
	uint64_t *hashes; /* FNV-1a of the desired object's canonical JSON */
	size_t n, cap;
} kft_cm_applied;

typedef struct kft_cm_status kft_cm_status;

struct kft_cm {
	const kft_cm_config *cfg;
	kft_logger *lg;
	kft_kube *kube;
	kft_framework *fw;
	kft_metrics *metrics;
	kft_backend backend;
	kft_informer *trainjobs, *runtimes, *cluster_runtimes;
	kft_informer *optjobs; /* OptimizationJobs, or NULL where they are not served */
	kft_cm_child children[KFT_CM_MAX_CHILD_KINDS];
	size_t n_children;
	kft_informer *configmaps; /* one of children, or NULL */
	kft_cm_controller ctl[KFT_CM_N_CONTROLLERS];
	kft_cm_applied applied;
	kft_cm_status *status; /* the status server (TrainJobStatus gate), or NULL */
	atomic_int stop;
	atomic_int fatal;
	volatile int ready;
	kft_cm_webhooks *webhooks; /* the webhook server (webhook.c) */
	kft_cm_tracking *tracking; /* MLflow runs (tracking.h), or NULL */
};

/* workers.c */
int kft_cm_workers_start(kft_cm_controller *c, kft_error *err);
void kft_cm_workers_stop(kft_cm_controller *c);
int kft_cm_queue_sampler(void *ctx, const char *controller, kft_queue_sample *out);
/* Adds e to out as errors.Join does (each message on its own line). */
void kft_cm_outcome_error(kft_cm_outcome *out, const kft_error *e);

/* reconcilers.c */
void kft_cm_reconcile_trainjob(kft_cm *cm, const char *key, const char *reconcile_id,
                               kft_cm_outcome *out);
void kft_cm_reconcile_runtime(kft_cm *cm, const char *key, const char *reconcile_id,
                              kft_cm_outcome *out);
void kft_cm_reconcile_cluster_runtime(kft_cm *cm, const char *key, const char *reconcile_id,
                                      kft_cm_outcome *out);

/* export.c: after a TrainJob's reconcile (job: as the cache holds it), its
 * model export on a cluster (docs/tracking.md). */
void kft_cm_export_trainjob(kft_cm *cm, const json_t *job, kft_cm_outcome *out);

/* optimization.c */
void kft_cm_reconcile_optimization(kft_cm *cm, const char *key, const char *reconcile_id,
                                   kft_cm_outcome *out);
json_t *kft_cm_lookup(void *self, const char *api_version, const char *kind, const char *ns,
                      const char *name);
void kft_cm_applied_free(kft_cm_applied *a);

/* statusserver.c */
/* Where the status server tells of each report it applied (borrowed; set
 * before it serves, NULL: nowhere). */
void kft_cm_status_set_tracking(kft_cm_status *st, kft_cm_tracking *t);
/* Starts the TrainJob status server on statusServer.port (cfg borrowed and
 * outliving it) with its own API client from kubeconfig (NULL: the default
 * rules): discovers the token issuer first, as upstream's authorizer Init,
 * and fails when it cannot (KFT_EINVAL, KFT_EUNAVAILABLE ...) or the port
 * cannot be bound (KFT_EIO). Free with kft_cm_status_stop. */
int kft_cm_status_start(const kft_cm_config *cfg, const char *kubeconfig, kft_logger *lg,
                        kft_cm_status **out, kft_error *err);
/* The bound port (0 when none). */
int kft_cm_status_port(const kft_cm_status *st);
/* Stops serving (requests in flight are cut), frees st. NULL is a no-op. */
void kft_cm_status_stop(kft_cm_status *st);

/* webhook.c: the admission webhook server, with its certificates (certs.c
 * when certManagement.enable) and the watcher reloading them. */
int kft_cm_webhooks_start(kft_cm *cm, kft_cm_webhooks **out, kft_error *err);
/* 1 once certificates are ready and the server serves, else 0 with why. */
int kft_cm_webhooks_ready(kft_cm_webhooks *w, char *why, size_t n);
int kft_cm_webhooks_port(const kft_cm_webhooks *w);
void kft_cm_webhooks_stop(kft_cm_webhooks *w);
/* controller-runtime's cert directory: $TMPDIR/k8s-webhook-server/serving-certs. */
void kft_cm_webhooks_cert_dir(char *buf, size_t n);

/* certs.c: upstream's certificate rotator. start does the first round
 * (Secret, files, CA injection) before returning; tick re-checks when its
 * period has passed (called from the watcher thread). */
int kft_cm_certs_start(kft_cm *cm, const char *dir, kft_cm_certs **out, kft_error *err);
void kft_cm_certs_tick(kft_cm_certs *c);
int kft_cm_certs_ready(kft_cm_certs *c);
void kft_cm_certs_free(kft_cm_certs *c);

/* trim.c */
/* The informers' transform (ctx is the kft_cm). */
void kft_cm_trim_object(json_t *obj, void *ctx);
/* 1 for kinds whose cached copy lacks most of the spec (JobSets, and the
 * metadata-only kinds). */
int kft_cm_trimmed_kind(const json_t *obj);
/* 1 for the kinds cached as metadata (v1 ConfigMap and Secret). */
int kft_cm_metadata_kind(const json_t *obj);
/* A desired object cut to what the cache keeps of every object of its kind,
 * for comparing with the cached copy. */
void kft_cm_trim_projection(json_t *obj);

#endif
