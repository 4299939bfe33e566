/*
 * torchtune.h - the torchtune half of the Torch plugin (internal).
 *
 * A TrainJob whose trainer command is exactly ["tune", "run"] fine-tunes a
 * model with torchtune. The runtime is named "torchtune-<model>-<size>", and
 * the Torch plugin completes the command: an optional rendezvous endpoint,
 * then the recipe, "--config" and a config name chosen from the node count,
 * the processes per node, the GPUs per node and whether the args ask for
 * LoRA or QLoRA, then the runtime's own settings that users may not change
 * (output_dir, tokenizer paths, checkpoint dir). These functions are pure
 * string logic so that the rules can be tested one by one; torch.c applies
 * them to RuntimeInfo.
 */
#ifndef KFT_PLUGINS_TORCHTUNE_H
#define KFT_PLUGINS_TORCHTUNE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* How many processes torchrun starts per node: a count, or one of the words
 * torchrun resolves on the node itself ("auto", "cpu", "gpu"). */
typedef struct kft_torch_nproc {
	int is_int;
	int64_t n;       /* when is_int */
	const char *str; /* otherwise; static storage */
} kft_torch_nproc;

/* Writes into buf the model a runtime name designates: the second and third
 * dash-separated fields as "<field2 with '.' -> '_'>/<FIELD3 upper-cased>"
 * ("torchtune-llama3.2-1b" -> "llama3_2/1B"), or "" when the name does not
 * have exactly three fields. Returns 0, or KFT_ELIMIT when buf is too small
 * (buf then holds ""). name may be NULL (treated as ""). */
int kft_torchtune_model(const char *name, char *buf, size_t size);

/* 1 when the model is one torchtune runtimes support, else 0. */
int kft_torchtune_model_supported(const char *model);

/* 1 when command (a JSON array, may be NULL) is exactly ["tune", "run"]. */
int kft_torchtune_is_entrypoint(const json_t *command);

/* 1 when any arg mentions model.lora_attn_modules (LoRA requested). */
int kft_torchtune_lora_enabled(const json_t *args);

/* 1 when an arg sets model.quantize_base to true and none sets
 * model.use_dora to true (QLoRA requested). */
int kft_torchtune_qlora_enabled(const json_t *args);

/* The key of a "key=value" arg, copied into buf (the whole arg when it has
 * no '='), and 1 when that key is a setting the runtime owns (output_dir,
 * tokenizer.path, tokenizer.merges_file, checkpointer.checkpoint_dir). */
int kft_torchtune_immutable_key(const char *arg, char *buf, size_t size);

/* The recipe (static string) and the config name "<model><suffix>" for a job
 * of num_nodes nodes, npp processes and gpus GPUs per node, with the
 * trainer's args (may be NULL). Returns 0, or KFT_ELIMIT when config is too
 * small. */
int kft_torchtune_recipe_config(int32_t num_nodes, const kft_torch_nproc *npp, int64_t gpus,
                                const json_t *args, const char *runtime_name, const char **recipe,
                                char *config, size_t size);

/* 1 when the command needs a rendezvous endpoint: more than one node, or
 * more than one process per node (a count above 1, or a word with more than
 * one GPU). */
int kft_torchtune_needs_rendezvous(int32_t num_nodes, const kft_torch_nproc *npp, int64_t gpus);

/* A new array of the command items of the runtime template's trainer `node`
 * container whose key is immutable, in template order. template_spec is the
 * JobSet spec (borrowed; may be NULL). NULL only when out of memory. */
json_t *kft_torchtune_runtime_overrides(const json_t *template_spec);

/* The complete torchtune command: `command` (the TrainJob's ["tune", "run"])
 * followed by "--rdzv_endpoint=<rdzv_endpoint>" when rdzv_endpoint is not
 * NULL, the recipe, "--config", the config, and the runtime's overrides;
 * with cpu (a backend without GPUs, kft_backend.has_gpus) then "device=cpu",
 * "dtype=fp32" and, for the full single-device recipe, whose configs name a
 * CUDA-only bitsandbytes optimizer, "optimizer._component_=torch.optim.AdamW"
 * (the trainer's args follow the command, so a setting the user gives wins).
 * A new array the caller owns; NULL when out of memory or a name overflows. */
json_t *kft_torchtune_command(const json_t *command, const char *rdzv_endpoint, int32_t num_nodes,
                              const kft_torch_nproc *npp, int64_t gpus, const json_t *args,
                              const char *runtime_name, const json_t *template_spec, int cpu);

/* ---- reporting progress (torchtune_status.c, for the TrainJobStatus plugin) ---- */

/* When job's trainer runs `tune run`: points torchtune's metric_logger at the
 * status logger (an item after the node container's command), puts its
 * directory first on PYTHONPATH, and mounts the ConfigMap that holds it
 * (kft_torchtune_status_config_map) into the trainer's node container.
 * Nothing for other jobs, or a pod set without a node container. Returns 0
 * or KFT_ENOMEM. */
typedef struct kft_pod_set kft_pod_set;
typedef struct kft_trainjob kft_trainjob;
typedef struct kft_plugin_ctx kft_plugin_ctx;
int kft_torchtune_instrument(kft_pod_set *ps, const kft_trainjob *job);

/* The ConfigMap "<name>-torchtune-status" holding the status logger
 * (src/plugins/torchtune_status.py), owned by the TrainJob. New reference;
 * NULL when out of memory. */
json_t *kft_torchtune_status_config_map(const kft_plugin_ctx *ctx, const kft_trainjob *job);

#endif
