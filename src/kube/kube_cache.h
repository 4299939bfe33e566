/*
 * kube_cache.h - what a controller builds on top of the Kubernetes client:
 * a rate-limited work queue, shared informers (list+watch caches with
 * indexes and event handlers) and leader election over a Lease.
 *
 * The three pieces follow the conventions controller-runtime users expect,
 * because operators read our metrics, leases and logs with the same tools:
 *
 *   - kft_workqueue: string keys ("namespace/name", or "name" for cluster
 *     objects). A key is never queued twice and never handed to two workers
 *     at once; a key re-added while a worker holds it is handed out again
 *     after kft_workqueue_done. Rate-limited adds back off per key
 *     exponentially (5 ms doubling up to 1000 s by default). Counters and
 *     histograms carry what workqueue_* Prometheus metrics need.
 *   - kft_informer: one per watched kind (optionally one namespace and a
 *     label selector). A thread lists (paginated), then watches from the
 *     list's resourceVersion with bookmarks; it keeps a thread-safe cache
 *     keyed "namespace/name", maintains named indexes, and calls handlers
 *     with each change. A 410 Gone relists and delivers the difference; a
 *     cut connection is re-watched from the last seen resourceVersion after
 *     an exponential backoff with jitter (capped at 30 s).
 *   - kft_leader: client-go's leader election on a coordination.k8s.io/v1
 *     Lease, with controller-runtime's timings (15 s / 10 s / 2 s).
 *
 * Threading: every function here may be called from any thread unless its
 * comment says otherwise. Handlers and leader callbacks run on the object's
 * own thread (one per informer / elector), never with an internal lock held,
 * so they may call back into the same object (get, by_index, queue adds).
 *
 * Objects: the cache stores each object as compact JSON text and decodes a
 * tree for each reader (a tree takes about eight times the memory of its
 * text); with kft_informer_opts.keep_trees it shares one immutable tree per
 * object between the cache and every reader instead (jansson's reference
 * counts are atomic). Every json_t handed out is a new reference the caller
 * json_decref()s; callers must NEVER modify it (it may be shared; use
 * json_deep_copy when a mutable copy is needed). Objects are stored without
 * metadata.managedFields, which only the API server needs and which is
 * often the larger half of an object.
 *
 * Errors follow error.h: 0 or a negative kft_status, err filled when
 * non-NULL. Strings passed in are borrowed (copied when kept).
 */
#ifndef KFT_KUBE_CACHE_H
#define KFT_KUBE_CACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kftrainer/error.h"

/* Defined by kube.h (the REST client); only pointers are used here. */
struct kft_kube;
struct kft_gvr;
struct kft_kube_config;

/* ===================================================================== */
/* Object keys                                                            */
/* ===================================================================== */

/* Longest key: a 253-character namespace (DNS subdomain), '/', a
 * 253-character name, NUL - rounded up. */
#define KFT_CACHE_KEY_MAX 512

/*
 * Writes obj's cache key into buf: "namespace/name", or "name" when the
 * object has no namespace. Errors: KFT_EINVAL when metadata.name is missing
 * or empty, KFT_ELIMIT when the key does not fit in size bytes.
 */
int kft_cache_key(const json_t *obj, char *buf, size_t size);

/*
 * Writes the key of obj's controller owner into buf when obj has an
 * ownerReference with controller: true whose kind is `kind` and whose
 * apiVersion's group is `group` ("" for the core group): the owner lives in
 * obj's namespace, so the key is "namespace/ownerName". Handlers use it to
 * enqueue the parent of a changed child (a TrainJob for its JobSet).
 * Returns 0 and fills buf; KFT_ENOTFOUND when there is no such owner;
 * KFT_ELIMIT when the key does not fit.
 */
int kft_cache_controller_owner_key(const json_t *obj, const char *group, const char *kind,
                                   char *buf, size_t size);

/* ===================================================================== */
/* Work queue                                                             */
/* ===================================================================== */

typedef struct kft_workqueue kft_workqueue;

/*
 * Rate limiting for kft_workqueue_add_rate_limited. A zeroed struct (or a
 * NULL pointer) means upstream's defaults: base_delay 0.005 s, max_delay
 * 1000 s, no token bucket - controller-runtime v0.24 (what upstream trainer
 * v2.3.0 links) builds its queues with the per-item exponential limiter
 * only. Set bucket_qps > 0 to also apply client-go's overall token bucket
 * (DefaultControllerRateLimiter uses 10 qps, burst 100); the delay is then
 * the larger of the two.
 */
typedef struct kft_workqueue_opts {
	double base_delay_s; /* first retry delay; doubles per failure; <= 0: 0.005 */
	double max_delay_s;  /* cap of the per-key delay; <= 0: 1000 */
	double bucket_qps;   /* > 0 enables the overall token bucket */
	int bucket_burst;    /* bucket size when enabled; <= 0: 100 */
} kft_workqueue_opts;

/* Prometheus histogram buckets for the two duration histograms: upper
 * bounds 1e-8 s * 10^i for i in [0, 12), as controller-runtime's
 * ExponentialBuckets(10e-9, 10, 12). Observations above the last bound only
 * count in `count` (the +Inf bucket). */
#define KFT_WORKQUEUE_BUCKETS 12

typedef struct kft_workqueue_histogram {
	uint64_t buckets[KFT_WORKQUEUE_BUCKETS]; /* cumulative, as Prometheus renders */
	uint64_t count;
	double sum; /* seconds */
} kft_workqueue_histogram;

/* A snapshot for workqueue_* metrics (name label = the controller's name). */
typedef struct kft_workqueue_stats {
	int64_t depth;                          /* workqueue_depth: keys ready, not handed out */
	uint64_t adds;                          /* workqueue_adds_total */
	uint64_t retries;                       /* workqueue_retries_total: adds with a delay > 0 */
	double unfinished_work_seconds;         /* sum over keys being processed of their age */
	double longest_running_seconds;         /* workqueue_longest_running_processor_seconds */
	int64_t waiting;                        /* keys delayed, not yet ready (not a metric) */
	int64_t processing;                     /* keys handed out, not done (not a metric) */
	kft_workqueue_histogram queue_duration; /* add -> get */
	kft_workqueue_histogram work_duration;  /* get -> done */
} kft_workqueue_stats;

/* Upper bound (seconds) of histogram bucket i (0 <= i < KFT_WORKQUEUE_BUCKETS). */
double kft_workqueue_bucket_bound(int i);

/*
 * Creates an empty queue. opts may be NULL (defaults above) and is copied.
 * *out is freed with kft_workqueue_free. Errors: KFT_ENOMEM, KFT_EINVAL
 * (a non-finite or negative delay). The queue needs no thread of its own:
 * delayed keys are promoted by whoever calls get/add/stats.
 */
int kft_workqueue_new(const kft_workqueue_opts *opts, kft_workqueue **out, kft_error *err);

/*
 * Shuts down (if not already) and frees the queue. Call only once no
 * thread uses it any more (join the workers first). NULL is ignored.
 */
void kft_workqueue_free(kft_workqueue *q);

/*
 * Queues key unless it is already queued (then this is a no-op). A key
 * currently being processed is handed out again after its done(). A key
 * waiting for a delay becomes ready now. Ignored after shutdown.
 * Errors: KFT_EINVAL (NULL/empty key or longer than KFT_CACHE_KEY_MAX),
 * KFT_ENOMEM.
 */
int kft_workqueue_add(kft_workqueue *q, const char *key);

/*
 * Queues key behind every key the other adds queue: it is handed out only
 * when none of those is ready (FIFO among themselves). A key already queued
 * keeps its place; a key queued low and then added with kft_workqueue_add
 * (or made ready by a delay) moves ahead. For work that may wait while the
 * queue is busy, such as a child's status change to be copied to its owner
 * during a burst of new owners. Errors as kft_workqueue_add.
 */
int kft_workqueue_add_low(kft_workqueue *q, const char *key);

/*
 * Queues key after delay_s seconds (<= 0: now, as kft_workqueue_add). When
 * the key is already waiting, the earlier of the two times wins; when it is
 * already ready, nothing changes. Counts a retry when delay_s > 0.
 * Errors as kft_workqueue_add.
 */
int kft_workqueue_add_after(kft_workqueue *q, const char *key, double delay_s);

/*
 * Queues key after its rate-limited delay: base * 2^n for the n-th
 * consecutive call since the last forget (capped at max), or the token
 * bucket's delay when enabled and larger. Errors as kft_workqueue_add.
 */
int kft_workqueue_add_rate_limited(kft_workqueue *q, const char *key);

/* Resets key's failure count (after a successful reconcile). */
void kft_workqueue_forget(kft_workqueue *q, const char *key);

/* How many rate-limited adds key has had since the last forget. */
int kft_workqueue_num_requeues(kft_workqueue *q, const char *key);

/*
 * Blocks until a key is ready, then hands it out: *key is a new string the
 * caller free()s, and the caller must call kft_workqueue_done(q, *key)
 * when finished with it. After shutdown, keys already ready are still
 * handed out (so workers drain the queue); then KFT_EUNAVAILABLE with
 * *key = NULL tells the worker to exit. Errors: KFT_EUNAVAILABLE (shut
 * down and drained), KFT_ENOMEM.
 */
int kft_workqueue_get(kft_workqueue *q, char **key);

/*
 * Like kft_workqueue_get but waits at most timeout_s seconds; returns
 * KFT_ENOTFOUND with *key = NULL when nothing became ready in time.
 */
int kft_workqueue_get_timeout(kft_workqueue *q, double timeout_s, char **key);

/*
 * Marks key as processed. If it was re-added meanwhile it becomes ready
 * again. Calling done for a key not handed out is ignored.
 */
void kft_workqueue_done(kft_workqueue *q, const char *key);

/*
 * Stops the queue: further adds are ignored, delayed keys are dropped, and
 * every blocked get wakes (returning remaining ready keys first, then
 * KFT_EUNAVAILABLE). Idempotent.
 */
void kft_workqueue_shutdown(kft_workqueue *q);

/* 1 once kft_workqueue_shutdown was called. */
int kft_workqueue_shutting_down(kft_workqueue *q);

/* Number of keys ready to be handed out (the depth). */
size_t kft_workqueue_len(kft_workqueue *q);

/* Fills *st with a consistent snapshot of the counters. */
void kft_workqueue_stats_get(kft_workqueue *q, kft_workqueue_stats *st);

/* ===================================================================== */
/* Informer                                                               */
/* ===================================================================== */

typedef struct kft_informer kft_informer;

/* An index function's output: call kft_index_keys_add once per value. */
typedef struct kft_index_keys kft_index_keys;

/* Adds one index value (copied; duplicates are ignored). Errors: KFT_ENOMEM,
 * KFT_ELIMIT (more than 1024 values for one object, or a value over 4 KiB). */
int kft_index_keys_add(kft_index_keys *keys, const char *value);

/*
 * An index: computes the index values of obj (zero or more). Runs on the
 * informer thread with the cache's write lock held: it must not call back
 * into the informer. Returning a negative status skips the object for this
 * index (the informer logs nothing; the object stays cached).
 */
typedef int (*kft_index_fn)(const json_t *obj, kft_index_keys *keys, void *ctx);

/* Built-in index: the uid of every ownerReference (the controller's
 * "owner uid" index). Name it as you like when adding it. */
int kft_index_owner_uid(const json_t *obj, kft_index_keys *keys, void *ctx);

/* Built-in index: metadata.namespace (cluster objects give none). */
int kft_index_namespace(const json_t *obj, kft_index_keys *keys, void *ctx);

/*
 * Event handlers. Any member may be NULL. Objects are borrowed for the
 * duration of the call (json_incref to keep one; never modify).
 *   on_add:    a new object; in_initial_list is 1 during the first list.
 *   on_update: old and new state (also delivered for a relist that found
 *              the object changed). Bookmarks are not delivered.
 *   on_delete: the last state known. final_state_unknown is 1 when the
 *              deletion was inferred by a relist (the object vanished while
 *              the watch was down), 0 for a DELETED watch event.
 * Handlers of one informer run on its thread, in event order, one at a
 * time; they should be quick (typically: compute a key, enqueue it).
 */
typedef struct kft_informer_handlers {
	void (*on_add)(void *ctx, const json_t *obj, int in_initial_list);
	void (*on_update)(void *ctx, const json_t *old_obj, const json_t *new_obj);
	void (*on_delete)(void *ctx, const json_t *obj, int final_state_unknown);
	void *ctx;
} kft_informer_handlers;

/*
 * What to watch. gvr and kube are borrowed and must outlive the informer.
 */
typedef struct kft_informer_opts {
	const struct kft_gvr *gvr;  /* the kind (from kube.h's table) */
	const char *namespace;      /* NULL or "": all namespaces */
	const char *label_selector; /* NULL: everything */
	const char *field_selector; /* NULL: everything */
	long page_size;             /* list page size; <= 0: 500 (client-go's) */
	/* Server-side watch timeout per watch request; <= 0: a random 300-600 s,
	 * as client-go's reflector, so watches of many informers do not all
	 * end at once. */
	int watch_timeout_s;
	/* Longest reconnect backoff (seconds); <= 0: 30. The first is ~0.8 s. */
	double max_backoff_s;
	/* Optional: called on every object before it is cached (after
	 * managedFields is dropped), while it is still private to the
	 * informer, to drop more fields the controller never reads. Must not
	 * change metadata.name/namespace/resourceVersion. */
	void (*transform)(json_t *obj, void *ctx);
	void *transform_ctx;
	/* 0: store objects as compact JSON text, decoded on every read (the
	 * least memory); 1: store one tree per object, shared with readers
	 * (no decoding; for a few objects read on every reconcile). */
	int keep_trees;
	/* 1: list and watch metadata only (PartialObjectMetadata): the server
	 * sends no spec, status or data, so objects of this kind cost the
	 * controller little however large they are; the cached objects carry
	 * the kind's apiVersion and kind and only their metadata. */
	int metadata_only;
} kft_informer_opts;

/*
 * Creates a stopped informer. Errors: KFT_EINVAL (NULL kube or gvr),
 * KFT_ENOMEM. *out is freed with kft_informer_free.
 */
int kft_informer_new(struct kft_kube *kube, const kft_informer_opts *opts, kft_informer **out,
                     kft_error *err);

/*
 * Adds a named index. Only before kft_informer_start (KFT_EINVAL after,
 * or for a duplicate or empty name). name is copied; ctx is borrowed.
 */
int kft_informer_add_index(kft_informer *inf, const char *name, kft_index_fn fn, void *ctx,
                           kft_error *err);

/*
 * Registers handlers (copied). Only before kft_informer_start (KFT_EINVAL
 * after); at most 16 sets (KFT_ELIMIT).
 */
int kft_informer_add_handlers(kft_informer *inf, const kft_informer_handlers *h, kft_error *err);

/*
 * Starts the informer's thread: list, then watch, forever, until stop.
 * Failures of the API server are retried with backoff, never returned.
 * Errors: KFT_EINVAL (already started), KFT_ENOMEM, KFT_EIO (no thread).
 */
int kft_informer_start(kft_informer *inf, kft_error *err);

/* 1 once the first list has been stored and its add events delivered. */
int kft_informer_has_synced(kft_informer *inf);

/*
 * Waits until has_synced, at most timeout_s seconds (< 0: forever).
 * Returns 0 when synced, KFT_EUNAVAILABLE on timeout or when the informer
 * was stopped first (message says which, with the last list error).
 */
int kft_informer_wait_synced(kft_informer *inf, double timeout_s, kft_error *err);

/*
 * Stops the thread (interrupting a blocked list or watch) and joins it.
 * The cache stays readable. Idempotent; NULL is ignored.
 */
void kft_informer_stop(kft_informer *inf);

/* Stops (if running) and frees everything. NULL is ignored. */
void kft_informer_free(kft_informer *inf);

/*
 * Caches obj (borrowed), an object of the informer's kind the caller read
 * or wrote (a GET, a write's answer), transformed as a listed one, so that
 * readers find it before its watch event arrives -- and, for a
 * metadata-only informer, find its body without asking the server again.
 * Taken only when the cache holds no version of it yet or holds this very
 * resourceVersion; the watch event of that resourceVersion then changes
 * nothing (and calls no handler: the caller knows of the object), and the
 * next version replaces it (as metadata, for a metadata-only informer). No
 * handler is called. Returns 0 when taken, 1 when the cache holds another
 * version (obj may be stale), KFT_EINVAL (no name or resourceVersion),
 * KFT_ENOMEM.
 */
int kft_informer_supply(kft_informer *inf, const json_t *obj);

/*
 * Looks up one object. ns is NULL or "" for cluster-scoped kinds.
 * *out is a new reference (json_decref it; do not modify).
 * Errors: KFT_ENOTFOUND; KFT_ENOMEM (it could not be decoded).
 */
int kft_informer_get(kft_informer *inf, const char *ns, const char *name, json_t **out);

/* The same by cache key ("ns/name" or "name"). */
int kft_informer_get_by_key(kft_informer *inf, const char *key, json_t **out);

/*
 * Every cached object (optionally only those in namespace ns when ns is
 * non-NULL and non-empty) as a new JSON array the caller json_decref()s;
 * its elements are the shared cached objects (do not modify). Order is
 * unspecified. Errors: KFT_ENOMEM.
 */
int kft_informer_list(kft_informer *inf, const char *ns, json_t **out);

/*
 * Objects whose index `index` has value `value`, as a new JSON array (as
 * kft_informer_list). Errors: KFT_ENOTFOUND (no index of that name),
 * KFT_ENOMEM. No match is an empty array, not an error.
 */
int kft_informer_by_index(kft_informer *inf, const char *index, const char *value, json_t **out,
                          kft_error *err);

/*
 * How many objects index `index` has under `value` (0 when none), without
 * decoding any: for callers that only need to know whether some exist.
 * Errors: KFT_ENOTFOUND (no index of that name).
 */
int kft_informer_index_count(kft_informer *inf, const char *index, const char *value, size_t *count,
                             kft_error *err);

/* Informer state for logs, metrics and tests. */
typedef struct kft_informer_stats {
	size_t objects;            /* cached now */
	uint64_t lists;            /* completed lists (1 + relists) */
	uint64_t watches;          /* watch requests opened */
	uint64_t events;           /* watch events applied (bookmarks excluded) */
	uint64_t bookmarks;        /* bookmark events seen */
	uint64_t gone;             /* 410 Gone answers that forced a relist */
	uint64_t errors;           /* list/watch failures that caused a backoff */
	char resource_version[64]; /* last resourceVersion seen ("" before the list) */
	char last_error[256];      /* last list/watch failure ("" if none) */
} kft_informer_stats;

void kft_informer_stats_get(kft_informer *inf, kft_informer_stats *st);

/* ===================================================================== */
/* Leader election                                                        */
/* ===================================================================== */

typedef struct kft_leader kft_leader;

/*
 * Upstream trainer v2.3.0's lease: name "trainer.kubeflow.org" (the
 * manifests' configuration file sets leaderElection.resourceName); an
 * empty resourceNamespace means controller-runtime's default, the
 * namespace the pod runs in (the service account's namespace file).
 */
#define KFT_LEADER_LEASE_NAME "trainer.kubeflow.org"

typedef struct kft_leader_opts {
	const char *namespace; /* the Lease's namespace (required) */
	const char *name;      /* the Lease's name (required) */
	/* The holder identity; NULL: "<hostname>_<random uuid>" as
	 * controller-runtime. Copied. */
	const char *identity;
	double lease_duration_s; /* <= 0: 15 */
	double renew_deadline_s; /* <= 0: 10 (must be < lease_duration) */
	double retry_period_s;   /* <= 0: 2 (must be < renew_deadline) */
	/* 1: on kft_leader_stop, a leader gives the Lease up (empty holder,
	 * leaseDurationSeconds 1) so a standby takes over at once. */
	int release_on_cancel;
	/* Callbacks, on the elector's thread; any may be NULL. started runs
	 * once leadership is acquired (it must return quickly: start workers
	 * on other threads); stopped runs once when leadership is lost or
	 * given up (after having been acquired) - controller-runtime exits
	 * the process then, and so should a controller; new_leader runs when
	 * the observed holder changes (identity borrowed for the call). */
	void (*on_started_leading)(void *ctx);
	void (*on_stopped_leading)(void *ctx);
	void (*on_new_leader)(void *ctx, const char *identity);
	void *ctx;
	/* Optional, recommended: the connection settings (kube.h) for a
	 * private client of the elector's own (kube may then be NULL). It is
	 * made from a copy with no retries, no rate limit and every request
	 * bounded by a third of renew_deadline, as client-go bounds each try
	 * with the renewal deadline: a hung API server then costs leadership
	 * in time instead of blocking the elector in a request. The config
	 * is only read during kft_leader_new. */
	const struct kft_kube_config *config;
} kft_leader_opts;

/*
 * Creates a stopped elector; kube is borrowed and must outlive it (unless
 * opts->config is set: then kube may be NULL). Errors: KFT_EINVAL (missing
 * namespace/name, inconsistent durations, neither kube nor config), the
 * errors of kft_kube_new for opts->config, KFT_ENOMEM.
 */
int kft_leader_new(struct kft_kube *kube, const kft_leader_opts *opts, kft_leader **out,
                   kft_error *err);

/*
 * Starts the elector's thread: try to acquire every retry_period (with
 * jitter); once leader, renew every retry_period; if renewals keep failing
 * for renew_deadline, leadership is lost. After losing leadership the
 * thread ends (as client-go's LeaderElector.Run): it does not campaign
 * again. Errors: KFT_EINVAL (already started), KFT_EIO (no thread).
 */
int kft_leader_start(kft_leader *le, kft_error *err);

/* 1 while this elector holds the lease: it acquired it and its last
 * successful renewal is less than renew_deadline old (judged at the call,
 * so it turns 0 in time even while the elector's thread is stuck in a
 * request). */
int kft_leader_is_leader(kft_leader *le);

/* The identity this elector writes as holderIdentity (owned by le). */
const char *kft_leader_identity(const kft_leader *le);

/*
 * Stops campaigning/renewing, releases the lease when release_on_cancel
 * and leading, calls on_stopped_leading if it was leading, and joins the
 * thread. Idempotent; NULL is ignored.
 */
void kft_leader_stop(kft_leader *le);

/* Stops (if running) and frees. NULL is ignored. */
void kft_leader_free(kft_leader *le);

#endif
