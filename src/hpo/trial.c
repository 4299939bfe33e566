/*
 * trial.c - a trial's name, its TrainJob and its status entry (see hpo.h).
 *
 * Katib writes a trial's job by replacing "${trialParameters.NAME}" in the
 * text of the trial template with the assigned value
 * (pkg/controller.v1beta1/experiment/manifest/generator.go); the Kubeflow
 * SDK puts such placeholders into func_args, so the function receives the
 * values. Here the replacement is made inside every string of the
 * template's JSON instead of in its serialized text: the same result for
 * every value, and a value holding a quote cannot break the document.
 */
#include "hpo/hpo_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "util/json.h"
#include "util/strbuf.h"

#define PLACEHOLDER_LEN (sizeof(KFT_HPO_PLACEHOLDER) - 1)

char *kft_hpo_trial_name(const char *opt_name, uint64_t index)
{
	char suffix[24];
	int n = snprintf(suffix, sizeof(suffix), "-%llu", (unsigned long long)index + 1);
	size_t keep = strlen(opt_name);
	if (keep > 63 - (size_t)n)
		keep = 63 - (size_t)n;
	char *out = malloc(keep + (size_t)n + 1);
	if (out)
		snprintf(out, keep + (size_t)n + 1, "%.*s%s", (int)keep, opt_name, suffix);
	return out;
}

/* The value assigned to the parameter named name[0..len), or NULL. */
static const char *assigned(const json_t *params, const char *name, size_t len)
{
	size_t i;
	const json_t *a;
	json_array_foreach(params, i, a)
	{
		const char *n = json_string_value(json_object_get(a, "name"));
		if (n && strlen(n) == len && memcmp(n, name, len) == 0)
			return json_string_value(json_object_get(a, "value"));
	}
	return NULL;
}

/* s with every placeholder replaced (new string in *out, NULL when s has
 * none). A placeholder naming no parameter is reported through *bad
 * (pointer into s, length *bad_len) and leaves *out NULL. params NULL:
 * nothing is replaced, only checked against spec's parameter names. */
static int substitute(const kft_hpo_spec *spec, const char *s, size_t slen, const json_t *params,
                      json_t **out, const char **bad, size_t *bad_len)
{
	kft_strbuf b;
	const char *p = s, *end = s + slen, *at;
	*out = NULL;
	if (!memmem(s, slen, KFT_HPO_PLACEHOLDER, PLACEHOLDER_LEN))
		return 0;
	kft_strbuf_init(&b);
	while ((at = memmem(p, (size_t)(end - p), KFT_HPO_PLACEHOLDER, PLACEHOLDER_LEN))) {
		const char *name = at + PLACEHOLDER_LEN;
		const char *close = memchr(name, '}', (size_t)(end - name));
		size_t nlen = close ? (size_t)(close - name) : 0;
		const char *v = !close   ? NULL
		                : params ? assigned(params, name, nlen)
		                : kft_hpo_param_index(spec, name, nlen) >= 0 ? ""
		                                                             : NULL;
		if (!v || nlen == 0) {
			*bad = at;
			*bad_len = close ? (size_t)(close - at) + 1 : (size_t)(end - at);
			kft_strbuf_free(&b);
			return KFT_EINVAL;
		}
		kft_strbuf_putn(&b, p, (size_t)(at - p));
		kft_strbuf_puts(&b, v);
		p = close + 1;
	}
	kft_strbuf_putn(&b, p, (size_t)(end - p));
	if (b.failed || !params) {
		int rc = b.failed ? KFT_ENOMEM : 0;
		kft_strbuf_free(&b);
		return rc;
	}
	*out = json_stringn(b.buf, b.len);
	kft_strbuf_free(&b);
	return *out ? 0 : KFT_ENOMEM;
}

static int substitute_tree(const kft_hpo_spec *spec, json_t *v, const json_t *params,
                           kft_strbuf *path, kft_error *err);

/* One child c of a container, at path: a string is substituted (a changed
 * one handed back in *repl for the caller to store), anything else
 * walked. */
static int substitute_child(const kft_hpo_spec *spec, json_t *c, const json_t *params,
                            kft_strbuf *path, json_t **repl, kft_error *err)
{
	const char *bad = NULL;
	size_t bad_len = 0;
	*repl = NULL;
	if (!json_is_string(c))
		return substitute_tree(spec, c, params, path, err);
	int rc = substitute(spec, json_string_value(c), json_string_length(c), params, repl, &bad,
	                    &bad_len);
	if (rc == KFT_EINVAL)
		return kft_error_set(err, rc,
		                     "%s: Invalid value: \"%.*s\": names no parameter of "
		                     "spec.parameters",
		                     kft_strbuf_str(path), (int)bad_len, bad);
	return rc ? kft_error_set(err, rc, "out of memory") : 0;
}

/* Replaces placeholders in every string under v (object keys are left
 * alone; Katib's text replacement would reach them, a template has no
 * reason to put one there). path is v's field path, for the error. */
static int substitute_tree(const kft_hpo_spec *spec, json_t *v, const json_t *params,
                           kft_strbuf *path, kft_error *err)
{
	size_t i, mark = path->len;
	const char *key;
	json_t *c, *repl;
	int rc = 0;
	json_array_foreach(v, i, c)
	{
		kft_strbuf_printf(path, "[%zu]", i);
		rc = substitute_child(spec, c, params, path, &repl, err);
		if (rc == 0 && repl && json_array_set_new(v, i, repl) != 0)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		kft_strbuf_truncate(path, mark);
		if (rc)
			return rc;
	}
	json_object_foreach(v, key, c)
	{
		kft_strbuf_printf(path, ".%s", key);
		rc = substitute_child(spec, c, params, path, &repl, err);
		if (rc == 0 && repl && json_object_set_new(v, key, repl) != 0)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		kft_strbuf_truncate(path, mark);
		if (rc)
			return rc;
	}
	return 0;
}

int kft_hpo_check_placeholders(const kft_hpo_spec *spec, kft_error *err)
{
	kft_strbuf path;
	kft_strbuf_init(&path);
	kft_strbuf_puts(&path, "spec.trainJobTemplate");
	int rc = substitute_tree(spec, (json_t *)spec->template, NULL, &path, err);
	kft_strbuf_free(&path);
	return rc;
}

/* KUBEFLOW_TRAINER_OPT_<NAME>: the name upper-cased, anything but a letter
 * or digit made '_'. */
static void env_name(const char *param, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s", KFT_HPO_ENV_PREFIX);
	for (const char *p = param; *p && n + 1 < size; p++)
		buf[n++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
	buf[n < size ? n : size - 1] = '\0';
}

/* Sets name=value in spec.trainer.env, replacing an entry of that name. */
static int set_env(json_t *spec, const char *name, const char *value)
{
	json_t *trainer = json_object_get(spec, "trainer"), *env, *e;
	if (!trainer && json_object_set_new(spec, "trainer", json_object()) == 0)
		trainer = json_object_get(spec, "trainer");
	env = json_object_get(trainer, "env");
	if (trainer && !env && json_object_set_new(trainer, "env", json_array()) == 0)
		env = json_object_get(trainer, "env");
	if (!json_is_array(env))
		return -1;
	if ((e = kft_json_find(env, "name", name)) != NULL) { /* the trial's value wins */
		json_object_del(e, "valueFrom");
		return json_object_set_new(e, "value", json_string(value));
	}
	return json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static int set_string(json_t *obj, const char *member, const char *key, const char *value)
{
	json_t *m = json_object_get(obj, member);
	if (!m && json_object_set_new(obj, member, json_object()) == 0)
		m = json_object_get(obj, member);
	return json_is_object(m) ? json_object_set_new(m, key, json_string(value)) : -1;
}

/* metadata: the template's, plus the trial's name, namespace, labels and
 * parameters annotation. */
static int trial_meta(const kft_hpo_spec *spec, json_t *job, const char *name, uint64_t index,
                      const json_t *params)
{
	json_t *meta = json_object_get(job, "metadata");
	char idx[24], *assign = json_dumps(params, JSON_COMPACT);
	snprintf(idx, sizeof(idx), "%llu", (unsigned long long)index);
	int rc = !assign || json_object_set_new(meta, "name", json_string(name)) ||
	         json_object_set_new(meta, "namespace", json_string(spec->ns)) ||
	         set_string(meta, "labels", KFT_HPO_LABEL_JOB, spec->name ? spec->name : "") ||
	         set_string(meta, "labels", KFT_HPO_LABEL_TRIAL, idx) ||
	         set_string(meta, "annotations", KFT_HPO_ANN_PARAMETERS, assign);
	free(assign);
	return rc;
}

int kft_hpo_trial_job(const kft_hpo_spec *spec, const char *trial_name, uint64_t index,
                      const json_t *parameters, json_t **out, kft_error *err)
{
	const json_t *tmeta = json_object_get(spec->template, "metadata");
	json_t *job = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", KFT_API_VERSION, "kind",
	                        KFT_KIND_TRAINJOB, "metadata",
	                        tmeta ? json_deep_copy(tmeta) : json_object(), "spec",
	                        json_deep_copy(json_object_get(spec->template, "spec")));
	kft_strbuf path;
	kft_strbuf_init(&path);
	kft_strbuf_puts(&path, "spec.trainJobTemplate");
	*out = NULL;
	int rc = job ? substitute_tree(spec, job, parameters, &path, err)
	             : kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_strbuf_free(&path);
	size_t i;
	const json_t *a;
	json_array_foreach(rc == 0 ? parameters : NULL, i, a)
	{
		char name[128];
		env_name(json_string_value(json_object_get(a, "name")), name, sizeof(name));
		if (set_env(json_object_get(job, "spec"), name,
		            json_string_value(json_object_get(a, "value"))) != 0)
			rc = kft_error_set(
			        err, KFT_EINVAL,
			        "spec.trainJobTemplate.spec.trainer.env: Invalid value: not a "
			        "list");
	}
	if (rc == 0 && trial_meta(spec, job, trial_name, index, parameters) != 0)
		rc = kft_error_set(err, KFT_EINVAL,
		                   "spec.trainJobTemplate.metadata: Invalid value: labels and "
		                   "annotations must be maps");
	if (rc)
		json_decref(job);
	else
		*out = job;
	return rc;
}

json_t *kft_hpo_trial_new(const char *name, const json_t *parameters, const char *median_rule,
                          const char *now)
{
	json_t *t = json_pack("{s:s, s:o, s:s, s:s}", "name", name, "parameters",
	                      json_deep_copy(parameters), "state", KFT_HPO_PENDING,
	                      "creationTimestamp", now);
	if (t && median_rule && json_object_set_new(t, "medianStop", json_string(median_rule))) {
		json_decref(t);
		t = NULL;
	}
	return t;
}

json_t *kft_hpo_trial_find(const json_t *status, const char *name)
{
	return kft_json_find(json_object_get(status, "trials"), "name", name);
}
