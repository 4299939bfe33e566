/*
 * ui.c - `kftrainer ui [--listen HOST:PORT]`: the dashboard (src/ui/) over
 * the same state directory and runtimes as every other verb, or with
 * --kubeconfig over a cluster's TrainJobs. This file only wires it:
 * options, the Kubernetes client, the hooks that lend the dashboard `get`'s
 * cells, the `runtimes` lookup and `render`'s pipeline, and waiting for
 * Ctrl-C.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inputs.h"
#include "jobinput.h"
#include "jobs.h"
#include "kube/kube.h"
#include "ui/ui.h"

static void ui_usage(FILE *out)
{
	fputs("Usage: kftrainer ui [--listen HOST:PORT] [--token-file PATH] [--public-url URL]\n"
	      "       kftrainer ui --kubeconfig PATH [--namespace NS | --all-namespaces] ...\n\n"
	      "Serve a dashboard of the local engine's TrainJobs: the jobs (live), each job's\n"
	      "pods, events, objects, logs (followed as they are written) and reported\n"
	      "metrics as charts, the runtimes and a preview of what a TrainJob becomes, and\n"
	      "suspend, resume and delete. Stop it with Ctrl-C.\n\n"
	      "With --kubeconfig the same pages show a cluster's TrainJobs instead: their\n"
	      "JobSets, Jobs and pods, Events, logs (the pods' log subresource) and the\n"
	      "metrics reported while the dashboard runs.\n\n"
	      "Options:\n"
	      "  -l, --listen ADDR   address to serve on (default " KFT_UI_DEFAULT_LISTEN ";\n"
	      "                      port 0 picks a free one)\n"
	      "      --token-file PATH\n"
	      "                      the token every request must carry, read from the\n"
	      "                      file's first line (default: $KFTRAINER_UI_TOKEN, else a\n"
	      "                      random one); printed in the address\n"
	      "      --token TOKEN   the same on the command line (which every local user\n"
	      "                      can read in ps: prefer the file or the variable)\n"
	      "      --public-url URL\n"
	      "                      the address browsers use when it is not the listener's,\n"
	      "                      as behind a TLS-terminating proxy\n"
	      "                      (https://HOST[:PORT]); printed instead, and accepted as\n"
	      "                      the page's origin\n"
	      "      --kubeconfig PATH\n"
	      "                      serve this cluster's TrainJobs (the file's current\n"
	      "                      context)\n"
	      "      --context NAME  the kubeconfig context to use\n"
	      "  -n, --namespace NS  with --kubeconfig: this namespace (default: the\n"
	      "                      context's)\n"
	      "  -A, --all-namespaces\n"
	      "                      with --kubeconfig: every namespace\n"
	      "  -h, --help          this help\n\n"
	      "Every request needs the token, on every address: the first line printed is\n"
	      "the page's address with it (?token=...), which sets a cookie and drops it from\n"
	      "the address bar. A token is 1 to 64 letters, digits, '-' or '_'.\n\n"
	      "Exit status: 0 stopped by a\n"
	      "signal; 1 cannot serve (address in use, the cluster cannot be read ...);\n"
	      "2 bad usage.\n",
	      out);
}

/* ---- hooks ------------------------------------------------------------------ */

static json_t *job_row(void *ctx, kft_local *l, const json_t *job)
{
	(void)ctx;
	char nodes[32];
	kft_cli_job_nodes(l, job, nodes, sizeof(nodes));
	return json_pack("{s:s, s:s, s:I}", "status", kft_cli_job_phase(l, job), "nodes", nodes,
	                 "restarts", (json_int_t)kft_cli_job_restarts(l, job));
}

/* The jobinput front half with its field errors captured as text. */
typedef struct captured {
	kft_jobinput in;
	kft_paths runtimes;
	char *text;
	size_t len;
	FILE *errors;
} captured;

static int captured_open(captured *c, const char *verb)
{
	memset(c, 0, sizeof(*c));
	c->errors = open_memstream(&c->text, &c->len);
	int rc = c->errors ? kft_jobinput_init(&c->in, c->errors) : KFT_EXIT_INPUT;
	if (rc == 0)
		rc = kft_jobinput_default_runtimes(verb, &c->runtimes);
	return rc;
}

/* Closes c, handing its captured text to *problems (NULL when empty). */
static void captured_close(captured *c, char **problems)
{
	if (c->errors)
		fclose(c->errors);
	kft_jobinput_free(&c->in);
	kft_paths_free(&c->runtimes);
	if (problems && c->text && *c->text)
		*problems = c->text;
	else
		free(c->text);
}

static int list_runtimes(void *ctx, json_t **out, char **problems)
{
	(void)ctx;
	captured c;
	kft_paths none = {0};
	*out = NULL;
	*problems = NULL;
	int rc = captured_open(&c, "ui");
	if (rc == 0 || rc == KFT_EXIT_INVALID)
		rc = kft_jobinput_read(&c.in, &none, &c.runtimes);
	if (rc == 0 || rc == KFT_EXIT_INVALID) {
		*out = json_incref(c.in.runtimes);
		rc = 0;
	}
	captured_close(&c, problems);
	return rc ? KFT_EINVAL : 0;
}

/* runtimes: NULL (the runtime files every verb reads) or a cluster's. */
static int render_among(const json_t *trainjob, const json_t *runtimes, json_t **objects,
                        char **problems)
{
	captured c;
	kft_paths none = {0}, plugins = {0};
	kft_framework *fw = NULL;
	kft_error err;
	*objects = NULL;
	*problems = NULL;
	int rc = captured_open(&c, "ui");
	if (rc == 0 && !runtimes)
		rc = kft_jobinput_read(&c.in, &none, &c.runtimes);
	size_t i;
	const json_t *rt;
	/* a cluster's runtimes as the admission webhook saw them; one that
	 * fails our checks is left out with its field errors */
	json_array_foreach(runtimes, i, rt) if (rc == 0) kft_jobinput_add(&c.in, "cluster", rt);
	if (rc == 0)
		rc = kft_jobinput_add(&c.in, "trainjob", trainjob);
	if (rc == 0 && json_array_size(c.in.jobs) != 1) {
		fprintf(c.errors, "not a TrainJob\n");
		rc = KFT_EXIT_INVALID;
	}
	if (rc == 0 && kft_framework_new(0, &fw, &err) != 0) {
		fprintf(c.errors, "%s\n", err.message);
		rc = KFT_EXIT_INPUT;
	}
	if (rc == 0)
		rc = kft_jobinput_plugin_paths(NULL, &plugins);
	if (rc == 0)
		rc = kft_jobinput_load_plugins(fw, &plugins);
	const json_t *record = json_array_get(c.in.jobs, 0);
	const json_t *runtime = rc == 0 ? kft_jobinput_resolve(&c.in, fw, NULL, record) : NULL;
	if (rc == 0 && !runtime)
		rc = KFT_EXIT_INVALID;
	if (rc == 0 && kft_framework_build(fw, NULL, json_object_get(record, "object"), runtime,
	                                   objects, &err) != 0) {
		fprintf(c.errors, "%s\n", err.message);
		rc = KFT_EXIT_INVALID;
	}
	kft_framework_free(fw);
	kft_paths_free(&plugins);
	captured_close(&c, problems);
	return rc ? KFT_EINVAL : 0;
}

static int render_job(void *ctx, const json_t *trainjob, json_t **objects, char **problems)
{
	(void)ctx;
	return render_among(trainjob, NULL, objects, problems);
}

static int render_with(void *ctx, const json_t *trainjob, const json_t *runtimes, json_t **objects,
                       char **problems)
{
	(void)ctx;
	return render_among(trainjob, runtimes, objects, problems);
}

/* A client for the cluster: brisk (a page refreshes every second, and a
 * browser waits on each answer), giving up after two retries. */
static int cluster_client(const char *kubeconfig, const char *context, kft_kube **out)
{
	kft_kube_config *cfg = NULL;
	kft_error err;
	int rc = kft_kube_config_load(kubeconfig, context, &cfg, &err);
	if (rc == 0) {
		cfg->qps = 50;
		cfg->burst = 100;
		cfg->max_retries = 2;
		free(cfg->user_agent);
		cfg->user_agent = strdup("kftrainer-ui");
		rc = kft_kube_new(cfg, out, &err);
	}
	kft_kube_config_free(cfg);
	if (rc)
		kft_cli_error("ui: %s", err.message);
	return rc;
}

/* ---- the verb ---------------------------------------------------------------- */

/* The first line of path, without its line end, in buf. */
static int read_token_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		kft_cli_error("ui: --token-file %s: %s", path, strerror(errno));
		return KFT_EXIT_USAGE;
	}
	bool got = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	buf[got ? strcspn(buf, "\r\n") : 0] = '\0';
	if (!buf[0]) {
		kft_cli_error("ui: --token-file %s: no token on its first line", path);
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static int run_ui(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"listen", required_argument, NULL, 'l'},
	        {"token", required_argument, NULL, 't'},
	        {"token-file", required_argument, NULL, 'T'},
	        {"public-url", required_argument, NULL, 'P'},
	        {"kubeconfig", required_argument, NULL, 'k'},
	        {"context", required_argument, NULL, 'c'},
	        {"namespace", required_argument, NULL, 'n'},
	        {"all-namespaces", no_argument, NULL, 'A'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	kft_ui_opts o = {.hooks = {.job_row = job_row,
	                           .runtimes = list_runtimes,
	                           .render = render_job,
	                           .render_with = render_with}};
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL, *token_file = NULL;
	char token[128];
	bool all = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "l:n:Ah", opts, NULL)) != -1) {
		switch (c) {
		case 'l': o.listen = optarg; break;
		case 't': o.token = optarg; break;
		case 'T': token_file = optarg; break;
		case 'P': o.public_url = optarg; break;
		case 'k': kubeconfig = optarg; break;
		case 'c': context = optarg; break;
		case 'n': ns = optarg; break;
		case 'A': all = true; break;
		case 'h': ui_usage(stdout); return KFT_EXIT_OK;
		default: ui_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		kft_cli_error("ui: unexpected argument \"%s\"", argv[optind]);
		return KFT_EXIT_USAGE;
	}
	if ((ns || all || context) && !kubeconfig) {
		kft_cli_error("ui: --namespace, --all-namespaces and --context need --kubeconfig");
		return KFT_EXIT_USAGE;
	}
	if (ns && all) {
		kft_cli_error("ui: --namespace and --all-namespaces exclude each other");
		return KFT_EXIT_USAGE;
	}
	if (ns && !*ns) {
		kft_cli_error("ui: --namespace: an empty name");
		return KFT_EXIT_USAGE;
	}
	if (o.token && token_file) {
		kft_cli_error("ui: --token and --token-file exclude each other");
		return KFT_EXIT_USAGE;
	}
	if (token_file && (c = read_token_file(token_file, token, sizeof(token))) != 0)
		return c;
	if (token_file)
		o.token = token;
	else if (!o.token && getenv("KFTRAINER_UI_TOKEN") && *getenv("KFTRAINER_UI_TOKEN"))
		o.token = getenv("KFTRAINER_UI_TOKEN");
	kft_kube *kube = NULL;
	if (kubeconfig && cluster_client(kubeconfig, context, &kube) != 0)
		return KFT_EXIT_FAILED;
	o.kube = kube;
	o.namespace = all ? NULL : ns ? ns : kube ? kft_kube_namespace(kube) : NULL;
	o.state_dir = getenv("KFTRAINER_STATE_DIR");
	/* Signals are taken by sigwait below, never by the server's threads. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	kft_ui *ui = NULL;
	kft_error err;
	if (kft_ui_start(&o, &ui, &err) != 0) {
		kft_cli_error("ui: %s", err.message);
		kft_kube_free(kube);
		return err.code == KFT_EINVAL ? KFT_EXIT_USAGE : KFT_EXIT_FAILED;
	}
	printf("%s\n", kft_ui_url(ui));
	if (!kft_ui_loopback(ui))
		fprintf(stderr, "kftrainer: ui: not on loopback: anyone who can reach this address "
		                "may try it; every request needs the token in the address above\n");
	fflush(stdout);
	int sig;
	sigwait(&set, &sig);
	if (kube)
		kft_kube_cancel(kube, 1);
	kft_ui_stop(ui);
	kft_kube_free(kube);
	return KFT_EXIT_OK;
}

const kft_verb kft_verb_ui = {
        .name = "ui",
        .summary = "serve a dashboard of the jobs, logs and metrics",
        .run = run_ui,
        .usage = ui_usage,
};
