/*
 * trainjob.c - the typed view of a TrainJob the framework computes with.
 * See kft_trainjob in kftrainer/framework.h.
 */
#include <string.h>

#include "kftrainer/framework.h"

static const json_t *array_or_null(const json_t *v)
{
	return json_is_array(v) ? v : NULL;
}

static const json_t *object_or_null(const json_t *v)
{
	return json_is_object(v) ? v : NULL;
}

int kft_trainjob_view(const json_t *obj, kft_trainjob *out, kft_error *err)
{
	memset(out, 0, sizeof(*out));
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *spec = json_object_get(obj, "spec");
	out->obj = obj;
	out->name = json_string_value(json_object_get(meta, "name"));
	out->ns = json_string_value(json_object_get(meta, "namespace"));
	if (!out->name || !json_is_object(spec))
		return kft_error_set(err, KFT_EINVAL, "a TrainJob needs metadata.name and spec");
	if (!out->ns)
		out->ns = "default";
	out->trainer = object_or_null(json_object_get(spec, "trainer"));
	const json_t *n = json_object_get(out->trainer, "numNodes");
	if (json_is_integer(n)) {
		out->has_num_nodes = 1;
		out->num_nodes = (int32_t)json_integer_value(n);
	}
	const json_t *p = json_object_get(out->trainer, "numProcPerNode");
	if (json_is_integer(p)) {
		out->has_num_proc_per_node = 1;
		out->num_proc_per_node = (int32_t)json_integer_value(p);
	}
	out->image = json_string_value(json_object_get(out->trainer, "image"));
	out->command = array_or_null(json_object_get(out->trainer, "command"));
	out->args = array_or_null(json_object_get(out->trainer, "args"));
	out->env = array_or_null(json_object_get(out->trainer, "env"));
	out->resources_per_node = object_or_null(json_object_get(out->trainer, "resourcesPerNode"));
	const json_t *init = json_object_get(spec, "initializer");
	out->dataset = object_or_null(json_object_get(init, "dataset"));
	out->model = object_or_null(json_object_get(init, "model"));
	out->runtime_patches = array_or_null(json_object_get(spec, "runtimePatches"));
	out->suspend = json_is_true(json_object_get(spec, "suspend"));
	return 0;
}
