/*
 * plan.c - an OptimizationJob's next step and its best trial (see hpo.h),
 * after Katib's experiment controller (pkg/controller.v1beta1/experiment/
 * util/status_util.go) and trial controller (trial_controller_util.go).
 */
#include "hpo/hpo_internal.h"

#include <stdio.h>
#include <string.h>

#include "framework/conditions.h"

static const char *state_of(const json_t *trial)
{
	const char *s = json_string_value(json_object_get(trial, "state"));
	return s ? s : KFT_HPO_PENDING;
}

/* Whether the trial's objective was reported (Katib's
 * IsObservationAvailable: the objective metric with a value). */
static bool objective_reported(const kft_hpo_spec *spec, const json_t *trial)
{
	const json_t *m = kft_hpo_trial_metric(trial, spec->objective);
	const char *latest = json_string_value(json_object_get(m, "latest"));
	return latest && strcmp(latest, KFT_HPO_UNAVAILABLE_VALUE) != 0;
}

int kft_hpo_trial_end(const kft_hpo_spec *spec, json_t *trial, kft_hpo_outcome outcome,
                      const char *message, const char *now)
{
	const char *state = outcome == KFT_HPO_JOB_COMPLETE
	                            ? (objective_reported(spec, trial) ? KFT_HPO_SUCCEEDED
	                                                               : KFT_HPO_UNAVAILABLE)
	                    : outcome == KFT_HPO_JOB_EARLY_STOP ? KFT_HPO_EARLY_STOPPED
	                    : outcome == KFT_HPO_JOB_KILLED     ? KFT_HPO_KILLED
	                                                        : KFT_HPO_FAILED;
	if (!message && strcmp(state, KFT_HPO_UNAVAILABLE) == 0)
		message = "Metrics are not available";
	int rc = json_object_set_new(trial, "state", json_string(state)) ||
	         json_object_set_new(trial, "completionTimestamp", json_string(now));
	if (rc == 0 && message)
		rc = json_object_set_new(trial, "message", json_string(message));
	return rc ? KFT_ENOMEM : 0;
}

void kft_hpo_count(const json_t *status, kft_hpo_counts *c)
{
	size_t i;
	const json_t *t;
	memset(c, 0, sizeof(*c));
	json_array_foreach(json_object_get(status, "trials"), i, t)
	{
		const char *s = state_of(t);
		c->total++;
		if (strcmp(s, KFT_HPO_RUNNING) == 0)
			c->running++;
		else if (strcmp(s, KFT_HPO_SUCCEEDED) == 0)
			c->succeeded++;
		else if (strcmp(s, KFT_HPO_FAILED) == 0)
			c->failed++;
		else if (strcmp(s, KFT_HPO_EARLY_STOPPED) == 0)
			c->early_stopped++;
		else if (strcmp(s, KFT_HPO_UNAVAILABLE) == 0)
			c->unavailable++;
		else if (strcmp(s, KFT_HPO_KILLED) == 0)
			c->killed++;
		else
			c->pending++;
	}
}

void kft_hpo_plan_next(const kft_hpo_spec *spec, const json_t *status, kft_hpo_plan *plan)
{
	kft_hpo_counts *c = &plan->counts;
	memset(plan, 0, sizeof(*plan));
	kft_hpo_count(status, c);
	size_t failed = c->failed + c->unavailable;
	size_t done = c->succeeded + failed + c->early_stopped + c->killed;
	size_t active = c->pending + c->running;
	if (spec->max_failed >= 0 && failed != 0 && (long long)failed >= spec->max_failed) {
		plan->finish = KFT_CONDITION_FAILED;
		plan->reason = KFT_HPO_REASON_MAX_FAILED;
		snprintf(plan->message, sizeof(plan->message),
		         "OptimizationJob has failed because max failed count has reached: %zu of "
		         "%zu trials failed (max-failed-trials %lld)",
		         failed, c->total, spec->max_failed);
		return;
	}
	if ((long long)done >= spec->num_trials) {
		plan->finish = KFT_CONDITION_COMPLETE;
		plan->reason = KFT_HPO_REASON_MAX_TRIALS;
		snprintf(plan->message, sizeof(plan->message),
		         "OptimizationJob has succeeded because max trial count has reached: %zu "
		         "trials finished",
		         done);
		return;
	}
	long long room = spec->parallel_trials - (long long)active;
	long long left = spec->num_trials - (long long)c->total;
	long long n = room < left ? room : left;
	plan->create = n > 0 ? (size_t)n : 0;
}

const char *kft_hpo_objective_value(const kft_hpo_spec *spec, const json_t *trial)
{
	const json_t *m = kft_hpo_trial_metric(trial, spec->objective);
	const char *v = json_string_value(json_object_get(m, spec->maximize ? "max" : "min"));
	if (!v || strcmp(v, KFT_HPO_UNAVAILABLE_VALUE) == 0)
		v = json_string_value(json_object_get(m, "latest"));
	return v && strcmp(v, KFT_HPO_UNAVAILABLE_VALUE) != 0 ? v : NULL;
}

long kft_hpo_best(const kft_hpo_spec *spec, const json_t *status)
{
	long best = -1;
	bool have = false;
	double best_v = 0, v;
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(status, "trials"), i, t)
	{
		const char *s = kft_hpo_objective_value(spec, t);
		if (!s)
			continue;
		if (kft_hpo_parse_number(s, &v) != 0) {
			best = (long)
			        i; /* Katib: "for string metrics values best trial is the latest" */
			continue;
		}
		if (!have || (spec->maximize ? v > best_v : v < best_v)) {
			have = true;
			best_v = v;
			best = (long)i;
		}
	}
	return best;
}

const char *kft_hpo_phase(const json_t *opt)
{
	const json_t *st = json_object_get(opt, "status");
	kft_hpo_counts c;
	if (json_object_get(json_object_get(opt, "metadata"), "deletionTimestamp"))
		return "Terminating";
	if (kft_condition_is_true(st, KFT_CONDITION_COMPLETE))
		return KFT_CONDITION_COMPLETE;
	if (kft_condition_is_true(st, KFT_CONDITION_FAILED))
		return KFT_CONDITION_FAILED;
	kft_hpo_count(st, &c);
	return c.running || c.pending ? KFT_HPO_RUNNING : KFT_HPO_CONDITION_CREATED;
}

int kft_hpo_set_result(const kft_hpo_spec *spec, json_t *status)
{
	long b = kft_hpo_best(spec, status);
	if (b < 0) {
		json_object_del(status, "result");
		return 0;
	}
	const json_t *t = json_array_get(json_object_get(status, "trials"), (size_t)b);
	json_t *params = json_deep_copy(json_object_get(t, "parameters"));
	json_t *r = json_pack("{s:O, s:o}", "trainJobName", json_object_get(t, "name"),
	                      "parameters", params ? params : json_array());
	return r && json_object_set_new(status, "result", r) == 0 ? 0 : KFT_ENOMEM;
}
