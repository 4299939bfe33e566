/*
 * test_optstore.c - OptimizationJobs in the local store (src/local/optstore.c,
 * schema 7): what is kept and read back, kubectl's wording for "already
 * exists" and "not found", status and read cursors written together, the
 * bounded observations, a delete that only removes the row of the uid it
 * was given, and everything of a search going with it.
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
#include <unistd.h>

#include "json_fixture.h"
#include "local/optstore.h"

struct fixture {
	char root[64];
	kft_store *s;
};

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
	kft_error err;
	assert_non_null(f);
	strcpy(f->root, "/tmp/kft-optstore-test-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	if (kft_store_open(f->root, &f->s, &err))
		fail_msg("open: %s", err.message);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	kft_store_close(f->s);
	int rc = nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return rc;
}

static json_t *optjob(const char *name)
{
	json_t *o = parse("{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": "
	                  "\"OptimizationJob\", \"metadata\": {\"namespace\": \"ns1\"}, \"spec\": "
	                  "{\"numTrials\": 2}, \"status\": {\"trials\": []}}");
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
	return o;
}

static char *create(kft_store *s, const char *name)
{
	json_t *o = optjob(name), *rt = parse("{\"kind\": \"ClusterTrainingRuntime\"}");
	kft_opt_exec e = {.runtime = rt, .workdir = "/w", .job_workdir = true, .seed = 42};
	kft_error err;
	char *uid = NULL;
	if (kft_optstore_create(s, o, &e, &uid, &err) != 0)
		fail_msg("create: %s", err.message);
	json_decref(o);
	json_decref(rt);
	return uid;
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *o = NULL;
	kft_opt_exec e;
	char *uid = create(f->s, "tune");
	assert_int_equal(kft_optstore_get(f->s, "ns1", "tune", &o, &err), 0);
	const json_t *meta = json_object_get(o, "metadata");
	assert_string_equal(json_string_value(json_object_get(meta, "uid")), uid);
	assert_non_null(json_object_get(meta, "creationTimestamp"));
	assert_null(json_object_get(meta, "deletionTimestamp"));
	expect_json(json_object_get(o, "status"), "{\"trials\": []}");
	json_decref(o);
	assert_int_equal(kft_optstore_exec(f->s, "ns1", "tune", &e, &err), 0);
	expect_json(e.runtime, "{\"kind\": \"ClusterTrainingRuntime\"}");
	assert_string_equal(e.workdir, "/w");
	assert_true(e.job_workdir);
	assert_int_equal(e.seed, 42);
	assert_null(e.plugins);
	assert_null(e.base_env);
	kft_opt_exec_free(&e);
	free(uid);
}

/* kubectl's words for a second create and for a missing one. */
static void test_wording(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *o = optjob("tune"), *rt = json_object(), *got = NULL;
	kft_opt_exec e = {.runtime = rt};
	free(create(f->s, "tune"));
	assert_int_equal(kft_optstore_create(f->s, o, &e, NULL, &err), KFT_EINVAL);
	assert_string_equal(err.message,
	                    "optimizationjobs.trainer.kubeflow.org \"tune\" already exists");
	assert_int_equal(kft_optstore_get(f->s, "ns1", "nope", &got, &err), KFT_ENOTFOUND);
	assert_string_equal(err.message,
	                    "optimizationjobs.trainer.kubeflow.org \"nope\" not found");
	assert_int_equal(kft_optstore_set_status(f->s, "ns1", "nope", o, NULL, false, &err),
	                 KFT_ENOTFOUND);
	json_decref(o);
	json_decref(rt);
}

/* Status and cursors go in one write; NULL cursors keep the old ones. */
static void test_status_and_cursors(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *st = parse("{\"trials\": [{\"name\": \"tune-1\", \"state\": \"Running\"}]}");
	json_t *cur = parse("{\"tune-1\": {\"log\": 12, \"report\": 3}}"), *got = NULL;
	free(create(f->s, "tune"));
	assert_int_equal(kft_optstore_set_status(f->s, "ns1", "tune", st, cur, false, &err), 0);
	assert_int_equal(kft_optstore_set_status(f->s, "ns1", "tune", st, NULL, true, &err), 0);
	assert_int_equal(kft_optstore_cursors(f->s, "ns1", "tune", &got, &err), 0);
	expect_json(got, "{\"tune-1\": {\"log\": 12, \"report\": 3}}");
	json_decref(got);
	assert_int_equal(kft_optstore_get(f->s, "ns1", "tune", &got, &err), 0);
	expect_json(json_object_get(got, "status"),
	            "{\"trials\": [{\"name\": \"tune-1\", \"state\": \"Running\"}]}");
	json_decref(got);
	json_decref(st);
	json_decref(cur);
}

/* The first KFT_OPTSTORE_OBSERVATIONS_MAX values of each trial are kept. */
static void test_observations_bounded(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *got = NULL;
	free(create(f->s, "tune"));
	for (int i = 0; i < KFT_OPTSTORE_OBSERVATIONS_MAX + 5; i++) {
		char v[16];
		snprintf(v, sizeof(v), "%d", i);
		assert_int_equal(
		        kft_optstore_observe(f->s, "ns1", "tune", "tune-1", "loss", v, &err), 0);
	}
	assert_int_equal(kft_optstore_observe(f->s, "ns1", "tune", "tune-2", "loss", "7", &err), 0);
	assert_int_equal(kft_optstore_observations(f->s, "ns1", "tune", 0, &got, &err), 0);
	assert_int_equal(json_array_size(got), KFT_OPTSTORE_OBSERVATIONS_MAX + 1);
	const json_t *last_of_1 = json_array_get(got, KFT_OPTSTORE_OBSERVATIONS_MAX - 1);
	assert_string_equal(json_string_value(json_object_get(last_of_1, "value")), "999");
	json_int_t after = json_integer_value(json_object_get(last_of_1, "id"));
	json_decref(got);
	assert_int_equal(kft_optstore_observations(f->s, "ns1", "tune", after, &got, &err), 0);
	assert_int_equal(json_array_size(got), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "trial")),
	                    "tune-2");
	json_decref(got);
	assert_int_equal(kft_optstore_observations(f->s, "ns1", "none", 0, &got, &err),
	                 KFT_ENOTFOUND);
}

/* A delete names the uid it marked: a new search of the same name is not
 * touched; the search's events and observations go with it. */
static void test_delete(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	json_t *got = NULL, *ev = parse("{\"reason\": \"TrialCreated\"}");
	char *uid = create(f->s, "tune");
	assert_int_equal(kft_optstore_event_add(f->s, "ns1", "tune", ev, &err), 0);
	assert_int_equal(kft_optstore_events(f->s, "ns1", "tune", &got, &err), 0);
	expect_json(got, "[{\"reason\": \"TrialCreated\"}]");
	json_decref(got);
	assert_int_equal(kft_optstore_mark_deleting(f->s, "ns1", "tune", &err), 0);
	assert_int_equal(kft_optstore_get(f->s, "ns1", "tune", &got, &err), 0);
	assert_non_null(json_object_get(json_object_get(got, "metadata"), "deletionTimestamp"));
	json_decref(got);
	assert_int_equal(kft_optstore_delete(f->s, "ns1", "tune", "another-uid", &err),
	                 KFT_ENOTFOUND);
	assert_int_equal(kft_optstore_delete(f->s, "ns1", "tune", uid, &err), 0);
	free(uid);
	free(create(f->s, "tune"));
	assert_int_equal(kft_optstore_events(f->s, "ns1", "tune", &got, &err), 0);
	expect_json(got, "[]");
	json_decref(got);
	assert_int_equal(kft_optstore_list(f->s, NULL, &got, &err), 0);
	assert_int_equal(json_array_size(got), 1);
	json_decref(got);
	json_decref(ev);
}

static void test_supervisor(void **state)
{
	struct fixture *f = *state;
	kft_error err;
	int pid = -1;
	long long ticks = -1;
	free(create(f->s, "tune"));
	assert_int_equal(kft_optstore_get_supervisor(f->s, "ns1", "tune", &pid, &ticks, &err), 0);
	assert_int_equal(pid, 0);
	assert_int_equal(kft_optstore_set_supervisor(f->s, "ns1", "tune", 1234, 99, &err), 0);
	assert_int_equal(kft_optstore_get_supervisor(f->s, "ns1", "tune", &pid, &ticks, &err), 0);
	assert_int_equal(pid, 1234);
	assert_int_equal(ticks, 99);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
	        T(test_round_trip),           T(test_wording), T(test_status_and_cursors),
	        T(test_observations_bounded), T(test_delete),  T(test_supervisor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
