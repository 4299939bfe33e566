/*
 * metrics.h - the Prometheus registry of controller-runtime's families the manager serves on
 * /metrics (internal to src/controller/ and its tests).
 */
#ifndef KFT_CONTROLLER_METRICS_H
#define KFT_CONTROLLER_METRICS_H

#include <jansson.h>
#include <stddef.h>

#include "controller/controller.h"

/* ---- metrics ------------------------------------------------------------- */

typedef struct kft_metrics kft_metrics;

/* The registry, with controller-runtime's families. Thread safe. */
kft_metrics *kft_metrics_new(void);
void kft_metrics_free(kft_metrics *m);

/* Registers a controller: its series start at 0 (as controller-runtime's
 * initMetrics) and max_concurrent_reconciles is set. KFT_ENOMEM,
 * KFT_ELIMIT past 16 controllers. */
int kft_metrics_add_controller(kft_metrics *m, const char *controller, int workers);

typedef enum kft_reconcile_result {
	KFT_RESULT_SUCCESS,
	KFT_RESULT_ERROR,
	KFT_RESULT_REQUEUE,
	KFT_RESULT_REQUEUE_AFTER,
} kft_reconcile_result;

/* One reconcile done: counts it under its result (and errors), observes its
 * duration in the histogram. Unknown controllers are ignored. */
void kft_metrics_reconcile(kft_metrics *m, const char *controller, kft_reconcile_result result,
                           double seconds);
/* active_workers gauge +1/-1. */
void kft_metrics_active(kft_metrics *m, const char *controller, int delta);

/* A work queue's figures, sampled when /metrics is scraped. */
typedef struct kft_queue_sample {
	double depth, adds, retries, unfinished_seconds, longest_running_seconds;
	/* cumulative counts per bucket of workqueue_{queue,work}_duration_seconds
	 * (buckets 1e-8 x 10^i, i = 0..11) plus +Inf, and the sums */
	uint64_t queue_buckets[13], work_buckets[13];
	double queue_sum, work_sum;
} kft_queue_sample;
typedef int (*kft_queue_sampler)(void *ctx, const char *controller, kft_queue_sample *out);

/* Called for every registered controller on each scrape (may be NULL). */
void kft_metrics_set_queue_sampler(kft_metrics *m, kft_queue_sampler fn, void *ctx);

/* The API server's host[:port], the host label of rest_client_requests_total
 * (NULL: "none", as client-go says when it has no base URL). */
void kft_metrics_set_client_host(kft_metrics *m, const char *host);

/* Counts one exchange with the API server in rest_client_requests_total, as
 * client-go counts each attempt: code is the HTTP status, or 0 for none
 * (labelled "<error>"). A kft_kube_observer in the manager calls it. */
void kft_metrics_request(kft_metrics *m, const char *method, long code);

/* The exposition text (Prometheus text format 0.0.4) of every family,
 * followed by process_* metrics read from /proc/self. Caller frees; NULL
 * on allocation failure. */
char *kft_metrics_render(kft_metrics *m);

#endif
