/*
 * lifecycle.c - `kftrainer suspend|resume|delete NAME...`: changing a
 * TrainJob's life. Suspending stops every process of the job and keeps it
 * (spec.suspend, the Suspended condition); resuming starts it again under a
 * new supervisor; deleting stops everything and forgets the job.
 *
 * Each name is handled on its own, as kubectl does: one missing job is
 * reported with kubectl's NotFound line and the others still happen; the exit
 * status is then 1. Two CLIs acting on one job at once are serialized by the
 * store, so the second sees the first's result (a deleted job is NotFound).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "local/tracking.h"
#include "jobs.h"
#include "optjobs.h"

typedef enum action { SUSPEND, RESUME, DELETE } action;

typedef struct life_args {
	action what;
	const char *ns;
	bool all, ignore_not_found, force;
	char **names;
	int nnames;
} life_args;

static void usage_for(FILE *out, action what)
{
	static const char *const text[] = {
	        "Usage: kftrainer suspend NAME... [-n NAMESPACE]\n\n"
	        "Suspend TrainJobs: every process of the job is stopped (SIGTERM, then SIGKILL\n"
	        "after a grace period) and the job keeps its place, with spec.suspend true and\n"
	        "the Suspended condition. Resume it with kftrainer resume.\n",
	        "Usage: kftrainer resume NAME... [-n NAMESPACE]\n\n"
	        "Resume suspended TrainJobs: spec.suspend becomes false and the job starts again\n"
	        "from its first step under a new supervisor.\n",
	        "Usage: kftrainer delete NAME... [-n NAMESPACE] [--ignore-not-found]\n"
	        "       kftrainer delete --all [-n NAMESPACE]\n"
	        "       kftrainer delete optimizationjob NAME... | optimizationjobs --all\n\n"
	        "Delete TrainJobs: stop every process of each job (none is left running), then\n"
	        "remove it from the store with its logs and volumes. An OptimizationJob is\n"
	        "deleted with every trial TrainJob it made, its search stopped first.\n",
	};
	fputs(text[what], out);
	fputs("\nOptions:\n"
	      "  -n, --namespace NS     the namespace (default: default)\n",
	      out);
	if (what == DELETE)
		fputs("      --all              every TrainJob of the namespace\n"
		      "      --ignore-not-found a missing job is not an error\n"
		      "      --force            delete a job whose model is not exported yet\n"
		      "                         (tracking.kftrainer.dev/export-to; refused "
		      "without)\n",
		      out);
	fputs("  -h, --help             this help\n\n"
	      "Exit status: 0 done for every job; 1 some job could not be changed (a finished\n"
	      "job cannot be suspended or resumed); 2 bad usage; 3 some job does not exist\n"
	      "(and every other was done).\n",
	      out);
}

static void suspend_usage(FILE *out)
{
	usage_for(out, SUSPEND);
}

static void resume_usage(FILE *out)
{
	usage_for(out, RESUME);
}

static void delete_usage(FILE *out)
{
	usage_for(out, DELETE);
}

static int parse_args(int argc, char **argv, life_args *a)
{
	static const struct option opts[] = {
	        {"namespace", required_argument, NULL, 'n'},
	        {"all", no_argument, NULL, 'a'},
	        {"ignore-not-found", no_argument, NULL, 'i'},
	        {"force", no_argument, NULL, 'f'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		if ((c == 'a' || c == 'i' || c == 'f') && a->what != DELETE)
			c = '?';
		switch (c) {
		case 'n': a->ns = optarg; break;
		case 'a': a->all = true; break;
		case 'i': a->ignore_not_found = true; break;
		case 'f': a->force = true; break;
		case 'h': usage_for(stdout, a->what); return -1;
		default: usage_for(stderr, a->what); return KFT_EXIT_USAGE;
		}
	}
	a->names = argv + optind;
	a->nnames = argc - optind;
	if (!a->ns)
		a->ns = "default";
	const char *typed = NULL;
	int type_word = a->nnames && kft_cli_is_optjob(a->names[0], &typed) && !typed ? 1 : 0;
	int rc = type_word || typed ? 0 : kft_cli_trainjob_operands(a->names, &a->nnames);
	if (rc != 0)
		return rc;
	if (a->all && a->nnames > type_word) {
		kft_cli_error("%s: give NAMEs or --all, not both", argv[0]);
		return KFT_EXIT_USAGE;
	}
	if (!a->all && a->nnames == type_word) {
		kft_cli_error("%s: give the TrainJob NAME(s)%s", argv[0],
		              a->what == DELETE ? " or --all" : "");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static int act(kft_local *l, const life_args *a, const char *name)
{
	kft_error err;
	char why[1024];
	int rc;
	if (a->what == DELETE && !a->force &&
	    kft_local_export_pending(l, a->ns, name, why, sizeof(why))) {
		kft_cli_error("delete: TrainJob %s: its model is not exported (%s); kftrainer "
		              "export %s retries, --force deletes it anyway",
		              name, why, name);
		return KFT_EXIT_FAILED;
	}
	if (a->what == DELETE)
		rc = kft_local_delete(l, a->ns, name, &err);
	else
		rc = kft_local_set_suspend(l, a->ns, name, a->what == SUSPEND, &err);
	if (rc != 0) {
		if (err.code == KFT_ENOTFOUND && a->ignore_not_found)
			return 0;
		return kft_cli_job_error(name, &err);
	}
	if (a->what == DELETE)
		printf(KFT_CLI_RESOURCE " \"%s\" deleted\n", name);
	else
		printf(KFT_CLI_RESOURCE "/%s %s\n", name,
		       a->what == SUSPEND ? "suspended" : "resumed");
	fflush(stdout);
	return 0;
}

/* delete --all: the namespace's jobs at this moment. */
static int act_all(kft_local *l, const life_args *a)
{
	json_t *jobs = NULL;
	if (kft_cli_list_jobs(l, a->ns, &jobs) != 0)
		return KFT_EXIT_FAILED;
	if (json_array_size(jobs) == 0)
		fprintf(stderr, "No resources found\n");
	int rc = 0;
	size_t i;
	json_t *job;
	life_args each = *a;
	each.ignore_not_found = true; /* deleted meanwhile by someone else: fine */
	json_array_foreach(jobs, i, job)
	{
		rc = kft_cli_exit_worse(rc, act(l, &each, kft_cli_job_name(job)));
	}
	json_decref(jobs);
	return rc;
}

static int run_action(int argc, char **argv, action what)
{
	life_args a = {.what = what};
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	kft_local *l = NULL;
	if ((rc = kft_cli_open_local(&l)) != 0)
		return rc;
	const char *typed = NULL;
	if (what == DELETE && a.nnames && kft_cli_is_optjob(a.names[0], &typed)) {
		rc = kft_cli_optjob_delete(l, a.ns, a.names, a.nnames, a.all, a.ignore_not_found);
		kft_local_close(l);
		return rc;
	}
	if (a.all)
		rc = act_all(l, &a);
	for (int i = 0; i < a.nnames; i++) {
		rc = kft_cli_exit_worse(rc, act(l, &a, a.names[i]));
	}
	kft_local_close(l);
	return rc;
}

static int run_suspend(int argc, char **argv)
{
	return run_action(argc, argv, SUSPEND);
}

static int run_resume(int argc, char **argv)
{
	return run_action(argc, argv, RESUME);
}

static int run_delete(int argc, char **argv)
{
	return run_action(argc, argv, DELETE);
}

const kft_verb kft_verb_suspend = {
        .name = "suspend",
        .summary = "suspend TrainJobs (stop their processes, keep the jobs)",
        .run = run_suspend,
        .usage = suspend_usage,
};

const kft_verb kft_verb_resume = {
        .name = "resume",
        .summary = "resume suspended TrainJobs",
        .run = run_resume,
        .usage = resume_usage,
};

const kft_verb kft_verb_delete = {
        .name = "delete",
        .summary = "delete TrainJobs, stopping every process",
        .run = run_delete,
        .usage = delete_usage,
};
