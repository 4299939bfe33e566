/*
 * logs.c - `kftrainer logs NAME`: a job's pod logs, from the files its
 * processes write (see logstream.h for the prefix format and how following
 * ends). Like `kubectl logs`, it prints what exists and exits, or with -f
 * keeps printing until the job finishes; unlike it, one command covers every
 * pod of the job.
 */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "logstream.h"
#include "optjobs.h"

typedef struct logs_args {
	kft_logstream_opts o;
	const char *optjob; /* logs optimizationjob/NAME: the search */
	const char *trial;  /* --trial */
	char *picked;       /* the trial TrainJob picked (malloc'd) */
} logs_args;

static void logs_usage(FILE *out)
{
	fputs("Usage: kftrainer logs NAME [-f] [--node N] [--step STEP] [--prefix] [-n "
	      "NAMESPACE]\n"
	      "       kftrainer logs optimizationjob/NAME [--trial TRIAL] [options as above]\n\n"
	      "Print the logs of a TrainJob's pods: every pod by default, initializers first,\n"
	      "each line prefixed by its pod as [STEP-INDEX] (\"[node-1] loss 0.3\") when more\n"
	      "than one pod is shown. INDEX is the node's rank (PET_NODE_RANK) for trainer "
	      "nodes.\n\n"
	      "Options:\n"
	      "  -f, --follow         keep printing as the logs grow, until the job finishes\n"
	      "                       (or is suspended or deleted), then print what is left;\n"
	      "                       on a terminal, the initializers' download progress\n"
	      "                       lines are drawn as one bar redrawn in place\n"
	      "      --node N         only trainer node N (the \"node\" step unless --step says)\n"
	      "      --step STEP      only this step's pods: dataset-initializer,\n"
	      "                       model-initializer, node, launcher (MPI) ...\n"
	      "      --prefix         prefix lines even when one pod is shown\n"
	      "      --trial TRIAL    with optimizationjob/NAME: that trial's TrainJob; default\n"
	      "                       the best trial so far, else the first (as the Kubeflow\n"
	      "                       SDK's OptimizerClient.get_job_logs)\n"
	      "  -n, --namespace NS   the job's namespace (default: default)\n"
	      "  -h, --help           this help\n\n"
	      "Exit status: 0 printed; 1 no pod has started yet (without -f), or a log could\n"
	      "not be read; 2 bad usage; 3 no such job.\n",
	      out);
}

static int parse_node(const char *s, int *node)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v > INT_MAX) {
		kft_cli_error("--node: \"%s\" is not a node index (0, 1, ...)", s);
		return KFT_EXIT_USAGE;
	}
	*node = (int)v;
	return 0;
}

/* NAME (also trainjob NAME, trainjob/NAME), or optimizationjob NAME /
 * optimizationjob/NAME. */
static int take_name(int argc, char **argv, logs_args *a)
{
	const char *named = NULL;
	int count = argc - optind;
	if (kft_cli_trainjob_operands(argv + optind, &count) != 0)
		return KFT_EXIT_USAGE;
	argc = optind + count;
	bool typed = optind < argc && kft_cli_is_optjob(argv[optind], &named);
	int want = typed && !named ? 2 : 1;
	if (optind + want != argc) {
		kft_cli_error(optind == argc ? "logs: give the TrainJob's NAME"
		                             : "logs: one TrainJob NAME only");
		return KFT_EXIT_USAGE;
	}
	if (typed)
		a->optjob = named ? named : argv[optind + 1];
	else
		a->o.name = argv[optind];
	if (a->trial && !typed) {
		kft_cli_error("logs: --trial goes with optimizationjob/NAME");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static int parse_args(int argc, char **argv, logs_args *a)
{
	static const struct option opts[] = {
	        {"follow", no_argument, NULL, 'f'},
	        {"node", required_argument, NULL, 'N'},
	        {"step", required_argument, NULL, 's'},
	        {"prefix", no_argument, NULL, 'p'},
	        {"trial", required_argument, NULL, 't'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	kft_logstream_opts *o = &a->o;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "fn:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': o->follow = true; break;
		case 'N':
			if (parse_node(optarg, &o->node) != 0)
				return KFT_EXIT_USAGE;
			break;
		case 's': o->step = optarg; break;
		case 'p': o->prefix = true; break;
		case 't': a->trial = optarg; break;
		case 'n': o->ns = optarg; break;
		case 'h': logs_usage(stdout); return -1;
		default: logs_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	int rc = take_name(argc, argv, a);
	if (rc)
		return rc;
	if (!o->ns)
		o->ns = "default";
	if (o->node >= 0 && !o->step)
		o->step = "node";
	return 0;
}

/* The steps of the job's JobSet, comma-separated, into buf; checks `step`
 * is one of them and `node` is within it. Returns 0 or KFT_EXIT_FAILED. */
static int check_selection(kft_local *l, const kft_logstream_opts *o)
{
	json_t *js = kft_cli_job_jobset(l, o->ns, o->name);
	if (!js || !o->step) {
		json_decref(js);
		return 0;
	}
	int pods = kft_cli_rjob_pods(js, o->step);
	int rc = 0;
	if (pods == 0) {
		char names[512] = "";
		size_t i, used = 0;
		const json_t *r;
		json_array_foreach(json_object_get(json_object_get(js, "spec"), "replicatedJobs"),
		                   i, r)
		{
			int w = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
			                 json_string_value(json_object_get(r, "name")));
			if (w < 0 || (size_t)w >= sizeof(names) - used)
				break;
			used += (size_t)w;
		}
		kft_cli_error("--step: job %s has no step \"%s\" (its steps: %s)", o->name, o->step,
		              names);
		rc = KFT_EXIT_FAILED;
	} else if (o->node >= pods) {
		kft_cli_error("--node: job %s has %d pod%s in step %s (0..%d)", o->name, pods,
		              pods == 1 ? "" : "s", o->step, pods - 1);
		rc = KFT_EXIT_FAILED;
	}
	json_decref(js);
	return rc;
}

static int run_logs(int argc, char **argv)
{
	logs_args a = {.o = {.node = -1}};
	kft_logstream_opts o;
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	kft_local *l = NULL;
	if ((rc = kft_cli_open_local(&l)) != 0)
		return rc;
	if (a.optjob && (rc = kft_cli_optjob_trial(l, a.o.ns, a.optjob, a.trial, &a.picked)) != 0) {
		kft_local_close(l);
		return rc;
	}
	if (a.picked)
		a.o.name = a.picked;
	o = a.o;
	json_t *job = NULL;
	kft_error err;
	if (kft_local_get(l, o.ns, o.name, &job, &err) != 0)
		rc = kft_cli_job_error(o.name, &err);
	json_decref(job);
	if (rc == 0)
		rc = check_selection(l, &o);
	kft_logstream_end end;
	if (rc == 0)
		rc = kft_logstream_run(l, &o, &end, NULL);
	if (rc == 0 && o.follow && end == KFT_LOGSTREAM_GONE)
		kft_cli_error("%s was deleted", o.name);
	if (rc == 0 && o.follow && end == KFT_LOGSTREAM_SUSPENDED)
		kft_cli_error("%s is suspended; its processes are stopped", o.name);
	kft_local_close(l);
	free(a.picked);
	return rc;
}

const kft_verb kft_verb_logs = {
        .name = "logs",
        .summary = "print or follow a TrainJob's pod logs",
        .run = run_logs,
        .usage = logs_usage,
};
