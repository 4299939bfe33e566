/*
 * render.c - `kftrainer render`: print every object the Kubernetes backend
 * would apply for a TrainJob, in apply order, offline and without side
 * effects. The same pipeline the controller and the local backend run, with
 * the default backend: Kubernetes addressing, nothing on the cluster yet, no
 * UID (owner references carry apiVersion, kind and name, and a note says
 * so).
 *
 *   -o yaml   one document per object (default)
 *   -o json   one v1 List whose items are the objects
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "inputs.h"
#include "kftrainer/decode.h"
#include "kftrainer/framework.h"
#include "kftrainer/object.h"

#ifndef KFT_RUNTIMES_DIR
#define KFT_RUNTIMES_DIR "/usr/local/share/kftrainer/runtimes"
#endif

typedef struct render_opts {
	kft_paths jobs, runtimes, plugins;
	int json;
} render_opts;

static void render_usage(FILE *out)
{
	fputs("Usage: kftrainer render -f TRAINJOB.yaml [-r RUNTIME.yaml|DIR ...] [-o yaml|json]\n"
	      "                        [--plugin PATH.so ...]\n\n"
	      "Print every object the Kubernetes backend would apply for each TrainJob in the\n"
	      "input (JobSet, SSH Secret, hostfile ConfigMap, PodGroup ...), in apply order,\n"
	      "offline and without side effects.\n\n"
	      "Options:\n"
	      "  -f, --filename PATH  TrainJob file or - for stdin (repeatable); runtimes in it\n"
	      "                       are used too\n"
	      "  -r, --runtimes PATH  runtime file or directory (repeatable); default:\n"
	      "                       $KFTRAINER_RUNTIMES, ./manifests/runtimes, or the\n"
	      "                       installed " KFT_RUNTIMES_DIR "\n"
	      "  -o, --output FORMAT  yaml (default: one document per object) or json (a v1 List)\n"
	      "      --plugin PATH    load an out-of-tree plugin (a shared object; repeatable)\n"
	      "  -h, --help           this help\n\n"
	      "Exit status: 0 rendered, 1 invalid TrainJob or runtime (field errors printed),\n"
	      "2 unreadable input, unknown runtime directory or plugin that cannot be loaded.\n",
	      out);
}

static int parse_args(int argc, char **argv, render_opts *o)
{
	static const struct option opts[] = {
	        {"filename", required_argument, NULL, 'f'},
	        {"runtimes", required_argument, NULL, 'r'},
	        {"output", required_argument, NULL, 'o'},
	        {"plugin", required_argument, NULL, 'p'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:r:o:h", opts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 'f': rc = kft_paths_add(&o->jobs, optarg); break;
		case 'r': rc = kft_paths_add(&o->runtimes, optarg); break;
		case 'p': rc = kft_paths_add(&o->plugins, optarg); break;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "yaml") != 0) {
				kft_cli_error("--output: unsupported format \"%s\" (yaml or json)",
				              optarg);
				return KFT_EXIT_USAGE;
			}
			o->json = strcmp(optarg, "json") == 0;
			break;
		case 'h': render_usage(stdout); return -1;
		default: render_usage(stderr); return KFT_EXIT_USAGE;
		}
		if (rc != 0)
			return KFT_EXIT_INPUT;
	}
	for (int i = optind; i < argc; i++)
		if (kft_paths_add(&o->jobs, argv[i]) != 0)
			return KFT_EXIT_INPUT;
	if (o->jobs.count == 0) {
		kft_cli_error("render: no TrainJob; give -f FILE or - for stdin");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The installed runtimes next to this executable: BIN/../share/kftrainer/
 * runtimes, so an installed tree works wherever it was installed. */
static int installed_runtimes(char *buf, size_t size)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	int w = snprintf(buf, size, "%s/../share/kftrainer/runtimes", exe);
	return (w < 0 || (size_t)w >= size) ? -1 : 0;
}

/* The runtime inputs: -r, else $KFTRAINER_RUNTIMES, ./manifests/runtimes,
 * the runtimes installed beside this binary, or the configured directory,
 * whichever exists first. */
static int default_runtimes(kft_paths *runtimes)
{
	if (runtimes->count)
		return 0;
	char beside[4200];
	const char *env = getenv("KFTRAINER_RUNTIMES");
	const char *cands[] = {env, "manifests/runtimes",
	                       installed_runtimes(beside, sizeof(beside)) == 0 ? beside : NULL,
	                       KFT_RUNTIMES_DIR};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (cands[i] && *cands[i] && is_dir(cands[i]))
			return kft_paths_add(runtimes, cands[i]);
	kft_cli_error("render: no runtimes: give -r FILE|DIR (no manifests/runtimes here and "
	              "no %s)",
	              KFT_RUNTIMES_DIR);
	return -1;
}

/* Reads every object of the inputs into records ({file, object}). */
static int read_all(const kft_paths *inputs, json_t *records)
{
	kft_paths files = {0};
	int failures = kft_inputs_expand(inputs, &files);
	for (size_t i = 0; i < files.count; i++)
		if (kft_inputs_read(files.items[i], records) != 0)
			failures++;
	kft_paths_free(&files);
	return failures;
}

static void print_errors(const char *file, const json_t *obj, const kft_field_errors *errs)
{
	char *ref = kft_object_ref(obj, 1);
	for (size_t i = 0; i < errs->count; i++) {
		char *line = kft_field_error_format(&errs->items[i]);
		printf("%s: %s: %s\n", file, ref ? ref : "?", line ? line : "(no memory)");
		free(line);
	}
	for (size_t i = 0; i < errs->nwarnings; i++)
		fprintf(stderr, "%s: %s: Warning: %s\n", file, ref ? ref : "?", errs->warnings[i]);
	free(ref);
}

/* Checks every object, sorting TrainJobs and runtimes into two arrays.
 * Returns the number of invalid objects (their errors printed). */
static int sort_and_check(const kft_schema *schema, json_t *records, json_t *jobs, json_t *runtimes)
{
	int invalid = 0;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	{
		json_t *obj = json_object_get(r, "object");
		const char *file = json_string_value(json_object_get(r, "file"));
		kft_field_errors errs;
		kft_field_errors_init(&errs);
		const kft_kind_info *kind = NULL;
		kft_object_check(schema, obj, NULL, &errs, &kind);
		if (errs.count) {
			print_errors(file, obj, &errs);
			invalid++;
		} else if (kind && strcmp(kind->kind, "TrainJob") == 0) {
			json_array_append(jobs, r);
		} else if (kind) {
			json_array_append(runtimes, obj);
		}
		kft_field_errors_free(&errs);
	}
	return invalid;
}

static int render_job(const kft_framework *fw, const json_t *record, const json_t *runtimes,
                      json_t *objects)
{
	const json_t *job = json_object_get(record, "object");
	const char *file = json_string_value(json_object_get(record, "file"));
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	const json_t *runtime = kft_resolve_runtime(job, runtimes, &errs);
	kft_error err = {0};
	int rc = 0;
	if (runtime)
		rc = kft_framework_validate(fw, NULL, runtime, NULL, job, &errs, &err);
	if (errs.count || errs.nwarnings)
		print_errors(file, job, &errs);
	int invalid = errs.count != 0;
	kft_field_errors_free(&errs);
	if (invalid)
		return KFT_EXIT_INVALID;
	json_t *built = NULL;
	if (rc == 0)
		rc = kft_framework_build(fw, NULL, job, runtime, &built, &err);
	if (rc != 0) {
		kft_cli_error("render: %s: %s", file, err.message);
		return KFT_EXIT_INVALID;
	}
	json_array_extend(objects, built);
	json_decref(built);
	return 0;
}

static void print_objects(const json_t *objects, int as_json)
{
	if (as_json) {
		json_t *list = json_pack("{s:s, s:s, s:O, s:{}}", "apiVersion", "v1", "kind",
		                         "List", "items", objects, "metadata");
		json_dumpf(list, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(list);
		return;
	}
	puts("# Rendered offline by kftrainer: ownerReferences name the TrainJob but carry no "
	     "uid.");
	size_t i;
	const json_t *o;
	json_array_foreach(objects, i, o) kft_yaml_emit_file(stdout, o, 1, NULL);
}

static int load_plugins(kft_framework *fw, const kft_paths *plugins)
{
	for (size_t i = 0; i < plugins->count; i++) {
		kft_error err;
		if (kft_framework_load_plugin(fw, plugins->items[i], &err) != 0) {
			kft_cli_error("%s", err.message);
			return -1;
		}
	}
	return 0;
}

static int run_render(int argc, char **argv)
{
	render_opts o = {0};
	int rc = parse_args(argc, argv, &o);
	kft_framework *fw = NULL;
	json_t *records = json_array(), *jobs = json_array(), *runtimes = json_array();
	json_t *objects = json_array();
	kft_error err;
	const kft_schema *schema = NULL;
	if (rc == 0 && (default_runtimes(&o.runtimes) != 0 || !(schema = kft_schema_builtin(&err))))
		rc = KFT_EXIT_INPUT;
	if (rc == 0 && (read_all(&o.jobs, records) || read_all(&o.runtimes, records)))
		rc = KFT_EXIT_INPUT;
	if (rc == 0 && sort_and_check(schema, records, jobs, runtimes) != 0)
		rc = KFT_EXIT_INVALID;
	if (rc == 0 && json_array_size(jobs) == 0) {
		kft_cli_error("render: no TrainJob in the input");
		rc = KFT_EXIT_INVALID;
	}
	if (rc == 0 && (kft_framework_new(0, &fw, &err) != 0 || load_plugins(fw, &o.plugins) != 0))
		rc = KFT_EXIT_INPUT;
	size_t i;
	json_t *job;
	json_array_foreach(jobs, i, job) if (rc == 0) rc = render_job(fw, job, runtimes, objects);
	if (rc == 0)
		print_objects(objects, o.json);
	kft_framework_free(fw);
	json_decref(records);
	json_decref(jobs);
	json_decref(runtimes);
	json_decref(objects);
	kft_paths_free(&o.jobs);
	kft_paths_free(&o.runtimes);
	kft_paths_free(&o.plugins);
	return rc < 0 ? KFT_EXIT_OK : rc;
}

const kft_verb kft_verb_render = {
        .name = "render",
        .summary = "print the objects a TrainJob becomes, offline",
        .run = run_render,
        .usage = render_usage,
};
