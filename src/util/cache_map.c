/*
 * cache_map.c - the string hash map behind the work queue, the informer
 * cache and the schema validator. See cache_map.h for the design; the only
 * subtlety is iteration, which remembers the next entry before handing one
 * out so the caller may remove the current one.
 */
#include "util/cache_map.h"

#include <stdlib.h>
#include <string.h>

#define MIN_BUCKETS 16

void kft_cache_map_init(kft_cache_map *m)
{
	memset(m, 0, sizeof(*m));
}

uint32_t kft_cache_map_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

void kft_cache_map_clear(kft_cache_map *m)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		kft_cache_map_entry *e = m->buckets[i];
		while (e) {
			kft_cache_map_entry *next = e->next;
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	kft_cache_map_init(m);
}

kft_cache_map_entry *kft_cache_map_find(const kft_cache_map *m, const char *key)
{
	if (m->nbuckets == 0)
		return NULL;
	uint32_t h = kft_cache_map_hash(key);
	for (kft_cache_map_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

void *kft_cache_map_get(const kft_cache_map *m, const char *key)
{
	kft_cache_map_entry *e = kft_cache_map_find(m, key);
	return e ? e->value : NULL;
}

/* Moves every entry into a bucket array of n (a power of two). On allocation
 * failure the map keeps its old array: it still works, only slower. */
static void rehash(kft_cache_map *m, size_t n)
{
	kft_cache_map_entry **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		kft_cache_map_entry *e = m->buckets[i];
		while (e) {
			kft_cache_map_entry *next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

kft_cache_map_entry *kft_cache_map_upsert(kft_cache_map *m, const char *key, int *created)
{
	kft_cache_map_entry *e = kft_cache_map_find(m, key);
	*created = 0;
	if (e)
		return e;
	if (m->nbuckets == 0) {
		rehash(m, MIN_BUCKETS);
		if (m->nbuckets == 0)
			return NULL;
	} else if (m->count >= m->nbuckets) {
		rehash(m, m->nbuckets * 2);
	}
	size_t klen = strlen(key);
	e = malloc(sizeof(*e) + klen + 1);
	if (!e)
		return NULL;
	memcpy(e->key, key, klen + 1);
	e->hash = kft_cache_map_hash(key);
	e->value = NULL;
	e->next = m->buckets[e->hash & (m->nbuckets - 1)];
	m->buckets[e->hash & (m->nbuckets - 1)] = e;
	m->count++;
	*created = 1;
	return e;
}

static void *remove_key(kft_cache_map *m, const char *key, int may_shrink)
{
	if (m->nbuckets == 0)
		return NULL;
	uint32_t h = kft_cache_map_hash(key);
	kft_cache_map_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next) {
		kft_cache_map_entry *e = *pp;
		if (e->hash != h || strcmp(e->key, key) != 0)
			continue;
		void *v = e->value;
		*pp = e->next;
		free(e);
		m->count--;
		if (may_shrink && m->nbuckets > MIN_BUCKETS && m->count < m->nbuckets / 4)
			rehash(m, m->nbuckets / 2);
		return v;
	}
	return NULL;
}

void *kft_cache_map_remove(kft_cache_map *m, const char *key)
{
	return remove_key(m, key, 1);
}

void *kft_cache_map_remove_iter(kft_cache_map *m, const char *key)
{
	return remove_key(m, key, 0);
}

/* The first entry at or after bucket it->bucket. */
static kft_cache_map_entry *scan(const kft_cache_map *m, kft_cache_map_iter *it)
{
	while (it->bucket < m->nbuckets) {
		kft_cache_map_entry *e = m->buckets[it->bucket++];
		if (e) {
			it->next = e->next;
			return e;
		}
	}
	return NULL;
}

kft_cache_map_entry *kft_cache_map_first(const kft_cache_map *m, kft_cache_map_iter *it)
{
	it->bucket = 0;
	it->next = NULL;
	return scan(m, it);
}

kft_cache_map_entry *kft_cache_map_next(const kft_cache_map *m, kft_cache_map_iter *it)
{
	kft_cache_map_entry *e = it->next;
	if (e) {
		it->next = e->next;
		return e;
	}
	return scan(m, it);
}
