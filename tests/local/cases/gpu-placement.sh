#!/usr/bin/env bash
# GPUs on a workstation (issue 11, item 6). This machine has none, so the inventory comes from
# KFTRAINER_GPUS (docs/local.md): each node gets a disjoint CUDA_VISIBLE_DEVICES slice sized by
# resourcesPerNode's nvidia.com/gpu, torch's numProcPerNode "auto" becomes the slice's size,
# GPUs held by a job that has not finished are not handed out again, and a request that does not
# fit is refused at submit: exit 1, the field named, nothing stored, nothing started. On a
# machine with no GPU at all the job runs on CPU instead (issue 20, item 4): its GPU requests are
# left out of what is built, torch's "auto" counts CPUs, a Warning event NoGPU and the first line
# of the trainer's log say so.
# Pins: upstream v2.3.0 GetNumGPUPerNode (requests, else limits; the first resource whose name
# contains "gpu") and the torch plugin, which keeps numProcPerNode "auto" for torchrun when the
# node has GPUs (torchrun then counts the CUDA devices it can see: the slice).
. "$KFT_LOCAL_DIR/lib.sh"

job() { # NAME NODES GPUS COMMAND: a torch-distributed TrainJob file in the case's directory
	cat >"$KFT_CASE_TMP/$1.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: $1}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: $2
    resourcesPerNode: {limits: {nvidia.com/gpu: $3}}
    command: [sh, -c, '$4']
YAML
}
show='echo "cuda=$CUDA_VISIBLE_DEVICES nproc=$PET_NPROC_PER_NODE"'

# No GPU on this machine (KFTRAINER_GPUS set and empty overrides NVML): the job runs on CPU.
job none 1 1 "$show"
KFTRAINER_GPUS='' expect_exit "no GPU here: accepted" 0 kft train -f "$KFT_CASE_TMP/none.yaml"
expect_eq "it completes" Complete "$(wait_job none 60)"
logs=$(kft logs none 2>&1)
expect_contains "the trainer's log says so first" "$(echo "$logs" | head -1)" \
	"==> this machine has no GPU (KFTRAINER_GPUS found none; KFTRAINER_GPUS names them): the 1 GPUs the job asks for are left out and it runs on CPU"
expect_contains "no GPU slice, and torch's auto counts CPUs" "$logs" "cuda= nproc=1"
expect_contains "an event says so" "$(kft events none 2>&1)" "NoGPU"
expect_eq "the pod asks for no GPU" "" \
	"$(kft pods none -o json | jq -r '.items[0].spec.containers[0].resources.limits // {} | keys[] | select(test("gpu"))')"

# 2 nodes x 2 GPUs of 4: disjoint slices, nproc from the slice.
job two 2 2 "$show"
KFTRAINER_GPUS=4 expect_exit "2x2 GPUs of 4: accepted" 0 kft train -f "$KFT_CASE_TMP/two.yaml"
expect_eq "it completes" Complete "$(wait_job two 60)"
logs=$(kft logs two 2>&1)
expect_contains "node 0 gets GPUs 0,1 and two processes" "$logs" "[node-0] cuda=0,1 nproc=2"
expect_contains "node 1 gets GPUs 2,3 and two processes" "$logs" "[node-1] cuda=2,3 nproc=2"

# Over-subscription: 3 nodes x 2 GPUs of 4.
job big 3 2 "$show"
KFTRAINER_GPUS=4 expect_exit "6 GPUs of 4: refused" 1 kft train -f "$KFT_CASE_TMP/big.yaml"
expect_contains "the refusal counts" "$KFT_ERR" \
	"spec.trainer.resourcesPerNode: 6 GPUs requested, but only 4 of this machine's 4 are free"
expect_exit "nothing was stored" 3 kft get big

# A running job holds its GPUs (UUIDs this time); a finished one (two, above) holds none.
gpus=GPU-aaaa,GPU-bbbb,GPU-cccc
job hold 1 2 "$show; sleep 300"
KFTRAINER_GPUS=$gpus expect_exit "a job holding 2 of 3" 0 kft train -f "$KFT_CASE_TMP/hold.yaml"
job more 1 2 "$show"
KFTRAINER_GPUS=$gpus expect_exit "2 more while it runs: refused" 1 kft train -f "$KFT_CASE_TMP/more.yaml"
expect_contains "the refusal names the holder" "$KFT_ERR" "held by jobs that have not finished: default/hold: 2"
job one 1 1 "$show"
KFTRAINER_GPUS=$gpus expect_exit "the one left: accepted" 0 kft train -f "$KFT_CASE_TMP/one.yaml"
expect_eq "it completes" Complete "$(wait_job one 60)"
expect_contains "it gets the free GPU" "$(kft logs one 2>&1)" "cuda=GPU-cccc nproc=1"
expect_exit "delete the holder" 0 kft delete hold
KFTRAINER_GPUS=$gpus expect_exit "its GPUs are free again" 0 kft train -f "$KFT_CASE_TMP/more.yaml"
expect_eq "it completes" Complete "$(wait_job more 60)"
expect_contains "on the freed GPUs" "$(kft logs more 2>&1)" "cuda=GPU-aaaa,GPU-bbbb nproc=2"

# A job without GPUs is not touched: no inventory asked (a bad KFTRAINER_GPUS is not even read),
# and the submitter's CUDA_VISIBLE_DEVICES reaches it.
cat >"$KFT_CASE_TMP/cpu.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: cpu}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {command: [sh, -c, 'echo "cuda=\${CUDA_VISIBLE_DEVICES-unset}"']}
YAML
KFTRAINER_GPUS='bad value' CUDA_VISIBLE_DEVICES=7 expect_exit "a CPU job ignores the inventory" 0 \
	kft train -f "$KFT_CASE_TMP/cpu.yaml"
expect_eq "it completes" Complete "$(wait_job cpu 60)"
expect_contains "it keeps the submitter's CUDA_VISIBLE_DEVICES" "$(kft logs cpu 2>&1)" "cuda=7"

# A bad inventory is an error naming the variable.
job badinv 1 1 "$show"
KFTRAINER_GPUS='0,,1' expect_exit "a bad KFTRAINER_GPUS: refused" 1 kft train -f "$KFT_CASE_TMP/badinv.yaml"
expect_contains "it names the variable and entry" "$KFT_ERR" "KFTRAINER_GPUS: entry 2 is empty"
expect_exit "delete all" 0 kft delete --all
expect_no_processes "no process left"
