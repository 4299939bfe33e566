/*
 * tpe.c - the Tree-structured Parzen Estimator (Bergstra et al., 2011), in
 * the shape of Optuna's univariate TPESampler that Katib's "tpe" runs
 * (see hpo.h).
 *
 * The trials that finished with an objective value are split into the
 * best gamma(n) = min(ceil(n / 10), 25) and the others. For each parameter
 * a density is fitted to each group: for a number, a mixture of Gaussians
 * truncated to the range, one at each observed value plus a broad prior
 * at the middle of the range, each as wide as the larger gap to its
 * neighbours (clipped, Optuna's "magic clip"); for a choice, the counts
 * plus a prior of 1/k each. n_ei_candidates values are drawn from the
 * good density and the one with the largest good/other ratio (the
 * expected-improvement criterion of the paper) is taken. Log-uniform
 * parameters are fitted in log space; whole numbers on a range widened by
 * half a step and rounded. Weights are uniform (Optuna ramps the weights
 * of old observations down only beyond 25 of them; a search here seldom
 * has that many).
 */
#include "hpo/hpo_internal.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct obs {
	double value;         /* objective, negated when maximizing: lower is better */
	const json_t *params; /* the trial's parameters, borrowed */
} obs;

typedef struct parzen {
	double *mu, *sigma;
	size_t n;
	double lo, hi;
} parzen;

static int by_value(const void *a, const void *b)
{
	double x = ((const obs *)a)->value, y = ((const obs *)b)->value;
	return x < y ? -1 : x > y ? 1 : 0;
}

/* Trials that finished with a numeric objective, best first, into a new
 * array (*n entries). */
static obs *observations(const kft_hpo_spec *spec, const json_t *trials, size_t *n)
{
	obs *o = calloc(json_array_size(trials) + 1, sizeof(*o));
	size_t i;
	const json_t *t;
	*n = 0;
	json_array_foreach(o ? trials : NULL, i, t)
	{
		const char *state = json_string_value(json_object_get(t, "state"));
		double v;
		if (!state ||
		    (strcmp(state, KFT_HPO_SUCCEEDED) != 0 &&
		     strcmp(state, KFT_HPO_EARLY_STOPPED) != 0) ||
		    kft_hpo_parse_number(kft_hpo_objective_value(spec, t), &v) != 0 || isnan(v))
			continue;
		o[*n].value = spec->maximize ? -v : v;
		o[*n].params = json_object_get(t, "parameters");
		(*n)++;
	}
	if (o)
		qsort(o, *n, sizeof(*o), by_value);
	return o;
}

static const char *value_of(const json_t *params, const char *name)
{
	return json_string_value(json_object_get(kft_json_find(params, "name", name), "value"));
}

/* ---- numbers ------------------------------------------------------------------- */

static double to_space(const kft_hpo_param *p, double x)
{
	return p->dist == KFT_HPO_LOG_UNIFORM ? log(x) : x;
}

static void range_of(const kft_hpo_param *p, double *lo, double *hi)
{
	double a = p->is_int ? p->min - 0.5 : p->min, b = p->is_int ? p->max + 0.5 : p->max;
	*lo = to_space(p, a);
	*hi = to_space(p, b);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y ? 1 : 0;
}

/* The mixture over xs[0..n) (values in the parameter's space) and the
 * prior, Optuna's _ParzenEstimator with consider_prior, prior_weight 1,
 * magic clip and consider_endpoints off. */
static int parzen_fit(const double *xs, size_t n, double lo, double hi, parzen *p)
{
	size_t m = n + 1;
	double prior = 0.5 * (lo + hi), width = hi - lo;
	p->mu = malloc(m * sizeof(double));
	p->sigma = malloc(m * sizeof(double));
	p->n = m;
	p->lo = lo;
	p->hi = hi;
	if (!p->mu || !p->sigma)
		return -1;
	memcpy(p->mu, xs, n * sizeof(double));
	p->mu[n] = prior;
	qsort(p->mu, m, sizeof(double), by_double);
	for (size_t i = 0; i < m; i++) {
		double left = p->mu[i] - (i > 0 ? p->mu[i - 1] : lo);
		double right = (i + 1 < m ? p->mu[i + 1] : hi) - p->mu[i];
		if (m > 1 && i == 0)
			left = right;
		if (m > 1 && i == m - 1)
			right = left;
		p->sigma[i] = left > right ? left : right;
	}
	double min_sigma = width / (m + 1 < 100 ? (double)(m + 1) : 100.0);
	bool prior_done = false;
	for (size_t i = 0; i < m; i++) {
		if (!prior_done && p->mu[i] == prior) {
			p->sigma[i] = width; /* the prior is as wide as the range */
			prior_done = true;
		}
		p->sigma[i] = fmin(fmax(p->sigma[i], min_sigma), width);
	}
	return 0;
}

static void parzen_free(parzen *p)
{
	free(p->mu);
	free(p->sigma);
}

static double phi_cdf(double z)
{
	return 0.5 * erfc(-z / sqrt(2.0));
}

/* log of component k's truncated density at x. */
static double component_logpdf(const parzen *p, size_t k, double x)
{
	double s = p->sigma[k], z = (x - p->mu[k]) / s;
	double mass = phi_cdf((p->hi - p->mu[k]) / s) - phi_cdf((p->lo - p->mu[k]) / s);
	return -0.5 * z * z - log(s * sqrt(2 * M_PI)) - log(fmax(mass, 1e-300));
}

/* log of the truncated mixture's density at x (equal weights), summed
 * stably around the largest term. */
static double parzen_logpdf(const parzen *p, double x)
{
	double top = -INFINITY, sum = 0;
	for (size_t k = 0; k < p->n; k++)
		top = fmax(top, component_logpdf(p, k, x));
	for (size_t k = 0; k < p->n; k++)
		sum += exp(component_logpdf(p, k, x) - top);
	return top + log(sum / (double)p->n);
}

static double normal(kft_hpo_rng *r)
{
	double u1 = kft_hpo_rng_unit(r), u2 = kft_hpo_rng_unit(r);
	return sqrt(-2.0 * log(1.0 - u1)) * cos(2 * M_PI * u2);
}

static double parzen_sample(const parzen *p, kft_hpo_rng *r)
{
	size_t k = (size_t)(kft_hpo_rng_unit(r) * (double)p->n);
	k = k < p->n ? k : p->n - 1;
	for (int tries = 0; tries < 64; tries++) {
		double x = p->mu[k] + p->sigma[k] * normal(r);
		if (x >= p->lo && x <= p->hi)
			return x;
	}
	return p->lo + kft_hpo_rng_unit(r) * (p->hi - p->lo);
}

/* The values of parameter p over obs[from..to), in its space. */
static size_t gather(const kft_hpo_param *p, const obs *o, size_t from, size_t to, double *out)
{
	size_t n = 0;
	for (size_t i = from; i < to; i++) {
		double v;
		if (kft_hpo_parse_number(value_of(o[i].params, p->name), &v) == 0 &&
		    (p->dist != KFT_HPO_LOG_UNIFORM || v > 0))
			out[n++] = to_space(p, v);
	}
	return n;
}

static int suggest_number(const kft_hpo_spec *spec, const kft_hpo_param *p, const obs *o, size_t n,
                          size_t n_below, kft_hpo_rng *r, char buf[32])
{
	double lo, hi, *xs = malloc((n + 1) * sizeof(double)), best_x = 0, best = -INFINITY;
	parzen good = {0}, bad = {0};
	range_of(p, &lo, &hi);
	int rc = xs ? 0 : -1;
	if (rc == 0)
		rc = parzen_fit(xs, gather(p, o, 0, n_below, xs), lo, hi, &good);
	if (rc == 0)
		rc = parzen_fit(xs, gather(p, o, n_below, n, xs), lo, hi, &bad);
	for (long long i = 0; rc == 0 && i < spec->n_ei_candidates; i++) {
		double x = parzen_sample(&good, r);
		double score = parzen_logpdf(&good, x) - parzen_logpdf(&bad, x);
		if (i == 0 || score > best) {
			best = score;
			best_x = x;
		}
	}
	parzen_free(&good);
	parzen_free(&bad);
	free(xs);
	if (rc)
		return rc;
	double v = p->dist == KFT_HPO_LOG_UNIFORM ? exp(best_x) : best_x;
	v = fmin(fmax(p->is_int ? (double)llround(v) : v, p->min), p->max);
	if (p->is_int)
		snprintf(buf, 32, "%lld", (long long)llround(v));
	else
		kft_hpo_format_double(v, buf);
	return 0;
}

/* ---- choices ------------------------------------------------------------------- */

static size_t choice_index(const kft_hpo_param *p, const char *v)
{
	size_t i;
	const json_t *c;
	json_array_foreach(p->choices, i,
	                   c) if (v && strcmp(json_string_value(c), v) == 0) return i;
	return (size_t)-1;
}

/* Counts plus the prior 1/k, normalized, into w[0..k). */
static void choice_weights(const kft_hpo_param *p, const obs *o, size_t from, size_t to, double *w)
{
	size_t k = json_array_size(p->choices);
	double total = 0;
	for (size_t i = 0; i < k; i++)
		w[i] = 1.0 / (double)k;
	for (size_t i = from; i < to; i++) {
		size_t c = choice_index(p, value_of(o[i].params, p->name));
		if (c < k)
			w[c] += 1.0;
	}
	for (size_t i = 0; i < k; i++)
		total += w[i];
	for (size_t i = 0; i < k; i++)
		w[i] /= total;
}

static const char *suggest_choice(const kft_hpo_spec *spec, const kft_hpo_param *p, const obs *o,
                                  size_t n, size_t n_below, kft_hpo_rng *r)
{
	size_t k = json_array_size(p->choices), pick = 0;
	double good[KFT_HPO_MAX_CHOICES], bad[KFT_HPO_MAX_CHOICES], best = -INFINITY;
	choice_weights(p, o, 0, n_below, good);
	choice_weights(p, o, n_below, n, bad);
	for (long long i = 0; i < spec->n_ei_candidates; i++) {
		double u = kft_hpo_rng_unit(r), acc = 0;
		size_t c = 0;
		while (c + 1 < k && (acc += good[c]) <= u)
			c++;
		double score = log(good[c]) - log(bad[c]);
		if (i == 0 || score > best) {
			best = score;
			pick = c;
		}
	}
	return json_string_value(json_array_get(p->choices, pick));
}

/* ---- the sampler ------------------------------------------------------------------ */

json_t *kft_hpo_tpe(const kft_hpo_spec *spec, const json_t *trials, int64_t seed, uint64_t index)
{
	size_t n = 0;
	obs *o = observations(spec, trials, &n);
	if (!o)
		return NULL;
	if ((long long)n < spec->n_startup_trials || n == 0) {
		free(o);
		return kft_hpo_random(spec, seed, index);
	}
	size_t n_below = (n + 9) / 10 < 25 ? (n + 9) / 10 : 25;
	kft_hpo_rng r;
	kft_hpo_rng_init(&r, seed, index, KFT_HPO_PURPOSE_TPE);
	json_t *out = json_array();
	for (size_t i = 0; out && i < spec->n_params; i++) {
		const kft_hpo_param *p = &spec->params[i];
		char buf[32];
		const char *v = buf;
		if (p->dist == KFT_HPO_CATEGORICAL)
			v = suggest_choice(spec, p, o, n, n_below, &r);
		else if (suggest_number(spec, p, o, n, n_below, &r, buf) != 0)
			v = NULL;
		if (!v || kft_hpo_assign_add(out, p->name, v) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	free(o);
	return out;
}
