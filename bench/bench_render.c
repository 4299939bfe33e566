/*
 * bench_render.c - the render pipeline, in process: median and spread of one
 * kft_framework_build (RuntimeInfo, every plugin, the objects) for
 *
 *   - a 4-node torch TrainJob on torch-distributed, and
 *   - a 16-node MPI TrainJob on deepspeed-distributed (SSH key included),
 *
 * plus the MPI SSH key generation alone (ECDSA P-521 with OpenSSL), since it
 * dominates the MPI figure, and kft_object_check (what `validate` and the
 * admission webhooks run) over two large objects: a TrainingRuntime with
 * 20,000 containers and a TrainJob with 50,000 env entries, whose list-map
 * duplicate checks were quadratic (8.8 s and 52 s before issue 24). Process start, decoding and
 * printing are outside the timed region. Prints figures; never passes or fails on time.
 *
 *   build/bench/bench_render [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kftrainer/decode.h"
#include "kftrainer/framework.h"
#include "kftrainer/object.h"
#include "util/sshkey.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(const char *what, double *samples, int n)
{
	qsort(samples, (size_t)n, sizeof(double), cmp_double);
	printf("%-44s median %9.1f us   p10 %9.1f us   p90 %9.1f us   (n=%d)\n", what,
	       samples[n / 2], samples[n / 10], samples[(n * 9) / 10], n);
}

static json_t *load_one(const char *path, const char *kind)
{
	kft_doc_list docs = {0};
	kft_error err;
	if (kft_decode_file(path, &docs, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		exit(2);
	}
	json_t *found = NULL;
	for (size_t i = 0; i < docs.count && !found; i++) {
		const char *k = json_string_value(json_object_get(docs.items[i].root, "kind"));
		if (k && strcmp(k, kind) == 0)
			found = json_incref(docs.items[i].root);
	}
	kft_doc_list_free(&docs);
	if (!found) {
		fprintf(stderr, "%s: no %s\n", path, kind);
		exit(2);
	}
	return found;
}

static json_t *checked(json_t *obj)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_object_check(kft_schema_builtin(NULL), obj, NULL, &errs, NULL);
	if (errs.count) {
		char *line = kft_field_error_format(&errs.items[0]);
		fprintf(stderr, "invalid bench input: %s\n", line);
		exit(2);
	}
	kft_field_errors_free(&errs);
	return obj;
}

static json_t *trainjob(const char *runtime, int nodes)
{
	json_t *job =
	        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}, s:{s:i, s:[s,s]}}}", "apiVersion",
	                  "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                  "bench", "namespace", "default", "spec", "runtimeRef", "name", runtime,
	                  "trainer", "numNodes", nodes, "command", "python", "train.py");
	return checked(job);
}

static void bench_build(const kft_framework *fw, const char *what, const char *runtime_file,
                        int nodes, int iters)
{
	json_t *runtime = checked(load_one(runtime_file, "ClusterTrainingRuntime"));
	json_t *job = trainjob(
	        json_string_value(json_object_get(json_object_get(runtime, "metadata"), "name")),
	        nodes);
	double *t = calloc((size_t)iters, sizeof(double));
	for (int i = 0; i < iters; i++) {
		json_t *objects = NULL;
		kft_error err;
		double t0 = now_us();
		int rc = kft_framework_build(fw, NULL, job, runtime, &objects, &err);
		t[i] = now_us() - t0;
		if (rc != 0) {
			fprintf(stderr, "%s: %s\n", what, err.message);
			exit(1);
		}
		json_decref(objects);
	}
	report(what, t, iters);
	free(t);
	json_decref(job);
	json_decref(runtime);
}

static void bench_sshkey(int iters)
{
	double *t = calloc((size_t)iters, sizeof(double));
	for (int i = 0; i < iters; i++) {
		kft_sshkey key;
		kft_error err;
		double t0 = now_us();
		if (kft_sshkey_generate(&key, &err) != 0) {
			fprintf(stderr, "sshkey: %s\n", err.message);
			exit(1);
		}
		t[i] = now_us() - t0;
		kft_sshkey_free(&key);
	}
	report("MPI SSH key pair (ECDSA P-521)", t, iters);
	free(t);
}

/* A TrainingRuntime whose one replicated job has n containers. */
static json_t *runtime_with_containers(int n)
{
	json_t *containers = json_array();
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "c%d", i);
		json_array_append_new(containers,
		                      json_pack("{s:s, s:s}", "name", name, "image", "busybox"));
	}
	return json_pack(
	        "{s:s, s:s, s:{s:s, s:s}, s:{s:{s:i}, s:{s:{s:[{s:s, s:{s:{s:{s:{s:o}}}}}]}}}}",
	        "apiVersion", "trainer.kubeflow.org/v1alpha1", "kind", "TrainingRuntime",
	        "metadata", "name", "bench", "namespace", "default", "spec", "mlPolicy", "numNodes",
	        1, "template", "spec", "replicatedJobs", "name", "node", "template", "spec",
	        "template", "spec", "containers", containers);
}

/* A TrainJob with n entries in spec.trainer.env (more than its maxItems: the
 * API server checks every entry all the same). */
static json_t *trainjob_with_env(int n)
{
	json_t *env = json_array();
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "E%d", i);
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", "x"));
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s}, s:{s:o}}}", "apiVersion",
	                 "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                 "bench", "namespace", "default", "spec", "runtimeRef", "name",
	                 "torch-distributed", "trainer", "env", env);
}

static void bench_check(const char *what, json_t *obj, int iters)
{
	const kft_schema *schema = kft_schema_builtin(NULL);
	double *t = calloc((size_t)iters, sizeof(double));
	for (int i = 0; i < iters; i++) {
		json_t *copy = json_deep_copy(obj); /* defaults are written in place */
		kft_field_errors errs;
		kft_field_errors_init(&errs);
		double t0 = now_us();
		kft_object_check(schema, copy, NULL, &errs, NULL);
		t[i] = now_us() - t0;
		kft_field_errors_free(&errs);
		json_decref(copy);
	}
	report(what, t, iters);
	free(t);
	json_decref(obj);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	if (iters < 10)
		iters = 10;
	kft_framework *fw;
	kft_error err;
	if (kft_framework_new(0, &fw, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	printf("kftrainer render pipeline, in process, %d iterations each\n", iters);
	bench_build(fw, "torch-distributed, 4 nodes", "manifests/runtimes/torch-distributed.yaml",
	            4, iters);
	bench_build(fw, "deepspeed-distributed (MPI), 16 nodes",
	            "manifests/runtimes/deepspeed-distributed.yaml", 16, iters / 10 + 10);
	bench_sshkey(iters / 10 + 10);
	bench_check("validate: TrainingRuntime, 20,000 containers", runtime_with_containers(20000),
	            iters / 200 + 5);
	bench_check("validate: TrainJob, 50,000 env entries", trainjob_with_env(50000),
	            iters / 200 + 5);
	kft_framework_free(fw);
	return 0;
}
