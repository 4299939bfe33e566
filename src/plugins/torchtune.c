/*
 * torchtune.c - choosing the torchtune recipe and config, and completing the
 * `tune run` command. See torchtune.h for the rules; the names below are the
 * ones upstream Kubeflow Trainer v2.3.0 uses, which torchtune images expect.
 */
#include "plugins/torchtune.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kftrainer/error.h"

#define ARG_RDZV_ENDPOINT "--rdzv_endpoint"
#define ARG_CONFIG        "--config"

#define RECIPE_FULL_SINGLE "full_finetune_single_device"
#define RECIPE_FULL_DIST   "full_finetune_distributed"
#define RECIPE_LORA_SINGLE "lora_finetune_single_device"
#define RECIPE_LORA_DIST   "lora_finetune_distributed"

#define SUFFIX_FULL_SINGLE  "_full_single_device"
#define SUFFIX_FULL_DEVICES "_full"
#define SUFFIX_FULL_NODES   "_full_multinode"
#define SUFFIX_LORA_SINGLE  "_lora_single_device"
#define SUFFIX_QLORA_SINGLE "_qlora_single_device"
#define SUFFIX_LORA_DIST    "_lora"
#define SUFFIX_QLORA_DIST   "_qlora"

#define CFG_LORA_ATTN_MODULES "model.lora_attn_modules"
#define CFG_DEVICE_CPU        "device=cpu"
#define CFG_DTYPE_FP32        "dtype=fp32"
#define CFG_OPTIMIZER_CPU     "optimizer._component_=torch.optim.AdamW"
#define CFG_QUANTIZE_BASE     "model.quantize_base"
#define CFG_USE_DORA          "model.use_dora"

#define LABEL_ANCESTOR   "trainer.kubeflow.org/trainjob-ancestor-step"
#define ANCESTOR_TRAINER "trainer"
#define CONTAINER_NODE   "node"

static const char *const supported_models[] = {"llama3_2/1B", "llama3_2/3B", "llama3_3/70B",
                                               "qwen2_5/1.5B", NULL};

static const char *const immutable_keys[] = {"output_dir", "tokenizer.path",
                                             "checkpointer.checkpoint_dir", "tokenizer.merges_file",
                                             NULL};

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

int kft_torchtune_model(const char *name, char *buf, size_t size)
{
	if (!buf || size == 0)
		return KFT_ELIMIT;
	buf[0] = '\0';
	if (!name)
		return 0;
	const char *d1 = strchr(name, '-');
	const char *d2 = d1 ? strchr(d1 + 1, '-') : NULL;
	if (!d2 || strchr(d2 + 1, '-'))
		return 0;
	size_t family = (size_t)(d2 - d1 - 1), tail = strlen(d2 + 1);
	if (family + 1 + tail + 1 > size)
		return KFT_ELIMIT;
	size_t n = 0;
	for (const char *p = d1 + 1; p < d2; p++)
		buf[n++] = *p == '.' ? '_' : *p;
	buf[n++] = '/';
	for (const char *p = d2 + 1; *p; p++)
		buf[n++] = (char)toupper((unsigned char)*p);
	buf[n] = '\0';
	return 0;
}

int kft_torchtune_model_supported(const char *model)
{
	return model && in_list(model, supported_models);
}

int kft_torchtune_is_entrypoint(const json_t *command)
{
	if (json_array_size(command) != 2)
		return 0;
	const char *a = json_string_value(json_array_get(command, 0));
	const char *b = json_string_value(json_array_get(command, 1));
	return a && b && strcmp(a, "tune") == 0 && strcmp(b, "run") == 0;
}

int kft_torchtune_lora_enabled(const json_t *args)
{
	size_t i;
	const json_t *a;
	json_array_foreach(args, i, a)
	{
		const char *s = json_string_value(a);
		if (s && strstr(s, CFG_LORA_ATTN_MODULES))
			return 1;
	}
	return 0;
}

/* "true" in any case, ignoring surrounding white space: how Python-style
 * booleans are written in torchtune overrides. */
static int is_true_word(const char *v)
{
	while (isspace((unsigned char)*v))
		v++;
	size_t n = strlen(v);
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		n--;
	return n == 4 && strncasecmp(v, "true", 4) == 0;
}

/* 1 when some "key=value" arg has a key containing `item` and a true value. */
static int bool_arg_enabled(const json_t *args, const char *item)
{
	size_t i;
	const json_t *a;
	json_array_foreach(args, i, a)
	{
		const char *s = json_string_value(a);
		const char *eq = s ? strchr(s, '=') : NULL;
		if (!eq)
			continue;
		const char *hit = strstr(s, item);
		if (hit && hit + strlen(item) <= eq && is_true_word(eq + 1))
			return 1;
	}
	return 0;
}

int kft_torchtune_qlora_enabled(const json_t *args)
{
	/* DoRA and QLoRA exclude each other; DoRA wins. */
	if (bool_arg_enabled(args, CFG_USE_DORA))
		return 0;
	return bool_arg_enabled(args, CFG_QUANTIZE_BASE);
}

int kft_torchtune_immutable_key(const char *arg, char *buf, size_t size)
{
	if (!buf || size == 0)
		return 0;
	buf[0] = '\0';
	if (!arg)
		return 0;
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	if (n >= size)
		return 0; /* longer than any immutable key */
	memcpy(buf, arg, n);
	buf[n] = '\0';
	return in_list(buf, immutable_keys);
}

static int one_device(int32_t num_nodes, const kft_torch_nproc *npp, int64_t gpus)
{
	return num_nodes == 1 && ((npp->is_int && npp->n == 1) || gpus == 1);
}

int kft_torchtune_recipe_config(int32_t num_nodes, const kft_torch_nproc *npp, int64_t gpus,
                                const json_t *args, const char *runtime_name, const char **recipe,
                                char *config, size_t size)
{
	const char *suffix = SUFFIX_FULL_DEVICES;
	*recipe = RECIPE_FULL_DIST;
	if (one_device(num_nodes, npp, gpus)) {
		if (kft_torchtune_qlora_enabled(args)) {
			*recipe = RECIPE_LORA_SINGLE;
			suffix = SUFFIX_QLORA_SINGLE;
		} else if (kft_torchtune_lora_enabled(args)) {
			*recipe = RECIPE_LORA_SINGLE;
			suffix = SUFFIX_LORA_SINGLE;
		} else {
			*recipe = RECIPE_FULL_SINGLE;
			suffix = SUFFIX_FULL_SINGLE;
		}
	} else if (num_nodes == 1 && kft_torchtune_qlora_enabled(args)) {
		*recipe = RECIPE_LORA_DIST;
		suffix = SUFFIX_QLORA_DIST;
	} else if (num_nodes == 1 && kft_torchtune_lora_enabled(args)) {
		*recipe = RECIPE_LORA_DIST;
		suffix = SUFFIX_LORA_DIST;
	} else if (num_nodes > 1) {
		/* LoRA on several nodes is refused by validation; the recipe
		 * falls back to full fine-tuning, as upstream's does. */
		suffix = SUFFIX_FULL_NODES;
	}
	char model[256];
	if (kft_torchtune_model(runtime_name, model, sizeof(model)) != 0)
		return KFT_ELIMIT;
	int n = snprintf(config, size, "%s%s", model, suffix);
	return (n < 0 || (size_t)n >= size) ? KFT_ELIMIT : 0;
}

int kft_torchtune_needs_rendezvous(int32_t num_nodes, const kft_torch_nproc *npp, int64_t gpus)
{
	if (num_nodes > 1)
		return 1;
	return npp->is_int ? npp->n > 1 : gpus > 1;
}

/* The trainer `node` container of the template's replicated jobs, checked
 * in order; every match contributes (upstream walks them all). */
static int append_overrides_of(json_t *out, const json_t *rjob)
{
	static const char *const containers_path[] = {"template", "spec", "template", "spec",
	                                              "containers"};
	const json_t *labels = json_object_get(
	        json_object_get(json_object_get(rjob, "template"), "metadata"), "labels");
	const char *ancestor = json_string_value(json_object_get(labels, LABEL_ANCESTOR));
	if (!ancestor || strcmp(ancestor, ANCESTOR_TRAINER) != 0)
		return 0;
	const json_t *v = rjob;
	for (size_t k = 0; k < sizeof(containers_path) / sizeof(*containers_path); k++)
		v = json_object_get(v, containers_path[k]);
	size_t i, j;
	const json_t *c, *item;
	json_array_foreach(v, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		if (!name || strcmp(name, CONTAINER_NODE) != 0)
			continue;
		json_array_foreach(json_object_get(c, "command"), j, item)
		{
			char key[64];
			const char *s = json_string_value(item);
			if (s && kft_torchtune_immutable_key(s, key, sizeof(key)) &&
			    json_array_append(out, (json_t *)item) != 0)
				return -1;
		}
	}
	return 0;
}

json_t *kft_torchtune_runtime_overrides(const json_t *template_spec)
{
	json_t *out = json_array();
	size_t i;
	const json_t *rjob;
	if (!out)
		return NULL;
	json_array_foreach(json_object_get(template_spec, "replicatedJobs"), i, rjob)
	{
		if (append_overrides_of(out, rjob) != 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static int append_string(json_t *arr, const char *s)
{
	return json_array_append_new(arr, json_string(s));
}

/* What torchtune needs on a CPU (the backend has no GPUs, backend.h): the
 * configs say device: cuda and dtype: bf16, and the full single-device ones
 * a bitsandbytes optimizer that runs on CUDA only; AdamW keeps their lr. */
static int append_cpu_settings(json_t *out, const char *recipe)
{
	int rc = append_string(out, CFG_DEVICE_CPU) || append_string(out, CFG_DTYPE_FP32);
	if (rc == 0 && strcmp(recipe, RECIPE_FULL_SINGLE) == 0)
		rc = append_string(out, CFG_OPTIMIZER_CPU);
	return rc;
}

json_t *kft_torchtune_command(const json_t *command, const char *rdzv_endpoint, int32_t num_nodes,
                              const kft_torch_nproc *npp, int64_t gpus, const json_t *args,
                              const char *runtime_name, const json_t *template_spec, int cpu)
{
	const char *recipe;
	char config[320], rdzv[600];
	if (kft_torchtune_recipe_config(num_nodes, npp, gpus, args, runtime_name, &recipe, config,
	                                sizeof(config)) != 0)
		return NULL;
	json_t *out = json_is_array(command) ? json_deep_copy(command) : json_array();
	json_t *overrides = kft_torchtune_runtime_overrides(template_spec);
	int rc = (out && overrides) ? 0 : -1;
	if (rc == 0 && rdzv_endpoint) {
		int n = snprintf(rdzv, sizeof(rdzv), ARG_RDZV_ENDPOINT "=%s", rdzv_endpoint);
		rc = (n < 0 || (size_t)n >= sizeof(rdzv)) ? -1 : append_string(out, rdzv);
	}
	if (rc == 0)
		rc = append_string(out, recipe) || append_string(out, ARG_CONFIG) ||
		     append_string(out, config) || json_array_extend(out, overrides);
	if (rc == 0 && cpu)
		rc = append_cpu_settings(out, recipe);
	json_decref(overrides);
	if (rc != 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}
