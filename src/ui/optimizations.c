/*
 * optimizations.c - the dashboard's JSON API for OptimizationJobs (routed
 * by api.c; see docs/ui.md):
 *
 *   GET  /api/optimizations                          the searches, one row each
 *   GET  /api/watch/optimizations                    the same, as server-sent events
 *   GET  /api/optimizations/NS/NAME                  one search: the object (status.trials),
 *                                                    its parameters, Events
 *   GET  /api/watch/optimizations/NS/NAME            the same, as server-sent events
 *   GET  /api/optimizations/NS/NAME/observations?after=ID
 *                                                    the metric values each trial reported
 *   POST /api/optimizations/NS/NAME/delete           delete it with its trials
 *
 * The documents are built from the same pure functions the CLI uses
 * (src/hpo: the phase, counts, the objective value compared), so the page
 * and `kftrainer get optimizationjob` agree. Local engine only: with
 * --kubeconfig the list is empty and says so (a cluster's OptimizationJobs
 * are read with kubectl there).
 */
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"
#include "local/optimizer.h"
#include "local/optstore.h"
#include "ui/ui_internal.h"

static int fail(kft_ui_conn *c, const kft_error *err)
{
	return kft_ui_respond_error(c, err->code == KFT_ENOTFOUND ? 404 : 500, err->message);
}

/* One search as a list row. */
static json_t *row(const json_t *opt)
{
	const json_t *meta = json_object_get(opt, "metadata"), *spec = json_object_get(opt, "spec");
	const json_t *st = json_object_get(opt, "status");
	kft_hpo_counts n;
	kft_hpo_spec hs;
	kft_hpo_count(st, &n);
	json_t *r = json_pack(
	        "{s:O?, s:O?, s:O?, s:s, s:I, s:O?, s:I, s:I, s:I, s:O?}", "namespace",
	        json_object_get(meta, "namespace"), "name", json_object_get(meta, "name"),
	        "created", json_object_get(meta, "creationTimestamp"), "status", kft_hpo_phase(opt),
	        "trials", (json_int_t)n.total, "numTrials", json_object_get(spec, "numTrials"),
	        "running", (json_int_t)(n.running + n.pending), "succeeded",
	        (json_int_t)n.succeeded, "failed", (json_int_t)(n.failed + n.unavailable), "best",
	        json_object_get(json_object_get(st, "result"), "trainJobName"));
	if (r && kft_hpo_spec_parse(opt, &hs, NULL) == 0) {
		const char *best = json_string_value(json_object_get(r, "best"));
		const char *v =
		        best ? kft_hpo_objective_value(&hs, kft_hpo_trial_find(st, best)) : NULL;
		json_object_set_new(r, "objective", json_string(hs.objective));
		json_object_set_new(r, "maximize", json_boolean(hs.maximize));
		if (v)
			json_object_set_new(r, "value", json_string(v));
		kft_hpo_spec_free(&hs);
	}
	return r;
}

json_t *kft_ui_optimizations_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	(void)ns;
	(void)name;
	if (kft_ui_cluster_of(c))
		return json_pack("{s:[], s:b}", "items", "cluster", 1);
	kft_local *l = kft_ui_local(c, err);
	json_t *opts = NULL, *items = json_array();
	if (!l || !items || kft_local_optimization_list(l, NULL, &opts, err) != 0) {
		json_decref(items);
		return NULL;
	}
	size_t i;
	const json_t *opt;
	json_array_foreach(opts, i, opt) json_array_append_new(items, row(opt));
	json_decref(opts);
	return json_pack("{s:o}", "items", items);
}

/* Each parameter's name and space, for the page's columns and charts. */
static json_t *parameters(const kft_hpo_spec *hs)
{
	json_t *out = json_array();
	for (size_t i = 0; out && i < hs->n_params; i++) {
		const kft_hpo_param *p = &hs->params[i];
		const char *kind = p->dist == KFT_HPO_CATEGORICAL   ? "categorical"
		                   : p->dist == KFT_HPO_LOG_UNIFORM ? "logUniform"
		                                                    : "uniform";
		json_t *one = json_pack("{s:s, s:s, s:b}", "name", p->name, "kind", kind, "int",
		                        p->is_int);
		if (one && p->choices)
			json_object_set(one, "choices", (json_t *)p->choices);
		json_array_append_new(out, one);
	}
	return out;
}

json_t *kft_ui_optimization_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	kft_local *l = kft_ui_cluster_of(c) ? NULL : kft_ui_local(c, err);
	json_t *opt = NULL, *events = NULL, *doc = NULL;
	kft_hpo_spec hs;
	if (kft_ui_cluster_of(c)) {
		kft_error_set(err, KFT_ENOTFOUND,
		              "OptimizationJobs are shown for the local engine");
		return NULL;
	}
	if (!l || kft_local_optimization_get(l, ns, name, &opt, err) != 0)
		return NULL;
	if (kft_local_optimization_events(l, ns, name, &events, err) == 0 &&
	    kft_hpo_spec_parse(opt, &hs, err) == 0) {
		doc = json_pack("{s:o, s:O, s:o, s:O, s:s, s:b}", "row", row(opt),
		                "optimizationjob", opt, "parameters", parameters(&hs), "events",
		                json_object_get(events, "items"), "objective", hs.objective,
		                "maximize", hs.maximize);
		kft_hpo_spec_free(&hs);
	}
	json_decref(opt);
	json_decref(events);
	return doc;
}

static void observations(kft_ui_conn *c, const char *ns, const char *name)
{
	kft_error err = {0};
	char after[32];
	long long from = kft_ui_query(c, "after", after, sizeof(after)) ? atoll(after) : 0;
	kft_local *l = kft_ui_local(c, &err);
	json_t *items = NULL;
	if (!l || kft_optstore_observations(kft_local_store(l), ns, name, from, &items, &err) != 0)
		fail(c, &err);
	else
		kft_ui_respond_json(c, 200, json_pack("{s:o}", "items", items));
}

void kft_ui_optimizations_route(kft_ui_conn *c, char **s, int n, bool get)
{
	kft_error err = {0};
	kft_local *l = NULL;
	if (kft_ui_cluster_of(c) && !(n == 0 && get)) {
		kft_ui_respond_error(c, 404, "OptimizationJobs are shown for the local engine");
	} else if (n == 0 && get) {
		json_t *doc = kft_ui_optimizations_doc(c, NULL, NULL, &err);
		if (doc)
			kft_ui_respond_json(c, 200, doc);
		else
			fail(c, &err);
	} else if (n == 2 && get) {
		json_t *doc = kft_ui_optimization_doc(c, s[0], s[1], &err);
		if (doc)
			kft_ui_respond_json(c, 200, doc);
		else
			fail(c, &err);
	} else if (n == 3 && get && strcmp(s[2], "observations") == 0) {
		observations(c, s[0], s[1]);
	} else if (n == 3 && !get && strcmp(s[2], "delete") == 0) {
		if (!(l = kft_ui_local(c, &err)) ||
		    kft_local_optimization_delete(l, s[0], s[1], &err) != 0)
			fail(c, &err);
		else
			kft_ui_respond_json(c, 200, json_pack("{s:b}", "ok", 1));
	} else {
		kft_ui_respond_error(c, 404, "not found");
	}
}
