/*
 * plan.c - what a job's MLflow run says, decided from the object alone
 * (see track.h). Everything read here comes from a TrainJob or an
 * OptimizationJob anyone could have written, so every member is looked at
 * with its type checked, long values are cut to what MLflow keeps, and a
 * declaration that cannot be read is an error naming its field.
 */
#include "track/track.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/conditions.h"
#include "util/strbuf.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *annotation(const json_t *obj, const char *key)
{
	return jstr(json_object_get(json_object_get(obj, "metadata"), "annotations"), key);
}

static const char *label(const json_t *obj, const char *key)
{
	return jstr(json_object_get(json_object_get(obj, "metadata"), "labels"), key);
}

bool kft_track_wanted(const json_t *obj)
{
	const char *v = annotation(obj, KFT_TRACK_ANN_ENABLED);
	return !v || strcmp(v, "false") != 0;
}

/* Appends {"key","value"} with both cut to MLflow's limits; a duplicate
 * key keeps its first value (MLflow refuses a param logged twice with two
 * values). */
static int put_kv(json_t *list, const char *key, const char *value, size_t value_max)
{
	char k[KFT_TRACK_KEY_MAX + 1];
	size_t i;
	const json_t *e;
	if (!key || !*key || !value)
		return 0;
	snprintf(k, sizeof(k), "%s", key);
	json_array_foreach(list, i, e)
	{
		if (strcmp(jstr(e, "key"), k) == 0)
			return 0;
	}
	size_t n = strlen(value);
	json_t *v = json_stringn_nocheck(value, n > value_max ? value_max : n);
	return json_array_append_new(list, json_pack("{s:s, s:o*}", "key", k, "value", v))
	               ? KFT_ENOMEM
	               : 0;
}

/* A JSON scalar as text: strings as they are, a real in the fewest digits
 * that read back as it (0.1, as Python's json and MLflow's client write
 * it, not 0.10000000000000001), other values as JSON. */
static char *scalar_text(const json_t *v)
{
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_real(v)) {
		char buf[40];
		double d = json_real_value(v);
		for (int p = 1; p <= 17; p++) {
			snprintf(buf, sizeof(buf), "%.*g", p, d);
			if (strtod(buf, NULL) == d)
				break;
		}
		return strdup(buf);
	}
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static int put_json(json_t *list, const char *key, const json_t *v, size_t max)
{
	if (!v)
		return 0;
	char *text = scalar_text(v);
	int rc = text ? put_kv(list, key, text, max) : KFT_ENOMEM;
	free(text);
	return rc;
}

/* A "key=value" or "--key=value" argument: the key (into k) when it looks
 * like one (letters, digits, '_', '.', '-'), else false. */
static bool arg_key(const char *arg, char *k, size_t size, const char **value)
{
	const char *p = arg;
	while (*p == '-' && p - arg < 2)
		p++;
	const char *eq = strchr(p, '=');
	if (!eq || eq == p || (size_t)(eq - p) >= size)
		return false;
	for (const char *c = p; c < eq; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-')
			return false;
	snprintf(k, size, "%.*s", (int)(eq - p), p);
	*value = eq + 1;
	return true;
}

/* spec.trainer.args: torchtune's overrides (lr=..., epochs=...) and
 * --flag=value become one parameter each; the others go together as
 * "args" (a JSON array). */
static int put_args(json_t *params, const json_t *args)
{
	json_t *rest = json_array();
	size_t i;
	const json_t *a;
	int rc = rest ? 0 : KFT_ENOMEM;
	json_array_foreach(args, i, a)
	{
		char k[KFT_TRACK_KEY_MAX + 1];
		const char *s = json_string_value(a), *v;
		if (rc)
			break;
		if (s && arg_key(s, k, sizeof(k), &v))
			rc = put_kv(params, k, v, KFT_TRACK_PARAM_MAX);
		else if (s)
			rc = json_array_append_new(rest, json_string(s)) ? KFT_ENOMEM : 0;
	}
	if (rc == 0 && json_array_size(rest))
		rc = put_json(params, "args", rest, KFT_TRACK_PARAM_MAX);
	json_decref(rest);
	return rc;
}

/* A trial's assignments: hpo writes [{"name","value"}]; an object of
 * name: value is read too. */
static int put_assignments(json_t *params, const char *text, kft_error *err)
{
	json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	size_t i;
	const char *k;
	json_t *v;
	int rc = 0;
	if (json_is_array(doc)) {
		json_array_foreach(doc, i, v)
		{
			if (rc == 0 && jstr(v, "name"))
				rc = put_json(params, jstr(v, "name"), json_object_get(v, "value"),
				              KFT_TRACK_PARAM_MAX);
		}
	} else if (json_is_object(doc)) {
		json_object_foreach(doc, k, v)
		{
			if (rc == 0)
				rc = put_json(params, k, v, KFT_TRACK_PARAM_MAX);
		}
	} else {
		rc = kft_error_set(err, KFT_EINVAL,
		                   "metadata.annotations[%s]: Invalid value: must be a JSON object",
		                   KFT_TRACK_HPO_ANN_PARAMS);
	}
	json_decref(doc);
	return rc;
}

static int put_params_annotation(json_t *params, const char *text, kft_error *err)
{
	json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	const char *k;
	json_t *v;
	int rc = 0;
	if (!json_is_object(doc))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "metadata.annotations[%s]: Invalid value: must be a JSON object",
		                   KFT_TRACK_ANN_PARAMS);
	json_object_foreach(doc, k, v)
	{
		if (rc == 0)
			rc = put_json(params, k, v, KFT_TRACK_PARAM_MAX);
	}
	json_decref(doc);
	return rc;
}

static const char *experiment_of(const json_t *obj, const char *dflt)
{
	const char *e = annotation(obj, KFT_TRACK_ANN_EXPERIMENT);
	if (e && *e)
		return e;
	return dflt && *dflt ? dflt : "Default";
}

/* The parts every run has: uid, name, experiment, identity tags. */
static int run_common(const json_t *obj, const char *kind, const char *dflt, kft_track_run *out,
                      kft_error *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *uid = jstr(meta, "uid"), *name = jstr(meta, "name"),
	           *ns = jstr(meta, "namespace");
	memset(out, 0, sizeof(*out));
	if (!uid || !*uid)
		return kft_error_set(err, KFT_EINVAL, "metadata.uid: Required value");
	if (!name || !*name)
		return kft_error_set(err, KFT_EINVAL, "metadata.name: Required value");
	ns = ns && *ns ? ns : "default";
	out->uid = strdup(uid);
	out->name = strdup(name);
	out->experiment = strdup(experiment_of(obj, dflt));
	out->tags = json_array();
	out->params = json_array();
	const char *logs = annotation(obj, KFT_TRACK_ANN_LOGS);
	out->log_artifacts = logs && strcmp(logs, "true") == 0;
	if (!out->uid || !out->name || !out->experiment || !out->tags || !out->params ||
	    put_kv(out->tags, KFT_TRACK_TAG_UID, uid, KFT_TRACK_TAG_MAX) ||
	    put_kv(out->tags, KFT_TRACK_TAG_KIND, kind, KFT_TRACK_TAG_MAX) ||
	    put_kv(out->tags, KFT_TRACK_TAG_NAMESPACE, ns, KFT_TRACK_TAG_MAX) ||
	    put_kv(out->tags, KFT_TRACK_TAG_NAME, name, KFT_TRACK_TAG_MAX) ||
	    put_kv(out->tags, "mlflow.source.name", "kftrainer", KFT_TRACK_TAG_MAX) ||
	    put_kv(out->tags, "mlflow.source.type", "JOB", KFT_TRACK_TAG_MAX)) {
		kft_track_run_free(out);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	return 0;
}

/* The declared values first (a trial's assignments, the params
 * annotation): MLflow keeps one value per key, and a declared value says
 * more than one derived from the spec. */
static int trainjob_params(const json_t *tj, kft_track_run *out, kft_error *err)
{
	const json_t *spec = json_object_get(tj, "spec"),
	             *trainer = json_object_get(spec, "trainer");
	const json_t *ref = json_object_get(spec, "runtimeRef");
	const char *runtime = jstr(ref, "name");
	const char *assigned = annotation(tj, KFT_TRACK_HPO_ANN_PARAMS);
	const char *extra = annotation(tj, KFT_TRACK_ANN_PARAMS);
	int rc = 0;
	if (assigned && (rc = put_assignments(out->params, assigned, err)) != 0)
		return rc;
	if (extra && (rc = put_params_annotation(out->params, extra, err)) != 0)
		return rc;
	rc = put_kv(out->tags, KFT_TRACK_TAG_RUNTIME, runtime, KFT_TRACK_TAG_MAX);
	if (rc == 0)
		rc = put_kv(out->params, "runtime", runtime, KFT_TRACK_PARAM_MAX);
	if (rc == 0 && jstr(ref, "kind"))
		rc = put_kv(out->params, "runtimeKind", jstr(ref, "kind"), KFT_TRACK_PARAM_MAX);
	static const char *const fields[] = {"numNodes", "numProcPerNode", "image", "command"};
	for (size_t i = 0; rc == 0 && i < sizeof(fields) / sizeof(fields[0]); i++)
		rc = put_json(out->params, fields[i], json_object_get(trainer, fields[i]),
		              KFT_TRACK_PARAM_MAX);
	if (rc == 0)
		rc = put_args(out->params, json_object_get(trainer, "args"));
	return rc ? kft_error_set(err, KFT_ENOMEM, "out of memory") : 0;
}

/* A trial: its search's key, and the trial's index as a tag. */
static int trial_parent(const json_t *tj, kft_track_run *out, kft_error *err)
{
	const char *search = label(tj, KFT_TRACK_HPO_LABEL_JOB);
	const char *trial = label(tj, KFT_TRACK_HPO_LABEL_TRIAL);
	const char *ns = jstr(json_object_get(tj, "metadata"), "namespace");
	if (!search || !*search)
		return 0;
	out->parent = kft_track_search_key(ns && *ns ? ns : "default", search);
	if (!out->parent ||
	    put_kv(out->tags, "kftrainer.optimizationjob", search, KFT_TRACK_TAG_MAX) ||
	    (trial && put_kv(out->tags, "kftrainer.trial", trial, KFT_TRACK_TAG_MAX)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

int kft_track_run_of_trainjob(const json_t *trainjob, const char *default_experiment,
                              kft_track_run *out, kft_error *err)
{
	int rc = run_common(trainjob, "TrainJob", default_experiment, out, err);
	if (rc == 0)
		rc = trainjob_params(trainjob, out, err);
	if (rc == 0)
		rc = trial_parent(trainjob, out, err);
	if (rc)
		kft_track_run_free(out);
	return rc;
}

/* The search space as one parameter per search parameter. */
static int search_params(const json_t *spec, json_t *params)
{
	const json_t *objectives = json_object_get(spec, "objectives"), *p;
	const json_t *first = json_array_get(objectives, 0);
	size_t i;
	int rc = put_kv(params, "objective", jstr(first, "metric"), KFT_TRACK_PARAM_MAX);
	if (rc == 0)
		rc = put_kv(params, "direction",
		            jstr(first, "direction") ? jstr(first, "direction") : "Minimize",
		            KFT_TRACK_PARAM_MAX);
	if (rc == 0)
		rc = put_json(params, "numTrials", json_object_get(spec, "numTrials"),
		              KFT_TRACK_PARAM_MAX);
	if (rc == 0)
		rc = put_json(params, "parallelTrials", json_object_get(spec, "parallelTrials"),
		              KFT_TRACK_PARAM_MAX);
	if (rc == 0)
		rc = put_json(params, "searchAlgorithm", json_object_get(spec, "searchAlgorithm"),
		              KFT_TRACK_PARAM_MAX);
	json_array_foreach(json_object_get(spec, "parameters"), i, p)
	{
		char key[KFT_TRACK_KEY_MAX + 1];
		if (rc || !jstr(p, "name"))
			continue;
		snprintf(key, sizeof(key), "space.%s", jstr(p, "name"));
		rc = put_json(params, key, json_object_get(p, "searchSpace"), KFT_TRACK_PARAM_MAX);
	}
	return rc;
}

int kft_track_run_of_search(const json_t *optjob, const char *default_experiment,
                            kft_track_run *out, kft_error *err)
{
	const json_t *meta = json_object_get(optjob, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	int rc = run_common(optjob, "OptimizationJob", default_experiment, out, err);
	if (rc)
		return rc;
	/* the parent is found by its search key, which a trial knows from its
	 * label; the object's uid is kept as a tag of its own */
	char *key = kft_track_search_key(ns && *ns ? ns : "default", name);
	json_t *tag = json_array_get(out->tags, 0);
	if (!key || json_object_set_new(tag, "value", json_string(key)) ||
	    put_kv(out->tags, "kftrainer.optimizationjob.uid", jstr(meta, "uid"),
	           KFT_TRACK_TAG_MAX) ||
	    search_params(json_object_get(optjob, "spec"), out->params)) {
		free(key);
		kft_track_run_free(out);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	free(out->uid);
	out->uid = key;
	return 0;
}

void kft_track_run_free(kft_track_run *r)
{
	if (!r)
		return;
	free(r->uid);
	free(r->experiment);
	free(r->name);
	free(r->parent);
	json_decref(r->tags);
	json_decref(r->params);
	memset(r, 0, sizeof(*r));
}

char *kft_track_search_key(const char *ns, const char *name)
{
	char *out = NULL;
	if (asprintf(&out, "search:%s/%s", ns ? ns : "default", name ? name : "") < 0)
		return NULL;
	return out;
}

/* ---- metrics ----------------------------------------------------------------- */

/* A metric value as MLflow takes it: a finite or infinite number written
 * in full (strtod's whole text); NaN too, which MLflow stores as such. */
static bool number_of(const char *s, double *out)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return false;
	*out = strtod(s, &end);
	return *end == '\0';
}

static int put_metric(json_t *metrics, const char *key, double v, int64_t ms, int64_t step)
{
	char k[KFT_TRACK_KEY_MAX + 1];
	snprintf(k, sizeof(k), "%s", key);
	/* jansson cannot write NaN or infinities: MLflow's JSON takes them as
	 * the strings its protobuf parser reads. */
	json_t *jv = isnan(v)   ? json_string("NaN")
	             : isinf(v) ? json_string(v > 0 ? "Infinity" : "-Infinity")
	                        : json_real(v);
	return json_array_append_new(metrics, json_pack("{s:s, s:o*, s:I, s:I}", "key", k, "value",
	                                                jv, "timestamp", (json_int_t)ms, "step",
	                                                (json_int_t)step))
	               ? KFT_ENOMEM
	               : 0;
}

/* The report's own step: a "step" metric holding a whole number. */
static int64_t step_of(const json_t *list, int64_t seq)
{
	size_t i;
	const json_t *m;
	json_array_foreach(list, i, m)
	{
		double v;
		if (jstr(m, "name") && strcmp(jstr(m, "name"), "step") == 0 &&
		    number_of(jstr(m, "value"), &v) && v == floor(v) && fabs(v) < 9e15)
			return (int64_t)v;
	}
	return seq;
}

int kft_track_report_metrics(const json_t *ts, int64_t time_ms, int64_t seq, json_t *metrics)
{
	const json_t *list = json_object_get(ts, "metrics"), *m;
	int64_t step = step_of(list, seq);
	size_t i, before = json_array_size(metrics);
	static const char *const progress[] = {"progressPercentage", "estimatedRemainingSeconds"};
	int rc = 0;
	json_array_foreach(list, i, m)
	{
		double v;
		const char *name = jstr(m, "name");
		if (rc == 0 && name && *name && strcmp(name, "step") != 0 &&
		    number_of(jstr(m, "value"), &v))
			rc = put_metric(metrics, name, v, time_ms, step);
	}
	for (size_t k = 0; rc == 0 && k < 2; k++) {
		const json_t *v = json_object_get(ts, progress[k]);
		if (json_is_integer(v))
			rc = put_metric(metrics, progress[k], (double)json_integer_value(v),
			                time_ms, step);
	}
	return rc ? rc : (int)(json_array_size(metrics) - before);
}

/* ---- end status --------------------------------------------------------------- */

const char *kft_track_end_status(const json_t *trainjob, bool deleted)
{
	const json_t *status = json_object_get(trainjob, "status");
	if (kft_condition_is_true(status, KFT_CONDITION_COMPLETE))
		return "FINISHED";
	if (kft_condition_is_true(status, KFT_CONDITION_FAILED))
		return "FAILED";
	return deleted ? "KILLED" : NULL;
}

/* ---- back-off ------------------------------------------------------------------- */

int64_t kft_track_backoff_ms(int attempt, int64_t max_ms, double jitter)
{
	int64_t d = 1000;
	for (int i = 1; i < attempt && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	if (jitter < 0)
		jitter = 0;
	if (jitter > 1)
		jitter = 1;
	return d - d / 4 + (int64_t)((double)(d / 4) * jitter);
}
