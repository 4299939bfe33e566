/*
 * get.c - `kftrainer get [NAME...]`: TrainJobs of the local backend as
 * kubectl shows resources.
 *
 *     NAME   RUNTIME   STATUS   NODES   RESTARTS   PROGRESS   ETA   AGE
 *
 * STATUS is the job's state in one word (Created, Running, Suspended,
 * Complete, Failed, or Terminating while a delete is under way) rather than upstream's printcolumn
 * (the type of the last condition, which reads "Suspended" for a job resumed long ago): a job whose
 * conditions say it finished or is suspended shows that; otherwise Running once a pod runs. NODES
 * is spec.trainer.numNodes when the TrainJob sets it, else the pods of the JobSet's "node" step
 * plus an MPI launcher labelled as the trainer step. RESTARTS counts the processes started again
 * (kubectl's pod column, summed over the job's pods). PROGRESS is
 * status.trainerStatus.progressPercentage. ETA counts down between reports:
 * estimatedRemainingSeconds less the time since lastUpdatedTime, never
 * below 0, and "-" once the job has ended (what the training said about its
 * remaining time no longer applies). -o wide adds METRICS (name=value, in
 * the reported order) and the last condition's REASON and MESSAGE (its first
 * line). A job named on the command line that failed is followed by its
 * Failed condition's whole message: locally, the failing node and process,
 * exit code and last lines of output.
 * -o json|yaml print the stored
 * TrainJobs with status as upstream shapes it: one object for one NAME, else
 * a v1 List, as kubectl does.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jobs.h"
#include "optjobs.h"
#include "kftrainer/constants.h"
#include "util/json.h"

typedef struct get_args {
	const char *ns;
	bool all_ns, no_headers;
	enum kft_cli_out_format format;
	char **names;
	int nnames;
} get_args;

static void get_usage(FILE *out)
{
	fputs("Usage: kftrainer get [NAME...] [-n NAMESPACE | -A] [-o wide|json|yaml|name]\n"
	      "                     [--no-headers]\n"
	      "       kftrainer get optimizationjobs [NAME...] [options as above]\n\n"
	      "Show TrainJobs run by the local backend:\n\n"
	      "  NAME  RUNTIME  STATUS  NODES  RESTARTS  PROGRESS  ETA  AGE\n\n"
	      "STATUS is Created, Running, Suspended, Complete, Failed, or Terminating while\n"
	      "the job is being deleted. RESTARTS counts how often the job's processes were\n"
	      "started again (each attempt is marked in the logs). PROGRESS is the\n"
	      "percentage the training reports (status.trainerStatus.progressPercentage), or -.\n"
	      "ETA is the remaining time it last reported, counting down since that report.\n"
	      "As with kubectl, the type may come first (get trainjobs, get trainjob NAME) or\n"
	      "with each name (trainjob/NAME); so it may in delete, suspend, resume, wait,\n"
	      "logs and events.\n\n"
	      "Options:\n"
	      "  -n, --namespace NS      the namespace (default: default)\n"
	      "  -A, --all-namespaces    every namespace (adds a NAMESPACE column)\n"
	      "  -o, --output FORMAT     wide (adds the reported METRICS, and REASON and\n"
	      "                          MESSAGE of the last condition), json or yaml (the\n"
	      "                          TrainJobs with status;\n"
	      "                          a v1 List unless one NAME is given), name\n"
	      "      --no-headers        no header line\n"
	      "  -h, --help              this help\n\n"
	      "OptimizationJobs (the type named first, or optimizationjob/NAME):\n\n"
	      "  NAME  STATUS  TRIALS  RUNNING  SUCCEEDED  FAILED  BEST  OBJECTIVE  AGE\n\n"
	      "TRIALS is started/numTrials; OBJECTIVE is the best trial's objective (its min\n"
	      "when minimizing); -o wide adds ALGORITHM, PARALLEL, REASON, MESSAGE. With one\n"
	      "NAME, each trial follows (parameters, state, metrics) and the best one.\n\n"
	      "Exit status: 0 shown; 2 bad usage; 3 a named job does not exist (the others\n"
	      "are shown).\n",
	      out);
}

static int parse_args(int argc, char **argv, get_args *a)
{
	static const struct option opts[] = {
	        {"namespace", required_argument, NULL, 'n'},
	        {"all-namespaces", no_argument, NULL, 'A'},
	        {"output", required_argument, NULL, 'o'},
	        {"no-headers", no_argument, NULL, 'H'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:Ao:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': a->ns = optarg; break;
		case 'A': a->all_ns = true; break;
		case 'o':
			if (kft_cli_parse_format(optarg, &a->format) != 0)
				return KFT_EXIT_USAGE;
			break;
		case 'H': a->no_headers = true; break;
		case 'h': get_usage(stdout); return -1;
		default: get_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	a->names = argv + optind;
	a->nnames = argc - optind;
	if (!a->ns)
		a->ns = "default";
	const char *typed = NULL;
	bool type_only = a->nnames && kft_cli_is_optjob(a->names[0], &typed) && !typed;
	int rc = type_only || typed ? 0 : kft_cli_trainjob_operands(a->names, &a->nnames);
	if (rc != 0)
		return rc;
	if (a->all_ns && a->nnames > (type_only ? 1 : 0)) {
		kft_cli_error("get: a resource cannot be retrieved by name across all namespaces");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

/* The last condition in the list (upstream's printcolumn picks the same). */
static const json_t *last_condition(const json_t *job)
{
	const json_t *conds = json_object_get(json_object_get(job, "status"), "conditions");
	size_t n = json_array_size(conds);
	return n ? json_array_get(conds, n - 1) : NULL;
}

#define METRICS_CELL_MAX 120

/* ETA: see the top of the file. */
static void eta_cell(const json_t *ts, const char *phase, char *buf, size_t size)
{
	const json_t *eta = json_object_get(ts, "estimatedRemainingSeconds");
	snprintf(buf, size, "-");
	if (!json_is_integer(eta) || strcmp(phase, "Complete") == 0 || strcmp(phase, "Failed") == 0)
		return;
	long long left = json_integer_value(eta);
	long long since =
	        kft_cli_seconds_since(json_string_value(json_object_get(ts, "lastUpdatedTime")));
	if (since > 0)
		left -= since;
	kft_cli_format_age(left > 0 ? left : 0, buf, size);
}

/* METRICS: "name=value,..." cut at METRICS_CELL_MAX bytes with "...". */
static void metrics_cell(const json_t *ts, char *buf, size_t size)
{
	size_t i, used = 0;
	const json_t *m;
	buf[0] = '\0';
	json_array_foreach(json_object_get(ts, "metrics"), i, m)
	{
		const char *n = json_string_value(json_object_get(m, "name"));
		const char *v = json_string_value(json_object_get(m, "value"));
		int w = snprintf(buf + used, size - used, "%s%s=%s", used ? "," : "", n ? n : "",
		                 v ? v : "");
		if (w < 0 || (size_t)w >= size - used) {
			snprintf(buf + (size > 4 ? size - 4 : 0), size > 4 ? 4 : size, "...");
			return;
		}
		used += (size_t)w;
	}
	if (!used)
		snprintf(buf, size, "-");
}

static void add_row(kft_local *l, json_t *rows, const json_t *job, const get_args *a)
{
	const json_t *ts = json_object_get(json_object_get(job, "status"), "trainerStatus");
	const json_t *pct = json_object_get(ts, "progressPercentage");
	const json_t *cond = last_condition(job);
	const char *phase = kft_cli_job_phase(l, job);
	char nodes[32], progress[16] = "-", age[32], etabuf[32], metrics[METRICS_CELL_MAX + 1],
	                restarts[24];
	kft_cli_job_nodes(l, job, nodes, sizeof(nodes));
	snprintf(restarts, sizeof(restarts), "%lld", kft_cli_job_restarts(l, job));
	if (json_is_integer(pct))
		snprintf(progress, sizeof(progress), "%" JSON_INTEGER_FORMAT "%%",
		         json_integer_value(pct));
	eta_cell(ts, phase, etabuf, sizeof(etabuf));
	metrics_cell(ts, metrics, sizeof(metrics));
	kft_cli_format_age(kft_cli_seconds_since(json_string_value(json_object_get(
	                           json_object_get(job, "metadata"), "creationTimestamp"))),
	                   age, sizeof(age));
	const char *runtime = json_string_value(json_object_get(
	        json_object_get(json_object_get(job, "spec"), "runtimeRef"), "name"));
	const char *reason = json_string_value(json_object_get(cond, "reason"));
	const char *message = json_string_value(json_object_get(cond, "message"));
	char first_line[512]; /* a cell is one line: a failure's output follows the table */
	if (message && strchr(message, '\n')) {
		snprintf(first_line, sizeof(first_line), "%.*s", (int)strcspn(message, "\n"),
		         message);
		message = first_line;
	}
	const char *cells[] = {
	        kft_cli_job_ns(job),
	        kft_cli_job_name(job),
	        runtime ? runtime : "-",
	        phase,
	        nodes,
	        restarts,
	        progress,
	        etabuf,
	        age,
	        metrics,
	        reason ? reason : "-",
	        message ? message : "-",
	};
	size_t first = a->all_ns ? 0 : 1;
	kft_cli_table_row(rows, (a->format == KFT_OUT_WIDE ? 12 : 9) - first, cells + first);
}

/* Under the table, for a job asked for by name that failed: why, as its
 * Failed condition says (the failing node, its exit code and last lines
 * for a local job), since the table's STATUS only says Failed. */
static void print_failure(kft_local *l, const json_t *job)
{
	const json_t *failed = kft_json_find(
	        json_object_get(json_object_get(job, "status"), "conditions"), "type", "Failed");
	const char *message = json_string_value(json_object_get(failed, "message"));
	if (message && strcmp(kft_cli_job_phase(l, job), "Failed") == 0)
		printf("\n%s failed: %s\n", kft_cli_job_name(job), message);
}

static int print_table(kft_local *l, const json_t *jobs, const get_args *a)
{
	static const char *const header[] = {"NAMESPACE", "NAME",     "RUNTIME",  "STATUS",
	                                     "NODES",     "RESTARTS", "PROGRESS", "ETA",
	                                     "AGE",       "METRICS",  "REASON",   "MESSAGE"};
	json_t *rows = json_array();
	size_t first = a->all_ns ? 0 : 1;
	if (!a->no_headers)
		kft_cli_table_row(rows, (a->format == KFT_OUT_WIDE ? 12 : 9) - first,
		                  header + first);
	size_t i;
	const json_t *job;
	json_array_foreach(jobs, i, job) add_row(l, rows, job, a);
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
	if (a->nnames)
		json_array_foreach(jobs, i, job) print_failure(l, job);
	return 0;
}

static int print_jobs(kft_local *l, const json_t *jobs, const get_args *a)
{
	size_t i;
	const json_t *job;
	switch (a->format) {
	case KFT_OUT_NAME:
		json_array_foreach(jobs, i, job)
		        printf(KFT_CLI_RESOURCE "/%s\n", kft_cli_job_name(job));
		return 0;
	case KFT_OUT_JSON:
	case KFT_OUT_YAML:
		if (a->nnames == 1 && json_array_size(jobs) == 1)
			return kft_cli_print_object(json_array_get(jobs, 0),
			                            a->format == KFT_OUT_YAML);
		return kft_cli_print_list(jobs, a->format == KFT_OUT_YAML);
	default: return print_table(l, jobs, a);
	}
}

/* The named jobs (missing ones reported) or the whole namespace. */
static int collect(kft_local *l, const get_args *a, json_t *jobs)
{
	kft_error err;
	int rc = 0;
	if (a->nnames == 0) {
		json_t *all = NULL;
		if (kft_cli_list_jobs(l, a->all_ns ? NULL : a->ns, &all) != 0)
			return KFT_EXIT_FAILED;
		json_array_extend(jobs, all);
		json_decref(all);
		return 0;
	}
	for (int i = 0; i < a->nnames; i++) {
		json_t *job = NULL;
		if (kft_local_get(l, a->ns, a->names[i], &job, &err) != 0)
			rc = kft_cli_exit_worse(rc, kft_cli_job_error(a->names[i], &err));
		else
			json_array_append_new(jobs, job);
	}
	return rc;
}

/* get optimizationjobs ...: the type named first. */
static int get_optjobs(kft_local *l, const get_args *a)
{
	int n = 0, rc = 0;
	char **names = kft_cli_optjob_names(a->names, a->nnames, &n, &rc);
	kft_cli_optjob_get o = {a->ns, a->all_ns, a->no_headers, a->format};
	if (names)
		rc = kft_cli_optjob_get_run(l, &o, names, n);
	free(names);
	return rc;
}

static int run_get(int argc, char **argv)
{
	get_args a = {0};
	const char *typed = NULL;
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	kft_local *l = NULL;
	if ((rc = kft_cli_open_local(&l)) != 0)
		return rc;
	if (a.nnames && kft_cli_is_optjob(a.names[0], &typed)) {
		rc = get_optjobs(l, &a);
		kft_local_close(l);
		return rc;
	}
	json_t *jobs = json_array();
	rc = collect(l, &a, jobs);
	bool structured = a.format == KFT_OUT_JSON || a.format == KFT_OUT_YAML;
	if (json_array_size(jobs) == 0 && !structured) {
		if (a.nnames == 0 && rc == 0 && a.all_ns)
			fprintf(stderr, "No resources found\n");
		else if (a.nnames == 0 && rc == 0)
			fprintf(stderr, "No resources found in %s namespace.\n", a.ns);
	} else if ((json_array_size(jobs) || a.nnames != 1) && print_jobs(l, jobs, &a) != 0) {
		rc = KFT_EXIT_FAILED;
	}
	json_decref(jobs);
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_get = {
        .name = "get",
        .summary = "show TrainJobs: status, progress, age",
        .run = run_get,
        .usage = get_usage,
};
