/*
 * medianstop.c - Katib's median stopping rule (see hpo.h).
 *
 * Katib's service (pkg/earlystopping/v1beta1/medianstop/service.py) keeps,
 * for every trial that succeeded, the average of its first start_step
 * objective values; once min_trials_required trials have succeeded, the
 * rule value it hands each new trial is the mean of those averages. The
 * trial's metrics collector (cmd/metricscollector/v1beta1/
 * file-metricscollector) then judges the rule once, when the objective has
 * been reported start_step times, with the best value seen so far. The rule
 * is fixed when the trial starts: later successes do not move it.
 */
#include "hpo/hpo_internal.h"

#include <stdlib.h>
#include <string.h>

/* The average of the trial's kept objective head, or -1 when it has none. */
static int head_average(const json_t *trial, double *avg)
{
	const json_t *head = json_object_get(trial, "objectiveHead");
	double sum = 0, v;
	size_t i, n = 0;
	const json_t *x;
	json_array_foreach(head, i, x)
	{
		if (kft_hpo_parse_number(json_string_value(x), &v) != 0)
			continue;
		sum += v;
		n++;
	}
	if (n == 0)
		return -1;
	*avg = sum / (double)n;
	return 0;
}

char *kft_hpo_median_rule(const kft_hpo_spec *spec, const json_t *trials)
{
	double sum = 0, avg;
	long long n = 0;
	size_t i;
	const json_t *t;
	if (!spec->median_stop)
		return NULL;
	json_array_foreach(trials, i, t)
	{
		const char *state = json_string_value(json_object_get(t, "state"));
		if (!state || strcmp(state, KFT_HPO_SUCCEEDED) != 0 || head_average(t, &avg) != 0)
			continue;
		sum += avg;
		n++;
	}
	if (n < spec->min_trials_required || n == 0)
		return NULL;
	char buf[32];
	return strdup(kft_hpo_format_double(sum / (double)n, buf));
}

int kft_hpo_median_says_stop(const kft_hpo_spec *spec, const json_t *trial)
{
	double rule, best;
	const char *r = json_string_value(json_object_get(trial, "medianStop"));
	const json_t *m = kft_hpo_trial_metric(trial, spec->objective);
	json_int_t n = json_integer_value(json_object_get(trial, "objectiveReports"));
	if (!spec->median_stop || !r || n != spec->start_step ||
	    kft_hpo_parse_number(r, &rule) != 0 ||
	    kft_hpo_parse_number(
	            json_string_value(json_object_get(m, spec->maximize ? "max" : "min")), &best) !=
	            0)
		return 0;
	return spec->maximize ? best < rule : best > rule;
}
