/*
 * train.c - `kftrainer train`: submit TrainJobs to the local backend.
 *
 *     kftrainer train -f TRAINJOB.yaml [-r RUNTIMES] [--follow] [--rm]
 *     kftrainer train --runtime NAME [--nodes N] ... -- COMMAND ARGS...
 *
 * The TrainJob goes through exactly what `render` does first (jobinput.h:
 * checks, runtime resolution, CustomValidation), so an invalid one is refused
 * with the lines `validate` prints and nothing is stored or started. Every
 * TrainJob of the input is checked before the first is submitted. Unlike
 * `render`, only the runtimes the TrainJobs reference are checked (and only
 * runtime files that name them are decoded): a broken runtime file the job
 * does not use must not block it, and checking all of them was most of the
 * verb's own work (jobinput.h: defer_runtimes).
 *
 * Submitting returns at once ("trainjob.trainer.kubeflow.org/NAME created",
 * kubectl's wording). --follow then streams every pod's log, prefixed by pod
 * (logstream.h), until the job ends, and exits with its outcome. Ctrl-C
 * (SIGINT), SIGTERM or SIGHUP only stop the following: the job keeps running
 * under its supervisor, and the way back in is printed. --rm deletes the job
 * when the CLI exits, however it exits, as `docker run --rm` does; it implies
 * --follow.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "local/tracking.h"
#include "track/track.h"
#include "jobinput.h"
#include "logstream.h"

/* The pseudo-file errors about a TrainJob built from flags are reported in. */
#define FLAGS_SOURCE "<command line>"

typedef struct train_args {
	kft_paths files, runtimes, env, plugins;
	const char *ns, *runtime, *name, *dataset, *model, *image, *nodes, *procs;
	const char *export_to, *export_from, *register_to; /* tracking.kftrainer.dev/ */
	bool follow, rm, job_workdir;
	char **command;
	int ncommand;
} train_args;

static void train_usage(FILE *out)
{
	fputs("Usage: kftrainer train -f TRAINJOB.yaml [-r RUNTIMES] [-n NS] [--follow] [--rm]\n"
	      "       kftrainer train --runtime NAME [--name N] [--nodes N] [--procs N]\n"
	      "                       [--env K=V]... [--dataset URI] [--model URI] [--image I]\n"
	      "                       [--export-to URI [--export-from PATH] [--register-to M]]\n"
	      "                       [-n NS] [--follow] [--rm] -- COMMAND [ARGS...]\n\n"
	      "Run TrainJobs on this machine: each pod of the JobSet the runtime describes\n"
	      "becomes a process (initializers first, then the trainer's nodes), supervised in\n"
	      "the background so this command may exit. Prints\n"
	      "\"trainjob.trainer.kubeflow.org/NAME created\" and returns at once, unless\n"
	      "--follow. A TrainJob `kftrainer validate` rejects is refused with the same\n"
	      "lines, and nothing runs.\n\n"
	      "The second form builds the TrainJob from flags: spec.runtimeRef names a\n"
	      "ClusterTrainingRuntime (a TrainingRuntime when one of that name is in the\n"
	      "namespace), COMMAND ARGS become spec.trainer.command. Without --name the name\n"
	      "is generated as Kubeflow's SDK does (a letter and 11 hex digits).\n\n"
	      "Options:\n"
	      "  -f, --filename PATH  TrainJob file, directory or - (repeatable); runtimes in it\n"
	      "                       are used too\n"
	      "  -r, --runtimes PATH  runtime file or directory (repeatable); default:\n"
	      "                       $KFTRAINER_RUNTIMES, ./manifests/runtimes, BIN/../share/\n"
	      "                       kftrainer/runtimes, the checkout's for a build-tree\n"
	      "                       binary, or the installed runtimes\n"
	      "  -n, --namespace NS   namespace of the job (default: default)\n"
	      "      --runtime NAME   the shortcut: the runtime to run COMMAND with\n"
	      "      --name N         metadata.name\n"
	      "      --nodes N        spec.trainer.numNodes\n"
	      "      --procs N        spec.trainer.numProcPerNode\n"
	      "  -e, --env K=V        spec.trainer.env (repeatable)\n"
	      "      --dataset URI    spec.initializer.dataset.storageUri (hf://, s3://,\n"
	      "                       https://, file://)\n"
	      "      --model URI      spec.initializer.model.storageUri\n"
	      "      --image IMAGE    spec.trainer.image (recorded; not used locally)\n"
	      "      --export-to URI  where the model goes once the job completes: s3://BUCKET/\n"
	      "                       PREFIX, file:///DIR or models:/NAME (the annotation\n"
	      "                       tracking.kftrainer.dev/export-to; docs/tracking.md)\n"
	      "      --export-from PATH  the output exported (tracking.kftrainer.dev/export-from;\n"
	      "                       default /workspace/output)\n"
	      "      --register-to M  once exported, a version of model M in the Kubeflow Model\n"
	      "                       Registry at $KFTRAINER_MODEL_REGISTRY_URL\n"
	      "                       (tracking.kftrainer.dev/register-to)\n"
	      "      --follow         stream the pods' logs, each line prefixed [STEP-INDEX]\n"
	      "                       (\"[node-1] ...\"), until the job ends; exit with its "
	      "outcome\n"
	      "      --rm             delete the job when this command exits; implies --follow\n"
	      "      --job-workdir    start the job's processes in a fresh directory of the\n"
	      "                       job's own (removed with it), not the current directory\n"
	      "      --plugin PATH    load an out-of-tree plugin (a shared object; repeatable);\n"
	      "                       default: $KFTRAINER_PLUGINS (colon-separated), else the\n"
	      "                       state directory's plugins file. The job's supervisor\n"
	      "                       loads the same files\n"
	      "  -h, --help           this help\n\n"
	      "What each runtime sets (it starts nothing else; COMMAND runs once per node):\n"
	      "  torch-distributed    PET_NNODES PET_NPROC_PER_NODE PET_NODE_RANK\n"
	      "                       PET_MASTER_ADDR PET_MASTER_PORT: no torchrun is launched,\n"
	      "                       so COMMAND must be torchrun or start its workers itself;\n"
	      "                       --procs starts no processes (it sets PET_NPROC_PER_NODE)\n"
	      "  jax-distributed      JAX_COORDINATOR_ADDRESS JAX_NUM_PROCESSES JAX_PROCESS_ID:\n"
	      "                       pass them to jax.distributed.initialize() explicitly\n"
	      "  xgboost-distributed  DMLC_TRACKER_URI DMLC_TRACKER_PORT DMLC_NUM_WORKER\n"
	      "                       DMLC_TASK_ID: worker 0 starts the tracker\n"
	      "  MPI runtimes         the launcher gets /etc/mpi/hostfile and OMPI_MCA_*; COMMAND\n"
	      "                       is mpirun\n"
	      "Examples: examples/local/ (docs/runtimes.md). Every process also gets TMPDIR (the\n"
	      "job's own, removed with it) and PYTHONUNBUFFERED=1.\n\n"
	      "GPUs: a node asking for nvidia.com/gpu (resourcesPerNode) gets its own\n"
	      "CUDA_VISIBLE_DEVICES slice; more than are free is refused. The inventory is\n"
	      "$KFTRAINER_GPUS (\"\", N, or a list of indices/UUIDs) when set, else NVML.\n\n"
	      "Interrupting --follow (Ctrl-C) leaves the job running (reattach with\n"
	      "kftrainer logs -f NAME) unless --rm was given, which deletes it.\n\n"
	      "Exit status: 0 submitted (with --follow: the job completed); 1 invalid TrainJob,\n"
	      "unknown runtime, a job of that name exists, or (--follow) the job failed or was\n"
	      "deleted; 2 bad usage, unreadable input or a plugin that cannot be loaded; 128+N "
	      "when signal N stopped --follow.\n",
	      out);
}

static const struct option train_options[] = {
        {"filename", required_argument, NULL, 'f'},
        {"runtimes", required_argument, NULL, 'r'},
        {"namespace", required_argument, NULL, 'n'},
        {"runtime", required_argument, NULL, 'R'},
        {"name", required_argument, NULL, 'N'},
        {"nodes", required_argument, NULL, 'a'},
        {"procs", required_argument, NULL, 'p'},
        {"env", required_argument, NULL, 'e'},
        {"dataset", required_argument, NULL, 'd'},
        {"model", required_argument, NULL, 'm'},
        {"image", required_argument, NULL, 'i'},
        {"export-to", required_argument, NULL, 'X'},
        {"export-from", required_argument, NULL, 'Y'},
        {"register-to", required_argument, NULL, 'M'},
        {"follow", no_argument, NULL, 'F'},
        {"rm", no_argument, NULL, 'x'},
        {"job-workdir", no_argument, NULL, 'W'},
        {"plugin", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

/* Stores one option; returns 0 or an exit code. */
static int take_option(int c, train_args *a)
{
	int rc = 0;
	switch (c) {
	case 'f': rc = kft_paths_add(&a->files, optarg); break;
	case 'r': rc = kft_paths_add(&a->runtimes, optarg); break;
	case 'e': rc = kft_paths_add(&a->env, optarg); break;
	case 'P': rc = kft_paths_add(&a->plugins, optarg); break;
	case 'n': a->ns = optarg; break;
	case 'R': a->runtime = optarg; break;
	case 'N': a->name = optarg; break;
	case 'a': a->nodes = optarg; break;
	case 'p': a->procs = optarg; break;
	case 'd': a->dataset = optarg; break;
	case 'm': a->model = optarg; break;
	case 'i': a->image = optarg; break;
	case 'X': a->export_to = optarg; break;
	case 'Y': a->export_from = optarg; break;
	case 'M': a->register_to = optarg; break;
	case 'F': a->follow = true; break;
	case 'x': a->rm = a->follow = true; break;
	case 'W': a->job_workdir = true; break;
	case 'h': train_usage(stdout); return -1;
	default: train_usage(stderr); return KFT_EXIT_USAGE;
	}
	return rc == 0 ? 0 : KFT_EXIT_INPUT;
}

/* The flags only the shortcut takes, when given with -f. */
static const char *shortcut_flag_with_file(const train_args *a)
{
	if (a->name)
		return "--name";
	if (a->nodes)
		return "--nodes";
	if (a->procs)
		return "--procs";
	if (a->env.count)
		return "--env";
	if (a->dataset)
		return "--dataset";
	if (a->model)
		return "--model";
	if (a->image)
		return "--image";
	if (a->export_to)
		return "--export-to";
	if (a->export_from)
		return "--export-from";
	if (a->register_to)
		return "--register-to";
	return a->ncommand ? "COMMAND" : NULL;
}

static int parse_args(int argc, char **argv, train_args *a)
{
	int c, rc;
	optind = 1;
	/* "+": options end at the first word of COMMAND, with or without "--". */
	while ((c = getopt_long(argc, argv, "+f:r:n:e:h", train_options, NULL)) != -1)
		if ((rc = take_option(c, a)) != 0)
			return rc;
	a->command = argv + optind;
	a->ncommand = argc - optind;
	const char *flag = shortcut_flag_with_file(a);
	if (a->files.count && a->runtime) {
		kft_cli_error("train: give -f FILE or --runtime NAME, not both");
		return KFT_EXIT_USAGE;
	}
	if (!a->files.count && !a->runtime) {
		kft_cli_error("train: give -f TRAINJOB.yaml, or --runtime NAME -- COMMAND");
		return KFT_EXIT_USAGE;
	}
	if (a->files.count && flag) {
		kft_cli_error("train: %s belongs to the --runtime shortcut; with -f, set it in the "
		              "TrainJob",
		              flag);
		return KFT_EXIT_USAGE;
	}
	return 0;
}

/* An int32 flag value (range checks on the field are the schema's). */
static int parse_int(const char *flag, const char *s, json_int_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < INT32_MIN || v > INT32_MAX) {
		kft_cli_error("%s: \"%s\" is not a whole number", flag, s);
		return KFT_EXIT_USAGE;
	}
	*out = v;
	return 0;
}

static int is_namespaced_runtime(const json_t *rt, const char *name, const char *ns)
{
	const json_t *meta = json_object_get(rt, "metadata");
	const char *kind = json_string_value(json_object_get(rt, "kind"));
	const char *n = json_string_value(json_object_get(meta, "name"));
	const char *rns = json_string_value(json_object_get(meta, "namespace"));
	return kind && n && strcmp(kind, "TrainingRuntime") == 0 && strcmp(n, name) == 0 &&
	       strcmp(rns ? rns : "default", ns) == 0;
}

/* ClusterTrainingRuntime unless a TrainingRuntime of that name is in ns,
 * among the checked runtimes or the records not checked yet. */
static const char *runtime_kind(const kft_jobinput *in, const char *name, const char *ns)
{
	size_t i;
	const json_t *rt;
	json_array_foreach(in->runtimes, i, rt)
	{
		if (is_namespaced_runtime(rt, name, ns))
			return "TrainingRuntime";
	}
	json_array_foreach(in->unchecked, i, rt)
	{
		if (is_namespaced_runtime(json_object_get(rt, "object"), name, ns))
			return "TrainingRuntime";
	}
	return "ClusterTrainingRuntime";
}

static json_t *env_list(const kft_paths *env)
{
	json_t *list = json_array();
	for (size_t i = 0; i < env->count; i++) {
		const char *kv = env->items[i], *eq = strchr(kv, '=');
		if (!eq || eq == kv) {
			kft_cli_error("--env: \"%s\" is not NAME=VALUE", kv);
			json_decref(list);
			return NULL;
		}
		json_array_append_new(list, json_pack("{s:s%, s:s}", "name", kv, (size_t)(eq - kv),
		                                      "value", eq + 1));
	}
	return list;
}

/* spec.trainer from the shortcut's flags into trainer. Returns 0 or an
 * exit code (reported). */
static int shortcut_trainer(const train_args *a, json_t *trainer)
{
	json_int_t v;
	if (a->nodes && parse_int("--nodes", a->nodes, &v) != 0)
		return KFT_EXIT_USAGE;
	if (a->nodes)
		json_object_set_new(trainer, "numNodes", json_integer(v));
	if (a->procs && parse_int("--procs", a->procs, &v) != 0)
		return KFT_EXIT_USAGE;
	if (a->procs)
		json_object_set_new(trainer, "numProcPerNode", json_integer(v));
	if (a->image)
		json_object_set_new(trainer, "image", json_string(a->image));
	if (a->ncommand) {
		json_t *cmd = json_array();
		for (int i = 0; i < a->ncommand; i++)
			json_array_append_new(cmd, json_string(a->command[i]));
		json_object_set_new(trainer, "command", cmd);
	}
	if (a->env.count) {
		json_t *env = env_list(&a->env);
		if (!env)
			return KFT_EXIT_USAGE;
		json_object_set_new(trainer, "env", env);
	}
	return 0;
}

/* metadata.annotations from the shortcut's export flags (the TrainJob's
 * check judges the values, as it does a file's). */
static int shortcut_annotations(const train_args *a, json_t *meta)
{
	if ((a->export_from || a->register_to) && !a->export_to) {
		kft_cli_error("train: %s needs --export-to",
		              a->export_from ? "--export-from" : "--register-to");
		return KFT_EXIT_USAGE;
	}
	if (!a->export_to)
		return 0;
	json_t *ann = json_pack("{s:s}", KFT_TRACK_ANN_EXPORT_TO, a->export_to);
	if (ann && a->export_from)
		json_object_set_new(ann, KFT_TRACK_ANN_EXPORT_FROM, json_string(a->export_from));
	if (ann && a->register_to)
		json_object_set_new(ann, KFT_TRACK_ANN_REGISTER_TO, json_string(a->register_to));
	if (!ann || json_object_set_new(meta, "annotations", ann) != 0) {
		kft_cli_error("out of memory");
		return KFT_EXIT_FAILED;
	}
	return 0;
}

/* The TrainJob the shortcut describes (new reference in *out). */
static int shortcut_job(const train_args *a, const kft_jobinput *in, json_t **out)
{
	char *generated = NULL;
	const char *ns = a->ns ? a->ns : "default";
	if (!a->name && kft_cli_generate_name(NULL, &generated) != 0) {
		kft_cli_error("train: cannot generate a name: %s", strerror(errno));
		return KFT_EXIT_FAILED;
	}
	json_t *job =
	        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:s, s:s}, s:{}}}", "apiVersion",
	                  "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                  a->name ? a->name : generated, "namespace", ns, "spec", "runtimeRef",
	                  "name", a->runtime, "kind", runtime_kind(in, a->runtime, ns), "trainer");
	free(generated);
	if (!job) {
		kft_cli_error("out of memory");
		return KFT_EXIT_FAILED;
	}
	json_t *spec = json_object_get(job, "spec");
	int rc = shortcut_trainer(a, json_object_get(spec, "trainer"));
	if (rc == 0)
		rc = shortcut_annotations(a, json_object_get(job, "metadata"));
	if (rc == 0 && (a->dataset || a->model)) {
		json_t *init = json_object();
		if (a->dataset)
			json_object_set_new(init, "dataset",
			                    json_pack("{s:s}", "storageUri", a->dataset));
		if (a->model)
			json_object_set_new(init, "model",
			                    json_pack("{s:s}", "storageUri", a->model));
		json_object_set_new(spec, "initializer", init);
	}
	if (rc != 0)
		json_decref(job);
	else
		*out = job;
	return rc;
}

/* Reads and checks everything; in->jobs then holds the TrainJobs. */
static int gather(train_args *a, kft_jobinput *in)
{
	in->ns = a->ns;
	in->generate_names = true;
	/* Only the runtime a TrainJob references is checked (at resolution), so
	 * an unrelated broken runtime neither blocks the job nor costs time. */
	in->defer_runtimes = true;
	in->runtime_name = a->runtime;
	int rc = kft_jobinput_default_runtimes("train", &a->runtimes);
	if (rc == 0)
		rc = kft_jobinput_read(in, &a->files, &a->runtimes);
	if (rc == 0 && a->runtime) {
		json_t *job = NULL;
		rc = shortcut_job(a, in, &job);
		if (rc == 0)
			rc = kft_jobinput_add(in, FLAGS_SOURCE, job);
		json_decref(job);
	}
	if (rc == 0 && json_array_size(in->jobs) == 0) {
		kft_cli_error("train: no TrainJob in the input");
		rc = KFT_EXIT_INVALID;
	}
	if (rc == 0 && a->follow && json_array_size(in->jobs) != 1) {
		kft_cli_error("train: --follow and --rm take one TrainJob; the input has %zu",
		              json_array_size(in->jobs));
		rc = KFT_EXIT_USAGE;
	}
	return rc;
}

/* Resolves every TrainJob's runtime before anything is submitted; the
 * runtimes (borrowed) go into resolved, in job order. */
static int resolve_all(kft_jobinput *in, const kft_framework *fw, json_t *resolved)
{
	int rc = 0;
	size_t i;
	json_t *rec;
	json_array_foreach(in->jobs, i, rec)
	{
		const json_t *rt = NULL;
		if (kft_jobinput_check_runtimes(in, rec) == 0)
			rt = kft_jobinput_resolve(in, fw, NULL, rec);
		if (!rt)
			rc = KFT_EXIT_INVALID;
		else
			json_array_append(resolved, (json_t *)rt);
	}
	return rc;
}

/* Submits every TrainJob; the first one's name and namespace (malloc'd)
 * go to *first_name and *first_ns, for --follow and --rm. */
static int submit_all(kft_local *l, const kft_framework *fw, const kft_jobinput *in,
                      const json_t *resolved, const kft_submit_opts *base, char **first_name,
                      char **first_ns)
{
	size_t i;
	json_t *rec;
	json_array_foreach(in->jobs, i, rec)
	{
		char *name = NULL;
		kft_error err;
		const json_t *job = json_object_get(rec, "object");
		kft_submit_opts opts = *base;
		opts.objects = in->others;
		if (kft_local_submit(l, fw, job, json_array_get(resolved, i), &opts, &name, &err) !=
		    0) {
			kft_cli_error("%s", err.message);
			return KFT_EXIT_FAILED;
		}
		printf(KFT_CLI_RESOURCE "/%s created\n", name);
		fflush(stdout);
		if (i == 0) {
			*first_name = name;
			*first_ns = strdup(kft_cli_job_ns(job));
		} else {
			free(name);
		}
	}
	return 0;
}

/* ---- --follow ---------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: a sleeping poll wakes at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a closed stdout ends following, not the CLI */
}

/* The outcome line and exit code once the job ended. */
static int report_outcome(const char *name, const json_t *job)
{
	const char *outcome = kft_cli_job_outcome(job);
	const json_t *c = outcome ? kft_cli_condition_true(job, outcome) : NULL;
	const char *reason = json_string_value(json_object_get(c, "reason"));
	const char *message = json_string_value(json_object_get(c, "message"));
	if (outcome && strcmp(outcome, "Complete") == 0) {
		fprintf(stderr, KFT_CLI_RESOURCE "/%s Complete\n", name);
		return KFT_EXIT_OK;
	}
	fprintf(stderr, KFT_CLI_RESOURCE "/%s Failed%s%s%s%s\n", name, reason ? ": " : "",
	        reason ? reason : "", message ? ": " : "", message ? message : "");
	return KFT_EXIT_FAILED;
}

static int follow(kft_local *l, const char *ns, const char *name, bool rm)
{
	kft_logstream_opts o = {.ns = ns,
	                        .name = name,
	                        .node = -1,
	                        .prefix = true,
	                        .follow = true,
	                        .through_suspend = true,
	                        .stop = &stop_signal};
	kft_logstream_end end = KFT_LOGSTREAM_DONE;
	json_t *job = NULL;
	int rc = kft_logstream_run(l, &o, &end, &job);
	if (rc == 0 && end == KFT_LOGSTREAM_DONE) {
		rc = report_outcome(name, job);
	} else if (rc == 0 && end == KFT_LOGSTREAM_GONE) {
		kft_cli_error("trainjob %s was deleted", name);
		rc = KFT_EXIT_FAILED;
	} else if (rc == 0) {
		rc = stop_signal ? 128 + stop_signal : KFT_EXIT_FAILED;
		bool other_ns = strcmp(ns, "default") != 0;
		if (!rm)
			kft_cli_error(
			        "stopped following; trainjob %s keeps running. Reattach with: "
			        "kftrainer logs -f %s%s%s",
			        name, name, other_ns ? " -n " : "", other_ns ? ns : "");
	}
	json_decref(job);
	return rc;
}

static void remove_job(kft_local *l, const char *name, const char *ns)
{
	kft_error err;
	char why[1024];
	if (kft_local_export_pending(l, ns, name, why, sizeof(why)))
		kft_cli_error("--rm: trainjob %s kept: its model is not exported (%s)", name, why);
	else if (kft_local_delete(l, ns, name, &err) == 0)
		printf(KFT_CLI_RESOURCE " \"%s\" deleted\n", name);
	else if (err.code != KFT_ENOTFOUND)
		kft_cli_error("--rm: %s", err.message);
	fflush(stdout);
}

/* ---- the verb ------------------------------------------------------------------ */

static int submit_and_follow(train_args *a, kft_jobinput *in, kft_local *l)
{
	kft_framework *fw = NULL;
	char *name = NULL, *ns = NULL;
	json_t *resolved = json_array(), *recorded = json_array();
	int rc = kft_jobinput_framework("train", KFT_LOCAL_FEATURES, &a->plugins, &fw, recorded);
	if (rc == 0)
		rc = resolve_all(in, fw, resolved);
	if (rc == 0 && a->follow)
		catch_stop_signals();
	if (rc == 0)
		rc = submit_all(
		        l, fw, in, resolved,
		        &(kft_submit_opts){.job_workdir = a->job_workdir, .plugins = recorded},
		        &name, &ns);
	if (rc == 0 && name && !ns) {
		kft_cli_error("out of memory");
		rc = KFT_EXIT_FAILED;
	}
	if (rc == 0 && a->follow)
		rc = follow(l, ns, name, a->rm);
	if (name && ns && a->rm)
		remove_job(l, name, ns);
	free(name);
	free(ns);
	kft_framework_free(fw);
	json_decref(resolved);
	json_decref(recorded);
	return rc;
}

static int run_train(int argc, char **argv)
{
	train_args a = {0};
	kft_jobinput in;
	kft_local *l = NULL;
	memset(&in, 0, sizeof(in));
	int rc = parse_args(argc, argv, &a);
	/* The job's supervisor starts first (local.h), before the input is read. */
	if (rc == 0)
		rc = kft_cli_open_local_to_submit(&l);
	if (rc == 0)
		rc = kft_jobinput_init(&in, stderr);
	if (rc == 0)
		rc = gather(&a, &in);
	if (rc == 0)
		rc = submit_and_follow(&a, &in, l);
	kft_local_close(l);
	kft_jobinput_free(&in);
	kft_paths_free(&a.files);
	kft_paths_free(&a.runtimes);
	kft_paths_free(&a.env);
	kft_paths_free(&a.plugins);
	return rc < 0 ? KFT_EXIT_OK : rc;
}

const kft_verb kft_verb_train = {
        .name = "train",
        .summary = "run a TrainJob on this machine",
        .run = run_train,
        .usage = train_usage,
};
