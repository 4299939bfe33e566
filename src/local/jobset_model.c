/*
 * jobset_model.c - the JobSet controller's judgements over the engine's
 * model (engine.h): dependsOn, the success policy, and the counts of
 * replicatedJobsStatus. Pure functions of the model, so the engine stays a
 * loop of "observe processes, judge, act".
 *
 * JobSet v0.12 semantics followed: a dependsOn entry with status Ready is met
 * when every Job of the named replicated job is ready or succeeded; Complete
 * when every one succeeded. successPolicy operator All (the default) needs
 * every Job of the target replicated jobs (all when none are named) to
 * succeed; Any needs one. A Job counts as ready when its ready plus
 * succeeded pods reach its parallelism. startupPolicy InOrder starts each
 * replicated job once the one before it is ready.
 */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "local/engine.h"
#include "local/local_internal.h"

static int64_t count_or(const json_t *o, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

int kft_rjob_counts_of(const json_t *rjob, kft_rjob_counts *c)
{
	const json_t *spec = json_object_get(json_object_get(rjob, "template"), "spec");
	c->replicas = count_or(rjob, "replicas", 1);
	c->parallelism = count_or(spec, "parallelism", 1);
	c->completions = count_or(spec, "completions", c->parallelism);
	return c->replicas < 0 || c->parallelism < 0 || c->completions < 0 ? -1 : 0;
}

static const eng_rjob *find(const eng_rjob *rjobs, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(rjobs[i].name, name) == 0)
			return &rjobs[i];
	return NULL;
}

static bool job_ready(const eng_rjob *rj, int replica)
{
	int ok = 0;
	if (rj->jobs[replica].state == JOB_SUCCEEDED)
		return true;
	if (rj->jobs[replica].state != JOB_ACTIVE)
		return false;
	for (int i = 0; i < rj->completions; i++) {
		pod_phase ph = rj->pods[replica * rj->completions + i].phase;
		ok += ph == POD_RUNNING || ph == POD_SUCCEEDED;
	}
	return ok >= rj->parallelism;
}

static int count_state(const eng_rjob *rj, job_state st)
{
	int c = 0;
	for (int r = 0; r < rj->replicas; r++)
		c += rj->jobs[r].state == st;
	return c;
}

static int count_ready(const eng_rjob *rj)
{
	int c = 0;
	for (int r = 0; r < rj->replicas; r++)
		c += rj->jobs[r].state == JOB_ACTIVE && job_ready(rj, r);
	return c;
}

bool kft_jobset_model_depends_met(const eng_rjob *rjobs, size_t n, const eng_rjob *rj)
{
	size_t i;
	const json_t *d;
	json_array_foreach(json_object_get(rj->spec, "dependsOn"), i, d)
	{
		const eng_rjob *t = find(rjobs, n, json_string_value(json_object_get(d, "name")));
		const char *want = json_string_value(json_object_get(d, "status"));
		if (!t)
			continue; /* the webhook refuses this; nothing to wait for */
		int done = count_state(t, JOB_SUCCEEDED);
		if (want && strcmp(want, "Ready") == 0) {
			if (done + count_ready(t) < t->replicas)
				return false;
		} else if (done < t->replicas)
			return false;
	}
	return true;
}

bool kft_jobset_model_in_order_met(const json_t *jobset_spec, const eng_rjob *rjobs, size_t i)
{
	const char *order = json_string_value(json_object_get(
	        json_object_get(jobset_spec, "startupPolicy"), "startupPolicyOrder"));
	if (i == 0 || !order || strcmp(order, "InOrder") != 0)
		return true;
	const eng_rjob *prev = &rjobs[i - 1];
	return prev->started &&
	       count_state(prev, JOB_SUCCEEDED) + count_ready(prev) >= prev->replicas;
}

static bool targeted(const json_t *targets, const char *name)
{
	size_t i;
	const json_t *t;
	if (json_array_size(targets) == 0)
		return true;
	json_array_foreach(targets, i, t)
	{
		if (json_string_value(t) && strcmp(json_string_value(t), name) == 0)
			return true;
	}
	return false;
}

bool kft_jobset_model_success(const json_t *jobset_spec, const eng_rjob *rjobs, size_t n)
{
	const json_t *pol = json_object_get(jobset_spec, "successPolicy");
	const char *op = json_string_value(json_object_get(pol, "operator"));
	const json_t *targets = json_object_get(pol, "targetReplicatedJobs");
	bool any = op && strcmp(op, "Any") == 0;
	int total = 0, done = 0;
	for (size_t i = 0; i < n; i++) {
		if (!targeted(targets, rjobs[i].name))
			continue;
		total += rjobs[i].replicas;
		done += count_state(&rjobs[i], JOB_SUCCEEDED);
	}
	return any ? done > 0 : total > 0 && done == total;
}

json_t *kft_jobset_model_rjobs_status(const eng_rjob *rjobs, size_t n, bool suspended)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		const eng_rjob *rj = &rjobs[i];
		json_t *one = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "name", rj->name, "ready",
		                        suspended ? 0 : count_ready(rj), "succeeded",
		                        count_state(rj, JOB_SUCCEEDED), "failed",
		                        count_state(rj, JOB_FAILED), "active",
		                        suspended ? 0 : count_state(rj, JOB_ACTIVE), "suspended",
		                        suspended ? rj->replicas - count_state(rj, JOB_SUCCEEDED) -
		                                            count_state(rj, JOB_FAILED)
		                                  : 0);
		if (!one || json_array_append_new(arr, one) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

void kft_jobset_model_first_failed(const char *jobset, const eng_rjob *rjobs, size_t n, char *buf,
                                   size_t size, const eng_pod **pod, const char **rjob)
{
	const eng_rjob *best_rj = NULL;
	int best_r = 0;
	int64_t best_t = 0;
	*pod = NULL;
	*rjob = NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < rjobs[i].replicas; r++) {
			const eng_job *j = &rjobs[i].jobs[r];
			if (j->state == JOB_FAILED && (!best_rj || j->failed_at < best_t)) {
				best_rj = &rjobs[i];
				best_r = r;
				best_t = j->failed_at;
			}
		}
	if (!best_rj)
		return;
	snprintf(buf, size, "%s-%s-%d", jobset, best_rj->name, best_r);
	*rjob = best_rj->name;
	for (int i = 0; i < best_rj->completions; i++) {
		const eng_pod *p = &best_rj->pods[best_r * best_rj->completions + i];
		if (p->phase == POD_FAILED && p->reason && strcmp(p->reason, "Stopped") != 0) {
			*pod = p;
			return;
		}
	}
}

static bool contains(const json_t *list, const char *s)
{
	size_t i;
	const json_t *v;
	json_array_foreach(list, i, v)
	{
		if (json_string_value(v) && s && strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

/* Go's regexp (RE2) and POSIX extended expressions agree on the patterns a
 * rule is likely to hold; one that does not compile matches nothing, as
 * upstream skips an invalid pattern. */
static bool any_pattern(const json_t *patterns, const char *msg)
{
	size_t i;
	const json_t *v;
	json_array_foreach(patterns, i, v)
	{
		regex_t re;
		const char *pat = json_string_value(v);
		if (!pat || regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0)
			continue;
		bool hit = regexec(&re, msg, 0, NULL, 0) == 0;
		regfree(&re);
		if (hit)
			return true;
	}
	return false;
}

const char *kft_jobset_model_rule_action(const json_t *failure_policy, const char *rjob,
                                         const char *job_reason, const char *job_message)
{
	size_t i;
	const json_t *rule;
	json_array_foreach(json_object_get(failure_policy, "rules"), i, rule)
	{
		const json_t *reasons = json_object_get(rule, "onJobFailureReasons");
		const json_t *patterns = json_object_get(rule, "onJobFailureMessagePatterns");
		const json_t *targets = json_object_get(rule, "targetReplicatedJobs");
		if (json_array_size(reasons) && !contains(reasons, job_reason))
			continue;
		if (json_array_size(patterns) && !any_pattern(patterns, job_message))
			continue;
		if (json_array_size(targets) && !contains(targets, rjob))
			continue;
		return json_string_value(json_object_get(rule, "action"));
	}
	return NULL;
}
