/*
 * crashing.c - a plugin that crashes on purpose, for the plugins tier: a
 * TrainJob annotated kftrainer.test/crash=POINT makes the plugin dereference
 * NULL in that extension point (CustomValidation, ComponentBuilder or
 * TerminalCondition), so the tier can check that the process says which
 * plugin brought it down and that nothing was half-stored.
 */
#include <stddef.h>
#include <string.h>

#include <kftrainer/framework.h>
#include <kftrainer/plugin.h>

static void crash_if(const json_t *job, const char *point)
{
	const json_t *ann = json_object_get(json_object_get(job, "metadata"), "annotations");
	const char *want = json_string_value(json_object_get(ann, "kftrainer.test/crash"));
	if (want && strcmp(want, point) == 0) {
		volatile int *volatile nowhere = NULL;
		*nowhere = 1;
	}
}

static void validate(const kft_plugin_ctx *ctx, const kft_runtime_info *info, const json_t *old_job,
                     const json_t *new_job, kft_field_errors *errs)
{
	(void)ctx, (void)info, (void)old_job, (void)errs;
	crash_if(new_job, "CustomValidation");
}

static int build(const kft_plugin_ctx *ctx, const kft_runtime_info *info, const kft_trainjob *job,
                 json_t *objects, kft_error *err)
{
	(void)ctx, (void)info, (void)objects, (void)err;
	crash_if(job->obj, "ComponentBuilder");
	return 0;
}

static int terminal(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t **condition,
                    kft_error *err)
{
	(void)ctx, (void)condition, (void)err;
	crash_if(job->obj, "TerminalCondition");
	return 0;
}

static const kft_plugin plugin = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "Crashing",
        .custom_validation = validate,
        .component_builder = build,
        .terminal_condition = terminal,
};

KFT_PLUGIN_ENTRY
{
	return &plugin;
}
