/*
 * runtimes.c - `kftrainer runtimes`: the runtimes `train` and `render` would
 * resolve against (same lookup: -r, $KFTRAINER_RUNTIMES, ./manifests/runtimes,
 * the installed ones), checked and defaulted as the API server would, shown
 * as a table:
 *
 *     NAME   FRAMEWORK   ML-POLICY   NODES   PROCS   IMAGE
 *
 * FRAMEWORK is the runtime's trainer.kubeflow.org/framework label; ML-POLICY
 * the framework block of spec.mlPolicy that plugins act on (torch, mpi, jax,
 * xgboost, flux) or "plain"; NODES and PROCS the policy's defaults a TrainJob
 * may override; IMAGE the trainer container's image. An invalid runtime is
 * reported (field errors on stderr) and left out, and the exit status is 1.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inputs.h"
#include "jobinput.h"
#include "kftrainer/constants.h"

static void runtimes_usage(FILE *out)
{
	fputs("Usage: kftrainer runtimes [-r RUNTIME.yaml|DIR ...] [-o wide|json|yaml|name]\n\n"
	      "List the TrainingRuntimes and ClusterTrainingRuntimes a TrainJob can reference,\n"
	      "with their framework and the defaults a TrainJob may override:\n\n"
	      "  NAME  FRAMEWORK  ML-POLICY  NODES  PROCS  IMAGE\n\n"
	      "FRAMEWORK is the trainer.kubeflow.org/framework label, ML-POLICY the framework\n"
	      "policy the plugins apply (torch, mpi, jax, xgboost, flux, or plain), NODES and\n"
	      "PROCS the policy's numNodes and numProcPerNode, IMAGE the trainer's image.\n\n"
	      "Options:\n"
	      "  -r, --runtimes PATH  runtime file or directory (repeatable); default:\n"
	      "                       $KFTRAINER_RUNTIMES, ./manifests/runtimes, BIN/../share/\n"
	      "                       kftrainer/runtimes, the checkout's for a build-tree\n"
	      "                       binary, or the installed runtimes\n"
	      "  -o, --output FORMAT  wide (adds KIND, NAMESPACE and STEPS), json or yaml (the\n"
	      "                       runtimes as defaulted, in a v1 List), name\n"
	      "  -h, --help           this help\n\n"
	      "Exit status: 0 listed; 1 some runtime is invalid (its field errors are printed\n"
	      "on stderr and it is left out); 2 bad usage or unreadable input.\n",
	      out);
}

static int parse_args(int argc, char **argv, kft_paths *paths, enum kft_cli_out_format *f)
{
	static const struct option opts[] = {
	        {"runtimes", required_argument, NULL, 'r'},
	        {"output", required_argument, NULL, 'o'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "r:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (kft_paths_add(paths, optarg) != 0)
				return KFT_EXIT_INPUT;
			break;
		case 'o':
			if (kft_cli_parse_format(optarg, f) != 0)
				return KFT_EXIT_USAGE;
			break;
		case 'h': runtimes_usage(stdout); return -1;
		default: runtimes_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		kft_cli_error("runtimes: unexpected argument \"%s\"", argv[optind]);
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static const char *or_else(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static const char *ml_policy(const json_t *policy)
{
	static const char *const known[] = {"torch", "mpi", "jax", "xgboost", "flux"};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (json_object_get(policy, known[i]))
			return known[i];
	return "plain";
}

/* A number or a string as text, into buf; "-" when absent. */
static const char *scalar(const json_t *v, char *buf, size_t size)
{
	if (json_is_integer(v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
	else
		snprintf(buf, size, "-");
	return buf;
}

/* The replicated job the trainer runs in: the one labelled as the trainer
 * ancestor step, else the one named "node". */
static const json_t *trainer_rjob(const json_t *runtime)
{
	const json_t *rjobs = json_object_get(
	        json_object_get(json_object_get(json_object_get(runtime, "spec"), "template"),
	                        "spec"),
	        "replicatedJobs");
	size_t i;
	const json_t *r, *named = NULL;
	json_array_foreach(rjobs, i, r)
	{
		const json_t *labels = json_object_get(
		        json_object_get(json_object_get(r, "template"), "metadata"), "labels");
		const char *step = json_string_value(json_object_get(labels, KFT_LABEL_ANCESTOR));
		if (step && strcmp(step, KFT_ANCESTOR_TRAINER) == 0)
			return r;
		if (!named &&
		    strcmp(or_else(json_string_value(json_object_get(r, "name")), ""), "node") == 0)
			named = r;
	}
	return named;
}

static const char *trainer_image(const json_t *runtime)
{
	const json_t *pod = json_object_get(
	        json_object_get(
	                json_object_get(json_object_get(trainer_rjob(runtime), "template"), "spec"),
	                "template"),
	        "spec");
	const json_t *containers = json_object_get(pod, "containers");
	size_t i;
	const json_t *c;
	json_array_foreach(containers, i, c)
	{
		if (strcmp(or_else(json_string_value(json_object_get(c, "name")), ""), "node") == 0)
			return json_string_value(json_object_get(c, "image"));
	}
	return json_string_value(json_object_get(json_array_get(containers, 0), "image"));
}

/* The replicated jobs' names, comma-separated, into buf. */
static const char *steps(const json_t *runtime, char *buf, size_t size)
{
	const json_t *rjobs = json_object_get(
	        json_object_get(json_object_get(json_object_get(runtime, "spec"), "template"),
	                        "spec"),
	        "replicatedJobs");
	size_t i, used = 0;
	const json_t *r;
	buf[0] = '\0';
	json_array_foreach(rjobs, i, r)
	{
		int w = snprintf(buf + used, size - used, "%s%s", i ? "," : "",
		                 or_else(json_string_value(json_object_get(r, "name")), "?"));
		if (w < 0 || (size_t)w >= size - used)
			break;
		used += (size_t)w;
	}
	return buf;
}

static void add_row(json_t *rows, const json_t *rt, int wide)
{
	const json_t *meta = json_object_get(rt, "metadata");
	const json_t *policy = json_object_get(json_object_get(rt, "spec"), "mlPolicy");
	const char *fw = ml_policy(policy);
	char nodes[32], procs[64], stepbuf[512];
	const char *kind = json_string_value(json_object_get(rt, "kind"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	int cluster = kind && strcmp(kind, "ClusterTrainingRuntime") == 0;
	const char *cells[] = {
	        json_string_value(json_object_get(meta, "name")),
	        or_else(json_string_value(json_object_get(json_object_get(meta, "labels"),
	                                                  "trainer.kubeflow.org/framework")),
	                "-"),
	        fw,
	        scalar(json_object_get(policy, "numNodes"), nodes, sizeof(nodes)),
	        scalar(json_object_get(json_object_get(policy, fw), "numProcPerNode"), procs,
	               sizeof(procs)),
	        or_else(trainer_image(rt), "-"),
	        kind,
	        cluster ? "-" : (ns ? ns : "default"),
	        steps(rt, stepbuf, sizeof(stepbuf)),
	};
	kft_cli_table_row(rows, wide ? 9 : 6, cells);
}

static int print_runtimes(const json_t *runtimes, enum kft_cli_out_format f)
{
	if (f == KFT_OUT_JSON || f == KFT_OUT_YAML)
		return kft_cli_print_list(runtimes, f == KFT_OUT_YAML);
	size_t i;
	const json_t *rt;
	if (f == KFT_OUT_NAME) {
		json_array_foreach(runtimes, i, rt)
		{
			const char *kind = json_string_value(json_object_get(rt, "kind"));
			printf("%s.trainer.kubeflow.org/%s\n",
			       strcmp(or_else(kind, ""), "TrainingRuntime") == 0
			               ? "trainingruntime"
			               : "clustertrainingruntime",
			       json_string_value(
			               json_object_get(json_object_get(rt, "metadata"), "name")));
		}
		return 0;
	}
	static const char *const header[] = {"NAME",  "FRAMEWORK", "ML-POLICY", "NODES", "PROCS",
	                                     "IMAGE", "KIND",      "NAMESPACE", "STEPS"};
	json_t *rows = json_array();
	kft_cli_table_row(rows, f == KFT_OUT_WIDE ? 9 : 6, header);
	json_array_foreach(runtimes, i, rt) add_row(rows, rt, f == KFT_OUT_WIDE);
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
	return 0;
}

static int run_runtimes(int argc, char **argv)
{
	kft_paths paths = {0};
	enum kft_cli_out_format f = KFT_OUT_TABLE;
	kft_jobinput in;
	memset(&in, 0, sizeof(in));
	int rc = parse_args(argc, argv, &paths, &f);
	if (rc == 0)
		rc = kft_jobinput_init(&in, stderr);
	if (rc == 0)
		rc = kft_jobinput_default_runtimes("runtimes", &paths);
	if (rc == 0)
		rc = kft_jobinput_read(&in, &paths, NULL);
	if (rc == 0 || rc == KFT_EXIT_INVALID) {
		if (json_array_size(in.runtimes) == 0 && f != KFT_OUT_JSON && f != KFT_OUT_YAML)
			fprintf(stderr, "No resources found\n");
		else if (print_runtimes(in.runtimes, f) != 0)
			rc = KFT_EXIT_FAILED;
	}
	kft_jobinput_free(&in);
	kft_paths_free(&paths);
	return rc < 0 ? KFT_EXIT_OK : rc;
}

const kft_verb kft_verb_runtimes = {
        .name = "runtimes",
        .summary = "list the runtimes TrainJobs can use, with their defaults",
        .run = run_runtimes,
        .usage = runtimes_usage,
};
