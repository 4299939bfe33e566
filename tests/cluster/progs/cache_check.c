/*
 * cache_check.c - the informer and leader election (kube_cache.h) against
 * the real kube-apiserver of the cluster tier, driven by
 * t/72-informer-leader.sh.
 *
 * Usage (KUBECONFIG names the cluster, as `up` exports):
 *   cache_check informer NAMESPACE   informer checks; changes made with kubectl
 *   cache_check leader NAMESPACE     two electors in this process
 *   cache_check elect NAMESPACE LEASE IDENTITY
 *                                    one elector that prints "LEADING <id>"
 *                                    when it leads and runs until killed (the
 *                                    script kills processes to test failover)
 *
 * The first two print one "PASS: name" or "FAIL: name: why" line per check,
 * as t/common.sh does, and exit 0 when every check passed.
 *
 * What it pins: client-go's reflector against a real server - the list's
 * resourceVersion starts the watch, the server ends a watch at
 * timeoutSeconds after sending a bookmark and the informer re-watches from
 * the last resourceVersion without relisting; managedFields (which kubectl
 * writes on every object) is not cached. client-go's leader election with a
 * real Lease: exactly one of two candidates leads, a standby takes over
 * once the leader stops renewing (within leaseDuration plus the jittered
 * retry period), leaseTransitions counts takeovers, and ReleaseOnCancel
 * lets the standby take over on its next try.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/kube_cache.h"

#define CHECK_WHAT "cache"
#include "check_common.h"

static kft_kube *kube;
static const char *ns;

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Runs a kubectl command line in the test namespace; 0 on success. */
static int kubectl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int kubectl(const char *fmt, ...)
{
	char args[512], cmd[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "kubectl -n '%s' %s >/dev/null", ns, args);
	return system(cmd);
}

/* ---- informer ------------------------------------------------------------ */

#define EV_MAX 256
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static char events[EV_MAX][200];
static int nevents;

static void record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void record(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&ev_mu);
	if (nevents < EV_MAX) {
		va_start(ap, fmt);
		vsnprintf(events[nevents++], sizeof(events[0]), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&ev_mu);
}

static const char *label_x(const json_t *o)
{
	const char *v = json_string_value(
	        json_object_get(json_object_get(json_object_get(o, "metadata"), "labels"), "x"));
	return v ? v : "-";
}

static void h_add(void *ctx, const json_t *o, int initial)
{
	char k[KFT_CACHE_KEY_MAX];
	kft_cache_key(o, k, sizeof(k));
	record("add %s%s", k, initial ? " initial" : "");
}

static void h_update(void *ctx, const json_t *a, const json_t *b)
{
	char k[KFT_CACHE_KEY_MAX];
	kft_cache_key(b, k, sizeof(k));
	record("update %s x=%s->%s", k, label_x(a), label_x(b));
}

static void h_delete(void *ctx, const json_t *o, int unknown)
{
	char k[KFT_CACHE_KEY_MAX];
	kft_cache_key(o, k, sizeof(k));
	record("delete %s%s", k, unknown ? " unknown" : "");
}

static int seen(const char *line, double timeout_s)
{
	double end = mono() + timeout_s;
	do {
		pthread_mutex_lock(&ev_mu);
		int found = 0;
		for (int i = 0; i < nevents && !found; i++)
			found = strcmp(events[i], line) == 0;
		pthread_mutex_unlock(&ev_mu);
		if (found)
			return 1;
		sleep_ms(50);
	} while (mono() < end);
	return 0;
}

static int index_x(const json_t *o, kft_index_keys *keys, void *ctx)
{
	const char *v = label_x(o);
	return strcmp(v, "-") != 0 ? kft_index_keys_add(keys, v) : 0;
}

static size_t index_count(kft_informer *inf, const char *value)
{
	json_t *arr = NULL;
	kft_error err;
	if (kft_informer_by_index(inf, "x", value, &arr, &err) != 0)
		return (size_t)-1;
	size_t n = json_array_size(arr);
	json_decref(arr);
	return n;
}

static void check_event(const char *check, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void check_event(const char *check, const char *fmt, ...)
{
	char line[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	report(seen(line, 20), check, "no \"%s\" event within 20 s", line);
}

static void informer_checks(void)
{
	kft_error err;
	if (kubectl("create configmap pre --from-literal=k=v") != 0)
		report(0, "kubectl create configmap pre", "kubectl failed");
	kft_informer_opts o = {.gvr = kft_gvr_lookup("v1", "ConfigMap"),
	                       .namespace = ns,
	                       .watch_timeout_s = 4,
	                       .page_size = 1};
	kft_informer *inf = NULL;
	int rc = kft_informer_new(kube, &o, &inf, &err);
	report(rc == 0, "informer created", "%s", err.message);
	if (rc)
		return;
	kft_informer_handlers h = {h_add, h_update, h_delete, NULL};
	kft_informer_add_handlers(inf, &h, &err);
	kft_informer_add_index(inf, "x", index_x, NULL, &err);
	kft_informer_start(inf, &err);
	rc = kft_informer_wait_synced(inf, 30, &err);
	report(rc == 0, "informer synced", "%s", err.message);
	check_event("initial list delivers existing objects", "add %s/pre initial", ns);

	kubectl("create configmap a --from-literal=k=v");
	check_event("kubectl create seen as add", "add %s/a", ns);
	json_t *a = NULL;
	rc = kft_informer_get(inf, ns, "a", &a);
	report(rc == 0, "get from cache", "rc %d", rc);
	json_t *meta = json_object_get(a, "metadata");
	report(a && json_object_get(meta, "uid") && !json_object_get(meta, "managedFields"),
	       "cached object has uid, no managedFields", "metadata keys wrong");
	json_decref(a);

	kubectl("label configmap a x=one");
	check_event("kubectl label seen as update with old and new", "update %s/a x=-->one", ns);
	report(index_count(inf, "one") == 1, "index follows the label", "by_index x=one: %zu",
	       index_count(inf, "one"));

	/* The server ends each watch after 4 s (with a bookmark first); the
	 * informer must re-watch from the last resourceVersion, not relist. */
	sleep_ms(9000);
	kft_informer_stats st;
	kft_informer_stats_get(inf, &st);
	report(st.watches >= 2 && st.lists == 1, "re-watch after server timeout without relist",
	       "watches %llu lists %llu", (unsigned long long)st.watches,
	       (unsigned long long)st.lists);
	report(st.bookmarks >= 1, "bookmarks received", "none in 9 s of 4 s watches (%s)",
	       st.last_error);

	kubectl("label configmap a x=two --overwrite");
	check_event("update after re-watch", "update %s/a x=one->two", ns);
	report(index_count(inf, "one") == 0 && index_count(inf, "two") == 1,
	       "index moves with the label", "one %zu two %zu", index_count(inf, "one"),
	       index_count(inf, "two"));

	kubectl("delete configmap a");
	check_event("kubectl delete seen as delete", "delete %s/a", ns);
	rc = kft_informer_get(inf, ns, "a", &a);
	report(rc == KFT_ENOTFOUND, "deleted object gone from cache", "rc %d", rc);
	json_t *all = NULL;
	kft_informer_list(inf, NULL, &all);
	/* kube-root-ca.crt is published into every namespace. */
	report(json_array_size(all) >= 1, "list returns the cached objects", "%zu",
	       json_array_size(all));
	json_decref(all);
	double t0 = mono();
	kft_informer_stop(inf);
	report(mono() - t0 < 5, "stop interrupts the watch", "took %.1f s", mono() - t0);
	kft_informer_free(inf);
}

/* ---- leader election ------------------------------------------------------ */

typedef struct cand {
	kft_leader *le;
	atomic_int started, stopped;
} cand;

static void c_started(void *ctx)
{
	atomic_fetch_add(&((cand *)ctx)->started, 1);
}

static void c_stopped(void *ctx)
{
	atomic_fetch_add(&((cand *)ctx)->stopped, 1);
}

#define LEASE_S 3
#define RENEW_S 2
#define RETRY_S 0.5

static int new_cand(cand *c, const char *lease, const char *id, int release)
{
	kft_leader_opts o = {.namespace = ns,
	                     .name = lease,
	                     .identity = id,
	                     .lease_duration_s = LEASE_S,
	                     .renew_deadline_s = RENEW_S,
	                     .retry_period_s = RETRY_S,
	                     .release_on_cancel = release,
	                     .on_started_leading = c_started,
	                     .on_stopped_leading = c_stopped,
	                     .ctx = c};
	kft_error err;
	if (kft_leader_new(kube, &o, &c->le, &err) != 0 || kft_leader_start(c->le, &err) != 0) {
		report(0, "elector started", "%s", err.message);
		return -1;
	}
	return 0;
}

/* Waits for one of the candidates to lead; returns its index or -1. */
static int wait_one_leader(cand *c, int n, double timeout_s)
{
	double end = mono() + timeout_s;
	do {
		for (int i = 0; i < n; i++)
			if (c[i].le && kft_leader_is_leader(c[i].le))
				return i;
		sleep_ms(20);
	} while (mono() < end);
	return -1;
}

static json_t *get_lease(const char *name)
{
	json_t *l = NULL;
	kft_error err;
	if (kft_kube_get(kube, kft_gvr_lookup("coordination.k8s.io/v1", "Lease"), ns, name, &l,
	                 &err) != 0)
		report(0, "read the Lease", "%s", err.message);
	return l;
}

static json_int_t transitions(const json_t *l)
{
	return json_integer_value(json_object_get(json_object_get(l, "spec"), "leaseTransitions"));
}

static const char *holder(const json_t *l)
{
	const char *h =
	        json_string_value(json_object_get(json_object_get(l, "spec"), "holderIdentity"));
	return h ? h : "";
}

static void failover(int release)
{
	const char *lease = release ? "release" : "failover";
	char check[128];
	cand c[2] = {0};
	if (new_cand(&c[0], lease, "one", release) || new_cand(&c[1], lease, "two", release))
		return;
	int leader = wait_one_leader(c, 2, 30);
	snprintf(check, sizeof(check), "%s: one of two electors leads", lease);
	report(leader >= 0, check, "nobody leads after 30 s");
	if (leader < 0)
		goto out;
	sleep_ms((long)(LEASE_S * 1000 * 1.5)); /* several renewals, past one lease */
	int both = kft_leader_is_leader(c[0].le) + kft_leader_is_leader(c[1].le);
	snprintf(check, sizeof(check), "%s: exactly one leads over a lease period", lease);
	report(both == 1 && kft_leader_is_leader(c[leader].le), check, "%d leaders", both);
	json_t *l = get_lease(lease);
	json_int_t before = l ? transitions(l) : -1;
	snprintf(check, sizeof(check), "%s: the Lease names the leader", lease);
	report(l && strcmp(holder(l), kft_leader_identity(c[leader].le)) == 0, check, "holder %s",
	       l ? holder(l) : "?");
	json_decref(l);

	double t0 = mono();
	kft_leader_stop(c[leader].le);
	int other = wait_one_leader(&c[1 - leader], 1, 30);
	double took = mono() - t0;
	/* Without release the standby waits out the lease; either way it
	 * must not take longer than a lease plus a jittered retry (+ slack
	 * for the API round trips on a shared machine). */
	double bound = LEASE_S + RETRY_S * 2.2 + 3;
	snprintf(check, sizeof(check), "%s: the standby takes over", lease);
	report(other == 0 && took < bound, check, "after %.1f s (bound %.1f s)", took, bound);
	snprintf(check, sizeof(check), "%s: the old leader's stopped callback ran once", lease);
	report(atomic_load(&c[leader].stopped) == 1 && atomic_load(&c[leader].started) == 1, check,
	       "started %d stopped %d", atomic_load(&c[leader].started),
	       atomic_load(&c[leader].stopped));
	l = get_lease(lease);
	snprintf(check, sizeof(check), "%s: leaseTransitions incremented, new holder", lease);
	report(l && transitions(l) == before + 1 &&
	               strcmp(holder(l), kft_leader_identity(c[1 - leader].le)) == 0,
	       check, "transitions %lld -> %lld, holder %s", (long long)before,
	       (long long)(l ? transitions(l) : -1), l ? holder(l) : "?");
	json_decref(l);
out:
	kft_leader_free(c[0].le);
	kft_leader_free(c[1].le);
}

static volatile sig_atomic_t term;

static void on_term(int sig)
{
	term = 1;
}

/* One elector per process, for the kill test. */
static int elect(const char *lease, const char *id)
{
	cand c = {0};
	signal(SIGTERM, on_term);
	if (new_cand(&c, lease, id, 0))
		return 1;
	int said = 0;
	while (!term) {
		if (!said && kft_leader_is_leader(c.le)) {
			printf("LEADING %s\n", id);
			fflush(stdout);
			said = 1;
		}
		sleep_ms(50);
	}
	kft_leader_free(c.le);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cache_check informer|leader NAMESPACE | "
		                "cache_check elect NAMESPACE LEASE ID\n");
		return 2;
	}
	ns = argv[2];
	kft_kube_config *cfg = NULL;
	kft_error err;
	if (kft_kube_config_load(NULL, NULL, &cfg, &err) != 0 ||
	    kft_kube_new(cfg, &kube, &err) != 0) {
		printf("FAIL: cache: client from KUBECONFIG: %s\n", err.message);
		kft_kube_config_free(cfg);
		return 1;
	}
	kft_kube_config_free(cfg);
	int rc = 0;
	if (strcmp(argv[1], "informer") == 0) {
		informer_checks();
	} else if (strcmp(argv[1], "leader") == 0) {
		failover(0);
		failover(1);
	} else if (strcmp(argv[1], "elect") == 0 && argc == 5) {
		rc = elect(argv[3], argv[4]);
	} else {
		fprintf(stderr, "cache_check: unknown mode %s\n", argv[1]);
		rc = 2;
	}
	kft_kube_free(kube);
	return rc ? rc : failures ? 1 : 0;
}
