/*
 * test_store.c - the local SQLite state store (src/local/store.c).
 *
 * Every test gets a fresh temporary state directory, removed in teardown.
 * Error texts are compared in full where users see them (kubectl's wording
 * for "already exists" and "not found"). The concurrency test forks two
 * writers against one database and checks that neither saw a failure and
 * that no update was lost. Statements are reused per connection, so reads
 * are checked to see another connection's writes and to leave no read open;
 * skipping the close-time checkpoint is checked on the log file itself. A
 * second connection in one process is checked to keep the first one's locks
 * against other processes' connections (this binary run again in a helper
 * mode, a fresh process, as SQLite must not cross a fork).
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ftw.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json_fixture.h"
#include "local/store.h"

extern char **environ;

struct fixture {
	char root[64]; /* mkdtemp result, removed in teardown */
	char dir[128]; /* state dir: a not-yet-existing child of root */
	kft_store *s;
};

static json_t *trainjob(const char *ns, const char *name)
{
	json_t *tj =
	        parse("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
	              "\"metadata\":{},\"spec\":{\"runtimeRef\":{\"name\":\"torch-distributed\"},"
	              "\"trainer\":{\"numNodes\":2}}}");
	json_t *meta = json_object_get(tj, "metadata");
	json_object_set_new(meta, "name", json_string(name));
	if (ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	return tj;
}

/* Creates a job with no objects and returns its uid (caller frees). */
static char *create(kft_store *s, const char *ns, const char *name)
{
	json_t *tj = trainjob(ns, name);
	char *uid = NULL;
	kft_error err;
	int rc = kft_store_job_create(s, tj, NULL, &uid, &err);
	json_decref(tj);
	if (rc)
		fail_msg("create %s: %s", name, err.message);
	return uid;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	strcpy(f->root, "/tmp/kft-store-test-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->dir, sizeof(f->dir), "%s/a/b/state", f->root);
	kft_error err;
	if (kft_store_open(f->dir, &f->s, &err))
		fail_msg("open: %s", err.message);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	kft_store_close(f->s);
	int rc = nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	struct stat sb;
	int gone = stat(f->root, &sb) != 0;
	free(f);
	return rc == 0 && gone ? 0 : -1;
}

static void test_create_get_round_trip(void **state)
{
	struct fixture *f = *state;
	json_t *tj = trainjob(NULL, "mnist");
	json_t *objs = parse("[{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}},"
	                     "{\"kind\":\"JobSet\",\"metadata\":{\"name\":\"mnist\"}}]");
	char *uid = NULL;
	kft_error err;
	assert_int_equal(kft_store_job_create(f->s, tj, objs, &uid, &err), 0);
	assert_non_null(uid);
	assert_int_equal(strlen(uid), 36);
	assert_int_equal(uid[14], '4');
	assert_non_null(strchr("89ab", uid[19]));

	json_t *got = NULL;
	assert_int_equal(kft_store_job_get(f->s, "default", "mnist", &got, &err), 0);
	json_t *meta = json_object_get(got, "metadata");
	assert_string_equal(json_string_value(json_object_get(meta, "uid")), uid);
	assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "default");
	const char *ts = json_string_value(json_object_get(meta, "creationTimestamp"));
	assert_non_null(ts);
	assert_int_equal(strlen(ts), 20);
	assert_int_equal(ts[10], 'T');
	assert_int_equal(ts[19], 'Z');
	assert_true(json_equal(json_object_get(got, "spec"), json_object_get(tj, "spec")));
	assert_null(json_object_get(got, "status"));

	json_t *back = NULL;
	assert_int_equal(kft_store_job_objects(f->s, NULL, "mnist", &back, &err), 0);
	assert_true(json_equal(back, objs));

	kft_job_info info;
	assert_int_equal(kft_store_job_info(f->s, NULL, "mnist", &info, &err), 0);
	assert_string_equal(info.uid, uid);
	assert_string_equal(info.runtime_name, "torch-distributed");
	assert_string_equal(info.runtime_kind, "ClusterTrainingRuntime");
	assert_int_equal(strlen(info.created), 27); /* microseconds */
	assert_null(info.started);
	assert_false(info.suspended);
	kft_job_info_free(&info);

	json_decref(back);
	json_decref(got);
	json_decref(objs);
	json_decref(tj);
	free(uid);
}

static void test_two_jobs_get_distinct_uids(void **state)
{
	struct fixture *f = *state;
	char *a = create(f->s, NULL, "a"), *b = create(f->s, NULL, "b");
	assert_string_not_equal(a, b);
	free(a);
	free(b);
}

static void test_duplicate_create(void **state)
{
	struct fixture *f = *state;
	free(create(f->s, "team", "dup"));
	json_t *tj = trainjob("team", "dup");
	kft_error err;
	char *uid = (char *)"untouched";
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, &uid, &err), KFT_EINVAL);
	assert_string_equal(err.message, "trainjobs.trainer.kubeflow.org \"dup\" already exists");
	assert_null(uid);
	json_decref(tj);
	/* The same name in another namespace is a different job. */
	free(create(f->s, "other", "dup"));
}

static void test_invalid_create(void **state)
{
	struct fixture *f = *state;
	json_t *noname = parse("{\"metadata\":{}}");
	json_t *tj = trainjob(NULL, "x"), *notarray = json_object();
	kft_error err;
	assert_int_equal(kft_store_job_create(f->s, noname, NULL, NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_store_job_create(f->s, tj, notarray, NULL, &err), KFT_EINVAL);
	json_decref(noname);
	json_decref(tj);
	json_decref(notarray);
}

static void expect_not_found(int rc, const kft_error *err)
{
	assert_int_equal(rc, KFT_ENOTFOUND);
	assert_string_equal(err->message, "trainjobs.trainer.kubeflow.org \"ghost\" not found");
}

static void test_not_found(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *j = NULL, *status = json_object();
	kft_pod_record rec = {.step = "node", .state = "Pending"}, *recs;
	size_t n;
	int pid;
	long long ticks;
	kft_job_info info;
	free(create(f->s, "elsewhere", "ghost")); /* same name, other namespace */
	expect_not_found(kft_store_job_get(f->s, NULL, "ghost", &j, &err), &err);
	assert_null(j);
	expect_not_found(kft_store_job_objects(f->s, NULL, "ghost", &j, &err), &err);
	expect_not_found(kft_store_job_set_status(f->s, NULL, "ghost", status, &err), &err);
	expect_not_found(kft_store_job_set_suspend(f->s, NULL, "ghost", true, &err), &err);
	expect_not_found(kft_store_job_mark(f->s, NULL, "ghost", KFT_JOB_STARTED, &err), &err);
	expect_not_found(kft_store_job_info(f->s, NULL, "ghost", &info, &err), &err);
	expect_not_found(kft_store_job_delete(f->s, NULL, "ghost", &err), &err);
	expect_not_found(kft_store_pod_upsert(f->s, NULL, "ghost", &rec, &err), &err);
	expect_not_found(kft_store_pods(f->s, NULL, "ghost", &recs, &n, &err), &err);
	expect_not_found(kft_store_set_supervisor(f->s, NULL, "ghost", 1, 2, &err), &err);
	expect_not_found(kft_store_get_supervisor(f->s, NULL, "ghost", &pid, &ticks, &err), &err);
	json_decref(status);
}

static void expect_names(json_t *arr, const char *const *want, size_t n)
{
	assert_int_equal(json_array_size(arr), n);
	for (size_t i = 0; i < n; i++) {
		json_t *meta = json_object_get(json_array_get(arr, i), "metadata");
		char got[128];
		snprintf(got, sizeof(got), "%s/%s",
		         json_string_value(json_object_get(meta, "namespace")),
		         json_string_value(json_object_get(meta, "name")));
		assert_string_equal(got, want[i]);
	}
}

static void test_list(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *all = NULL, *some = NULL, *none = NULL;
	free(create(f->s, "b", "z"));
	free(create(f->s, "a", "y"));
	free(create(f->s, "b", "x"));
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	expect_names(all, (const char *const[]){"a/y", "b/x", "b/z"}, 3);
	assert_int_equal(kft_store_job_list(f->s, "b", &some, &err), 0);
	expect_names(some, (const char *const[]){"b/x", "b/z"}, 2);
	assert_int_equal(kft_store_job_list(f->s, "empty", &none, &err), 0);
	assert_true(json_is_array(none));
	assert_int_equal(json_array_size(none), 0);
	json_decref(all);
	json_decref(some);
	json_decref(none);
}

static void test_status(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *status = parse("{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}");
	json_t *got = NULL;
	free(create(f->s, NULL, "st"));
	assert_int_equal(kft_store_job_set_status(f->s, NULL, "st", status, &err), 0);
	assert_int_equal(kft_store_job_get(f->s, NULL, "st", &got, &err), 0);
	assert_true(json_equal(json_object_get(got, "status"), status));
	json_decref(got);
	assert_int_equal(kft_store_job_set_status(f->s, NULL, "st", NULL, &err), 0);
	assert_int_equal(kft_store_job_get(f->s, NULL, "st", &got, &err), 0);
	assert_null(json_object_get(got, "status"));
	json_decref(got);

	/* A status submitted with the job is kept apart from the spec and returned. */
	json_t *tj = trainjob(NULL, "with-status");
	json_object_set(tj, "status", status);
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_job_get(f->s, NULL, "with-status", &got, &err), 0);
	assert_true(json_equal(json_object_get(got, "status"), status));
	assert_true(json_equal(json_object_get(got, "spec"), json_object_get(tj, "spec")));
	json_decref(got);
	json_decref(tj);
	json_decref(status);
}

static void test_suspend_and_times(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	kft_job_info a, b;
	json_t *tj = trainjob(NULL, "sus"), *got = NULL;
	json_object_set_new(json_object_get(tj, "spec"), "suspend", json_true());
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, NULL, &err), 0);
	json_decref(tj);
	assert_int_equal(kft_store_job_info(f->s, NULL, "sus", &a, &err), 0);
	assert_true(a.suspended);
	kft_job_info_free(&a);

	assert_int_equal(kft_store_job_set_suspend(f->s, NULL, "sus", false, &err), 0);
	assert_int_equal(kft_store_job_get(f->s, NULL, "sus", &got, &err), 0);
	assert_true(json_is_false(json_object_get(json_object_get(got, "spec"), "suspend")));
	json_decref(got);

	assert_int_equal(kft_store_job_mark(f->s, NULL, "sus", KFT_JOB_STARTED, &err), 0);
	assert_int_equal(kft_store_job_info(f->s, NULL, "sus", &a, &err), 0);
	nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	assert_int_equal(kft_store_job_mark(f->s, NULL, "sus", KFT_JOB_STARTED, &err), 0);
	assert_int_equal(kft_store_job_mark(f->s, NULL, "sus", KFT_JOB_FINISHED, &err), 0);
	assert_int_equal(kft_store_job_info(f->s, NULL, "sus", &b, &err), 0);
	assert_non_null(a.started);
	assert_string_equal(a.started, b.started); /* the first start counts */
	assert_null(a.finished);
	assert_non_null(b.finished);
	assert_true(strcmp(b.finished, b.started) > 0);
	kft_job_info_free(&a);
	kft_job_info_free(&b);
}

static void upsert(kft_store *s, const char *job, const char *step, int index, const char *st,
                   int pid)
{
	kft_pod_record r = {.step = (char *)step, .index = index, .state = (char *)st, .pid = pid};
	kft_error err;
	if (kft_store_pod_upsert(s, NULL, job, &r, &err))
		fail_msg("upsert: %s", err.message);
}

static void test_pods(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	kft_pod_record *recs = (kft_pod_record *)1;
	size_t n = 99;
	free(create(f->s, NULL, "p"));
	assert_int_equal(kft_store_pods(f->s, NULL, "p", &recs, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(recs);

	upsert(f->s, "p", "node", 1, "Running", 101);
	upsert(f->s, "p", "node", 0, "Running", 100);
	upsert(f->s, "p", "launcher", 0, "Pending", 0);
	kft_pod_record done = {.step = "node",
	                       .index = 0,
	                       .state = "Failed",
	                       .pid = 100,
	                       .exit_code = 137,
	                       .signal = 9,
	                       .restarts = 2,
	                       .started = "2026-01-01T00:00:00.000001Z",
	                       .finished = "2026-01-01T00:00:05.000001Z",
	                       .log_path = "/logs/node-0.log"};
	assert_int_equal(kft_store_pod_upsert(f->s, NULL, "p", &done, &err), 0);

	assert_int_equal(kft_store_pods(f->s, "default", "p", &recs, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(recs[0].step, "launcher");
	assert_null(recs[0].log_path);
	assert_string_equal(recs[1].step, "node");
	assert_int_equal(recs[1].index, 0);
	assert_string_equal(recs[1].state, "Failed");
	assert_int_equal(recs[1].exit_code, 137);
	assert_int_equal(recs[1].signal, 9);
	assert_int_equal(recs[1].restarts, 2);
	assert_string_equal(recs[1].finished, done.finished);
	assert_string_equal(recs[1].log_path, "/logs/node-0.log");
	assert_int_equal(recs[2].index, 1);
	assert_int_equal(recs[2].pid, 101);
	kft_pod_records_free(recs, n);

	kft_pod_record bad = {.step = "node", .state = "Exploded"};
	assert_int_equal(kft_store_pod_upsert(f->s, NULL, "p", &bad, &err), KFT_EINVAL);
	bad.state = "Running";
	bad.index = -1;
	assert_int_equal(kft_store_pod_upsert(f->s, NULL, "p", &bad, &err), KFT_EINVAL);
}

static void test_supervisor(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	int pid = -1;
	long long ticks = -1;
	free(create(f->s, NULL, "sv"));
	assert_int_equal(kft_store_get_supervisor(f->s, NULL, "sv", &pid, &ticks, &err), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(ticks, 0);
	assert_int_equal(kft_store_set_supervisor(f->s, NULL, "sv", 4242, 123456789012LL, &err), 0);
	assert_int_equal(kft_store_get_supervisor(f->s, NULL, "sv", &pid, &ticks, &err), 0);
	assert_int_equal(pid, 4242);
	assert_int_equal(ticks, 123456789012LL);
}

static void test_delete_cascades(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *tj = trainjob(NULL, "gone"), *objs = parse("[{\"kind\":\"JobSet\"}]"), *got;
	kft_pod_record *recs;
	size_t n;
	assert_int_equal(kft_store_job_create(f->s, tj, objs, NULL, &err), 0);
	upsert(f->s, "gone", "node", 0, "Running", 1);
	assert_int_equal(kft_store_job_delete(f->s, NULL, "gone", &err), 0);
	assert_int_equal(kft_store_job_get(f->s, NULL, "gone", &got, &err), KFT_ENOTFOUND);
	/* A new job of the same name starts with nothing of the old one. */
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_pods(f->s, NULL, "gone", &recs, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(kft_store_job_objects(f->s, NULL, "gone", &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	json_decref(objs);
	json_decref(tj);
}

/* Events (schema v4): kept per job in the order recorded, a namespace's
 * listed job by job, gone with their job. */
static void test_events(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *a = trainjob(NULL, "a"), *b = trainjob(NULL, "b"), *got;
	assert_int_equal(kft_store_job_create(f->s, a, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_job_create(f->s, b, NULL, NULL, &err), 0);
	const char *order[] = {"Created", "Started", "BackOff"};
	for (size_t i = 0; i < 3; i++) {
		json_t *ev = json_pack("{s:s, s:s}", "kind", "Event", "reason", order[i]);
		assert_int_equal(kft_store_event_add(f->s, NULL, "b", ev, &err), 0);
		json_decref(ev);
	}
	json_t *ev = json_pack("{s:s}", "reason", "Completed");
	assert_int_equal(kft_store_event_add(f->s, NULL, "a", ev, &err), 0);
	assert_int_equal(kft_store_event_add(f->s, NULL, "nope", ev, &err), KFT_ENOTFOUND);
	json_decref(ev);
	json_t *arr = json_array();
	assert_int_equal(kft_store_event_add(f->s, NULL, "a", arr, &err), KFT_EINVAL);
	json_decref(arr);

	assert_int_equal(kft_store_events(f->s, NULL, "b", &got, &err), 0);
	assert_int_equal(json_array_size(got), 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(
		        json_string_value(json_object_get(json_array_get(got, i), "reason")),
		        order[i]);
	json_decref(got);
	assert_int_equal(kft_store_events(f->s, NULL, NULL, &got, &err), 0);
	assert_int_equal(json_array_size(got), 4); /* a's, then b's */
	assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "reason")),
	                    "Completed");
	json_decref(got);
	assert_int_equal(kft_store_events(f->s, "other", NULL, &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	assert_int_equal(kft_store_events(f->s, NULL, "nope", &got, &err), KFT_ENOTFOUND);
	assert_null(got);

	assert_int_equal(kft_store_job_delete(f->s, NULL, "b", &err), 0);
	assert_int_equal(kft_store_job_create(f->s, b, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_events(f->s, NULL, "b", &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	json_decref(a);
	json_decref(b);
}

/* The report history: in order, read after an id, bounded per job (the
 * oldest go), not disturbed by another job's reports, removed with the job. */
static void test_reports(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *a = trainjob(NULL, "a"), *b = trainjob(NULL, "b"), *got;
	assert_int_equal(kft_store_job_create(f->s, a, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_job_create(f->s, b, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_reports(f->s, NULL, "a", 0, &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	assert_int_equal(kft_store_begin(f->s, &err), 0);
	for (int i = 0; i < KFT_STORE_REPORTS_MAX + 5; i++) {
		json_t *ts = json_pack("{s:i}", "progressPercentage", i % 101);
		assert_int_equal(kft_store_report_add(f->s, NULL, "a", ts, &err), 0);
		if (i < 3)
			assert_int_equal(kft_store_report_add(f->s, NULL, "b", ts, &err), 0);
		json_decref(ts);
	}
	assert_int_equal(kft_store_commit(f->s, &err), 0);
	assert_int_equal(kft_store_reports(f->s, NULL, "a", 0, &got, &err), 0);
	assert_int_equal(json_array_size(got), KFT_STORE_REPORTS_MAX);
	const json_t *first = json_object_get(json_array_get(got, 0), "trainerStatus");
	assert_int_equal(json_integer_value(json_object_get(first, "progressPercentage")), 5);
	assert_non_null(json_string_value(json_object_get(json_array_get(got, 0), "recorded")));
	json_int_t last = json_integer_value(json_object_get(json_array_get(got, 998), "id"));
	json_decref(got);
	assert_int_equal(kft_store_reports(f->s, NULL, "a", last, &got, &err), 0);
	assert_int_equal(json_array_size(got), 1);
	json_decref(got);
	assert_int_equal(kft_store_reports(f->s, NULL, "b", 0, &got, &err), 0);
	assert_int_equal(json_array_size(got), 3);
	json_decref(got);

	json_t *arr = json_array();
	assert_int_equal(kft_store_report_add(f->s, NULL, "a", arr, &err), KFT_EINVAL);
	assert_int_equal(kft_store_report_add(f->s, NULL, "nope", a, &err), KFT_ENOTFOUND);
	json_decref(arr);
	assert_int_equal(kft_store_reports(f->s, NULL, "nope", 0, &got, &err), KFT_ENOTFOUND);
	assert_null(got);
	assert_int_equal(kft_store_job_delete(f->s, NULL, "b", &err), 0);
	assert_int_equal(kft_store_job_create(f->s, b, NULL, NULL, &err), 0);
	assert_int_equal(kft_store_reports(f->s, NULL, "b", 0, &got, &err), 0);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	json_decref(a);
	json_decref(b);
}

static void test_transactions(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *all;
	assert_int_equal(kft_store_begin(f->s, &err), 0);
	assert_int_equal(kft_store_begin(f->s, &err), KFT_EINVAL);
	free(create(f->s, NULL, "t1"));
	free(create(f->s, NULL, "t2"));
	kft_store_rollback(f->s);
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	assert_int_equal(json_array_size(all), 0);
	json_decref(all);

	assert_int_equal(kft_store_begin(f->s, &err), 0);
	free(create(f->s, NULL, "t3"));
	assert_int_equal(kft_store_commit(f->s, &err), 0);
	assert_int_equal(kft_store_commit(f->s, &err), KFT_EINVAL);
	kft_store_rollback(f->s); /* harmless outside a transaction */
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	assert_int_equal(json_array_size(all), 1);
	json_decref(all);
}

static int user_version(const char *dir)
{
	char path[256];
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, KFT_STORE_DB_NAME);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void test_reopen_and_version(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *got;
	char *uid = create(f->s, "keep", "me");
	kft_store_close(f->s);
	f->s = NULL;
	assert_int_equal(user_version(f->dir), KFT_STORE_SCHEMA_VERSION);
	assert_int_equal(kft_store_open(f->dir, &f->s, &err), 0);
	assert_int_equal(kft_store_job_get(f->s, "keep", "me", &got, &err), 0);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(got, "metadata"), "uid")), uid);
	json_decref(got);
	free(uid);
}

static void test_newer_schema_refused(void **state)
{
	struct fixture *f = *state;
	char path[256];
	sqlite3 *db;
	kft_error err;
	kft_store *s = (kft_store *)1;
	snprintf(path, sizeof(path), "%s/%s", f->dir, KFT_STORE_DB_NAME);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(kft_store_open(f->dir, &s, &err), KFT_EVERSION);
	assert_null(s);
	assert_non_null(strstr(err.message, "schema version 99"));
}

static void test_file_modes(void **state)
{
	struct fixture *f = *state;
	char path[256];
	struct stat sb;
	assert_int_equal(stat(f->dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/a", f->root); /* a created parent */
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/%s", f->dir, KFT_STORE_DB_NAME);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
}

static void test_corrupt_file(void **state)
{
	struct fixture *f = *state;
	char dir[160], path[256];
	kft_error err;
	kft_store *s = (kft_store *)1;
	snprintf(dir, sizeof(dir), "%s/corrupt", f->root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, KFT_STORE_DB_NAME);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	for (int i = 0; i < 512; i++)
		fputs("this is not a database, just text. ", fp);
	fclose(fp);
	assert_int_equal(kft_store_open(dir, &s, &err), KFT_EIO);
	assert_null(s);
	assert_non_null(strstr(err.message, path));
	assert_non_null(strstr(err.message, "not a database"));
}

static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	char path[160];
	kft_error err;
	kft_store *s;
	assert_int_equal(kft_store_open("", &s, &err), KFT_EINVAL);
	snprintf(path, sizeof(path), "%s/file", f->root);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(kft_store_open(path, &s, &err), KFT_EIO); /* a file, not a dir */
	assert_null(s);
}

/* ---- concurrency -------------------------------------------------------- */

#define ROUNDS 60

/* One writer process: returns 0 when every call succeeded. The supervisor
 * tick count serves as a shared counter incremented read-modify-write inside
 * a transaction, so a lost update would show in the final value. */
static int writer(const char *dir, int who)
{
	kft_store *s;
	kft_error err;
	if (kft_store_open(dir, &s, &err))
		return 10;
	int bad = 0;
	for (int i = 0; i < ROUNDS && !bad; i++) {
		kft_pod_record r = {.step = "node", .index = who * 1000 + i, .state = "Running"};
		int pid;
		long long n;
		bad |= kft_store_pod_upsert(s, NULL, "shared", &r, &err) ? 1 : 0;
		bad |= kft_store_begin(s, &err) ? 2 : 0;
		bad |= kft_store_get_supervisor(s, NULL, "shared", &pid, &n, &err) ? 4 : 0;
		bad |= kft_store_set_supervisor(s, NULL, "shared", 1, n + 1, &err) ? 8 : 0;
		bad |= kft_store_commit(s, &err) ? 16 : 0;
	}
	json_t *tj = trainjob(NULL, "race");
	int raced = kft_store_job_create(s, tj, NULL, NULL, &err);
	json_decref(tj);
	if (raced != 0 && raced != KFT_EINVAL)
		bad |= 32;
	if (bad)
		fprintf(stderr, "writer %d: %s\n", who, err.message);
	kft_store_close(s);
	return bad ? bad : raced == 0 ? 0 : 64;
}

static void test_concurrent_writers(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	pid_t kids[2];
	int won = 0;
	free(create(f->s, NULL, "shared"));
	kft_store_close(f->s); /* each process uses its own connection */
	f->s = NULL;
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			_exit(writer(f->dir, i));
	}
	for (int i = 0; i < 2; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		int code = WEXITSTATUS(st);
		if (code != 0 && code != 64)
			fail_msg("writer %d failed with %d", i, code);
		won += code == 0;
	}
	assert_int_equal(won, 1); /* exactly one created "race" */

	assert_int_equal(kft_store_open(f->dir, &f->s, &err), 0);
	kft_pod_record *recs;
	size_t n;
	int pid;
	long long count;
	assert_int_equal(kft_store_pods(f->s, NULL, "shared", &recs, &n, &err), 0);
	assert_int_equal(n, 2 * ROUNDS);
	kft_pod_records_free(recs, n);
	assert_int_equal(kft_store_get_supervisor(f->s, NULL, "shared", &pid, &count, &err), 0);
	assert_int_equal(count, 2 * ROUNDS);
}

static void test_default_dir(void **state)
{
	(void)state;
	char *d;
	setenv("KFTRAINER_STATE_DIR", "/x/state", 1);
	d = kft_store_default_dir();
	assert_string_equal(d, "/x/state");
	free(d);
	unsetenv("KFTRAINER_STATE_DIR");
	setenv("XDG_STATE_HOME", "/xdg", 1);
	d = kft_store_default_dir();
	assert_string_equal(d, "/xdg/kftrainer");
	free(d);
	setenv("XDG_STATE_HOME", "relative", 1); /* ignored, as the XDG spec says */
	setenv("HOME", "/home/u", 1);
	d = kft_store_default_dir();
	assert_string_equal(d, "/home/u/.local/state/kftrainer");
	free(d);
	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	assert_null(kft_store_default_dir());
}

/* A database written by schema version 1 (the text of that migration,
 * written out here so the test keeps meaning the old layout) is migrated in
 * place: its job survives, the new per-job fields read back as unset, and
 * pod records gain their new fields. */
static void test_migrate_from_v1(void **state)
{
	struct fixture *f = *state;
	char path[256];
	sqlite3 *db;
	kft_error err;
	json_t *env = (json_t *)1, *got;
	char *wd = (char *)1;
	kft_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/%s", f->dir, KFT_STORE_DB_NAME);
	unlink(path); /* setup's store wrote version 2: start from nothing */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	        sqlite3_exec(db,
	                     "CREATE TABLE jobs (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL,"
	                     " name TEXT NOT NULL, uid TEXT NOT NULL UNIQUE, spec TEXT NOT NULL,"
	                     " runtime_name TEXT, runtime_kind TEXT, created TEXT NOT NULL,"
	                     " started TEXT, finished TEXT,"
	                     " supervisor_pid INTEGER NOT NULL DEFAULT 0,"
	                     " supervisor_start INTEGER NOT NULL DEFAULT 0,"
	                     " suspended INTEGER NOT NULL DEFAULT 0, status TEXT,"
	                     " UNIQUE (namespace, name));"
	                     "CREATE TABLE objects (job_id INTEGER NOT NULL REFERENCES jobs(id)"
	                     " ON DELETE CASCADE, seq INTEGER NOT NULL, body TEXT NOT NULL,"
	                     " PRIMARY KEY (job_id, seq));"
	                     "CREATE TABLE pods (job_id INTEGER NOT NULL REFERENCES jobs(id)"
	                     " ON DELETE CASCADE, step TEXT NOT NULL, idx INTEGER NOT NULL,"
	                     " state TEXT NOT NULL, pid INTEGER NOT NULL DEFAULT 0,"
	                     " exit_code INTEGER NOT NULL DEFAULT 0,"
	                     " signal INTEGER NOT NULL DEFAULT 0,"
	                     " restarts INTEGER NOT NULL DEFAULT 0, started TEXT, finished TEXT,"
	                     " log_path TEXT, PRIMARY KEY (job_id, step, idx));"
	                     "INSERT INTO jobs (namespace, name, uid, spec, created) VALUES"
	                     " ('default', 'old', 'u-1', '{\"kind\":\"TrainJob\",\"metadata\":"
	                     "{\"name\":\"old\"},\"spec\":{}}', '2025-01-02T03:04:05.000000Z');"
	                     "INSERT INTO pods (job_id, step, idx, state) VALUES (1, 'node', 0,"
	                     " 'Running');"
	                     "PRAGMA user_version = 1;",
	                     NULL, NULL, NULL),
	        SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(kft_store_open(f->dir, &f->s, &err), 0);
	assert_int_equal(user_version(f->dir), KFT_STORE_SCHEMA_VERSION);
	assert_int_equal(kft_store_job_get(f->s, "default", "old", &got, &err), 0);
	assert_string_equal(
	        json_string_value(json_object_get(json_object_get(got, "metadata"), "uid")), "u-1");
	/* schema 3: an old job is not being deleted */
	assert_null(json_object_get(json_object_get(got, "metadata"), "deletionTimestamp"));
	json_decref(got);
	assert_int_equal(kft_store_job_get_exec(f->s, "default", "old", &wd, &env, &err), 0);
	assert_null(wd);
	assert_null(env);
	kft_pod_record *recs;
	size_t n;
	assert_int_equal(kft_store_pods(f->s, "default", "old", &recs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(recs[0].start_ticks, 0);
	assert_null(recs[0].reason);
	kft_pod_records_free(recs, n);
}

/* Schema 3: a job being deleted keeps being read, with a deletionTimestamp
 * (as the API server keeps an object with finalizers, metav1.ObjectMeta
 * deletionTimestamp) that a second mark does not move; info carries it. */
static void test_mark_deleting(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	kft_job_info info;
	json_t *got;
	free(create(f->s, NULL, "d"));
	assert_int_equal(kft_store_job_info(f->s, NULL, "d", &info, &err), 0);
	assert_null(info.deleting);
	kft_job_info_free(&info);
	assert_int_equal(kft_store_job_mark_deleting(f->s, NULL, "d", &err), 0);
	assert_int_equal(kft_store_job_info(f->s, NULL, "d", &info, &err), 0);
	assert_non_null(info.deleting);
	char first[40];
	snprintf(first, sizeof(first), "%s", info.deleting);
	kft_job_info_free(&info);
	struct timespec ts = {0, 5 * 1000000L};
	nanosleep(&ts, NULL);
	assert_int_equal(kft_store_job_mark_deleting(f->s, "default", "d", &err), 0);
	assert_int_equal(kft_store_job_info(f->s, NULL, "d", &info, &err), 0);
	assert_string_equal(info.deleting, first);
	kft_job_info_free(&info);
	assert_int_equal(kft_store_job_get(f->s, NULL, "d", &got, &err), 0);
	const char *dt = json_string_value(
	        json_object_get(json_object_get(got, "metadata"), "deletionTimestamp"));
	assert_non_null(dt);
	assert_int_equal(strlen(dt), 20); /* seconds precision, "...:05Z" */
	assert_int_equal(strncmp(dt, first, 19), 0);
	json_decref(got);
	assert_int_equal(kft_store_job_mark_deleting(f->s, NULL, "ghost", &err), KFT_ENOTFOUND);
	assert_int_equal(kft_store_job_delete(f->s, NULL, "d", &err), 0);
}

/* Schema 5's plugin list round-trips; a job without one reads back NULL, a
 * non-array is refused, a missing job is KFT_ENOTFOUND. */
static void test_plugins_recorded(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *list = parse("[\"/opt/p/a.so\",\"/opt/p/b.so\"]"), *got = NULL;
	free(create(f->s, NULL, "x"));
	assert_int_equal(kft_store_job_get_plugins(f->s, NULL, "x", &got, &err), 0);
	assert_null(got);
	assert_int_equal(kft_store_job_set_plugins(f->s, NULL, "x", list, &err), 0);
	assert_int_equal(kft_store_job_get_plugins(f->s, NULL, "x", &got, &err), 0);
	assert_true(json_equal(list, got));
	json_decref(got);
	json_t *not_list = parse("{}");
	assert_int_equal(kft_store_job_set_plugins(f->s, NULL, "x", not_list, &err), KFT_EINVAL);
	json_decref(not_list);
	assert_int_equal(kft_store_job_set_plugins(f->s, NULL, "nope", list, &err), KFT_ENOTFOUND);
	assert_int_equal(kft_store_job_get_plugins(f->s, NULL, "nope", &got, &err), KFT_ENOTFOUND);
	json_decref(list);
}

/* Schema 2's additions round-trip: exec settings, replaced objects, the new
 * pod fields, and clearing pod records. */
static void test_exec_objects_and_pod_fields(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *env = parse("[\"PATH=/bin\",\"A=b=c\"]"), *got_env = NULL, *objs;
	char *wd = NULL;
	free(create(f->s, NULL, "x"));
	assert_int_equal(kft_store_job_set_exec(f->s, NULL, "x", "/work", env, &err), 0);
	assert_int_equal(kft_store_job_get_exec(f->s, NULL, "x", &wd, &got_env, &err), 0);
	assert_string_equal(wd, "/work");
	assert_true(json_equal(env, got_env));
	free(wd);
	json_decref(got_env);
	assert_int_equal(kft_store_job_set_exec(f->s, NULL, "nope", "/", env, &err), KFT_ENOTFOUND);
	json_t *not_list = parse("{}");
	assert_int_equal(kft_store_job_set_exec(f->s, NULL, "x", "/", not_list, &err), KFT_EINVAL);
	json_decref(not_list);
	json_decref(env);
	json_t *o1 = parse("[{\"kind\":\"A\"},{\"kind\":\"B\"}]"),
	       *o2 = parse("[{\"kind\":\"C\"}]");
	assert_int_equal(kft_store_job_set_objects(f->s, NULL, "x", o1, &err), 0);
	assert_int_equal(kft_store_job_set_objects(f->s, NULL, "x", o2, &err), 0);
	assert_int_equal(kft_store_job_objects(f->s, NULL, "x", &objs, &err), 0);
	assert_true(json_equal(objs, o2));
	json_decref(objs);
	json_decref(o1);
	json_decref(o2);
	kft_pod_record rec = {.step = "node",
	                      .index = 1,
	                      .state = "Failed",
	                      .pid = 42,
	                      .start_ticks = 123456789012LL,
	                      .reason = "Error",
	                      .message = "node-1 exited with code 3"};
	kft_pod_record *recs;
	size_t n;
	assert_int_equal(kft_store_pod_upsert(f->s, NULL, "x", &rec, &err), 0);
	assert_int_equal(kft_store_pods(f->s, NULL, "x", &recs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(recs[0].start_ticks == 123456789012LL);
	assert_string_equal(recs[0].reason, "Error");
	assert_string_equal(recs[0].message, "node-1 exited with code 3");
	kft_pod_records_free(recs, n);
	assert_int_equal(kft_store_pods_clear(f->s, NULL, "x", &err), 0);
	assert_int_equal(kft_store_pods(f->s, NULL, "x", &recs, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(kft_store_pods_clear(f->s, NULL, "nope", &err), KFT_ENOTFOUND);
}

/* Statements are reused across calls (store.c keeps them per connection):
 * each use must end its read, or this connection would keep seeing an old
 * snapshot and hold back checkpoints. A second connection's writes must be
 * visible to the next read, and a checkpoint that needs every reader gone
 * must complete between calls. */
static int checkpoint_blocked(const char *dir)
{
	char path[256];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, KFT_STORE_DB_NAME);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int busy = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return busy;
}

static void test_reused_statements(void **state)
{
	struct fixture *f = *state;
	kft_store *other = NULL;
	kft_error err;
	kft_pod_record rec = {.step = "node", .index = 0, .state = "Running"};
	assert_int_equal(kft_store_open(f->dir, &other, &err), 0);
	free(create(f->s, NULL, "r"));
	for (int i = 0; i < 5; i++) {
		json_t *status = json_pack("{s:i}", "round", i), *got = NULL, *list = NULL;
		kft_pod_record *recs = NULL;
		size_t n = 0;
		rec.restarts = i;
		assert_int_equal(kft_store_job_set_status(other, NULL, "r", status, &err), 0);
		assert_int_equal(kft_store_pod_upsert(other, NULL, "r", &rec, &err), 0);
		assert_int_equal(kft_store_job_get(f->s, NULL, "r", &got, &err), 0);
		assert_true(json_equal(json_object_get(got, "status"), status));
		assert_int_equal(kft_store_job_list(f->s, NULL, &list, &err), 0);
		assert_int_equal(json_array_size(list), 1);
		assert_int_equal(kft_store_pods(f->s, NULL, "r", &recs, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(recs[0].restarts, i);
		assert_int_equal(checkpoint_blocked(f->dir), 0);
		kft_pod_records_free(recs, n);
		json_decref(list);
		json_decref(got);
		json_decref(status);
	}
	/* A statement that failed (a duplicate, a missing job) is usable again. */
	json_t *tj = trainjob(NULL, "r");
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, NULL, &err), KFT_EINVAL);
	json_decref(tj);
	assert_int_equal(kft_store_job_set_status(other, NULL, "gone", NULL, &err), KFT_ENOTFOUND);
	free(create(f->s, NULL, "r2"));
	assert_int_equal(kft_store_job_set_status(other, NULL, "r2", NULL, &err), 0);
	kft_store_close(other);
}

static off_t wal_size(const char *dir)
{
	char path[256];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/%s-wal", dir, KFT_STORE_DB_NAME);
	return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* By default the last connection to close checkpoints the write-ahead log
 * into the database and removes it; a connection told to skip that leaves
 * its commits in the log, where the next opener finds them. */
static void test_skip_close_checkpoint(void **state)
{
	struct fixture *f = *state;
	char dir[160];
	kft_store *s = NULL;
	kft_error err;
	json_t *got = NULL;
	snprintf(dir, sizeof(dir), "%s/solo", f->root);

	assert_int_equal(kft_store_open(dir, &s, &err), 0);
	free(create(s, NULL, "kept"));
	kft_store_close(s);
	assert_true(wal_size(dir) <= 0);

	assert_int_equal(kft_store_open(dir, &s, &err), 0);
	assert_int_equal(kft_store_skip_close_checkpoint(s, &err), 0);
	free(create(s, NULL, "in-log"));
	kft_store_close(s);
	assert_true(wal_size(dir) > 0);

	assert_int_equal(kft_store_open(dir, &s, &err), 0);
	assert_int_equal(kft_store_job_get(s, NULL, "in-log", &got, &err), 0);
	json_decref(got);
	assert_int_equal(kft_store_job_get(s, NULL, "kept", &got, &err), 0);
	json_decref(got);
	kft_store_close(s);
	assert_true(wal_size(dir) <= 0);
}

/* Writes jobs through s until the write-ahead log holds more than 300 KiB
 * (the store empties a log past 256 KiB at close, store.c). */
static void grow_log(kft_store *s, const char *dir)
{
	static int made; /* names stay unique across calls */
	kft_error err;
	char name[32], big[2048];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; wal_size(dir) < 300 * 1024; i++) {
		assert_true(i < 5000);
		json_t *tj =
		        trainjob(NULL, (snprintf(name, sizeof(name), "grow-%d", made++), name));
		json_object_set_new(json_object_get(tj, "metadata"), "annotations",
		                    json_pack("{s:s}", "pad", big));
		assert_int_equal(kft_store_job_create(s, tj, NULL, NULL, &err), 0);
		json_decref(tj);
	}
}

/* SQLite checkpoints at close only when no other connection is open, so a
 * supervisor closing while a CLI reads used to leave the log growing, and
 * every later lone opener rebuilt its index from all of it. A connection
 * that keeps the close-time checkpoint empties a long log at close even with
 * others open; one that skips it leaves the log alone; a reader holding an
 * old snapshot makes the close give up (after a bounded wait) rather than
 * block, and nothing is lost either way. */
static void test_close_trims_long_log(void **state)
{
	struct fixture *f = *state;
	kft_store *w = NULL, *reader = NULL;
	kft_error err;
	json_t *got = NULL;
	assert_int_equal(kft_store_open(f->dir, &reader, &err), 0); /* SQLite's own: skipped */

	assert_int_equal(kft_store_open(f->dir, &w, &err), 0);
	assert_int_equal(kft_store_skip_close_checkpoint(w, &err), 0);
	grow_log(w, f->dir);
	kft_store_close(w);
	assert_true(wal_size(f->dir) > 300 * 1024);

	assert_int_equal(kft_store_open(f->dir, &w, &err), 0);
	free(create(w, NULL, "last"));
	kft_store_close(w);
	assert_int_equal(wal_size(f->dir), 0);

	/* A snapshot held open elsewhere: the log stays, and so do the rows. */
	char path[256];
	sqlite3 *db = NULL;
	snprintf(path, sizeof(path), "%s/%s", f->dir, KFT_STORE_DB_NAME);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM jobs;", NULL, NULL, NULL),
	                 SQLITE_OK);
	assert_int_equal(kft_store_open(f->dir, &w, &err), 0);
	grow_log(w, f->dir);
	kft_store_close(w);
	assert_true(wal_size(f->dir) > 300 * 1024);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);

	assert_int_equal(kft_store_job_get(reader, NULL, "last", &got, &err), 0);
	json_decref(got);
	assert_int_equal(kft_store_job_get(reader, NULL, "grow-0", &got, &err), 0);
	json_decref(got);
	kft_store_close(reader);
}

/* Any string the API server stores is stored: an annotation holding a NUL
 * ("\u0000" in JSON, which a Go string can hold) comes back whole, and the
 * job lists with the others (it once made every read of the state fail). */
static void test_nul_in_strings(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *tj = trainjob(NULL, "nul"), *got = NULL, *all = NULL;
	json_object_set_new(json_object_get(tj, "metadata"), "annotations",
	                    json_pack("{s:s%}", "a", "x\0y", (size_t)3));
	assert_int_equal(kft_store_job_create(f->s, tj, NULL, NULL, &err), 0);
	json_decref(tj);
	free(create(f->s, NULL, "other"));
	json_t *status = json_pack("{s:s%}", "note", "p\0q", (size_t)3);
	assert_int_equal(kft_store_job_set_status(f->s, NULL, "nul", status, &err), 0);
	json_decref(status);

	assert_int_equal(kft_store_job_get(f->s, NULL, "nul", &got, &err), 0);
	const json_t *a = json_object_get(
	        json_object_get(json_object_get(got, "metadata"), "annotations"), "a");
	assert_int_equal(json_string_length(a), 3);
	assert_memory_equal(json_string_value(a), "x\0y", 3);
	assert_int_equal(
	        json_string_length(json_object_get(json_object_get(got, "status"), "note")), 3);
	json_decref(got);
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	expect_names(all, (const char *const[]){"default/nul", "default/other"}, 2);
	json_decref(all);
}

static void collect_warning(void *ctx, const char *message)
{
	char *buf = ctx;
	strncat(buf, message, 1023 - strlen(buf));
	strncat(buf, "\n", 1023 - strlen(buf));
}

/* One damaged row (its JSON written over by something else) is skipped by
 * the list with a warning naming it; the other jobs stay readable, and the
 * damaged one still answers get with an error and can be deleted. */
static void test_damaged_row_skipped(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	char path[256], warnings[1024] = "";
	json_t *all = NULL, *got = NULL;
	sqlite3 *db;
	free(create(f->s, NULL, "a-good"));
	free(create(f->s, NULL, "b-bad"));
	free(create(f->s, NULL, "c-good"));
	snprintf(path, sizeof(path), "%s/" KFT_STORE_DB_NAME, f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	        sqlite3_exec(db, "UPDATE jobs SET spec = '{\"metadata\":' WHERE name = 'b-bad'",
	                     NULL, NULL, NULL),
	        SQLITE_OK);
	sqlite3_close(db);

	kft_store_set_warn(f->s, collect_warning, warnings);
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	expect_names(all, (const char *const[]){"default/a-good", "default/c-good"}, 2);
	json_decref(all);
	assert_non_null(
	        strstr(warnings, "skipping TrainJob default/b-bad: stored JSON is damaged"));
	assert_int_equal(kft_store_job_get(f->s, NULL, "b-bad", &got, &err), KFT_EPARSE);
	assert_null(got);
	assert_int_equal(kft_store_job_delete(f->s, NULL, "b-bad", &err), 0);
	assert_int_equal(kft_store_job_list(f->s, NULL, &all, &err), 0);
	expect_names(all, (const char *const[]){"default/a-good", "default/c-good"}, 2);
	json_decref(all);
}

/* Runs this binary as a process of its own (a helper mode of main) and
 * returns its exit code. */
static int run_self(char *mode, char *dir, char *name)
{
	char *argv[] = {"test_store", mode, dir, name, NULL};
	pid_t pid;
	int st;
	assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A process's second connection must not drop its first one's locks: POSIX
 * locks belong to the process, and any close() of the database file
 * releases them all. An open that created the file itself (0600) with an
 * open() and close() when it was there already did that, so another
 * process's connection closing later found no one else holding the
 * database, checkpointed and deleted the write-ahead log under this
 * process, whose next commits went to the unlinked log, lost to every
 * other process (a TrainJob its own supervisor then could not find).
 * sqlite.org "How To Corrupt An SQLite Database File", 2.2. */
static void test_second_open_keeps_locks(void **state)
{
	struct fixture *f = *state;
	kft_store *second = NULL;
	kft_error err;
	assert_int_equal(kft_store_open(f->dir, &second, &err), 0);
	free(create(second, NULL, "before"));
	assert_int_equal(run_self("open-close", f->dir, NULL), 0);
	free(create(f->s, NULL, "after"));
	assert_int_equal(run_self("has-job", f->dir, "before"), 0);
	assert_int_equal(run_self("has-job", f->dir, "after"), 0);
	kft_store_close(second);
}

/* Says stop at its third question. */
static bool stop_third(void *ctx)
{
	return ++*(int *)ctx == 3;
}

/* The supervisor prepares its writes while its submitter holds the write
 * lock, committing the job. Preparing leaves no transaction or lock behind
 * (another connection's BEGIN IMMEDIATE right after it goes through, where
 * a BEGIN left open would hold it off), works under another connection's
 * write lock, asks stop before each statement, and the writes then run
 * through what was prepared. (That the cache then holds the statements is
 * not visible from here; callgrind shows the first write's parse gone.) */
static void test_prepare_job_writes(void **state)
{
	struct fixture *f = *state;
	kft_store *sup = NULL;
	kft_error err;
	json_t *events = NULL, *got = NULL, *status = json_pack("{s:s}", "phase", "on");
	json_t *event = json_pack("{s:s}", "reason", "Started");
	kft_pod_record rec = {.step = "node", .index = 0, .state = "Running"}, *recs = NULL;
	size_t n = 0;
	assert_int_equal(kft_store_open(f->dir, &sup, &err), 0);
	kft_store_prepare_job_writes(sup, NULL, NULL);
	assert_int_equal(kft_store_begin(f->s, &err), 0);
	free(create(f->s, NULL, "p"));
	int asked = 0;
	kft_store_prepare_job_writes(sup, stop_third, &asked);
	assert_int_equal(asked, 3); /* stopped when told, the go being there */
	assert_int_equal(kft_store_commit(f->s, &err), 0);
	assert_int_equal(kft_store_begin(sup, &err), 0);
	assert_int_equal(kft_store_pod_upsert(sup, NULL, "p", &rec, &err), 0);
	assert_int_equal(kft_store_event_add(sup, NULL, "p", event, &err), 0);
	assert_int_equal(kft_store_job_set_status(sup, NULL, "p", status, &err), 0);
	assert_int_equal(kft_store_job_mark(sup, NULL, "p", KFT_JOB_STARTED, &err), 0);
	assert_int_equal(kft_store_commit(sup, &err), 0);
	assert_int_equal(kft_store_pods(f->s, NULL, "p", &recs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(kft_store_events(f->s, NULL, "p", &events, &err), 0);
	assert_true(json_equal(json_array_get(events, 0), event));
	assert_int_equal(kft_store_job_get(f->s, NULL, "p", &got, &err), 0);
	assert_true(json_equal(json_object_get(got, "status"), status));
	kft_pod_records_free(recs, n);
	json_decref(events);
	json_decref(got);
	json_decref(status);
	json_decref(event);
	kft_store_close(sup);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* The helper modes run_self starts: "open-close DIR" opens the store and
 * closes it (keeping the close-time checkpoint); "has-job DIR NAME" exits
 * 0 when the TrainJob is there, 2 when not. */
static int helper(int argc, char **argv)
{
	kft_store *s = NULL;
	kft_error err;
	json_t *got = NULL;
	if (kft_store_open(argv[2], &s, &err) != 0)
		return 1;
	int rc = strcmp(argv[1], "has-job") == 0 && argc == 4
	                 ? (kft_store_job_get(s, NULL, argv[3], &got, &err) == 0 ? 0 : 2)
	                 : 0;
	json_decref(got);
	kft_store_close(s);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 3)
		return helper(argc, argv);
	const struct CMUnitTest tests[] = {
	        T(test_create_get_round_trip),
	        T(test_two_jobs_get_distinct_uids),
	        T(test_duplicate_create),
	        T(test_invalid_create),
	        T(test_not_found),
	        T(test_list),
	        T(test_status),
	        T(test_suspend_and_times),
	        T(test_pods),
	        T(test_supervisor),
	        T(test_delete_cascades),
	        T(test_events),
	        T(test_reports),
	        T(test_transactions),
	        T(test_reopen_and_version),
	        T(test_newer_schema_refused),
	        T(test_file_modes),
	        T(test_corrupt_file),
	        T(test_open_errors),
	        T(test_concurrent_writers),
	        T(test_default_dir),
	        T(test_migrate_from_v1),
	        T(test_exec_objects_and_pod_fields),
	        T(test_plugins_recorded),
	        T(test_mark_deleting),
	        T(test_reused_statements),
	        T(test_skip_close_checkpoint),
	        T(test_close_trims_long_log),
	        T(test_nul_in_strings),
	        T(test_damaged_row_skipped),
	        T(test_second_open_keeps_locks),
	        T(test_prepare_job_writes),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
