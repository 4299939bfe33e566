/*
 * jobinput.c - TrainJobs and runtimes from the command line, checked exactly
 * as `validate` and the webhooks check them (see jobinput.h). Objects are
 * kept as {"file", "object"} records so every error line can name where the
 * object came from; objects built in memory name a pseudo-file instead.
 */
#include "jobinput.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kftrainer/corev1.h"
#include "kftrainer/decode.h"
#include "local/store.h"

#ifndef KFT_RUNTIMES_DIR
#define KFT_RUNTIMES_DIR "/usr/local/share/kftrainer/runtimes"
#endif

int kft_jobinput_init(kft_jobinput *in, FILE *errors)
{
	kft_error err;
	memset(in, 0, sizeof(*in));
	in->errors = errors;
	in->jobs = json_array();
	in->runtimes = json_array();
	in->unchecked = json_array();
	in->others = json_array();
	in->optjobs = json_array();
	if (!in->jobs || !in->runtimes || !in->unchecked || !in->others || !in->optjobs) {
		kft_cli_error("out of memory");
		return KFT_EXIT_INPUT;
	}
	in->schema = kft_schema_builtin(&err);
	if (!in->schema) {
		kft_cli_error("built-in schema: %s", err.message);
		return KFT_EXIT_INPUT;
	}
	return 0;
}

void kft_jobinput_free(kft_jobinput *in)
{
	json_decref(in->jobs);
	json_decref(in->runtimes);
	json_decref(in->unchecked);
	json_decref(in->others);
	json_decref(in->optjobs);
	in->jobs = in->runtimes = in->unchecked = in->others = in->optjobs = NULL;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory of this executable into buf (no trailing '/'), or -1. */
static int exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* The installed runtimes next to this executable: BIN/../share/kftrainer/
 * runtimes, so an installed tree works wherever it was installed. */
static int installed_runtimes(const char *dir, char *buf, size_t size)
{
	int w = snprintf(buf, size, "%s/../share/kftrainer/runtimes", dir);
	return (w < 0 || (size_t)w >= size) ? -1 : 0;
}

/* The checkout's runtimes, for the binary the build tree holds (CMake bakes
 * both paths in): a `kftrainer` built and not installed then works from any
 * directory, as the README's tour runs it. A copy of the binary elsewhere,
 * or an installed one, never reaches into a checkout. */
static const char *source_runtimes(const char *dir)
{
#if defined(KFT_BUILD_BIN_DIR) && defined(KFT_SOURCE_RUNTIMES_DIR)
	char a[PATH_MAX], b[PATH_MAX];
	if (realpath(dir, a) && realpath(KFT_BUILD_BIN_DIR, b) && strcmp(a, b) == 0)
		return KFT_SOURCE_RUNTIMES_DIR;
#else
	(void)dir;
#endif
	return NULL;
}

int kft_jobinput_default_runtimes(const char *verb, kft_paths *runtimes)
{
	if (runtimes->count)
		return 0;
	char dir[4096], beside[4200];
	const char *env = getenv("KFTRAINER_RUNTIMES");
	bool here = exe_dir(dir, sizeof(dir)) == 0;
	const char *cands[] = {env, "manifests/runtimes",
	                       here && installed_runtimes(dir, beside, sizeof(beside)) == 0 ? beside
	                                                                                    : NULL,
	                       here ? source_runtimes(dir) : NULL, KFT_RUNTIMES_DIR};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (cands[i] && *cands[i] && is_dir(cands[i]))
			return kft_paths_add(runtimes, cands[i]) == 0 ? 0 : KFT_EXIT_INPUT;
	kft_cli_error("%s: no runtimes: give -r FILE|DIR or set KFTRAINER_RUNTIMES (no "
	              "manifests/runtimes here, none beside this binary in "
	              "../share/kftrainer/runtimes, no %s)",
	              verb, KFT_RUNTIMES_DIR);
	return KFT_EXIT_INPUT;
}

/* The runtime names the TrainJob records reference, and in->runtime_name. */
static json_t *wanted_names(const kft_jobinput *in, const json_t *records)
{
	json_t *names = json_array();
	size_t i;
	const json_t *r;
	if (names && in->runtime_name)
		json_array_append_new(names, json_string(in->runtime_name));
	json_array_foreach(records, i, r)
	{
		const json_t *obj = json_object_get(r, "object");
		const char *kind = json_string_value(json_object_get(obj, "kind"));
		const json_t *spec = json_object_get(obj, "spec");
		if (kind && strcmp(kind, "OptimizationJob") == 0)
			spec = json_object_get(json_object_get(spec, "trainJobTemplate"), "spec");
		else if (!kind || strcmp(kind, "TrainJob") != 0)
			continue;
		const json_t *name = json_object_get(json_object_get(spec, "runtimeRef"), "name");
		if (json_is_string(name))
			json_array_append(names, (json_t *)name);
	}
	return names;
}

/* Whether the file at path may hold one of the wanted runtimes: its bytes
 * contain one of the names, or a backslash (an escape could spell one).
 * Anything unusual (stdin, unreadable, too large, no memory) answers yes, so
 * the decoder reads the file and reports what is wrong as it always did. */
static int may_hold(const char *path, const json_t *names)
{
	struct stat st;
	if (!names || strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > KFT_DECODE_MAX_INPUT_BYTES)
		return 1;
	FILE *f = fopen(path, "rb");
	char *buf = f ? malloc((size_t)st.st_size + 1) : NULL;
	size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	int hit = !buf || n != (size_t)st.st_size || memchr(buf, '\\', n) != NULL;
	size_t i;
	const json_t *name;
	json_array_foreach(names, i, name)
	{
		if (!hit && json_string_length(name) &&
		    memmem(buf, n, json_string_value(name), json_string_length(name)))
			hit = 1;
	}
	free(buf);
	if (f)
		fclose(f);
	return hit;
}

/* Reads every object of the inputs into records ({file, object}); with
 * names, only files that may hold one of them. Returns the number of inputs
 * that could not be read (each reported). */
static int read_all(const kft_paths *inputs, json_t *records, const json_t *names)
{
	kft_paths files = {0};
	int failures = kft_inputs_expand(inputs, &files);
	for (size_t i = 0; i < files.count; i++)
		if (may_hold(files.items[i], names) &&
		    kft_inputs_read(files.items[i], records) != 0)
			failures++;
	kft_paths_free(&files);
	return failures;
}

/* namespaced: whether the object's kind lives in a namespace; a
 * ClusterTrainingRuntime is named without one, as validate names it. */
static void print_errors(FILE *out, const char *file, const json_t *obj, int namespaced,
                         const kft_field_errors *errs)
{
	char *ref = kft_object_ref(obj, namespaced);
	for (size_t i = 0; i < errs->count; i++) {
		char *line = kft_field_error_format(&errs->items[i]);
		fprintf(out, "%s: %s: %s\n", file, ref ? ref : "?", line ? line : "(no memory)");
		free(line);
	}
	fflush(out);
	for (size_t i = 0; i < errs->nwarnings; i++)
		fprintf(stderr, "%s: %s: Warning: %s\n", file, ref ? ref : "?", errs->warnings[i]);
	free(ref);
}

/* kubectl's -n rule for namespaced objects of ours: fills a missing
 * namespace; one naming another namespace is refused with kubectl's words.
 * Returns 1 when refused. */
static int wrong_namespace(const kft_jobinput *in, json_t *obj)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	json_t *meta = json_object_get(obj, "metadata");
	if (!in->ns || !kind || !json_is_object(meta) ||
	    (strcmp(kind, "TrainJob") != 0 && strcmp(kind, "TrainingRuntime") != 0))
		return 0;
	const char *have = json_string_value(json_object_get(meta, "namespace"));
	if (!have || !*have) {
		json_object_set_new(meta, "namespace", json_string(in->ns));
		return 0;
	}
	if (strcmp(have, in->ns) == 0)
		return 0;
	fprintf(stderr,
	        "error: the namespace from the provided object \"%s\" does not match the "
	        "namespace \"%s\". You must pass '--namespace=%s' to perform this operation.\n",
	        have, in->ns, have);
	return 1;
}

/* Sets metadata.name from metadata.generateName when only the latter is
 * there. Returns 0, or -1 (reported). */
static int name_from_generate(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	const char *gen = json_string_value(json_object_get(meta, "generateName"));
	char *name = NULL;
	if (!gen || !*gen || json_object_get(meta, "name"))
		return 0;
	if (kft_cli_generate_name(gen, &name) != 0) {
		kft_cli_error("generating a name from \"%s\": %s", gen, strerror(errno));
		return -1;
	}
	json_object_set_new(meta, "name", json_string(name));
	free(name);
	return 0;
}

/* Checks one record's object in place; a valid TrainJob's record goes to
 * in->jobs, a valid runtime to in->runtimes, another Kubernetes kind is
 * passed over. Returns 1 when the object is invalid (errors printed). */
static int is_secret_or_configmap(const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	return av && kind && strcmp(av, "v1") == 0 &&
	       (strcmp(kind, "Secret") == 0 || strcmp(kind, "ConfigMap") == 0);
}

static int check_record(kft_jobinput *in, json_t *record)
{
	json_t *obj = json_object_get(record, "object");
	const char *file = json_string_value(json_object_get(record, "file"));
	if (wrong_namespace(in, obj) || (in->generate_names && name_from_generate(obj) != 0))
		return 1;
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	const kft_kind_info *kind = NULL;
	kft_object_check(in->schema, obj, NULL, &errs, &kind);
	/* The API server checks env names only when the pods are created. */
	if (errs.count == 0 && kind && strcmp(kind->kind, "TrainJob") == 0)
		kft_corev1_check_env(json_object_get(obj, "spec"), "spec", &errs);
	int invalid = errs.count != 0 || errs.oom;
	if (invalid)
		print_errors(in->errors, file, obj, kind ? kind->namespaced : 1, &errs);
	else if (kind && strcmp(kind->kind, "TrainJob") == 0)
		json_array_append(in->jobs, record);
	else if (kind && strcmp(kind->kind, "OptimizationJob") == 0)
		json_array_append(in->optjobs, record);
	else if (kind)
		json_array_append(in->runtimes, obj);
	else if (is_secret_or_configmap(obj))
		json_array_append(in->others, obj);
	kft_field_errors_free(&errs);
	return invalid;
}

static int check_records(kft_jobinput *in, json_t *records)
{
	int invalid = 0;
	size_t i;
	json_t *r;
	json_array_foreach(records, i, r) invalid += check_record(in, r);
	return invalid ? KFT_EXIT_INVALID : 0;
}

int kft_jobinput_read(kft_jobinput *in, const kft_paths *jobs, const kft_paths *runtimes)
{
	json_t *records = json_array(), *names = NULL;
	size_t njobs = 0;
	int rc = 0;
	if (!records)
		rc = KFT_EXIT_INPUT;
	else if (read_all(jobs, records, NULL))
		rc = KFT_EXIT_INPUT;
	njobs = json_array_size(records);
	if (rc == 0 && in->defer_runtimes && !(names = wanted_names(in, records)))
		rc = KFT_EXIT_INPUT;
	if (rc == 0 && runtimes && read_all(runtimes, records, names))
		rc = KFT_EXIT_INPUT;
	json_decref(names);
	/* Deferred runtime records wait in in->unchecked; the TrainJob inputs
	 * (which may hold runtimes too) are checked now as always. */
	while (rc == 0 && in->defer_runtimes && json_array_size(records) > njobs) {
		if (json_array_append(in->unchecked, json_array_get(records, njobs)) != 0 ||
		    json_array_remove(records, njobs) != 0)
			rc = KFT_EXIT_INPUT;
	}
	if (rc == 0)
		rc = check_records(in, records);
	json_decref(records);
	return rc;
}

/* Whether the unchecked record's object is the kind and name ref names. */
static int is_referenced(const json_t *record, const char *kind, const char *name)
{
	const json_t *obj = json_object_get(record, "object");
	const char *k = json_string_value(json_object_get(obj, "kind"));
	const char *n =
	        json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	return k && n && strcmp(k, kind) == 0 && strcmp(n, name) == 0;
}

int kft_jobinput_check_runtimes(kft_jobinput *in, const json_t *record)
{
	const json_t *spec = json_object_get(json_object_get(record, "object"), "spec");
	const json_t *ref = json_object_get(spec, "runtimeRef");
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	const char *name = json_string_value(json_object_get(ref, "name"));
	int invalid = 0;
	if (!kind || !name)
		return 0; /* resolution reports the TrainJob's own problem */
	for (size_t i = 0; i < json_array_size(in->unchecked);) {
		json_t *r = json_array_get(in->unchecked, i);
		if (!is_referenced(r, kind, name)) {
			i++;
			continue;
		}
		invalid += check_record(in, r);
		json_array_remove(in->unchecked, i);
	}
	return invalid ? KFT_EXIT_INVALID : 0;
}

int kft_jobinput_add(kft_jobinput *in, const char *source, const json_t *obj)
{
	json_t *records = json_pack("[{s:s, s:o}]", "file", source, "object", json_deep_copy(obj));
	if (!records) {
		kft_cli_error("out of memory");
		return KFT_EXIT_INPUT;
	}
	int rc = check_records(in, records);
	json_decref(records);
	return rc;
}

json_t *kft_jobinput_template_record(const json_t *optjob_record)
{
	const json_t *opt = json_object_get(optjob_record, "object");
	const json_t *meta = json_object_get(opt, "metadata");
	const json_t *tmpl = json_object_get(json_object_get(opt, "spec"), "trainJobTemplate");
	return json_pack("{s:O?, s:{s:s, s:s, s:{s:O?, s:O?}, s:O?}}", "file",
	                 json_object_get(optjob_record, "file"), "object", "apiVersion",
	                 "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name",
	                 json_object_get(meta, "name"), "namespace",
	                 json_object_get(meta, "namespace"), "spec", json_object_get(tmpl, "spec"));
}

const json_t *kft_jobinput_resolve(const kft_jobinput *in, const kft_framework *fw,
                                   const kft_backend *backend, const json_t *record)
{
	const json_t *job = json_object_get(record, "object");
	const char *file = json_string_value(json_object_get(record, "file"));
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	const json_t *runtime = kft_resolve_runtime(job, in->runtimes, &errs);
	kft_error err = {0};
	int rc = 0;
	if (runtime)
		rc = kft_framework_validate(fw, backend, runtime, NULL, job, &errs, &err);
	if (errs.count || errs.nwarnings)
		print_errors(in->errors, file, job, 1, &errs);
	int invalid = errs.count != 0 || errs.oom;
	kft_field_errors_free(&errs);
	if (invalid)
		return NULL;
	if (rc != 0) {
		kft_cli_error("%s: %s", file, err.message);
		return NULL;
	}
	return runtime;
}

/* ---- plugins ------------------------------------------------------------------ */

/* Appends path, made absolute, to out; `from` says where it was configured
 * for the error. Relative paths are taken against base (NULL: the current
 * directory). */
static int add_plugin_path(kft_paths *out, const char *path, const char *base, const char *from)
{
	char joined[PATH_MAX], abs[PATH_MAX];
	if (base && path[0] != '/') {
		if (snprintf(joined, sizeof(joined), "%s/%s", base, path) >= (int)sizeof(joined)) {
			kft_cli_error("plugin %s (%s): path too long", path, from);
			return KFT_EXIT_INPUT;
		}
		path = joined;
	}
	if (!realpath(path, abs)) {
		kft_cli_error("cannot load plugin %s (%s): %s", path, from, strerror(errno));
		return KFT_EXIT_INPUT;
	}
	return kft_paths_add(out, abs) == 0 ? 0 : KFT_EXIT_INPUT;
}

static int plugins_from_env(const char *value, kft_paths *out)
{
	char *copy = strdup(value), *save = NULL;
	int rc = copy ? 0 : KFT_EXIT_INPUT;
	for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && rc == 0;
	     tok = strtok_r(NULL, ":", &save))
		rc = add_plugin_path(out, tok, NULL, "from " KFT_PLUGINS_ENV);
	free(copy);
	return rc;
}

/* The state directory's plugins file: one path a line; blank lines and
 * lines starting with '#' are passed over, surrounding blanks trimmed. */
static int plugins_from_file(kft_paths *out)
{
	char *dir = kft_store_default_dir(), *file = NULL;
	if (!dir)
		return 0; /* no state directory at all: no file either */
	if (asprintf(&file, "%s/" KFT_PLUGINS_FILE, dir) < 0) {
		free(dir);
		return KFT_EXIT_INPUT;
	}
	FILE *f = fopen(file, "r");
	int rc = 0;
	if (!f && errno != ENOENT) {
		kft_cli_error("%s: %s", file, strerror(errno));
		rc = KFT_EXIT_INPUT;
	}
	char line[PATH_MAX + 2], from[PATH_MAX + 64];
	for (unsigned n = 1; f && rc == 0 && fgets(line, sizeof(line), f); n++) {
		char *s = line, *e = line + strlen(line);
		while (*s == ' ' || *s == '\t')
			s++;
		while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		snprintf(from, sizeof(from), "from %s line %u", file, n);
		rc = add_plugin_path(out, s, dir, from);
	}
	if (f)
		fclose(f);
	free(file);
	free(dir);
	return rc;
}

int kft_jobinput_plugin_paths(const kft_paths *flags, kft_paths *out)
{
	const char *env = getenv(KFT_PLUGINS_ENV);
	if (flags && flags->count) {
		for (size_t i = 0; i < flags->count; i++)
			if (add_plugin_path(out, flags->items[i], NULL, "from --plugin") != 0)
				return KFT_EXIT_INPUT;
		return 0;
	}
	if (env)
		return plugins_from_env(env, out);
	return plugins_from_file(out);
}

int kft_jobinput_load_plugins(kft_framework *fw, const kft_paths *plugins)
{
	for (size_t i = 0; i < plugins->count; i++) {
		kft_error err;
		if (kft_framework_load_plugin(fw, plugins->items[i], &err) != 0) {
			kft_cli_error("%s", err.message);
			return KFT_EXIT_INPUT;
		}
	}
	return 0;
}

int kft_jobinput_framework(const char *verb, unsigned features, const kft_paths *flags,
                           kft_framework **fw, json_t *recorded)
{
	kft_error err;
	kft_paths plugins = {0};
	*fw = NULL;
	int rc = kft_framework_new(features, fw, &err);
	if (rc != 0) {
		kft_cli_error("%s: %s", verb, err.message);
		return KFT_EXIT_FAILED;
	}
	rc = kft_jobinput_plugin_paths(flags, &plugins);
	if (rc == 0)
		rc = kft_jobinput_load_plugins(*fw, &plugins);
	for (size_t i = 0; rc == 0 && i < plugins.count; i++)
		json_array_append_new(recorded, json_string(plugins.items[i]));
	kft_paths_free(&plugins);
	return rc;
}
