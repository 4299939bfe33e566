/*
 * fuzz_track_plan.c - libFuzzer target for what tracking reads from
 * outside (src/track/plan.c, dest.c, check.c): a TrainJob anyone may
 * write (its annotations: params JSON, export-to, a trial's assignments),
 * and a progress report a job's code sends.
 *
 * The input is JSON: as a TrainJob it is described as a run and checked;
 * as a TrainerStatus it becomes metrics; its text is an export-to value.
 * Promises: a run's params and tags are {key, value} strings within
 * MLflow's limits with no key twice; every metric has a key, a number or
 * NaN/Infinity string value and integer timestamp and step; a destination
 * accepted has its parts (a bucket of 3-63 characters, a path with no "..");
 * the check and the description agree on a params annotation that is not
 * an object. A violation aborts.
 *
 * `make fuzz-run FUZZER=fuzz_track_plan SECONDS=300`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/track.h"

#define FUZZ_NAME "fuzz_track_plan"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const json_t *list, size_t value_max)
{
	size_t i, k;
	const json_t *e, *o;
	json_array_foreach(list, i, e)
	{
		const char *key = json_string_value(json_object_get(e, "key"));
		const char *v = json_string_value(json_object_get(e, "value"));
		if (!key || !*key || strlen(key) > KFT_TRACK_KEY_MAX || !v || strlen(v) > value_max)
			fail("a param or tag out of MLflow's limits", key);
		json_array_foreach(list, k, o)
		{
			if (k != i &&
			    strcmp(json_string_value(json_object_get(o, "key")), key) == 0)
				fail("a key twice", key);
		}
	}
}

static void check_run(const json_t *tj)
{
	kft_track_run r;
	kft_error err = {0};
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_track_validate(tj, &errs);
	int rc = kft_track_run_of_trainjob(tj, "exp", &r, &err);
	if (rc == 0) {
		check_list(r.params, KFT_TRACK_PARAM_MAX);
		check_list(r.tags, KFT_TRACK_TAG_MAX);
		if (!r.uid || !r.name || !r.experiment)
			fail("a run without uid, name or experiment", NULL);
		kft_track_run_free(&r);
	} else if (rc == KFT_EINVAL && strstr(err.message, KFT_TRACK_ANN_PARAMS) &&
	           errs.count == 0) {
		fail("params refused by the run but not by the check", err.message);
	} else if (rc != KFT_EINVAL && rc != KFT_ENOMEM) {
		fail("an unexpected status", err.message);
	}
	kft_field_errors_free(&errs);
}

static void check_metrics(const json_t *ts)
{
	json_t *m = json_array();
	int n = kft_track_report_metrics(ts, 1000, 3, m);
	size_t i;
	const json_t *e;
	if (n < 0 || (size_t)n != json_array_size(m))
		fail("a count that is not the metrics appended", NULL);
	json_array_foreach(m, i, e)
	{
		const json_t *v = json_object_get(e, "value");
		if (!json_string_value(json_object_get(e, "key")) ||
		    !json_is_integer(json_object_get(e, "step")) ||
		    !json_is_integer(json_object_get(e, "timestamp")) ||
		    !(json_is_real(v) || json_is_string(v)))
			fail("a metric MLflow would refuse", NULL);
	}
	json_decref(m);
}

static void check_dest(const uint8_t *data, size_t size)
{
	char *uri = strndup((const char *)data, size);
	kft_track_dest d;
	kft_error err = {0};
	if (uri && kft_track_dest_parse(uri, &d, &err) == 0) {
		if (d.kind == KFT_DEST_S3 &&
		    (!d.bucket || strlen(d.bucket) < 3 || strlen(d.bucket) > 63 || !d.path))
			fail("an S3 destination without its parts", uri);
		if (d.path && strstr(d.path, "/../"))
			fail("a path that climbs", d.path);
		kft_track_dest_free(&d);
	}
	free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	if (json_is_object(doc)) {
		check_run(doc);
		check_metrics(doc);
		check_metrics(json_object_get(doc, "trainerStatus"));
	}
	json_decref(doc);
	check_dest(data, size);
	return 0;
}
