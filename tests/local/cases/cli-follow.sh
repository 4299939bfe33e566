#!/usr/bin/env bash
# train --follow: every pod's lines prefixed by pod as they come, until the job ends; the exit
# status is the job's outcome, with the failure's reason and message; --rm deletes the job at
# the end however it ended.
# Pins: the issue's --follow contract; upstream v2.3.0's Failed condition (reason FailedJobs
# from the JobSet's failure) as the reported reason.
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1

run_capture kft train --runtime torch-distributed --name ok --nodes 2 --follow -- \
	sh -c 'echo "rank $PET_NODE_RANK"; sleep 0.2; printf "no newline at the end"'
expect_eq "Complete: exit 0" 0 "$KFT_RC"
expect_eq "the created line, then each node's lines, prefixed" \
	"[node-0] no newline at the end
[node-0] rank 0
[node-1] no newline at the end
[node-1] rank 1
trainjob.trainer.kubeflow.org/ok created" "$(LC_ALL=C sort <<<"$KFT_OUT")"
expect_eq "the created line comes first" "trainjob.trainer.kubeflow.org/ok created" \
	"$(head -1 <<<"$KFT_OUT")"
expect_eq "the outcome on stderr" "trainjob.trainer.kubeflow.org/ok Complete" "$KFT_ERR"
expect_exit "the job stays without --rm" 0 kft get ok

run_capture kft train --runtime torch-distributed --name bad --follow -- sh -c 'echo oops; exit 7'
expect_eq "Failed: exit 1" 1 "$KFT_RC"
expect_contains "the lines came through" "$KFT_OUT" "[node-0] oops"
expect_contains "the outcome names Failed and the reason" "$KFT_ERR" \
	"trainjob.trainer.kubeflow.org/bad Failed: "
expect_contains "... and the exit code" "$KFT_ERR" "7"

run_capture kft train --runtime torch-distributed --name tidy --rm -- sh -c 'echo bye'
expect_eq "--rm (implies --follow): exit 0" 0 "$KFT_RC"
expect_eq "--rm: followed, then deleted" "trainjob.trainer.kubeflow.org/tidy created
[node-0] bye
trainjob.trainer.kubeflow.org \"tidy\" deleted" "$KFT_OUT"
expect_exit "--rm: the job is gone" 3 kft get tidy

run_capture kft train --runtime torch-distributed --name tidy-bad --rm -- false
expect_eq "--rm of a failing job: exit 1" 1 "$KFT_RC"
expect_exit "... and it is gone too" 3 kft get tidy-bad

cat >"$KFT_CASE_TMP/two.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, metadata: {name: a},
   spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ["true"]}}}
- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, metadata: {name: b},
   spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ["true"]}}}
YAML
expect_exit "--follow with two TrainJobs: usage error" 2 kft train -f "$KFT_CASE_TMP/two.yaml" --follow
expect_exit "without --follow both are created" 0 kft train -f "$KFT_CASE_TMP/two.yaml"
expect_eq "... one line each" "trainjob.trainer.kubeflow.org/a created
trainjob.trainer.kubeflow.org/b created" "$KFT_OUT"
kft wait a b --timeout 60s >/dev/null
kft delete --all >/dev/null
expect_no_processes "no process left"
