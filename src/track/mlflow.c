/*
 * mlflow.c - MLflow's tracking REST API over one reused curl handle (see
 * mlflow.h).
 *
 * Every reply is read into a bounded buffer and parsed as JSON; an error
 * reply's error_code (MLflow's protobuf ErrorCode names) decides the
 * status the caller acts on: the tracker retries KFT_EUNAVAILABLE with
 * back-off and drops what the server refuses for good. Credentials are set
 * as headers and never appear in a message.
 */
#include "track/mlflow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "util/base64.h"
#include "util/pctenc.h"
#include "util/strbuf.h"

#define REPLY_MAX     (4 << 20)
#define URI_MAX       2048
#define ARTIFACTS_API "/api/2.0/mlflow-artifacts/artifacts/"

struct kft_mlflow {
	CURL *curl;
	char *uri;  /* without a trailing '/' */
	char *auth; /* "Authorization: ..." or NULL */
	char *ca_file;
	bool insecure;
	long timeout_s;
	const char *label; /* the server's name in messages (static) */
};

extern char **environ;

const char *kft_mlflow_env(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = env ? env : environ; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return (*e)[n + 1] ? *e + n + 1 : NULL;
	return NULL;
}

void kft_mlflow_opts_from_env(char *const *env, kft_mlflow_opts *o)
{
	const char *insecure = kft_mlflow_env(env, "MLFLOW_TRACKING_INSECURE_TLS");
	memset(o, 0, sizeof(*o));
	o->uri = kft_mlflow_env(env, "MLFLOW_TRACKING_URI");
	o->token = kft_mlflow_env(env, "MLFLOW_TRACKING_TOKEN");
	o->username = kft_mlflow_env(env, "MLFLOW_TRACKING_USERNAME");
	o->password = kft_mlflow_env(env, "MLFLOW_TRACKING_PASSWORD");
	o->ca_file = kft_mlflow_env(env, "MLFLOW_TRACKING_SERVER_CERT_PATH");
	o->insecure = insecure && strcmp(insecure, "true") == 0;
}

static char *auth_header(const kft_mlflow_opts *o)
{
	char *out = NULL;
	if (o->token) {
		if (asprintf(&out, "Authorization: Bearer %s", o->token) < 0)
			return NULL;
		return out;
	}
	if (!o->username || !o->password)
		return NULL;
	char *pair = NULL, *b64 = NULL;
	if (asprintf(&pair, "%s:%s", o->username, o->password) >= 0 &&
	    (b64 = kft_base64_encode(pair, strlen(pair))) &&
	    asprintf(&out, "Authorization: Basic %s", b64) < 0)
		out = NULL;
	free(pair);
	free(b64);
	return out;
}

int kft_mlflow_open(const kft_mlflow_opts *o, kft_mlflow **out, kft_error *err)
{
	*out = NULL;
	const char *setting = o->setting ? o->setting : "MLFLOW_TRACKING_URI";
	if (!o->uri || (strncmp(o->uri, "http://", 7) != 0 && strncmp(o->uri, "https://", 8) != 0))
		return kft_error_set(err, KFT_EINVAL,
		                     "%s: Invalid value: \"%s\": kftrainer talks to "
		                     "a %s server, http(s)://HOST[:PORT]",
		                     setting, o->uri ? o->uri : "",
		                     o->label ? o->label : "tracking");
	if (strlen(o->uri) > URI_MAX || strpbrk(o->uri, " \r\n"))
		return kft_error_set(err, KFT_EINVAL, "%s: Invalid value", setting);
	kft_mlflow *m = calloc(1, sizeof(*m));
	if (!m)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	m->uri = strdup(o->uri);
	m->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
	m->auth = auth_header(o);
	m->insecure = o->insecure;
	m->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
	m->label = o->label ? o->label : "mlflow";
	m->curl = curl_easy_init();
	if (!m->uri || !m->curl || (o->ca_file && !m->ca_file)) {
		const char *why = m->curl ? "out of memory" : curl_easy_strerror(CURLE_FAILED_INIT);
		kft_mlflow_close(m);
		return kft_error_set(err, KFT_ENOMEM, "%s: %s", m->label, why);
	}
	size_t n = strlen(m->uri);
	while (n > 0 && m->uri[n - 1] == '/')
		m->uri[--n] = '\0';
	*out = m;
	return 0;
}

void kft_mlflow_close(kft_mlflow *m)
{
	if (!m)
		return;
	if (m->curl)
		curl_easy_cleanup(m->curl);
	free(m->uri);
	if (m->auth)
		memset(m->auth, 0, strlen(m->auth));
	free(m->auth);
	free(m->ca_file);
	free(m);
}

const char *kft_mlflow_uri(const kft_mlflow *m)
{
	return m->uri;
}

/* ---- one request ------------------------------------------------------------- */

static void setup(kft_mlflow *m, const char *url, struct curl_slist *hdrs, kft_strbuf_capped *r)
{
	CURL *c = m->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, m->timeout_s);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kftrainer");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kft_strbuf_capped_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	if (m->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, m->ca_file);
	if (m->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/* MLflow's error_code names, as the statuses the callers act on. */
static int code_status(const char *code, long http)
{
	if (code && strcmp(code, "RESOURCE_DOES_NOT_EXIST") == 0)
		return KFT_ENOTFOUND;
	if (code && strcmp(code, "RESOURCE_ALREADY_EXISTS") == 0)
		return KFT_EEXIST;
	if (http == 401 || http == 403)
		return KFT_EDENIED;
	if (http == 429 || http >= 500 ||
	    (code && (strcmp(code, "TEMPORARILY_UNAVAILABLE") == 0 ||
	              strcmp(code, "REQUEST_LIMIT_EXCEEDED") == 0)))
		return KFT_EUNAVAILABLE;
	if (http == 404)
		return KFT_ENOTFOUND;
	return http == 409 ? KFT_EEXIST : KFT_EINVAL;
}

/* The outcome of a performed request: 2xx with its JSON (when wanted), or
 * the error the reply or the transport says. */
static int outcome(kft_mlflow *m, const char *what, CURLcode cc, const char *errbuf,
                   kft_strbuf_capped *r, json_t **out, kft_error *err)
{
	long http = 0;
	if (r->over)
		return kft_error_set(err, KFT_ELIMIT, "%s %s %s: reply over %d bytes", m->label,
		                     m->uri, what, REPLY_MAX);
	if (cc != CURLE_OK)
		return kft_error_set(err, KFT_EUNAVAILABLE, "%s %s %s: %s", m->label, m->uri, what,
		                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
	curl_easy_getinfo(m->curl, CURLINFO_RESPONSE_CODE, &http);
	json_t *doc =
	        r->text.len ? json_loadb(kft_strbuf_str(&r->text), r->text.len, 0, NULL) : NULL;
	if (http >= 200 && http < 300) {
		if (out && !(*out = doc ? doc : json_object()))
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		if (!out)
			json_decref(doc);
		return 0;
	}
	const char *code = json_string_value(json_object_get(doc, "error_code"));
	const char *msg = json_string_value(json_object_get(doc, "message"));
	int rc = kft_error_set(err, code_status(code, http), "%s %s %s: HTTP %ld%s%s%s%.500s",
	                       m->label, m->uri, what, http, code ? " " : "", code ? code : "",
	                       msg ? ": " : "", msg ? msg : "");
	json_decref(doc);
	return rc;
}

static int perform(kft_mlflow *m, const char *what, kft_strbuf_capped *r, json_t **out,
                   kft_error *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(m->curl, CURLOPT_ERRORBUFFER, errbuf);
	CURLcode cc = curl_easy_perform(m->curl);
	int rc = outcome(m, what, cc, errbuf, r, out, err);
	curl_easy_setopt(m->curl, CURLOPT_ERRORBUFFER, NULL);
	return rc;
}

static struct curl_slist *headers(kft_mlflow *m, const char *content_type)
{
	struct curl_slist *h = curl_slist_append(NULL, content_type);
	if (h && m->auth) {
		struct curl_slist *h2 = curl_slist_append(h, m->auth);
		if (!h2) {
			curl_slist_free_all(h);
			return NULL;
		}
		h = h2;
	}
	return h;
}

int kft_mlflow_call(kft_mlflow *m, const char *method, const char *path, const json_t *body,
                    json_t **out, kft_error *err)
{
	char full[1024];
	if ((size_t)snprintf(full, sizeof(full), "api/2.0/mlflow/%s", path) >= sizeof(full))
		return kft_error_set(err, KFT_ELIMIT, "mlflow %s: request too long", path);
	return kft_mlflow_call_at(m, method, full, body, out, err);
}

int kft_mlflow_call_at(kft_mlflow *m, const char *method, const char *path, const json_t *body,
                       json_t **out, kft_error *err)
{
	char url[URI_MAX + 1100];
	char *text = NULL;
	kft_strbuf_capped r = {.max = REPLY_MAX};
	if (out)
		*out = NULL;
	if ((size_t)snprintf(url, sizeof(url), "%s/%s", m->uri, path) >= sizeof(url))
		return kft_error_set(err, KFT_ELIMIT, "%s %s: request too long", m->label, path);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct curl_slist *h = headers(m, "Content-Type: application/json");
	if (!h || (body && !text)) {
		curl_slist_free_all(h);
		free(text);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	kft_strbuf_init(&r.text);
	setup(m, url, h, &r);
	curl_easy_setopt(m->curl, CURLOPT_CUSTOMREQUEST, method);
	if (text)
		curl_easy_setopt(m->curl, CURLOPT_POSTFIELDS, text);
	int rc = perform(m, path, &r, out, err);
	curl_slist_free_all(h);
	kft_strbuf_free(&r.text);
	free(text);
	return rc;
}

/* ---- experiments and runs ------------------------------------------------------ */

static int experiment_get(kft_mlflow *m, const char *name, char **id, kft_error *err)
{
	char path[3 * 1024], enc[3 * 1000];
	json_t *reply = NULL;
	/* a query value: '/' may stay (RFC 3986) */
	if (kft_pct_encode(name, true, enc, sizeof(enc)) != 0)
		return kft_error_set(err, KFT_ELIMIT, "mlflow: experiment name too long");
	int rc;
	snprintf(path, sizeof(path), "experiments/get-by-name?experiment_name=%s", enc);
	rc = kft_mlflow_call(m, "GET", path, NULL, &reply, err);
	const char *v = json_string_value(
	        json_object_get(json_object_get(reply, "experiment"), "experiment_id"));
	if (rc == 0 && !v)
		rc = kft_error_set(err, KFT_EPARSE, "mlflow %s experiments/get-by-name: no id",
		                   m->uri);
	if (rc == 0 && !(*id = strdup(v)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(reply);
	return rc;
}

int kft_mlflow_experiment(kft_mlflow *m, const char *name, char **id, kft_error *err)
{
	*id = NULL;
	if (strlen(name) > 900)
		return kft_error_set(err, KFT_EINVAL, "mlflow: experiment name too long");
	int rc = experiment_get(m, name, id, err);
	if (rc != KFT_ENOTFOUND)
		return rc;
	json_t *body = json_pack("{s:s}", "name", name), *reply = NULL;
	rc = body ? kft_mlflow_call(m, "POST", "experiments/create", body, &reply, err)
	          : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	const char *v = json_string_value(json_object_get(reply, "experiment_id"));
	if (rc == 0 && v && !(*id = strdup(v)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(reply);
	if (rc == KFT_EEXIST || (rc == 0 && !*id)) /* made meanwhile, or no id said */
		return experiment_get(m, name, id, err);
	return rc;
}

/* A value inside MLflow's search filter: single-quoted, quotes escaped. */
static char *filter_quote(const char *v)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_putc(&b, '\'');
	for (const char *p = v; *p; p++) {
		if (*p == '\'' || *p == '\\')
			kft_strbuf_putc(&b, '\\');
		kft_strbuf_putc(&b, *p);
	}
	kft_strbuf_putc(&b, '\'');
	return kft_strbuf_detach(&b);
}

int kft_mlflow_run_find(kft_mlflow *m, const char *exp_id, const char *key, const char *value,
                        json_t **info, kft_error *err)
{
	char *q = filter_quote(value), *filter = NULL;
	json_t *body = NULL, *reply = NULL;
	*info = NULL;
	if (!q || strchr(key, '`') || asprintf(&filter, "tags.`%s` = %s", key, q) < 0)
		filter = NULL;
	free(q);
	if (filter)
		body = json_pack("{s:[s], s:s, s:i, s:[s]}", "experiment_ids", exp_id, "filter",
		                 filter, "max_results", 1, "order_by",
		                 "attributes.start_time DESC");
	free(filter);
	int rc = body ? kft_mlflow_call(m, "POST", "runs/search", body, &reply, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	json_t *run = json_array_get(json_object_get(reply, "runs"), 0);
	json_t *ri = json_object_get(run, "info");
	if (rc == 0 && !ri)
		rc = KFT_ENOTFOUND; /* no such run: not an error worth a message */
	else if (rc == 0 && !json_string_value(json_object_get(ri, "run_id")))
		rc = kft_error_set(err, KFT_EPARSE, "mlflow %s runs/search: a run without run_id",
		                   m->uri);
	if (rc == 0)
		*info = json_incref(ri);
	json_decref(reply);
	return rc;
}

int kft_mlflow_run_create(kft_mlflow *m, const char *exp_id, const char *name, int64_t start_ms,
                          const json_t *tags, json_t **info, kft_error *err)
{
	json_t *reply = NULL;
	json_t *body =
	        json_pack("{s:s, s:s, s:I, s:O}", "experiment_id", exp_id, "run_name", name,
	                  "start_time", (json_int_t)start_ms, "tags", tags ? tags : json_array());
	*info = NULL;
	int rc = body ? kft_mlflow_call(m, "POST", "runs/create", body, &reply, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	json_t *ri = json_object_get(json_object_get(reply, "run"), "info");
	if (rc == 0 && !json_string_value(json_object_get(ri, "run_id")))
		rc = kft_error_set(err, KFT_EPARSE, "mlflow %s runs/create: no run_id", m->uri);
	if (rc == 0)
		*info = json_incref(ri);
	json_decref(reply);
	return rc;
}

int kft_mlflow_run_ensure(kft_mlflow *m, const char *exp_id, const char *key, const char *value,
                          const char *name, int64_t start_ms, const json_t *tags, json_t **info,
                          kft_error *err)
{
	int rc = kft_mlflow_run_find(m, exp_id, key, value, info, err);
	if (rc == KFT_ENOTFOUND)
		rc = kft_mlflow_run_create(m, exp_id, name, start_ms, tags, info, err);
	return rc;
}

int kft_mlflow_log_batch(kft_mlflow *m, const char *run_id, const json_t *metrics,
                         const json_t *params, const json_t *tags, kft_error *err)
{
	json_t *body = json_pack("{s:s}", "run_id", run_id);
	if (body && metrics && json_array_size(metrics))
		json_object_set(body, "metrics", (json_t *)metrics);
	if (body && params && json_array_size(params))
		json_object_set(body, "params", (json_t *)params);
	if (body && tags && json_array_size(tags))
		json_object_set(body, "tags", (json_t *)tags);
	int rc = body ? kft_mlflow_call(m, "POST", "runs/log-batch", body, NULL, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	return rc;
}

int kft_mlflow_run_update(kft_mlflow *m, const char *run_id, const char *status, int64_t end_ms,
                          kft_error *err)
{
	json_t *body = json_pack("{s:s, s:s}", "run_id", run_id, "status", status);
	if (body && end_ms > 0)
		json_object_set_new(body, "end_time", json_integer(end_ms));
	int rc = body ? kft_mlflow_call(m, "POST", "runs/update", body, NULL, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	return rc;
}

/* ---- artifacts and the registry ------------------------------------------------- */

int kft_mlflow_artifact_put(kft_mlflow *m, const char *artifact_uri, const char *rel,
                            const char *path, kft_error *err)
{
	static const char scheme[] = "mlflow-artifacts:";
	char where[3 * URI_MAX], url[4 * URI_MAX], *joined = NULL;
	struct stat st;
	if (strncmp(artifact_uri, scheme, sizeof(scheme) - 1) != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "mlflow: artifact URI %s is not the tracking server's",
		                     artifact_uri);
	const char *p = artifact_uri + sizeof(scheme) - 1;
	while (*p == '/')
		p++;
	if (asprintf(&joined, "%s/%s", p, rel) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_pct_encode(joined, true, where, sizeof(where));
	free(joined);
	if (rc)
		return kft_error_set(err, KFT_ELIMIT, "mlflow: artifact path too long");
	snprintf(url, sizeof(url), "%s" ARTIFACTS_API "%s", m->uri, where);
	FILE *f = fopen(path, "rbe");
	if (!f || fstat(fileno(f), &st) != 0) {
		rc = kft_error_set(err, KFT_EIO, "mlflow: reading %s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return rc;
	}
	kft_strbuf_capped r = {.max = REPLY_MAX};
	kft_strbuf_init(&r.text);
	struct curl_slist *h = headers(m, "Content-Type: application/octet-stream");
	if (!h) {
		fclose(f);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	setup(m, url, h, &r);
	curl_easy_setopt(m->curl, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(m->curl, CURLOPT_READDATA, f);
	curl_easy_setopt(m->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
	/* a large file takes longer than a call: only a stalled upload fails */
	curl_easy_setopt(m->curl, CURLOPT_TIMEOUT, 0L);
	curl_easy_setopt(m->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(m->curl, CURLOPT_LOW_SPEED_TIME, 120L);
	rc = perform(m, "mlflow-artifacts upload", &r, NULL, err);
	curl_slist_free_all(h);
	kft_strbuf_free(&r.text);
	fclose(f);
	return rc;
}

int kft_mlflow_model_version(kft_mlflow *m, const char *name, const char *source,
                             const char *run_id, char **version, kft_error *err)
{
	json_t *reply = NULL, *body = json_pack("{s:s}", "name", name);
	*version = NULL;
	int rc = body ? kft_mlflow_call(m, "POST", "registered-models/create", body, NULL, err)
	              : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	if (rc && rc != KFT_EEXIST)
		return rc;
	body = json_pack("{s:s, s:s}", "name", name, "source", source);
	if (body && run_id)
		json_object_set_new(body, "run_id", json_string(run_id));
	rc = body ? kft_mlflow_call(m, "POST", "model-versions/create", body, &reply, err)
	          : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(body);
	const char *v = json_string_value(
	        json_object_get(json_object_get(reply, "model_version"), "version"));
	if (rc == 0 && !v)
		rc = kft_error_set(err, KFT_EPARSE, "mlflow %s model-versions/create: no version",
		                   m->uri);
	if (rc == 0 && !(*version = strdup(v)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(reply);
	return rc;
}
