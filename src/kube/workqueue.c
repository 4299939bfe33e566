/*
 * workqueue.c - the rate-limited work queue controllers pull keys from.
 *
 * One hash map holds a record per key the queue knows about. A record has
 * up to four reasons to exist, kept as flags and counters:
 *   DIRTY       the key must be processed (again);
 *   PROCESSING  a worker holds it (between get and done);
 *   WAITING     it sits in the delay heap until ready_at;
 *   failures    rate-limited adds since the last forget.
 * A DIRTY key that is not PROCESSING is in the ready FIFO; a DIRTY key that
 * is PROCESSING goes to the FIFO when done() is called. That one rule gives
 * both guarantees controllers rely on: a key is queued at most once, and two
 * workers never hold the same key. A record with no reason left is freed.
 *
 * Two FIFOs: keys added with kft_workqueue_add_low wait in the second one,
 * handed out only when the first is empty. A low key added again normally
 * moves to the first FIFO; its entry left in the second is stale, counted
 * on the record (which is not freed while it has any) and skipped when it
 * comes up: a record's stale entries are always ahead of its live one.
 *
 * Delays need no timer thread: whoever takes the lock first moves the keys
 * whose time has come from the heap to the FIFO, and a blocked get() sleeps
 * only until the earliest ready_at. That keeps an idle queue at zero threads.
 *
 * Times are CLOCK_MONOTONIC seconds; the condition variable uses the same
 * clock, so wall-clock jumps neither fire nor stall delayed keys.
 */
#include "kube/kube_cache.h"

#include <errno.h>
#include <math.h> /* isfinite, isnan: macros, no libm */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cache_map.h"
#include "util/clock.h"

enum { F_DIRTY = 1, F_PROCESSING = 2, F_WAITING = 4 };

typedef struct wq_item {
	const char *key; /* the map entry's key */
	unsigned flags;
	int failures;
	unsigned char low; /* DIRTY through add_low only: its entry is in the low FIFO */
	unsigned stale;    /* its entries in the low FIFO that are no longer live */
	size_t heap_idx;
	double ready_at;                       /* when WAITING */
	double added_at;                       /* when it last became DIRTY; < 0: unset */
	double started_at;                     /* when PROCESSING */
	struct wq_item *proc_prev, *proc_next; /* the PROCESSING list */
} wq_item;

struct kft_workqueue {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	kft_workqueue_opts opts;
	kft_cache_map items;
	/* The ready FIFOs (normal, low), rings of DIRTY and not PROCESSING
	 * items, the low one with stale entries among them. */
	struct wq_ring {
		wq_item **items;
		size_t cap, head, len;
	} ready[2];
	size_t stale; /* stale entries in ready[1] */
	/* The delay heap, ordered by ready_at. */
	wq_item **heap;
	size_t heap_len, heap_cap;
	wq_item *processing; /* head of the PROCESSING list */
	int shutting_down;
	/* Token bucket state (when opts.bucket_qps > 0). */
	double tokens, tokens_at;
	/* Counters. */
	int64_t ndirty, nprocessing;
	uint64_t adds, retries;
	kft_workqueue_histogram queue_h, work_h;
};

double kft_workqueue_bucket_bound(int i)
{
	if (i < 0)
		i = 0;
	if (i >= KFT_WORKQUEUE_BUCKETS)
		i = KFT_WORKQUEUE_BUCKETS - 1;
	double b = 1e-8;
	while (i-- > 0)
		b *= 10;
	return b;
}

static void observe(kft_workqueue_histogram *h, double v)
{
	if (v < 0)
		v = 0;
	for (int i = 0; i < KFT_WORKQUEUE_BUCKETS; i++)
		if (v <= kft_workqueue_bucket_bound(i))
			h->buckets[i]++;
	h->count++;
	h->sum += v;
}

static int valid_key(const char *key)
{
	return key && key[0] && strnlen(key, KFT_CACHE_KEY_MAX) < KFT_CACHE_KEY_MAX;
}

/* ---- the ready FIFO ---------------------------------------------------- */

static int ring_push(struct wq_ring *r, wq_item *it)
{
	if (r->len == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		wq_item **n = malloc(ncap * sizeof(*n));
		if (!n)
			return KFT_ENOMEM;
		for (size_t i = 0; i < r->len; i++)
			n[i] = r->items[(r->head + i) % r->cap];
		free(r->items);
		r->items = n;
		r->cap = ncap;
		r->head = 0;
	}
	r->items[(r->head + r->len) % r->cap] = it;
	r->len++;
	return 0;
}

static wq_item *ring_pop(struct wq_ring *r)
{
	if (r->len == 0)
		return NULL;
	wq_item *it = r->items[r->head];
	r->head = (r->head + 1) % r->cap;
	r->len--;
	return it;
}

/* How many keys are ready to be handed out. */
static size_t ready_len(const kft_workqueue *q)
{
	return q->ready[0].len + q->ready[1].len - q->stale;
}

/* ---- the delay heap ----------------------------------------------------- */

static void heap_set(kft_workqueue *q, size_t i, wq_item *it)
{
	q->heap[i] = it;
	it->heap_idx = i;
}

static void heap_up(kft_workqueue *q, size_t i)
{
	wq_item *it = q->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (q->heap[p]->ready_at <= it->ready_at)
			break;
		heap_set(q, i, q->heap[p]);
		i = p;
	}
	heap_set(q, i, it);
}

static void heap_down(kft_workqueue *q, size_t i)
{
	wq_item *it = q->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->heap_len)
			break;
		if (c + 1 < q->heap_len && q->heap[c + 1]->ready_at < q->heap[c]->ready_at)
			c++;
		if (it->ready_at <= q->heap[c]->ready_at)
			break;
		heap_set(q, i, q->heap[c]);
		i = c;
	}
	heap_set(q, i, it);
}

static int heap_push(kft_workqueue *q, wq_item *it)
{
	if (q->heap_len == q->heap_cap) {
		size_t ncap = q->heap_cap ? q->heap_cap * 2 : 16;
		wq_item **n = realloc(q->heap, ncap * sizeof(*n));
		if (!n)
			return KFT_ENOMEM;
		q->heap = n;
		q->heap_cap = ncap;
	}
	q->heap[q->heap_len] = it;
	it->heap_idx = q->heap_len++;
	heap_up(q, it->heap_idx);
	return 0;
}

static void heap_remove(kft_workqueue *q, wq_item *it)
{
	size_t i = it->heap_idx;
	wq_item *last = q->heap[--q->heap_len];
	if (i == q->heap_len)
		return;
	heap_set(q, i, last);
	heap_up(q, i);
	heap_down(q, last->heap_idx);
}

/* ---- records ----------------------------------------------------------- */

static wq_item *item_get(kft_workqueue *q, const char *key, int create)
{
	if (!create)
		return kft_cache_map_get(&q->items, key);
	int created;
	kft_cache_map_entry *e = kft_cache_map_upsert(&q->items, key, &created);
	if (!e)
		return NULL;
	if (created) {
		wq_item *it = calloc(1, sizeof(*it));
		if (!it) {
			kft_cache_map_remove(&q->items, key);
			return NULL;
		}
		it->key = e->key;
		it->added_at = -1;
		e->value = it;
	}
	return e->value;
}

/* Frees the record once nothing refers to it any more. */
static void item_maybe_free(kft_workqueue *q, wq_item *it)
{
	if (it->flags || it->failures || it->stale)
		return;
	kft_cache_map_remove(&q->items, it->key);
	free(it);
}

/* Marks it DIRTY (the add path shared by add, add_low, delays and done). */
static int make_dirty(kft_workqueue *q, wq_item *it, double now, int low)
{
	if (it->flags & F_DIRTY) {
		if (low || !it->low)
			return 0;
		/* moves ahead: its low entry, if queued, goes stale */
		if (!(it->flags & F_PROCESSING)) {
			int rc = ring_push(&q->ready[0], it);
			if (rc)
				return rc;
			it->stale++;
			q->stale++;
			pthread_cond_signal(&q->cond);
		}
		it->low = 0;
		return 0;
	}
	if (!(it->flags & F_PROCESSING)) {
		int rc = ring_push(&q->ready[low ? 1 : 0], it);
		if (rc)
			return rc;
	}
	it->low = low ? 1 : 0;
	it->flags |= F_DIRTY;
	q->ndirty++;
	q->adds++;
	if (it->added_at < 0)
		it->added_at = now;
	pthread_cond_signal(&q->cond);
	return 0;
}

/* Moves keys whose delay has passed from the heap to the FIFO. */
static void promote(kft_workqueue *q, double now)
{
	while (q->heap_len && q->heap[0]->ready_at <= now) {
		wq_item *it = q->heap[0];
		heap_remove(q, it);
		it->flags &= ~(unsigned)F_WAITING;
		if (make_dirty(q, it, now, 0) != 0)
			item_maybe_free(q, it); /* out of memory: the add is lost */
	}
}

/* ---- public API -------------------------------------------------------- */

static int check_delay(double v)
{
	return isfinite(v) && v >= 0;
}

int kft_workqueue_new(const kft_workqueue_opts *opts, kft_workqueue **out, kft_error *err)
{
	kft_workqueue_opts o = {0};
	*out = NULL;
	if (opts)
		o = *opts;
	if (!check_delay(o.base_delay_s) || !check_delay(o.max_delay_s) ||
	    !check_delay(o.bucket_qps))
		return kft_error_set(err, KFT_EINVAL,
		                     "workqueue: delays and qps must be finite and not negative");
	if (o.base_delay_s <= 0)
		o.base_delay_s = 0.005;
	if (o.max_delay_s <= 0)
		o.max_delay_s = 1000;
	if (o.bucket_burst <= 0)
		o.bucket_burst = 100;
	kft_workqueue *q = calloc(1, sizeof(*q));
	if (!q)
		return kft_error_set(err, KFT_ENOMEM, "workqueue: out of memory");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&q->mu, NULL);
	q->opts = o;
	q->tokens = o.bucket_burst;
	q->tokens_at = kft_clock_mono_s();
	*out = q;
	return 0;
}

void kft_workqueue_free(kft_workqueue *q)
{
	if (!q)
		return;
	kft_cache_map_iter iter;
	for (kft_cache_map_entry *e = kft_cache_map_first(&q->items, &iter); e;
	     e = kft_cache_map_next(&q->items, &iter))
		free(e->value);
	kft_cache_map_clear(&q->items);
	free(q->ready[0].items);
	free(q->ready[1].items);
	free(q->heap);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static int add_locked(kft_workqueue *q, const char *key, double now, int low)
{
	wq_item *it = item_get(q, key, 1);
	if (!it)
		return KFT_ENOMEM;
	if (it->flags & F_WAITING) {
		heap_remove(q, it);
		it->flags &= ~(unsigned)F_WAITING;
	}
	int rc = make_dirty(q, it, now, low);
	if (rc)
		item_maybe_free(q, it);
	return rc;
}

static int add_now(kft_workqueue *q, const char *key, int low)
{
	if (!valid_key(key))
		return KFT_EINVAL;
	pthread_mutex_lock(&q->mu);
	int rc = 0;
	if (!q->shutting_down) {
		double now = kft_clock_mono_s();
		promote(q, now);
		rc = add_locked(q, key, now, low);
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int kft_workqueue_add(kft_workqueue *q, const char *key)
{
	return add_now(q, key, 0);
}

int kft_workqueue_add_low(kft_workqueue *q, const char *key)
{
	return add_now(q, key, 1);
}

/* The delay path of add_after and add_rate_limited; the lock is held. */
static int delay_locked(kft_workqueue *q, wq_item *it, double now, double delay)
{
	q->retries++;
	if (it->flags & F_DIRTY)
		return 0; /* already due: processed no later than the delay asks */
	double at = now + delay;
	if (it->flags & F_WAITING) {
		if (at < it->ready_at) {
			it->ready_at = at;
			heap_up(q, it->heap_idx);
			pthread_cond_broadcast(&q->cond);
		}
		return 0;
	}
	it->ready_at = at;
	int rc = heap_push(q, it);
	if (rc)
		return rc;
	it->flags |= F_WAITING;
	/* Sleeping getters computed their wake-up from the old heap top. */
	pthread_cond_broadcast(&q->cond);
	return 0;
}

/* Client-go's exponential per-key limiter: base * 2^n for the n-th
 * consecutive failure, capped; then the overall token bucket when enabled
 * (a reservation that may go negative, as golang.org/x/time/rate's). */
static double rate_limit_delay(kft_workqueue *q, wq_item *it, double now)
{
	/* Doubling stops at the cap, so no power is ever computed that could
	 * overflow (the library does not link libm). */
	double d = q->opts.base_delay_s;
	for (int n = it->failures; n > 0 && d < q->opts.max_delay_s; n--)
		d *= 2;
	if (d > q->opts.max_delay_s)
		d = q->opts.max_delay_s;
	if (it->failures < (1 << 30))
		it->failures++;
	if (q->opts.bucket_qps > 0) {
		double burst = q->opts.bucket_burst;
		q->tokens += (now - q->tokens_at) * q->opts.bucket_qps;
		if (q->tokens > burst)
			q->tokens = burst;
		q->tokens_at = now;
		q->tokens -= 1;
		double wait = q->tokens < 0 ? -q->tokens / q->opts.bucket_qps : 0;
		if (wait > d)
			d = wait;
	}
	return d;
}

static int add_delayed(kft_workqueue *q, const char *key, double delay, int rate_limited)
{
	if (!valid_key(key))
		return KFT_EINVAL;
	if (!rate_limited && !(delay > 0))
		return kft_workqueue_add(q, key);
	pthread_mutex_lock(&q->mu);
	int rc = 0;
	wq_item *it = NULL;
	double now = kft_clock_mono_s();
	if (q->shutting_down)
		goto out;
	promote(q, now);
	it = item_get(q, key, 1);
	if (!it) {
		rc = KFT_ENOMEM;
		goto out;
	}
	if (rate_limited)
		delay = rate_limit_delay(q, it, now);
	rc = delay > 0 ? delay_locked(q, it, now, delay) : make_dirty(q, it, now, 0);
	item_maybe_free(q, it);
out:
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int kft_workqueue_add_after(kft_workqueue *q, const char *key, double delay_s)
{
	if (isnan(delay_s))
		return KFT_EINVAL;
	return add_delayed(q, key, delay_s, 0);
}

int kft_workqueue_add_rate_limited(kft_workqueue *q, const char *key)
{
	return add_delayed(q, key, 0, 1);
}

void kft_workqueue_forget(kft_workqueue *q, const char *key)
{
	if (!valid_key(key))
		return;
	pthread_mutex_lock(&q->mu);
	wq_item *it = item_get(q, key, 0);
	if (it) {
		it->failures = 0;
		item_maybe_free(q, it);
	}
	pthread_mutex_unlock(&q->mu);
}

int kft_workqueue_num_requeues(kft_workqueue *q, const char *key)
{
	if (!valid_key(key))
		return 0;
	pthread_mutex_lock(&q->mu);
	wq_item *it = item_get(q, key, 0);
	int n = it ? it->failures : 0;
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* Drops the stale entries at the low FIFO's head. */
static void skip_stale(kft_workqueue *q)
{
	struct wq_ring *r = &q->ready[1];
	while (r->len && r->items[r->head]->stale) {
		wq_item *it = ring_pop(r);
		it->stale--;
		q->stale--;
		item_maybe_free(q, it);
	}
}

/* Hands out the head of the first FIFO that has a key (ready_len > 0): the
 * record becomes PROCESSING. */
static int take(kft_workqueue *q, double now, char **key)
{
	skip_stale(q);
	struct wq_ring *r = &q->ready[q->ready[0].len ? 0 : 1];
	wq_item *it = r->items[r->head];
	char *copy = strdup(it->key);
	if (!copy)
		return KFT_ENOMEM; /* the key stays queued */
	ring_pop(r);
	it->low = 0;
	it->flags &= ~(unsigned)F_DIRTY;
	it->flags |= F_PROCESSING;
	q->ndirty--;
	q->nprocessing++;
	observe(&q->queue_h, now - it->added_at);
	it->added_at = -1;
	it->started_at = now;
	it->proc_prev = NULL;
	it->proc_next = q->processing;
	if (q->processing)
		q->processing->proc_prev = it;
	q->processing = it;
	*key = copy;
	return 0;
}

static void abs_time(double t_mono, struct timespec *ts)
{
	double sec = (double)(time_t)t_mono; /* t_mono >= 0: truncation is floor */
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)((t_mono - sec) * 1e9);
	if (ts->tv_nsec >= 1000000000L)
		ts->tv_nsec = 999999999L;
}

/* Waits for a key until the monotonic time `deadline` (< 0: forever). */
static int get_until(kft_workqueue *q, double deadline, char **key)
{
	*key = NULL;
	pthread_mutex_lock(&q->mu);
	int rc;
	for (;;) {
		double now = kft_clock_mono_s();
		promote(q, now);
		if (ready_len(q)) {
			rc = take(q, now, key);
			break;
		}
		if (q->shutting_down) {
			rc = KFT_EUNAVAILABLE;
			break;
		}
		if (deadline >= 0 && now >= deadline) {
			rc = KFT_ENOTFOUND;
			break;
		}
		double wake = deadline;
		if (q->heap_len && (wake < 0 || q->heap[0]->ready_at < wake))
			wake = q->heap[0]->ready_at;
		if (wake < 0) {
			pthread_cond_wait(&q->cond, &q->mu);
		} else {
			struct timespec ts;
			abs_time(wake, &ts);
			pthread_cond_timedwait(&q->cond, &q->mu, &ts);
		}
	}
	/* Pass the wake-up on: another getter may be due the next key. */
	if (rc == 0 && ready_len(q))
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int kft_workqueue_get(kft_workqueue *q, char **key)
{
	return get_until(q, -1, key);
}

int kft_workqueue_get_timeout(kft_workqueue *q, double timeout_s, char **key)
{
	if (!(timeout_s >= 0))
		timeout_s = 0;
	if (timeout_s > 1e9)
		timeout_s = 1e9;
	return get_until(q, kft_clock_mono_s() + timeout_s, key);
}

void kft_workqueue_done(kft_workqueue *q, const char *key)
{
	if (!valid_key(key))
		return;
	pthread_mutex_lock(&q->mu);
	wq_item *it = item_get(q, key, 0);
	if (it && (it->flags & F_PROCESSING)) {
		double now = kft_clock_mono_s();
		observe(&q->work_h, now - it->started_at);
		if (it->proc_prev)
			it->proc_prev->proc_next = it->proc_next;
		else
			q->processing = it->proc_next;
		if (it->proc_next)
			it->proc_next->proc_prev = it->proc_prev;
		it->flags &= ~(unsigned)F_PROCESSING;
		q->nprocessing--;
		if ((it->flags & F_DIRTY) && ring_push(&q->ready[it->low], it) != 0) {
			/* Out of memory: drop the re-add rather than lose the record. */
			it->flags &= ~(unsigned)F_DIRTY;
			q->ndirty--;
		}
		if (it->flags & F_DIRTY)
			pthread_cond_signal(&q->cond);
		item_maybe_free(q, it);
	}
	pthread_mutex_unlock(&q->mu);
}

void kft_workqueue_shutdown(kft_workqueue *q)
{
	pthread_mutex_lock(&q->mu);
	if (!q->shutting_down) {
		q->shutting_down = 1;
		/* Delayed keys are dropped, as client-go's delaying queue stops
		 * its timer loop on shutdown. */
		while (q->heap_len) {
			wq_item *it = q->heap[0];
			heap_remove(q, it);
			it->flags &= ~(unsigned)F_WAITING;
			item_maybe_free(q, it);
		}
	}
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->mu);
}

int kft_workqueue_shutting_down(kft_workqueue *q)
{
	pthread_mutex_lock(&q->mu);
	int v = q->shutting_down;
	pthread_mutex_unlock(&q->mu);
	return v;
}

size_t kft_workqueue_len(kft_workqueue *q)
{
	pthread_mutex_lock(&q->mu);
	promote(q, kft_clock_mono_s());
	size_t n = ready_len(q);
	pthread_mutex_unlock(&q->mu);
	return n;
}

void kft_workqueue_stats_get(kft_workqueue *q, kft_workqueue_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&q->mu);
	double now = kft_clock_mono_s();
	promote(q, now);
	st->depth = q->ndirty;
	st->adds = q->adds;
	st->retries = q->retries;
	st->waiting = (int64_t)q->heap_len;
	st->processing = q->nprocessing;
	for (wq_item *it = q->processing; it; it = it->proc_next) {
		double age = now - it->started_at;
		st->unfinished_work_seconds += age;
		if (age > st->longest_running_seconds)
			st->longest_running_seconds = age;
	}
	st->queue_duration = q->queue_h;
	st->work_duration = q->work_h;
	pthread_mutex_unlock(&q->mu);
}
