/*
 * optimize.c - `kftrainer optimize -f OPTIMIZATIONJOB.yaml`: start a
 * hyperparameter search on the local engine.
 *
 * The OptimizationJob is checked as `validate` checks it (the schema,
 * upstream's CEL rules, kftrainer's annotations and placeholders), the
 * runtime its trial template references is resolved and the plugins'
 * CustomValidation run on the template, as `train` would for a TrainJob;
 * then the first trial's TrainJob is built and checked too, so a search
 * whose trials could never run is refused before anything starts. The
 * search then runs under its own detached supervisor (src/local/
 * optimizer.h): this command returns at once, or with --follow prints the
 * search's Events until it ends and exits with its outcome.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jobinput.h"
#include "jobs.h"
#include "framework/conditions.h"
#include "local/optimizer.h"

typedef struct opt_args {
	kft_paths files, runtimes, plugins;
	const char *ns;
	bool follow, job_workdir;
} opt_args;

static void optimize_usage(FILE *out)
{
	fputs("Usage: kftrainer optimize -f OPTIMIZATIONJOB.yaml [-r RUNTIMES] [-n NS]\n"
	      "                          [--job-workdir] [--plugin PATH] [--follow]\n\n"
	      "Run a hyperparameter search on this machine: an OptimizationJob\n"
	      "(trainer.kubeflow.org/v1alpha1) whose trials are TrainJobs of the local engine,\n"
	      "each with its values put into the template (\"${trialParameters.NAME}\" in any\n"
	      "string, and KUBEFLOW_TRAINER_OPT_<NAME> in the trainer's env), at most\n"
	      "parallelTrials at once; a trial that asks for more GPUs than are free waits.\n"
	      "The search runs in the background under its own supervisor, so this command\n"
	      "may exit: it prints \"optimizationjob.trainer.kubeflow.org/NAME created\".\n\n"
	      "Metrics are read as Katib's StdOut collector reads them (name=value in the\n"
	      "output of node 0) and from the reports the training sends to the status\n"
	      "endpoint (the Kubeflow SDK's update_trainjob_status). docs/hpo.md has the\n"
	      "algorithms (random, grid, TPE), median stopping and the annotations.\n\n"
	      "Options:\n"
	      "  -f, --filename PATH  OptimizationJob file, directory or - (repeatable)\n"
	      "  -r, --runtimes PATH  runtime file or directory (repeatable); default as train\n"
	      "  -n, --namespace NS   namespace of the search and its trials (default: default)\n"
	      "      --job-workdir    each trial in a fresh working directory of its own\n"
	      "      --plugin PATH    load an out-of-tree plugin (repeatable); default as train\n"
	      "      --follow         print the search's Events as they happen, until it ends;\n"
	      "                       exit with its outcome (Ctrl-C stops following only)\n"
	      "  -h, --help           this help\n\n"
	      "See it with: kftrainer get optimizationjob NAME; a trial's logs with: kftrainer\n"
	      "logs optimizationjob/NAME [--trial TRIAL]; delete it, and its trials, with:\n"
	      "kftrainer delete optimizationjob NAME.\n\n"
	      "Exit status: 0 started (with --follow: Complete); 1 invalid OptimizationJob,\n"
	      "unknown runtime, one of that name exists, or (--follow) the search failed;\n"
	      "2 bad usage, unreadable input or a plugin that cannot be loaded.\n",
	      out);
}

static int parse_args(int argc, char **argv, opt_args *a)
{
	static const struct option opts[] = {
	        {"filename", required_argument, NULL, 'f'},
	        {"runtimes", required_argument, NULL, 'r'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"job-workdir", no_argument, NULL, 'W'},
	        {"plugin", required_argument, NULL, 'P'},
	        {"follow", no_argument, NULL, 'F'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c, rc = 0;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "f:r:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': rc = kft_paths_add(&a->files, optarg); break;
		case 'r': rc = kft_paths_add(&a->runtimes, optarg); break;
		case 'P': rc = kft_paths_add(&a->plugins, optarg); break;
		case 'n': a->ns = optarg; break;
		case 'W': a->job_workdir = true; break;
		case 'F': a->follow = true; break;
		case 'h': optimize_usage(stdout); return -1;
		default: optimize_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	if (rc)
		return KFT_EXIT_INPUT;
	if (optind != argc || !a->files.count) {
		kft_cli_error("optimize: give -f OPTIMIZATIONJOB.yaml");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

/* Reads and checks everything; in->optjobs then holds the searches. */
static int gather(opt_args *a, kft_jobinput *in)
{
	in->ns = a->ns;
	in->generate_names = true;
	in->defer_runtimes = true;
	int rc = kft_jobinput_default_runtimes("optimize", &a->runtimes);
	if (rc == 0)
		rc = kft_jobinput_read(in, &a->files, &a->runtimes);
	if (rc == 0 && json_array_size(in->jobs)) {
		kft_cli_error("optimize: the input holds TrainJobs; run them with kftrainer train");
		rc = KFT_EXIT_USAGE;
	} else if (rc == 0 && json_array_size(in->optjobs) == 0) {
		kft_cli_error("optimize: no OptimizationJob in the input");
		rc = KFT_EXIT_INVALID;
	} else if (rc == 0 && a->follow && json_array_size(in->optjobs) != 1) {
		kft_cli_error("optimize: --follow takes one OptimizationJob; the input has %zu",
		              json_array_size(in->optjobs));
		rc = KFT_EXIT_USAGE;
	}
	return rc;
}

/* The runtime of each search's trial template, before anything starts. */
static int resolve_all(kft_jobinput *in, const kft_framework *fw, json_t *resolved)
{
	int rc = 0;
	size_t i;
	const json_t *rec;
	json_array_foreach(in->optjobs, i, rec)
	{
		json_t *tmpl = kft_jobinput_template_record(rec);
		const json_t *rt = NULL;
		if (tmpl && kft_jobinput_check_runtimes(in, tmpl) == 0)
			rt = kft_jobinput_resolve(in, fw, NULL, tmpl);
		json_decref(tmpl);
		if (!rt)
			rc = KFT_EXIT_INVALID;
		else
			json_array_append(resolved, (json_t *)rt);
	}
	return rc;
}

/* ---- --follow ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void print_event(const json_t *ev)
{
	printf("%s %s: %s\n", json_string_value(json_object_get(ev, "type")),
	       json_string_value(json_object_get(ev, "reason")),
	       json_string_value(json_object_get(ev, "message")));
	fflush(stdout);
}

/* Prints the search's new Events every 200 ms until it ends. */
static int follow(kft_local *l, const char *ns, const char *name)
{
	size_t shown = 0;
	struct sigaction sa = {.sa_handler = on_stop};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		json_t *opt = NULL, *events = NULL;
		kft_error err;
		if (kft_local_optimization_get(l, ns, name, &opt, &err) != 0 ||
		    kft_local_optimization_events(l, ns, name, &events, &err) != 0) {
			json_decref(opt);
			kft_cli_error("%s", err.message);
			return KFT_EXIT_FAILED;
		}
		const json_t *items = json_object_get(events, "items");
		for (; shown < json_array_size(items); shown++)
			print_event(json_array_get(items, shown));
		const json_t *st = json_object_get(opt, "status");
		int done = kft_condition_is_true(st, KFT_CONDITION_COMPLETE) ? KFT_EXIT_OK
		           : kft_condition_is_true(st, KFT_CONDITION_FAILED) ? KFT_EXIT_FAILED
		                                                             : -1;
		json_decref(opt);
		json_decref(events);
		if (done >= 0)
			return done;
		if (stop_signal) {
			kft_cli_error("stopped following; the search keeps running (kftrainer get "
			              "optimizationjob %s)",
			              name);
			return 128 + stop_signal;
		}
		usleep(200 * 1000);
	}
}

/* ---- the verb -------------------------------------------------------------------- */

static int submit_all(kft_local *l, const kft_framework *fw, const kft_jobinput *in,
                      const json_t *resolved, const kft_optimize_opts *o, char **first,
                      const char **first_ns)
{
	size_t i;
	const json_t *rec;
	json_array_foreach(in->optjobs, i, rec)
	{
		char *name = NULL;
		kft_error err;
		if (kft_local_optimize(l, fw, json_object_get(rec, "object"),
		                       json_array_get(resolved, i), o, &name, &err) != 0) {
			kft_cli_error("%s", err.message);
			return err.code == KFT_EINVAL ? KFT_EXIT_INVALID : KFT_EXIT_FAILED;
		}
		printf("optimizationjob.trainer.kubeflow.org/%s created\n", name);
		fflush(stdout);
		if (i == 0) {
			*first = name;
			*first_ns = kft_cli_job_ns(json_object_get(rec, "object"));
		} else {
			free(name);
		}
	}
	return 0;
}

static int start(opt_args *a, kft_jobinput *in)
{
	kft_framework *fw = NULL;
	kft_local *l = NULL;
	json_t *resolved = json_array(), *recorded = json_array();
	char *name = NULL;
	const char *ns = NULL;
	int rc = kft_jobinput_framework("optimize", KFT_LOCAL_FEATURES, &a->plugins, &fw, recorded);
	if (rc == 0)
		rc = resolve_all(in, fw, resolved);
	if (rc == 0)
		rc = kft_cli_open_local(&l);
	kft_optimize_opts o = {.job_workdir = a->job_workdir, .plugins = recorded};
	if (rc == 0)
		rc = submit_all(l, fw, in, resolved, &o, &name, &ns);
	if (rc == 0 && a->follow)
		rc = follow(l, ns, name);
	free(name);
	kft_local_close(l);
	kft_framework_free(fw);
	json_decref(resolved);
	json_decref(recorded);
	return rc;
}

static int run_optimize(int argc, char **argv)
{
	opt_args a = {0};
	kft_jobinput in;
	memset(&in, 0, sizeof(in));
	int rc = parse_args(argc, argv, &a);
	if (rc == 0)
		rc = kft_jobinput_init(&in, stderr);
	if (rc == 0)
		rc = gather(&a, &in);
	if (rc == 0)
		rc = start(&a, &in);
	kft_jobinput_free(&in);
	kft_paths_free(&a.files);
	kft_paths_free(&a.runtimes);
	kft_paths_free(&a.plugins);
	return rc < 0 ? KFT_EXIT_OK : rc;
}

const kft_verb kft_verb_optimize = {
        .name = "optimize",
        .summary = "run a hyperparameter search (OptimizationJob) on this machine",
        .run = run_optimize,
        .usage = optimize_usage,
};
