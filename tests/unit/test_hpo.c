/*
 * test_hpo.c - src/hpo/: an OptimizationJob's decisions. Each case names
 * the upstream rule it pins: Katib's StdOut filter (pkg/metricscollector/
 * v1beta1/common DefaultFilter, the expected matches computed with Go's
 * regexp), Katib's trial metrics (trial_controller_util.go getMetrics),
 * experiment status (status_util.go), grid (suggestion/v1beta1/internal/
 * search_space.py), medianstop (earlystopping/v1beta1/medianstop and the
 * file metrics collector's updateStopRules), the Kubeflow SDK's
 * ${trialParameters.NAME} func_args and Katib's substitution
 * (experiment/manifest/generator.go), Python's float repr.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json_fixture.h"
#include "hpo/hpo.h"

#define OPT_HEAD                                                                                   \
	"{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": \"OptimizationJob\","       \
	" \"metadata\": {\"name\": \"tune\", \"namespace\": \"ns1\"%s},"                           \
	" \"spec\": {\"objectives\": [{\"metric\": \"loss\", \"direction\": \"%s\"}],"             \
	" \"numTrials\": %d, \"parallelTrials\": %d, \"searchAlgorithm\": %s,"                     \
	" \"parameters\": %s,"                                                                     \
	" \"trainJobTemplate\": {\"spec\": {\"runtimeRef\": {\"name\": \"torch-distributed\"},"    \
	" \"trainer\": {\"command\": [\"python\", \"-c\","                                         \
	" \"train(**{'lr': '${trialParameters.lr}', 'bs': '${trialParameters.bs}'})\"]}}}}}"

#define SPACE                                                                                      \
	"[{\"name\": \"lr\", \"searchSpace\": {\"logUniform\": {\"min\": \"0.0001\", \"max\": "    \
	"\"0.1\"}}}, {\"name\": \"bs\", \"searchSpace\": {\"categorical\": {\"choices\": "         \
	"[\"16\", "                                                                                \
	"\"32\", \"64\"]}}}]"

/* An OptimizationJob with these parts; caller json_decref()s. */
static json_t *opt_job(const char *annotations, const char *direction, int num, int par,
                       const char *algorithm, const char *params)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), OPT_HEAD, annotations, direction, num, par, algorithm, params);
	return parse(buf);
}

static json_t *default_opt(void)
{
	return opt_job("", "Minimize", 20, 2, "{\"random\": {\"seed\": 1}}", SPACE);
}

static void parse_ok(const json_t *opt, kft_hpo_spec *spec)
{
	kft_error err = {0};
	if (kft_hpo_spec_parse(opt, spec, &err) != 0)
		fail_msg("parse: %s", err.message);
}

static void parse_fails(const json_t *opt, const char *want)
{
	kft_hpo_spec spec;
	kft_error err = {0};
	assert_int_equal(kft_hpo_spec_parse(opt, &spec, &err), KFT_EINVAL);
	if (!strstr(err.message, want))
		fail_msg("error \"%s\" lacks \"%s\"", err.message, want);
}

static const char *value_of(const json_t *assign, const char *name)
{
	size_t i;
	const json_t *a;
	json_array_foreach(assign, i, a)
	{
		if (strcmp(json_string_value(json_object_get(a, "name")), name) == 0)
			return json_string_value(json_object_get(a, "value"));
	}
	return NULL;
}

/* ---- the spec -------------------------------------------------------------------- */

/* Defaults: Optuna's TPE (n_startup_trials 10, n_ei_candidates 24), Katib's
 * medianstop (min_trials_required 3, start_step 4), and no failure limit
 * (the SDK's TrialConfig.max_failed_trials None). */
static void test_spec_defaults(void **state)
{
	(void)state;
	json_t *opt = default_opt();
	kft_hpo_spec s;
	parse_ok(opt, &s);
	assert_string_equal(s.objective, "loss");
	assert_false(s.maximize);
	assert_int_equal(s.n_metrics, 1);
	assert_int_equal(s.n_params, 2);
	assert_int_equal(s.params[0].dist, KFT_HPO_LOG_UNIFORM);
	assert_int_equal(s.params[1].dist, KFT_HPO_CATEGORICAL);
	assert_int_equal(s.algorithm, KFT_HPO_RANDOM);
	assert_true(s.has_seed);
	assert_int_equal(s.seed, 1);
	assert_int_equal(s.n_startup_trials, 10);
	assert_int_equal(s.n_ei_candidates, 24);
	assert_false(s.median_stop);
	assert_int_equal(s.min_trials_required, 3);
	assert_int_equal(s.start_step, 4);
	assert_int_equal(s.max_failed, -1);
	assert_int_equal(s.num_trials, 20);
	assert_int_equal(s.parallel_trials, 2);
	assert_string_equal(s.ns, "ns1");
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* kftrainer's annotations: TPE with Katib-style settings, medianstop, the
 * SDK's max_failed_trials and additional objectives. */
static void test_spec_annotations(void **state)
{
	(void)state;
	json_t *opt =
	        opt_job(", \"annotations\": {"
	                "\"optimizer.kftrainer.dev/algorithm\": \"tpe\","
	                "\"optimizer.kftrainer.dev/algorithm-settings\": \"n_startup_trials=5, "
	                "n_ei_candidates=8\","
	                "\"optimizer.kftrainer.dev/early-stopping\": \"medianstop\","
	                "\"optimizer.kftrainer.dev/early-stopping-settings\": \"start_step=2\","
	                "\"optimizer.kftrainer.dev/max-failed-trials\": \"3\","
	                "\"optimizer.kftrainer.dev/additional-metrics\": \"accuracy, f1\"}",
	                "Maximize", 4, 1, "{\"random\": {}}", SPACE);
	kft_hpo_spec s;
	parse_ok(opt, &s);
	assert_true(s.maximize);
	assert_int_equal(s.algorithm, KFT_HPO_TPE);
	assert_false(s.has_seed);
	assert_int_equal(s.n_startup_trials, 5);
	assert_int_equal(s.n_ei_candidates, 8);
	assert_true(s.median_stop);
	assert_int_equal(s.start_step, 2);
	assert_int_equal(s.min_trials_required, 3);
	assert_int_equal(s.max_failed, 3);
	assert_int_equal(s.n_metrics, 3);
	assert_string_equal(s.metrics[1], "accuracy");
	assert_string_equal(s.metrics[2], "f1");
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* Katib's validation wording for algorithm and early-stopping settings
 * (optuna/service.py, medianstop/service.py: "unknown setting X for
 * algorithm Y", "unknown algorithm name"). */
static void test_spec_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *annotations, *algorithm, *want;
	} cases[] = {
	        {", \"annotations\": {\"optimizer.kftrainer.dev/algorithm\": \"bayes\"}",
	         "{\"random\": {}}", "Unsupported value: \"bayes\""},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/algorithm\": \"tpe\"}",
	         "{\"grid\": {}}", "tpe takes spec.searchAlgorithm.random"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/algorithm\": \"tpe\", "
	         "\"optimizer.kftrainer.dev/algorithm-settings\": \"gamma=3\"}",
	         "{\"random\": {}}", "unknown setting gamma for algorithm tpe"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/algorithm-settings\": \"x=1\"}",
	         "{\"random\": {}}", "unknown setting x for algorithm random"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping\": \"medianstop\", "
	         "\"optimizer.kftrainer.dev/early-stopping-settings\": \"min_trials_required=0\"}",
	         "{\"random\": {}}", "min_trials_required must be a whole number from 1"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping\": \"medianstop\", "
	         "\"optimizer.kftrainer.dev/early-stopping-settings\": \"start_step=0\"}",
	         "{\"random\": {}}", "start_step must be a whole number from 1"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping\": \"medianstop\", "
	         "\"optimizer.kftrainer.dev/early-stopping-settings\": \"start_step\"}",
	         "{\"random\": {}}", "a setting is written name=value"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping\": \"hyperband\"}",
	         "{\"random\": {}}", "supported values: \"medianstop\""},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping-settings\": "
	         "\"start_step=2\"}",
	         "{\"random\": {}}", "Forbidden"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/max-failed-trials\": \"-1\"}",
	         "{\"random\": {}}", "max-failed-trials]: Invalid value: \"-1\""},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/additional-metrics\": \"acc,,f1\"}",
	         "{\"random\": {}}", "additional-metrics]: Invalid value"},
	        {", \"annotations\": {\"optimizer.kftrainer.dev/additional-metrics\": \"loss\"}",
	         "{\"random\": {}}", "not the objective"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *opt =
		        opt_job(cases[i].annotations, "Minimize", 2, 1, cases[i].algorithm, SPACE);
		parse_fails(opt, cases[i].want);
		json_decref(opt);
	}
	/* numbers the schema's pattern lets through but that make no range */
	json_t *opt =
	        opt_job("", "Minimize", 2, 1, "{\"random\": {}}",
	                "[{\"name\": \"n\", \"searchSpace\": {\"uniform\": {\"min\": \"1.2\", "
	                "\"max\": \"1.8\", \"type\": \"Int\"}}}]");
	parse_fails(opt, "no whole number lies between min and max");
	json_decref(opt);
	/* bounds the schema's pattern lets through but draws cannot use (found by
	 * fuzz_hpo_spec: an Int max of 45 digits overflowed llround) */
	opt = opt_job("", "Minimize", 2, 1, "{\"random\": {}}",
	              "[{\"name\": \"n\", \"searchSpace\": {\"uniform\": {\"min\": \"0\", "
	              "\"max\": \"44444444444444444444444444444444444444444444444\", "
	              "\"type\": \"Int\"}}}]");
	parse_fails(opt, "min and max must lie within -2^53 and 2^53");
	json_decref(opt);
	opt = opt_job("", "Minimize", 2, 1, "{\"random\": {}}",
	              "[{\"name\": \"x\", \"searchSpace\": {\"uniform\": {\"min\": "
	              "\"-1e308\", \"max\": \"1e308\"}}}]");
	parse_fails(opt, "min and max must lie within a finite range");
	json_decref(opt);
	/* a choice the schema's items maxLength 64 refuses, read by the controller
	 * anyway: it would make a ParameterAssignment value over its maxLength 64
	 * (found by fuzz_hpo_spec) */
	opt = opt_job("", "Minimize", 2, 1, "{\"random\": {}}",
	              "[{\"name\": \"c\", \"searchSpace\": {\"categorical\": {\"choices\": "
	              "[\"a\", \"" /* 65 bytes */
	              "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]}}}]");
	parse_fails(opt, "choices[1]: Invalid value: a string of 1 to 64 bytes is required");
	json_decref(opt);
}

/* ---- sampling ------------------------------------------------------------------- */

/* RandomSearch(random_state): the same seed gives the same trials,
 * whatever order they are drawn in; another seed others; every value in
 * its space. */
static void test_random_reproducible(void **state)
{
	(void)state;
	json_t *opt = default_opt();
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *a = kft_hpo_random(&s, 1, 3), *b = kft_hpo_random(&s, 1, 3);
	json_t *c = kft_hpo_random(&s, 2, 3), *d = kft_hpo_random(&s, 1, 4);
	assert_true(json_equal(a, b));
	assert_false(json_equal(a, c));
	assert_false(json_equal(a, d));
	for (uint64_t i = 0; i < 500; i++) {
		json_t *x = kft_hpo_random(&s, 7, i);
		double lr = strtod(value_of(x, "lr"), NULL);
		const char *bs = value_of(x, "bs");
		assert_true(lr >= 0.0001 && lr <= 0.1);
		assert_true(strcmp(bs, "16") == 0 || strcmp(bs, "32") == 0 ||
		            strcmp(bs, "64") == 0);
		json_decref(x);
	}
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* Search.loguniform: log-uniform, so the median is the geometric mean
 * (sqrt(1e-4 * 1e-1) ~ 0.00316); Search.uniform would put it at 0.05. An
 * Int range gives every whole number, ends included (Optuna's
 * IntDistribution). */
static void test_random_distributions(void **state)
{
	(void)state;
	json_t *opt =
	        opt_job("", "Minimize", 2, 1, "{\"random\": {}}",
	                "[{\"name\": \"lr\", \"searchSpace\": {\"logUniform\": {\"min\": "
	                "\"0.0001\", \"max\": \"0.1\"}}}, {\"name\": \"n\", \"searchSpace\": "
	                "{\"uniform\": {\"min\": \"1\", \"max\": \"3\", \"type\": \"Int\"}}}]");
	kft_hpo_spec s;
	parse_ok(opt, &s);
	int below = 0, seen[4] = {0};
	for (uint64_t i = 0; i < 2000; i++) {
		json_t *x = kft_hpo_random(&s, 11, i);
		below += strtod(value_of(x, "lr"), NULL) < 0.00316;
		long n = strtol(value_of(x, "n"), NULL, 10);
		assert_true(n >= 1 && n <= 3);
		seen[n]++;
		json_decref(x);
	}
	assert_true(below > 900 && below < 1100);
	assert_true(seen[1] > 550 && seen[2] > 550 && seen[3] > 550);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* What Katib's suggestion services hand over is Python's str(float). */
static void test_format_double(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *want;
	} cases[] = {{0.001, "0.001"},
	             {1e-05, "1e-05"},
	             {12.5, "12.5"},
	             {100.0, "100.0"},
	             {0.1 + 0.2, "0.30000000000000004"},
	             {3.0, "3.0"},
	             {1e16, "1e+16"},
	             {-0.0125, "-0.0125"},
	             {0.0001, "0.0001"},
	             {123456789.0, "123456789.0"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[32];
		assert_string_equal(kft_hpo_format_double(cases[i].v, buf), cases[i].want);
	}
}

/* Katib's grid: choices as listed, Int ranges min..max, the product in
 * itertools.product's order; a Float without a step cannot be gridded;
 * numTrials beyond the points is refused. */
static void test_grid(void **state)
{
	(void)state;
	json_t *opt =
	        opt_job("", "Minimize", 6, 1, "{\"grid\": {}}",
	                "[{\"name\": \"bs\", \"searchSpace\": {\"categorical\": {\"choices\": "
	                "[\"16\", \"32\"]}}}, {\"name\": \"n\", \"searchSpace\": "
	                "{\"uniform\": {\"min\": \"1\", \"max\": \"3\", \"type\": \"Int\"}}}]");
	kft_hpo_spec s;
	kft_error err = {0};
	uint64_t count = 0;
	parse_ok(opt, &s);
	assert_int_equal(kft_hpo_grid_count(&s, &count, &err), 0);
	assert_int_equal(count, 6);
	const char *want[6][2] = {{"16", "1"}, {"16", "2"}, {"16", "3"},
	                          {"32", "1"}, {"32", "2"}, {"32", "3"}};
	for (uint64_t i = 0; i < 6; i++) {
		json_t *p = kft_hpo_grid(&s, i);
		assert_string_equal(value_of(p, "bs"), want[i][0]);
		assert_string_equal(value_of(p, "n"), want[i][1]);
		json_decref(p);
	}
	s.num_trials = 7;
	assert_int_equal(kft_hpo_grid_count(&s, &count, &err), KFT_EINVAL);
	assert_non_null(
	        strstr(err.message, "Max Trial Count: 7 > all possible search combinations: 6"));
	kft_hpo_spec_free(&s);
	json_decref(opt);

	opt = opt_job("", "Minimize", 2, 1, "{\"grid\": {}}", SPACE);
	parse_ok(opt, &s);
	assert_int_equal(kft_hpo_grid_count(&s, &count, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "Param lr step is nil; For discrete search space, all "
	                                    "parameters must include step"));
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* A finished trial with objective value v for parameter x. */
static json_t *done_trial(const kft_hpo_spec *s, double x, double v)
{
	char xs[32], vs[32];
	snprintf(xs, sizeof(xs), "%.17g", x);
	snprintf(vs, sizeof(vs), "%.17g", v);
	json_t *p = json_pack("[{s:s, s:s}]", "name", "x", "value", xs);
	json_t *t = kft_hpo_trial_new("t", p, NULL, "2026-01-01T00:00:00Z");
	kft_hpo_observe(s, t, "loss", vs);
	kft_hpo_trial_end(s, t, KFT_HPO_JOB_COMPLETE, NULL, "2026-01-01T00:00:01Z");
	json_decref(p);
	return t;
}

/* TPE: random (the same draws as RandomSearch) for the first
 * n_startup_trials; then it samples where the best trials were: on
 * loss = (x - 0.3)^2 over [0, 1], after 30 random trials its next
 * suggestions sit much closer to 0.3 than random ones do. Deterministic
 * in the seed. */
static void test_tpe(void **state)
{
	(void)state;
	json_t *opt = opt_job(", \"annotations\": {\"optimizer.kftrainer.dev/algorithm\": \"tpe\"}",
	                      "Minimize", 60, 1, "{\"random\": {\"seed\": 5}}",
	                      "[{\"name\": \"x\", \"searchSpace\": {\"uniform\": {\"min\": \"0\", "
	                      "\"max\": \"1\"}}}]");
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *trials = json_array();
	json_t *r = kft_hpo_random(&s, 5, 0), *t = kft_hpo_tpe(&s, trials, 5, 0);
	assert_true(json_equal(r, t)); /* fewer than n_startup_trials finished */
	json_decref(r);
	json_decref(t);
	for (uint64_t i = 0; i < 30; i++) {
		json_t *p = kft_hpo_random(&s, 5, i);
		double x = strtod(value_of(p, "x"), NULL);
		json_array_append_new(trials, done_trial(&s, x, (x - 0.3) * (x - 0.3)));
		json_decref(p);
	}
	double tpe_err = 0, rnd_err = 0;
	for (uint64_t i = 30; i < 50; i++) {
		json_t *a = kft_hpo_tpe(&s, trials, 5, i), *b = kft_hpo_random(&s, 5, i);
		tpe_err += fabs(strtod(value_of(a, "x"), NULL) - 0.3);
		rnd_err += fabs(strtod(value_of(b, "x"), NULL) - 0.3);
		json_t *again = kft_hpo_tpe(&s, trials, 5, i);
		assert_true(json_equal(a, again));
		json_decref(again);
		json_decref(a);
		json_decref(b);
	}
	if (!(tpe_err * 2 < rnd_err))
		fail_msg("TPE mean distance %g not well under random's %g", tpe_err / 20,
		         rnd_err / 20);
	json_decref(trials);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* ---- metrics ------------------------------------------------------------------ */

typedef struct seen {
	char text[512];
} seen;

static void collect(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen)
{
	seen *s = ctx;
	size_t n = strlen(s->text);
	snprintf(s->text + n, sizeof(s->text) - n, "[%.*s %.*s]", (int)nlen, name, (int)vlen,
	         value);
}

/* Katib's DefaultFilter over the lines its comment lists and others whose
 * matches Go's regexp.FindAllStringSubmatch gave. */
static void test_stdout_filter(void **state)
{
	(void)state;
	static const struct {
		const char *line, *want;
	} cases[] = {
	        {"loss=0.3", "[loss 0.3]"},
	        {"accuracy=.98", "[accuracy .98]"},
	        {"Score=-7.53e-05", "[Score -7.53e-05]"},
	        {"Score=-7.53e+05", "[Score -7.53e+05]"},
	        {"Score=1E0", "[Score 1E0]"},
	        {"Score=1.23E10", "[Score 1.23E10]"},
	        {"epoch 1: loss=0.5, acc = 0.9", "[loss 0.5][acc 0.9]"},
	        {"loss=nan", "[loss ]"},
	        {"a|b-c_d=1", "[a|b-c_d 1]"},
	        {"loss =\t-1.5e", "[loss -1.5]"},
	        {"loss= 2.", "[loss 2]"},
	        {"x==3", "[x ]"},
	        {"loss\xc3\xa9=4", ""},
	        {"loss=1.5.6", "[loss 1.5]"},
	        {"=5 loss=6", "[loss 6]"},
	        {"loss=+", "[loss +]"},
	        {"val-loss=0.1 val_acc=.5e3", "[val-loss 0.1][val_acc .5e3]"},
	        {"2024-01-01T00:00:00Z loss=1", "[loss 1]"},
	        {"loss=1e+", "[loss 1]"},
	        {"loss=-.5E-3x", "[loss -.5E-3]"},
	        {"ab c=1", "[c 1]"},
	        {"loss\n=2", "[loss 2]"},
	        {"", ""},
	        {"no metrics here", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		seen s = {{0}};
		kft_hpo_stdout_line(cases[i].line, strlen(cases[i].line), collect, &s);
		if (strcmp(s.text, cases[i].want) != 0)
			fail_msg("\"%s\": %s, want %s", cases[i].line, s.text, cases[i].want);
	}
	/* the length bounds the line; a NUL inside is just a character */
	seen s = {{0}};
	kft_hpo_stdout_line("loss=1\0loss=2", 13, collect, &s);
	assert_string_equal(s.text, "[loss 1][loss 2]");
	kft_hpo_stdout_line("loss=123", 6, collect, &s);
	assert_string_equal(s.text, "[loss 1][loss 2][loss 1]");
}

/* Katib's getMetrics: every metric "unavailable" until reported; min/max
 * from the first number; latest whatever came last, number or not; a
 * metric the experiment does not name is dropped. */
static void test_observe(void **state)
{
	(void)state;
	json_t *opt = opt_job(", \"annotations\": {\"optimizer.kftrainer.dev/additional-metrics\": "
	                      "\"acc\"}",
	                      "Minimize", 2, 1, "{\"random\": {}}", SPACE);
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *p = json_array(), *t = kft_hpo_trial_new("tune-1", p, NULL, "2026-01-01T00:00:00Z");
	kft_hpo_observe(&s, t, "other", "1");
	assert_null(json_object_get(t, "metrics"));
	kft_hpo_observe(&s, t, "acc", "0.5");
	expect_json(json_object_get(t, "metrics"),
	            "[{\"name\": \"loss\", \"min\": \"unavailable\", \"max\": \"unavailable\", "
	            "\"latest\": \"unavailable\"}, {\"name\": \"acc\", \"min\": \"0.5\", \"max\": "
	            "\"0.5\", \"latest\": \"0.5\"}]");
	kft_hpo_observe(&s, t, "loss", "0.9");
	kft_hpo_observe(&s, t, "loss", "0.4");
	kft_hpo_observe(&s, t, "loss", "1.2");
	kft_hpo_observe(&s, t, "loss", "");
	expect_json(json_array_get(json_object_get(t, "metrics"), 0),
	            "{\"name\": \"loss\", \"min\": \"0.4\", \"max\": \"1.2\", \"latest\": \"\"}");
	assert_int_equal(json_integer_value(json_object_get(t, "objectiveReports")), 3);
	/* minimizing, the objective is the min; with no number at all, latest */
	assert_string_equal(kft_hpo_objective_value(&s, t), "0.4");
	json_decref(t);
	json_decref(p);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* ---- medianstop ----------------------------------------------------------------- */

static json_t *median_opt(const char *direction)
{
	return opt_job(", \"annotations\": {\"optimizer.kftrainer.dev/early-stopping\": "
	               "\"medianstop\", \"optimizer.kftrainer.dev/early-stopping-settings\": "
	               "\"min_trials_required=2,start_step=2\"}",
	               direction, 10, 1, "{\"random\": {}}", SPACE);
}

/* Katib's medianstop service: the rule is the mean, over trials that
 * succeeded, of each one's average of its first start_step objective
 * values; none until min_trials_required succeeded; failed trials do not
 * count. */
static void test_median_rule(void **state)
{
	(void)state;
	json_t *opt = median_opt("Minimize");
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *trials = json_array(), *p = json_array();
	const char *vals[3][3] = {{"1", "3", "100"}, {"2", "2", "0"}, {"50", "50", "50"}};
	for (int i = 0; i < 3; i++) {
		json_t *t = kft_hpo_trial_new("t", p, NULL, "now");
		for (int k = 0; k < 3; k++)
			kft_hpo_observe(&s, t, "loss", vals[i][k]);
		kft_hpo_trial_end(&s, t, i == 2 ? KFT_HPO_JOB_FAILED : KFT_HPO_JOB_COMPLETE, NULL,
		                  "now");
		json_array_append_new(trials, t);
		char *rule = kft_hpo_median_rule(&s, trials);
		if (i == 0)
			assert_null(rule); /* one success, two required */
		else
			assert_string_equal(rule, "2.0"); /* (avg(1,3) + avg(2,2)) / 2 */
		free(rule);
	}
	json_decref(p);
	json_decref(trials);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* The file metrics collector's updateStopRules: judged once, at the
 * start_step-th objective value, with the best value so far; minimizing it
 * stops a trial whose best is greater than the rule, maximizing one whose
 * best is less. */
static void test_median_verdict(void **state)
{
	(void)state;
	json_t *opt = median_opt("Minimize"), *p = json_array();
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *t = kft_hpo_trial_new("t", p, "2.0", "now");
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "9"), 0);
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "3"), 1); /* best 3 > 2 */
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "5"), 0); /* judged once only */
	json_decref(t);
	t = kft_hpo_trial_new("t", p, "2.0", "now");
	kft_hpo_observe(&s, t, "loss", "1.5");
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "9"), 0); /* best 1.5 <= 2 */
	json_decref(t);
	t = kft_hpo_trial_new("t", p, NULL, "now"); /* started before any rule */
	kft_hpo_observe(&s, t, "loss", "9");
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "9"), 0);
	json_decref(t);
	kft_hpo_spec_free(&s);
	json_decref(opt);

	opt = median_opt("Maximize");
	parse_ok(opt, &s);
	t = kft_hpo_trial_new("t", p, "2.0", "now");
	kft_hpo_observe(&s, t, "loss", "1");
	assert_int_equal(kft_hpo_observe(&s, t, "loss", "1.9"), 1); /* best 1.9 < 2 */
	json_decref(t);
	json_decref(p);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* ---- the job ------------------------------------------------------------------- */

static json_t *status_with(const char *const *states, size_t n)
{
	json_t *trials = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(trials,
		                      json_pack("{s:s, s:s}", "name", "t", "state", states[i]));
	return json_pack("{s:o}", "trials", trials);
}

/* Katib's UpdateExperimentStatusCondition: the failure limit first
 * (Failed and MetricsUnavailable count; a limit of 0 still needs one
 * failure), then finished trials against numTrials; otherwise fill the
 * parallel slots without passing numTrials. */
static void test_plan(void **state)
{
	(void)state;
	json_t *opt = default_opt(); /* numTrials 20, parallelTrials 2 */
	kft_hpo_spec s;
	kft_hpo_plan plan;
	parse_ok(opt, &s);
	json_t *st = status_with(NULL, 0);
	kft_hpo_plan_next(&s, st, &plan);
	assert_null(plan.finish);
	assert_int_equal(plan.create, 2);
	json_decref(st);

	const char *one[] = {KFT_HPO_RUNNING, KFT_HPO_SUCCEEDED};
	st = status_with(one, 2);
	kft_hpo_plan_next(&s, st, &plan);
	assert_int_equal(plan.create, 1);
	json_decref(st);

	s.max_failed = 0;
	const char *fine[] = {KFT_HPO_SUCCEEDED, KFT_HPO_EARLY_STOPPED};
	st = status_with(fine, 2);
	kft_hpo_plan_next(&s, st, &plan);
	assert_null(plan.finish); /* no failure yet */
	json_decref(st);
	s.max_failed = 2;
	const char *bad[] = {KFT_HPO_FAILED, KFT_HPO_UNAVAILABLE, KFT_HPO_RUNNING};
	st = status_with(bad, 3);
	kft_hpo_plan_next(&s, st, &plan);
	assert_string_equal(plan.finish, "Failed");
	assert_string_equal(plan.reason, "MaxFailedTrialsReached");
	json_decref(st);

	s.max_failed = -1;
	s.num_trials = 3;
	const char *all[] = {KFT_HPO_SUCCEEDED, KFT_HPO_FAILED, KFT_HPO_EARLY_STOPPED};
	st = status_with(all, 3);
	kft_hpo_plan_next(&s, st, &plan);
	assert_string_equal(plan.finish, "Complete");
	assert_string_equal(plan.reason, "MaxTrialsReached");
	json_decref(st);
	const char *last[] = {KFT_HPO_SUCCEEDED, KFT_HPO_FAILED, KFT_HPO_RUNNING};
	st = status_with(last, 3);
	kft_hpo_plan_next(&s, st, &plan);
	assert_null(plan.finish);
	assert_int_equal(plan.create, 0); /* all three started */
	json_decref(st);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

static json_t *reported(const kft_hpo_spec *s, const char *name, const char *const *vals, size_t n)
{
	json_t *p = json_pack("[{s:s, s:s}]", "name", "lr", "value", name);
	json_t *t = kft_hpo_trial_new(name, p, NULL, "now");
	for (size_t i = 0; i < n; i++)
		kft_hpo_observe(s, t, "loss", vals[i]);
	json_decref(p);
	return t;
}

/* Katib's updateTrialsSummary: the objective by strategy (min when
 * minimizing, max when maximizing), first strictly best wins, a value
 * that is no number makes its trial the best for now; the result is
 * upstream's (trainJobName, parameters). */
static void test_best(void **state)
{
	(void)state;
	json_t *opt = default_opt();
	kft_hpo_spec s;
	parse_ok(opt, &s);
	const char *a[] = {"0.9", "0.5"}, *b[] = {"0.5"}, *c[] = {"0.7", "0.2", "0.8"};
	json_t *st = json_pack("{s:[o, o, o]}", "trials", reported(&s, "a", a, 2),
	                       reported(&s, "b", b, 1), reported(&s, "c", c, 3));
	assert_int_equal(kft_hpo_best(&s, st), 2); /* c's min 0.2 */
	assert_int_equal(kft_hpo_set_result(&s, st), 0);
	expect_json(json_object_get(st, "result"),
	            "{\"trainJobName\": \"c\", \"parameters\": [{\"name\": \"lr\", \"value\": "
	            "\"c\"}]}");
	s.maximize = true;
	assert_int_equal(kft_hpo_best(&s, st), 0); /* a's max 0.9 */
	s.maximize = false;
	const char *d[] = {"x"};
	json_array_append_new(json_object_get(st, "trials"), reported(&s, "d", d, 1));
	assert_int_equal(kft_hpo_best(&s, st), 3);
	json_decref(st);
	st = json_pack("{s:[], s:{s:s}}", "trials", "result", "trainJobName", "gone");
	kft_hpo_set_result(&s, st);
	assert_null(json_object_get(st, "result"));
	json_decref(st);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* A trial's end: complete with the objective reported is Succeeded,
 * without it MetricsUnavailable (Katib's trial controller). */
static void test_trial_end(void **state)
{
	(void)state;
	json_t *opt = default_opt(), *p = json_array();
	kft_hpo_spec s;
	parse_ok(opt, &s);
	json_t *t = kft_hpo_trial_new("t", p, NULL, "now");
	kft_hpo_trial_end(&s, t, KFT_HPO_JOB_COMPLETE, NULL, "later");
	assert_string_equal(json_string_value(json_object_get(t, "state")), "MetricsUnavailable");
	assert_string_equal(json_string_value(json_object_get(t, "message")),
	                    "Metrics are not available");
	json_decref(t);
	t = kft_hpo_trial_new("t", p, NULL, "now");
	kft_hpo_observe(&s, t, "loss", "1");
	kft_hpo_trial_end(&s, t, KFT_HPO_JOB_COMPLETE, NULL, "later");
	assert_string_equal(json_string_value(json_object_get(t, "state")), "Succeeded");
	assert_string_equal(json_string_value(json_object_get(t, "completionTimestamp")), "later");
	json_decref(t);
	json_decref(p);
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

/* ---- trials' TrainJobs ----------------------------------------------------------- */

/* Names are deterministic and fit a DNS label. */
static void test_trial_name(void **state)
{
	(void)state;
	char *n = kft_hpo_trial_name("tune", 0);
	assert_string_equal(n, "tune-1");
	free(n);
	char long_name[80];
	memset(long_name, 'a', 70);
	long_name[70] = '\0';
	n = kft_hpo_trial_name(long_name, 11);
	assert_int_equal(strlen(n), 63);
	assert_string_equal(n + 60, "-12");
	free(n);
}

/* The SDK's func_args placeholders replaced as Katib replaces them, the
 * KEP's KUBEFLOW_TRAINER_OPT_<NAME> added, the trial labelled and its
 * parameters annotated. */
static void test_trial_job(void **state)
{
	(void)state;
	json_t *opt = default_opt(), *job = NULL;
	kft_hpo_spec s;
	kft_error err = {0};
	parse_ok(opt, &s);
	json_t *p = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "lr", "value", "0.01", "name",
	                      "bs", "value", "32");
	assert_int_equal(kft_hpo_check_placeholders(&s, &err), 0);
	assert_int_equal(kft_hpo_trial_job(&s, "tune-3", 2, p, &job, &err), 0);
	expect_json(job,
	            "{\"apiVersion\": \"trainer.kubeflow.org/v1alpha1\", \"kind\": "
	            "\"TrainJob\", \"metadata\": {\"name\": \"tune-3\", \"namespace\": \"ns1\", "
	            "\"labels\": {\"optimizer.kftrainer.dev/optimization-job\": \"tune\", "
	            "\"optimizer.kftrainer.dev/trial\": \"2\"}, \"annotations\": "
	            "{\"optimizer.kftrainer.dev/parameters\": "
	            "\"[{\\\"name\\\":\\\"lr\\\",\\\"value\\\":\\\"0.01\\\"},{\\\"name\\\":"
	            "\\\"bs\\\",\\\"value\\\":\\\"32\\\"}]\"}}, \"spec\": {\"runtimeRef\": "
	            "{\"name\": \"torch-distributed\"}, \"trainer\": {\"command\": [\"python\", "
	            "\"-c\", \"train(**{'lr': '0.01', 'bs': '32'})\"], \"env\": [{\"name\": "
	            "\"KUBEFLOW_TRAINER_OPT_LR\", \"value\": \"0.01\"}, {\"name\": "
	            "\"KUBEFLOW_TRAINER_OPT_BS\", \"value\": \"32\"}]}}}");
	json_decref(job);
	json_decref(p);
	kft_hpo_spec_free(&s);
	json_decref(opt);

	/* a placeholder naming no parameter is refused with its field path */
	opt = opt_job(
	        "", "Minimize", 2, 1, "{\"random\": {}}",
	        "[{\"name\": \"lr\", \"searchSpace\": {\"uniform\": {\"min\": \"0\", \"max\": "
	        "\"1\"}}}]");
	parse_ok(opt, &s);
	assert_int_equal(kft_hpo_check_placeholders(&s, &err), KFT_EINVAL);
	assert_string_equal(err.message,
	                    "spec.trainJobTemplate.spec.trainer.command[2]: Invalid value: "
	                    "\"${trialParameters.bs}\": names no parameter of spec.parameters");
	kft_hpo_spec_free(&s);
	json_decref(opt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spec_defaults),
	        cmocka_unit_test(test_spec_annotations),
	        cmocka_unit_test(test_spec_refusals),
	        cmocka_unit_test(test_random_reproducible),
	        cmocka_unit_test(test_random_distributions),
	        cmocka_unit_test(test_format_double),
	        cmocka_unit_test(test_grid),
	        cmocka_unit_test(test_tpe),
	        cmocka_unit_test(test_stdout_filter),
	        cmocka_unit_test(test_observe),
	        cmocka_unit_test(test_median_rule),
	        cmocka_unit_test(test_median_verdict),
	        cmocka_unit_test(test_plan),
	        cmocka_unit_test(test_best),
	        cmocka_unit_test(test_trial_end),
	        cmocka_unit_test(test_trial_name),
	        cmocka_unit_test(test_trial_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
