/*
 * validate.c - `kftrainer validate`: check trainer.kubeflow.org objects
 * offline, reporting every problem the API server (with our CRDs) and
 * upstream's webhooks would, one line each:
 *
 *     FILE: KIND/NAMESPACE/NAME: FIELD-PATH: message
 *
 * Exit 0 when every object is valid, 1 when any is invalid, 2 when an input
 * cannot be read or parsed. Directories are walked recursively in name
 * order for *.yaml, *.yml and *.json (kustomization files and dot-files are
 * not objects and are passed over).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inputs.h"
#include "jobinput.h"
#include "kftrainer/corev1.h"
#include "kftrainer/decode.h"
#include "kftrainer/object.h"
#include "kftrainer/schema.h"

typedef struct tally {
	size_t files, objects, invalid, skipped, unreadable;
	json_t *report;   /* -o json: array of problem records, else NULL */
	json_t *jobs;     /* {"file", "object"} of the valid TrainJobs (defaulted) */
	json_t *runtimes; /* the valid runtimes of the inputs */
} tally;

typedef struct validate_opts {
	kft_paths inputs, runtimes, plugins;
	int json_out, quiet;
} validate_opts;

static void validate_usage(FILE *out)
{
	fputs("Usage: kftrainer validate [-f] FILE|DIR|- ... [-o text|json] [-q]\n"
	      "                          [--plugin PATH.so ...] [-r RUNTIMES ...]\n\n"
	      "Check TrainJob, TrainingRuntime, ClusterTrainingRuntime and OptimizationJob\n"
	      "objects offline, with the defaults, schema, CEL rules and webhook checks the\n"
	      "cluster applies. Prints\n"
	      "one line per problem: FILE: KIND/NAMESPACE/NAME: FIELD-PATH: message\n\n"
	      "Options:\n"
	      "  -f, --filename PATH  a file, a directory (walked recursively) or - for stdin;\n"
	      "                       repeatable, and bare arguments count the same\n"
	      "  -R, --recursive      accepted for kubectl habit; directories always recurse\n"
	      "  -o, --output FORMAT  text (default) or json (one report on stdout)\n"
	      "  -q, --quiet          no summary line on stderr\n"
	      "      --plugin PATH    load an out-of-tree plugin (repeatable); default:\n"
	      "                       $KFTRAINER_PLUGINS (colon-separated), else the state\n"
	      "                       directory's plugins file. With plugins, each valid\n"
	      "                       TrainJob's runtime is resolved and every plugin's\n"
	      "                       CustomValidation runs, as `train` and the controller do\n"
	      "  -r, --runtimes PATH  where runtimes are looked up for that (repeatable), after\n"
	      "                       those in the inputs; default: as `render`\n"
	      "  -h, --help           this help\n\n"
	      "Objects of other Kubernetes kinds (Deployments, CRDs ...) are skipped, except\n"
	      "v1 Secrets and ConfigMaps, which are checked as the API server checks them;\n"
	      "TrainJobs' environment variable names get the check their pods would. Unknown\n"
	      "kinds are errors. Exit status: 0 all valid, 1 some invalid, 2 unreadable input\n"
	      "or a plugin that cannot be loaded.\n",
	      out);
}

static void report(tally *t, const char *file, const char *ref, const char *field,
                   const char *message, const char *severity)
{
	if (t->report) {
		json_array_append_new(t->report,
		                      json_pack("{s:s, s:s, s:s?, s:s, s:s}", "file", file,
		                                "object", ref, "field", field, "message", message,
		                                "severity", severity));
		return;
	}
	if (strcmp(severity, "warning") == 0)
		fprintf(stderr, "%s: %s: Warning: %s\n", file, ref, message);
	else
		printf("%s: %s: %s\n", file, ref, message);
}

static void check_one(const kft_schema *schema, const char *file, json_t *obj, tally *t)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	const kft_kind_info *kind = NULL;
	kft_object_class cls = kft_object_check(schema, obj, NULL, &errs, &kind);
	if (errs.count == 0 && kind && strcmp(kind->kind, "TrainJob") == 0)
		kft_corev1_check_env(json_object_get(obj, "spec"), "spec", &errs);
	t->objects++;
	if (cls == KFT_OBJECT_EXTERNAL && errs.count == 0)
		t->skipped++;
	char *ref = kft_object_ref(obj, kind ? kind->namespaced : 1);
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		report(t, file, ref ? ref : "?", errs.items[i].field, line ? line : "(no memory)",
		       "error");
		free(line);
	}
	for (size_t i = 0; i < errs.nwarnings; i++)
		report(t, file, ref ? ref : "?", NULL, errs.warnings[i], "warning");
	if (errs.count || errs.oom)
		t->invalid++;
	else if (kind && strcmp(kind->kind, "TrainJob") == 0)
		json_array_append_new(t->jobs,
		                      json_pack("{s:s, s:O}", "file", file, "object", obj));
	else if (kind)
		json_array_append(t->runtimes, obj);
	free(ref);
	kft_field_errors_free(&errs);
}

/* Reports a TrainJob's errors from the plugin pass as check_one does. */
static void report_job(tally *t, const char *file, const json_t *job, const kft_field_errors *errs)
{
	char *ref = kft_object_ref(job, 1);
	for (size_t i = 0; i < errs->count; i++) {
		char *line = kft_field_error_format(&errs->items[i]);
		report(t, file, ref ? ref : "?", errs->items[i].field, line ? line : "(no memory)",
		       "error");
		free(line);
	}
	for (size_t i = 0; i < errs->nwarnings; i++)
		report(t, file, ref ? ref : "?", NULL, errs->warnings[i], "warning");
	free(ref);
}

/* With plugins: every valid TrainJob's runtime resolved (among the inputs'
 * runtimes, then those -r or the default lookup finds) and CustomValidation
 * of every plugin run, exactly as `train` and the controller run it. */
static int plugin_pass(validate_opts *o, const kft_paths *plugins, tally *t)
{
	kft_framework *fw = NULL;
	kft_jobinput in;
	kft_error err;
	int rc = kft_jobinput_init(&in, stderr);
	if (rc == 0 && kft_framework_new(0, &fw, &err) != 0) {
		kft_cli_error("validate: %s", err.message);
		rc = KFT_EXIT_INPUT;
	}
	if (rc == 0)
		rc = kft_jobinput_load_plugins(fw, plugins);
	if (rc == 0)
		rc = kft_jobinput_default_runtimes("validate", &o->runtimes);
	if (rc == 0)
		json_array_extend(in.runtimes, t->runtimes);
	kft_paths none = {0};
	if (rc == 0 && kft_jobinput_read(&in, &none, &o->runtimes) == KFT_EXIT_INPUT)
		rc = KFT_EXIT_INPUT;
	size_t i;
	const json_t *rec;
	json_array_foreach(t->jobs, i, rec)
	{
		if (rc != 0)
			break;
		const json_t *job = json_object_get(rec, "object");
		const char *file = json_string_value(json_object_get(rec, "file"));
		kft_field_errors errs;
		kft_field_errors_init(&errs);
		const json_t *rt = kft_resolve_runtime(job, in.runtimes, &errs);
		if (rt && kft_framework_validate(fw, NULL, rt, NULL, job, &errs, &err) != 0) {
			kft_cli_error("%s: %s", file, err.message);
			rc = KFT_EXIT_INPUT;
		}
		report_job(t, file, job, &errs);
		if (errs.count || errs.oom)
			t->invalid++;
		kft_field_errors_free(&errs);
	}
	kft_framework_free(fw);
	kft_jobinput_free(&in);
	return rc;
}

static void check_file(const kft_schema *schema, const char *path, tally *t)
{
	json_t *records = json_array();
	t->files++;
	if (kft_inputs_read(path, records) != 0)
		t->unreadable++;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r)
	        check_one(schema, json_string_value(json_object_get(r, "file")),
	                  json_object_get(r, "object"), t);
	json_decref(records);
}

static int parse_args(int argc, char **argv, validate_opts *o)
{
	static const struct option opts[] = {
	        {"filename", required_argument, NULL, 'f'},
	        {"recursive", no_argument, NULL, 'R'},
	        {"output", required_argument, NULL, 'o'},
	        {"quiet", no_argument, NULL, 'q'},
	        {"plugin", required_argument, NULL, 'P'},
	        {"runtimes", required_argument, NULL, 'r'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c, rc;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:Ro:qr:h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'f': rc = kft_paths_add(&o->inputs, optarg); break;
		case 'P': rc = kft_paths_add(&o->plugins, optarg); break;
		case 'r': rc = kft_paths_add(&o->runtimes, optarg); break;
		case 'R': break;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				kft_cli_error("--output: unsupported format \"%s\" (text or json)",
				              optarg);
				return KFT_EXIT_USAGE;
			}
			o->json_out = strcmp(optarg, "json") == 0;
			break;
		case 'q': o->quiet = 1; break;
		case 'h': validate_usage(stdout); return -1;
		default: validate_usage(stderr); return KFT_EXIT_USAGE;
		}
		if (rc != 0)
			return KFT_EXIT_INPUT;
	}
	for (int i = optind; i < argc; i++)
		if (kft_paths_add(&o->inputs, argv[i]) != 0)
			return KFT_EXIT_INPUT;
	if (o->inputs.count == 0) {
		kft_cli_error("validate: no input; give -f FILE, a directory, or - for stdin");
		return KFT_EXIT_USAGE;
	}
	return 0;
}

static void validate_opts_free(validate_opts *o)
{
	kft_paths_free(&o->inputs);
	kft_paths_free(&o->runtimes);
	kft_paths_free(&o->plugins);
}

static int run_validate(int argc, char **argv)
{
	validate_opts o = {0};
	kft_paths files = {0}, plugins = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc == 0)
		rc = kft_jobinput_plugin_paths(&o.plugins, &plugins);
	if (rc != 0) {
		validate_opts_free(&o);
		kft_paths_free(&plugins);
		return rc < 0 ? KFT_EXIT_OK : rc;
	}
	kft_error err;
	const kft_schema *schema = kft_schema_builtin(&err);
	if (!schema) {
		kft_cli_error("built-in schema: %s", err.message);
		validate_opts_free(&o);
		kft_paths_free(&plugins);
		return KFT_EXIT_INPUT;
	}
	tally t = {.jobs = json_array(), .runtimes = json_array()};
	if (o.json_out)
		t.report = json_array();
	t.unreadable += (size_t)kft_inputs_expand(&o.inputs, &files);
	for (size_t i = 0; i < files.count; i++)
		check_file(schema, files.items[i], &t);
	if (plugins.count)
		rc = plugin_pass(&o, &plugins, &t);
	json_decref(t.jobs);
	json_decref(t.runtimes);
	kft_paths_free(&plugins);
	if (rc != 0) {
		json_decref(t.report);
		validate_opts_free(&o);
		kft_paths_free(&files);
		return rc;
	}
	if (t.report) {
		json_t *doc =
		        json_pack("{s:o, s:I, s:I, s:I, s:I}", "problems", t.report, "files",
		                  (json_int_t)t.files, "objects", (json_int_t)t.objects, "invalid",
		                  (json_int_t)t.invalid, "skipped", (json_int_t)t.skipped);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(doc);
	}
	if (!o.quiet)
		fprintf(stderr,
		        "validated %zu object%s in %zu file%s: %zu invalid, %zu skipped "
		        "(not trainer.kubeflow.org)%s\n",
		        t.objects, t.objects == 1 ? "" : "s", t.files, t.files == 1 ? "" : "s",
		        t.invalid, t.skipped, t.unreadable ? ", some input unreadable" : "");
	validate_opts_free(&o);
	kft_paths_free(&files);
	if (t.unreadable)
		return KFT_EXIT_INPUT;
	return t.invalid ? KFT_EXIT_INVALID : KFT_EXIT_OK;
}

const kft_verb kft_verb_validate = {
        .name = "validate",
        .summary = "check TrainJobs and runtimes offline, with field paths",
        .run = run_validate,
        .usage = validate_usage,
};
