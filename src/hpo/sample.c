/*
 * sample.c - random and grid search, and how a value is written (see
 * hpo.h).
 *
 * Randomness is a counter-based stream: SplitMix64 seeded by (seed, trial
 * index, purpose), so trial k's draw depends on nothing but the seed and k.
 * A seeded search is then reproducible however its trials interleave, and
 * a driver that restarts between choosing a trial and recording it draws
 * the same trial again. SplitMix64 (Steele, Lea and Flood, 2014) passes
 * BigCrush; nothing here needs unpredictability.
 */
#include "hpo/hpo_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t kft_hpo_rng_next(kft_hpo_rng *r)
{
	uint64_t z = (r->state += GOLDEN);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void kft_hpo_rng_init(kft_hpo_rng *r, int64_t seed, uint64_t index, uint64_t purpose)
{
	kft_hpo_rng mix = {.state = (uint64_t)seed};
	r->state = kft_hpo_rng_next(&mix) ^ (index * 0xd1b54a32d192ed03ULL);
	r->state = kft_hpo_rng_next(r) ^ (purpose * 0xaef17502108ef2d9ULL);
}

double kft_hpo_rng_unit(kft_hpo_rng *r)
{
	return (double)(kft_hpo_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- writing values ------------------------------------------------------------ */

/* Python's repr of a float, which is what Katib's suggestion services
 * hand over: the fewest significant digits that read back to v, in fixed
 * notation for decimal exponents -4..15 (with ".0" when whole), else in
 * exponent notation ("1e-05"). */
char *kft_hpo_format_double(double v, char buf[32])
{
	int p = 1;
	for (; p < 17; p++) {
		snprintf(buf, 32, "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, 32, "%.*e", p - 1, v);
	int e = atoi(strchr(buf, 'e') + 1);
	if (e < -4 || e >= 16 || !isfinite(v))
		return buf;
	int decimals = p - 1 - e;
	snprintf(buf, 32, "%.*f", decimals > 0 ? decimals : 0, v);
	if (!strchr(buf, '.') && strlen(buf) + 2 < 32)
		strcat(buf, ".0");
	return buf;
}

/* A numeric parameter's value as text. */
static void format_value(const kft_hpo_param *p, double v, char buf[32])
{
	if (p->is_int)
		snprintf(buf, 32, "%lld", (long long)llround(v));
	else
		kft_hpo_format_double(v, buf);
}

int kft_hpo_assign_add(json_t *arr, const char *name, const char *value)
{
	return json_array_append_new(arr, json_pack("{s:s, s:s}", "name", name, "value", value));
}

/* ---- random ------------------------------------------------------------------- */

/* One draw of p with unit u in [0, 1) into buf, or the choice's text
 * (borrowed) through *choice. */
static void draw(const kft_hpo_param *p, kft_hpo_rng *r, char buf[32], const char **choice)
{
	double u = kft_hpo_rng_unit(r), v;
	*choice = NULL;
	if (p->dist == KFT_HPO_CATEGORICAL) {
		size_t n = json_array_size(p->choices), k = (size_t)(u * (double)n);
		*choice = json_string_value(json_array_get(p->choices, k < n ? k : n - 1));
		return;
	}
	if (p->is_int && p->dist == KFT_HPO_UNIFORM) {
		/* every whole number min..max with equal chance */
		v = p->min + floor(u * (p->max - p->min + 1));
		format_value(p, v > p->max ? p->max : v, buf);
		return;
	}
	/* Optuna widens an Int's log range by half a step each side, then rounds */
	double lo = p->is_int ? p->min - 0.5 : p->min, hi = p->is_int ? p->max + 0.5 : p->max;
	if (p->dist == KFT_HPO_LOG_UNIFORM)
		v = exp(log(lo) + u * (log(hi) - log(lo)));
	else
		v = lo + u * (hi - lo);
	if (p->is_int)
		v = fmin(fmax(llround(v), p->min), p->max);
	format_value(p, fmin(fmax(v, p->min), p->max), buf);
}

json_t *kft_hpo_random(const kft_hpo_spec *spec, int64_t seed, uint64_t index)
{
	kft_hpo_rng r;
	json_t *out = json_array();
	kft_hpo_rng_init(&r, seed, index, KFT_HPO_PURPOSE_RANDOM);
	for (size_t i = 0; out && i < spec->n_params; i++) {
		char buf[32];
		const char *choice;
		draw(&spec->params[i], &r, buf, &choice);
		if (kft_hpo_assign_add(out, spec->params[i].name, choice ? choice : buf) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

/* ---- grid --------------------------------------------------------------------- */

/* The number of points of one parameter's grid, or 0 when it has none. */
static uint64_t grid_size(const kft_hpo_param *p)
{
	if (p->dist == KFT_HPO_CATEGORICAL)
		return json_array_size(p->choices);
	if (p->is_int)
		return (uint64_t)(p->max - p->min) + 1;
	return 0;
}

int kft_hpo_grid_count(const kft_hpo_spec *spec, uint64_t *count, kft_error *err)
{
	uint64_t total = 1;
	for (size_t i = 0; i < spec->n_params; i++) {
		uint64_t n = grid_size(&spec->params[i]);
		if (n == 0)
			return kft_error_set(
			        err, KFT_EINVAL,
			        "spec.parameters[%zu]: Invalid value: grid search: Param "
			        "%s step is nil; For discrete search space, all parameters "
			        "must include step",
			        i, spec->params[i].name);
		total = total > UINT64_MAX / n ? UINT64_MAX : total * n;
	}
	*count = total;
	if ((uint64_t)spec->num_trials > total)
		return kft_error_set(err, KFT_EINVAL,
		                     "spec.numTrials: Invalid value: %lld: grid search: Max Trial "
		                     "Count: %lld > all possible search combinations: %llu",
		                     spec->num_trials, spec->num_trials, (unsigned long long)total);
	return 0;
}

json_t *kft_hpo_grid(const kft_hpo_spec *spec, uint64_t index)
{
	json_t *out = json_array();
	/* odometer: the last parameter turns fastest */
	for (size_t i = spec->n_params; out && i-- > 0;) {
		const kft_hpo_param *p = &spec->params[i];
		uint64_t n = grid_size(p), k = n ? index % n : 0;
		char buf[32];
		const char *v = buf;
		index = n ? index / n : 0;
		if (p->dist == KFT_HPO_CATEGORICAL)
			v = json_string_value(json_array_get(p->choices, k));
		else
			snprintf(buf, sizeof(buf), "%lld", (long long)p->min + (long long)k);
		if (json_array_insert_new(
		            out, 0, json_pack("{s:s, s:s}", "name", p->name, "value", v)) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

/* ---- dispatch ------------------------------------------------------------------- */

int kft_hpo_suggest(const kft_hpo_spec *spec, const json_t *trials, int64_t seed, uint64_t index,
                    json_t **out, kft_error *err)
{
	uint64_t count = 0;
	*out = NULL;
	if (spec->algorithm == KFT_HPO_GRID) {
		int rc = kft_hpo_grid_count(spec, &count, err);
		if (rc == 0 && index >= count)
			rc = kft_error_set(err, KFT_EINVAL,
			                   "grid search: all %llu points were tried",
			                   (unsigned long long)count);
		if (rc)
			return rc;
		*out = kft_hpo_grid(spec, index);
	} else if (spec->algorithm == KFT_HPO_TPE) {
		*out = kft_hpo_tpe(spec, trials, seed, index);
	} else {
		*out = kft_hpo_random(spec, seed, index);
	}
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}
