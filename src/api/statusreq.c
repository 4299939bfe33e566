/*
 * statusreq.c - one request to the TrainJob status endpoint, decoded and
 * judged as upstream v2.3.0's status server (pkg/statusserver) and the API
 * server behind it would. See statusreq.h.
 *
 * Everything here is untrusted input from a training process: the head is
 * bounded before it is parsed, the body by upstream's 64 KiB limit, and the
 * request is decoded with Go's encoding/json rules for
 * UpdateTrainJobStatusRequest (keys matched case-insensitively, unknown keys
 * and anything after the first JSON value ignored, integers that must fit
 * int32, null meaning "not set"), then validated as the API server validates
 * the applied status against the CRD, so what is recorded would be accepted
 * on a cluster too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kftrainer/schema.h"
#include "api/statusreq.h"
#include "http/http.h"
#include "util/rfc3339.h"

#define STATUS_PATH_PREFIX "/apis/trainer.kubeflow.org/v1alpha1/namespaces/"
#define INT32_MAXV         2147483647LL
#define INT32_MINV         (-2147483647LL - 1)

/* ---- answers ----------------------------------------------------------------- */

/* A metav1.Status failure as upstream's badRequest() encodes it. */
int kft_statusreq_failure(kft_statusreq_answer *a, int code, const char *message,
                          const char *reason)
{
	json_t *st = json_pack("{s:{}, s:s, s:s, s:s, s:i}", "metadata", "status", "Failure",
	                       "message", message, "reason", reason, "code", code);
	char *text = st ? json_dumps(st, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(st);
	a->code = code;
	a->content_type = "application/json";
	free(a->body);
	a->body = NULL;
	if (text && asprintf(&a->body, "%s\n", text) < 0)
		a->body = NULL;
	free(text);
	return a->body ? 0 : KFT_ENOMEM;
}

/* What Go's server writes itself for a request it cannot route. */
static int plain_error(kft_statusreq_answer *a, int code, const char *text)
{
	a->code = code;
	a->content_type = "text/plain; charset=utf-8";
	free(a->body);
	a->body = strdup(text);
	return a->body ? 0 : KFT_ENOMEM;
}

void kft_statusreq_answer_free(kft_statusreq_answer *a)
{
	free(a->body);
	json_decref(a->report);
	a->body = NULL;
	a->report = NULL;
}

int kft_statusreq_refused(int code, kft_statusreq_answer *a)
{
	char text[64];
	if (code == 413)
		return kft_statusreq_failure(a, 413, "Payload too large", "RequestEntityTooLarge");
	snprintf(text, sizeof(text), "%d %s", code, kft_http_reason(code));
	return plain_error(a, code, text);
}

/* ---- routing and authorization ----------------------------------------------------- */

/* Splits ".../namespaces/{ns}/trainjobs/{name}/status" as Go's ServeMux
 * matches the pattern: each wildcard one whole non-empty segment. */
static bool status_path(const char *path, char *ns, char *name, size_t size)
{
	size_t pl = strlen(STATUS_PATH_PREFIX);
	if (strncmp(path, STATUS_PATH_PREFIX, pl) != 0)
		return false;
	const char *p = path + pl, *slash = strchr(p, '/');
	if (!slash || slash == p || (size_t)(slash - p) >= size ||
	    strncmp(slash, "/trainjobs/", 11) != 0)
		return false;
	memcpy(ns, p, (size_t)(slash - p));
	ns[slash - p] = '\0';
	const char *n = slash + 11, *s2 = strchr(n, '/');
	if (!s2 || s2 == n || (size_t)(s2 - n) >= size || strcmp(s2, "/status") != 0)
		return false;
	memcpy(name, n, (size_t)(s2 - n));
	name[s2 - n] = '\0';
	return true;
}

int kft_statusreq_route(const kft_statusreq_request *r, char *ns, char *name,
                        kft_statusreq_answer *a)
{
	if (strcmp(r->method, "POST") == 0 &&
	    status_path(r->path, ns, name, KFT_STATUSREQ_NAME_MAX))
		return 0;
	return kft_statusreq_failure(a, 404, "Not found", "NotFound") ? KFT_ENOMEM : 404;
}

/* upstream's extractRawToken: exactly two fields, the first "Bearer" in
 * any case. */
int kft_statusreq_bearer(const char *auth, char *out, size_t size)
{
	const char *p = auth + strspn(auth, " \t");
	size_t l1 = strcspn(p, " \t");
	const char *q = p + l1 + strspn(p + l1, " \t");
	size_t l2 = strcspn(q, " \t");
	if (l1 != 6 || strncasecmp(p, "Bearer", 6) != 0 || l2 == 0 || l2 >= size ||
	    q[l2 + strspn(q + l2, " \t")] != '\0')
		return 0;
	memcpy(out, q, l2);
	out[l2] = '\0';
	return 1;
}

static bool authorized(const kft_statusreq_target *t, const char *auth, const char *ns,
                       const char *name)
{
	char token[1024];
	if (!kft_statusreq_bearer(auth, token, sizeof(token)))
		return false;
	/* the token is for this job's audience only, as a projected token is */
	bool ok = kft_http_secret_equal(token, strlen(token), t->token);
	return ok && strcmp(ns, t->ns) == 0 && strcmp(name, t->name) == 0;
}

/* ---- decoding: Go's encoding/json into UpdateTrainJobStatusRequest ---------------- */

/* The value of the last key of obj equal to name ignoring case (Go matches
 * struct fields so, and a later duplicate overwrites an earlier one). */
static json_t *field(const json_t *obj, const char *name)
{
	const char *k;
	json_t *v, *found = NULL;
	json_object_foreach((json_t *)obj, k, v)
	{
		if (strcasecmp(k, name) == 0)
			found = v;
	}
	return found;
}

static bool decode_int32(const json_t *v, json_t *out, const char *key)
{
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) > INT32_MAXV ||
	    json_integer_value(v) < INT32_MINV)
		return false;
	return json_object_set_new(out, key, json_integer(json_integer_value(v))) == 0;
}

/* A string field of a Metric: absent or null is "" (omitted when encoded). */
static bool decode_text(const json_t *v, json_t *out, const char *key)
{
	if (!v || json_is_null(v))
		return true;
	return json_is_string(v) && json_object_set(out, key, (json_t *)v) == 0;
}

static bool decode_metrics(const json_t *v, json_t *out)
{
	size_t i;
	const json_t *m;
	if (!v || json_is_null(v))
		return true;
	json_t *arr = json_is_array(v) ? json_array() : NULL;
	if (!arr || json_object_set_new(out, "metrics", arr) != 0)
		return false;
	json_array_foreach(v, i, m)
	{
		json_t *dm = json_object();
		if (!dm || json_array_append_new(arr, dm) != 0 ||
		    (!json_is_object(m) && !json_is_null(m)))
			return false;
		if (json_is_object(m) && (!decode_text(field(m, "name"), dm, "name") ||
		                          !decode_text(field(m, "value"), dm, "value")))
			return false;
	}
	return true;
}

/* metav1.Time: RFC 3339 in, UTC whole seconds out. */
static bool decode_time(const json_t *v, json_t *out)
{
	int64_t ms;
	char buf[32];
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || kft_rfc3339_parse_ms(json_string_value(v), &ms, NULL) != 0)
		return false;
	if (kft_rfc3339_format(ms >= 0 ? ms / 1000 : (ms - 999) / 1000, -1, buf) != 0)
		return false;
	return json_object_set_new(out, "lastUpdatedTime", json_string(buf)) == 0;
}

/* The TrainerStatus of a request in Go's field order, or NULL when the body
 * does not decode. *present is false for a request without one. */
static json_t *decode(const char *body, size_t len, bool *present)
{
	*present = false;
	json_t *doc = json_loadb(body, len, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, NULL);
	json_t *out = NULL;
	if (!doc || (!json_is_object(doc) && !json_is_null(doc)))
		goto done;
	const json_t *ts = json_is_object(doc) ? field(doc, "trainerStatus") : NULL;
	if (!ts || json_is_null(ts)) {
		out = json_object();
		goto done;
	}
	if (!json_is_object(ts) || !(out = json_object()))
		goto done;
	*present = true;
	if (!decode_int32(field(ts, "progressPercentage"), out, "progressPercentage") ||
	    !decode_int32(field(ts, "estimatedRemainingSeconds"), out,
	                  "estimatedRemainingSeconds") ||
	    !decode_metrics(field(ts, "metrics"), out) ||
	    !decode_time(field(ts, "lastUpdatedTime"), out)) {
		json_decref(out);
		out = NULL;
	}
done:
	json_decref(doc);
	return out;
}

json_t *kft_statusreq_decode(const char *body, size_t len, bool *present, kft_statusreq_answer *a)
{
	json_t *ts =
	        decode(body, len > KFT_STATUSREQ_BODY_MAX ? KFT_STATUSREQ_BODY_MAX : len, present);
	if (!ts)
		kft_statusreq_failure(a, 422, "Invalid payload", "Invalid");
	return ts;
}

/* A Metric of the apply configuration: name and value always set. */
static json_t *apply_metric(const json_t *m)
{
	const char *n = json_string_value(json_object_get(m, "name"));
	const char *v = json_string_value(json_object_get(m, "value"));
	return json_pack("{s:s, s:s}", "name", n ? n : "", "value", v ? v : "");
}

json_t *kft_statusreq_apply_object(const char *ns, const char *name, const json_t *ts)
{
	json_t *out = json_object(), *metrics = json_object_get(ts, "metrics");
	const char *keys[] = {"progressPercentage", "estimatedRemainingSeconds"};
	size_t i;
	const json_t *m;
	for (i = 0; out && i < 2; i++)
		if (json_object_get(ts, keys[i]) &&
		    json_object_set(out, keys[i], json_object_get(ts, keys[i])) != 0)
			goto fail;
	if (out && json_array_size(metrics) > 0) {
		json_t *arr = json_array();
		if (json_object_set_new(out, "metrics", arr) != 0)
			goto fail;
		json_array_foreach(metrics, i, m)
		{
			if (json_array_append_new(arr, apply_metric(m)) != 0)
				goto fail;
		}
	}
	json_t *when = json_object_get(ts, "lastUpdatedTime");
	if (!out ||
	    json_object_set_new(out, "lastUpdatedTime", when ? json_incref(when) : json_null()))
		goto fail;
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o}}", "apiVersion",
	                 "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                 name, "namespace", ns, "status", "trainerStatus", out);
fail:
	json_decref(out);
	return NULL;
}

/* ---- validation: the API server's verdict on the applied status ------------------- */

/* "TrainJob.trainer.kubeflow.org "NAME" is invalid: ..." as apimachinery's
 * NewInvalid words it, or NULL when the CRD accepts the status. */
static char *invalid_message(const kft_statusreq_target *t, const json_t *ts)
{
	kft_error err;
	const kft_schema *schema = kft_schema_builtin(&err);
	const kft_kind_info *kind =
	        schema ? kft_schema_find_kind(schema, "trainer.kubeflow.org/v1alpha1", "TrainJob")
	               : NULL;
	if (!kind || !t->trainjob)
		return NULL;
	json_t *job = json_deep_copy(t->trainjob);
	json_t *status = json_object_get(job, "status");
	if (!status) {
		json_object_set_new(job, "status", json_object());
		status = json_object_get(job, "status");
	}
	json_object_set(status, "trainerStatus", (json_t *)ts);
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_schema_validate(schema, kind, job, NULL, &errs);
	if (!kft_field_errors_blocking(&errs))
		kft_schema_validate_rules(schema, kind, job, NULL, &errs);
	json_decref(job);
	char *msg = NULL, *list = strdup("");
	size_t shown = 0;
	for (size_t i = 0; list && i < errs.count; i++) {
		char *one = kft_field_error_format(&errs.items[i]), *grown = NULL;
		if (one && strncmp(errs.items[i].field, "status.trainerStatus", 20) == 0 &&
		    asprintf(&grown, "%s%s%s", list, shown ? ", " : "", one) >= 0) {
			free(list);
			list = grown;
			shown++;
		}
		free(one);
	}
	if (list && shown &&
	    asprintf(&msg, "TrainJob.trainer.kubeflow.org \"%s\" is invalid: %s%s%s", t->name,
	             shown > 1 ? "[" : "", list, shown > 1 ? "]" : "") < 0)
		msg = NULL;
	free(list);
	kft_field_errors_free(&errs);
	return msg;
}

/* The 200 body: the decoded request encoded again, as upstream echoes it. */
int kft_statusreq_echo(kft_statusreq_answer *a, const json_t *ts, bool present)
{
	json_t *req = present ? json_pack("{s:O}", "trainerStatus", ts) : json_object();
	if (present && req && !json_object_get(ts, "lastUpdatedTime"))
		json_object_set_new(json_object_get(req, "trainerStatus"), "lastUpdatedTime",
		                    json_null());
	char *text = req ? json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(req);
	a->code = 200;
	a->content_type = "application/json";
	a->body = NULL;
	if (text && asprintf(&a->body, "%s\n", text) < 0)
		a->body = NULL;
	free(text);
	return a->body ? 0 : KFT_ENOMEM;
}

int kft_statusreq_admit(const kft_statusreq_target *t, const kft_statusreq_request *r,
                        kft_statusreq_answer *a)
{
	char ns[KFT_STATUSREQ_NAME_MAX], name[KFT_STATUSREQ_NAME_MAX];
	int rc = kft_statusreq_route(r, ns, name, a);
	if (rc)
		return rc;
	if (!authorized(t, r->auth, ns, name))
		return kft_statusreq_failure(a, 403, "Forbidden", "Forbidden") ? KFT_ENOMEM : 403;
	return 0;
}

int kft_statusreq_judge(const kft_statusreq_target *t, const kft_statusreq_request *r,
                        kft_statusreq_answer *a)
{
	bool present = false;
	memset(a, 0, sizeof(*a));
	int rc = kft_statusreq_admit(t, r, a);
	if (rc)
		return rc < 0 ? rc : 0;
	json_t *ts = kft_statusreq_decode(r->body, r->len, &present, a);
	if (!ts)
		return a->body ? 0 : KFT_ENOMEM;
	char *invalid = present ? invalid_message(t, ts) : NULL;
	rc = invalid ? kft_statusreq_failure(a, 422, invalid, "Invalid")
	             : kft_statusreq_echo(a, ts, present);
	if (rc == 0 && !invalid && present)
		a->report = json_incref(ts);
	free(invalid);
	json_decref(ts);
	return rc;
}
