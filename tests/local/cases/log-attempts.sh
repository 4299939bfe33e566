#!/usr/bin/env bash
# A crash retried by the Job's backoffLimit is one log per pod with every attempt in it; each
# attempt after the first is marked by a line of its own (docs/local.md, "Logs"), and `get`
# counts the restarts in a RESTARTS column, as kubectl get pods does (issue 11, item 7).
# Pins: batch/v1 Job backoffLimit: 3 retries after the first failure, then Failed; kubectl's
# RESTARTS column counting the times a pod's container was started again.
. "$KFT_LOCAL_DIR/lib.sh"

cat >"$KFT_CASE_TMP/crash.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: crashy}
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            backoffLimit: 3
            template:
              spec:
                containers: [{name: node, image: python}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: crash}
spec:
  runtimeRef: {name: crashy, kind: TrainingRuntime}
  trainer:
    command: [sh, -c, 'echo "Traceback (most recent call last)"; echo "ValueError: boom" >&2; exit 3']
YAML
expect_exit "train" 0 kft train -f "$KFT_CASE_TMP/crash.yaml"
expect_eq "it fails after its retries" Failed "$(wait_job crash 60)"
run_capture kft logs crash
expect_eq "four tracebacks in the log" 4 "$(grep -c '^Traceback' <<<"$KFT_OUT")"
expect_eq "three attempt marks" 3 "$(grep -c '^==> node-0: attempt [234], started .*; the previous exited with code 3 (pod crash-node-0-0-local) <==$' <<<"$KFT_OUT")"
expect_eq "each attempt's traceback follows its mark" \
	"Traceback ==> Traceback ==> Traceback ==> Traceback" \
	"$(grep -o '^Traceback\|^==>' <<<"$KFT_OUT" | tr '\n' ' ' | sed 's/ $//')"
run_capture kft get crash
expect_eq "get: RESTARTS" "3" \
	"$(awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "RESTARTS") c = i} NR == 2 {print $c}' <<<"$KFT_OUT")"

# A pod that succeeds at once has no mark and no restart.
expect_exit "a clean job" 0 kft train --runtime torch-distributed --name clean -- echo hello
expect_eq "it completes" Complete "$(wait_job clean 60)"
expect_eq "its log is just its output" hello "$(kft logs clean)"
expect_eq "RESTARTS 0" 0 "$(kft get clean --no-headers | awk '{print $5}')"
expect_exit "delete" 0 kft delete crash clean
expect_no_processes "no process left"
