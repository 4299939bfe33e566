/*
 * api.c - the dashboard's JSON API (see ui.h and docs/ui.md for the
 * routes), over the server's job source: the local engine or a cluster
 * (ui_internal.h); nothing here knows which.
 *
 *   GET  /api/session                       the CSRF token, charts built in, the source
 *   GET  /api/jobs?status=S&q=TEXT          the jobs as `get` shows them (rows), filtered
 *   GET  /api/watch/jobs                    the same, as server-sent events on change
 *   GET  /api/jobs/NS/NAME                  one job: TrainJob, pods, steps, events
 *   GET  /api/watch/jobs/NS/NAME            the same, as server-sent events on change
 *   GET  /api/jobs/NS/NAME/yaml             the TrainJob and its objects (Secrets redacted)
 *   GET  /api/jobs/NS/NAME/metrics?after=ID the report history
 *   GET  /api/jobs/NS/NAME/logs/STEP/INDEX  a pod's log (?tail=BYTES, ?follow=1, ?download=1)
 *   POST /api/jobs/NS/NAME/{suspend,resume,delete}
 *   GET  /api/runtimes                      the runtimes; /api/runtimes/NAME/yaml one as YAML
 *   POST /api/render                        a TrainJob (YAML or JSON) previewed as objects
 *   /api/optimizations...                   OptimizationJobs (optimizations.c)
 *
 * Everything a job wrote (names, logs, metric names) reaches the page as
 * JSON or text/plain and is put into the page as text, never as markup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/decode.h"
#include "ui/ui_internal.h"

#define WATCH_TICK_MS 1000
#define HEARTBEAT_MS  15000
#define TAIL_DEFAULT  (1024 * 1024)

static const kft_ui_source *source(const kft_ui_conn *c)
{
	return c->env->source;
}

static void answer(kft_ui_conn *c, json_t *doc, const kft_error *err)
{
	if (doc)
		kft_ui_respond_json(c, 200, doc);
	else
		kft_ui_respond_failure(c, err);
}

/* ---- the jobs list ------------------------------------------------------------- */

/* Whether row passes ?status= (equal) and ?q= (a part of the name, runtime
 * or namespace, ignoring case): the page's own filter, for scripts. */
static bool row_matches(const json_t *row, const char *status, const char *q)
{
	if (*status && strcmp(json_string_value(json_object_get(row, "status")) ?: "", status) != 0)
		return false;
	if (!*q)
		return true;
	static const char *const keys[] = {"name", "runtime", "namespace"};
	for (size_t i = 0; i < 3; i++)
		if (strcasestr(json_string_value(json_object_get(row, keys[i])) ?: "", q))
			return true;
	return false;
}

static json_t *jobs_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	(void)ns;
	(void)name;
	return source(c)->jobs(c, err);
}

static json_t *job_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	return source(c)->job(c, ns, name, err);
}

static json_t *jobs_filtered(kft_ui_conn *c, kft_error *err)
{
	char status[64] = "", q[256] = "";
	if (!kft_ui_query(c, "status", status, sizeof(status)))
		status[0] = '\0';
	if (!kft_ui_query(c, "q", q, sizeof(q)))
		q[0] = '\0';
	json_t *doc = source(c)->jobs(c, err);
	json_t *rows = json_object_get(doc, "items");
	for (size_t i = json_array_size(rows); (*status || *q) && i-- > 0;)
		if (!row_matches(json_array_get(rows, i), status, q))
			json_array_remove(rows, i);
	return doc;
}

/* ---- one job ---------------------------------------------------------------------- */

/* objects as one YAML text, each a document. */
static char *yaml_of(const json_t *objects, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	size_t i;
	const json_t *o;
	json_array_foreach(objects, i, o) if (f) kft_yaml_emit_file(f, o, 1, NULL);
	if (f)
		fclose(f);
	return buf;
}

static void job_yaml(kft_ui_conn *c, const char *ns, const char *name)
{
	kft_error err = {0};
	json_t *objects = NULL;
	if (source(c)->objects(c, ns, name, &objects, &err) != 0) {
		kft_ui_respond_failure(c, &err);
		return;
	}
	kft_ui_redact(objects);
	size_t len = 0;
	char *text = yaml_of(objects, &len);
	kft_ui_respond(c, 200, "text/plain; charset=utf-8", text ? text : "", text ? len : 0, NULL);
	free(text);
	json_decref(objects);
}

static void job_metrics(kft_ui_conn *c, const char *ns, const char *name)
{
	kft_error err = {0};
	char after[32];
	long long from = kft_ui_query(c, "after", after, sizeof(after)) ? atoll(after) : 0;
	answer(c, source(c)->metrics(c, ns, name, from, &err), &err);
}

static void job_action(kft_ui_conn *c, const char *ns, const char *name, const char *verb)
{
	kft_error err = {0};
	if (source(c)->action(c, ns, name, verb, &err) != 0)
		kft_ui_respond_failure(c, &err);
	else
		kft_ui_respond_json(c, 200, json_pack("{s:b}", "ok", 1));
}

/* ---- watching ------------------------------------------------------------------------ */

/* The next event's text for doc(c, ns, name): the document, or why it is
 * not there. */
static char *event_text(kft_ui_conn *c, kft_ui_doc_fn doc_of, const char *ns, const char *name)
{
	kft_error err = {0};
	json_t *doc = doc_of(c, ns, name, &err);
	if (!doc)
		doc = json_pack("{s:s, s:b}", "error", err.message, "gone",
		                err.code == KFT_ENOTFOUND);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return text;
}

/* Sends doc(c) as an event whenever its text changes, until the client
 * leaves or the server stops. A job that is gone ends the stream with an
 * event saying so. */
void kft_ui_watch(kft_ui_conn *c, kft_ui_doc_fn doc_of, const char *ns, const char *name)
{
	char *last = NULL;
	long long quiet = 0;
	if (kft_ui_start_stream(c, "text/event-stream", NULL) != 0)
		return;
	for (;;) {
		char *text = event_text(c, doc_of, ns, name);
		int rc = 0;
		if (text && (!last || strcmp(text, last) != 0)) {
			rc = kft_ui_send(c, "data: ", 6) || kft_ui_send(c, text, strlen(text)) ||
			     kft_ui_send(c, "\n\n", 2);
			free(last);
			last = text;
			quiet = 0;
		} else {
			free(text);
			quiet += WATCH_TICK_MS;
			if (quiet >= HEARTBEAT_MS) {
				rc = kft_ui_send(c, ": keep-alive\n\n", 14);
				quiet = 0;
			}
		}
		if (rc || kft_ui_wait(c, WATCH_TICK_MS) != 0)
			break;
	}
	free(last);
}

/* ---- logs ---------------------------------------------------------------------------- */

/* A pod's log, whichever source it comes from: the request's options read
 * here, the stream started on the source's first write (so a pod that is
 * not there is still a 404), a download named NAME-STEP-INDEX.log. */
static void job_log(kft_ui_conn *c, const char *ns, const char *name, const char *step,
                    const char *index)
{
	kft_error err = {0};
	char v[32], extra[512];
	char *end;
	long idx = strtol(index, &end, 10);
	if (*end || idx < 0 || idx > 1000000) {
		kft_ui_respond_error(c, 404, "no such pod");
		return;
	}
	bool download = kft_ui_query(c, "download", v, sizeof(v));
	kft_ui_log_req r = {.ns = ns, .name = name, .step = step, .index = idx};
	r.follow = !download && kft_ui_query(c, "follow", v, sizeof(v));
	r.tail = !download && kft_ui_query(c, "tail", v, sizeof(v));
	r.tail_bytes = r.tail ? atoll(v) : 0;
	if (r.tail && r.tail_bytes <= 0)
		r.tail_bytes = TAIL_DEFAULT;
	/* the file name is ours: job names and steps are DNS labels */
	snprintf(extra, sizeof(extra),
	         "Content-Disposition: attachment; filename=\"%.100s-%.60s-%ld.log\"\r\n", name,
	         step, idx);
	kft_ui_log out = {.c = c, .extra = download ? extra : NULL};
	if (source(c)->log(c, &r, &out, &err) != 0 && !out.started)
		kft_ui_respond_failure(c, &err);
	else if (!out.started)
		kft_ui_log_write(&out, "", 0);
}

/* ---- runtimes and render ------------------------------------------------------------- */

static const char *name_of(const json_t *o)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), "name")) ?: "";
}

static void runtimes(kft_ui_conn *c, const char *yaml_name)
{
	json_t *list = NULL;
	char *problems = NULL, *text = NULL;
	if (source(c)->runtimes(c, &list, &problems) != 0) {
		kft_ui_respond_error(c, 500, problems ? problems : "cannot read the runtimes");
	} else if (!yaml_name) {
		kft_ui_respond_json(c, 200,
		                    json_pack("{s:O, s:s?}", "items", list, "problems", problems));
	} else {
		size_t i;
		const json_t *rt;
		json_array_foreach(list, i, rt) if (!text && strcmp(yaml_name, name_of(rt)) == 0)
		        text = kft_yaml_emit(rt, NULL);
		if (text)
			kft_ui_respond(c, 200, "text/plain; charset=utf-8", text, strlen(text),
			               NULL);
		else
			kft_ui_respond_error(c, 404, "no such runtime");
	}
	free(text);
	json_decref(list);
	free(problems);
}

static void render(kft_ui_conn *c)
{
	kft_doc_list docs = {0};
	kft_error err = {0};
	json_t *objects = NULL;
	char *problems = NULL;
	if (!c->body) {
		kft_ui_respond_error(c, 400, "send a TrainJob as YAML or JSON");
		return;
	}
	if (kft_decode(c->body, c->body_len, "trainjob", &docs, &err) != 0) {
		kft_ui_respond_json(c, 422, json_pack("{s:s}", "problems", err.message));
		return;
	}
	int rc = source(c)->render(c, docs.items[0].root, &objects, &problems);
	kft_doc_list_free(&docs);
	if (rc) {
		kft_ui_respond_json(
		        c, 422,
		        json_pack("{s:s}", "problems", problems ? problems : "cannot render"));
		free(problems);
		return;
	}
	free(problems);
	kft_ui_redact(objects);
	size_t len = 0;
	char *text = yaml_of(objects, &len);
	kft_ui_respond_json(c, 200,
	                    json_pack("{s:o, s:s}", "objects", objects, "yaml", text ? text : ""));
	free(text);
}

/* ---- routing ------------------------------------------------------------------------- */

static void jobs_route(kft_ui_conn *c, char **s, int n, bool get)
{
	kft_error err = {0};
	if (n == 2 && get)
		answer(c, job_doc(c, s[0], s[1], &err), &err);
	else if (n == 3 && get && strcmp(s[2], "yaml") == 0)
		job_yaml(c, s[0], s[1]);
	else if (n == 3 && get && strcmp(s[2], "metrics") == 0)
		job_metrics(c, s[0], s[1]);
	else if (n == 5 && get && strcmp(s[2], "logs") == 0)
		job_log(c, s[0], s[1], s[3], s[4]);
	else if (n == 3 && !get)
		job_action(c, s[0], s[1], s[2]);
	else
		kft_ui_respond_error(c, 404, "not found");
}

static void session(kft_ui_conn *c)
{
	kft_ui_respond_json(c, 200,
	                    json_pack("{s:s, s:b, s:s, s:s?}", "csrf", kft_ui_csrf(c), "charts",
	                              kft_ui_have_charts, "mode", source(c)->mode, "namespace",
	                              source(c)->scope(c)));
}

void kft_ui_api(kft_ui_conn *c)
{
	bool get = strcmp(c->method, "GET") == 0, post = strcmp(c->method, "POST") == 0;
	const char *p = c->path + 5; /* after "/api/" */
	char *copy = NULL, *seg[6];
	kft_error err = {0};
	if (!get && !post) {
		kft_ui_respond_error(c, 405, "method not allowed");
	} else if (get && strcmp(p, "session") == 0) {
		session(c);
	} else if (get && strcmp(p, "jobs") == 0) {
		answer(c, jobs_filtered(c, &err), &err);
	} else if (get && strcmp(p, "watch/jobs") == 0) {
		kft_ui_watch(c, jobs_doc, NULL, NULL);
	} else if (get && strncmp(p, "watch/jobs/", 11) == 0 &&
	           kft_ui_split(p + 11, &copy, seg, 3) == 2) {
		kft_ui_watch(c, job_doc, seg[0], seg[1]);
	} else if (get && strcmp(p, "watch/optimizations") == 0) {
		kft_ui_watch(c, kft_ui_optimizations_doc, NULL, NULL);
	} else if (get && strncmp(p, "watch/optimizations/", 20) == 0 &&
	           kft_ui_split(p + 20, &copy, seg, 3) == 2) {
		kft_ui_watch(c, kft_ui_optimization_doc, seg[0], seg[1]);
	} else if (strcmp(p, "optimizations") == 0) {
		kft_ui_optimizations_route(c, seg, 0, get);
	} else if (strncmp(p, "optimizations/", 14) == 0) {
		int n = kft_ui_split(p + 14, &copy, seg, 6);
		if (n >= 2)
			kft_ui_optimizations_route(c, seg, n, get);
		else
			kft_ui_respond_error(c, 404, "not found");
	} else if (strncmp(p, "jobs/", 5) == 0) {
		int n = kft_ui_split(p + 5, &copy, seg, 6);
		if (n >= 2)
			jobs_route(c, seg, n, get);
		else
			kft_ui_respond_error(c, 404, "not found");
	} else if (get && strcmp(p, "runtimes") == 0) {
		runtimes(c, NULL);
	} else if (get && strncmp(p, "runtimes/", 9) == 0 &&
	           kft_ui_split(p + 9, &copy, seg, 3) == 2 && strcmp(seg[1], "yaml") == 0) {
		runtimes(c, seg[0]);
	} else if (post && strcmp(p, "render") == 0) {
		render(c);
	} else {
		kft_ui_respond_error(c, 404, "not found");
	}
	free(copy);
}
