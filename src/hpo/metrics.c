/*
 * metrics.c - reading metrics as Katib reads them, and folding them into a
 * trial (see hpo.h).
 *
 * The StdOut filter is Katib's default regular expression, matched by hand
 * rather than through a regex engine: POSIX regcomp has no leftmost-first
 * semantics and no \w, and the expression is small enough that its one
 * possible match at each position can be read off directly. The name part
 * [\w|-]+ is greedy and must be followed by \s*=, which a shorter run of
 * name characters can never be (it would be followed by a name character),
 * so the longest run is the only candidate; everything after the '=' is
 * optional, so once the '=' is found the match exists and the greedy value
 * is taken as far as it goes.
 */
#include "hpo/hpo_internal.h"

#include <stdio.h>
#include <string.h>

/* Go's \w in ASCII mode, plus the '|' and '-' of Katib's class. */
static bool name_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '_' || c == '|' || c == '-';
}

static bool digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static size_t digits(const char *s, size_t i, size_t len)
{
	while (i < len && digit((unsigned char)s[i]))
		i++;
	return i;
}

/* The end of [+-]?\d*(\.\d+)?([Ee][+-]?\d+)? taken greedily from i. */
static size_t value_end(const char *s, size_t i, size_t len)
{
	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	i = digits(s, i, len);
	if (i + 1 < len && s[i] == '.' && digit((unsigned char)s[i + 1]))
		i = digits(s, i + 1, len);
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t j = i + 1;
		if (j < len && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < len && digit((unsigned char)s[j]))
			i = digits(s, j, len);
	}
	return i;
}

/* The match starting at p, if any: its end in *end. */
static bool match_at(const char *s, size_t p, size_t len, size_t *name_end, size_t *val,
                     size_t *end)
{
	size_t i = p;
	while (i < len && name_char((unsigned char)s[i]))
		i++;
	if (i == p)
		return false;
	*name_end = i;
	while (i < len && kft_hpo_go_space((unsigned char)s[i]))
		i++;
	if (i >= len || s[i] != '=')
		return false;
	i++;
	while (i < len && kft_hpo_go_space((unsigned char)s[i]))
		i++;
	*val = i;
	*end = value_end(s, i, len);
	return true;
}

void kft_hpo_stdout_line(const char *line, size_t len, kft_hpo_metric_fn fn, void *ctx)
{
	size_t p = 0;
	while (p < len) {
		size_t name_end, val, end;
		if (!match_at(line, p, len, &name_end, &val, &end)) {
			p++;
			continue;
		}
		fn(ctx, line + p, name_end - p, line + val, end - val);
		p = end; /* a match is never empty: it holds at least "x=" */
	}
}

bool kft_hpo_is_metric(const kft_hpo_spec *spec, const char *name, size_t len)
{
	for (size_t i = 0; i < spec->n_metrics; i++)
		if (strlen(spec->metrics[i]) == len && memcmp(spec->metrics[i], name, len) == 0)
			return true;
	return false;
}

/* ---- folding ------------------------------------------------------------------- */

/* Katib's getMetrics starts every metric the experiment names at
 * "unavailable" once the trial has any observation at all. */
static int ensure_metrics(const kft_hpo_spec *spec, json_t *trial)
{
	json_t *ms = json_object_get(trial, "metrics");
	if (json_array_size(ms) > 0)
		return 0;
	ms = json_array();
	for (size_t i = 0; ms && i < spec->n_metrics; i++)
		if (json_array_append_new(ms, json_pack("{s:s, s:s, s:s, s:s}", "name",
		                                        spec->metrics[i], "min",
		                                        KFT_HPO_UNAVAILABLE_VALUE, "max",
		                                        KFT_HPO_UNAVAILABLE_VALUE, "latest",
		                                        KFT_HPO_UNAVAILABLE_VALUE)) != 0) {
			json_decref(ms);
			ms = NULL;
		}
	return ms && json_object_set_new(trial, "metrics", ms) == 0 ? 0 : KFT_ENOMEM;
}

static bool below(const json_t *m, const char *key, double v)
{
	double cur;
	return kft_hpo_parse_number(json_string_value(json_object_get(m, key)), &cur) == 0 &&
	       v < cur;
}

static bool above(const json_t *m, const char *key, double v)
{
	double cur;
	return kft_hpo_parse_number(json_string_value(json_object_get(m, key)), &cur) == 0 &&
	       v > cur;
}

/* min/max/latest as Katib's trial controller keeps them. */
static int fold(json_t *m, const char *value, bool numeric, double v)
{
	const char *min = json_string_value(json_object_get(m, "min"));
	int rc = json_object_set_new(m, "latest", json_string(value));
	if (!numeric || rc)
		return rc ? KFT_ENOMEM : 0;
	if (!min || strcmp(min, KFT_HPO_UNAVAILABLE_VALUE) == 0)
		rc = json_object_set_new(m, "min", json_string(value)) ||
		     json_object_set_new(m, "max", json_string(value));
	else if (below(m, "min", v))
		rc = json_object_set_new(m, "min", json_string(value));
	else if (above(m, "max", v))
		rc = json_object_set_new(m, "max", json_string(value));
	return rc ? KFT_ENOMEM : 0;
}

/* Counts a numeric objective value and keeps the first start_step. */
static int count_objective(const kft_hpo_spec *spec, json_t *trial, const char *value)
{
	json_int_t n = json_integer_value(json_object_get(trial, "objectiveReports")) + 1;
	if (json_object_set_new(trial, "objectiveReports", json_integer(n)) != 0)
		return KFT_ENOMEM;
	if (!spec->median_stop || n > spec->start_step)
		return 0;
	json_t *head = json_object_get(trial, "objectiveHead");
	if (!head) {
		head = json_array();
		if (json_object_set_new(trial, "objectiveHead", head) != 0)
			return KFT_ENOMEM;
	}
	return json_array_append_new(head, json_string(value)) == 0 ? 0 : KFT_ENOMEM;
}

int kft_hpo_observe(const kft_hpo_spec *spec, json_t *trial, const char *metric, const char *value)
{
	double v = 0;
	if (!kft_hpo_is_metric(spec, metric, strlen(metric)) || !value)
		return 0;
	int rc = ensure_metrics(spec, trial);
	json_t *m = rc ? NULL : kft_hpo_trial_metric(trial, metric);
	bool numeric = kft_hpo_parse_number(value, &v) == 0;
	if (rc == 0 && m)
		rc = fold(m, value, numeric, v);
	if (rc || !numeric || strcmp(metric, spec->objective) != 0)
		return rc;
	rc = count_objective(spec, trial, value);
	return rc ? rc : kft_hpo_median_says_stop(spec, trial);
}
