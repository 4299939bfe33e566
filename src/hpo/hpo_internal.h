/*
 * hpo_internal.h - what the files of src/hpo/ share and no one else needs:
 * the counter-based random stream and small readers of a trial's JSON.
 */
#ifndef KFT_HPO_INTERNAL_H
#define KFT_HPO_INTERNAL_H

#include "hpo/hpo.h"

/* SplitMix64 (values.c, as everything here but kft_hpo_param_index): a
 * stream seeded by (seed, trial index, purpose), so each trial's draws
 * depend on nothing else. */
typedef struct kft_hpo_rng {
	uint64_t state;
} kft_hpo_rng;

enum { KFT_HPO_PURPOSE_RANDOM = 1, KFT_HPO_PURPOSE_TPE = 2 };

void kft_hpo_rng_init(kft_hpo_rng *r, int64_t seed, uint64_t index, uint64_t purpose);
uint64_t kft_hpo_rng_next(kft_hpo_rng *r);
/* A double uniformly in [0, 1). */
double kft_hpo_rng_unit(kft_hpo_rng *r);

/* Appends {"name", "value"} to arr. 0, or -1 on ENOMEM. */
int kft_hpo_assign_add(json_t *arr, const char *name, const char *value);

/* Go's regexp \s: [\t\n\f\r ]. */
bool kft_hpo_go_space(unsigned char c);

/* Go's strconv.ParseFloat as Katib uses it on a metric value: the whole
 * text is one number, no blanks. 0 and *out set, or -1. */
int kft_hpo_parse_number(const char *s, double *out);

/* The index of the parameter named name[0..len) in spec->params, or -1
 * (spec.c). */
long kft_hpo_param_index(const kft_hpo_spec *spec, const char *name, size_t len);

/* Katib's UnavailableMetricValue. */
#define KFT_HPO_UNAVAILABLE_VALUE "unavailable"

#endif
