/*
 * events.c - recording core/v1 Events about objects, as client-go's recorder
 * writes them.
 *
 * A controller reports the same thing about the same object again and again
 * (every retry of a failing reconcile). client-go keeps one Event for such
 * exact repeats and bumps its count; we do the same with a per-client cache
 * keyed by everything that makes two events "the same" (source, object
 * reference, type, reason, message). The cache is a fixed array searched by a
 * 64-bit hash: at 4096 entries a linear scan of hashes costs microseconds,
 * far less than the HTTP call it saves, and needs no pointer juggling. When
 * full, the least recently used entry goes.
 *
 * The lock covers the cache only, never an HTTP call: two threads recording
 * the same new event at once may both create one, which is harmless.
 *
 * events.k8s.io/v1 Events (kft_kube_event_v1, what client-go's
 * tools/events recorder writes) share the cache under keys of their own.
 * Their repeats follow that recorder, not the core one: the second
 * occurrence turns the Event into a series (count 2), later ones only
 * count in memory, and kft_kube_events_flush writes the count when the
 * series goes quiet for 6 minutes or every 30 minutes while it goes on.
 */
#include "kube/kube_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube_cache.h"
#include "util/random.h"
#include "util/strbuf.h"
#include "util/rfc3339.h"
#include "util/utf8.h"

#define EVENT_CACHE_MAX 4096

typedef struct ev_entry {
	uint64_t hash;
	char *key;
	char *name; /* the Event object's name */
	char first[32];
	long long count;
	unsigned long long used; /* LRU clock */
	/* events.k8s.io/v1 entries only: the Event as first created (its
	 * series is what we last sent), when it was last observed and when its
	 * series was last written (CLOCK_REALTIME seconds). */
	json_t *obj;
	double observed, sent;
	long long sent_count; /* the count last written */
} ev_entry;

struct kft_event_cache {
	ev_entry e[EVENT_CACHE_MAX];
	int n;
	unsigned long long clock;
};

static void cache_free(struct kft_event_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		free(c->e[i].key);
		free(c->e[i].name);
		json_decref(c->e[i].obj);
	}
	free(c);
}

/* The client's event cache, made on first use (events_mu held); the client
 * frees it through the destructor it is handed with it, so the client's
 * code needs nothing of this file. */
static void cache_of(kft_kube *k)
{
	if (k->events)
		return;
	k->events = calloc(1, sizeof(*k->events));
	k->events_free = cache_free;
}

long long kft_kube_now(char *buf, size_t n)
{
	struct timespec ts;
	char when[KFT_RFC3339_MAX];
	clock_gettime(CLOCK_REALTIME, &ts);
	kft_rfc3339_from_timespec(&ts, when, NULL);
	snprintf(buf, n, "%s", when);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* A DNS-1123 subdomain, as the API server requires of an Event's name. */
static int dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < n))
			return 0;
	}
	return 1;
}

/* "<name>.<hex nanoseconds>", or a random UUID when that is not a valid name,
 * as client-go does. */
static char *event_name(const char *obj_name, long long nanos)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s.%llx", obj_name, (unsigned long long)nanos);
	if (!b.failed && dns_subdomain(b.buf))
		return kft_strbuf_detach(&b);
	kft_strbuf_free(&b);
	unsigned char r[16];
	if (kft_random_bytes(NULL, r, sizeof(r)) != 0)
		return NULL;
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	char *u = malloc(37);
	if (u)
		snprintf(u, 37,
		         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		         r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
		         r[12], r[13], r[14], r[15]);
	return u;
}

/* What the event is about, as an ObjectReference. */
typedef struct ref {
	const char *api_version, *kind, *ns, *name, *uid, *rv;
} ref;

static int read_ref(const json_t *obj, ref *r, kft_error *err)
{
	json_t *md = json_object_get(obj, "metadata");
	r->api_version = json_string_value(json_object_get(obj, "apiVersion"));
	r->kind = json_string_value(json_object_get(obj, "kind"));
	r->name = json_string_value(json_object_get(md, "name"));
	r->ns = json_string_value(json_object_get(md, "namespace"));
	r->uid = json_string_value(json_object_get(md, "uid"));
	r->rv = json_string_value(json_object_get(md, "resourceVersion"));
	if (!r->kind || !*r->kind || !r->name || !*r->name)
		return kft_error_set(err, KFT_EINVAL,
		                     "event: the involved object needs a kind and metadata.name");
	return 0;
}

static json_t *ref_json(const ref *r)
{
	json_t *o = json_pack("{s:s, s:s}", "kind", r->kind, "name", r->name);
	const char *keys[] = {"apiVersion", "namespace", "uid", "resourceVersion"};
	const char *vals[] = {r->api_version, r->ns, r->uid, r->rv};
	for (int i = 0; o && i < 4; i++)
		if (vals[i] && *vals[i])
			json_object_set_new(o, keys[i], json_string(vals[i]));
	return o;
}

static char *cache_key(const ref *r, const char *type, const char *reason, const char *message,
                       const char *component)
{
	kft_strbuf b;
	const char *parts[] = {component,      r->kind, r->ns,  r->name, r->uid,
	                       r->api_version, type,    reason, message};
	kft_strbuf_init(&b);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		kft_strbuf_puts(&b, parts[i] ? parts[i] : "");
		kft_strbuf_putc(&b, '\x1f');
	}
	return kft_strbuf_detach(&b);
}

/* Looks key up; on a hit copies the entry's name and first timestamp, bumps
 * its count and returns the new count; 0 on a miss. */
static long long cache_hit(kft_kube *k, const char *key, char **name, char *first)
{
	long long count = 0;
	uint64_t h = fnv1a(key);
	pthread_mutex_lock(&k->events_mu);
	struct kft_event_cache *c = k->events;
	for (int i = 0; c && i < c->n; i++) {
		ev_entry *e = &c->e[i];
		if (e->hash != h || strcmp(e->key, key) != 0)
			continue;
		*name = strdup(e->name);
		if (*name) {
			memcpy(first, e->first, sizeof(e->first));
			count = ++e->count;
			e->used = ++c->clock;
		}
		break;
	}
	pthread_mutex_unlock(&k->events_mu);
	return count;
}

static ev_entry *cache_slot(struct kft_event_cache *c, uint64_t h, const char *key)
{
	int lru = 0;
	for (int i = 0; i < c->n; i++) {
		if (c->e[i].hash == h && strcmp(c->e[i].key, key) == 0)
			return &c->e[i];
		if (c->e[i].used < c->e[lru].used)
			lru = i;
	}
	if (c->n < EVENT_CACHE_MAX)
		return &c->e[c->n++];
	return &c->e[lru];
}

/* Remembers that key's Event is `name`, with `count` and `first`. */
static void cache_store(kft_kube *k, const char *key, const char *name, const char *first,
                        long long count)
{
	char *kc = strdup(key), *nc = strdup(name);
	uint64_t h = fnv1a(key);
	pthread_mutex_lock(&k->events_mu);
	cache_of(k);
	if (k->events && kc && nc) {
		ev_entry *e = cache_slot(k->events, h, key);
		free(e->key);
		free(e->name);
		json_decref(e->obj);
		e->obj = NULL;
		e->hash = h;
		e->key = kc;
		e->name = nc;
		snprintf(e->first, sizeof(e->first), "%s", first);
		e->count = count;
		e->used = ++k->events->clock;
		kc = nc = NULL;
	}
	pthread_mutex_unlock(&k->events_mu);
	free(kc);
	free(nc);
}

static const kft_gvr *event_gvr(void)
{
	return kft_gvr_lookup("v1", "Event");
}

static int create_event(kft_kube *k, const ref *r, const char *ns, const char *name,
                        const char *type, const char *reason, const char *message,
                        const char *component, const char *first, const char *now, long long count,
                        kft_error *err)
{
	json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:s, s:I, s:s, "
	                       "s:{s:s}, s:s}",
	                       "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
	                       "namespace", ns, "involvedObject", ref_json(r), "reason", reason,
	                       "message", message, "firstTimestamp", first, "lastTimestamp", now,
	                       "count", (json_int_t)count, "type", type, "source", "component",
	                       component, "reportingComponent", component);
	if (!ev)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_create(k, event_gvr(), ev, NULL, err);
	json_decref(ev);
	return rc;
}

static int bump_event(kft_kube *k, const char *ns, const char *name, const char *message,
                      const char *now, long long count, kft_error *err)
{
	json_t *p = json_pack("{s:I, s:s, s:s}", "count", (json_int_t)count, "lastTimestamp", now,
	                      "message", message);
	if (!p)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_patch(k, event_gvr(), ns, name, KFT_PATCH_MERGE, p, NULL, NULL, err);
	json_decref(p);
	return rc;
}

static int check_args(const char *type, const char *reason, const char *component, kft_error *err)
{
	if (!type || (strcmp(type, "Normal") != 0 && strcmp(type, "Warning") != 0))
		return kft_error_set(err, KFT_EINVAL,
		                     "event: type must be Normal or Warning, not "
		                     "\"%s\"",
		                     type ? type : "");
	if (!reason || !*reason)
		return kft_error_set(err, KFT_EINVAL, "event: a reason is required");
	if (!component || !*component)
		return kft_error_set(err, KFT_EINVAL, "event: a component is required");
	return 0;
}

/* Records an event whose key was seen before: patch it, or create it again
 * under the same name when it has gone. */
static int record_repeat(kft_kube *k, const ref *r, const char *ns, const char *name,
                         long long count, const char *first, const char *const *what,
                         kft_error *err)
{
	char now[32];
	kft_kube_now(now, sizeof(now));
	int rc = bump_event(k, ns, name, what[2], now, count, err);
	if (rc == KFT_ENOTFOUND)
		rc = create_event(k, r, ns, name, what[0], what[1], what[2], what[3], first, now,
		                  count, err);
	return rc;
}

int kft_kube_event(kft_kube *k, const json_t *involved, const char *type, const char *reason,
                   const char *message, const char *component, kft_error *err)
{
	ref r;
	int rc = check_args(type, reason, component, err);
	if (!rc)
		rc = read_ref(involved, &r, err);
	if (rc)
		return rc;
	message = message ? message : "";
	const char *ns = r.ns && *r.ns ? r.ns : "default";
	const char *what[] = {type, reason, message, component};
	char *key = cache_key(&r, type, reason, message, component), *name = NULL;
	char first[32], now[32];
	if (!key)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	long long count = cache_hit(k, key, &name, first);
	if (count > 0) {
		rc = record_repeat(k, &r, ns, name, count, first, what, err);
	} else {
		long long nanos = kft_kube_now(now, sizeof(now));
		name = event_name(r.name, nanos);
		rc = name ? create_event(k, &r, ns, name, type, reason, message, component, now,
		                         now, 1, err)
		          : kft_error_set(err, KFT_ENOMEM, "out of memory");
		if (rc == 0)
			cache_store(k, key, name, now, 1);
	}
	free(key);
	free(name);
	return rc;
}

/* ---- events.k8s.io/v1
 * ------------------------------------------------------------ */

#define V1_FINISH_S     360.0  /* a series quiet this long is finished (client-go: 6 min) */
#define V1_REFRESH_S    1800.0 /* a running series is rewritten this often (30 min) */
#define V1_NOTE_MAX     1024   /* the API server rejects longer notes */
#define V1_INSTANCE_MAX 128    /* ... and longer reportingInstance values */

static double real_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const kft_gvr *event_v1_gvr(void)
{
	return kft_gvr_lookup("events.k8s.io/v1", "Event");
}

static int check_v1(const kft_event_v1 *ev, kft_error *err)
{
	int rc = check_args(ev->type, ev->reason, ev->controller, err);
	if (rc)
		return rc;
	if (!ev->action || !*ev->action)
		return kft_error_set(err, KFT_EINVAL, "event: an action is required");
	if (strlen(ev->action) > 128 || strlen(ev->reason) > 128)
		return kft_error_set(err, KFT_EINVAL,
		                     "event: action and reason can have at most 128 characters");
	return 0;
}

/* "<controller>-<hostname>", as client-go names the reporting instance. */
static void default_instance(const char *controller, char *buf, size_t size)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	snprintf(buf, size, "%s-%s", controller, host);
}

static char *v1_key(const ref *reg, const ref *rel, const kft_event_v1 *ev, const char *instance)
{
	kft_strbuf b;
	const char *parts[] = {"events.k8s.io/v1",
	                       ev->type,
	                       ev->action,
	                       ev->reason,
	                       ev->controller,
	                       instance,
	                       reg->api_version,
	                       reg->kind,
	                       reg->ns,
	                       reg->name,
	                       reg->uid,
	                       reg->rv,
	                       rel ? rel->api_version : NULL,
	                       rel ? rel->kind : NULL,
	                       rel ? rel->ns : NULL,
	                       rel ? rel->name : NULL,
	                       rel ? rel->uid : NULL,
	                       rel ? rel->rv : NULL};
	kft_strbuf_init(&b);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		kft_strbuf_puts(&b, parts[i] ? parts[i] : "");
		kft_strbuf_putc(&b, '\x1f');
	}
	return kft_strbuf_detach(&b);
}

/* The Event object for a first occurrence. */
static json_t *v1_object(const ref *reg, const ref *rel, const kft_event_v1 *ev,
                         const char *instance, const char *name, const char *when)
{
	const char *note = ev->note ? ev->note : "";
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:o, s:s%, s:s}",
	                      "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name",
	                      name, "namespace", reg->ns && *reg->ns ? reg->ns : "default",
	                      "eventTime", when, "reportingController", ev->controller,
	                      "reportingInstance", instance, "action", ev->action, "reason",
	                      ev->reason, "regarding", ref_json(reg), "note", note,
	                      kft_utf8_cut(note, V1_NOTE_MAX), "type", ev->type);
	if (o && rel && json_object_set_new(o, "related", ref_json(rel)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static const char *obj_meta(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* Writes a series' count: a strategic merge patch of `series` (as client-go
 * sends it), or the whole Event when it has gone meanwhile. */
static int v1_send_series(kft_kube *k, const json_t *obj, kft_error *err)
{
	json_t *p = json_pack("{s:O}", "series", json_object_get(obj, "series"));
	if (!p)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_patch(k, event_v1_gvr(), obj_meta(obj, "namespace"),
	                        obj_meta(obj, "name"), KFT_PATCH_STRATEGIC, p, NULL, NULL, err);
	json_decref(p);
	if (rc == KFT_ENOTFOUND)
		rc = kft_kube_create(k, event_v1_gvr(), obj, NULL, err);
	return rc;
}

static int set_series(json_t *obj, long long count, double at)
{
	char when[40];
	if (kft_rfc3339_micro(at, when, sizeof(when)) != 0)
		return -1;
	return json_object_set_new(
	        obj, "series",
	        json_pack("{s:I, s:s}", "count", (json_int_t)count, "lastObservedTime", when));
}

/* A repeat of a cached event. Returns 1 and *send (a copy to write, or NULL
 * when only the count moved) when key is cached and still current, else 0. */
static int v1_repeat(kft_kube *k, const char *key, double now, json_t **send)
{
	int hit = 0;
	uint64_t h = fnv1a(key);
	*send = NULL;
	pthread_mutex_lock(&k->events_mu);
	struct kft_event_cache *c = k->events;
	for (int i = 0; c && i < c->n; i++) {
		ev_entry *e = &c->e[i];
		if (e->hash != h || !e->obj || strcmp(e->key, key) != 0)
			continue;
		/* A finished series (or a lone event past the same age) is
		 * forgotten, and the next occurrence starts a new Event. */
		if (now - e->observed >= V1_FINISH_S)
			break;
		hit = 1;
		e->count++;
		e->observed = now;
		e->used = ++c->clock;
		if (e->count == 2 && set_series(e->obj, 2, now) == 0) {
			e->sent = now;
			e->sent_count = 2;
			*send = json_deep_copy(e->obj);
		}
		break;
	}
	pthread_mutex_unlock(&k->events_mu);
	return hit;
}

static void v1_store(kft_kube *k, const char *key, const json_t *obj, double now)
{
	char *kc = strdup(key), *nc = strdup(obj_meta(obj, "name"));
	json_t *oc = json_deep_copy(obj);
	uint64_t h = fnv1a(key);
	pthread_mutex_lock(&k->events_mu);
	cache_of(k);
	if (k->events && kc && nc && oc) {
		ev_entry *e = cache_slot(k->events, h, key);
		free(e->key);
		free(e->name);
		json_decref(e->obj);
		*e = (ev_entry){.hash = h,
		                .key = kc,
		                .name = nc,
		                .count = 1,
		                .obj = oc,
		                .observed = now,
		                .sent = now,
		                .sent_count = 1,
		                .used = ++k->events->clock};
		kc = nc = NULL;
		oc = NULL;
	}
	pthread_mutex_unlock(&k->events_mu);
	free(kc);
	free(nc);
	json_decref(oc);
}

static int v1_first(kft_kube *k, const char *key, const ref *reg, const ref *rel,
                    const kft_event_v1 *ev, const char *instance, double now, kft_error *err)
{
	char when[40];
	if (kft_rfc3339_micro(now, when, sizeof(when)) != 0)
		return kft_error_set(err, KFT_EINVAL, "event: the clock is out of range");
	char *name = event_name(reg->name, (long long)(now * 1e9));
	json_t *obj = name ? v1_object(reg, rel, ev, instance, name, when) : NULL;
	free(name);
	if (!obj)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_create(k, event_v1_gvr(), obj, NULL, err);
	if (rc == 0)
		v1_store(k, key, obj, now);
	json_decref(obj);
	return rc;
}

int kft_kube_event_v1(kft_kube *k, const kft_event_v1 *ev, kft_error *err)
{
	ref reg, rel;
	char instance[512];
	int rc = check_v1(ev, err);
	if (!rc)
		rc = read_ref(ev->regarding, &reg, err);
	if (!rc && ev->related)
		rc = read_ref(ev->related, &rel, err);
	if (rc)
		return rc;
	if (ev->instance)
		snprintf(instance, sizeof(instance), "%s", ev->instance);
	else
		default_instance(ev->controller, instance, sizeof(instance));
	instance[kft_utf8_cut(instance, V1_INSTANCE_MAX)] = '\0'; /* the server's limit */
	char *key = v1_key(&reg, ev->related ? &rel : NULL, ev, instance);
	if (!key)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	double now = real_now();
	json_t *send = NULL;
	if (v1_repeat(k, key, now, &send))
		rc = send ? v1_send_series(k, send, err) : 0;
	else
		rc = v1_first(k, key, &reg, ev->related ? &rel : NULL, ev, instance, now, err);
	json_decref(send);
	free(key);
	return rc;
}

/* Collects, under the lock, the series to write now and forgets entries
 * that are finished. Returns a new array of Event copies (NULL: none). */
static json_t *v1_due(kft_kube *k, double now, int all)
{
	json_t *due = NULL;
	pthread_mutex_lock(&k->events_mu);
	struct kft_event_cache *c = k->events;
	for (int i = 0; c && i < c->n; i++) {
		ev_entry *e = &c->e[i];
		if (!e->obj)
			continue;
		int finished = now - e->observed >= V1_FINISH_S;
		int dirty = e->count != e->sent_count && (finished || all);
		int refresh = e->count >= 2 && now - e->sent >= V1_REFRESH_S;
		if ((dirty || refresh) && set_series(e->obj, e->count, e->observed) == 0) {
			if (!due)
				due = json_array();
			json_array_append_new(due, json_deep_copy(e->obj));
			e->sent = now;
			e->sent_count = e->count;
		}
		if (finished) {
			/* Drop it: move the last entry into its place. */
			free(e->key);
			free(e->name);
			json_decref(e->obj);
			*e = c->e[--c->n];
			memset(&c->e[c->n], 0, sizeof(c->e[c->n]));
			i--;
		}
	}
	pthread_mutex_unlock(&k->events_mu);
	return due;
}

int kft_kube_events_flush(kft_kube *k, int all, kft_error *err)
{
	json_t *due = v1_due(k, real_now(), all);
	size_t i;
	json_t *obj;
	int rc = 0;
	json_array_foreach(due, i, obj)
	{
		kft_error e = {0};
		int r = obj ? v1_send_series(k, obj, &e) : KFT_ENOMEM;
		if (r && !rc) {
			rc = r;
			if (err)
				*err = e;
		}
	}
	json_decref(due);
	return rc;
}
