/*
 * cache_map.h - a string-keyed hash map: the work queue, the informer
 * cache, the schema validator's duplicate checks (internal).
 *
 * Keys are copied into the entry (one allocation per entry: the entry and
 * its key together), values are opaque pointers the caller owns. Chained
 * buckets, doubled when the load passes 1, never shrunk below 16 buckets but
 * halved when it falls under 1/4, so a cache that held 10,000 objects does
 * not keep their bucket array forever. Not thread-safe: the owners lock.
 */
#ifndef KFT_UTIL_CACHE_MAP_H
#define KFT_UTIL_CACHE_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kft_cache_map_entry {
	struct kft_cache_map_entry *next;
	void *value;
	uint32_t hash;
	char key[]; /* NUL-terminated, owned by the entry */
} kft_cache_map_entry;

typedef struct kft_cache_map {
	kft_cache_map_entry **buckets;
	size_t nbuckets; /* a power of two, or 0 before the first insert */
	size_t count;
} kft_cache_map;

/* An empty map needs no allocation: zero it or call kft_cache_map_init. */
void kft_cache_map_init(kft_cache_map *m);

/* Frees the entries (not the values: iterate first when they need freeing). */
void kft_cache_map_clear(kft_cache_map *m);

/* The entry for key, or NULL. */
kft_cache_map_entry *kft_cache_map_find(const kft_cache_map *m, const char *key);

/* The value for key, or NULL when absent. */
void *kft_cache_map_get(const kft_cache_map *m, const char *key);

/*
 * The entry for key, created with value NULL when absent (*created = 1).
 * Returns NULL only when out of memory.
 */
kft_cache_map_entry *kft_cache_map_upsert(kft_cache_map *m, const char *key, int *created);

/* Removes key; returns its value (NULL when absent). */
void *kft_cache_map_remove(kft_cache_map *m, const char *key);

/*
 * Iteration: `for (e = kft_cache_map_first(m, &it); e; e = kft_cache_map_next(m, &it))`.
 * The map must not change during the loop, except that the entry just
 * returned may be removed with kft_cache_map_remove_iter.
 */
typedef struct kft_cache_map_iter {
	size_t bucket;
	kft_cache_map_entry *next;
} kft_cache_map_iter;

kft_cache_map_entry *kft_cache_map_first(const kft_cache_map *m, kft_cache_map_iter *it);
/* kft_cache_map_remove without shrinking the bucket array, safe inside a loop. */
void *kft_cache_map_remove_iter(kft_cache_map *m, const char *key);
kft_cache_map_entry *kft_cache_map_next(const kft_cache_map *m, kft_cache_map_iter *it);

/* The FNV-1a hash of s (also used by the indexes). */
uint32_t kft_cache_map_hash(const char *s);

#endif
