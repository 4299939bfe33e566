/*
 * test_kube_workqueue.c - the rate-limited work queue (src/kube/workqueue.c).
 *
 * The semantics pinned here are client-go's workqueue as controller-runtime
 * drives it (k8s.io/client-go util/workqueue queue.go, delaying_queue.go,
 * default_rate_limiters.go; controller-runtime v0.24 pkg/controller/
 * priorityqueue for "retries = adds with a delay"): a key is queued once, a
 * key being processed is never handed to a second worker and is handed out
 * again after done() when re-added, rate-limited adds back off 5 ms * 2^n
 * up to a cap, forget resets the count, shutdown wakes every getter after
 * the ready keys are drained.
 *
 * Timing: the machine is shared, so tests only assert lower bounds on delays
 * ("not ready before X") and give upper bounds a wide margin.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube_cache.h"

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static kft_workqueue *new_queue(const kft_workqueue_opts *o)
{
	kft_workqueue *q = NULL;
	kft_error err;
	assert_int_equal(kft_workqueue_new(o, &q, &err), 0);
	assert_non_null(q);
	return q;
}

/* Gets a key (waiting at most 5 s) and checks it. */
static void expect_get(kft_workqueue *q, const char *want)
{
	char *k = NULL;
	assert_int_equal(kft_workqueue_get_timeout(q, 5, &k), 0);
	assert_non_null(k);
	assert_string_equal(k, want);
	free(k);
}

static void expect_nothing(kft_workqueue *q, double wait_s)
{
	char *k = NULL;
	int rc = kft_workqueue_get_timeout(q, wait_s, &k);
	if (rc == 0)
		fail_msg("unexpected key %s", k);
	assert_int_equal(rc, KFT_ENOTFOUND);
	assert_null(k);
}

/* add_low (ours; the shape of controller-runtime's priority queue, whose
 * initial-list adds wait behind later events): low keys come after every
 * normal one, in their own FIFO order; a queued key keeps its place; a low
 * key added normally moves ahead and is handed out once; its entry left
 * behind is skipped, and the record outlives it. */
static void test_low_priority(void **state)
{
	(void)state;
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add_low(q, "ns/l1"), 0);
	assert_int_equal(kft_workqueue_add_low(q, "ns/l2"), 0);
	assert_int_equal(kft_workqueue_add_low(q, "ns/l3"), 0);
	assert_int_equal(kft_workqueue_add(q, "ns/n1"), 0);
	assert_int_equal(kft_workqueue_add_low(q, "ns/n1"), 0); /* stays ahead */
	assert_int_equal(kft_workqueue_add(q, "ns/l2"), 0);     /* moves ahead */
	assert_int_equal(kft_workqueue_add(q, "ns/l2"), 0);     /* once */
	assert_int_equal(kft_workqueue_len(q), 4);
	expect_get(q, "ns/n1");
	expect_get(q, "ns/l2");
	/* l2 is processing; re-added low meanwhile, it comes back after done,
	 * low, behind l1 and l3, and its stale entry does not hand it out twice */
	assert_int_equal(kft_workqueue_add_low(q, "ns/l2"), 0);
	kft_workqueue_done(q, "ns/n1");
	kft_workqueue_done(q, "ns/l2");
	assert_int_equal(kft_workqueue_len(q), 3);
	expect_get(q, "ns/l1");
	expect_get(q, "ns/l3");
	expect_get(q, "ns/l2");
	expect_nothing(q, 0.05);
	kft_workqueue_done(q, "ns/l1");
	kft_workqueue_done(q, "ns/l3");
	kft_workqueue_done(q, "ns/l2");
	/* a normal add that comes later still goes first */
	assert_int_equal(kft_workqueue_add_low(q, "ns/l1"), 0);
	assert_int_equal(kft_workqueue_add(q, "ns/n2"), 0);
	expect_get(q, "ns/n2");
	expect_get(q, "ns/l1");
	kft_workqueue_done(q, "ns/n2");
	kft_workqueue_done(q, "ns/l1");
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.processing, 0);
	kft_workqueue_free(q);
}

static void test_dedup_and_fifo(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(kft_workqueue_add(q, "ns/b"), 0);
	assert_int_equal(kft_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(kft_workqueue_add(q, "ns/c"), 0);
	assert_int_equal(kft_workqueue_len(q), 3);
	expect_get(q, "ns/a");
	expect_get(q, "ns/b");
	expect_get(q, "ns/c");
	expect_nothing(q, 0);
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.adds, 3);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.processing, 3);
	kft_workqueue_done(q, "ns/a");
	kft_workqueue_done(q, "ns/b");
	kft_workqueue_done(q, "ns/c");
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.processing, 0);
	kft_workqueue_free(q);
}

static void test_readd_while_processing(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add(q, "k"), 0);
	expect_get(q, "k");
	/* Re-added while held: not handed out to anyone until done(). */
	assert_int_equal(kft_workqueue_add(q, "k"), 0);
	assert_int_equal(kft_workqueue_add(q, "k"), 0);
	assert_int_equal(kft_workqueue_len(q), 0);
	expect_nothing(q, 0.05);
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.depth, 1); /* dirty, as client-go counts it */
	kft_workqueue_done(q, "k");
	assert_int_equal(kft_workqueue_len(q), 1);
	expect_get(q, "k");
	kft_workqueue_done(q, "k");
	expect_nothing(q, 0);
	/* done() for a key nobody holds is ignored. */
	kft_workqueue_done(q, "k");
	kft_workqueue_done(q, "never");
	expect_nothing(q, 0);
	kft_workqueue_free(q);
}

static void test_invalid_keys(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	char big[KFT_CACHE_KEY_MAX + 8];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(kft_workqueue_add(q, NULL), KFT_EINVAL);
	assert_int_equal(kft_workqueue_add(q, ""), KFT_EINVAL);
	assert_int_equal(kft_workqueue_add(q, big), KFT_EINVAL);
	assert_int_equal(kft_workqueue_add_after(q, big, 1), KFT_EINVAL);
	assert_int_equal(kft_workqueue_add_rate_limited(q, ""), KFT_EINVAL);
	assert_int_equal(kft_workqueue_len(q), 0);

	kft_workqueue *bad = NULL;
	kft_error err;
	kft_workqueue_opts o = {.base_delay_s = -1};
	assert_int_equal(kft_workqueue_new(&o, &bad, &err), KFT_EINVAL);
	assert_null(bad);
	assert_non_null(strstr(err.message, "finite"));
	kft_workqueue_free(q);
}

/* ---- concurrency: many workers, few keys, never two at once ---------- */

#define NKEYS 4
struct conc {
	kft_workqueue *q;
	atomic_int busy[NKEYS];
	atomic_int overlap;
	atomic_int processed;
};

static void *worker(void *arg)
{
	struct conc *c = arg;
	char *k;
	while (kft_workqueue_get(c->q, &k) == 0) {
		int i = k[1] - '0';
		if (atomic_fetch_add(&c->busy[i], 1) != 0)
			atomic_fetch_add(&c->overlap, 1);
		sleep_s(0.0005);
		atomic_fetch_sub(&c->busy[i], 1);
		atomic_fetch_add(&c->processed, 1);
		kft_workqueue_done(c->q, k);
		free(k);
	}
	return NULL;
}

static void test_no_concurrent_processing(void **state)
{
	struct conc c = {.q = new_queue(NULL)};
	pthread_t w[6];
	for (int i = 0; i < 6; i++)
		assert_int_equal(pthread_create(&w[i], NULL, worker, &c), 0);
	char key[3] = "k0";
	for (int round = 0; round < 400; round++) {
		key[1] = (char)('0' + round % NKEYS);
		assert_int_equal(kft_workqueue_add(c.q, key), 0);
		if (round % 16 == 0)
			sleep_s(0.001);
	}
	/* Let the workers drain, then stop them. */
	for (int i = 0; i < 500 && (kft_workqueue_len(c.q) > 0); i++)
		sleep_s(0.01);
	kft_workqueue_shutdown(c.q);
	for (int i = 0; i < 6; i++)
		pthread_join(w[i], NULL);
	assert_int_equal(atomic_load(&c.overlap), 0);
	/* Dedup means fewer runs than adds, but every key ran at least once. */
	assert_true(atomic_load(&c.processed) >= NKEYS);
	assert_true(atomic_load(&c.processed) <= 400);
	kft_workqueue_stats st;
	kft_workqueue_stats_get(c.q, &st);
	assert_int_equal(st.processing, 0);
	assert_int_equal(st.depth, 0);
	assert_int_equal(st.work_duration.count, (uint64_t)atomic_load(&c.processed));
	kft_workqueue_free(c.q);
}

/* ---- rate limiting ----------------------------------------------------- */

/* Time from a rate-limited add to the key being handed out. */
static double rate_limited_wait(kft_workqueue *q, const char *key)
{
	double t0 = mono();
	assert_int_equal(kft_workqueue_add_rate_limited(q, key), 0);
	char *k = NULL;
	assert_int_equal(kft_workqueue_get_timeout(q, 10, &k), 0);
	double dt = mono() - t0;
	assert_string_equal(k, key);
	kft_workqueue_done(q, k);
	free(k);
	return dt;
}

static void test_backoff_sequence(void **state)
{
	/* Upstream's base (5 ms) with a small cap so the test stays short. */
	kft_workqueue_opts o = {.base_delay_s = 0.005, .max_delay_s = 0.08};
	kft_workqueue *q = new_queue(&o);
	const double want[] = {0.005, 0.01, 0.02, 0.04, 0.08, 0.08, 0.08};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(kft_workqueue_num_requeues(q, "ns/j"), (int)i);
		double dt = rate_limited_wait(q, "ns/j");
		if (dt < want[i] * 0.95)
			fail_msg("retry %zu came after %.4f s, before its %.3f s backoff", i, dt,
			         want[i]);
		assert_true(dt < want[i] + 2.0);
	}
	assert_int_equal(kft_workqueue_num_requeues(q, "ns/j"), 7);
	/* Another key has its own count. */
	assert_int_equal(kft_workqueue_num_requeues(q, "ns/other"), 0);
	kft_workqueue_forget(q, "ns/j");
	assert_int_equal(kft_workqueue_num_requeues(q, "ns/j"), 0);
	double dt = rate_limited_wait(q, "ns/j");
	assert_true(dt >= 0.005 * 0.95);
	assert_true(dt < 0.08); /* back to the base, not the cap */
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.retries, 8);
	kft_workqueue_free(q);
}

/* Fails key n times, taking it out right away each time (a plain add makes
 * a waiting key ready), so the n failures are counted without waiting. */
static void fail_n_times(kft_workqueue *q, const char *key, int n)
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(kft_workqueue_add_rate_limited(q, key), 0);
		assert_int_equal(kft_workqueue_add(q, key), 0);
		expect_get(q, key);
		kft_workqueue_done(q, key);
	}
}

static void test_backoff_cap(void **state)
{
	/* 5 ms * 2^1100 overflows a double; the cap must still hold. */
	kft_workqueue_opts o = {.max_delay_s = 0.05};
	kft_workqueue *q = new_queue(&o);
	fail_n_times(q, "x", 1100);
	assert_int_equal(kft_workqueue_num_requeues(q, "x"), 1100);
	double dt = rate_limited_wait(q, "x");
	assert_true(dt >= 0.0475);
	assert_true(dt < 3);
	kft_workqueue_free(q);

	/* Upstream's default cap (1000 s): after 40 failures the key waits. */
	q = new_queue(NULL);
	fail_n_times(q, "y", 40);
	assert_int_equal(kft_workqueue_add_rate_limited(q, "y"), 0);
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.waiting, 1);
	expect_nothing(q, 0.02);
	/* The earlier of two times wins: a 5 ms delay for a key waiting
	 * 1000 s makes it ready soon. */
	assert_int_equal(kft_workqueue_add_after(q, "y", 0.005), 0);
	expect_get(q, "y");
	kft_workqueue_done(q, "y");
	kft_workqueue_free(q);
}

static void test_token_bucket(void **state)
{
	/* client-go's DefaultControllerRateLimiter shape, shrunk: 10 qps,
	 * burst 2. The third distinct key needs a token that refills in
	 * 100 ms even though its own backoff is only 1 ms. */
	kft_workqueue_opts o = {.base_delay_s = 0.001, .bucket_qps = 10, .bucket_burst = 2};
	kft_workqueue *q = new_queue(&o);
	double t0 = mono();
	assert_int_equal(kft_workqueue_add_rate_limited(q, "a"), 0);
	assert_int_equal(kft_workqueue_add_rate_limited(q, "b"), 0);
	assert_int_equal(kft_workqueue_add_rate_limited(q, "c"), 0);
	char *k;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(kft_workqueue_get_timeout(q, 5, &k), 0);
		if (strcmp(k, "c") == 0)
			assert_true(mono() - t0 >= 0.095);
		kft_workqueue_done(q, k);
		free(k);
	}
	kft_workqueue_free(q);
}

/* ---- delays ------------------------------------------------------------- */

static void test_add_after_ordering(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	double t0 = mono();
	assert_int_equal(kft_workqueue_add_after(q, "c", 0.09), 0);
	assert_int_equal(kft_workqueue_add_after(q, "a", 0.03), 0);
	assert_int_equal(kft_workqueue_add_after(q, "b", 0.06), 0);
	assert_int_equal(kft_workqueue_len(q), 0);
	expect_get(q, "a");
	assert_true(mono() - t0 >= 0.029);
	expect_get(q, "b");
	assert_true(mono() - t0 >= 0.059);
	expect_get(q, "c");
	assert_true(mono() - t0 >= 0.089);

	/* The earlier of two delays for one key wins; only one copy comes. */
	assert_int_equal(kft_workqueue_add_after(q, "x", 100), 0);
	assert_int_equal(kft_workqueue_add_after(q, "x", 0.01), 0);
	assert_int_equal(kft_workqueue_add_after(q, "x", 50), 0);
	expect_get(q, "x");
	kft_workqueue_done(q, "x");
	expect_nothing(q, 0.05);

	/* A delay for a key already ready changes nothing. */
	assert_int_equal(kft_workqueue_add(q, "y"), 0);
	assert_int_equal(kft_workqueue_add_after(q, "y", 100), 0);
	expect_get(q, "y");
	kft_workqueue_done(q, "y");
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.waiting, 0);
	/* add_after(<= 0) is a plain add. */
	assert_int_equal(kft_workqueue_add_after(q, "z", 0), 0);
	assert_int_equal(kft_workqueue_len(q), 1);
	kft_workqueue_free(q);
}

struct getter {
	kft_workqueue *q;
	int rc;
	char *key;
	double woke;
};

static void *blocking_get(void *arg)
{
	struct getter *g = arg;
	g->rc = kft_workqueue_get(g->q, &g->key);
	g->woke = mono();
	return NULL;
}

static void test_blocked_getter_sees_new_delay(void **state)
{
	/* A getter sleeping until a far delayed key must wake for an earlier
	 * one added later. */
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add_after(q, "late", 100), 0);
	struct getter g = {.q = q};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, blocking_get, &g), 0);
	sleep_s(0.02);
	double t0 = mono();
	assert_int_equal(kft_workqueue_add_after(q, "soon", 0.03), 0);
	pthread_join(t, NULL);
	assert_int_equal(g.rc, 0);
	assert_string_equal(g.key, "soon");
	assert_true(g.woke - t0 >= 0.029);
	assert_true(g.woke - t0 < 5);
	free(g.key);
	kft_workqueue_free(q);
}

static void test_shutdown_wakes_getters(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	struct getter g[3];
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		g[i] = (struct getter){.q = q, .rc = 1};
		assert_int_equal(pthread_create(&t[i], NULL, blocking_get, &g[i]), 0);
	}
	sleep_s(0.05);
	kft_workqueue_shutdown(q);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(g[i].rc, KFT_EUNAVAILABLE);
		assert_null(g[i].key);
	}
	assert_true(kft_workqueue_shutting_down(q));
	kft_workqueue_free(q);
}

static void test_shutdown_drains_ready_keys(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add(q, "a"), 0);
	assert_int_equal(kft_workqueue_add(q, "held"), 0);
	assert_int_equal(kft_workqueue_add_after(q, "delayed", 5), 0);
	char *k;
	assert_int_equal(kft_workqueue_get(q, &k), 0);
	assert_string_equal(k, "a");
	free(k);
	expect_get(q, "held");
	assert_int_equal(kft_workqueue_add(q, "held"), 0); /* dirty while held */
	assert_int_equal(kft_workqueue_add(q, "b"), 0);
	kft_workqueue_shutdown(q);
	kft_workqueue_shutdown(q); /* idempotent */
	/* Adds after shutdown are ignored; delayed keys are dropped. */
	assert_int_equal(kft_workqueue_add(q, "c"), 0);
	assert_int_equal(kft_workqueue_add_after(q, "d", 0.001), 0);
	sleep_s(0.02);
	assert_int_equal(kft_workqueue_get(q, &k), 0);
	assert_string_equal(k, "b");
	kft_workqueue_done(q, k);
	free(k);
	kft_workqueue_done(q, "a");
	/* The key re-added while held is still processed once after done. */
	kft_workqueue_done(q, "held");
	assert_int_equal(kft_workqueue_get(q, &k), 0);
	assert_string_equal(k, "held");
	kft_workqueue_done(q, k);
	free(k);
	assert_int_equal(kft_workqueue_get(q, &k), KFT_EUNAVAILABLE);
	assert_null(k);
	kft_workqueue_free(q);
}

/* ---- metrics ------------------------------------------------------------ */

static void test_counters(void **state)
{
	kft_workqueue *q = new_queue(NULL);
	assert_int_equal(kft_workqueue_add(q, "a"), 0);
	assert_int_equal(kft_workqueue_add(q, "a"), 0); /* deduplicated: not an add */
	assert_int_equal(kft_workqueue_add(q, "b"), 0);
	assert_int_equal(kft_workqueue_add_after(q, "c", 0.001), 0);
	kft_workqueue_stats st;
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.adds, 2);
	assert_int_equal(st.depth, 2);
	assert_int_equal(st.retries, 1);
	sleep_s(0.03);
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.adds, 3); /* the delayed key became ready */
	assert_int_equal(st.depth, 3);

	expect_get(q, "a");
	expect_get(q, "b");
	sleep_s(0.03);
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.depth, 1);
	assert_int_equal(st.processing, 2);
	assert_true(st.longest_running_seconds >= 0.029);
	assert_true(st.unfinished_work_seconds >= 2 * 0.029);
	assert_true(st.unfinished_work_seconds >= st.longest_running_seconds);
	assert_int_equal(st.queue_duration.count, 2);
	assert_true(st.queue_duration.sum >= 0.06); /* both waited >= 30 ms */
	kft_workqueue_done(q, "a");
	kft_workqueue_done(q, "b");
	kft_workqueue_stats_get(q, &st);
	assert_int_equal(st.work_duration.count, 2);
	assert_true(st.work_duration.sum >= 0.06);
	assert_true(st.unfinished_work_seconds == 0);
	assert_true(st.longest_running_seconds == 0);
	/* Buckets are cumulative: each bound counts every observation at or
	 * below it. 30 ms is above the 10 ms bound and below the 100 ms one. */
	for (int i = 1; i < KFT_WORKQUEUE_BUCKETS; i++)
		assert_true(st.work_duration.buckets[i] >= st.work_duration.buckets[i - 1]);
	assert_int_equal(st.work_duration.buckets[6], 0); /* 1e-2 s */
	assert_int_equal(st.work_duration.buckets[KFT_WORKQUEUE_BUCKETS - 1], 2);
	kft_workqueue_free(q);
}

static void test_bucket_bounds(void **state)
{
	/* controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12). */
	assert_true(kft_workqueue_bucket_bound(0) > 0.99e-8 &&
	            kft_workqueue_bucket_bound(0) < 1.01e-8);
	assert_true(kft_workqueue_bucket_bound(8) > 0.99 && kft_workqueue_bucket_bound(8) < 1.01);
	assert_true(kft_workqueue_bucket_bound(11) > 999 && kft_workqueue_bucket_bound(11) < 1001);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_dedup_and_fifo),
	        cmocka_unit_test(test_low_priority),
	        cmocka_unit_test(test_readd_while_processing),
	        cmocka_unit_test(test_invalid_keys),
	        cmocka_unit_test(test_no_concurrent_processing),
	        cmocka_unit_test(test_backoff_sequence),
	        cmocka_unit_test(test_backoff_cap),
	        cmocka_unit_test(test_token_bucket),
	        cmocka_unit_test(test_add_after_ordering),
	        cmocka_unit_test(test_blocked_getter_sees_new_delay),
	        cmocka_unit_test(test_shutdown_wakes_getters),
	        cmocka_unit_test(test_shutdown_drains_ready_keys),
	        cmocka_unit_test(test_counters),
	        cmocka_unit_test(test_bucket_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
