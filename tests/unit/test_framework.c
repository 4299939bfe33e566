/*
 * test_framework.c - the framework core on its own (src/framework/
 * registry.c, pipeline.c, resolve.c): which built-ins a framework holds and
 * in which order, what the registry refuses (duplicate names, other ABI
 * versions), the order the phases call a plugin in, the prefix an extension
 * point's error gets, and runtime resolution with upstream's messages and
 * field paths. The plugin tests exercise each plugin; these pin the
 * machinery around them, so a change to a prefix or an order fails here
 * rather than only in the cluster tier.
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "json_fixture.h"
#include "kftrainer/decode.h"
#include "kftrainer/framework.h"
#include "kftrainer/plugin.h"
#include "framework/runtime_info.h"

/* ---- helpers ------------------------------------------------------------ */

static json_t *yaml(const char *text)
{
	kft_doc_list docs;
	kft_error err = {0};
	if (kft_decode(text, strlen(text), "test", &docs, &err) != 0)
		fail_msg("bad test YAML: %s: %s", err.message, text);
	assert_int_equal(docs.count, 1);
	json_t *v = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return v;
}

/* The one error of errs as kubectl prints it; fails unless there is one. */
static char *only_error(const kft_field_errors *errs)
{
	assert_int_equal(errs->count, 1);
	char *s = kft_field_error_format(&errs->items[0]);
	assert_non_null(s);
	return s;
}

static const char *const TRAINJOB =
        "apiVersion: trainer.kubeflow.org/v1alpha1\n"
        "kind: TrainJob\n"
        "metadata: {name: job, namespace: team}\n"
        "spec:\n"
        "  runtimeRef: {name: rt, apiGroup: trainer.kubeflow.org, kind: TrainingRuntime}\n"
        "  trainer: {numNodes: 1}\n";

static const char *const RUNTIME =
        "apiVersion: trainer.kubeflow.org/v1alpha1\n"
        "kind: TrainingRuntime\n"
        "metadata: {name: rt, namespace: team}\n"
        "spec:\n"
        "  template:\n"
        "    spec:\n"
        "      replicatedJobs:\n"
        "      - name: node\n"
        "        template:\n"
        "          metadata:\n"
        "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
        "          spec:\n"
        "            template:\n"
        "              spec:\n"
        "                containers: [{name: node, image: busybox}]\n";

/* ---- the registry ------------------------------------------------------- */

static void expect_plugins(const kft_framework *fw, const char *const *want, size_t n)
{
	assert_int_equal(kft_framework_plugin_count(fw), n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(kft_framework_plugin_at(fw, i)->name, want[i]);
	assert_null(kft_framework_plugin_at(fw, n));
}

/* framework.h's documented order (the build's list,
 * cmake/builtin_plugins.cmake): upstream iterates a map, ours is fixed. */
static void test_builtin_order(void **state)
{
	(void)state;
	static const char *const want[] = {"PlainML", "Torch",         "MPI",          "JAX",
	                                   "XGBoost", "Flux",          "CoScheduling", "Volcano",
	                                   "JobSet",  "TrainJobStatus"};
	kft_framework *fw;
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	expect_plugins(fw, want, 9);
	kft_framework_free(fw);
	/* The gated plugin comes last, only when its gate is on. */
	assert_int_equal(kft_framework_new(KFT_FEATURE_TRAINJOB_STATUS, &fw, NULL), 0);
	expect_plugins(fw, want, 10);
	kft_framework_free(fw);
}

static const kft_plugin extra = {.abi_version = KFT_PLUGIN_ABI_VERSION, .name = "Extra"};

static void test_registry_refusals(void **state)
{
	(void)state;
	kft_framework *fw;
	kft_error err = {0};
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	size_t n = kft_framework_plugin_count(fw);

	assert_int_equal(kft_framework_add_plugin(fw, &extra, &err), 0);
	assert_ptr_equal(kft_framework_plugin_at(fw, n), &extra);

	/* A name already taken, by a built-in or an added plugin. */
	assert_int_equal(kft_framework_add_plugin(fw, &extra, &err), KFT_EINVAL);
	assert_string_equal(err.message, "a plugin named Extra is already registered");
	kft_plugin torch = extra;
	torch.name = "Torch";
	assert_int_equal(kft_framework_add_plugin(fw, &torch, &err), KFT_EINVAL);
	assert_string_equal(err.message, "a plugin named Torch is already registered");

	/* Older and newer ABI versions alike. */
	kft_plugin old = extra;
	old.name = "Old";
	old.abi_version = KFT_PLUGIN_ABI_VERSION - 1;
	assert_int_equal(kft_framework_add_plugin(fw, &old, &err), KFT_EVERSION);
	char want[256];
	snprintf(want, sizeof(want),
	         "plugin Old was built for plugin ABI version %u, but this kftrainer provides "
	         "version %u; rebuild it against this kftrainer's <kftrainer/plugin.h>",
	         KFT_PLUGIN_ABI_VERSION - 1, KFT_PLUGIN_ABI_VERSION);
	assert_string_equal(err.message, want);
	old.abi_version = KFT_PLUGIN_ABI_VERSION + 1;
	assert_int_equal(kft_framework_add_plugin(fw, &old, &err), KFT_EVERSION);

	kft_plugin anonymous = extra;
	anonymous.name = "";
	assert_int_equal(kft_framework_add_plugin(fw, &anonymous, &err), KFT_EINVAL);
	assert_string_equal(err.message, "a plugin must have a name");
	assert_int_equal(kft_framework_add_plugin(fw, NULL, &err), KFT_EINVAL);

	/* Nothing refused was registered. */
	assert_int_equal(kft_framework_plugin_count(fw), n + 1);
	kft_framework_free(fw);
}

static void test_load_plugin_refusals(void **state)
{
	(void)state;
	kft_framework *fw;
	kft_error err = {0};
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	assert_int_equal(kft_framework_load_plugin(fw, "/nonexistent/p.so", &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "cannot load plugin /nonexistent/p.so: "));
	/* A shared object without the entry symbol (the C library, by its path:
	 * a plugin is a file, never a name searched for). */
	Dl_info libc;
	assert_true(dladdr((void *)strlen, &libc) && libc.dli_fname);
	char want[PATH_MAX + 80];
	snprintf(want, sizeof(want),
	         "%s is not a kftrainer plugin: it does not export kft_plugin_entry",
	         libc.dli_fname);
	assert_int_equal(kft_framework_load_plugin(fw, libc.dli_fname, &err), KFT_EINVAL);
	assert_string_equal(err.message, want);
	assert_int_equal(kft_framework_load_plugin(fw, "libc.so.6", &err), KFT_ENOTFOUND);
	assert_int_equal(kft_framework_plugin_count(fw), 9);
	kft_framework_free(fw);
}

/* A plugin runs with the loader's rights: a file another user could have
 * written or replaced is refused before dlopen runs anything of it (the
 * file is not even a shared object here). */
static void test_load_plugin_refuses_writable_places(void **state)
{
	(void)state;
	char dir[] = "/tmp/kft-plugin-XXXXXX", file[64], sticky[64], inner[96];
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/p.so", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	kft_framework *fw;
	kft_error err = {0};
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	chmod(dir, 0777);
	assert_int_equal(kft_framework_load_plugin(fw, file, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "is refused: its directory /tmp/kft-plugin-"));
	assert_non_null(strstr(err.message, "is writable by other users (mode 0777)"));
	chmod(dir, 0775);
	assert_int_equal(kft_framework_load_plugin(fw, file, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "(mode 0775)"));
	chmod(dir, 0755);
	chmod(file, 0646);
	assert_int_equal(kft_framework_load_plugin(fw, file, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "the file is writable by other users (mode 0646)"));
	chmod(file, 0644);
	/* Now only dlopen objects: the checks passed. */
	assert_int_equal(kft_framework_load_plugin(fw, file, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "cannot load plugin"));
	/* A sticky directory others can write (as /tmp) holds our file safely. */
	snprintf(sticky, sizeof(sticky), "%s/sticky", dir);
	snprintf(inner, sizeof(inner), "%s/p.so", sticky);
	assert_int_equal(mkdir(sticky, 0755), 0);
	chmod(sticky, 01777);
	assert_int_equal(rename(file, inner), 0);
	assert_int_equal(kft_framework_load_plugin(fw, inner, &err), KFT_ENOTFOUND);
	assert_null(strstr(err.message, "refused"));
	assert_int_equal(kft_framework_load_plugin(fw, sticky, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "not a regular file"));
	unlink(inner);
	rmdir(sticky);
	rmdir(dir);
	kft_framework_free(fw);
}

/* ---- the phases --------------------------------------------------------- */

/* A plugin that writes each point it is called at into `trace`, and fails
 * at the point named by `fail_at`. */
static char trace[512];
static const char *fail_at;

static int note(const char *point, kft_error *err)
{
	strncat(trace, point, sizeof(trace) - strlen(trace) - 2);
	strcat(trace, " ");
	if (fail_at && strcmp(fail_at, point) == 0)
		return kft_error_set(err, KFT_EINVAL, "no %s today", point);
	return 0;
}

static void rec_validation(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                           const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	(void)ctx;
	(void)old_job;
	/* CustomValidation sees RuntimeInfo before any plugin changed it. */
	assert_non_null(info);
	assert_non_null(new_job);
	note("CustomValidation", NULL);
	kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.trainer", NULL, "recorded");
}

#define REC_POINT(fn, point)                                                                       \
	static int fn(const kft_plugin_ctx *ctx, kft_runtime_info *info, const kft_trainjob *job,  \
	              kft_error *err)                                                              \
	{                                                                                          \
		(void)ctx;                                                                         \
		(void)info;                                                                        \
		(void)job;                                                                         \
		return note(point, err);                                                           \
	}
REC_POINT(rec_ml, "EnforceMLPolicy")
REC_POINT(rec_pg, "EnforcePodGroupPolicy")
REC_POINT(rec_net, "PodNetwork")
REC_POINT(rec_spec, "EnforcePodSpec")
REC_POINT(rec_pre, "PreComponentBuilder")

static int rec_build(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                     const kft_trainjob *job, json_t *objects, kft_error *err)
{
	(void)ctx;
	(void)info;
	(void)job;
	(void)objects;
	return note("ComponentBuilder", err);
}

static int rec_status(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t *status,
                      kft_error *err)
{
	(void)ctx;
	(void)job;
	json_object_set_new(status, "recorded", json_true());
	return note("TrainJobStatus", err);
}

static int rec_terminal(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t **condition,
                        kft_error *err)
{
	(void)ctx;
	(void)job;
	*condition = json_pack("{s:s, s:s, s:s, s:s}", "type", "Complete", "status", "True",
	                       "reason", "Recorded", "message", "done");
	return note("TerminalCondition", err);
}

static const kft_plugin recorder = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "Recorder",
        .custom_validation = rec_validation,
        .enforce_ml_policy = rec_ml,
        .enforce_pod_group_policy = rec_pg,
        .pod_network = rec_net,
        .enforce_pod_spec = rec_spec,
        .pre_component_builder = rec_pre,
        .component_builder = rec_build,
        .trainjob_status = rec_status,
        .terminal_condition = rec_terminal,
};

typedef struct world {
	kft_framework *fw;
	json_t *job, *runtime;
} world;

static int world_setup(void **state)
{
	world *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	assert_int_equal(kft_framework_new(0, &w->fw, NULL), 0);
	assert_int_equal(kft_framework_add_plugin(w->fw, &recorder, NULL), 0);
	w->job = yaml(TRAINJOB);
	w->runtime = yaml(RUNTIME);
	trace[0] = '\0';
	fail_at = NULL;
	*state = w;
	return 0;
}

static int world_teardown(void **state)
{
	world *w = *state;
	kft_framework_free(w->fw);
	json_decref(w->job);
	json_decref(w->runtime);
	free(w);
	return 0;
}

/* framework.h's phase order within Build. */
static void test_build_order(void **state)
{
	world *w = *state;
	json_t *objects = NULL;
	kft_error err = {0};
	assert_int_equal(kft_framework_build(w->fw, NULL, w->job, w->runtime, &objects, &err), 0);
	assert_string_equal(trace, "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork "
	                           "EnforcePodSpec PreComponentBuilder ComponentBuilder ");
	/* The built-ins still built their objects (the JobSet). */
	assert_true(json_array_size(objects) >= 1);
	json_decref(objects);
}

static void test_runtime_info_stops_before_builders(void **state)
{
	world *w = *state;
	kft_runtime_info *info = NULL;
	assert_int_equal(kft_framework_runtime_info(w->fw, NULL, w->job, w->runtime, &info, NULL),
	                 0);
	assert_string_equal(trace, "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork "
	                           "EnforcePodSpec ");
	assert_non_null(kft_runtime_info_find_ancestor(info, "trainer"));
	kft_runtime_info_free(info);
}

static void test_validate_calls_custom_validation_only(void **state)
{
	world *w = *state;
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	assert_int_equal(kft_framework_validate(w->fw, NULL, w->runtime, NULL, w->job, &errs, NULL),
	                 0);
	assert_string_equal(trace, "CustomValidation ");
	char *s = only_error(&errs);
	assert_string_equal(s, "spec.trainer: Invalid value: recorded");
	free(s);
	kft_field_errors_free(&errs);
}

static void test_status_order(void **state)
{
	world *w = *state;
	json_t *status = NULL;
	assert_int_equal(
	        kft_framework_status(w->fw, NULL, w->job, "2026-01-02T03:04:05Z", &status, NULL),
	        0);
	assert_string_equal(trace, "TrainJobStatus TerminalCondition ");
	assert_true(json_is_true(json_object_get(status, "recorded")));
	json_t *cond = json_array_get(json_object_get(status, "conditions"), 0);
	assert_string_equal(json_string_value(json_object_get(cond, "type")), "Complete");
	assert_string_equal(json_string_value(json_object_get(cond, "lastTransitionTime")),
	                    "2026-01-02T03:04:05Z");
	json_decref(status);
}

/* An info-changing point's error names the point and the plugin, once;
 * the pipeline stops there. */
static void expect_build_error(world *w, const char *point, const char *want_msg,
                               const char *want_trace)
{
	json_t *objects = NULL;
	kft_error err = {0};
	trace[0] = '\0';
	fail_at = point;
	assert_int_equal(kft_framework_build(w->fw, NULL, w->job, w->runtime, &objects, &err),
	                 KFT_EINVAL);
	assert_null(objects);
	assert_int_equal(err.code, KFT_EINVAL);
	assert_string_equal(err.message, want_msg);
	assert_string_equal(trace, want_trace);
}

static void test_error_prefixes(void **state)
{
	world *w = *state;
	expect_build_error(w, "EnforceMLPolicy",
	                   "EnforceMLPolicy plugin Recorder: no EnforceMLPolicy today",
	                   "EnforceMLPolicy ");
	expect_build_error(w, "EnforcePodGroupPolicy",
	                   "EnforcePodGroupPolicy plugin Recorder: no EnforcePodGroupPolicy today",
	                   "EnforceMLPolicy EnforcePodGroupPolicy ");
	expect_build_error(w, "PodNetwork", "PodNetwork plugin Recorder: no PodNetwork today",
	                   "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork ");
	expect_build_error(w, "EnforcePodSpec",
	                   "EnforcePodSpec plugin Recorder: no EnforcePodSpec today",
	                   "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork EnforcePodSpec ");
	expect_build_error(w, "PreComponentBuilder",
	                   "PreComponentBuilder plugin Recorder: no PreComponentBuilder today",
	                   "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork EnforcePodSpec "
	                   "PreComponentBuilder ");
	/* A ComponentBuilder's message is its own (it names its objects). */
	expect_build_error(w, "ComponentBuilder", "no ComponentBuilder today",
	                   "EnforceMLPolicy EnforcePodGroupPolicy PodNetwork EnforcePodSpec "
	                   "PreComponentBuilder ComponentBuilder ");
}

static int named_failure(const kft_plugin_ctx *ctx, kft_runtime_info *info, const kft_trainjob *job,
                         kft_error *err)
{
	(void)ctx;
	(void)info;
	(void)job;
	return kft_error_set(err, KFT_EINVAL, "Named: already says who");
}

/* A message that already names the plugin is not prefixed again. */
static void test_error_prefix_not_doubled(void **state)
{
	(void)state;
	static const kft_plugin named = {.abi_version = KFT_PLUGIN_ABI_VERSION,
	                                 .name = "Named",
	                                 .enforce_pod_spec = named_failure};
	kft_framework *fw;
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	assert_int_equal(kft_framework_add_plugin(fw, &named, NULL), 0);
	json_t *job = yaml(TRAINJOB), *runtime = yaml(RUNTIME), *objects = NULL;
	kft_error err = {0};
	assert_int_equal(kft_framework_build(fw, NULL, job, runtime, &objects, &err), KFT_EINVAL);
	assert_string_equal(err.message, "Named: already says who");
	json_decref(job);
	json_decref(runtime);
	kft_framework_free(fw);
}

static int no_gpus(void *self)
{
	(void)self;
	return 0;
}

/* The node container of the JobSet among objects. */
static const json_t *built_node(const json_t *objects)
{
	const json_t *js = json_array_get(objects, json_array_size(objects) - 1);
	const json_t *rj =
	        json_array_get(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), 0);
	const json_t *pod = json_object_get(
	        json_object_get(json_object_get(json_object_get(rj, "template"), "spec"),
	                        "template"),
	        "spec");
	return json_array_get(json_object_get(pod, "containers"), 0);
}

/* kftrainer (backend.h has_gpus): where the backend has no GPUs, the job is
 * built as for a CPU node. The runtime's nvidia.com/gpu (which survives the
 * merge with resourcesPerNode, as upstream merges it) and the TrainJob's are
 * gone, other resources stay, and torch's "auto" process count is the CPU
 * count, as upstream resolves it for a node without GPUs. */
static void test_build_without_gpus(void **state)
{
	(void)state;
	kft_framework *fw;
	assert_int_equal(kft_framework_new(0, &fw, NULL), 0);
	json_t *job = yaml("apiVersion: trainer.kubeflow.org/v1alpha1\n"
	                   "kind: TrainJob\n"
	                   "metadata: {name: job, namespace: team}\n"
	                   "spec:\n"
	                   "  runtimeRef: {name: rt, apiGroup: trainer.kubeflow.org, kind: "
	                   "TrainingRuntime}\n"
	                   "  trainer:\n"
	                   "    resourcesPerNode: {limits: {cpu: 3, amd.com/gpu: 1}}\n");
	json_t *runtime = yaml("apiVersion: trainer.kubeflow.org/v1alpha1\n"
	                       "kind: TrainingRuntime\n"
	                       "metadata: {name: rt, namespace: team}\n"
	                       "spec:\n"
	                       "  mlPolicy: {numNodes: 1, torch: {numProcPerNode: auto}}\n"
	                       "  template:\n"
	                       "    spec:\n"
	                       "      replicatedJobs:\n"
	                       "      - name: node\n"
	                       "        template:\n"
	                       "          metadata:\n"
	                       "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
	                       "trainer}\n"
	                       "          spec:\n"
	                       "            template:\n"
	                       "              spec:\n"
	                       "                containers:\n"
	                       "                - name: node\n"
	                       "                  image: img\n"
	                       "                  command: [python]\n"
	                       "                  resources: {limits: {nvidia.com/gpu: 2}}\n");
	json_t *gpu = NULL, *cpu = NULL;
	kft_error err = {0};
	kft_backend be = {.name = "cpu", .has_gpus = no_gpus};
	assert_int_equal(kft_framework_build(fw, NULL, job, runtime, &gpu, &err), 0);
	assert_int_equal(kft_framework_build(fw, &be, job, runtime, &cpu, &err), 0);
	const json_t *lim =
	        json_object_get(json_object_get(built_node(gpu), "resources"), "limits");
	assert_int_equal(json_object_size(lim), 3); /* cpu, amd.com/gpu, nvidia.com/gpu */
	lim = json_object_get(json_object_get(built_node(cpu), "resources"), "limits");
	assert_int_equal(json_object_size(lim), 1);
	assert_non_null(json_object_get(lim, "cpu"));
	/* a list left empty goes (the SDK refuses limits naming no device) */
	json_t *res = json_pack("{s:{s:i}, s:{s:i}}", "limits", "nvidia.com/gpu", 1, "requests",
	                        "cpu", 1);
	assert_int_equal(kft_resources_drop_gpus(res), 1);
	assert_null(json_object_get(res, "limits"));
	assert_non_null(json_object_get(res, "requests"));
	json_decref(res);
	const json_t *env = json_object_get(built_node(cpu), "env"), *e;
	size_t i;
	const char *nproc = NULL;
	json_array_foreach(env, i, e) if (strcmp(json_string_value(json_object_get(e, "name")),
	                                         "PET_NPROC_PER_NODE") == 0) nproc =
	        json_string_value(json_object_get(e, "value"));
	assert_non_null(nproc);
	assert_string_equal(nproc, "3");
	/* the caller's TrainJob is left as it was */
	assert_non_null(json_object_get(
	        json_object_get(
	                json_object_get(json_object_get(json_object_get(job, "spec"), "trainer"),
	                                "resourcesPerNode"),
	                "limits"),
	        "amd.com/gpu"));
	json_decref(gpu);
	json_decref(cpu);
	json_decref(job);
	json_decref(runtime);
	kft_framework_free(fw);
}

/* ---- runtime resolution (upstream's TrainJob webhook, v2.3.0) ------------ */

static const json_t *resolve(const char *job_ns, const char *kind, const char *group,
                             const char *name, json_t *runtimes, kft_field_errors *errs)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
	         "metadata: {name: job, namespace: %s}\n"
	         "spec: {runtimeRef: {name: %s, apiGroup: %s, kind: %s}}\n",
	         job_ns, name, group, kind);
	json_t *job = yaml(text);
	const json_t *r = kft_resolve_runtime(job, runtimes, errs);
	json_decref(job);
	return r;
}

static json_t *runtimes(void)
{
	return yaml(
	        "- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainingRuntime,\n"
	        "   metadata: {name: rt, namespace: team}}\n"
	        "- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: ClusterTrainingRuntime,\n"
	        "   metadata: {name: rt}}\n"
	        "- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: ClusterTrainingRuntime,\n"
	        "   metadata: {name: old, labels: {trainer.kubeflow.org/support: deprecated}}}\n"
	        "- {apiVersion: trainer.kubeflow.org/v1beta9, kind: TrainingRuntime,\n"
	        "   metadata: {name: other-version, namespace: team}}\n");
}

static void test_resolve_kinds(void **state)
{
	(void)state;
	json_t *rts = runtimes();
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	/* The same name resolves to the kind the reference names. */
	const json_t *r =
	        resolve("team", "TrainingRuntime", "trainer.kubeflow.org", "rt", rts, &errs);
	assert_ptr_equal(r, json_array_get(rts, 0));
	r = resolve("elsewhere", "ClusterTrainingRuntime", "trainer.kubeflow.org", "rt", rts,
	            &errs);
	assert_ptr_equal(r, json_array_get(rts, 1));
	assert_int_equal(errs.count, 0);
	assert_int_equal(errs.nwarnings, 0);
	kft_field_errors_free(&errs);
	json_decref(rts);
}

static void expect_resolve_error(const char *ns, const char *kind, const char *group,
                                 const char *name, const char *want)
{
	json_t *rts = runtimes();
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	assert_null(resolve(ns, kind, group, name, rts, &errs));
	char *s = only_error(&errs);
	assert_string_equal(s, want);
	free(s);
	kft_field_errors_free(&errs);
	json_decref(rts);
}

/* trainingruntime.go / clustertrainingruntime.go: the NotFound wording, the
 * RuntimeRef as Go marshals it, and "spec.RuntimeRef" for cluster runtimes
 * (upstream's spelling). */
static void test_resolve_missing(void **state)
{
	(void)state;
	/* A TrainingRuntime of another namespace is not the job's. */
	expect_resolve_error(
	        "elsewhere", "TrainingRuntime", "trainer.kubeflow.org", "rt",
	        "spec.runtimeRef: Invalid value: "
	        "{\"name\":\"rt\",\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
	        "\"TrainingRuntime\"}: "
	        "TrainingRuntime.trainer.kubeflow.org \"rt\" not found: specified trainingRuntime "
	        "must be created before the TrainJob is created");
	expect_resolve_error("team", "ClusterTrainingRuntime", "trainer.kubeflow.org", "nope",
	                     "spec.RuntimeRef: Invalid value: "
	                     "{\"name\":\"nope\",\"apiGroup\":\"trainer.kubeflow.org\","
	                     "\"kind\":\"ClusterTrainingRuntime\"}: "
	                     "ClusterTrainingRuntime.trainer.kubeflow.org \"nope\" not found: "
	                     "specified clusterTrainingRuntime must be created before the "
	                     "TrainJob is created");
	/* Another apiVersion of the kind is not ours. */
	expect_resolve_error("team", "TrainingRuntime", "trainer.kubeflow.org", "other-version",
	                     "spec.runtimeRef: Invalid value: "
	                     "{\"name\":\"other-version\",\"apiGroup\":\"trainer.kubeflow.org\","
	                     "\"kind\":\"TrainingRuntime\"}: "
	                     "TrainingRuntime.trainer.kubeflow.org \"other-version\" not found: "
	                     "specified trainingRuntime must be created before the TrainJob is "
	                     "created");
	/* schema.GroupKind.String() for a kind or group that is not ours. */
	expect_resolve_error("team", "Job", "batch", "rt",
	                     "spec.runtimeRef: Unsupported value: unsupported runtime: Job.batch");
}

static void test_resolve_deprecated_warns(void **state)
{
	(void)state;
	json_t *rts = runtimes();
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	assert_ptr_equal(resolve("team", "ClusterTrainingRuntime", "trainer.kubeflow.org", "old",
	                         rts, &errs),
	                 json_array_get(rts, 2));
	assert_int_equal(errs.count, 0);
	assert_int_equal(errs.nwarnings, 1);
	assert_non_null(strstr(errs.warnings[0], "Referenced ClusterTrainingRuntime \"old\" is "
	                                         "deprecated and will be removed in a future "
	                                         "release of Kubeflow Trainer."));
	kft_field_errors_free(&errs);
	json_decref(rts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_builtin_order),
	        cmocka_unit_test(test_registry_refusals),
	        cmocka_unit_test(test_load_plugin_refusals),
	        cmocka_unit_test(test_load_plugin_refuses_writable_places),
	        cmocka_unit_test_setup_teardown(test_build_order, world_setup, world_teardown),
	        cmocka_unit_test_setup_teardown(test_runtime_info_stops_before_builders,
	                                        world_setup, world_teardown),
	        cmocka_unit_test_setup_teardown(test_validate_calls_custom_validation_only,
	                                        world_setup, world_teardown),
	        cmocka_unit_test_setup_teardown(test_status_order, world_setup, world_teardown),
	        cmocka_unit_test_setup_teardown(test_error_prefixes, world_setup, world_teardown),
	        cmocka_unit_test(test_error_prefix_not_doubled),
	        cmocka_unit_test(test_build_without_gpus),
	        cmocka_unit_test(test_resolve_kinds),
	        cmocka_unit_test(test_resolve_missing),
	        cmocka_unit_test(test_resolve_deprecated_warns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
