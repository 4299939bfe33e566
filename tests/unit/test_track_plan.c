/*
 * test_track_plan.c - the pure half of tracking (src/track/plan.c, dest.c):
 * what an MLflow run of a TrainJob says, the metrics of a report, the end
 * status, back-off, and export destinations.
 *
 * Upstream behaviour pinned: a report's shape is upstream v2.3.0's
 * TrainerStatus (metrics as name/value strings, progressPercentage,
 * estimatedRemainingSeconds), and Complete/Failed are upstream's condition
 * types; MLflow's rules (mlflow/utils/validation.py): a run's params are
 * written once, keys at most 250 characters, param values at most 6000,
 * RunStatus FINISHED/FAILED/KILLED, NaN sent as the string "NaN".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "track/track.h"

static json_t *trainjob(const char *annotations_json)
{
	json_t *tj = json_pack(
	        "{s:s, s:{s:s, s:s, s:s, s:{}}, s:{s:{s:s, s:s}, s:{s:i, s:s, s:[s, s, "
	        "s, s]}}}",
	        "kind", "TrainJob", "metadata", "name", "tune-1", "namespace", "team", "uid", "u-1",
	        "labels", "spec", "runtimeRef", "name", "torchtune-llama3.2-1b", "kind",
	        "ClusterTrainingRuntime", "trainer", "numNodes", 2, "image", "img:1", "args",
	        "epochs=2", "--lr=0.01", "positional", "-v");
	if (annotations_json)
		json_object_set_new(json_object_get(tj, "metadata"), "annotations",
		                    json_loads(annotations_json, 0, NULL));
	return tj;
}

static const char *kv(const json_t *list, const char *key)
{
	size_t i;
	const json_t *e;
	json_array_foreach(list, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "key")), key) == 0)
			return json_string_value(json_object_get(e, "value"));
	}
	return NULL;
}

static void test_run_of_trainjob(void **state)
{
	(void)state;
	json_t *tj = trainjob("{\"tracking.kftrainer.dev/params\": \"{\\\"lr\\\": 0.1, "
	                      "\\\"name\\\": \\\"x\\\"}\"}");
	kft_track_run r;
	kft_error err = {0};
	assert_int_equal(kft_track_run_of_trainjob(tj, "exp", &r, &err), 0);
	assert_string_equal(r.uid, "u-1");
	assert_string_equal(r.name, "tune-1");
	assert_string_equal(r.experiment, "exp");
	assert_null(r.parent);
	assert_false(r.log_artifacts);
	assert_string_equal(kv(r.tags, "kftrainer.uid"), "u-1");
	assert_string_equal(kv(r.tags, "kftrainer.namespace"), "team");
	assert_string_equal(kv(r.tags, "kftrainer.runtime"), "torchtune-llama3.2-1b");
	assert_string_equal(kv(r.params, "runtime"), "torchtune-llama3.2-1b");
	assert_string_equal(kv(r.params, "numNodes"), "2");
	assert_string_equal(kv(r.params, "image"), "img:1");
	/* torchtune's key=value overrides and --key=value flags: one each */
	assert_string_equal(kv(r.params, "epochs"), "2");
	assert_string_equal(kv(r.params, "args"), "[\"positional\",\"-v\"]");
	/* the annotation's members; the declared lr wins over --lr=0.01 (MLflow
	 * keeps one value per param) */
	assert_string_equal(kv(r.params, "name"), "x");
	assert_string_equal(kv(r.params, "lr"), "0.1");
	kft_track_run_free(&r);
	json_decref(tj);
}

static void test_experiment_and_opt_out(void **state)
{
	(void)state;
	json_t *tj = trainjob("{\"tracking.kftrainer.dev/experiment\": \"llm\", "
	                      "\"tracking.kftrainer.dev/log-artifacts\": \"true\"}");
	kft_track_run r;
	assert_int_equal(kft_track_run_of_trainjob(tj, "exp", &r, NULL), 0);
	assert_string_equal(r.experiment, "llm");
	assert_true(r.log_artifacts);
	kft_track_run_free(&r);
	json_decref(tj);
	tj = trainjob(NULL);
	assert_int_equal(kft_track_run_of_trainjob(tj, NULL, &r, NULL), 0);
	assert_string_equal(r.experiment, "Default");
	kft_track_run_free(&r);
	assert_true(kft_track_wanted(tj));
	json_decref(tj);
	tj = trainjob("{\"tracking.kftrainer.dev/enabled\": \"false\"}");
	assert_false(kft_track_wanted(tj));
	json_decref(tj);
}

static void test_run_refusals(void **state)
{
	(void)state;
	kft_track_run r;
	kft_error err = {0};
	json_t *tj = trainjob("{\"tracking.kftrainer.dev/params\": \"[1]\"}");
	assert_int_equal(kft_track_run_of_trainjob(tj, NULL, &r, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "metadata.annotations[tracking.kftrainer.dev/params]"));
	json_decref(tj);
	tj = trainjob(NULL);
	json_object_del(json_object_get(tj, "metadata"), "uid");
	assert_int_equal(kft_track_run_of_trainjob(tj, NULL, &r, &err), KFT_EINVAL);
	assert_string_equal(err.message, "metadata.uid: Required value");
	json_decref(tj);
}

static void test_long_values_cut(void **state)
{
	(void)state;
	char *big = malloc(KFT_TRACK_PARAM_MAX + 100), *ann = NULL;
	memset(big, 'a', KFT_TRACK_PARAM_MAX + 99);
	big[KFT_TRACK_PARAM_MAX + 99] = '\0';
	json_t *p = json_pack("{s:s}", "v", big);
	char *pj = json_dumps(p, JSON_COMPACT);
	json_t *a = json_pack("{s:s}", KFT_TRACK_ANN_PARAMS, pj);
	ann = json_dumps(a, JSON_COMPACT);
	json_t *tj = trainjob(ann);
	kft_track_run r;
	assert_int_equal(kft_track_run_of_trainjob(tj, NULL, &r, NULL), 0);
	assert_int_equal(strlen(kv(r.params, "v")), KFT_TRACK_PARAM_MAX);
	kft_track_run_free(&r);
	json_decref(tj);
	json_decref(a);
	json_decref(p);
	free(pj);
	free(ann);
	free(big);
}

/* A trial of hpo's search: its assignments are params, its search the
 * parent. */
static void test_trial(void **state)
{
	(void)state;
	json_t *tj = trainjob("{\"optimizer.kftrainer.dev/parameters\": "
	                      "\"[{\\\"name\\\":\\\"lr\\\",\\\"value\\\":\\\"0.3\\\"}]\"}");
	json_object_set_new(json_object_get(json_object_get(tj, "metadata"), "labels"),
	                    "optimizer.kftrainer.dev/optimization-job", json_string("tune"));
	json_object_set_new(json_object_get(json_object_get(tj, "metadata"), "labels"),
	                    "optimizer.kftrainer.dev/trial", json_string("0"));
	kft_track_run r;
	assert_int_equal(kft_track_run_of_trainjob(tj, NULL, &r, NULL), 0);
	assert_string_equal(r.parent, "search:team/tune");
	/* the trial's assignment wins over the same key from args */
	assert_string_equal(kv(r.params, "lr"), "0.3");
	assert_string_equal(kv(r.tags, "kftrainer.trial"), "0");
	kft_track_run_free(&r);
	json_decref(tj);

	json_t *opt = json_pack(
	        "{s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s, s:s}], s:i, s:i, s:{s:{}}, s:[{s:s, "
	        "s:{s:{s:s, s:s}}}]}}",
	        "kind", "OptimizationJob", "metadata", "name", "tune", "namespace", "team", "uid",
	        "o-1", "spec", "objectives", "metric", "loss", "direction", "Minimize", "numTrials",
	        4, "parallelTrials", 2, "searchAlgorithm", "random", "parameters", "name", "lr",
	        "searchSpace", "uniform", "min", "0.1", "max", "0.5");
	assert_int_equal(kft_track_run_of_search(opt, NULL, &r, NULL), 0);
	assert_string_equal(r.uid, "search:team/tune");
	assert_string_equal(kv(r.tags, "kftrainer.uid"), "search:team/tune");
	assert_string_equal(kv(r.tags, "kftrainer.optimizationjob.uid"), "o-1");
	assert_string_equal(kv(r.params, "objective"), "loss");
	assert_string_equal(kv(r.params, "numTrials"), "4");
	assert_string_equal(kv(r.params, "space.lr"),
	                    "{\"uniform\":{\"min\":\"0.1\",\"max\":\"0.5\"}}");
	kft_track_run_free(&r);
	json_decref(opt);
}

static void test_report_metrics(void **state)
{
	(void)state;
	json_t *ts = json_loads("{\"progressPercentage\": 40, \"estimatedRemainingSeconds\": 9,"
	                        " \"metrics\": [{\"name\":\"loss\",\"value\":\"1.25\"},"
	                        "{\"name\":\"step\",\"value\":\"120\"},"
	                        "{\"name\":\"note\",\"value\":\"warming up\"},"
	                        "{\"name\":\"gnorm\",\"value\":\"nan\"}]}",
	                        0, NULL);
	json_t *m = json_array();
	assert_int_equal(kft_track_report_metrics(ts, 5000, 7, m), 4);
	json_t *loss = json_array_get(m, 0);
	assert_string_equal(json_string_value(json_object_get(loss, "key")), "loss");
	assert_true(json_real_value(json_object_get(loss, "value")) == 1.25);
	assert_int_equal(json_integer_value(json_object_get(loss, "step")), 120); /* its own */
	assert_int_equal(json_integer_value(json_object_get(loss, "timestamp")), 5000);
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 1), "value")),
	                    "NaN");
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 2), "key")),
	                    "progressPercentage");
	json_decref(ts);
	json_array_clear(m);
	/* no step of its own: the report's place */
	ts = json_loads("{\"metrics\": [{\"name\":\"acc\",\"value\":\"0.5\"},"
	                "{\"name\":\"step\",\"value\":\"1.5\"}]}",
	                0, NULL);
	assert_int_equal(kft_track_report_metrics(ts, 1, 7, m), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(m, 0), "step")), 7);
	json_decref(ts);
	json_decref(m);
}

static void test_end_status(void **state)
{
	(void)state;
	json_t *tj = json_loads("{\"status\": {\"conditions\": [{\"type\":\"Complete\","
	                        "\"status\":\"True\"}]}}",
	                        0, NULL);
	assert_string_equal(kft_track_end_status(tj, false), "FINISHED");
	json_decref(tj);
	tj = json_loads(
	        "{\"status\": {\"conditions\": [{\"type\":\"Failed\",\"status\":\"True\"}]}}", 0,
	        NULL);
	assert_string_equal(kft_track_end_status(tj, true), "FAILED");
	json_decref(tj);
	tj = json_loads("{\"status\": {}}", 0, NULL);
	assert_null(kft_track_end_status(tj, false)); /* suspended or running: open */
	assert_string_equal(kft_track_end_status(tj, true), "KILLED");
	json_decref(tj);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(kft_track_backoff_ms(1, 60000, 1.0), 1000);
	assert_int_equal(kft_track_backoff_ms(1, 60000, 0.0), 750);
	assert_int_equal(kft_track_backoff_ms(3, 60000, 1.0), 4000);
	assert_int_equal(kft_track_backoff_ms(40, 60000, 1.0), 60000);
	assert_int_equal(kft_track_backoff_ms(40, 60000, 0.0), 45000);
}

static void test_dest(void **state)
{
	(void)state;
	kft_track_dest d;
	kft_error err = {0};
	assert_int_equal(kft_track_dest_parse("s3://models/team/llm/", &d, &err), 0);
	assert_int_equal(d.kind, KFT_DEST_S3);
	assert_string_equal(d.bucket, "models");
	assert_string_equal(d.path, "team/llm");
	char *key = kft_track_dest_key(&d, "adapter/model.safetensors");
	assert_string_equal(key, "team/llm/adapter/model.safetensors");
	free(key);
	kft_track_dest_free(&d);
	assert_int_equal(kft_track_dest_parse("s3://models", &d, &err), 0);
	key = kft_track_dest_key(&d, "a.bin");
	assert_string_equal(key, "a.bin");
	free(key);
	kft_track_dest_free(&d);
	assert_int_equal(kft_track_dest_parse("file:///srv/models/", &d, &err), 0);
	assert_int_equal(d.kind, KFT_DEST_FILE);
	assert_string_equal(d.path, "/srv/models");
	kft_track_dest_free(&d);
	assert_int_equal(kft_track_dest_parse("models:/llama tuned", &d, &err), 0);
	assert_int_equal(d.kind, KFT_DEST_MLFLOW);
	assert_string_equal(d.path, "llama tuned");
	kft_track_dest_free(&d);

	static const char *const bad[] = {"",
	                                  "gs://b/x",
	                                  "s3://B/x",
	                                  "s3://ab/x",
	                                  "s3://b/../x",
	                                  "file://rel/x",
	                                  "file:///",
	                                  "file:///a/../b",
	                                  "models:/",
	                                  "models:/a/1",
	                                  "s3://bucket//x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kft_track_dest_parse(bad[i], &d, &err), KFT_EINVAL);
		assert_non_null(strstr(err.message,
		                       "metadata.annotations[tracking.kftrainer.dev/export-to]"));
	}
}

/* The export Job on a cluster: the trainer's first node's mounts, JobSet
 * KEP-572's claim names (CLAIM-JOBSET shared, CLAIM-JOBSET-RJOB-0-0 per pod),
 * kftrainer-export's arguments, the credentials Secret, owned by the
 * TrainJob; and what its status says. */
static void test_export_job(void **state)
{
	(void)state;
	json_t *tj = trainjob("{\"tracking.kftrainer.dev/export-to\": \"s3://models/x\", "
	                      "\"tracking.kftrainer.dev/export-secret\": \"s3-creds\"}");
	json_t *js = json_loads(
	        "{\"metadata\": {\"name\": \"tune-1\"}, \"spec\": {"
	        "\"volumeClaimPolicies\": [{\"templates\": [{\"metadata\": {\"name\": "
	        "\"initializer\"}}]}, {\"targetReplicatedJobs\": [\"node\"], \"templates\": "
	        "[{\"metadata\": {\"name\": \"ckpt\"}}]}, {\"targetReplicatedJobs\": "
	        "[\"other\"], \"templates\": [{\"metadata\": {\"name\": \"skip\"}}]}],"
	        "\"replicatedJobs\": [{\"name\": \"node\", \"template\": {\"metadata\": "
	        "{\"labels\": {\"trainer.kubeflow.org/trainjob-ancestor-step\": \"trainer\"}}, "
	        "\"spec\": {\"template\": {\"spec\": {\"volumes\": [{\"name\": \"cfg\", "
	        "\"configMap\": {\"name\": \"c\"}}], \"containers\": [{\"name\": \"node\", "
	        "\"volumeMounts\": [{\"name\": \"initializer\", \"mountPath\": "
	        "\"/workspace\"}]}]}}}}}]}}",
	        0, NULL);
	assert_non_null(js);
	kft_track_export_cfg cfg = {.image = "reg/kftrainer:1",
	                            .tracking_uri = "http://mlflow:5000"};
	json_t *job = NULL;
	kft_error err = {0};
	assert_int_equal(kft_track_export_job(tj, js, &cfg, &job, &err), 0);
	const json_t *meta = json_object_get(job, "metadata");
	assert_string_equal(json_string_value(json_object_get(meta, "name")),
	                    "tune-1-model-export");
	const json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
	assert_string_equal(json_string_value(json_object_get(owner, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(owner, "controller")));
	const json_t *pod =
	        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
	const json_t *vols = json_object_get(pod, "volumes");
	assert_int_equal(json_array_size(vols), 3);
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_array_get(vols, 1), "persistentVolumeClaim"),
	                "claimName")),
	        "initializer-tune-1");
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_array_get(vols, 2), "persistentVolumeClaim"),
	                "claimName")),
	        "ckpt-tune-1-node-0-0");
	const json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "image")), "reg/kftrainer:1");
	char *args = json_dumps(json_object_get(c, "args"), JSON_COMPACT);
	assert_string_equal(args, "[\"--from\",\"/workspace/output\",\"--to\",\"s3://models/x\"]");
	free(args);
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_array_get(json_object_get(c, "envFrom"), 0),
	                                "secretRef"),
	                "name")),
	        "s3-creds");
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_array_get(json_object_get(c, "volumeMounts"), 0), "mountPath")),
	        "/workspace");
	json_t *status = json_loads("{\"status\": {\"conditions\": [{\"type\": \"Failed\", "
	                            "\"status\": \"True\", \"message\": \"backoff\"}]}}",
	                            0, NULL);
	kft_track_export_state st;
	assert_int_equal(kft_track_export_observe(tj, status, "s3 s3://models/x/a: HTTP 403", &st),
	                 0);
	assert_true(st.done);
	assert_string_equal(st.reason, "ExportFailed");
	assert_string_equal(st.message, "s3 s3://models/x/a: HTTP 403");
	free(st.message);
	assert_int_equal(kft_track_export_observe(tj, NULL, NULL, &st), 0);
	assert_false(st.done);
	assert_string_equal(st.status, "Unknown");
	assert_string_equal(st.message, "exporting /workspace/output to s3://models/x");
	free(st.message);
	json_decref(status);
	json_decref(job);
	json_decref(js);
	json_decref(tj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_run_of_trainjob),
	        cmocka_unit_test(test_experiment_and_opt_out),
	        cmocka_unit_test(test_run_refusals),
	        cmocka_unit_test(test_long_values_cut),
	        cmocka_unit_test(test_trial),
	        cmocka_unit_test(test_report_metrics),
	        cmocka_unit_test(test_end_status),
	        cmocka_unit_test(test_backoff),
	        cmocka_unit_test(test_dest),
	        cmocka_unit_test(test_export_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
