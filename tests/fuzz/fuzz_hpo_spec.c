/*
 * fuzz_hpo_spec.c - libFuzzer target for reading an OptimizationJob
 * (kft_hpo_spec_parse, src/hpo/spec.c) and everything done with what it
 * read: drawing parameters (random, grid, TPE), checking and replacing the
 * template's placeholders, writing a trial's TrainJob. The controller runs
 * this on any object the API server stores, so the schema's checks cannot
 * be assumed: the input is any JSON.
 *
 * A refusal must be KFT_EINVAL; an accepted spec must yield a value for
 * every parameter, each at most 64 bytes and inside its range. A violation
 * aborts.
 *
 * `make fuzz-run FUZZER=fuzz_hpo_spec SECONDS=300`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo.h"

#define FUZZ_NAME "fuzz_hpo_spec"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_assignment(const kft_hpo_spec *s, const json_t *a)
{
	if (json_array_size(a) != s->n_params)
		fail("an assignment without one value per parameter", NULL);
	for (size_t i = 0; i < s->n_params; i++) {
		const char *v = json_string_value(json_object_get(json_array_get(a, i), "value"));
		if (!v || strlen(v) > 64)
			fail("a value missing or longer than 64 bytes", v);
		if (s->params[i].dist == KFT_HPO_CATEGORICAL)
			continue;
		double d = strtod(v, NULL);
		if (d < s->params[i].min || d > s->params[i].max)
			fail("a value outside its range", v);
	}
}

static void exercise(const kft_hpo_spec *s)
{
	kft_error err;
	json_t *a = kft_hpo_random(s, 1, 0), *trials = json_array(), *job = NULL;
	uint64_t count = 0;
	if (!a || !trials)
		abort();
	check_assignment(s, a);
	if (kft_hpo_grid_count(s, &count, &err) == 0 && count > 0) {
		json_t *g = kft_hpo_grid(s, count - 1);
		check_assignment(s, g);
		json_decref(g);
	}
	json_t *t = kft_hpo_tpe(s, trials, 1, 0);
	check_assignment(s, t);
	char *name = kft_hpo_trial_name(s->name ? s->name : "x", 0);
	if (kft_hpo_check_placeholders(s, &err) == 0 && name &&
	    kft_hpo_trial_job(s, name, 0, a, &job, &err) == 0 && !job)
		fail("a trial TrainJob reported made but missing", NULL);
	free(name);
	json_decref(job);
	json_decref(t);
	json_decref(a);
	json_decref(trials);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *opt = json_loadb((const char *)data, size, 0, &je);
	if (!opt)
		return 0;
	kft_hpo_spec s;
	kft_error err = {0};
	int rc = kft_hpo_spec_parse(opt, &s, &err);
	if (rc != 0 && rc != KFT_EINVAL)
		fail("a status other than KFT_EINVAL", err.message);
	if (rc == 0) {
		exercise(&s);
		kft_hpo_spec_free(&s);
	}
	json_decref(opt);
	return 0;
}
