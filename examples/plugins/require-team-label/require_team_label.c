/*
 * require_team_label.c - an out-of-tree kftrainer plugin: a CustomValidation
 * that rejects TrainJobs without a `team` label, so every job can be charged
 * to somebody. It is the smallest useful plugin and the template for yours:
 *
 *   1. fill a const kft_plugin with the extension points you implement;
 *   2. export kft_plugin_entry() returning it (KFT_PLUGIN_ENTRY declares it
 *      with default visibility, so -fvisibility=hidden is fine);
 *   3. build a shared object against <kftrainer/plugin.h> (the ABI) and
 *      <kftrainer/framework.h> (RuntimeInfo and the helpers);
 *   4. run `kftrainer render --plugin ./require-team-label.so -f job.yaml`.
 *
 * The ABI version in the table is checked at load: a plugin built against
 * another kftrainer is refused with a message saying so.
 */
#include <kftrainer/framework.h>
#include <kftrainer/plugin.h>

#ifndef REQUIRED_LABEL
#define REQUIRED_LABEL "team"
#endif

/* Built with -DPLUGIN_ABI_VERSION=N only by the test that proves a mismatch
 * is refused. */
#ifndef PLUGIN_ABI_VERSION
#define PLUGIN_ABI_VERSION KFT_PLUGIN_ABI_VERSION
#endif

static void require_label(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                          const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	(void)ctx;
	(void)info;
	(void)old_job;
	const json_t *labels = json_object_get(json_object_get(new_job, "metadata"), "labels");
	const json_t *team = json_object_get(labels, REQUIRED_LABEL);
	if (!json_is_string(team) || json_string_length(team) == 0)
		kft_field_errors_add(errs, KFT_FIELD_REQUIRED,
		                     "metadata.labels[" REQUIRED_LABEL "]", NULL,
		                     "every TrainJob must name its owning team");
}

static const kft_plugin plugin = {
        .abi_version = PLUGIN_ABI_VERSION,
        .name = "RequireTeamLabel",
        .custom_validation = require_label,
};

KFT_PLUGIN_ENTRY
{
	return &plugin;
}
