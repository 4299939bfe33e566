/*
 * informer.c - a list+watch cache of one kind, with indexes and handlers.
 *
 * One thread per informer plays client-go's reflector:
 *
 *   list (paginated)  ->  replace the cache, deliver the differences
 *   watch from the last resourceVersion (bookmarks on)  ->  apply events
 *   the server ends the watch        -> watch again at once
 *   410 Gone (RV compacted away)     -> list again
 *   any other failure                -> back off (0.8 s doubling, jitter,
 *                                       capped) and watch again from the
 *                                       last RV; a failed list is retried
 *                                       the same way
 *
 * The cache maps "ns/name" to the object as compact JSON text, prefixed by
 * its resourceVersion ("RV\0{...}"), with large top-level members that
 * many objects share stored once (see "stored objects"); readers get a
 * tree decoded for them.
 * A jansson tree costs about eight times its compact text (every value is
 * a separate allocation, every object a hash table): 1,000 TrainJobs are
 * 5.5 MB as trees and 0.7 MB as text, and the controller reads each one
 * about once per reconcile, so decoding (microseconds) is the cheaper
 * side. With opts.keep_trees the cache keeps one immutable tree per object
 * instead and shares it with every reader (for a few objects read all the
 * time). Objects are copied out of the client's buffers on arrival without
 * metadata.managedFields, then passed through the optional transform while
 * still private. A relist copies only objects whose resourceVersion the
 * cache lacks, and the changes it finds wait for the handlers as keys and
 * stored text, decoded one at a time as they are delivered, so neither
 * holds a second copy of the cache, let alone one in trees.
 *
 * Locks: a read/write lock guards the cache and its indexes; readers (the
 * controller's workers) never wait for a handler. Changes are applied under
 * the write lock, then handlers run on the informer thread with no lock
 * held, in event order. An index maps each index value to the set of keys
 * having it; an object's values are recomputed from the old object when it
 * changes or goes, so index functions must be deterministic.
 */
#include "kube/kube_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "util/cache_map.h"
#include "util/jsonpack.h"
#include "util/clock.h"

#define MAX_HANDLERS              16
#define MAX_INDEXES               16
#define MAX_INDEX_VALUES          1024
#define MAX_INDEX_VALUE_LEN       4096
#define MAX_RV_LEN                1024
#define WATCH_FAILS_BEFORE_RELIST 3

struct kft_index_keys {
	char **v;
	size_t n, cap;
};

typedef struct inf_index {
	char *name;
	kft_index_fn fn;
	void *ctx;
	kft_cache_map values; /* value -> kft_cache_map * (a set of keys) */
} inf_index;

/* A change to hand to the handlers once the lock is released. It holds the
 * object's key and previous stored form, not trees: a (re)list of thousands
 * of objects would otherwise hold one or two trees per object (a tree costs
 * about eight times its text) until the last handler has run. The new
 * object is decoded from the cache at delivery, one at a time; only the
 * informer thread writes the cache, so it is still the listed version. */
typedef struct inf_change {
	enum { CH_ADD, CH_UPDATE, CH_DELETE } type;
	char *key;      /* owned */
	void *old_item; /* the previous stored form, owned; NULL for an add */
	int flag;       /* in_initial_list / final_state_unknown */
} inf_change;

typedef struct inf_changes {
	inf_change *v;
	size_t n, cap;
} inf_changes;

struct kft_informer {
	kft_kube *kube;
	const kft_gvr *gvr;
	char *ns, *label_selector, *field_selector;
	long page_size;
	int watch_timeout_s;
	double max_backoff_s;
	void (*transform)(json_t *obj, void *ctx);
	void *transform_ctx;
	int metadata_only;
	int keep_trees;

	kft_informer_handlers handlers[MAX_HANDLERS];
	int nhandlers;
	inf_index indexes[MAX_INDEXES];
	int nindexes;

	pthread_rwlock_t lock; /* items and indexes */
	kft_cache_map items;   /* key -> stored object (see item_make) */
	kft_cache_map shared;  /* shared members of text items: "name\1JSON" -> count */

	pthread_t thread;
	int started, joined;
	atomic_int stop;
	char *rv; /* last resourceVersion seen; informer thread only */
	unsigned int seed;

	pthread_mutex_t mu; /* below */
	pthread_cond_t synced_cond;
	int synced, thread_done;
	kft_informer_stats stats;
};

/* ---- keys and small helpers -----------------------------------------------
 */

static const char *meta_str(const json_t *obj, const char *field)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}

int kft_cache_key(const json_t *obj, char *buf, size_t size)
{
	const char *name = meta_str(obj, "name");
	const char *ns = meta_str(obj, "namespace");
	if (!name || !name[0])
		return KFT_EINVAL;
	int n = ns && ns[0] ? snprintf(buf, size, "%s/%s", ns, name)
	                    : snprintf(buf, size, "%s", name);
	if (n < 0 || (size_t)n >= size)
		return KFT_ELIMIT;
	return 0;
}

/* The group of an apiVersion: "" for "v1", "apps" for "apps/v1". */
static int group_matches(const char *api_version, const char *group)
{
	const char *slash = strchr(api_version, '/');
	if (!slash)
		return group[0] == 0;
	size_t len = (size_t)(slash - api_version);
	return strlen(group) == len && strncmp(api_version, group, len) == 0;
}

int kft_cache_controller_owner_key(const json_t *obj, const char *group, const char *kind,
                                   char *buf, size_t size)
{
	json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t i;
	json_t *ref;
	json_array_foreach(refs, i, ref)
	{
		const char *av = json_string_value(json_object_get(ref, "apiVersion"));
		const char *k = json_string_value(json_object_get(ref, "kind"));
		const char *name = json_string_value(json_object_get(ref, "name"));
		if (!json_is_true(json_object_get(ref, "controller")) || !av || !k || !name ||
		    !name[0] || strcmp(k, kind) != 0 || !group_matches(av, group ? group : ""))
			continue;
		const char *ns = meta_str(obj, "namespace");
		int n = ns && ns[0] ? snprintf(buf, size, "%s/%s", ns, name)
		                    : snprintf(buf, size, "%s", name);
		if (n < 0 || (size_t)n >= size)
			return KFT_ELIMIT;
		return 0;
	}
	return KFT_ENOTFOUND;
}

int kft_index_keys_add(kft_index_keys *keys, const char *value)
{
	if (!value || strnlen(value, MAX_INDEX_VALUE_LEN + 1) > MAX_INDEX_VALUE_LEN)
		return KFT_ELIMIT;
	for (size_t i = 0; i < keys->n; i++)
		if (strcmp(keys->v[i], value) == 0)
			return 0;
	if (keys->n >= MAX_INDEX_VALUES)
		return KFT_ELIMIT;
	if (keys->n == keys->cap) {
		size_t ncap = keys->cap ? keys->cap * 2 : 4;
		char **nv = realloc(keys->v, ncap * sizeof(*nv));
		if (!nv)
			return KFT_ENOMEM;
		keys->v = nv;
		keys->cap = ncap;
	}
	keys->v[keys->n] = strdup(value);
	if (!keys->v[keys->n])
		return KFT_ENOMEM;
	keys->n++;
	return 0;
}

static void index_keys_reset(kft_index_keys *keys)
{
	for (size_t i = 0; i < keys->n; i++)
		free(keys->v[i]);
	keys->n = 0;
}

int kft_index_owner_uid(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	size_t i;
	json_t *ref;
	json_array_foreach(refs, i, ref)
	{
		const char *uid = json_string_value(json_object_get(ref, "uid"));
		if (uid && uid[0]) {
			int rc = kft_index_keys_add(keys, uid);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int kft_index_namespace(const json_t *obj, kft_index_keys *keys, void *ctx)
{
	const char *ns = meta_str(obj, "namespace");
	return ns && ns[0] ? kft_index_keys_add(keys, ns) : 0;
}

/* ---- indexes (write lock held) --------------------------------------------
 */

/* Removes key from value's set, dropping the set when it empties. */
static void index_erase(inf_index *ix, const char *value, const char *key)
{
	kft_cache_map *set = kft_cache_map_get(&ix->values, value);
	if (set) {
		kft_cache_map_remove(set, key);
		if (set->count)
			return;
		kft_cache_map_clear(set);
		free(set);
	}
	kft_cache_map_remove(&ix->values, value);
}

static void index_insert(inf_index *ix, const char *value, const char *key)
{
	int created;
	kft_cache_map_entry *ve = kft_cache_map_upsert(&ix->values, value, &created);
	if (!ve)
		return;
	if (!ve->value)
		ve->value = calloc(1, sizeof(kft_cache_map));
	if (!ve->value || !kft_cache_map_upsert(ve->value, key, &created))
		index_erase(ix, value, key); /* out of memory: not indexed */
}

/* Adds (add = 1) or removes key under every value obj has in ix. A failing
 * index function leaves the object out of the index entirely, so that its
 * values can be recomputed identically when it is removed. */
static void index_apply(inf_index *ix, const char *key, const json_t *obj, int add,
                        kft_index_keys *scratch)
{
	index_keys_reset(scratch);
	int rc = ix->fn(obj, scratch, ix->ctx);
	for (size_t i = 0; rc >= 0 && i < scratch->n; i++) {
		if (add)
			index_insert(ix, scratch->v[i], key);
		else
			index_erase(ix, scratch->v[i], key);
	}
	index_keys_reset(scratch);
}

static void indexes_update(kft_informer *inf, const char *key, const json_t *old_obj,
                           const json_t *new_obj)
{
	kft_index_keys scratch = {0};
	for (int i = 0; i < inf->nindexes; i++) {
		if (old_obj)
			index_apply(&inf->indexes[i], key, old_obj, 0, &scratch);
		if (new_obj)
			index_apply(&inf->indexes[i], key, new_obj, 1, &scratch);
	}
	free(scratch.v);
}

/* ---- stored objects -------------------------------------------------------
 *
 * In text mode an item is one allocation: an item_hdr, the pointers to its
 * shared members, then "RV\0PACKED\0", where PACKED is the compact JSON
 * text with the fragments most objects carry (member names, a TrainJob's
 * ownerReference ...) as single bytes (util/jsonpack.h: about half the
 * text of a TrainJob, its JobSet and its snapshot ConfigMap). Two things
 * are left out of the JSON:
 *
 *   - apiVersion and kind when they are the informer's own (every object
 *     of the cache has them; ~60 bytes each);
 *   - top-level members whose compact text is at least SHARE_MIN bytes.
 *     Those live once in inf->shared, keyed by "name\1text" and counted by
 *     the items using them: the runtime snapshot ConfigMaps of TrainJobs
 *     made from one runtime all carry the same YAML, most of their size.
 *     Compact JSON escapes control characters, so "\1" cannot occur in the
 *     text, and only members with plain names are shared.
 *
 * Decoding puts both back (at the end of the object: JSON members have no
 * order). Only the informer thread changes inf->shared and the counts;
 * readers follow an item's pointers to entries that cannot go while the
 * item is cached, and never look at the table.
 */

#define SHARE_MIN       512
#define MAX_SHARED      4
#define MAX_SHARED_NAME 64 /* a shared member's name, with its NUL */

typedef struct item_hdr {
	unsigned int nshared; /* kft_cache_map_entry pointers following the header */
	unsigned int typed;   /* apiVersion and kind left out */
} item_hdr;

static kft_cache_map_entry **item_shared(const void *item)
{
	return (kft_cache_map_entry **)((char *)item + sizeof(item_hdr));
}

/* "RV\0JSON" of a text item. */
static const char *item_text(const void *item)
{
	const item_hdr *h = item;
	return (const char *)item + sizeof(item_hdr) + h->nshared * sizeof(kft_cache_map_entry *);
}

static void share_release(kft_informer *inf, kft_cache_map_entry *e)
{
	uintptr_t refs = (uintptr_t)e->value;
	if (refs > 1)
		e->value = (void *)(refs - 1);
	else
		kft_cache_map_remove(&inf->shared, e->key);
}

/* The shared entry holding member name = v (its text: len bytes), with one
 * more reference; NULL when out of memory. */
static kft_cache_map_entry *share_get(kft_informer *inf, const char *name, const json_t *v,
                                      size_t len)
{
	size_t nlen = strlen(name);
	char *key = malloc(nlen + len + 2);
	if (!key)
		return NULL;
	memcpy(key, name, nlen);
	key[nlen] = '\1';
	int created;
	kft_cache_map_entry *e = NULL;
	if (json_dumpb(v, key + nlen + 1, len, JSON_COMPACT) == len) {
		key[nlen + 1 + len] = '\0';
		e = kft_cache_map_upsert(&inf->shared, key, &created);
	}
	free(key);
	if (e)
		e->value = (void *)((uintptr_t)e->value + 1);
	return e;
}

static int plain_name(const char *s)
{
	if (strlen(s) >= MAX_SHARED_NAME)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

/* Whether obj's apiVersion and kind are the informer's. */
static int own_type(const kft_informer *inf, const json_t *obj)
{
	char av[256];
	const char *a = json_string_value(json_object_get(obj, "apiVersion"));
	const char *k = json_string_value(json_object_get(obj, "kind"));
	return a && k && strcmp(k, inf->gvr->kind) == 0 &&
	       strcmp(a, kft_gvr_api_version(inf->gvr, av, sizeof(av))) == 0;
}

/* A shallow copy of obj without what the item keeps elsewhere; the shared
 * members' entries go to shared[*nshared]. NULL when out of memory. */
static json_t *item_body(kft_informer *inf, const json_t *obj, int typed,
                         kft_cache_map_entry **shared, unsigned int *nshared)
{
	json_t *body = json_object();
	const char *k;
	json_t *v;
	*nshared = 0;
	json_object_foreach((json_t *)obj, k, v)
	{
		if (!body)
			break;
		if (typed && (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0))
			continue;
		size_t len = 0;
		if (*nshared < MAX_SHARED && strcmp(k, "metadata") != 0 && plain_name(k))
			len = json_dumpb(v, NULL, 0, JSON_COMPACT);
		kft_cache_map_entry *e = len >= SHARE_MIN ? share_get(inf, k, v, len) : NULL;
		if (e)
			shared[(*nshared)++] = e;
		else if (json_object_set(body, k, v) != 0) {
			json_decref(body);
			body = NULL;
		}
	}
	return body;
}

/* "RV\0" then body's JSON, packed, into a new text item after the header. */
static void *item_pack(const char *rv, const json_t *body, kft_cache_map_entry *const *shared,
                       unsigned int nshared, int typed)
{
	size_t rvlen = rv ? strlen(rv) : 0;
	size_t n = json_dumpb(body, NULL, 0, JSON_COMPACT);
	char *json = n ? malloc(n) : NULL;
	if (!json || json_dumpb(body, json, n, JSON_COMPACT) != n) {
		free(json);
		return NULL;
	}
	size_t packed = kft_jsonpack(json, n, NULL);
	size_t head = sizeof(item_hdr) + nshared * sizeof(kft_cache_map_entry *);
	char *item = malloc(head + rvlen + packed + 2);
	if (item) {
		*(item_hdr *)item = (item_hdr){nshared, (unsigned int)typed};
		memcpy(item_shared(item), shared, nshared * sizeof(kft_cache_map_entry *));
		char *text = item + head;
		memcpy(text, rv ? rv : "", rvlen + 1);
		kft_jsonpack(json, n, text + rvlen + 1);
		text[rvlen + 1 + packed] = '\0';
	}
	free(json);
	return item;
}

/* What the cache stores for obj (borrowed): a new reference to the tree
 * (keep_trees), or a text item (above). NULL: out of memory. */
static void *item_make(kft_informer *inf, json_t *obj)
{
	if (inf->keep_trees)
		return json_incref(obj);
	kft_cache_map_entry *shared[MAX_SHARED];
	unsigned int nshared = 0;
	int typed = own_type(inf, obj);
	json_t *body = item_body(inf, obj, typed, shared, &nshared);
	void *item =
	        body ? item_pack(meta_str(obj, "resourceVersion"), body, shared, nshared, typed)
	             : NULL;
	json_decref(body);
	for (unsigned int i = 0; !item && i < nshared; i++)
		share_release(inf, shared[i]);
	return item;
}

/* Sets the shared member of entry e ("name\1text") on obj. */
static int share_set(json_t *obj, const kft_cache_map_entry *e)
{
	const char *sep = strchr(e->key, '\1');
	char name[MAX_SHARED_NAME];
	if (!sep || (size_t)(sep - e->key) >= sizeof(name))
		return -1;
	memcpy(name, e->key, (size_t)(sep - e->key));
	name[sep - e->key] = '\0';
	return json_object_set_new(obj, name, json_loads(sep + 1, JSON_ALLOW_NUL, NULL));
}

/* A tree of a stored object: a new reference; NULL when out of memory. */
static json_t *item_tree(const kft_informer *inf, const void *item)
{
	if (inf->keep_trees)
		return json_incref((json_t *)item);
	const item_hdr *h = item;
	const char *text = item_text(item);
	const char *packed = text + strlen(text) + 1;
	size_t plen = strlen(packed);
	size_t n = kft_jsonpack_unpack(packed, plen, NULL);
	char *json = malloc(n ? n : 1);
	json_t *obj = NULL;
	if (json) {
		kft_jsonpack_unpack(packed, plen, json);
		obj = json_loadb(json, n, JSON_ALLOW_NUL, NULL);
		free(json);
	}
	int bad = !obj;
	for (unsigned int i = 0; !bad && i < h->nshared; i++)
		bad = share_set(obj, item_shared(item)[i]) != 0;
	if (!bad && h->typed) {
		char av[256];
		bad = json_object_set_new(
		              obj, "apiVersion",
		              json_string(kft_gvr_api_version(inf->gvr, av, sizeof(av)))) ||
		      json_object_set_new(obj, "kind", json_string(inf->gvr->kind));
	}
	if (bad) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static const char *item_rv(const kft_informer *inf, const void *item)
{
	return inf->keep_trees ? meta_str(item, "resourceVersion") : item_text(item);
}

static void item_free(kft_informer *inf, void *item)
{
	if (inf->keep_trees) {
		json_decref(item);
		return;
	}
	const item_hdr *h = item;
	for (unsigned int i = 0; i < h->nshared; i++)
		share_release(inf, item_shared(item)[i]);
	free(item);
}

/* ---- the cache (write lock held) ------------------------------------------
 */

/* Moves key's index entries from old_item's values to new_obj's (either may
 * be NULL). The old values come from decoding old_item, so a cache without
 * indexes decodes nothing. */
static void reindex(kft_informer *inf, const char *key, const void *old_item, const json_t *new_obj)
{
	if (inf->nindexes == 0)
		return;
	json_t *old = old_item ? item_tree(inf, old_item) : NULL;
	indexes_update(inf, key, old, new_obj);
	json_decref(old);
}

/* Stores item (taken) under key, indexed by obj, its tree (borrowed; may
 * be NULL when the informer has no index). *old_item receives the previous
 * stored form (the caller's), NULL for a new key. Returns KFT_ENOMEM, item
 * freed, when the key cannot be stored: the cache misses the change and the
 * next relist repairs it. */
static int cache_put(kft_informer *inf, const char *key, void *item, const json_t *obj,
                     void **old_item)
{
	int created;
	kft_cache_map_entry *e = kft_cache_map_upsert(&inf->items, key, &created);
	*old_item = NULL;
	if (!e) {
		item_free(inf, item);
		return KFT_ENOMEM;
	}
	*old_item = e->value;
	e->value = item;
	reindex(inf, key, *old_item, obj);
	return 0;
}

/* Removes key; returns its stored form (the caller's) or NULL when absent. */
static void *cache_del(kft_informer *inf, const char *key)
{
	void *item = kft_cache_map_remove(&inf->items, key);
	if (item)
		reindex(inf, key, item, NULL);
	return item;
}

/* ---- changes and handlers --------------------------------------------------
 */

/* Records a change; old_item is taken. Out of memory, the handlers miss the
 * change (the cache has it). */
static void changes_push(kft_informer *inf, inf_changes *c, int type, const char *key,
                         void *old_item, int flag)
{
	char *k = strdup(key);
	if (k && c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		inf_change *nv = realloc(c->v, ncap * sizeof(*nv));
		if (nv) {
			c->v = nv;
			c->cap = ncap;
		}
	}
	if (!k || c->n == c->cap) {
		free(k);
		if (old_item)
			item_free(inf, old_item);
		return;
	}
	c->v[c->n++] = (inf_change){type, k, old_item, flag};
}

static void deliver(kft_informer *inf, int type, const json_t *old_obj, const json_t *new_obj,
                    int flag)
{
	for (int i = 0; i < inf->nhandlers; i++) {
		const kft_informer_handlers *h = &inf->handlers[i];
		if (type == CH_ADD && h->on_add)
			h->on_add(h->ctx, new_obj, flag);
		else if (type == CH_UPDATE && h->on_update)
			h->on_update(h->ctx, old_obj, new_obj);
		else if (type == CH_DELETE && h->on_delete)
			h->on_delete(h->ctx, old_obj, flag);
	}
}

/* The object cached under key as a new tree, or NULL. */
static json_t *cached_tree(kft_informer *inf, const char *key)
{
	pthread_rwlock_rdlock(&inf->lock);
	void *item = kft_cache_map_get(&inf->items, key);
	json_t *obj = item ? item_tree(inf, item) : NULL;
	pthread_rwlock_unlock(&inf->lock);
	return obj;
}

/* Decodes one recorded change and hands it to the handlers; a change that
 * cannot be decoded (out of memory) is not delivered. */
static void change_deliver(kft_informer *inf, const inf_change *c)
{
	json_t *new_obj = c->type == CH_DELETE ? NULL : cached_tree(inf, c->key);
	json_t *old_obj = c->old_item ? item_tree(inf, c->old_item) : NULL;
	int ok = c->type == CH_DELETE ? old_obj != NULL : new_obj && (!c->old_item || old_obj);
	if (ok)
		deliver(inf, c->type, old_obj, new_obj, c->flag);
	json_decref(old_obj);
	json_decref(new_obj);
}

static void changes_deliver(kft_informer *inf, inf_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		change_deliver(inf, &c->v[i]);
		free(c->v[i].key);
		if (c->v[i].old_item)
			item_free(inf, c->v[i].old_item);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* ---- copying objects in ------------------------------------------------- */

/* A private copy of src without metadata.managedFields, transformed. */
static json_t *copy_in(kft_informer *inf, const json_t *src)
{
	json_t *dst = json_object();
	const char *k;
	json_t *v;
	if (!dst)
		return NULL;
	json_object_foreach((json_t *)src, k, v)
	{
		json_t *c;
		if (strcmp(k, "metadata") == 0 && json_is_object(v)) {
			c = json_object();
			const char *mk;
			json_t *mv;
			json_object_foreach(v, mk, mv)
			{
				if (c && strcmp(mk, "managedFields") != 0 &&
				    json_object_set_new(c, mk, json_deep_copy(mv)) != 0) {
					json_decref(c);
					c = NULL;
				}
			}
		} else {
			c = json_deep_copy(v);
		}
		if (!c || json_object_set_new(dst, k, c) != 0) {
			json_decref(dst);
			return NULL;
		}
	}
	if (inf->transform)
		inf->transform(dst, inf->transform_ctx);
	return dst;
}

static void set_rv(kft_informer *inf, const char *rv)
{
	if (!rv || !rv[0] || strnlen(rv, MAX_RV_LEN + 1) > MAX_RV_LEN)
		return;
	if (inf->rv && strcmp(inf->rv, rv) == 0)
		return;
	char *copy = strdup(rv);
	if (!copy)
		return;
	free(inf->rv);
	inf->rv = copy;
	pthread_mutex_lock(&inf->mu);
	snprintf(inf->stats.resource_version, sizeof(inf->stats.resource_version), "%s", rv);
	pthread_mutex_unlock(&inf->mu);
}

static void note_error(kft_informer *inf, const char *what, const kft_error *err)
{
	pthread_mutex_lock(&inf->mu);
	inf->stats.errors++;
	snprintf(inf->stats.last_error, sizeof(inf->stats.last_error), "%s: %.240s", what,
	         err->message[0] ? err->message : kft_status_string(err->code));
	pthread_mutex_unlock(&inf->mu);
}

static void count(kft_informer *inf, uint64_t *counter)
{
	pthread_mutex_lock(&inf->mu);
	(*counter)++;
	pthread_mutex_unlock(&inf->mu);
}

/* ---- list -------------------------------------------------------------- */

/* The value a listed key gets in the fresh map when the cache already holds
 * that resourceVersion: a relist then copies only what changed. */
static char unchanged_mark;
#define UNCHANGED ((void *)&unchanged_mark)

typedef struct list_ctx {
	kft_informer *inf;
	kft_cache_map fresh; /* key -> stored form, or UNCHANGED */
	int failed;          /* out of memory */
} list_ctx;

/* Whether the cache holds key at resourceVersion rv. */
static int cached_at(kft_informer *inf, const char *key, const char *rv)
{
	if (!rv || !rv[0])
		return 0;
	pthread_rwlock_rdlock(&inf->lock);
	const void *cur = kft_cache_map_get(&inf->items, key);
	const char *cur_rv = cur ? item_rv(inf, cur) : NULL;
	int same = cur_rv && strcmp(cur_rv, rv) == 0;
	pthread_rwlock_unlock(&inf->lock);
	return same;
}

static void fresh_release(kft_informer *inf, void *v)
{
	if (v && v != UNCHANGED)
		item_free(inf, v);
}

static int on_list_item(void *ctx, const json_t *item)
{
	list_ctx *lc = ctx;
	char key[KFT_CACHE_KEY_MAX];
	if (atomic_load(&lc->inf->stop))
		return 1;
	if (kft_cache_key(item, key, sizeof(key)) != 0)
		return 0; /* nameless: the server never sends one; ignore it */
	void *stored = UNCHANGED;
	if (!cached_at(lc->inf, key, meta_str(item, "resourceVersion"))) {
		json_t *obj = copy_in(lc->inf, item);
		stored = obj ? item_make(lc->inf, obj) : NULL;
		json_decref(obj);
	}
	int created;
	kft_cache_map_entry *e = stored ? kft_cache_map_upsert(&lc->fresh, key, &created) : NULL;
	if (!e) {
		fresh_release(lc->inf, stored);
		lc->failed = 1;
		return 1;
	}
	fresh_release(lc->inf, e->value);
	e->value = stored;
	return 0;
}

static void items_free(kft_informer *inf, kft_cache_map *m)
{
	kft_cache_map_iter it;
	for (kft_cache_map_entry *e = kft_cache_map_first(m, &it); e;
	     e = kft_cache_map_next(m, &it))
		fresh_release(inf, e->value);
	kft_cache_map_clear(m);
}

/* Stores one listed object (item taken) and records the add or update. */
static void replace_one(kft_informer *inf, const char *key, void *item, int initial,
                        inf_changes *ch)
{
	json_t *obj = NULL;
	if (inf->nindexes && !(obj = item_tree(inf, item))) {
		item_free(inf, item); /* out of memory: the next relist repairs it */
		return;
	}
	void *old_item;
	int rc = cache_put(inf, key, item, obj, &old_item);
	json_decref(obj);
	if (rc == 0)
		changes_push(inf, ch, old_item ? CH_UPDATE : CH_ADD, key, old_item,
		             old_item ? 0 : initial);
}

/* Makes the cache equal to fresh (whose objects it takes) and records the
 * differences: new keys are adds, changed resourceVersions updates, keys
 * gone deletes whose final state is unknown. Unchanged objects are kept as
 * they are, so readers holding a shared tree see no difference. */
static void replace_all(kft_informer *inf, kft_cache_map *fresh, int initial, inf_changes *ch)
{
	kft_cache_map_iter it;
	pthread_rwlock_wrlock(&inf->lock);
	for (kft_cache_map_entry *e = kft_cache_map_first(fresh, &it); e;
	     e = kft_cache_map_next(fresh, &it)) {
		void *item = e->value;
		if (item == UNCHANGED)
			continue;
		e->value = NULL;
		replace_one(inf, e->key, item, initial, ch);
	}
	for (kft_cache_map_entry *e = kft_cache_map_first(&inf->items, &it); e;
	     e = kft_cache_map_next(&inf->items, &it)) {
		if (kft_cache_map_find(fresh, e->key))
			continue;
		void *old_item = e->value;
		reindex(inf, e->key, old_item, NULL);
		changes_push(inf, ch, CH_DELETE, e->key, old_item, 1);
		kft_cache_map_remove_iter(&inf->items, e->key);
	}
	pthread_rwlock_unlock(&inf->lock);
}

static int do_list(kft_informer *inf, int initial, kft_error *err)
{
	list_ctx lc = {.inf = inf};
	kft_list_opts lo = {.label_selector = inf->label_selector,
	                    .field_selector = inf->field_selector,
	                    .page_size = inf->page_size,
	                    .stop = &inf->stop,
	                    .metadata_only = inf->metadata_only};
	char *rv = NULL;
	int rc = kft_kube_list_each(inf->kube, inf->gvr, inf->ns, &lo, on_list_item, &lc, &rv, err);
	if (rc == 0 && lc.failed)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory while listing");
	if (rc != 0 || atomic_load(&inf->stop)) {
		items_free(inf, &lc.fresh);
		free(rv);
		return rc ? rc : 1;
	}
	inf_changes ch = {0};
	replace_all(inf, &lc.fresh, initial, &ch);
	items_free(inf, &lc.fresh);
	set_rv(inf, rv);
	free(rv);
	changes_deliver(inf, &ch);
	count(inf, &inf->stats.lists);
	return 0;
}

/* ---- watch -------------------------------------------------------------- */

typedef struct watch_ctx {
	kft_informer *inf;
	uint64_t events;
} watch_ctx;

/* Returns KFT_ENOMEM when the change could not be stored. */
static int apply_event(kft_informer *inf, const char *type, json_t *obj, const char *key)
{
	int deleted = strcmp(type, "DELETED") == 0, rc = 0;
	/* The version the cache holds already (kft_informer_supply; for a
	 * metadata-only informer, with its body): nothing changed. */
	if (!deleted && cached_at(inf, key, meta_str(obj, "resourceVersion")))
		return 0;
	void *item = deleted ? NULL : item_make(inf, obj); /* encoded outside the lock */
	void *old_item = NULL;
	if (!deleted && !item)
		return KFT_ENOMEM;
	pthread_rwlock_wrlock(&inf->lock);
	if (deleted)
		old_item = cache_del(inf, key);
	else
		rc = cache_put(inf, key, item, obj, &old_item);
	pthread_rwlock_unlock(&inf->lock);
	/* The previous version is decoded for the handlers outside the lock. */
	json_t *old = old_item ? item_tree(inf, old_item) : NULL;
	if (old_item)
		item_free(inf, old_item);
	if (rc == 0 && deleted)
		deliver(inf, CH_DELETE, old ? old : obj, NULL, 0);
	else if (rc == 0 && (old || !old_item))
		deliver(inf, old ? CH_UPDATE : CH_ADD, old, obj, 0);
	json_decref(old);
	return rc;
}

static int on_watch_event(void *ctx, const char *type, const json_t *object)
{
	watch_ctx *wc = ctx;
	kft_informer *inf = wc->inf;
	char key[KFT_CACHE_KEY_MAX];
	if (atomic_load(&inf->stop))
		return 1;
	const char *rv = meta_str(object, "resourceVersion");
	if (strcmp(type, "BOOKMARK") == 0) {
		set_rv(inf, rv);
		count(inf, &inf->stats.bookmarks);
		return 0;
	}
	if (strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0 &&
	    strcmp(type, "DELETED") != 0)
		return 0;
	if (kft_cache_key(object, key, sizeof(key)) != 0)
		return 0;
	json_t *obj = copy_in(inf, object);
	/* Out of memory ends the watch; the re-watch from the last RV replays it. */
	int rc = obj ? apply_event(inf, type, obj, key) : KFT_ENOMEM;
	json_decref(obj);
	if (rc)
		return rc;
	set_rv(inf, rv);
	wc->events++;
	count(inf, &inf->stats.events);
	return 0;
}

/* One watch request from the last RV. Returns as kft_kube_watch; a stream
 * the server ended within a second without any event counts as
 * KFT_EUNAVAILABLE, so a server that closes at once is not hammered. */
static int do_watch(kft_informer *inf, uint64_t *events, kft_error *err)
{
	watch_ctx wc = {.inf = inf};
	int timeout = inf->watch_timeout_s;
	if (timeout <= 0)
		timeout = 300 + (int)(rand_r(&inf->seed) % 301);
	kft_watch_opts wo = {.resource_version = inf->rv,
	                     .label_selector = inf->label_selector,
	                     .field_selector = inf->field_selector,
	                     .allow_bookmarks = 1,
	                     .timeout_seconds = timeout,
	                     .metadata_only = inf->metadata_only};
	count(inf, &inf->stats.watches);
	double t0 = kft_clock_mono_s();
	int rc = kft_kube_watch(inf->kube, inf->gvr, inf->ns, &wo, on_watch_event, &wc, &inf->stop,
	                        err);
	if (rc == 0 && wc.events == 0 && kft_clock_mono_s() - t0 < 1.0 && !atomic_load(&inf->stop))
		rc = kft_error_set(err, KFT_EUNAVAILABLE, "watch ended at once with no event");
	*events = wc.events;
	return rc;
}

int kft_informer_supply(kft_informer *inf, const json_t *obj)
{
	char key[KFT_CACHE_KEY_MAX];
	const char *rv = meta_str(obj, "resourceVersion");
	if (!inf || !rv || !rv[0] || kft_cache_key(obj, key, sizeof(key)) != 0)
		return KFT_EINVAL;
	json_t *copy = copy_in(inf, obj);
	void *item = copy ? item_make(inf, copy) : NULL;
	if (!item) {
		json_decref(copy);
		return KFT_ENOMEM;
	}
	void *old_item = NULL;
	int rc = 1;
	pthread_rwlock_wrlock(&inf->lock);
	const void *cur = kft_cache_map_get(&inf->items, key);
	if (!cur || strcmp(item_rv(inf, cur), rv) == 0) {
		rc = cache_put(inf, key, item, inf->nindexes ? copy : NULL, &old_item);
		item = NULL;
	}
	pthread_rwlock_unlock(&inf->lock);
	if (item)
		item_free(inf, item);
	if (old_item)
		item_free(inf, old_item);
	json_decref(copy);
	return rc;
}

/* ---- the informer thread ----------------------------------------------- */

static void set_synced(kft_informer *inf)
{
	pthread_mutex_lock(&inf->mu);
	inf->synced = 1;
	pthread_cond_broadcast(&inf->synced_cond);
	pthread_mutex_unlock(&inf->mu);
}

/* Sleeps the next backoff step; returns 1 when stopped meanwhile. */
static int back_off(kft_informer *inf, kft_backoff *b)
{
	long ms = kft_backoff_next(b);
	long cap = (long)(inf->max_backoff_s * 1000);
	if (ms > cap)
		ms = cap;
	return kft_sleep_ms(ms, &inf->stop);
}

/* Lists once. Returns 0 when listed, 1 after a failure (backed off), -1
 * when stopped. */
static int list_once(kft_informer *inf, kft_backoff *b, int *listed)
{
	kft_error err;
	kft_error_clear(&err);
	int rc = do_list(inf, !*listed, &err);
	if (atomic_load(&inf->stop))
		return -1;
	if (rc != 0) {
		note_error(inf, "list", &err);
		return back_off(inf, b) ? -1 : 1;
	}
	if (!*listed)
		set_synced(inf);
	*listed = 1;
	kft_backoff_reset(b);
	return 0;
}

/* Watches once. Returns 1 when a relist is needed, 0 to watch again, -1
 * when stopped. *fails counts watches in a row that failed without an
 * event: after WATCH_FAILS_BEFORE_RELIST the informer lists afresh, as
 * client-go's reflector relists after a failed watch (a server restarted
 * with its watch cache behind our resourceVersion never recovers
 * otherwise). */
static int watch_once(kft_informer *inf, kft_backoff *b, int *fails)
{
	kft_error err;
	uint64_t events = 0;
	kft_error_clear(&err);
	int rc = do_watch(inf, &events, &err);
	if (atomic_load(&inf->stop))
		return -1;
	/* A watch that delivered events was healthy: a later cut starts the
	 * backoff from the beginning. */
	if (rc == 0 || events > 0) {
		kft_backoff_reset(b);
		*fails = 0;
	}
	if (rc == 0)
		return 0;
	if (rc == KFT_EGONE) {
		count(inf, &inf->stats.gone);
		return 1;
	}
	note_error(inf, "watch", &err);
	if (back_off(inf, b))
		return -1;
	return ++*fails >= WATCH_FAILS_BEFORE_RELIST;
}

static void *informer_main(void *arg)
{
	kft_informer *inf = arg;
	kft_backoff b;
	int need_list = 1, listed = 0, fails = 0, rc = 0;
	kft_backoff_init(&b, 800, (long)(inf->max_backoff_s * 1000), 0.5);
	while (rc >= 0 && !atomic_load(&inf->stop)) {
		if (need_list) {
			rc = list_once(inf, &b, &listed);
			need_list = rc != 0;
			fails = 0;
			continue;
		}
		rc = watch_once(inf, &b, &fails);
		need_list = rc == 1;
	}
	pthread_mutex_lock(&inf->mu);
	inf->thread_done = 1;
	pthread_cond_broadcast(&inf->synced_cond);
	pthread_mutex_unlock(&inf->mu);
	return NULL;
}

/* ---- public API ---------------------------------------------------------- */

static char *dup_opt(const char *s, int *failed)
{
	if (!s || !s[0])
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

int kft_informer_new(struct kft_kube *kube, const kft_informer_opts *opts, kft_informer **out,
                     kft_error *err)
{
	*out = NULL;
	if (!kube || !opts || !opts->gvr)
		return kft_error_set(err, KFT_EINVAL, "informer: a client and a kind are required");
	kft_informer *inf = calloc(1, sizeof(*inf));
	if (!inf)
		return kft_error_set(err, KFT_ENOMEM, "informer: out of memory");
	int failed = 0;
	inf->kube = kube;
	inf->gvr = opts->gvr;
	inf->ns = dup_opt(opts->namespace, &failed);
	inf->label_selector = dup_opt(opts->label_selector, &failed);
	inf->field_selector = dup_opt(opts->field_selector, &failed);
	inf->page_size = opts->page_size > 0 ? opts->page_size : 500;
	inf->watch_timeout_s = opts->watch_timeout_s;
	inf->max_backoff_s = opts->max_backoff_s > 0 ? opts->max_backoff_s : 30;
	if (inf->max_backoff_s < 0.001)
		inf->max_backoff_s = 0.001;
	inf->transform = opts->transform;
	inf->transform_ctx = opts->transform_ctx;
	inf->metadata_only = opts->metadata_only;
	inf->keep_trees = opts->keep_trees;
	inf->seed = (unsigned int)time(NULL) ^ (unsigned int)(uintptr_t)inf;
	pthread_rwlock_init(&inf->lock, NULL);
	pthread_mutex_init(&inf->mu, NULL);
	pthread_cond_init(&inf->synced_cond, NULL);
	if (failed) {
		kft_informer_free(inf);
		return kft_error_set(err, KFT_ENOMEM, "informer: out of memory");
	}
	*out = inf;
	return 0;
}

int kft_informer_add_index(kft_informer *inf, const char *name, kft_index_fn fn, void *ctx,
                           kft_error *err)
{
	if (inf->started)
		return kft_error_set(err, KFT_EINVAL,
		                     "informer: indexes must be added before start");
	if (!name || !name[0] || !fn)
		return kft_error_set(err, KFT_EINVAL,
		                     "informer: an index needs a name and a function");
	for (int i = 0; i < inf->nindexes; i++)
		if (strcmp(inf->indexes[i].name, name) == 0)
			return kft_error_set(err, KFT_EINVAL, "informer: index %s already exists",
			                     name);
	if (inf->nindexes == MAX_INDEXES)
		return kft_error_set(err, KFT_ELIMIT, "informer: more than %d indexes",
		                     MAX_INDEXES);
	inf_index *ix = &inf->indexes[inf->nindexes];
	ix->name = strdup(name);
	if (!ix->name)
		return kft_error_set(err, KFT_ENOMEM, "informer: out of memory");
	ix->fn = fn;
	ix->ctx = ctx;
	kft_cache_map_init(&ix->values);
	inf->nindexes++;
	return 0;
}

int kft_informer_add_handlers(kft_informer *inf, const kft_informer_handlers *h, kft_error *err)
{
	if (inf->started)
		return kft_error_set(err, KFT_EINVAL,
		                     "informer: handlers must be added before start");
	if (!h)
		return kft_error_set(err, KFT_EINVAL, "informer: no handlers given");
	if (inf->nhandlers == MAX_HANDLERS)
		return kft_error_set(err, KFT_ELIMIT, "informer: more than %d handler sets",
		                     MAX_HANDLERS);
	inf->handlers[inf->nhandlers++] = *h;
	return 0;
}

int kft_informer_start(kft_informer *inf, kft_error *err)
{
	if (inf->started)
		return kft_error_set(err, KFT_EINVAL, "informer: already started");
	atomic_store(&inf->stop, 0);
	if (pthread_create(&inf->thread, NULL, informer_main, inf) != 0)
		return kft_error_set(err, KFT_EIO, "informer: cannot start a thread");
	inf->started = 1;
	return 0;
}

int kft_informer_has_synced(kft_informer *inf)
{
	pthread_mutex_lock(&inf->mu);
	int v = inf->synced;
	pthread_mutex_unlock(&inf->mu);
	return v;
}

int kft_informer_wait_synced(kft_informer *inf, double timeout_s, kft_error *err)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	if (timeout_s > 1e9)
		timeout_s = 1e9;
	if (timeout_s >= 0) {
		long ns = until.tv_nsec + (long)((timeout_s - (double)(long)timeout_s) * 1e9);
		until.tv_sec += (time_t)timeout_s + ns / 1000000000L;
		until.tv_nsec = ns % 1000000000L;
	}
	pthread_mutex_lock(&inf->mu);
	int timed_out = 0;
	while (!inf->synced && !inf->thread_done && inf->started && !timed_out) {
		if (timeout_s < 0)
			pthread_cond_wait(&inf->synced_cond, &inf->mu);
		else
			timed_out =
			        pthread_cond_timedwait(&inf->synced_cond, &inf->mu, &until) != 0;
	}
	int synced = inf->synced;
	char last[sizeof(inf->stats.last_error)];
	memcpy(last, inf->stats.last_error, sizeof(last));
	pthread_mutex_unlock(&inf->mu);
	if (synced)
		return 0;
	return kft_error_set(err, KFT_EUNAVAILABLE, "%s cache not synced: %s%s%s",
	                     inf->gvr->resource,
	                     !inf->started ? "informer not started"
	                     : timed_out   ? "timed out"
	                                   : "informer stopped",
	                     last[0] ? "; last error: " : "", last);
}

void kft_informer_stop(kft_informer *inf)
{
	if (!inf || !inf->started || inf->joined)
		return;
	atomic_store(&inf->stop, 1);
	pthread_join(inf->thread, NULL);
	inf->joined = 1;
}

static void index_free(inf_index *ix)
{
	kft_cache_map_iter it;
	for (kft_cache_map_entry *e = kft_cache_map_first(&ix->values, &it); e;
	     e = kft_cache_map_next(&ix->values, &it)) {
		if (e->value)
			kft_cache_map_clear(e->value);
		free(e->value);
	}
	kft_cache_map_clear(&ix->values);
	free(ix->name);
}

void kft_informer_free(kft_informer *inf)
{
	if (!inf)
		return;
	kft_informer_stop(inf);
	items_free(inf, &inf->items);
	kft_cache_map_clear(&inf->shared); /* empty by now: only its buckets */
	for (int i = 0; i < inf->nindexes; i++)
		index_free(&inf->indexes[i]);
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	free(inf->rv);
	pthread_rwlock_destroy(&inf->lock);
	pthread_mutex_destroy(&inf->mu);
	pthread_cond_destroy(&inf->synced_cond);
	free(inf);
}

int kft_informer_get_by_key(kft_informer *inf, const char *key, json_t **out)
{
	*out = NULL;
	if (!key)
		return KFT_ENOTFOUND;
	pthread_rwlock_rdlock(&inf->lock);
	void *item = kft_cache_map_get(&inf->items, key);
	*out = item ? item_tree(inf, item) : NULL;
	pthread_rwlock_unlock(&inf->lock);
	return !item ? KFT_ENOTFOUND : *out ? 0 : KFT_ENOMEM;
}

int kft_informer_get(kft_informer *inf, const char *ns, const char *name, json_t **out)
{
	char key[KFT_CACHE_KEY_MAX];
	*out = NULL;
	if (!name || !name[0])
		return KFT_ENOTFOUND;
	int n = ns && ns[0] ? snprintf(key, sizeof(key), "%s/%s", ns, name)
	                    : snprintf(key, sizeof(key), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(key))
		return KFT_ENOTFOUND;
	return kft_informer_get_by_key(inf, key, out);
}

/* Appends the stored object under key to arr when it is in namespace ns
 * (NULL: any); the key's prefix says, so nothing is decoded in vain. */
static int append_in_ns(const kft_informer *inf, json_t *arr, const char *key, const void *item,
                        const char *ns)
{
	if (ns) {
		size_t n = strlen(ns);
		if (strncmp(key, ns, n) != 0 || key[n] != '/')
			return 0;
	}
	json_t *obj = item_tree(inf, item);
	return obj ? json_array_append_new(arr, obj) : -1;
}

int kft_informer_list(kft_informer *inf, const char *ns, json_t **out)
{
	json_t *arr = json_array();
	int rc = 0;
	*out = NULL;
	if (!arr)
		return KFT_ENOMEM;
	if (ns && !ns[0])
		ns = NULL;
	kft_cache_map_iter it;
	pthread_rwlock_rdlock(&inf->lock);
	for (kft_cache_map_entry *e = kft_cache_map_first(&inf->items, &it); e && rc == 0;
	     e = kft_cache_map_next(&inf->items, &it))
		rc = append_in_ns(inf, arr, e->key, e->value, ns);
	pthread_rwlock_unlock(&inf->lock);
	if (rc) {
		json_decref(arr);
		return KFT_ENOMEM;
	}
	*out = arr;
	return 0;
}

static inf_index *find_index(kft_informer *inf, const char *index, kft_error *err)
{
	for (int i = 0; index && i < inf->nindexes; i++)
		if (strcmp(inf->indexes[i].name, index) == 0)
			return &inf->indexes[i];
	kft_error_set(err, KFT_ENOTFOUND, "informer for %s has no index %s", inf->gvr->resource,
	              index ? index : "(null)");
	return NULL;
}

int kft_informer_by_index(kft_informer *inf, const char *index, const char *value, json_t **out,
                          kft_error *err)
{
	*out = NULL;
	inf_index *ix = find_index(inf, index, err);
	if (!ix)
		return KFT_ENOTFOUND;
	json_t *arr = json_array();
	if (!arr)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = 0;
	pthread_rwlock_rdlock(&inf->lock);
	kft_cache_map *set = value ? kft_cache_map_get(&ix->values, value) : NULL;
	kft_cache_map_iter it;
	for (kft_cache_map_entry *e = set ? kft_cache_map_first(set, &it) : NULL; e && rc == 0;
	     e = kft_cache_map_next(set, &it)) {
		void *item = kft_cache_map_get(&inf->items, e->key);
		if (item)
			rc = append_in_ns(inf, arr, e->key, item, NULL);
	}
	pthread_rwlock_unlock(&inf->lock);
	if (rc) {
		json_decref(arr);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	*out = arr;
	return 0;
}

int kft_informer_index_count(kft_informer *inf, const char *index, const char *value, size_t *count,
                             kft_error *err)
{
	*count = 0;
	inf_index *ix = find_index(inf, index, err);
	if (!ix)
		return KFT_ENOTFOUND;
	pthread_rwlock_rdlock(&inf->lock);
	kft_cache_map *set = value ? kft_cache_map_get(&ix->values, value) : NULL;
	*count = set ? set->count : 0;
	pthread_rwlock_unlock(&inf->lock);
	return 0;
}

void kft_informer_stats_get(kft_informer *inf, kft_informer_stats *st)
{
	pthread_mutex_lock(&inf->mu);
	*st = inf->stats;
	pthread_mutex_unlock(&inf->mu);
	pthread_rwlock_rdlock(&inf->lock);
	st->objects = inf->items.count;
	pthread_rwlock_unlock(&inf->lock);
}
