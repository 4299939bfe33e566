/*
 * api.c - the dashboard's JSON API over the local engine (see ui.h and
 * docs/ui.md for the routes).
 *
 *   GET  /api/session                       the CSRF token, whether charts were built in
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
 * Logs are read from the file the engine recorded for the pod, in chunks,
 * never whole; only pods the store knows are served.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kftrainer/decode.h"
#include "ui/ui_internal.h"
#include "util/json.h"

#define WATCH_TICK_MS  1000
#define HEARTBEAT_MS   15000
#define FOLLOW_TICK_MS 250
#define CHUNK          (64 * 1024)
#define TAIL_DEFAULT   (1024 * 1024)

static int fail(kft_ui_conn *c, const kft_error *err)
{
	/* a cluster's refusals keep their meaning: not allowed, changed
	 * meanwhile, unreachable */
	int code = err->code == KFT_ENOTFOUND                              ? 404
	           : err->code == KFT_EINVAL || err->code == KFT_ECONFLICT ? 409
	           : err->code == KFT_EDENIED                              ? 403
	           : err->code == KFT_EUNAVAILABLE                         ? 503
	                                                                   : 500;
	return kft_ui_respond_error(c, code, err->message);
}

/* ---- the jobs list ------------------------------------------------------------- */

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static json_t *job_row(kft_ui_conn *c, kft_local *l, const json_t *job)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	json_t *row = h->job_row ? h->job_row(h->ctx, l, job) : json_object();
	if (!row)
		return NULL;
	const json_t *meta = json_object_get(job, "metadata");
	const json_t *ts = json_object_get(json_object_get(job, "status"), "trainerStatus");
	const json_t *ref = json_object_get(json_object_get(job, "spec"), "runtimeRef");
	json_object_set(row, "namespace", json_object_get(meta, "namespace"));
	json_object_set(row, "name", json_object_get(meta, "name"));
	json_object_set(row, "created", json_object_get(meta, "creationTimestamp"));
	json_object_set(row, "runtime", json_object_get(ref, "name"));
	json_object_set(row, "progress", json_object_get(ts, "progressPercentage"));
	json_object_set(row, "remaining", json_object_get(ts, "estimatedRemainingSeconds"));
	json_object_set(row, "reported", json_object_get(ts, "lastUpdatedTime"));
	return row;
}

static json_t *jobs_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	(void)ns;
	(void)name;
	if (kft_ui_cluster_of(c))
		return kft_ui_cluster_jobs(kft_ui_cluster_of(c), err);
	kft_local *l = kft_ui_local(c, err);
	json_t *jobs = NULL, *rows = json_array();
	if (!l || !rows || kft_local_list(l, NULL, &jobs, err) != 0) {
		json_decref(rows);
		return NULL;
	}
	size_t i;
	const json_t *job;
	json_array_foreach(jobs, i, job) json_array_append_new(rows, job_row(c, l, job));
	json_decref(jobs);
	return json_pack("{s:o}", "items", rows);
}

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

static json_t *jobs_filtered(kft_ui_conn *c, kft_error *err)
{
	char status[64] = "", q[256] = "";
	if (!kft_ui_query(c, "status", status, sizeof(status)))
		status[0] = '\0';
	if (!kft_ui_query(c, "q", q, sizeof(q)))
		q[0] = '\0';
	json_t *doc = jobs_doc(c, NULL, NULL, err);
	json_t *rows = json_object_get(doc, "items");
	for (size_t i = json_array_size(rows); (*status || *q) && i-- > 0;)
		if (!row_matches(json_array_get(rows, i), status, q))
			json_array_remove(rows, i);
	return doc;
}

/* ---- one job ---------------------------------------------------------------------- */

/* Secrets' values replaced: the page shows that a key exists, never what
 * it holds. kubectl apply keeps a copy of the whole Secret, values
 * included, in an annotation: that goes too. */
static void redact(json_t *objects)
{
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (!kind || strcmp(kind, "Secret") != 0)
			continue;
		json_t *ann = json_object_get(json_object_get(o, "metadata"), "annotations");
		if (json_object_get(ann, "kubectl.kubernetes.io/last-applied-configuration"))
			json_object_set_new(ann, "kubectl.kubernetes.io/last-applied-configuration",
			                    json_string("<redacted>"));
		static const char *const fields[] = {"data", "stringData"};
		for (size_t f = 0; f < 2; f++) {
			json_t *m = json_object_get(o, fields[f]);
			const char *k;
			json_t *v;
			json_object_foreach(m, k, v)
			        json_object_set_new(m, k, json_string("<redacted>"));
		}
	}
}

/* What each step's containers run: [{step, container, command, args,
 * workingDir}], from the JobSet the job runs. */
json_t *kft_ui_step_commands(const json_t *objects)
{
	json_t *out = json_array();
	const json_t *rjobs =
	        json_object_get(json_object_get(kft_json_find(objects, "kind", "JobSet"), "spec"),
	                        "replicatedJobs");
	size_t i, k;
	const json_t *r, *ct;
	json_array_foreach(rjobs, i, r)
	{
		const json_t *pod = json_object_get(
		        json_object_get(json_object_get(json_object_get(r, "template"), "spec"),
		                        "template"),
		        "spec");
		static const char *const lists[] = {"initContainers", "containers"};
		for (size_t li = 0; li < 2; li++)
			json_array_foreach(json_object_get(pod, lists[li]), k, ct)
			{
				json_array_append_new(
				        out,
				        json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "step",
				                  json_object_get(r, "name"), "container",
				                  json_object_get(ct, "name"), "image",
				                  json_object_get(ct, "image"), "command",
				                  json_object_get(ct, "command"), "args",
				                  json_object_get(ct, "args"), "workingDir",
				                  json_object_get(ct, "workingDir")));
			}
	}
	return out;
}

static json_t *pod_rows(kft_local *l, const char *ns, const char *name, kft_error *err)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	json_t *podlist = NULL;
	if (kft_store_pods(kft_local_store(l), ns, name, &recs, &n, err) != 0)
		return NULL;
	if (kft_local_pods(l, ns, name, &podlist, NULL) != 0)
		podlist = NULL;
	const json_t *items = json_object_get(podlist, "items");
	json_t *rows = json_array();
	for (size_t i = 0; rows && i < n; i++) {
		const kft_pod_record *r = &recs[i];
		const char *pod = json_array_size(items) == n
		                          ? str_at(json_array_get(items, i), "metadata", "name")
		                          : NULL;
		json_array_append_new(
		        rows,
		        json_pack("{s:s?, s:s, s:i, s:s, s:i, s:i, s:i, s:i, s:s?, s:s?, s:s?, "
		                  "s:s?, s:b}",
		                  "pod", pod, "step", r->step, "index", r->index, "state", r->state,
		                  "pid", r->pid, "restarts", r->restarts, "exitCode", r->exit_code,
		                  "signal", r->signal, "reason", r->reason, "message", r->message,
		                  "started", r->started, "finished", r->finished, "log",
		                  r->log_path != NULL));
	}
	kft_pod_records_free(recs, n);
	json_decref(podlist);
	return rows;
}

static json_t *job_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	if (kft_ui_cluster_of(c))
		return kft_ui_cluster_job(kft_ui_cluster_of(c), ns, name, err);
	kft_local *l = kft_ui_local(c, err);
	json_t *job = NULL, *objects = NULL, *events = NULL, *reports = NULL, *doc = NULL;
	if (!l || kft_local_get(l, ns, name, &job, err) != 0)
		return NULL;
	if (kft_store_job_objects(kft_local_store(l), ns, name, &objects, err) == 0 &&
	    kft_local_events(l, ns, name, &events, err) == 0 &&
	    kft_store_reports(kft_local_store(l), ns, name, 0, &reports, err) == 0) {
		json_t *pods = pod_rows(l, ns, name, err);
		const json_t *last = json_array_get(reports, json_array_size(reports) - 1);
		if (pods)
			doc = json_pack("{s:o, s:O, s:o, s:o, s:O, s:I}", "row", job_row(c, l, job),
			                "trainjob", job, "pods", pods, "steps",
			                kft_ui_step_commands(objects), "events",
			                json_object_get(events, "items"), "lastReport",
			                json_integer_value(json_object_get(last, "id")));
	}
	json_decref(job);
	json_decref(objects);
	json_decref(events);
	json_decref(reports);
	return doc;
}

static void job_yaml(kft_ui_conn *c, const char *ns, const char *name)
{
	kft_error err = {0};
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	kft_local *l = cl ? NULL : kft_ui_local(c, &err);
	json_t *job = NULL, *objects = NULL;
	if (cl ? kft_ui_cluster_objects(cl, ns, name, &objects, &err) != 0
	       : !l || kft_local_get(l, ns, name, &job, &err) != 0 ||
	                    kft_store_job_objects(kft_local_store(l), ns, name, &objects, &err) !=
	                            0) {
		json_decref(job);
		fail(c, &err);
		return;
	}
	redact(objects);
	if (job)
		json_array_insert(objects, 0, job);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	size_t i;
	const json_t *o;
	json_array_foreach(objects, i, o) if (f) kft_yaml_emit_file(f, o, 1, NULL);
	if (f)
		fclose(f);
	kft_ui_respond(c, 200, "text/plain; charset=utf-8", buf ? buf : "", buf ? len : 0, NULL);
	free(buf);
	json_decref(job);
	json_decref(objects);
}

static void job_metrics(kft_ui_conn *c, const char *ns, const char *name)
{
	kft_error err = {0};
	char after[32];
	long long from = kft_ui_query(c, "after", after, sizeof(after)) ? atoll(after) : 0;
	if (kft_ui_cluster_of(c)) {
		json_t *doc = kft_ui_cluster_metrics(kft_ui_cluster_of(c), ns, name, from, &err);
		if (doc)
			kft_ui_respond_json(c, 200, doc);
		else
			fail(c, &err);
		return;
	}
	kft_local *l = kft_ui_local(c, &err);
	json_t *reports = NULL;
	if (!l || kft_store_reports(kft_local_store(l), ns, name, from, &reports, &err) != 0) {
		fail(c, &err);
		return;
	}
	kft_ui_respond_json(c, 200, json_pack("{s:o}", "items", reports));
}

static void job_action(kft_ui_conn *c, const char *ns, const char *name, const char *verb)
{
	kft_error err = {0};
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	kft_local *l = cl ? NULL : kft_ui_local(c, &err);
	int rc = cl                             ? kft_ui_cluster_action(cl, ns, name, verb, &err)
	         : !l                           ? err.code
	         : strcmp(verb, "suspend") == 0 ? kft_local_set_suspend(l, ns, name, true, &err)
	         : strcmp(verb, "resume") == 0  ? kft_local_set_suspend(l, ns, name, false, &err)
	         : strcmp(verb, "delete") == 0  ? kft_local_delete(l, ns, name, &err)
	                                        : KFT_ENOTFOUND;
	if (rc == KFT_ENOTFOUND && !err.message[0])
		snprintf(err.message, sizeof(err.message), "no such action");
	if (rc)
		fail(c, &err);
	else
		kft_ui_respond_json(c, 200, json_pack("{s:b}", "ok", 1));
}

/* ---- watching ------------------------------------------------------------------------ */

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
		kft_error err = {0};
		json_t *doc = doc_of(c, ns, name, &err);
		if (!doc)
			doc = json_pack("{s:s, s:b}", "error", err.message, "gone",
			                err.code == KFT_ENOTFOUND);
		char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
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

/* The recorded log path of pod step/index and whether it may still grow. */
static char *log_of(kft_ui_conn *c, const char *ns, const char *name, const char *step, int index,
                    bool *live, kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	kft_pod_record *recs = NULL;
	size_t n = 0;
	char *path = NULL;
	if (!l || kft_store_pods(kft_local_store(l), ns, name, &recs, &n, err) != 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(recs[i].step, step) == 0 && recs[i].index == index && recs[i].log_path) {
			path = strdup(recs[i].log_path);
			*live = strcmp(recs[i].state, "Pending") == 0 ||
			        strcmp(recs[i].state, "Running") == 0;
		}
	kft_pod_records_free(recs, n);
	if (!path)
		kft_error_set(err, KFT_ENOTFOUND, "pod %s-%d of %s has no log yet", step, index,
		              name);
	return path;
}

/* Sends what fd holds from its offset to its end, in chunks. 0, or -1 when
 * the client is gone. */
static int send_rest(kft_ui_conn *c, int fd, char *buf)
{
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (kft_ui_send(c, buf, (size_t)n) != 0)
			return -1;
	}
}

/* Moves fd to its last `tail` bytes, at a line's start. */
static void seek_tail(int fd, long long tail, char *buf)
{
	struct stat st;
	if (tail <= 0 || fstat(fd, &st) != 0 || st.st_size <= tail)
		return;
	off_t at = st.st_size - tail;
	lseek(fd, at, SEEK_SET);
	ssize_t n = read(fd, buf, 4096);
	char *nl = n > 0 ? memchr(buf, '\n', (size_t)n) : NULL;
	lseek(fd, nl ? at + (nl - buf) + 1 : at, SEEK_SET);
}

static void job_log(kft_ui_conn *c, const char *ns, const char *name, const char *step,
                    const char *index)
{
	kft_error err = {0};
	char v[32], extra[512];
	bool live = false;
	char *end;
	long idx = strtol(index, &end, 10);
	if (*end || idx < 0 || idx > 1000000) {
		kft_ui_respond_error(c, 404, "no such pod");
		return;
	}
	if (kft_ui_cluster_of(c)) {
		kft_ui_cluster_log(c, kft_ui_cluster_of(c), ns, name, step, idx);
		return;
	}
	char *path = log_of(c, ns, name, step, (int)idx, &live, &err);
	if (!path) {
		fail(c, &err);
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	char *buf = fd >= 0 ? malloc(CHUNK) : NULL;
	if (!buf) {
		if (fd >= 0)
			close(fd);
		kft_ui_respond_error(c, 404, "the log cannot be read");
		return;
	}
	bool download = kft_ui_query(c, "download", v, sizeof(v));
	bool follow = !download && kft_ui_query(c, "follow", v, sizeof(v));
	long long tail = kft_ui_query(c, "tail", v, sizeof(v)) ? atoll(v) : 0;
	if (download) {
		/* The file name is ours (job names and steps are DNS labels). */
		snprintf(extra, sizeof(extra),
		         "Content-Disposition: attachment; filename=\"%.100s-%.60s-%ld.log\"\r\n",
		         name, step, idx);
	} else {
		seek_tail(fd, tail, buf);
	}
	int rc = kft_ui_start_stream(c, "text/plain; charset=utf-8", download ? extra : NULL);
	if (rc == 0)
		rc = send_rest(c, fd, buf);
	/* Following: more as it is written, until the pod has ended and its
	 * last bytes are sent (a restarted pod appends to the same file). */
	while (rc == 0 && follow) {
		if (kft_ui_wait(c, FOLLOW_TICK_MS) != 0)
			break;
		rc = send_rest(c, fd, buf);
		if (rc == 0 && !live)
			break;
		char *p = log_of(c, ns, name, step, (int)idx, &live, &err);
		if (!p)
			break;
		free(p);
	}
	free(buf);
	close(fd);
}

/* ---- runtimes and render ------------------------------------------------------------- */

static void runtimes(kft_ui_conn *c, const char *yaml_of)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	json_t *list = NULL;
	char *problems = NULL;
	kft_error err = {0};
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	if (!cl && !h->runtimes) {
		kft_ui_respond_error(c, 404, "no runtimes");
		return;
	}
	int rc;
	if (cl) {
		rc = kft_ui_cluster_runtimes(cl, &list, &err);
		if (rc)
			problems = strdup(err.message);
	} else {
		kft_ui_hooks_lock(c);
		rc = h->runtimes(h->ctx, &list, &problems);
		kft_ui_hooks_unlock(c);
	}
	if (rc) {
		kft_ui_respond_error(c, 500, problems ? problems : "cannot read the runtimes");
	} else if (yaml_of) {
		size_t i;
		const json_t *rt;
		char *text = NULL;
		json_array_foreach(
		        list, i,
		        rt) if (!text && strcmp(yaml_of, str_at(rt, "metadata", "name") ?: "") == 0)
		        text = kft_yaml_emit(rt, NULL);
		if (text)
			kft_ui_respond(c, 200, "text/plain; charset=utf-8", text, strlen(text),
			               NULL);
		else
			kft_ui_respond_error(c, 404, "no such runtime");
		free(text);
	} else {
		kft_ui_respond_json(c, 200,
		                    json_pack("{s:O, s:s?}", "items", list, "problems", problems));
	}
	json_decref(list);
	free(problems);
}

static void render(kft_ui_conn *c)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	kft_doc_list docs = {0};
	kft_error err = {0};
	json_t *objects = NULL, *cluster_runtimes = NULL;
	char *problems = NULL;
	kft_ui_cluster *cl = kft_ui_cluster_of(c);
	if (!c->body || (cl ? !h->render_with : !h->render)) {
		kft_ui_respond_error(c, 400, "send a TrainJob as YAML or JSON");
		return;
	}
	if (kft_decode(c->body, c->body_len, "trainjob", &docs, &err) != 0) {
		kft_ui_respond_json(c, 422, json_pack("{s:s}", "problems", err.message));
		return;
	}
	int rc = 0;
	json_t *job = docs.items[0].root;
	if (cl) {
		/* resolved as the API server would: in the namespace the server
		 * watches unless the TrainJob names one */
		json_t *meta = json_object_get(job, "metadata");
		if (json_is_object(meta) && !json_object_get(meta, "namespace"))
			json_object_set_new(meta, "namespace",
			                    json_string(kft_ui_cluster_namespace(cl)));
		rc = kft_ui_cluster_runtimes(cl, &cluster_runtimes, &err);
		if (rc)
			problems = strdup(err.message);
	}
	kft_ui_hooks_lock(c);
	if (rc == 0)
		rc = cl ? h->render_with(h->ctx, job, cluster_runtimes, &objects, &problems)
		        : h->render(h->ctx, job, &objects, &problems);
	kft_ui_hooks_unlock(c);
	json_decref(cluster_runtimes);
	kft_doc_list_free(&docs);
	if (rc) {
		kft_ui_respond_json(
		        c, 422,
		        json_pack("{s:s}", "problems", problems ? problems : "cannot render"));
		free(problems);
		return;
	}
	free(problems);
	redact(objects);
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);
	const json_t *o;
	json_array_foreach(objects, i, o) if (f) kft_yaml_emit_file(f, o, 1, NULL);
	if (f)
		fclose(f);
	kft_ui_respond_json(c, 200,
	                    json_pack("{s:o, s:s}", "objects", objects, "yaml", buf ? buf : ""));
	free(buf);
}

/* ---- routing ------------------------------------------------------------------------- */

static void jobs_route(kft_ui_conn *c, char **s, int n, bool get)
{
	kft_error err = {0};
	if (n == 2 && get) {
		json_t *doc = job_doc(c, s[0], s[1], &err);
		if (doc)
			kft_ui_respond_json(c, 200, doc);
		else
			fail(c, &err);
	} else if (n == 3 && get && strcmp(s[2], "yaml") == 0) {
		job_yaml(c, s[0], s[1]);
	} else if (n == 3 && get && strcmp(s[2], "metrics") == 0) {
		job_metrics(c, s[0], s[1]);
	} else if (n == 5 && get && strcmp(s[2], "logs") == 0) {
		job_log(c, s[0], s[1], s[3], s[4]);
	} else if (n == 3 && !get) {
		job_action(c, s[0], s[1], s[2]);
	} else {
		kft_ui_respond_error(c, 404, "not found");
	}
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
		kft_ui_cluster *cl = kft_ui_cluster_of(c);
		kft_ui_respond_json(c, 200,
		                    json_pack("{s:s, s:b, s:s, s:s?}", "csrf", kft_ui_csrf(c),
		                              "charts", kft_ui_have_charts, "mode",
		                              cl ? "cluster" : "local", "namespace",
		                              cl ? kft_ui_cluster_scope(cl) : NULL));
	} else if (get && strcmp(p, "jobs") == 0) {
		json_t *doc = jobs_filtered(c, &err);
		if (doc)
			kft_ui_respond_json(c, 200, doc);
		else
			fail(c, &err);
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
