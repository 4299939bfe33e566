/*
 * json.h - small lookups over jansson trees that many files need
 * (internal).
 */
#ifndef KFT_UTIL_JSON_H
#define KFT_UTIL_JSON_H

#include <jansson.h>

#include "util/strbuf.h"

/* The first element of `array` (borrowed; not an array: none) that is an
 * object whose string member `key` equals `value`, borrowed; NULL when
 * none. The shape of Kubernetes' lists keyed by name or type: containers,
 * volumes, replicatedJobs, conditions. */
json_t *kft_json_find(const json_t *array, const char *key, const char *value);

/* Deepest tree kft_json_dump writes (a cycle ends there too). */
#define KFT_JSON_DUMP_MAX_DEPTH 1024

/*
 * Appends v as compact JSON text to out: exactly the bytes
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) gives (members in the
 * object's order, jansson's escapes and real numbers), at a fifth of its
 * instructions (a 625-byte Event: 57k for json_dumps, which checks for loops
 * and calls back for every piece; 11k here). 0; KFT_EINVAL when a string or key is not
 * UTF-8 (json_dumps refuses such a string, and writes such a key as a lone
 * quote, text no parser takes back) or v nests deeper than
 * KFT_JSON_DUMP_MAX_DEPTH; KFT_ENOMEM when out failed. On error, out may
 * hold part of the text.
 */
int kft_json_dump(const json_t *v, kft_strbuf *out);

#endif
