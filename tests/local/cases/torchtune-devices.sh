#!/usr/bin/env bash
# A torchtune TrainJob on the shipped runtime (torchtune-llama3.2-1b, `nvidia.com/gpu: 2` per
# node) as the engine runs it, with a stand-in `tune` that prints what it was given (issue 20,
# items 3 and 4). With GPUs (the KFTRAINER_GPUS inventory): the node gets its own
# CUDA_VISIBLE_DEVICES slice, torchrun's process count is the slice's size, and the Torch
# plugin picks the distributed LoRA recipe and config with a rendezvous endpoint, as upstream's
# does for 2 GPUs (pkg/runtime/framework/plugins/torch/torchtune.go, v2.3.0). With none: one
# process, the single-device recipe, device=cpu dtype=fp32 after the runtime's settings. And a
# job whose PATH has no `tune` is refused before anything is stored, naming the pip command.
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"

bin=$KFT_CASE_TMP/bin
mkdir -p "$bin"
cat >"$bin/tune" <<'SH'
#!/bin/sh
echo "argv: $*"
echo "cuda=$CUDA_VISIBLE_DEVICES nproc=$PET_NPROC_PER_NODE nnodes=$PET_NNODES"
SH
chmod +x "$bin/tune"

job() { # NAME
	cat >"$KFT_CASE_TMP/$1.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: $1}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b}
  initializer:
    dataset: {storageUri: "file://$ex/data"}
    model: {storageUri: "file://$ex/model"}
  trainer:
    command: [tune, run]
    args: ["model.lora_attn_modules=[q_proj,v_proj]", batch_size=1]
YAML
}

job gpus
KFTRAINER_TORCHTUNE_CHECK=off KFTRAINER_GPUS=4 PATH="$bin:$PATH" \
	expect_exit "with 4 GPUs: accepted" 0 kft train -f "$KFT_CASE_TMP/gpus.yaml"
expect_eq "it completes" Complete "$(wait_job gpus 60)"
logs=$(kft logs gpus 2>&1)
expect_contains "the node's own slice, and torchrun counts it" "$logs" "cuda=0,1 nproc=2 nnodes=1"
expect_contains "the distributed LoRA recipe with a rendezvous" "$logs" \
	"lora_finetune_distributed --config llama3_2/1B_lora output_dir=/workspace/output"
expect_contains "... at the job's own endpoint" "$logs" "argv: run --rdzv_endpoint=127.0.0.1:"
expect_not_contains "no CPU settings" "$logs" "device=cpu"

job cpu
KFTRAINER_TORCHTUNE_CHECK=off KFTRAINER_GPUS= PATH="$bin:$PATH" \
	expect_exit "with no GPU: accepted" 0 kft train -f "$KFT_CASE_TMP/cpu.yaml"
expect_eq "it completes" Complete "$(wait_job cpu 60)"
logs=$(kft logs cpu 2>&1)
expect_contains "one process, no slice" "$logs" "cuda= nproc=1 nnodes=1"
expect_contains "the single-device recipe, then what a CPU needs, then the user's args" "$logs" \
	"argv: run lora_finetune_single_device --config llama3_2/1B_lora_single_device output_dir=/workspace/output tokenizer.path=/workspace/model/original/tokenizer.model checkpointer.checkpoint_dir=/workspace/model device=cpu dtype=fp32 metric_logger._component_=kubeflow_trainer_torchtune.StatusLogger model.lora_attn_modules=[q_proj,v_proj] batch_size=1"

job notune
KFTRAINER_GPUS= PATH=/usr/bin:/bin expect_exit "no tune on PATH: refused" 1 \
	kft train -f "$KFT_CASE_TMP/notune.yaml"
expect_contains "... naming the pip command" "$KFT_ERR" \
	"there is no \`tune\` on the job's PATH: install the tested set with \`pip install torch==2.9.1 torchao==0.15.0 torchtune==0.6.1"
expect_exit "nothing was stored" 3 kft get notune
expect_exit "delete" 0 kft delete gpus cpu
