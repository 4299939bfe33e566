#!/usr/bin/env bash
# `kftrainer runtimes`: the runtimes train and render resolve against, with framework label,
# ML policy and defaults; -o json a v1 List; an invalid runtime reported and left out.
# Pins: the runtimes' trainer.kubeflow.org/framework label and spec.mlPolicy as upstream
# v2.3.0 manifests define them (manifests/runtimes), defaulted as the CRD schema defaults them
# (torch numProcPerNode "auto", mpi numProcPerNode 1).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1

run_capture kft runtimes
expect_eq "runtimes exits 0" 0 "$KFT_RC"
expect_eq "header" "NAME FRAMEWORK ML-POLICY NODES PROCS IMAGE" \
	"$(head -1 <<<"$KFT_OUT" | tr -s ' ')"
expect_eq "torch-distributed row" \
	"torch-distributed torch torch 1 auto pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime" \
	"$(grep '^torch-distributed ' <<<"$KFT_OUT" | tr -s ' ')"
expect_eq "deepspeed is an MPI runtime with 1 proc per node" "deepspeed mpi 1 1" \
	"$(awk '$1 == "deepspeed-distributed" {print $2, $3, $4, $5}' <<<"$KFT_OUT")"
# Columns line up: every row's IMAGE starts where the header's does.
col=$(head -1 <<<"$KFT_OUT" | grep -bo IMAGE | cut -d: -f1)
bad=$(tail -n +2 <<<"$KFT_OUT" | awk -v c="$col" 'substr($0, c, 1) != " " || substr($0, c + 1, 1) == " "')
expect_eq "columns are aligned" "" "$bad"

files=$(grep -l '^kind: ClusterTrainingRuntime' manifests/runtimes/*.yaml | wc -l)
run_capture kft runtimes -o json
expect_eq "-o json is a v1 List" "v1 List" "$(jq -r '"\(.apiVersion) \(.kind)"' <<<"$KFT_OUT")"
expect_eq "-o json holds one item per runtime file" "$files" "$(jq '.items | length' <<<"$KFT_OUT")"
expect_eq "-o json items are defaulted" '"auto"' \
	"$(jq -c '.items[] | select(.metadata.name == "torch-distributed") | .spec.mlPolicy.torch.numProcPerNode' <<<"$KFT_OUT")"
run_capture kft runtimes -o name
expect_contains "-o name" "$KFT_OUT" "clustertrainingruntime.trainer.kubeflow.org/torch-distributed"

# A directory of our own: a namespaced TrainingRuntime and an invalid one.
mkdir -p "$KFT_CASE_TMP/rt"
cat >"$KFT_CASE_TMP/rt/plain.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: plain
  namespace: team-a
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: busybox
YAML
cat >"$KFT_CASE_TMP/rt/broken.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: broken
spec:
  mlPolicy:
    numNodes: 0
  template:
    spec:
      replicatedJobs: []
YAML
run_capture kft runtimes -r "$KFT_CASE_TMP/rt" -o wide
expect_eq "an invalid runtime makes the exit status 1" 1 "$KFT_RC"
expect_contains "its field error is printed" "$KFT_ERR" "broken.yaml: ClusterTrainingRuntime"
expect_contains "the error names the field" "$KFT_ERR" "spec.mlPolicy.numNodes"
expect_eq "the valid one is listed as plain, namespaced (wide)" \
	"plain - plain - - busybox TrainingRuntime team-a node" \
	"$(grep '^plain ' <<<"$KFT_OUT" | tr -s ' ')"
expect_not_contains "the invalid one is left out" "$KFT_OUT" "broken"

# KFTRAINER_RUNTIMES is the default location when no -r is given.
rm "$KFT_CASE_TMP/rt/broken.yaml"
run_capture env KFTRAINER_RUNTIMES="$KFT_CASE_TMP/rt" "$KFTRAINER" runtimes -o name
expect_eq "KFTRAINER_RUNTIMES is used" "trainingruntime.trainer.kubeflow.org/plain" "$KFT_OUT"
