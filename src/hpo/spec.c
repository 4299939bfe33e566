/*
 * spec.c - an OptimizationJob read into a kft_hpo_spec (see hpo.h).
 *
 * The schema has already checked types, bounds and upstream's CEL rules
 * (kft_object_check), so most of this is reading; the checks here are the
 * ones the schema cannot make: kftrainer's annotations (algorithm, early
 * stopping, their settings, max failed trials, additional metrics) and the
 * numbers inside strings. Every refusal names its field as the API server
 * words a field error.
 */
#include "hpo/hpo_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ANN_FIELD(a) "metadata.annotations[" a "]"

static const char *str_at(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static const char *annotation(const json_t *opt, const char *key)
{
	return str_at(json_object_get(json_object_get(opt, "metadata"), "annotations"), key);
}

/* A whole decimal integer (optional sign), as Python's int() reads a
 * setting; surrounding blanks are not allowed. */
static int parse_ll(const char *s, size_t len, long long *out)
{
	char buf[32];
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') ||
		      (i == 0 && (buf[i] == '-' || buf[i] == '+'))))
			return -1;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (errno || *end || end == buf)
		return -1;
	*out = v;
	return 0;
}

static const kft_hpo_setting *find_setting(const kft_hpo_setting *table, size_t n, const char *name,
                                           size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(table[i].name) == len && strncmp(table[i].name, name, len) == 0)
			return &table[i];
	return NULL;
}

/* One "name=value" item of length len. */
static int setting_item(const char *item, size_t len, const kft_hpo_setting *table, size_t n,
                        const char *field, const char *algorithm, kft_error *err)
{
	const char *eq = memchr(item, '=', len);
	size_t nlen = eq ? (size_t)(eq - item) : len;
	const kft_hpo_setting *s = eq ? find_setting(table, n, item, nlen) : NULL;
	if (!eq || nlen == 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "%s: Invalid value: \"%.*s\": a setting is written name=value",
		                     field, (int)len, item);
	if (!s)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "%s: Invalid value: \"%.*s\": unknown setting %.*s for algorithm %s", field,
		        (int)len, item, (int)nlen, item, algorithm);
	long long v;
	const char *val = eq + 1;
	size_t vlen = len - nlen - 1;
	if (parse_ll(val, vlen, &v) != 0 || v < s->min || v > s->max)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "%s: Invalid value: \"%.*s\": %s must be a whole number from %lld "
		        "to %lld",
		        field, (int)len, item, s->name, s->min, s->max);
	*s->value = v;
	return 0;
}

int kft_hpo_settings_parse(const char *text, const kft_hpo_setting *table, size_t n,
                           const char *field, const char *algorithm, kft_error *err)
{
	const char *p = text ? text : "";
	while (*p == ' ')
		p++;
	if (*p == '\0')
		return 0;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *s = p, *e = p + len;
		while (s < e && *s == ' ')
			s++;
		while (e > s && e[-1] == ' ')
			e--;
		int rc = setting_item(s, (size_t)(e - s), table, n, field, algorithm, err);
		if (rc)
			return rc;
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* ---- metrics ---------------------------------------------------------------- */

static bool listed(const char **names, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
			return true;
	return false;
}

/* The objective, then the additional metrics of the annotation (names
 * separated by commas, blanks around them ignored), which point into
 * spec->metrics_text, a copy of the annotation. */
static int read_metrics(const json_t *opt, kft_hpo_spec *spec, kft_error *err)
{
	const char *extra = annotation(opt, KFT_HPO_ANN_METRICS);
	size_t cap = 2 + (extra ? strlen(extra) : 0);
	spec->metrics = calloc(cap, sizeof(*spec->metrics));
	spec->metrics_text = extra ? strdup(extra) : NULL;
	if (!spec->metrics || (extra && !spec->metrics_text))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	spec->metrics[spec->n_metrics++] = spec->objective;
	for (char *tok = spec->metrics_text; tok;) {
		char *comma = strchr(tok, ',');
		if (comma)
			*comma = '\0';
		while (*tok == ' ')
			tok++;
		char *e = tok + strlen(tok);
		while (e > tok && e[-1] == ' ')
			*--e = '\0';
		size_t len = strlen(tok);
		if (len == 0 || len > 64 || listed(spec->metrics, spec->n_metrics, tok, len))
			return kft_error_set(
			        err, KFT_EINVAL,
			        ANN_FIELD(KFT_HPO_ANN_METRICS) ": Invalid value: \"%s\": "
			                                       "each metric name must be "
			                                       "1 to 64 characters, "
			                                       "named once, not the "
			                                       "objective",
			        extra);
		spec->metrics[spec->n_metrics++] = tok;
		tok = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* ---- parameters -------------------------------------------------------------- */

#define KFT_HPO_INT_MAX 9007199254740992.0 /* 2^53 */

static int read_bound(const json_t *space, const char *key, double *out)
{
	const char *s = str_at(space, key);
	char *end;
	if (!s)
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	return (end == s || *end || errno == ERANGE || !isfinite(*out)) ? -1 : 0;
}

static int read_numeric(const json_t *space, kft_hpo_param *p, size_t i, const char *kind,
                        kft_error *err)
{
	const char *type = str_at(space, "type");
	p->is_int = type && strcmp(type, "Int") == 0;
	if (read_bound(space, "min", &p->min) != 0 || read_bound(space, "max", &p->max) != 0 ||
	    !(p->min < p->max) || (p->dist == KFT_HPO_LOG_UNIFORM && !(p->min > 0)))
		return kft_error_set(err, KFT_EINVAL,
		                     "spec.parameters[%zu].searchSpace.%s: Invalid value: min and "
		                     "max must be numbers with min < max%s",
		                     i, kind, p->dist == KFT_HPO_LOG_UNIFORM ? " and min > 0" : "");
	/* The schema's pattern lets any 64 digits through; draws are doubles:
	 * a Float range must have a finite width, an Int's bounds must be whole
	 * numbers a double holds exactly (|x| <= 2^53; Katib reads an int as
	 * int64). */
	if (!isfinite(p->max - p->min) ||
	    (p->is_int && (fabs(p->min) > KFT_HPO_INT_MAX || fabs(p->max) > KFT_HPO_INT_MAX)))
		return kft_error_set(err, KFT_EINVAL,
		                     "spec.parameters[%zu].searchSpace.%s: Invalid value: min and "
		                     "max must lie within %s",
		                     i, kind, p->is_int ? "-2^53 and 2^53" : "a finite range");
	if (p->is_int) {
		p->min = ceil(p->min);
		p->max = floor(p->max);
		if (p->min > p->max)
			return kft_error_set(
			        err, KFT_EINVAL,
			        "spec.parameters[%zu].searchSpace.%s: Invalid value: no "
			        "whole number lies between min and max",
			        i, kind);
	}
	return 0;
}

static int read_param(const json_t *pj, kft_hpo_param *p, size_t i, kft_error *err)
{
	const json_t *ss = json_object_get(pj, "searchSpace"), *space;
	p->name = str_at(pj, "name");
	if (!p->name || !*p->name)
		return kft_error_set(err, KFT_EINVAL, "spec.parameters[%zu].name: Required value",
		                     i);
	if ((space = json_object_get(ss, "categorical"))) {
		p->dist = KFT_HPO_CATEGORICAL;
		p->choices = json_object_get(space, "choices");
		size_t k, n = json_array_size(p->choices);
		const json_t *c;
		if (n == 0 || n > KFT_HPO_MAX_CHOICES)
			return kft_error_set(
			        err, KFT_EINVAL,
			        "spec.parameters[%zu].searchSpace.categorical.choices: "
			        "Invalid value: 1 to %d strings are required",
			        i, KFT_HPO_MAX_CHOICES);
		/* A choice becomes a ParameterAssignment value (1 to 64 bytes):
		 * the schema says so (items maxLength 64), but the controller
		 * reads whatever the API server stored. */
		json_array_foreach(p->choices, k, c)
		{
			size_t len = json_string_length(c);
			if (!json_is_string(c) || len == 0 || len > KFT_HPO_VALUE_MAX)
				return kft_error_set(
				        err, KFT_EINVAL,
				        "spec.parameters[%zu].searchSpace.categorical.choices[%zu]:"
				        " "
				        "Invalid value: a string of 1 to %d bytes is required",
				        i, k, KFT_HPO_VALUE_MAX);
		}
		return 0;
	}
	if ((space = json_object_get(ss, "uniform"))) {
		p->dist = KFT_HPO_UNIFORM;
		return read_numeric(space, p, i, "uniform", err);
	}
	if ((space = json_object_get(ss, "logUniform"))) {
		p->dist = KFT_HPO_LOG_UNIFORM;
		return read_numeric(space, p, i, "logUniform", err);
	}
	return kft_error_set(err, KFT_EINVAL,
	                     "spec.parameters[%zu].searchSpace: Invalid value: exactly one of "
	                     "uniform, logUniform or categorical must be set",
	                     i);
}

static int read_params(const json_t *spec_j, kft_hpo_spec *spec, kft_error *err)
{
	const json_t *params = json_object_get(spec_j, "parameters");
	size_t n = json_array_size(params);
	if (n == 0 || n > KFT_HPO_MAX_PARAMS)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "spec.parameters: Invalid value: 1 to %d parameters are required",
		        KFT_HPO_MAX_PARAMS);
	spec->params = calloc(n, sizeof(*spec->params));
	if (!spec->params)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int rc = read_param(json_array_get(params, i), &spec->params[i], i, err);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(spec->params[j].name, spec->params[i].name) == 0)
				return kft_error_set(err, KFT_EINVAL,
				                     "spec.parameters[%zu].name: Duplicate value: "
				                     "\"%s\"",
				                     i, spec->params[i].name);
		spec->n_params++;
	}
	return 0;
}

long kft_hpo_param_index(const kft_hpo_spec *spec, const char *name, size_t len)
{
	for (size_t i = 0; i < spec->n_params; i++)
		if (strlen(spec->params[i].name) == len &&
		    memcmp(spec->params[i].name, name, len) == 0)
			return (long)i;
	return -1;
}

/* ---- algorithm and early stopping ---------------------------------------------- */

static int read_algorithm(const json_t *opt, const json_t *spec_j, kft_hpo_spec *spec,
                          kft_error *err)
{
	const json_t *alg = json_object_get(spec_j, "searchAlgorithm");
	const json_t *seed = json_object_get(json_object_get(alg, "random"), "seed");
	spec->algorithm = json_object_get(alg, "grid") ? KFT_HPO_GRID : KFT_HPO_RANDOM;
	if (json_is_integer(seed)) {
		spec->has_seed = true;
		spec->seed = json_integer_value(seed);
	}
	const char *name = annotation(opt, KFT_HPO_ANN_ALGORITHM);
	const char *settings = annotation(opt, KFT_HPO_ANN_ALGORITHM_SETTING);
	if (name && strcmp(name, "tpe") == 0) {
		if (spec->algorithm == KFT_HPO_GRID)
			return kft_error_set(
			        err, KFT_EINVAL,
			        ANN_FIELD(KFT_HPO_ANN_ALGORITHM) ": Invalid value: \"tpe\": "
			                                         "tpe takes "
			                                         "spec.searchAlgorithm."
			                                         "random (and its seed), "
			                                         "not grid");
		spec->algorithm = KFT_HPO_TPE;
	} else if (name && strcmp(name, spec->algorithm == KFT_HPO_GRID ? "grid" : "random") != 0) {
		return kft_error_set(
		        err, KFT_EINVAL,
		        ANN_FIELD(KFT_HPO_ANN_ALGORITHM) ": Unsupported value: \"%s\": "
		                                         "supported values: \"tpe\", or "
		                                         "the one spec.searchAlgorithm "
		                                         "names",
		        name);
	}
	const kft_hpo_setting tpe[] = {
	        {"n_startup_trials", 0, 1000000, &spec->n_startup_trials},
	        {"n_ei_candidates", 1, 10000, &spec->n_ei_candidates},
	};
	const char *alg_name = spec->algorithm == KFT_HPO_TPE    ? "tpe"
	                       : spec->algorithm == KFT_HPO_GRID ? "grid"
	                                                         : "random";
	return kft_hpo_settings_parse(settings, tpe, spec->algorithm == KFT_HPO_TPE ? 2 : 0,
	                              ANN_FIELD(KFT_HPO_ANN_ALGORITHM_SETTING), alg_name, err);
}

static int read_early_stopping(const json_t *opt, kft_hpo_spec *spec, kft_error *err)
{
	const char *name = annotation(opt, KFT_HPO_ANN_EARLY_STOPPING);
	const char *settings = annotation(opt, KFT_HPO_ANN_EARLY_SETTINGS);
	if (name && strcmp(name, "medianstop") != 0)
		return kft_error_set(
		        err, KFT_EINVAL,
		        ANN_FIELD(KFT_HPO_ANN_EARLY_STOPPING) ": Unsupported value: "
		                                              "\"%s\": supported values: "
		                                              "\"medianstop\"",
		        name);
	if (!name && settings)
		return kft_error_set(
		        err, KFT_EINVAL,
		        ANN_FIELD(KFT_HPO_ANN_EARLY_SETTINGS) ": Forbidden: set "
		                                              "only with "
		                                              "" KFT_HPO_ANN_EARLY_STOPPING);
	spec->median_stop = name != NULL;
	const kft_hpo_setting median[] = {
	        {"min_trials_required", 1, 1000000, &spec->min_trials_required},
	        {"start_step", 1, 1000, &spec->start_step},
	};
	return kft_hpo_settings_parse(settings, median, 2, ANN_FIELD(KFT_HPO_ANN_EARLY_SETTINGS),
	                              "medianstop", err);
}

static int read_limits(const json_t *opt, const json_t *spec_j, kft_hpo_spec *spec, kft_error *err)
{
	const json_t *num = json_object_get(spec_j, "numTrials");
	const json_t *par = json_object_get(spec_j, "parallelTrials");
	spec->num_trials = json_is_integer(num) ? json_integer_value(num) : 1;
	spec->parallel_trials = json_is_integer(par) ? json_integer_value(par) : 1;
	if (spec->num_trials < 1 || spec->parallel_trials < 1)
		return kft_error_set(err, KFT_EINVAL,
		                     "spec: Invalid value: numTrials and parallelTrials must be at "
		                     "least 1");
	const char *mf = annotation(opt, KFT_HPO_ANN_MAX_FAILED);
	if (mf && (parse_ll(mf, strlen(mf), &spec->max_failed) != 0 || spec->max_failed < 0 ||
	           spec->max_failed > 1000000))
		return kft_error_set(
		        err, KFT_EINVAL,
		        ANN_FIELD(KFT_HPO_ANN_MAX_FAILED) ": Invalid value: \"%s\": "
		                                          "must be a whole number from "
		                                          "0 to 1000000",
		        mf);
	return 0;
}

static int read_objective(const json_t *spec_j, kft_hpo_spec *spec, kft_error *err)
{
	const json_t *obj = json_array_get(json_object_get(spec_j, "objectives"), 0);
	const char *dir = str_at(obj, "direction");
	spec->objective = str_at(obj, "metric");
	spec->maximize = dir && strcmp(dir, "Maximize") == 0;
	if (!spec->objective || !*spec->objective)
		return kft_error_set(err, KFT_EINVAL, "spec.objectives[0].metric: Required value");
	return 0;
}

int kft_hpo_spec_parse(const json_t *opt, kft_hpo_spec *spec, kft_error *err)
{
	const json_t *meta = json_object_get(opt, "metadata");
	const json_t *spec_j = json_object_get(opt, "spec");
	memset(spec, 0, sizeof(*spec));
	spec->n_startup_trials = 10;
	spec->n_ei_candidates = 24;
	spec->min_trials_required = 3;
	spec->start_step = 4;
	spec->max_failed = -1;
	spec->name = str_at(meta, "name");
	spec->ns = str_at(meta, "namespace");
	if (!spec->ns || !*spec->ns)
		spec->ns = "default";
	spec->template = json_object_get(spec_j, "trainJobTemplate");
	int rc = !json_is_object(spec_j) ? kft_error_set(err, KFT_EINVAL, "spec: Required value")
	         : !json_is_object(spec->template)
	                 ? kft_error_set(err, KFT_EINVAL, "spec.trainJobTemplate: Required value")
	                 : read_objective(spec_j, spec, err);
	if (rc == 0)
		rc = read_metrics(opt, spec, err);
	if (rc == 0)
		rc = read_params(spec_j, spec, err);
	if (rc == 0)
		rc = read_algorithm(opt, spec_j, spec, err);
	if (rc == 0)
		rc = read_early_stopping(opt, spec, err);
	if (rc == 0)
		rc = read_limits(opt, spec_j, spec, err);
	if (rc)
		kft_hpo_spec_free(spec);
	return rc;
}

void kft_hpo_spec_free(kft_hpo_spec *spec)
{
	if (!spec)
		return;
	free((void *)spec->metrics);
	free(spec->metrics_text);
	free(spec->params);
	memset(spec, 0, sizeof(*spec));
}
