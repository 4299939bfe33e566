/*
 * plugin.h - the plugin ABI: what a plugin shared object is built against.
 *
 * An out-of-tree plugin is a shared object that exports one function,
 * kft_plugin_entry (KFT_PLUGIN_SYMBOL), returning a const kft_plugin table:
 * its name, the ABI version it was built for, and a function for each
 * extension point it implements. kft_framework_load_plugin (framework.h)
 * dlopen()s the file, calls the entry and refuses the table when its
 * abi_version is not this header's KFT_PLUGIN_ABI_VERSION, older or newer,
 * with a message naming both versions. The extension points receive the
 * types framework.h defines (RuntimeInfo, the TrainJob view), which are part
 * of this ABI: include <kftrainer/framework.h> for them and for the helpers
 * a plugin may call. examples/plugins/require-team-label is the template.
 *
 * The built-in plugins (src/plugins/) are tables of this same type; the
 * build lists them (cmake/builtin_plugins.cmake), the registry never names
 * them.
 */
#ifndef KFTRAINER_PLUGIN_H
#define KFTRAINER_PLUGIN_H

#include <jansson.h>

#include "kftrainer/error.h"
#include "kftrainer/export.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin ABI version: a plugin built against another version is refused
 * at load. Bump it whenever kft_plugin, kft_runtime_info, kft_pod_set,
 * kft_container, kft_trainjob, kft_plugin_ctx or kft_backend change layout or
 * meaning (2: kft_backend.has_gpus). */
#define KFT_PLUGIN_ABI_VERSION 2u

/* Defined in framework.h and backend.h. */
typedef struct kft_backend kft_backend;
typedef struct kft_framework kft_framework;
typedef struct kft_runtime_info kft_runtime_info;
typedef struct kft_trainjob kft_trainjob;

/* What every extension point receives besides its arguments. */
typedef struct kft_plugin_ctx {
	const kft_backend *backend; /* never NULL */
	const kft_framework *framework;
} kft_plugin_ctx;

typedef struct kft_plugin {
	/* These two members stay first in every ABI version, so the loader
	 * can read them from a plugin built for another version. */
	unsigned abi_version; /* KFT_PLUGIN_ABI_VERSION */
	const char *name;

	/* Startup. NULL-terminated list of "apiVersion/kind" strings of the
	 * children this plugin creates and needs watched (static storage). */
	const char *const *watch_kinds;

	/* PreExecution. Appends field errors and warnings for new_job against
	 * its runtime; old_job is the stored TrainJob on update, else NULL. */
	void (*custom_validation)(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
	                          const json_t *old_job, const json_t *new_job,
	                          kft_field_errors *errs);

	/* Build. Each returns 0, or a negative kft_status with err filled. */
	int (*enforce_ml_policy)(const kft_plugin_ctx *ctx, kft_runtime_info *info,
	                         const kft_trainjob *job, kft_error *err);
	int (*enforce_pod_group_policy)(const kft_plugin_ctx *ctx, kft_runtime_info *info,
	                                const kft_trainjob *job, kft_error *err);
	int (*pod_network)(const kft_plugin_ctx *ctx, kft_runtime_info *info,
	                   const kft_trainjob *job, kft_error *err);
	int (*enforce_pod_spec)(const kft_plugin_ctx *ctx, kft_runtime_info *info,
	                        const kft_trainjob *job, kft_error *err);
	int (*pre_component_builder)(const kft_plugin_ctx *ctx, kft_runtime_info *info,
	                             const kft_trainjob *job, kft_error *err);
	/* Appends the complete objects it builds (new references) to `objects`. */
	int (*component_builder)(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
	                         const kft_trainjob *job, json_t *objects, kft_error *err);

	/* PostExecution. `status` is the TrainJob's status object, updated in
	 * place (jobsStatus, conditions other than terminal ones ...). */
	int (*trainjob_status)(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t *status,
	                       kft_error *err);
	/* Sets *condition (a new Condition object) when the children say the
	 * job has ended: type Complete or Failed with reason and message. */
	int (*terminal_condition)(const kft_plugin_ctx *ctx, const kft_trainjob *job,
	                          json_t **condition, kft_error *err);
} kft_plugin;

/* The symbol a plugin shared object exports: a function returning its
 * plugin table (static storage, valid while the object is loaded). */
#define KFT_PLUGIN_SYMBOL "kft_plugin_entry"
typedef const kft_plugin *(*kft_plugin_entry_fn)(void);

/* Declares the entry with default visibility, so a plugin built with
 * -fvisibility=hidden still exports it, and with C linkage from C++:
 *     KFT_PLUGIN_ENTRY { return &my_plugin; } */
#ifdef __cplusplus
#define KFT_PLUGIN_LINKAGE extern "C"
#else
#define KFT_PLUGIN_LINKAGE
#endif
#define KFT_PLUGIN_ENTRY                                                                           \
	KFT_PLUGIN_LINKAGE KFT_EXPORT const kft_plugin *kft_plugin_entry(void);                    \
	KFT_PLUGIN_LINKAGE KFT_EXPORT const kft_plugin *kft_plugin_entry(void)

#ifdef __cplusplus
}
#endif

#endif
