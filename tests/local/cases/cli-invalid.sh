#!/usr/bin/env bash
# What train refuses before anything is stored: field errors exactly as validate and render
# print them (whatever the input form), an unknown runtime as render reports it, a namespace
# that contradicts -n as kubectl refuses it.
# Pins: upstream v2.3.0's TrainJob CRD schema and webhook (spec.trainer.numNodes minimum 1;
# spec.runtimeRef must name an existing runtime, pkg/runtime/core/trainingruntime.go);
# kubectl's namespace-mismatch error (k8s.io/cli-runtime resource.Builder, v0.36.2).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1

cat >"$KFT_CASE_TMP/bad.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: bad
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 0
    numProcPerNode: 0
    command: ["true"]
YAML
run_capture kft validate -q "$KFT_CASE_TMP/bad.yaml"
want=$KFT_OUT
run_capture kft train -f "$KFT_CASE_TMP/bad.yaml"
expect_eq "train -f: exit 1" 1 "$KFT_RC"
expect_eq "train -f: validate's lines, exactly" "$want" "$KFT_ERR"
expect_eq "train -f: nothing on stdout" "" "$KFT_OUT"

# The same TrainJob from stdin and from flags gives the same errors under their source names.
run_capture kft train -f - <"$KFT_CASE_TMP/bad.yaml"
expect_eq "train -f -: validate's lines for <stdin>" "${want//$KFT_CASE_TMP\/bad.yaml/<stdin>}" "$KFT_ERR"
run_capture kft train --runtime torch-distributed --name bad --nodes 0 --procs 0 -- true
expect_eq "train shortcut: the same lines for <command line>" \
	"${want//$KFT_CASE_TMP\/bad.yaml/<command line>}" "$KFT_ERR"

# An unknown runtime: render's error, field spec.runtimeRef.
trainjob_file "$KFT_CASE_TMP/ghost.yaml" ghost no-such-runtime
run_capture kft render -f "$KFT_CASE_TMP/ghost.yaml"
want=$KFT_OUT
run_capture kft train -f "$KFT_CASE_TMP/ghost.yaml"
expect_eq "unknown runtime: exit 1" 1 "$KFT_RC"
expect_eq "unknown runtime: render's line" "$want" "$KFT_ERR"
expect_contains "... naming the missing runtime" "$KFT_ERR" \
	'ClusterTrainingRuntime.trainer.kubeflow.org "no-such-runtime" not found' 

# A TrainJob in two files, one invalid: neither is submitted.
sed 's/name: bad/name: good/; s/numNodes: 0/numNodes: 1/; s/numProcPerNode: 0/numProcPerNode: 1/' \
	"$KFT_CASE_TMP/bad.yaml" >"$KFT_CASE_TMP/good.yaml"
expect_exit "a good and an unknown-runtime job together: exit 1" 1 \
	kft train -f "$KFT_CASE_TMP/good.yaml" -f "$KFT_CASE_TMP/ghost.yaml"
expect_eq "... and the good one was not submitted either" "" "$KFT_OUT"

# kubectl's -n rule.
sed 's/^  name: good/  name: good\n  namespace: team-a/' "$KFT_CASE_TMP/good.yaml" >"$KFT_CASE_TMP/ns.yaml"
expect_exit "-n contradicting metadata.namespace: exit 1" 1 kft train -f "$KFT_CASE_TMP/ns.yaml" -n team-b
expect_eq "... with kubectl's words" \
	"error: the namespace from the provided object \"team-a\" does not match the namespace \"team-b\". You must pass '--namespace=team-a' to perform this operation." \
	"$KFT_ERR"

expect_eq "nothing stored" 0 "$(kft get -A -o json | jq '.items | length')"
expect_no_processes "nothing started" 2
