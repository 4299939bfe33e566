#!/usr/bin/env bash
# train checks only the runtime its TrainJob references: a broken runtime elsewhere in -r DIR
# does not stop a job on another runtime, while a job that references the broken one is refused
# with exactly the lines `kftrainer validate` prints for that runtime, exit 1, nothing stored.
# Pins: on a cluster every runtime is its own object, checked when it is created, and the
# TrainJob webhook only looks up the runtime spec.runtimeRef names
# (pkg/webhooks/trainjob_webhook.go and pkg/runtime/core/clustertrainingruntime.go, v2.3.0); a
# ClusterTrainingRuntime is cluster-scoped, so its errors name it without a namespace.
. "$KFT_LOCAL_DIR/lib.sh"

rt=$KFT_CASE_TMP/runtimes
mkdir -p "$rt"
cp "$KFT_REPO_ROOT/manifests/runtimes/torch-distributed.yaml" "$rt/"
cat >"$rt/broken.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: broken-rt
spec:
  mlPolicy:
    numNodes: 0
    torch:
      numProcPerNode: 1
  template:
    spec:
      replicatedJobs: "not-a-list"
YAML
# Not even YAML, and it names neither runtime.
printf 'kind: [unclosed\n  : :\n' >"$rt/garbage.yaml"

run_capture kft validate -q "$rt/broken.yaml"
expect_eq "validate: the broken runtime is invalid (exit 1)" 1 "$KFT_RC"
want=$KFT_OUT
expect_contains "validate names its field errors" "$want" "spec.mlPolicy.numNodes"

# A job on the good runtime in the same directory runs.
expect_exit "train on torch-distributed beside the broken runtime: exit 0" 0 \
	kft train -r "$rt" --runtime torch-distributed --name scoped -- true
expect_eq "... the job is created" "trainjob.trainer.kubeflow.org/scoped created" "$KFT_OUT"
expect_eq "... with nothing on stderr" "" "$KFT_ERR"
expect_eq "... and it completes" Complete "$(wait_job scoped 60)"

# A job on the broken runtime: validate's lines, exactly, from either input form.
run_capture kft train -r "$rt" --runtime broken-rt --name bad -- true
expect_eq "train --runtime broken-rt: exit 1" 1 "$KFT_RC"
expect_eq "... prints validate's lines, exactly" "$want" "$KFT_ERR"
expect_eq "... and nothing on stdout" "" "$KFT_OUT"

cat >"$KFT_CASE_TMP/bad.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: bad-file
spec:
  runtimeRef:
    name: broken-rt
  trainer:
    command: ["true"]
YAML
run_capture kft train -r "$rt" -f "$KFT_CASE_TMP/bad.yaml"
expect_eq "train -f referencing broken-rt: exit 1" 1 "$KFT_RC"
expect_eq "... prints validate's lines, exactly" "$want" "$KFT_ERR"

expect_eq "nothing stored but the good job" "scoped" \
	"$(kft get -o json | jq -r '[.items[].metadata.name] | join(",")')"
run_capture kft get bad
expect_eq "get bad: not found (exit 3)" 3 "$KFT_RC"
expect_eq "no job directory for the refused jobs" "" \
	"$(find "$KFTRAINER_STATE_DIR/jobs" -mindepth 2 -maxdepth 2 -name 'bad*' 2>/dev/null)"
expect_no_processes "nothing left running" 10
