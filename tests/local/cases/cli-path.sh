#!/usr/bin/env bash
# `kftrainer path NAME PATH` prints where a path of a job's pod is on this machine (issue 20,
# item 2: a fine-tune's /workspace/output found from a shell): the directory of the volume
# mounted there, for the trainer's first node or --step's pod; errors name what is missing.
. "$KFT_LOCAL_DIR/lib.sh"

cat >"$KFT_CASE_TMP/job.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: path-rt
spec:
  mlPolicy:
    numNodes: 1
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
                  volumeMounts:
                  - {name: work, mountPath: /workspace}
                volumes:
                - {name: work, emptyDir: {}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: out
spec:
  runtimeRef: {name: path-rt, kind: TrainingRuntime}
  trainer:
    command: [sh, -c, 'mkdir -p /workspace/output && echo weights > /workspace/output/model.bin']
YAML
expect_exit "train" 0 kft train -f "$KFT_CASE_TMP/job.yaml"
expect_eq "it completes" Complete "$(wait_job out 60)"
expect_exit "path /workspace/output" 0 kft path out /workspace/output
dir=$KFT_OUT
expect_eq "it is the job's volume" "$KFTRAINER_STATE_DIR/jobs/default/out/volumes/work/output" "$dir"
expect_eq "the pod's file is there" weights "$(cat "$dir/model.bin")"
expect_exit "the mount path itself" 0 kft path out /workspace
expect_eq "... is the volume" "$KFTRAINER_STATE_DIR/jobs/default/out/volumes/work" "$KFT_OUT"
expect_exit "a path on no volume: exit 1" 1 kft path out /etc/passwd
expect_contains "... naming the mount paths" "$KFT_ERR" "/etc/passwd is on no volume of pod out-node-0-0-local (its mount paths: /workspace)"
expect_exit "a relative path: exit 2" 2 kft path out workspace
expect_exit "an unknown step: exit 1" 1 kft path out /workspace --step nope
expect_contains "... named" "$KFT_ERR" "has no replicated job nope"
expect_exit "an unknown job: exit 3 (NotFound)" 3 kft path nope /workspace
expect_contains "... in kubectl's words" "$KFT_ERR" 'trainjobs.trainer.kubeflow.org "nope" not found'
expect_exit "no PATH: usage" 2 kft path out
expect_exit "delete" 0 kft delete out
