/*
 * cache_map.h - a string-keyed hash map for the work queue and the informer
 * cache (internal).
 *
 * Keys are copied into the entry (one allocation per entry: the entry and
 * its key together), values are opaque pointers the caller owns. Chained
 * buckets, doubled when the load passes 1, never shrunk below 16 buckets but
 * halved when it falls under 1/4, so a cache that held 10,000 objects does
 * not keep their bucket array forever. Not thread-safe: the owners lock.
 */
#ifndef KFT_KUBE_CACHE_MAP_H
#define KFT_KUBE_CACHE_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kft_smap_entry {
	struct kft_smap_entry *next;
	void *value;
	uint32_t hash;
	char key[]; /* NUL-terminated, owned by the entry */
} kft_smap_entry;

typedef struct kft_smap {
	kft_smap_entry **buckets;
	size_t nbuckets; /* a power of two, or 0 before the first insert */
	size_t count;
} kft_smap;

/* An empty map needs no allocation: zero it or call kft_smap_init. */
void kft_smap_init(kft_smap *m);

/* Frees the entries (not the values: iterate first when they need freeing). */
void kft_smap_clear(kft_smap *m);

/* The entry for key, or NULL. */
kft_smap_entry *kft_smap_find(const kft_smap *m, const char *key);

/* The value for key, or NULL when absent. */
void *kft_smap_get(const kft_smap *m, const char *key);

/*
 * The entry for key, created with value NULL when absent (*created = 1).
 * Returns NULL only when out of memory.
 */
kft_smap_entry *kft_smap_upsert(kft_smap *m, const char *key, int *created);

/* Removes key; returns its value (NULL when absent). */
void *kft_smap_remove(kft_smap *m, const char *key);

/*
 * Iteration: `for (e = kft_smap_first(m, &it); e; e = kft_smap_next(m, &it))`.
 * The map must not change during the loop, except that the entry just
 * returned may be removed with kft_smap_remove_iter.
 */
typedef struct kft_smap_iter {
	size_t bucket;
	kft_smap_entry *next;
} kft_smap_iter;

kft_smap_entry *kft_smap_first(const kft_smap *m, kft_smap_iter *it);
/* kft_smap_remove without shrinking the bucket array, safe inside a loop. */
void *kft_smap_remove_iter(kft_smap *m, const char *key);
kft_smap_entry *kft_smap_next(const kft_smap *m, kft_smap_iter *it);

/* The FNV-1a hash of s (also used by the indexes). */
uint32_t kft_smap_hash(const char *s);

#endif
