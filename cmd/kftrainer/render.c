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

#include "cli.h"
#include "inputs.h"
#include "jobinput.h"
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
	      "                       $KFTRAINER_RUNTIMES, ./manifests/runtimes, BIN/../share/\n"
	      "                       kftrainer/runtimes, the checkout's for a build-tree\n"
	      "                       binary, or the installed " KFT_RUNTIMES_DIR "\n"
	      "  -o, --output FORMAT  yaml (default: one document per object) or json (a v1 List)\n"
	      "      --plugin PATH    load an out-of-tree plugin (a shared object; repeatable);\n"
	      "                       default: $KFTRAINER_PLUGINS (colon-separated), else the\n"
	      "                       state directory's plugins file (docs/plugins.md)\n"
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

static int render_job(const kft_jobinput *in, const kft_framework *fw, const json_t *record,
                      json_t *objects)
{
	const json_t *runtime = kft_jobinput_resolve(in, fw, NULL, record);
	if (!runtime)
		return KFT_EXIT_INVALID;
	json_t *built = NULL;
	kft_error err;
	const json_t *job = json_object_get(record, "object");
	if (kft_framework_build(fw, NULL, job, runtime, &built, &err) != 0) {
		kft_cli_error("render: %s: %s", json_string_value(json_object_get(record, "file")),
		              err.message);
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

static int run_render(int argc, char **argv)
{
	render_opts o = {0};
	kft_jobinput in;
	kft_framework *fw = NULL;
	json_t *objects = json_array();
	kft_error err;
	int rc = parse_args(argc, argv, &o);
	if (rc == 0)
		rc = kft_jobinput_init(&in, stdout);
	else
		memset(&in, 0, sizeof(in));
	if (rc == 0)
		rc = kft_jobinput_default_runtimes("render", &o.runtimes);
	if (rc == 0)
		rc = kft_jobinput_read(&in, &o.jobs, &o.runtimes);
	if (rc == 0 && json_array_size(in.jobs) == 0) {
		kft_cli_error("render: no TrainJob in the input");
		rc = KFT_EXIT_INVALID;
	}
	if (rc == 0 && kft_framework_new(0, &fw, &err) != 0) {
		kft_cli_error("render: %s", err.message);
		rc = KFT_EXIT_INPUT;
	}
	kft_paths plugins = {0};
	if (rc == 0)
		rc = kft_jobinput_plugin_paths(&o.plugins, &plugins);
	if (rc == 0)
		rc = kft_jobinput_load_plugins(fw, &plugins);
	kft_paths_free(&plugins);
	size_t i;
	json_t *job;
	json_array_foreach(in.jobs, i, job) if (rc == 0) rc = render_job(&in, fw, job, objects);
	if (rc == 0)
		print_objects(objects, o.json);
	kft_framework_free(fw);
	kft_jobinput_free(&in);
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
