/*
 * wait.c - `kftrainer wait NAME...`: block until TrainJobs meet a condition,
 * with kubectl wait's flags, output and timeout rules (--timeout 30s by
 * default; 0 checks once; a negative duration waits a week).
 *
 * One deviation, on purpose: kubectl would sit out the whole timeout when a
 * job waited on for Complete has Failed. A finished job never changes again,
 * so here the wait ends at once with the reason, exit status 1.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "jobs.h"
#include "util/duration.h"

#define POLL_MS    100
#define WEEK_MS    (7LL * 24 * 3600 * 1000)
#define DEFAULT_MS (30LL * 1000)

typedef struct wait_args {
	const char *ns;
	char cond[128]; /* the condition type; "" for deletion */
	char value[16]; /* the status awaited, "True" by default */
	int64_t timeout_ms;
	char **names;
	int nnames;
} wait_args;

static void wait_usage(FILE *out)
{
	fputs("Usage: kftrainer wait NAME... [--for "
	      "Complete|Failed|condition=TYPE[=VALUE]|delete]\n"
	      "                      [--timeout DURATION] [-n NAMESPACE]\n\n"
	      "Wait until each TrainJob has a condition (default: Complete) with status True,\n"
	      "or is deleted, printing \"trainjob.trainer.kubeflow.org/NAME condition met\".\n"
	      "A job that finished the other way (Failed while waiting for Complete, or the\n"
	      "reverse) ends the wait at once.\n\n"
	      "Options:\n"
	      "      --for WHAT        Complete, Failed, Suspended, condition=TYPE,\n"
	      "                        condition=TYPE=VALUE (True or False), or delete\n"
	      "      --timeout D       give up after D: 90s, 5m, 1h30m ... (default 30s; 0 checks\n"
	      "                        once; negative waits a week)\n"
	      "  -n, --namespace NS    the namespace (default: default)\n"
	      "  -h, --help            this help\n\n"
	      "Exit status: 0 every condition met; 1 timed out (\"timed out waiting for the\n"
	      "condition on trainjobs/NAME\") or finished the other way; 2 bad usage; 3 a job\n"
	      "missing (and every other met).\n",
	      out);
}

static int copy(char *dst, size_t size, const char *src, size_t n)
{
	if (n == 0 || n >= size)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* --for: "delete", "condition=T", "condition=T=V", or a bare type T. */
static int parse_for(const char *s, wait_args *a)
{
	strcpy(a->value, "True");
	if (strcmp(s, "delete") == 0) {
		a->cond[0] = '\0';
		return 0;
	}
	if (strncmp(s, "condition=", 10) == 0)
		s += 10;
	else if (strchr(s, '='))
		goto bad;
	const char *eq = strchr(s, '=');
	if (copy(a->cond, sizeof(a->cond), s, eq ? (size_t)(eq - s) : strlen(s)) != 0)
		goto bad;
	if (eq && copy(a->value, sizeof(a->value), eq + 1, strlen(eq + 1)) != 0)
		goto bad;
	return 0;
bad:
	kft_cli_error("--for: unrecognized condition \"%s\" (Complete, Failed, condition=TYPE"
	              "[=VALUE] or delete)",
	              s);
	return KFT_EXIT_USAGE;
}

static int parse_args(int argc, char **argv, wait_args *a)
{
	static const struct option opts[] = {
	        {"for", required_argument, NULL, 'F'},
	        {"timeout", required_argument, NULL, 't'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (parse_for(optarg, a) != 0)
				return KFT_EXIT_USAGE;
			break;
		case 't':
			if (kft_duration_parse_ms(optarg, &a->timeout_ms) != 0) {
				kft_cli_error(
				        "--timeout: invalid duration \"%s\" (like 90s, 5m, 1h)",
				        optarg);
				return KFT_EXIT_USAGE;
			}
			break;
		case 'n': a->ns = optarg; break;
		case 'h': wait_usage(stdout); return -1;
		default: wait_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	a->names = argv + optind;
	a->nnames = argc - optind;
	int rc = kft_cli_trainjob_operands(a->names, &a->nnames);
	if (rc != 0)
		return rc;
	if (a->nnames == 0) {
		kft_cli_error("wait: give the TrainJob NAME(s) to wait for");
		return KFT_EXIT_USAGE;
	}
	if (!a->ns)
		a->ns = "default";
	if (a->timeout_ms < 0)
		a->timeout_ms = WEEK_MS;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether job has condition a->cond with status a->value (kubectl compares
 * both without regard to case). */
static bool met(const json_t *job, const wait_args *a)
{
	return kft_cli_condition_find(job, a->cond, a->value, true) != NULL;
}

/* A finished job that does not meet the condition never will. */
static int finished_otherwise(const json_t *job, const char *name, const wait_args *a)
{
	const char *outcome = kft_cli_job_outcome(job);
	const json_t *c = outcome ? kft_cli_condition_true(job, outcome) : NULL;
	const char *reason = json_string_value(json_object_get(c, "reason"));
	const char *message = json_string_value(json_object_get(c, "message"));
	char why[1200] = "";
	if (reason || message)
		snprintf(why, sizeof(why), " (%s%s%s)", reason ? reason : "",
		         reason && message ? ": " : "", message ? message : "");
	kft_cli_error("trainjob %s is %s%s, so condition %s=%s will never be met", name, outcome,
	              why, a->cond, a->value);
	return KFT_EXIT_FAILED;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits for one job until deadline (monotonic ms). */
static int wait_one(kft_local *l, const char *name, const wait_args *a, long long deadline)
{
	for (;;) {
		json_t *job = NULL;
		kft_error err;
		int rc = kft_local_get(l, a->ns, name, &job, &err);
		if (rc != 0 && !(err.code == KFT_ENOTFOUND && !a->cond[0]))
			return kft_cli_job_error(name, &err);
		bool done = a->cond[0] ? met(job, a) : rc != 0;
		bool hopeless = !done && a->cond[0] && kft_cli_job_outcome(job);
		if (hopeless)
			rc = finished_otherwise(job, name, a);
		json_decref(job);
		if (done) {
			printf(KFT_CLI_RESOURCE "/%s condition met\n", name);
			fflush(stdout);
			return 0;
		}
		if (hopeless)
			return rc;
		long long left = deadline - now_ms();
		if (left <= 0) {
			fprintf(stderr,
			        "error: timed out waiting for the condition on trainjobs/%s\n",
			        name);
			return KFT_EXIT_FAILED;
		}
		sleep_ms(left < POLL_MS ? (int)left : POLL_MS);
	}
}

static int run_wait(int argc, char **argv)
{
	wait_args a = {.timeout_ms = DEFAULT_MS};
	strcpy(a.cond, "Complete");
	strcpy(a.value, "True");
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	kft_local *l = NULL;
	if ((rc = kft_cli_open_local(&l)) != 0)
		return rc;
	long long deadline = now_ms() + a.timeout_ms;
	for (int i = 0; i < a.nnames; i++) {
		rc = kft_cli_exit_worse(rc, wait_one(l, a.names[i], &a, deadline));
	}
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_wait = {
        .name = "wait",
        .summary = "wait for TrainJobs to complete (or another condition)",
        .run = run_wait,
        .usage = wait_usage,
};
