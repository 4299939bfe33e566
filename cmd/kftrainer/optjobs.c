/*
 * optjobs.c - OptimizationJobs in get, delete, logs and events (see
 * optjobs.h).
 *
 *     NAME   STATUS     TRIALS   RUNNING   SUCCEEDED   FAILED   BEST     OBJECTIVE   AGE
 *     tune   Running    5/20     2         3           0        tune-2   loss=0.21   1m
 *
 * STATUS is Complete or Failed by the search's conditions, Terminating
 * while a delete runs, Running while a trial runs or waits, else Created.
 * TRIALS counts the trials started of numTrials; FAILED counts Failed and
 * MetricsUnavailable (what max-failed-trials counts); OBJECTIVE is the best
 * trial's objective as it was compared (its min when minimizing). -o wide
 * adds ALGORITHM, PARALLEL and the last condition's REASON and MESSAGE.
 * With one NAME (and headers), the table is followed by the trials, one row
 * each:
 *
 *     TRIAL    STATE       LR       BATCH_SIZE   LOSS   AGE
 *
 * with a column per parameter and per metric (the objective's value as
 * compared, the other metrics' latest), and a line naming the best trial.
 */
#include "optjobs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"
#include "framework/conditions.h"
#include "local/optimizer.h"
#include "util/json.h"
#include "util/strbuf.h"

bool kft_cli_is_optjob(const char *word, const char **name)
{
	return kft_cli_is_type(word, "optimizationjob", "optimizationjobs", name);
}

char **kft_cli_optjob_names(char **names, int count, int *n, int *rc)
{
	char **out = calloc((size_t)count + 1, sizeof(char *));
	*n = 0;
	*rc = 0;
	if (!out) {
		*rc = KFT_EXIT_FAILED;
		return NULL;
	}
	memcpy(out, names, (size_t)count * sizeof(char *));
	*n = count;
	if ((*rc = kft_cli_typed_operands(out, n, "optimizationjob", "optimizationjobs")) != 0) {
		free(out);
		return NULL;
	}
	out[*n] = NULL;
	return out;
}

/* ---- get ---------------------------------------------------------------------- */

static const char *opt_name(const json_t *opt)
{
	return json_string_value(json_object_get(json_object_get(opt, "metadata"), "name"));
}

static const char *opt_ns(const json_t *opt)
{
	const char *ns =
	        json_string_value(json_object_get(json_object_get(opt, "metadata"), "namespace"));
	return ns ? ns : "default";
}

static const json_t *last_condition(const json_t *opt)
{
	const json_t *conds = json_object_get(json_object_get(opt, "status"), "conditions");
	size_t n = json_array_size(conds);
	return n ? json_array_get(conds, n - 1) : NULL;
}

/* The best trial's objective cell ("loss=0.21") and name, or "-". */
static void best_cells(const json_t *opt, char *obj, size_t size, const char **best)
{
	kft_hpo_spec spec;
	const json_t *st = json_object_get(opt, "status");
	*best = json_string_value(json_object_get(json_object_get(st, "result"), "trainJobName"));
	snprintf(obj, size, "-");
	if (!*best || kft_hpo_spec_parse(opt, &spec, NULL) != 0)
		return;
	const char *v = kft_hpo_objective_value(&spec, kft_hpo_trial_find(st, *best));
	if (v)
		snprintf(obj, size, "%s=%s", spec.objective, v);
	kft_hpo_spec_free(&spec);
}

static const char *algorithm(const json_t *opt)
{
	const json_t *ann = json_object_get(json_object_get(opt, "metadata"), "annotations");
	const char *a = json_string_value(json_object_get(ann, KFT_HPO_ANN_ALGORITHM));
	if (a)
		return a;
	const json_t *sa = json_object_get(json_object_get(opt, "spec"), "searchAlgorithm");
	return json_object_get(sa, "grid") ? "grid" : "random";
}

static void add_row(json_t *rows, const json_t *opt, const kft_cli_optjob_get *o)
{
	const json_t *st = json_object_get(opt, "status"), *spec = json_object_get(opt, "spec");
	const json_t *cond = last_condition(opt);
	kft_hpo_counts c;
	char trials[48], running[24], ok[24], failed[24], obj[160], age[32], par[24];
	const char *best = NULL;
	kft_hpo_count(st, &c);
	snprintf(trials, sizeof(trials), "%zu/%lld", c.total,
	         (long long)json_integer_value(json_object_get(spec, "numTrials")));
	snprintf(running, sizeof(running), "%zu", c.running + c.pending);
	snprintf(ok, sizeof(ok), "%zu", c.succeeded);
	snprintf(failed, sizeof(failed), "%zu", c.failed + c.unavailable);
	snprintf(par, sizeof(par), "%lld",
	         (long long)json_integer_value(json_object_get(spec, "parallelTrials")));
	best_cells(opt, obj, sizeof(obj), &best);
	kft_cli_format_age(kft_cli_seconds_since(json_string_value(json_object_get(
	                           json_object_get(opt, "metadata"), "creationTimestamp"))),
	                   age, sizeof(age));
	const char *reason = json_string_value(json_object_get(cond, "reason"));
	const char *message = json_string_value(json_object_get(cond, "message"));
	const char *cells[] = {opt_ns(opt),
	                       opt_name(opt),
	                       kft_hpo_phase(opt),
	                       trials,
	                       running,
	                       ok,
	                       failed,
	                       best ? best : "-",
	                       obj,
	                       age,
	                       algorithm(opt),
	                       par,
	                       reason ? reason : "-",
	                       message ? message : "-"};
	size_t first = o->all_ns ? 0 : 1;
	kft_cli_table_row(rows, (o->format == KFT_OUT_WIDE ? 14 : 10) - first, cells + first);
}

static void print_summary(const json_t *opts, const kft_cli_optjob_get *o)
{
	static const char *const header[] = {"NAMESPACE", "NAME",      "STATUS",    "TRIALS",
	                                     "RUNNING",   "SUCCEEDED", "FAILED",    "BEST",
	                                     "OBJECTIVE", "AGE",       "ALGORITHM", "PARALLEL",
	                                     "REASON",    "MESSAGE"};
	json_t *rows = json_array();
	size_t first = o->all_ns ? 0 : 1, i;
	const json_t *opt;
	if (!o->no_headers)
		kft_cli_table_row(rows, (o->format == KFT_OUT_WIDE ? 14 : 10) - first,
		                  header + first);
	json_array_foreach(opts, i, opt) add_row(rows, opt, o);
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
}

/* Appends s upper-cased (a column header) to row. */
static void append_upper(json_t *row, const char *s)
{
	char *u = strdup(s ? s : "");
	for (char *p = u; p && *p; p++)
		*p = (char)toupper((unsigned char)*p);
	json_array_append_new(row, json_string(u ? u : ""));
	free(u);
}

static const char *param_value(const json_t *trial, const char *name)
{
	const char *v = json_string_value(json_object_get(
	        kft_json_find(json_object_get(trial, "parameters"), "name", name), "value"));
	return v ? v : "-";
}

/* The trials table: parameters, then metrics, of each trial. */
static void print_trials(const json_t *opt, const kft_hpo_spec *spec)
{
	json_t *rows = json_array(), *head = json_array();
	const json_t *st = json_object_get(opt, "status"), *t;
	json_array_append_new(head, json_string("TRIAL"));
	json_array_append_new(head, json_string("STATE"));
	for (size_t p = 0; p < spec->n_params; p++)
		append_upper(head, spec->params[p].name);
	for (size_t m = 0; m < spec->n_metrics; m++)
		append_upper(head, spec->metrics[m]);
	json_array_append_new(head, json_string("AGE"));
	json_array_append_new(rows, head);
	size_t i;
	json_array_foreach(json_object_get(st, "trials"), i, t)
	{
		json_t *row = json_array();
		char age[32];
		json_array_append(row, json_object_get(t, "name"));
		json_array_append(row, json_object_get(t, "state"));
		for (size_t p = 0; p < spec->n_params; p++)
			json_array_append_new(row,
			                      json_string(param_value(t, spec->params[p].name)));
		for (size_t m = 0; m < spec->n_metrics; m++) {
			const json_t *mj = kft_hpo_trial_metric(t, spec->metrics[m]);
			const char *v = m == 0 ? kft_hpo_objective_value(spec, t)
			                       : json_string_value(json_object_get(mj, "latest"));
			json_array_append_new(row, json_string(v ? v : "-"));
		}
		kft_cli_format_age(kft_cli_seconds_since(json_string_value(
		                           json_object_get(t, "creationTimestamp"))),
		                   age, sizeof(age));
		json_array_append_new(row, json_string(age));
		json_array_append_new(rows, row);
	}
	printf("\n");
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
}

/* "Best trial: NAME (loss=0.12): lr=0.004, batch_size=64". */
static void print_best(const json_t *opt)
{
	char obj[160];
	const char *best = NULL;
	best_cells(opt, obj, sizeof(obj), &best);
	if (!best)
		return;
	const json_t *t = kft_hpo_trial_find(json_object_get(opt, "status"), best);
	printf("\nBest trial: %s (%s):", best, obj);
	size_t i;
	const json_t *a;
	json_array_foreach(json_object_get(t, "parameters"), i, a)
	        printf("%s %s=%s", i ? "," : "", json_string_value(json_object_get(a, "name")),
	               json_string_value(json_object_get(a, "value")));
	printf("\n");
}

static int print_opts(const json_t *opts, const kft_cli_optjob_get *o, int n)
{
	size_t i;
	const json_t *opt;
	switch (o->format) {
	case KFT_OUT_NAME:
		json_array_foreach(opts, i, opt) printf(KFT_HPO_RESOURCE "/%s\n", opt_name(opt));
		return 0;
	case KFT_OUT_JSON:
	case KFT_OUT_YAML:
		if (n == 1 && json_array_size(opts) == 1)
			return kft_cli_print_object(json_array_get(opts, 0),
			                            o->format == KFT_OUT_YAML);
		return kft_cli_print_list(opts, o->format == KFT_OUT_YAML);
	default: break;
	}
	print_summary(opts, o);
	kft_hpo_spec spec;
	if (n == 1 && json_array_size(opts) == 1 && !o->no_headers &&
	    kft_hpo_spec_parse(json_array_get(opts, 0), &spec, NULL) == 0) {
		print_trials(json_array_get(opts, 0), &spec);
		print_best(json_array_get(opts, 0));
		kft_hpo_spec_free(&spec);
	}
	return 0;
}

static int opt_error(const char *name, const kft_error *err)
{
	if (err->code == KFT_ENOTFOUND)
		fprintf(stderr,
		        "Error from server (NotFound): " KFT_HPO_RESOURCES " \"%s\" not found\n",
		        name);
	else
		kft_cli_error("%s", err->message);
	return err->code == KFT_ENOTFOUND ? KFT_EXIT_NOT_FOUND : KFT_EXIT_FAILED;
}

int kft_cli_optjob_get_run(kft_local *l, const kft_cli_optjob_get *o, char **names, int n)
{
	json_t *opts = NULL;
	kft_error err;
	int rc = 0;
	if (n == 0) {
		if (kft_local_optimization_list(l, o->all_ns ? NULL : o->ns, &opts, &err) != 0)
			return opt_error("", &err);
	} else {
		opts = json_array();
		for (int i = 0; i < n; i++) {
			json_t *opt = NULL;
			if (kft_local_optimization_get(l, o->ns, names[i], &opt, &err) != 0)
				rc = kft_cli_exit_worse(rc, opt_error(names[i], &err));
			else
				json_array_append_new(opts, opt);
		}
	}
	bool structured = o->format == KFT_OUT_JSON || o->format == KFT_OUT_YAML;
	if (json_array_size(opts) == 0 && !structured) {
		if (n == 0)
			fprintf(stderr,
			        o->all_ns ? "No resources found\n"
			                  : "No resources found in %s namespace.\n",
			        o->ns);
	} else if ((json_array_size(opts) || n != 1) && print_opts(opts, o, n) != 0) {
		rc = KFT_EXIT_FAILED;
	}
	json_decref(opts);
	return rc;
}

/* ---- delete, events, logs ---------------------------------------------------------- */

static int delete_one(kft_local *l, const char *ns, const char *name, bool ignore_not_found)
{
	kft_error err;
	int rc = 0;
	if (kft_local_optimization_delete(l, ns, name, &err) == 0)
		printf(KFT_HPO_RESOURCE " \"%s\" deleted\n", name);
	else if (!(ignore_not_found && err.code == KFT_ENOTFOUND))
		rc = opt_error(name, &err);
	fflush(stdout);
	return rc;
}

int kft_cli_optjob_delete(kft_local *l, const char *ns, char **operands, int count, bool all,
                          bool ignore_not_found)
{
	int n = 0, rc = 0;
	kft_error err;
	json_t *opts = NULL;
	if (all) {
		if (kft_local_optimization_list(l, ns, &opts, &err) != 0)
			return opt_error("", &err);
		if (json_array_size(opts) == 0)
			fprintf(stderr, "No resources found\n");
		size_t i;
		const json_t *opt;
		json_array_foreach(opts, i, opt)
		{
			rc = kft_cli_exit_worse(rc, delete_one(l, ns, opt_name(opt), true));
		}
		json_decref(opts);
		return rc;
	}
	char **names = kft_cli_optjob_names(operands, count, &n, &rc);
	for (int i = 0; names && i < n; i++) {
		rc = kft_cli_exit_worse(rc, delete_one(l, ns, names[i], ignore_not_found));
	}
	free(names);
	return rc;
}

int kft_cli_optjob_events(kft_local *l, const char *ns, const char *name,
                          enum kft_cli_out_format format)
{
	json_t *list = NULL, *opt = NULL;
	kft_error err;
	if (kft_local_optimization_get(l, ns, name, &opt, &err) != 0 ||
	    kft_local_optimization_events(l, ns, name, &list, &err) != 0) {
		json_decref(opt);
		return opt_error(name, &err);
	}
	json_t *items = json_object_get(list, "items");
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(json_object_get(opt, "status"), "trials"), i, t)
	{
		json_t *trial = NULL;
		const char *trial_name = json_string_value(json_object_get(t, "name"));
		if (kft_local_events(l, ns, trial_name, &trial, NULL) == 0)
			json_array_extend(items, json_object_get(trial, "items"));
		json_decref(trial);
	}
	int rc = 0;
	if (format == KFT_OUT_JSON || format == KFT_OUT_YAML)
		rc = kft_cli_print_object(list, format == KFT_OUT_YAML) ? KFT_EXIT_FAILED : 0;
	else if (json_array_size(items) == 0)
		fprintf(stderr, "No events found in %s namespace.\n", ns);
	else
		kft_cli_events_table(items);
	json_decref(list);
	json_decref(opt);
	return rc;
}

int kft_cli_optjob_trial(kft_local *l, const char *ns, const char *name, const char *trial,
                         char **out)
{
	json_t *opt = NULL;
	kft_error err;
	*out = NULL;
	if (kft_local_optimization_get(l, ns, name, &opt, &err) != 0)
		return opt_error(name, &err);
	const json_t *st = json_object_get(opt, "status");
	const char *best =
	        json_string_value(json_object_get(json_object_get(st, "result"), "trainJobName"));
	const char *first = json_string_value(
	        json_object_get(json_array_get(json_object_get(st, "trials"), 0), "name"));
	const char *pick = trial ? trial : best ? best : first;
	int rc = 0;
	if (!pick) {
		kft_cli_error("%s " KFT_HPO_RESOURCE "/%s has no trial yet", "logs:", name);
		rc = KFT_EXIT_FAILED;
	} else if (trial && !kft_hpo_trial_find(st, trial)) {
		kft_cli_error("--trial: %s is not a trial of " KFT_HPO_RESOURCE "/%s", trial, name);
		rc = KFT_EXIT_FAILED;
	} else if (!(*out = strdup(pick))) {
		rc = KFT_EXIT_FAILED;
	}
	json_decref(opt);
	return rc;
}
