/*
 * local_source.c - the dashboard's job source over the local engine: the
 * store every `kftrainer` verb reads, one kft_local per request (see
 * ui_internal.h). What needs the CLI's own pieces (a job's phase and node
 * count as `get` shows them, the runtimes as `runtimes` finds them,
 * `render`'s front half) is asked of the hooks the verb lent.
 *
 * A pod's log is the file the engine recorded for it, read in chunks, never
 * whole, opened without following symlinks; only pods the store knows are
 * served. Following it reads what was appended each tick until the pod has
 * ended and its last bytes are sent (a restarted pod appends to the same
 * file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ui/ui_internal.h"

#define FOLLOW_TICK_MS 250
#define CHUNK          (64 * 1024)

kft_local *kft_ui_local(kft_ui_conn *c, kft_error *err)
{
	if (!c->local && kft_local_open(c->env->state_dir, NULL, &c->local, err) != 0)
		c->local = NULL;
	return c->local;
}

static const char *scope(kft_ui_conn *c)
{
	(void)c;
	return NULL;
}

static json_t *row(kft_ui_conn *c, kft_local *l, const json_t *job)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	return kft_ui_row(job, h->job_row ? h->job_row(h->ctx, l, job) : json_object());
}

static json_t *jobs(kft_ui_conn *c, kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	json_t *list = NULL, *rows = json_array();
	if (!l || !rows || kft_local_list(l, NULL, &list, err) != 0) {
		json_decref(rows);
		return NULL;
	}
	size_t i;
	const json_t *job;
	json_array_foreach(list, i, job) json_array_append_new(rows, row(c, l, job));
	json_decref(list);
	return json_pack("{s:o}", "items", rows);
}

static json_t *pod_row(const kft_pod_record *r, const char *pod)
{
	return json_pack("{s:s?, s:s, s:i, s:s, s:i, s:i, s:i, s:i, s:s?, s:s?, s:s?, s:s?, s:b}",
	                 "pod", pod, "step", r->step, "index", r->index, "state", r->state, "pid",
	                 r->pid, "restarts", r->restarts, "exitCode", r->exit_code, "signal",
	                 r->signal, "reason", r->reason, "message", r->message, "started",
	                 r->started, "finished", r->finished, "log", r->log_path != NULL);
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
		const json_t *meta = json_object_get(json_array_get(items, i), "metadata");
		const char *pod = json_array_size(items) == n
		                          ? json_string_value(json_object_get(meta, "name"))
		                          : NULL;
		json_array_append_new(rows, pod_row(&recs[i], pod));
	}
	kft_pod_records_free(recs, n);
	json_decref(podlist);
	return rows;
}

static json_t *job(kft_ui_conn *c, const char *ns, const char *name, kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	json_t *tj = NULL, *objects = NULL, *events = NULL, *reports = NULL, *doc = NULL;
	if (!l || kft_local_get(l, ns, name, &tj, err) != 0)
		return NULL;
	if (kft_store_job_objects(kft_local_store(l), ns, name, &objects, err) == 0 &&
	    kft_local_events(l, ns, name, &events, err) == 0 &&
	    kft_store_reports(kft_local_store(l), ns, name, 0, &reports, err) == 0) {
		json_t *pods = pod_rows(l, ns, name, err);
		const json_t *last = json_array_get(reports, json_array_size(reports) - 1);
		if (pods)
			doc = json_pack("{s:o, s:O, s:o, s:o, s:O, s:I}", "row", row(c, l, tj),
			                "trainjob", tj, "pods", pods, "steps",
			                kft_ui_step_commands(objects), "events",
			                json_object_get(events, "items"), "lastReport",
			                json_integer_value(json_object_get(last, "id")));
	}
	json_decref(tj);
	json_decref(objects);
	json_decref(events);
	json_decref(reports);
	return doc;
}

static int objects(kft_ui_conn *c, const char *ns, const char *name, json_t **out, kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	json_t *tj = NULL;
	*out = NULL;
	int rc = l ? kft_local_get(l, ns, name, &tj, err) : err->code;
	if (rc == 0)
		rc = kft_store_job_objects(kft_local_store(l), ns, name, out, err);
	if (rc == 0)
		json_array_insert(*out, 0, tj);
	json_decref(tj);
	return rc;
}

static json_t *metrics(kft_ui_conn *c, const char *ns, const char *name, long long after,
                       kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	json_t *reports = NULL;
	if (!l || kft_store_reports(kft_local_store(l), ns, name, after, &reports, err) != 0)
		return NULL;
	return json_pack("{s:o}", "items", reports);
}

static int action(kft_ui_conn *c, const char *ns, const char *name, const char *verb,
                  kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	if (!l)
		return err->code;
	if (strcmp(verb, "suspend") == 0 || strcmp(verb, "resume") == 0)
		return kft_local_set_suspend(l, ns, name, strcmp(verb, "suspend") == 0, err);
	if (strcmp(verb, "delete") == 0)
		return kft_local_delete(l, ns, name, err);
	return kft_error_set(err, KFT_ENOTFOUND, "no such action");
}

static int runtimes(kft_ui_conn *c, json_t **out, char **problems)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	*out = NULL;
	*problems = NULL;
	if (!h->runtimes) {
		*problems = strdup("no runtimes");
		return KFT_ENOTFOUND;
	}
	kft_ui_hooks_lock(c);
	int rc = h->runtimes(h->ctx, out, problems);
	kft_ui_hooks_unlock(c);
	return rc;
}

static int render(kft_ui_conn *c, json_t *trainjob, json_t **objs, char **problems)
{
	const kft_ui_hooks *h = kft_ui_hooks_of(c);
	*objs = NULL;
	*problems = NULL;
	if (!h->render) {
		*problems = strdup("no preview");
		return KFT_ENOTFOUND;
	}
	kft_ui_hooks_lock(c);
	int rc = h->render(h->ctx, trainjob, objs, problems);
	kft_ui_hooks_unlock(c);
	return rc;
}

/* ---- logs -------------------------------------------------------------------------------- */

/* The recorded log path of pod step/index and whether it may still grow. */
static char *log_path(kft_ui_conn *c, const kft_ui_log_req *r, bool *live, kft_error *err)
{
	kft_local *l = kft_ui_local(c, err);
	kft_pod_record *recs = NULL;
	size_t n = 0;
	char *path = NULL;
	if (!l || kft_store_pods(kft_local_store(l), r->ns, r->name, &recs, &n, err) != 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(recs[i].step, r->step) == 0 && recs[i].index == r->index &&
		    recs[i].log_path) {
			path = strdup(recs[i].log_path);
			*live = strcmp(recs[i].state, "Pending") == 0 ||
			        strcmp(recs[i].state, "Running") == 0;
		}
	kft_pod_records_free(recs, n);
	if (!path)
		kft_error_set(err, KFT_ENOTFOUND, "pod %s-%ld of %s has no log yet", r->step,
		              r->index, r->name);
	return path;
}

/* Writes what fd holds from its offset to its end, in chunks. 0, or -1
 * when the client is gone. */
static int send_rest(kft_ui_log *out, int fd, char *buf)
{
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (kft_ui_log_write(out, buf, (size_t)n) != 0)
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

/* Sends what was appended each tick while the pod may still write. */
static void follow(kft_ui_conn *c, const kft_ui_log_req *r, kft_ui_log *out, int fd, char *buf,
                   bool live)
{
	int rc = 0;
	while (rc == 0 && kft_ui_wait(c, FOLLOW_TICK_MS) == 0) {
		rc = send_rest(out, fd, buf);
		if (rc == 0 && !live)
			break;
		kft_error err = {0};
		char *p = log_path(c, r, &live, &err);
		if (!p)
			break;
		free(p);
	}
}

static int send_log(kft_ui_conn *c, const kft_ui_log_req *r, kft_ui_log *out, kft_error *err)
{
	bool live = false;
	char *path = log_path(c, r, &live, err);
	if (!path)
		return err->code;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	char *buf = fd >= 0 ? malloc(CHUNK) : NULL;
	if (!buf) {
		if (fd >= 0)
			close(fd);
		return kft_error_set(err, KFT_ENOTFOUND, "the log cannot be read");
	}
	if (r->tail)
		seek_tail(fd, r->tail_bytes, buf);
	int rc = kft_ui_log_write(out, "", 0);
	if (rc == 0)
		rc = send_rest(out, fd, buf);
	if (rc == 0 && r->follow)
		follow(c, r, out, fd, buf, live);
	free(buf);
	close(fd);
	return 0;
}

const kft_ui_source kft_ui_local_source = {
        .mode = "local",
        .scope = scope,
        .jobs = jobs,
        .job = job,
        .objects = objects,
        .metrics = metrics,
        .action = action,
        .runtimes = runtimes,
        .render = render,
        .log = send_log,
};
