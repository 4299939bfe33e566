/*
 * leader.c - leader election over a coordination.k8s.io/v1 Lease, as
 * client-go's leaderelection package does it (what controller-runtime runs).
 *
 * The Lease's spec is the record: holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime, leaseTransitions. Every attempt ("try") is:
 *
 *   - fast path: if we lead and our lease is still valid, PUT our renewed
 *     record on the Lease we last saw; done if the server accepts it;
 *   - otherwise GET the Lease (create it, holding it, when it does not
 *     exist); when someone else holds it and it has not expired, give up;
 *     else PUT ourselves as holder (leaseTransitions + 1 when taking over
 *     from someone else). The PUT carries the resourceVersion we read, so
 *     when two candidates race, the server lets one win and the other gets
 *     409 Conflict.
 *
 * "Expired" is judged with our own clock, never the record's timestamps:
 * a record counts as valid for leaseDurationSeconds after the moment WE
 * first saw it in that exact state. Clocks of different machines therefore
 * never need to agree.
 *
 * The thread campaigns (a try every retryPeriod, jittered by up to 1.2x as
 * wait.JitterUntil), then once leading renews every retryPeriod; if no try
 * succeeds for renewDeadline, leadership is lost and the thread ends.
 */
#include "kube/kube_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "util/random.h"
#include "util/rfc3339.h"
#include "util/clock.h"

#define JITTER_FACTOR 1.2

/* The record kept in a Lease's spec. Times are MicroTime strings. */
typedef struct record {
	char holder[256];
	long duration_s;
	long transitions;
	char acquire[40];
	char renew[40];
} record;

struct kft_leader {
	kft_kube *kube;
	kft_kube *own_kube; /* made from opts->config, or NULL */
	const kft_gvr *gvr;
	char *ns, *name, *identity;
	double lease_duration, renew_deadline, retry_period;
	int release_on_cancel;
	void (*on_started)(void *ctx);
	void (*on_stopped)(void *ctx);
	void (*on_new_leader)(void *ctx, const char *identity);
	void *ctx;

	pthread_t thread;
	int started, joined;
	atomic_int stop;
	atomic_int leading;
	_Atomic long long last_ok_ms; /* monotonic time of the last successful try */
	unsigned int seed;

	/* Owned by the thread. */
	json_t *lease;      /* the Lease as last read or written */
	record observed;    /* the record as last seen */
	char *observed_raw; /* its serialized spec, to notice changes */
	double observed_at; /* monotonic time it was first seen so */
	char reported[256]; /* the holder last passed to on_new_leader */
	int reported_any;
};

/* ---- the record <-> Lease spec ----------------------------------------- */

static void record_from_spec(const json_t *spec, record *r)
{
	memset(r, 0, sizeof(*r));
	const char *s = json_string_value(json_object_get(spec, "holderIdentity"));
	snprintf(r->holder, sizeof(r->holder), "%s", s ? s : "");
	r->duration_s = (long)json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
	r->transitions = (long)json_integer_value(json_object_get(spec, "leaseTransitions"));
	s = json_string_value(json_object_get(spec, "acquireTime"));
	snprintf(r->acquire, sizeof(r->acquire), "%s", s ? s : "");
	s = json_string_value(json_object_get(spec, "renewTime"));
	snprintf(r->renew, sizeof(r->renew), "%s", s ? s : "");
}

static json_t *spec_from_record(const record *r)
{
	return json_pack("{s:s,s:I,s:s,s:s,s:I}", "holderIdentity", r->holder,
	                 "leaseDurationSeconds", (json_int_t)r->duration_s, "acquireTime",
	                 r->acquire, "renewTime", r->renew, "leaseTransitions",
	                 (json_int_t)r->transitions);
}

static void set_observed(kft_leader *le, const record *r)
{
	le->observed = *r;
	le->observed_at = kft_clock_mono_s();
}

static int is_leader(const kft_leader *le)
{
	return strcmp(le->observed.holder, le->identity) == 0;
}

static int lease_valid(const kft_leader *le)
{
	return le->observed_at + (double)le->observed.duration_s > kft_clock_mono_s();
}

/* ---- API calls ---------------------------------------------------------- */

static int lease_create(kft_leader *le, const record *r)
{
	json_t *spec = spec_from_record(r);
	json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "coordination.k8s.io/v1",
	                        "kind", "Lease", "metadata", "namespace", le->ns, "name", le->name,
	                        "spec", spec);
	json_t *out = NULL;
	kft_error err;
	int rc = obj ? kft_kube_create(le->kube, le->gvr, obj, &out, &err) : KFT_ENOMEM;
	json_decref(obj);
	if (rc == 0) {
		json_decref(le->lease);
		le->lease = out;
	}
	return rc;
}

/* PUTs r into the Lease last seen; its resourceVersion guards the write. */
static int lease_update(kft_leader *le, const record *r)
{
	if (!le->lease)
		return KFT_EINVAL;
	json_t *obj = json_deep_copy(le->lease);
	json_t *spec = spec_from_record(r);
	json_t *out = NULL;
	kft_error err;
	int rc = KFT_ENOMEM;
	if (obj && spec && json_object_set(obj, "spec", spec) == 0)
		rc = kft_kube_update(le->kube, le->gvr, obj, &out, &err);
	json_decref(spec);
	json_decref(obj);
	if (rc == 0) {
		json_decref(le->lease);
		le->lease = out;
	}
	return rc;
}

/* ---- one attempt ---------------------------------------------------------- */

/* Reads the Lease; remembers when its record changed. Returns 0, or
 * KFT_ENOTFOUND, or another failure. */
static int observe_lease(kft_leader *le)
{
	json_t *out = NULL;
	kft_error err;
	int rc = kft_kube_get(le->kube, le->gvr, le->ns, le->name, &out, &err);
	if (rc)
		return rc;
	json_decref(le->lease);
	le->lease = out;
	json_t *spec = json_object_get(out, "spec");
	char *raw = json_dumps(spec ? spec : json_null(), JSON_COMPACT | JSON_SORT_KEYS);
	if (!raw)
		return KFT_ENOMEM;
	if (!le->observed_raw || strcmp(raw, le->observed_raw) != 0) {
		record r;
		record_from_spec(spec, &r);
		set_observed(le, &r);
		free(le->observed_raw);
		le->observed_raw = raw;
	} else {
		free(raw);
	}
	return 0;
}

static int try_once(kft_leader *le)
{
	record want = {0};
	snprintf(want.holder, sizeof(want.holder), "%s", le->identity);
	want.duration_s = (long)le->lease_duration;
	kft_rfc3339_now_micro(want.renew);
	memcpy(want.acquire, want.renew, sizeof(want.acquire));

	if (is_leader(le) && lease_valid(le)) {
		memcpy(want.acquire, le->observed.acquire, sizeof(want.acquire));
		want.transitions = le->observed.transitions;
		if (lease_update(le, &want) == 0) {
			set_observed(le, &want);
			return 1;
		}
	}
	int rc = observe_lease(le);
	if (rc == KFT_ENOTFOUND) {
		if (lease_create(le, &want) != 0)
			return 0;
		set_observed(le, &want);
		return 1;
	}
	if (rc)
		return 0;
	if (le->observed.holder[0] && lease_valid(le) && !is_leader(le))
		return 0;
	if (is_leader(le)) {
		memcpy(want.acquire, le->observed.acquire, sizeof(want.acquire));
		want.transitions = le->observed.transitions;
	} else {
		want.transitions = le->observed.transitions + 1;
	}
	if (lease_update(le, &want) != 0)
		return 0;
	set_observed(le, &want);
	return 1;
}

static int try_acquire_or_renew(kft_leader *le)
{
	if (!try_once(le))
		return 0;
	atomic_store(&le->last_ok_ms, kft_clock_mono_ms());
	return 1;
}

/* Gives the Lease up: no holder, a one-second duration, so a standby
 * takes it on its next try. */
static void release(kft_leader *le)
{
	if (observe_lease(le) != 0 || !is_leader(le))
		return;
	record r = {0};
	r.duration_s = 1;
	r.transitions = le->observed.transitions;
	kft_rfc3339_now_micro(r.renew);
	memcpy(r.acquire, r.renew, sizeof(r.acquire));
	if (lease_update(le, &r) == 0)
		set_observed(le, &r);
}

static void report_transition(kft_leader *le)
{
	if (le->reported_any && strcmp(le->reported, le->observed.holder) == 0)
		return;
	le->reported_any = 1;
	memcpy(le->reported, le->observed.holder, sizeof(le->reported));
	if (le->on_new_leader)
		le->on_new_leader(le->ctx, le->reported);
}

/* ---- the thread ---------------------------------------------------------- */

static int sleep_s(kft_leader *le, double s)
{
	return kft_sleep_ms((long)(s * 1000), &le->stop);
}

/* Campaigns until leading (1) or stopped (0). */
static int acquire(kft_leader *le)
{
	while (!atomic_load(&le->stop)) {
		int ok = try_acquire_or_renew(le);
		report_transition(le);
		if (ok)
			return 1;
		double jitter = (double)rand_r(&le->seed) / RAND_MAX * JITTER_FACTOR;
		if (sleep_s(le, le->retry_period * (1 + jitter)))
			return 0;
	}
	return 0;
}

/* One renewal round: tries every retry_period until one succeeds or
 * renew_deadline passes. Returns 1 when renewed. */
static int renew_once(kft_leader *le)
{
	double deadline = kft_clock_mono_s() + le->renew_deadline;
	for (;;) {
		if (try_acquire_or_renew(le))
			return 1;
		if (atomic_load(&le->stop) || kft_clock_mono_s() + le->retry_period > deadline)
			return 0;
		if (sleep_s(le, le->retry_period))
			return 0;
	}
}

static void *leader_main(void *arg)
{
	kft_leader *le = arg;
	if (!acquire(le))
		return NULL;
	atomic_store(&le->leading, 1);
	if (le->on_started)
		le->on_started(le->ctx);
	while (!atomic_load(&le->stop)) {
		int ok = renew_once(le);
		report_transition(le);
		if (!ok || sleep_s(le, le->retry_period))
			break;
	}
	atomic_store(&le->leading, 0);
	if (le->release_on_cancel)
		release(le);
	if (le->on_stopped)
		le->on_stopped(le->ctx);
	return NULL;
}

/* ---- public API ------------------------------------------------------------ */

/* "<hostname>_<random UUID v4>", as controller-runtime names holders. */
static char *default_identity(void)
{
	char host[256] = "localhost";
	unsigned char u[16];
	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	if (kft_random_bytes(NULL, u, sizeof(u)) != 0)
		return NULL;
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	char *id = NULL;
	if (asprintf(&id, "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	             host, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
	             u[12], u[13], u[14], u[15]) < 0)
		return NULL;
	return id;
}

/* The elector's private client: a shallow copy of cfg (kft_kube_new copies
 * what it keeps) without retries or rate limit, each request bounded by a
 * third of the renew deadline so a try ends before the deadline does. */
static int own_client(kft_leader *le, const kft_kube_config *cfg, kft_error *err)
{
	kft_kube_config c = *cfg;
	long bound = (long)(le->renew_deadline * 1000 / 3);
	c.max_retries = 0;
	c.qps = 0;
	if (c.timeout_ms <= 0 || c.timeout_ms > bound)
		c.timeout_ms = bound > 0 ? bound : 1;
	int rc = kft_kube_new(&c, &le->own_kube, err);
	if (rc == 0)
		le->kube = le->own_kube;
	return rc;
}

static int check_opts(const kft_leader_opts *o, double ld, double rd, double rp, kft_error *err)
{
	if (!o->namespace || !o->namespace[0] || !o->name || !o->name[0])
		return kft_error_set(err, KFT_EINVAL,
		                     "leader election: the lease namespace and name are required");
	if (o->identity && (!o->identity[0] || strlen(o->identity) >= 256))
		return kft_error_set(err, KFT_EINVAL,
		                     "leader election: identity must be 1 to 255 characters");
	if (ld < 1)
		return kft_error_set(err, KFT_EINVAL,
		                     "leader election: leaseDuration must be at least one second");
	if (ld <= rd)
		return kft_error_set(err, KFT_EINVAL,
		                     "leaseDuration must be greater than renewDeadline");
	if (rd <= JITTER_FACTOR * rp)
		return kft_error_set(err, KFT_EINVAL,
		                     "renewDeadline must be greater than retryPeriod*JitterFactor");
	return 0;
}

int kft_leader_new(struct kft_kube *kube, const kft_leader_opts *opts, kft_leader **out,
                   kft_error *err)
{
	*out = NULL;
	if (!opts || (!kube && !opts->config))
		return kft_error_set(err, KFT_EINVAL, "leader election: a client is required");
	double ld = opts->lease_duration_s > 0 ? opts->lease_duration_s : 15;
	double rd = opts->renew_deadline_s > 0 ? opts->renew_deadline_s : 10;
	double rp = opts->retry_period_s > 0 ? opts->retry_period_s : 2;
	int rc = check_opts(opts, ld, rd, rp, err);
	if (rc)
		return rc;
	const kft_gvr *gvr = kft_gvr_lookup("coordination.k8s.io/v1", "Lease");
	if (!gvr)
		return kft_error_set(err, KFT_EINVAL, "leader election: Lease kind unknown");
	kft_leader *le = calloc(1, sizeof(*le));
	if (!le)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	le->kube = kube;
	le->gvr = gvr;
	le->ns = strdup(opts->namespace);
	le->name = strdup(opts->name);
	le->identity = opts->identity ? strdup(opts->identity) : default_identity();
	le->lease_duration = ld;
	le->renew_deadline = rd;
	le->retry_period = rp;
	le->release_on_cancel = opts->release_on_cancel;
	le->on_started = opts->on_started_leading;
	le->on_stopped = opts->on_stopped_leading;
	le->on_new_leader = opts->on_new_leader;
	le->ctx = opts->ctx;
	le->seed = (unsigned int)time(NULL) ^ (unsigned int)(uintptr_t)le;
	if (!le->ns || !le->name || !le->identity) {
		kft_leader_free(le);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (opts->config && (rc = own_client(le, opts->config, err)) != 0) {
		kft_leader_free(le);
		return rc;
	}
	*out = le;
	return 0;
}

int kft_leader_start(kft_leader *le, kft_error *err)
{
	if (le->started)
		return kft_error_set(err, KFT_EINVAL, "leader election: already started");
	if (pthread_create(&le->thread, NULL, leader_main, le) != 0)
		return kft_error_set(err, KFT_EIO, "leader election: cannot start a thread");
	le->started = 1;
	return 0;
}

int kft_leader_is_leader(kft_leader *le)
{
	return atomic_load(&le->leading) && kft_clock_mono_ms() - atomic_load(&le->last_ok_ms) <
	                                            (long long)(le->renew_deadline * 1000);
}

const char *kft_leader_identity(const kft_leader *le)
{
	return le->identity;
}

void kft_leader_stop(kft_leader *le)
{
	if (!le || !le->started || le->joined)
		return;
	atomic_store(&le->stop, 1);
	pthread_join(le->thread, NULL);
	le->joined = 1;
}

void kft_leader_free(kft_leader *le)
{
	if (!le)
		return;
	kft_leader_stop(le);
	json_decref(le->lease);
	kft_kube_free(le->own_kube);
	free(le->observed_raw);
	free(le->ns);
	free(le->name);
	free(le->identity);
	free(le);
}
