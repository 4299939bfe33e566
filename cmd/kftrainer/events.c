/*
 * events.c - `kftrainer events [NAME]`: what happened to a TrainJob's pods,
 * Jobs and JobSet, as `kubectl events --for trainjob/NAME` lists a cluster's
 * Events (the kubelet's Created/Started/BackOff, the Job controller's
 * Completed/BackoffLimitExceeded, the JobSet controller's condition reasons).
 * The local engine records them as it plays those parts (src/local/events.c).
 */
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jobs.h"
#include "optjobs.h"

static void events_usage(FILE *out)
{
	fputs("Usage: kftrainer events [NAME] [-n NAMESPACE] [-o json|yaml]\n"
	      "       kftrainer events optimizationjob/NAME [-n NAMESPACE] [-o json|yaml]\n\n"
	      "List the Events of a TrainJob (of every TrainJob in the namespace without NAME),\n"
	      "oldest first, as kubectl events does:\n\n"
	      "  LAST SEEN  TYPE  REASON  OBJECT  MESSAGE\n\n"
	      "OBJECT is the pod, Job or JobSet the Event is about (pod/NAME, job/NAME,\n"
	      "jobset/NAME). -o json or yaml prints a v1 EventList of core/v1 Events.\n"
	      "For an OptimizationJob: its own Events (trials created, ended, waiting for\n"
	      "GPUs; the search's end), then those of each trial's TrainJob.\n\n"
	      "Options:\n"
	      "  -n, --namespace NS   the namespace (default: default)\n"
	      "  -o, --output FORMAT  json or yaml\n"
	      "  -h, --help           this help\n\n"
	      "Exit status: 0 listed; 2 bad usage; 3 no such job.\n",
	      out);
}

static int run_events(int argc, char **argv)
{
	const char *ns = "default";
	enum kft_cli_out_format format = KFT_OUT_TABLE;
	int rc = kft_cli_ns_output_options(argc, argv, events_usage, &ns, &format);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	const char *opt = NULL;
	int count = argc - optind;
	if (kft_cli_trainjob_operands(argv + optind, &count) != 0)
		return KFT_EXIT_USAGE;
	argc = optind + count;
	bool typed = optind < argc && kft_cli_is_optjob(argv[optind], &opt);
	if (typed && !opt && optind + 1 < argc)
		opt = argv[++optind];
	if (argc - optind > 1 || format == KFT_OUT_WIDE || format == KFT_OUT_NAME ||
	    (typed && !opt)) {
		events_usage(stderr);
		return KFT_EXIT_USAGE;
	}
	const char *name = optind < argc ? argv[optind] : NULL;
	kft_local *l = NULL;
	rc = kft_cli_open_local(&l);
	if (rc)
		return rc;
	if (typed) {
		rc = kft_cli_optjob_events(l, ns, opt, format);
		kft_local_close(l);
		return rc;
	}
	json_t *list = NULL;
	kft_error err;
	if (kft_local_events(l, ns, name, &list, &err) != 0)
		rc = kft_cli_job_error(name ? name : ns, &err);
	else if (format == KFT_OUT_JSON || format == KFT_OUT_YAML)
		rc = kft_cli_print_object(list, format == KFT_OUT_YAML) ? KFT_EXIT_FAILED : 0;
	else if (json_array_size(json_object_get(list, "items")) == 0)
		fprintf(stderr, "No events found in %s namespace.\n", ns);
	else
		kft_cli_events_table(json_object_get(list, "items"));
	json_decref(list);
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_events = {
        .name = "events",
        .summary = "list what happened to TrainJobs' pods, Jobs and JobSets",
        .run = run_events,
        .usage = events_usage,
};
