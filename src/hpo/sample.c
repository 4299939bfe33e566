/*
 * sample.c - random and grid search, and how a parameter's value is written
 * (see hpo.h). The random stream and number formatting are values.c's.
 */
#include "hpo/hpo_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing values ------------------------------------------------------------ */

/* A numeric parameter's value as text. */
static void format_value(const kft_hpo_param *p, double v, char buf[32])
{
	if (p->is_int)
		snprintf(buf, 32, "%lld", (long long)llround(v));
	else
		kft_hpo_format_double(v, buf);
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
