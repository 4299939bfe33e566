/*
 * cxx_plugin.cpp - an out-of-tree plugin written in C++, built against the
 * installed headers alone (include/kftrainer/): its CustomValidation asks
 * every TrainJob for a `cost-center` label. embed.cpp loads it through the
 * framework, as `kftrainer render --plugin` would, and checks that the
 * field error it adds reaches the caller: KFT_PLUGIN_ENTRY gives the entry C
 * linkage and default visibility from C++ too.
 */
#include <kftrainer/framework.h>
#include <kftrainer/plugin.h>

#include <string>

namespace
{

const char *const label = "cost-center";

void require_cost_center(const kft_plugin_ctx *, const kft_runtime_info *, const json_t *,
                         const json_t *new_job, kft_field_errors *errs)
{
	const json_t *labels = json_object_get(json_object_get(new_job, "metadata"), "labels");
	if (json_is_string(json_object_get(labels, label)))
		return;
	std::string field = std::string("metadata.labels[") + label + "]";
	kft_field_errors_add(errs, KFT_FIELD_REQUIRED, field.c_str(), nullptr,
	                     "every TrainJob must name its cost center");
}

kft_plugin make_plugin()
{
	kft_plugin p = {};
	p.abi_version = KFT_PLUGIN_ABI_VERSION;
	p.name = "RequireCostCenter";
	p.custom_validation = require_cost_center;
	return p;
}

const kft_plugin plugin = make_plugin();

} // namespace

KFT_PLUGIN_ENTRY
{
	return &plugin;
}
