/*
 * test_kube_leader.c - leader election over a Lease (src/kube/leader.c)
 * against the in-process API server of kube_fake_api.h.
 *
 * Behaviour pinned (client-go tools/leaderelection leaderelection.go and
 * resourcelock/leaselock.go, with controller-runtime's holder identity):
 *   - the first candidate creates the Lease holding it, leaseTransitions 0;
 *   - a leader renews renewTime and keeps acquireTime;
 *   - a standby takes over only once the record has not changed for
 *     leaseDurationSeconds by its own clock, incrementing leaseTransitions;
 *   - ReleaseOnCancel writes an empty holder with leaseDurationSeconds 1;
 *   - a leader that cannot renew for renewDeadline loses leadership; a PUT
 *     on a stale resourceVersion (409) means someone else won;
 *   - validation: leaseDuration > renewDeadline > 1.2 * retryPeriod;
 *   - identity "<hostname>_<uuid>", times as MicroTime
 *     ("2006-01-02T15:04:05.000000Z").
 * Timings are shortened (2 s / 1 s / 0.2 s); waits have generous limits
 * and nothing asserts an upper bound on wall-clock time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <regex.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/kube_cache.h"
#include "kube_fake_api.h"

#define NS    "kube-system"
#define LEASE "trainer.kubeflow.org"

typedef struct cand {
	kft_leader *le;
	atomic_int started, stopped;
	pthread_mutex_t mu;
	char last_leader[256];
	int new_leader_calls;
} cand;

static void cb_started(void *ctx)
{
	atomic_fetch_add(&((cand *)ctx)->started, 1);
}

static void cb_stopped(void *ctx)
{
	atomic_fetch_add(&((cand *)ctx)->stopped, 1);
}

static void cb_new_leader(void *ctx, const char *id)
{
	cand *c = ctx;
	pthread_mutex_lock(&c->mu);
	snprintf(c->last_leader, sizeof(c->last_leader), "%s", id);
	c->new_leader_calls++;
	pthread_mutex_unlock(&c->mu);
}

typedef struct fx {
	fake_api *f;
	kft_kube *kube;
	cand c[3];
} fx;

static int setup(void **state)
{
	fx *x = calloc(1, sizeof(*x));
	x->f = fake_start();
	assert_non_null(x->f);
	x->kube = fake_client(x->f);
	assert_non_null(x->kube);
	for (int i = 0; i < 3; i++)
		pthread_mutex_init(&x->c[i].mu, NULL);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	fx *x = *state;
	for (int i = 0; i < 3; i++) {
		kft_leader_free(x->c[i].le);
		pthread_mutex_destroy(&x->c[i].mu);
	}
	kft_kube_free(x->kube);
	fake_stop(x->f);
	free(x);
	return 0;
}

static void start_cand(fx *x, int i, const char *id, int release)
{
	kft_leader_opts o = {.namespace = NS,
	                     .name = LEASE,
	                     .identity = id,
	                     .lease_duration_s = 2,
	                     .renew_deadline_s = 1,
	                     .retry_period_s = 0.2,
	                     .release_on_cancel = release,
	                     .on_started_leading = cb_started,
	                     .on_stopped_leading = cb_stopped,
	                     .on_new_leader = cb_new_leader,
	                     .ctx = &x->c[i]};
	kft_error err;
	assert_int_equal(kft_leader_new(x->kube, &o, &x->c[i].le, &err), 0);
	assert_int_equal(kft_leader_start(x->c[i].le, &err), 0);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits up to 15 s for candidate i to lead (or, with want 0, to stop). */
static void wait_leading(fx *x, int i, int want)
{
	for (int n = 0; n < 1500; n++) {
		if (kft_leader_is_leader(x->c[i].le) == want)
			return;
		sleep_ms(10);
	}
	fail_msg("candidate %d: is_leader never became %d", i, want);
}

/* A copy of the stored Lease. */
static json_t *lease(fx *x)
{
	pthread_mutex_lock(&x->f->mu);
	json_t *l = json_deep_copy(json_object_get(x->f->leases, NS "/" LEASE));
	pthread_mutex_unlock(&x->f->mu);
	assert_non_null(l);
	return l;
}

static const char *spec_str(const json_t *l, const char *k)
{
	return json_string_value(json_object_get(json_object_get(l, "spec"), k));
}

static json_int_t spec_int(const json_t *l, const char *k)
{
	return json_integer_value(json_object_get(json_object_get(l, "spec"), k));
}

static void assert_micro_time(const char *s)
{
	regex_t re;
	assert_non_null(s);
	assert_int_equal(
	        regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$",
	                REG_EXTENDED | REG_NOSUB),
	        0);
	int rc = regexec(&re, s, 0, NULL, 0);
	regfree(&re);
	if (rc != 0)
		fail_msg("not a MicroTime: %s", s);
}

static void test_acquire_and_renew(void **state)
{
	fx *x = *state;
	start_cand(x, 0, "a", 0);
	wait_leading(x, 0, 1);
	assert_int_equal(atomic_load(&x->c[0].started), 1);
	json_t *l1 = lease(x);
	assert_string_equal(json_string_value(json_object_get(l1, "kind")), "Lease");
	assert_string_equal(spec_str(l1, "holderIdentity"), "a");
	assert_int_equal(spec_int(l1, "leaseDurationSeconds"), 2);
	assert_int_equal(spec_int(l1, "leaseTransitions"), 0);
	assert_micro_time(spec_str(l1, "acquireTime"));
	assert_micro_time(spec_str(l1, "renewTime"));
	assert_int_equal(fake_count(x->f, &x->f->lease_posts), 1);
	/* Renewals move renewTime and keep acquireTime. */
	json_t *l2 = NULL;
	for (int n = 0; n < 500; n++) {
		json_decref(l2);
		l2 = lease(x);
		if (strcmp(spec_str(l2, "renewTime") ?: "", spec_str(l1, "renewTime") ?: "") != 0)
			break;
		sleep_ms(10);
	}
	assert_string_equal(spec_str(l2, "acquireTime"), spec_str(l1, "acquireTime"));
	assert_string_not_equal(spec_str(l2, "renewTime"), spec_str(l1, "renewTime"));
	assert_string_equal(spec_str(l2, "holderIdentity"), "a");
	json_decref(l1);
	json_decref(l2);
	pthread_mutex_lock(&x->c[0].mu);
	assert_string_equal(x->c[0].last_leader, "a");
	assert_int_equal(x->c[0].new_leader_calls, 1);
	pthread_mutex_unlock(&x->c[0].mu);
	kft_leader_stop(x->c[0].le);
	assert_int_equal(kft_leader_is_leader(x->c[0].le), 0);
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
	kft_leader_stop(x->c[0].le); /* idempotent */
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
}

static void test_failover(void **state)
{
	fx *x = *state;
	start_cand(x, 0, "a", 0);
	wait_leading(x, 0, 1);
	start_cand(x, 1, "b", 0);
	/* b sees a as leader and stays a standby while a renews. */
	for (int n = 0; n < 500; n++) {
		pthread_mutex_lock(&x->c[1].mu);
		int seen = x->c[1].new_leader_calls;
		pthread_mutex_unlock(&x->c[1].mu);
		if (seen)
			break;
		sleep_ms(10);
	}
	sleep_ms(2500); /* longer than the lease: a keeps it by renewing */
	assert_int_equal(kft_leader_is_leader(x->c[1].le), 0);
	assert_int_equal(atomic_load(&x->c[1].started), 0);
	pthread_mutex_lock(&x->c[1].mu);
	assert_string_equal(x->c[1].last_leader, "a");
	pthread_mutex_unlock(&x->c[1].mu);
	/* a goes away without releasing: b waits out the lease, then takes
	 * over with one more transition. */
	kft_leader_stop(x->c[0].le);
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
	wait_leading(x, 1, 1);
	json_t *l = lease(x);
	assert_string_equal(spec_str(l, "holderIdentity"), "b");
	assert_int_equal(spec_int(l, "leaseTransitions"), 1);
	json_decref(l);
	pthread_mutex_lock(&x->c[1].mu);
	assert_string_equal(x->c[1].last_leader, "b");
	pthread_mutex_unlock(&x->c[1].mu);
}

static void test_release_on_cancel(void **state)
{
	fx *x = *state;
	start_cand(x, 0, "a", 1);
	wait_leading(x, 0, 1);
	kft_leader_stop(x->c[0].le);
	json_t *l = lease(x);
	assert_string_equal(spec_str(l, "holderIdentity"), "");
	assert_int_equal(spec_int(l, "leaseDurationSeconds"), 1);
	assert_int_equal(spec_int(l, "leaseTransitions"), 0);
	json_decref(l);
	/* An empty holder is free at once. */
	start_cand(x, 1, "b", 1);
	wait_leading(x, 1, 1);
	l = lease(x);
	assert_string_equal(spec_str(l, "holderIdentity"), "b");
	assert_int_equal(spec_int(l, "leaseTransitions"), 1);
	json_decref(l);
}

static void test_lost_when_renewals_fail(void **state)
{
	fx *x = *state;
	start_cand(x, 0, "a", 0);
	wait_leading(x, 0, 1);
	pthread_mutex_lock(&x->f->mu);
	x->f->lease_fail_code = 500;
	pthread_mutex_unlock(&x->f->mu);
	wait_leading(x, 0, 0);
	for (int n = 0; n < 500 && atomic_load(&x->c[0].stopped) == 0; n++)
		sleep_ms(10);
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
	/* The thread has ended: it does not campaign again. */
	pthread_mutex_lock(&x->f->mu);
	x->f->lease_fail_code = 0;
	pthread_mutex_unlock(&x->f->mu);
	sleep_ms(600);
	assert_int_equal(kft_leader_is_leader(x->c[0].le), 0);
	assert_int_equal(atomic_load(&x->c[0].started), 1);
}

static void test_conflict_means_someone_else_won(void **state)
{
	fx *x = *state;
	start_cand(x, 0, "a", 0);
	wait_leading(x, 0, 1);
	/* Another writer takes the Lease behind a's back (new RV). */
	pthread_mutex_lock(&x->f->mu);
	json_t *l = json_object_get(x->f->leases, NS "/" LEASE);
	json_object_set_new(json_object_get(l, "spec"), "holderIdentity", json_string("intruder"));
	x->f->rv++;
	fake_set_rv(l, x->f->rv);
	pthread_mutex_unlock(&x->f->mu);
	wait_leading(x, 0, 0);
	assert_true(fake_count(x->f, &x->f->conflicts) >= 1);
	l = lease(x);
	assert_string_equal(spec_str(l, "holderIdentity"), "intruder");
	json_decref(l);
	for (int n = 0; n < 500 && atomic_load(&x->c[0].stopped) == 0; n++)
		sleep_ms(10);
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_hung_server_costs_leadership(void **state)
{
	/* client-go bounds each try by the renew deadline: a leader whose
	 * API server stops answering must stop calling itself leader before
	 * its lease (2 s) could have expired for anyone else. With a private
	 * client (opts.config) the thread is not stuck either: its requests
	 * time out and it reports the loss. */
	fx *x = *state;
	kft_kube_config *cfg = fake_config(x->f);
	kft_leader_opts o = {.namespace = NS,
	                     .name = LEASE,
	                     .identity = "a",
	                     .lease_duration_s = 2,
	                     .renew_deadline_s = 1,
	                     .retry_period_s = 0.2,
	                     .on_started_leading = cb_started,
	                     .on_stopped_leading = cb_stopped,
	                     .ctx = &x->c[0],
	                     .config = cfg};
	kft_error err;
	assert_int_equal(kft_leader_new(NULL, &o, &x->c[0].le, &err), 0);
	kft_kube_config_free(cfg); /* read only during kft_leader_new */
	assert_int_equal(kft_leader_start(x->c[0].le, &err), 0);
	wait_leading(x, 0, 1);
	pthread_mutex_lock(&x->f->mu);
	x->f->lease_delay_ms = 10000;
	pthread_mutex_unlock(&x->f->mu);
	double t0 = mono();
	while (kft_leader_is_leader(x->c[0].le) && mono() - t0 < 15)
		sleep_ms(5);
	double took = mono() - t0;
	if (took >= 2.0)
		fail_msg("still leader %.2f s after the server hung (lease is 2 s)", took);
	for (int n = 0; n < 1000 && atomic_load(&x->c[0].stopped) == 0; n++)
		sleep_ms(10);
	assert_int_equal(atomic_load(&x->c[0].stopped), 1);
	pthread_mutex_lock(&x->f->mu);
	x->f->lease_delay_ms = 0;
	pthread_mutex_unlock(&x->f->mu);
}

static void test_two_start_together(void **state)
{
	fx *x = *state;
	/* Three candidates race for a missing Lease: exactly one wins. */
	start_cand(x, 0, "a", 0);
	start_cand(x, 1, "b", 0);
	start_cand(x, 2, "c", 0);
	int leaders = 0;
	for (int n = 0; n < 1500 && leaders == 0; n++) {
		leaders = kft_leader_is_leader(x->c[0].le) + kft_leader_is_leader(x->c[1].le) +
		          kft_leader_is_leader(x->c[2].le);
		sleep_ms(10);
	}
	sleep_ms(1000);
	leaders = kft_leader_is_leader(x->c[0].le) + kft_leader_is_leader(x->c[1].le) +
	          kft_leader_is_leader(x->c[2].le);
	assert_int_equal(leaders, 1);
	json_t *l = lease(x);
	int holder = -1;
	for (int i = 0; i < 3; i++)
		if (kft_leader_is_leader(x->c[i].le))
			holder = i;
	assert_string_equal(spec_str(l, "holderIdentity"), kft_leader_identity(x->c[holder].le));
	assert_int_equal(spec_int(l, "leaseTransitions"), 0);
	json_decref(l);
}

static void test_options(void **state)
{
	fx *x = *state;
	kft_leader *le = NULL;
	kft_error err;
	kft_leader_opts o = {.namespace = NS, .name = LEASE};
	assert_int_equal(kft_leader_new(x->kube, &o, &le, &err), 0);
	/* controller-runtime's identity: hostname, '_', a random UUID. */
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	const char *id = kft_leader_identity(le);
	assert_int_equal(strncmp(id, host, strlen(host)), 0);
	assert_int_equal(id[strlen(host)], '_');
	regex_t re;
	assert_int_equal(
	        regcomp(&re,
	                "_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
	                REG_EXTENDED | REG_NOSUB),
	        0);
	assert_int_equal(regexec(&re, id, 0, NULL, 0), 0);
	regfree(&re);
	kft_leader *le2 = NULL;
	assert_int_equal(kft_leader_new(x->kube, &o, &le2, &err), 0);
	assert_string_not_equal(kft_leader_identity(le2), id);
	kft_leader_free(le2);
	kft_leader_free(le); /* never started */

	kft_leader_opts bad = o;
	bad.renew_deadline_s = 20; /* > the 15 s default lease */
	assert_int_equal(kft_leader_new(x->kube, &bad, &le, &err), KFT_EINVAL);
	assert_string_equal(err.message, "leaseDuration must be greater than renewDeadline");
	bad = o;
	bad.retry_period_s = 9; /* 1.2 * 9 > 10 */
	assert_int_equal(kft_leader_new(x->kube, &bad, &le, &err), KFT_EINVAL);
	assert_string_equal(err.message,
	                    "renewDeadline must be greater than retryPeriod*JitterFactor");
	bad = o;
	bad.namespace = NULL;
	assert_int_equal(kft_leader_new(x->kube, &bad, &le, &err), KFT_EINVAL);
	assert_null(le);
	assert_int_equal(kft_leader_new(NULL, &o, &le, &err),
	                 KFT_EINVAL); /* no client, no config */
	assert_string_equal(KFT_LEADER_LEASE_NAME, "trainer.kubeflow.org");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_acquire_and_renew),
	        T(test_failover),
	        T(test_release_on_cancel),
	        T(test_lost_when_renewals_fail),
	        T(test_conflict_means_someone_else_won),
	        T(test_hung_server_costs_leadership),
	        T(test_two_start_together),
	        T(test_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
