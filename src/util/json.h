/*
 * json.h - small lookups over jansson trees that many files need
 * (internal).
 */
#ifndef KFT_UTIL_JSON_H
#define KFT_UTIL_JSON_H

#include <jansson.h>

/* The first element of `array` (borrowed; not an array: none) that is an
 * object whose string member `key` equals `value`, borrowed; NULL when
 * none. The shape of Kubernetes' lists keyed by name or type: containers,
 * volumes, replicatedJobs, conditions. */
json_t *kft_json_find(const json_t *array, const char *key, const char *value);

#endif
