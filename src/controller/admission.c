/*
 * admission.c - the admission webhooks' decisions: AdmissionReview v1 in,
 * AdmissionReview out, as pure functions over JSON (webhook.c serves them).
 *
 * Upstream v2.3.0 registers one mutating and three validating webhooks
 * (pkg/webhooks, manifests/base/webhook): the TrainJob defaulter stamps
 * spec.runtimePatches[].time, and the validators answer with what
 * `kftrainer validate` and `render` say about the same object, because they
 * run the same code: kft_object_check (the API server's schema and CEL
 * rules, which the object already passed, and the runtimes' ancestor rules
 * of src/api/admission.c), then for a TrainJob kft_resolve_runtime and
 * kft_framework_validate (every plugin's CustomValidation against the
 * runtime, old object included on update).
 *
 * The answers are worded as controller-runtime words them: a refusal is
 * 403 Forbidden with the field errors joined as apimachinery's aggregate
 * prints them ("a" for one, "[a, b]" for several, repeats once); a request
 * it cannot decode is 400 with the decoder's message; warnings ride along.
 * The API server then says: admission webhook "<name>" denied the request:
 * <message>.
 */
#include <mbedtls/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/yaml_internal.h"
#include "kftrainer/constants.h"
#include "controller/admission.h"
#include "controller/controller.h"
#include "http/http.h"
#include "kftrainer/object.h"
#include "util/duration.h"
#include "util/strbuf.h"
#include "util/utf8.h"

static const struct {
	const char *path;
	kft_cm_webhook which;
} paths[] = {
        {"/mutate-trainer-kubeflow-org-v1alpha1-trainjob", KFT_CM_WEBHOOK_DEFAULT_TRAINJOB},
        {"/validate-trainer-kubeflow-org-v1alpha1-trainjob", KFT_CM_WEBHOOK_VALIDATE_TRAINJOB},
        {"/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
         KFT_CM_WEBHOOK_VALIDATE_RUNTIME},
        {"/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
         KFT_CM_WEBHOOK_VALIDATE_CLUSTER_RUNTIME},
        {"/validate-trainer-kubeflow-org-v1alpha1-optimizationjob",
         KFT_CM_WEBHOOK_VALIDATE_OPTIMIZATIONJOB},
};

kft_cm_webhook kft_cm_webhook_for_path(const char *path)
{
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (strcmp(path, paths[i].path) == 0)
			return paths[i].which;
	return KFT_CM_WEBHOOK_NONE;
}

int64_t kft_cm_admission_timeout_ms(const char *query)
{
	char value[32];
	int64_t ms;
	if (!kft_http_query_value(query, "timeout", value, sizeof(value)) ||
	    kft_duration_parse_ms(value, &ms) != 0)
		return KFT_CM_ADMISSION_TIMEOUT_DEFAULT_MS;
	return ms < 1                                 ? 1
	       : ms > KFT_CM_ADMISSION_TIMEOUT_MAX_MS ? KFT_CM_ADMISSION_TIMEOUT_MAX_MS
	                                              : ms;
}

/* The kind each webhook takes (request.kind.kind). */
static const char *webhook_kind(kft_cm_webhook w)
{
	switch (w) {
	case KFT_CM_WEBHOOK_DEFAULT_TRAINJOB:
	case KFT_CM_WEBHOOK_VALIDATE_TRAINJOB: return KFT_KIND_TRAINJOB;
	case KFT_CM_WEBHOOK_VALIDATE_RUNTIME: return KFT_KIND_RUNTIME;
	case KFT_CM_WEBHOOK_VALIDATE_CLUSTER_RUNTIME: return KFT_KIND_CLUSTER_RUNTIME;
	case KFT_CM_WEBHOOK_VALIDATE_OPTIMIZATIONJOB: return "OptimizationJob";
	default: return NULL;
	}
}

void kft_cm_admission_free(kft_cm_admission *a)
{
	json_decref(a->review);
	memset(a, 0, sizeof(*a));
}

static const char *str_at(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* An object member that must be a JSON object when present: raw objects
 * travel as JSON (runtime.RawExtension), null meaning none. */
static int object_or_null(const json_t *req, const char *key, const json_t **out, kft_error *err)
{
	const json_t *v = json_object_get(req, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return kft_error_set(err, KFT_EINVAL, "request.%s: must be an object", key);
	*out = v;
	return 0;
}

int kft_cm_admission_decode(const char *body, size_t len, kft_cm_admission *out, kft_error *err)
{
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return kft_error_set(err, KFT_EINVAL, "request body is empty");
	json_error_t je;
	json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return kft_error_set(err, KFT_EPARSE,
		                     "couldn't get version/kind; json parse error: %s", je.text);
	const char *av = str_at(doc, "apiVersion"), *kind = str_at(doc, "kind");
	const json_t *req = json_object_get(doc, "request");
	int rc = 0;
	if (!json_is_object(doc) || !av || !kind)
		rc = kft_error_set(err, KFT_EINVAL, "Object 'Kind' is missing in the request");
	else if (strcmp(kind, "AdmissionReview") != 0 || strcmp(av, "admission.k8s.io/v1") != 0)
		rc = kft_error_set(
		        err, KFT_EINVAL,
		        "unsupported AdmissionReview %s, Kind=%s: only admission.k8s.io/v1 "
		        "is served",
		        av, kind);
	else if (!json_is_object(req))
		rc = kft_error_set(err, KFT_EINVAL, "got an empty AdmissionReview request");
	if (!rc) {
		out->uid = str_at(req, "uid");
		out->operation = str_at(req, "operation");
		out->ns = str_at(req, "namespace");
		const json_t *k = json_object_get(req, "kind");
		out->group = str_at(k, "group");
		out->kind = str_at(k, "kind");
		if (!out->uid || !out->operation || !out->kind)
			rc = kft_error_set(err, KFT_EINVAL,
			                   "request: uid, operation and kind.kind are required");
	}
	if (!rc && !(rc = object_or_null(req, "object", &out->object, err)))
		rc = object_or_null(req, "oldObject", &out->old_object, err);
	if (rc) {
		json_decref(doc);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	out->review = doc;
	return 0;
}

/* ---- answers -------------------------------------------------------------------------- */

static json_t *review(const char *uid, json_t *response)
{
	json_object_set_new(response, "uid", json_string(uid ? uid : ""));
	return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
	                 "AdmissionReview", "response", response);
}

/* A JSON string of text whose invalid UTF-8 bytes (a decoder's message
 * quoting the bytes it choked on) become U+FFFD, as Go's encoder writes
 * them. */
static json_t *utf8_string(const char *text)
{
	json_t *v = json_string(text);
	if (v)
		return v;
	kft_strbuf b;
	kft_strbuf_init(&b);
	size_t len = strlen(text);
	for (size_t i = 0; i < len;) {
		size_t n = kft_utf8_sequence((const unsigned char *)text + i, len - i);
		if (n == 0) {
			kft_strbuf_puts(&b, "\xef\xbf\xbd");
			i++;
		} else {
			kft_strbuf_putn(&b, text + i, n);
			i += n;
		}
	}
	char *clean = kft_strbuf_detach(&b);
	v = clean ? json_string(clean) : NULL;
	free(clean);
	return v;
}

static json_t *status(int code, const char *reason, const char *message)
{
	json_t *s = json_pack("{s:{}, s:i}", "metadata", "code", code);
	if (message && *message)
		json_object_set_new(s, "message", utf8_string(message));
	if (reason)
		json_object_set_new(s, "reason", json_string(reason));
	return s;
}

json_t *kft_cm_admission_errored(const char *uid, int code, const char *message)
{
	return review(uid,
	              json_pack("{s:b, s:o}", "allowed", 0, "status", status(code, NULL, message)));
}

static json_t *warnings_of(const kft_field_errors *errs)
{
	if (!errs || errs->nwarnings == 0)
		return NULL;
	json_t *w = json_array();
	for (size_t i = 0; i < errs->nwarnings; i++)
		json_array_append_new(w, json_string(errs->warnings[i]));
	return w;
}

/* apimachinery's aggregate Error(): one message alone, several joined in
 * brackets, each distinct message once. NULL on allocation failure. */
char *kft_cm_admission_message(const kft_field_errors *errs)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	char **seen = calloc(errs->count + 1, sizeof(*seen));
	size_t nseen = 0;
	if (!seen)
		return NULL;
	for (size_t i = 0; i < errs->count; i++) {
		char *m = kft_field_error_format(&errs->items[i]);
		if (!m)
			continue;
		int dup = 0;
		for (size_t j = 0; j < nseen && !dup; j++)
			dup = strcmp(seen[j], m) == 0;
		if (dup) {
			free(m);
			continue;
		}
		if (nseen)
			kft_strbuf_puts(&b, ", ");
		kft_strbuf_puts(&b, m);
		seen[nseen++] = m;
	}
	for (size_t j = 0; j < nseen; j++)
		free(seen[j]);
	free(seen);
	char *joined = kft_strbuf_detach(&b);
	if (!joined || nseen <= 1)
		return joined;
	size_t n = strlen(joined);
	char *out = malloc(n + 3);
	if (out)
		snprintf(out, n + 3, "[%s]", joined);
	free(joined);
	return out;
}

/* The verdict: allowed (200) with warnings, or denied (403 Forbidden) with
 * the errors' message. */
static json_t *verdict(const char *uid, const kft_field_errors *errs)
{
	json_t *resp;
	if (errs->count == 0 && !errs->oom) {
		resp = json_pack("{s:b, s:o}", "allowed", 1, "status", status(200, NULL, NULL));
	} else {
		char *msg = errs->oom ? NULL : kft_cm_admission_message(errs);
		resp = json_pack("{s:b, s:o}", "allowed", 0, "status",
		                 status(403, "Forbidden", msg ? msg : "out of memory"));
		free(msg);
	}
	json_t *w = warnings_of(errs);
	if (w)
		json_object_set_new(resp, "warnings", w);
	return review(uid, resp);
}

/* ---- the validators -------------------------------------------------------------------- */

/* The runtime a TrainJob names, from the caller's caches, as a one-element
 * list for kft_resolve_runtime (which words a missing one as upstream). */
static json_t *runtime_candidates(const kft_cm_admission_env *env, const json_t *job)
{
	json_t *list = json_array();
	const json_t *ref = json_object_get(json_object_get(job, "spec"), "runtimeRef");
	const char *kind = str_at(ref, "kind"), *name = str_at(ref, "name");
	const char *ns = str_at(json_object_get(job, "metadata"), "namespace");
	if (!kind || !name || !env->get_runtime)
		return list;
	int cluster = strcmp(kind, KFT_KIND_CLUSTER_RUNTIME) == 0;
	if (!cluster && strcmp(kind, KFT_KIND_RUNTIME) != 0)
		return list;
	json_t *rt = env->get_runtime(env->ctx, kind, cluster ? NULL : ns, name);
	if (rt) {
		/* list items and watch events may lack them; resolution checks them */
		json_object_set_new(rt, "apiVersion", json_string(KFT_API_VERSION));
		json_object_set_new(rt, "kind", json_string(kind));
		json_array_append_new(list, rt);
	}
	return list;
}

static void validate_trainjob(const kft_cm_admission_env *env, json_t *obj, const json_t *old,
                              kft_field_errors *errs)
{
	json_t *runtimes = runtime_candidates(env, obj);
	const json_t *runtime = kft_resolve_runtime(obj, runtimes, errs);
	kft_error err = {0};
	if (runtime &&
	    kft_framework_validate(env->fw, env->backend, runtime, old, obj, errs, &err) != 0)
		kft_field_errors_add(errs, KFT_FIELD_INTERNAL, "spec.runtimeRef", NULL, "%s",
		                     err.message);
	json_decref(runtimes);
}

/* A copy of a request object that names its own kind, as the CLI reads it
 * from a file (the API server always sends apiVersion and kind). */
static json_t *working_copy(const json_t *obj, const char *kind)
{
	json_t *c = json_deep_copy(obj);
	if (c && !json_object_get(c, "apiVersion"))
		json_object_set_new(c, "apiVersion", json_string(KFT_API_VERSION));
	if (c && !json_object_get(c, "kind"))
		json_object_set_new(c, "kind", json_string(kind));
	return c;
}

static json_t *validate(kft_cm_webhook which, const kft_cm_admission *req,
                        const kft_cm_admission_env *env)
{
	const char *kind = webhook_kind(which);
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	json_t *obj = working_copy(req->object, kind);
	json_t *old = req->old_object && strcmp(req->operation, "UPDATE") == 0
	                      ? working_copy(req->old_object, kind)
	                      : NULL;
	if (!obj) {
		json_decref(old);
		return kft_cm_admission_errored(req->uid, 500, "out of memory");
	}
	if (old) {
		/* the stored object as the webhook decodes it: defaulted */
		kft_field_errors scratch;
		kft_field_errors_init(&scratch);
		kft_object_check(env->schema, old, NULL, &scratch, NULL);
		kft_field_errors_free(&scratch);
	}
	kft_object_check(env->schema, obj, old, &errs, NULL);
	if (errs.count == 0 && which == KFT_CM_WEBHOOK_VALIDATE_TRAINJOB)
		validate_trainjob(env, obj, old, &errs);
	json_t *out = verdict(req->uid, &errs);
	kft_field_errors_free(&errs);
	json_decref(obj);
	json_decref(old);
	return out;
}

/* ---- the defaulter --------------------------------------------------------------------- */

/* Whether two runtime patches are the same but for their time. */
static int same_but_time(const json_t *a, const json_t *b)
{
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	json_object_del(x, "time");
	json_object_del(y, "time");
	int same = x && y && json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

static const json_t *patch_of_manager(const json_t *patches, const char *manager)
{
	size_t i;
	const json_t *p;
	json_array_foreach(patches, i, p)
	{
		const char *m = str_at(p, "manager");
		if (m && manager && strcmp(m, manager) == 0)
			return p;
	}
	return NULL;
}

json_t *kft_cm_admission_default_patch(const json_t *job, const json_t *old_job, const char *now)
{
	json_t *ops = json_array();
	const json_t *patches = json_object_get(json_object_get(job, "spec"), "runtimePatches");
	const json_t *old_patches =
	        json_object_get(json_object_get(old_job, "spec"), "runtimePatches");
	size_t i;
	const json_t *p;
	json_array_foreach(patches, i, p)
	{
		const json_t *time = json_object_get(p, "time");
		if (json_is_null(time))
			time = NULL;
		/* On update, upstream keys the old patches by manager: a patch
		 * unchanged but for its time keeps the old time (none, if it had
		 * none), a changed one gets now; a new patch keeps a time it
		 * brings. want NULL: no time. */
		const json_t *before =
		        old_job ? patch_of_manager(old_patches, str_at(p, "manager")) : NULL;
		json_t *now_s = json_string(now);
		const json_t *want = time;
		if (before) {
			want = same_but_time(before, p) ? json_object_get(before, "time") : now_s;
			if (json_is_null(want))
				want = NULL;
		} else if (!time) {
			want = now_s;
		}
		char path[64];
		snprintf(path, sizeof(path), "/spec/runtimePatches/%zu/time", i);
		json_t *op = NULL;
		if (want && !(time && json_equal(time, want)))
			op = json_pack("{s:s, s:s, s:O}", "op", "add", "path", path, "value", want);
		else if (!want && time)
			op = json_pack("{s:s, s:s}", "op", "remove", "path", path);
		if (op)
			json_array_append_new(ops, op);
		json_decref(now_s);
	}
	return ops;
}

static json_t *mutate(const kft_cm_admission *req, const kft_cm_admission_env *env)
{
	const json_t *old = strcmp(req->operation, "UPDATE") == 0 ? req->old_object : NULL;
	json_t *ops = kft_cm_admission_default_patch(req->object, old, env->now);
	json_t *resp = json_pack("{s:b, s:o}", "allowed", 1, "status", status(200, NULL, NULL));
	if (ops && json_array_size(ops) > 0) {
		char *text = json_dumps(ops, JSON_COMPACT);
		size_t n = text ? strlen(text) : 0, olen = 0, cap = 4 * ((n + 2) / 3) + 1;
		unsigned char *b64 = text ? malloc(cap) : NULL;
		if (b64 && mbedtls_base64_encode(b64, cap, &olen, (unsigned char *)text, n) == 0) {
			json_object_set_new(resp, "patchType", json_string("JSONPatch"));
			json_object_set_new(resp, "patch", json_stringn((char *)b64, olen));
		}
		free(b64);
		free(text);
	}
	json_decref(ops);
	return review(req->uid, resp);
}

json_t *kft_cm_admission_review(kft_cm_webhook which, const kft_cm_admission *req,
                                const kft_cm_admission_env *env)
{
	const char *kind = webhook_kind(which);
	if (!kind)
		return kft_cm_admission_errored(req->uid, 404, "no such webhook");
	/* controller-runtime admits what a webhook was not registered for */
	if (strcmp(req->operation, "CREATE") != 0 && strcmp(req->operation, "UPDATE") != 0)
		return review(req->uid, json_pack("{s:b, s:o}", "allowed", 1, "status",
		                                  status(200, NULL, NULL)));
	if (!req->object)
		return kft_cm_admission_errored(req->uid, 400, "there is no content to decode");
	if (strcmp(req->kind, kind) != 0 || !req->group || strcmp(req->group, KFT_GROUP) != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "expected %s.%s, got %.80s.%.80s", kind, KFT_GROUP,
		         req->kind, req->group ? req->group : "");
		return kft_cm_admission_errored(req->uid, 400, msg);
	}
	if (which == KFT_CM_WEBHOOK_DEFAULT_TRAINJOB)
		return mutate(req, env);
	return validate(which, req, env);
}
