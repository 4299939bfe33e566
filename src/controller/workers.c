/*
 * workers.c - the worker pool of one controller, as controller-runtime's
 * reconcileHandler runs it: take a key from the queue, reconcile it with a
 * fresh reconcileID, then forget it (success), re-add it after a delay
 * (RequeueAfter), or re-add it rate-limited (error). Every outcome is
 * counted in controller_runtime_reconcile_total under its result, errors
 * also in controller_runtime_reconcile_errors_total, and the duration goes
 * to controller_runtime_reconcile_time_seconds.
 *
 * An error is logged as "Reconciler error" with the controller's fields,
 * except a 409 Conflict: the object changed under us, the retry will read
 * the new version, and logging it at error level would only be noise; it
 * is logged at V(1) only (still counted as an error, as controller-runtime
 * counts it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cm_internal.h"
#include "util/clock.h"

/* A random (version 4) UUID, as controller-runtime's reconcileID. */
static void new_uuid(char *buf, size_t size)
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (i * 37));
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	         b[13], b[14], b[15]);
}

/* The fields controller-runtime puts on every log line of a reconcile. */
static json_t *request_fields(const char *controller, const char *key, const char *id)
{
	const char *slash = strchr(key, '/');
	char ns[256] = "";
	if (slash)
		snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
	return json_pack("{s:s, s:s, s:s, s:s}", "controller", controller, "namespace", ns, "name",
	                 slash ? slash + 1 : key, "reconcileID", id);
}

/* errors.Join: each message on its own line. */
void kft_cm_outcome_error(kft_cm_outcome *out, const kft_error *e)
{
	if (out->result != KFT_RESULT_ERROR) {
		out->result = KFT_RESULT_ERROR;
		out->err = *e;
		out->conflict = (e->code == KFT_ECONFLICT);
		return;
	}
	size_t n = strlen(out->err.message);
	snprintf(out->err.message + n, sizeof(out->err.message) - n, "\n%s", e->message);
	out->conflict = out->conflict && (e->code == KFT_ECONFLICT);
}

static void finish(kft_cm_controller *c, const char *key, const char *id, kft_cm_outcome *o)
{
	kft_cm *cm = c->cm;
	switch (o->result) {
	case KFT_RESULT_ERROR:
		kft_workqueue_add_rate_limited(c->queue, key);
		if (o->conflict) {
			KFT_LOG(cm->lg, -1, NULL, "Reconcile conflict, requeueing",
			        json_pack("{s:s, s:s}", "controller", c->name, "error",
			                  o->err.message));
		} else {
			KFT_LOG_ERR(cm->lg, NULL, "Reconciler error", o->err.message,
			            request_fields(c->name, key, id));
		}
		break;
	case KFT_RESULT_REQUEUE_AFTER:
		kft_workqueue_forget(c->queue, key);
		kft_workqueue_add_after(c->queue, key, (double)o->requeue_after_ms / 1000.0);
		break;
	case KFT_RESULT_REQUEUE: kft_workqueue_add_rate_limited(c->queue, key); break;
	case KFT_RESULT_SUCCESS: kft_workqueue_forget(c->queue, key); break;
	}
}

static void *worker(void *arg)
{
	kft_cm_controller *c = arg;
	char *key = NULL;
	while (kft_workqueue_get(c->queue, &key) == 0) {
		if (atomic_load(&c->cm->stop)) {
			/* Shutting down: what is still queued is picked up again by
			 * the next leader's initial list, as with controller-runtime. */
			kft_workqueue_done(c->queue, key);
			free(key);
			continue;
		}
		char id[40];
		kft_cm_outcome o;
		memset(&o, 0, sizeof(o));
		new_uuid(id, sizeof(id));
		double t0 = kft_clock_mono_s();
		kft_metrics_active(c->cm->metrics, c->name, 1);
		c->reconcile(c->cm, key, id, &o);
		finish(c, key, id, &o);
		kft_metrics_active(c->cm->metrics, c->name, -1);
		kft_metrics_reconcile(c->cm->metrics, c->name, o.result, kft_clock_mono_s() - t0);
		kft_workqueue_done(c->queue, key);
		free(key);
		key = NULL;
	}
	return NULL;
}

int kft_cm_workers_start(kft_cm_controller *c, kft_error *err)
{
	if (c->started)
		return 0;
	for (int i = 0; i < c->workers; i++) {
		if (pthread_create(&c->threads[i], NULL, worker, c) != 0) {
			c->workers = i;
			c->started = 1;
			return kft_error_set(err, KFT_EIO, "%s: cannot start worker %d", c->name,
			                     i);
		}
	}
	c->started = 1;
	KFT_LOG(c->cm->lg, KFT_LOG_INFO, NULL, "Starting workers",
	        json_pack("{s:s, s:i}", "controller", c->name, "worker count", c->workers));
	return 0;
}

/* Shuts the queue down; workers finish what is ready, then exit. */
void kft_cm_workers_stop(kft_cm_controller *c)
{
	if (!c->queue)
		return;
	kft_workqueue_shutdown(c->queue);
	if (!c->started)
		return;
	for (int i = 0; i < c->workers; i++)
		pthread_join(c->threads[i], NULL);
	c->started = 0;
	KFT_LOG(c->cm->lg, KFT_LOG_INFO, NULL, "All workers finished",
	        json_pack("{s:s}", "controller", c->name));
}

static void copy_histogram(const kft_workqueue_histogram *h, uint64_t *buckets, double *sum)
{
	for (int i = 0; i < KFT_WORKQUEUE_BUCKETS; i++)
		buckets[i] = h->buckets[i];
	buckets[KFT_WORKQUEUE_BUCKETS] = h->count;
	*sum = h->sum;
}

int kft_cm_queue_sampler(void *ctx, const char *controller, kft_queue_sample *out)
{
	kft_cm *cm = ctx;
	for (size_t i = 0; i < KFT_CM_N_CONTROLLERS; i++) {
		if (!cm->ctl[i].queue || strcmp(cm->ctl[i].name, controller) != 0)
			continue;
		kft_workqueue_stats st;
		kft_workqueue_stats_get(cm->ctl[i].queue, &st);
		out->depth = (double)st.depth;
		out->adds = (double)st.adds;
		out->retries = (double)st.retries;
		out->unfinished_seconds = st.unfinished_work_seconds;
		out->longest_running_seconds = st.longest_running_seconds;
		copy_histogram(&st.queue_duration, out->queue_buckets, &out->queue_sum);
		copy_histogram(&st.work_duration, out->work_buckets, &out->work_sum);
		return 0;
	}
	return KFT_ENOTFOUND;
}
