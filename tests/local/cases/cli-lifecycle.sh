#!/usr/bin/env bash
# The everyday loop: train (shortcut and -f) → get → wait → logs → delete, with kubectl's
# wording at each step, and no process left behind.
# Pins: kubectl's messages ("trainjob.trainer.kubeflow.org/NAME created", "... condition met",
# `"NAME" deleted`, `No resources found in default namespace.`); upstream v2.3.0's TrainJob
# status shape (conditions Complete/AllJobsCompleted, jobsStatus) in `get -o json`; the SDK's
# generated names (a letter and 11 hex digits, kubeflow/sdk TrainerClient.train).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1

run_capture kft get
expect_eq "an empty store: kubectl's wording" "No resources found in default namespace." "$KFT_ERR"

expect_exit "train (shortcut) exits 0" 0 kft train --runtime torch-distributed --name two \
	--nodes 2 --env GREETING=hello -- sh -c 'echo "$GREETING from $PET_NODE_RANK"; echo done'
expect_eq "prints kubectl's created line" "trainjob.trainer.kubeflow.org/two created" "$KFT_OUT"

expect_exit "wait exits 0" 0 kft wait two --for condition=Complete --timeout 60s
expect_eq "wait prints condition met" "trainjob.trainer.kubeflow.org/two condition met" "$KFT_OUT"

run_capture kft get two
expect_eq "get: header" "NAME RUNTIME STATUS NODES RESTARTS PROGRESS ETA AGE" "$(head -1 <<<"$KFT_OUT" | tr -s ' ')"
expect_eq "get: the job's row" "two torch-distributed Complete 2 0 - -" \
	"$(tail -1 <<<"$KFT_OUT" | awk '{print $1, $2, $3, $4, $5, $6, $7}')"
age=$(tail -1 <<<"$KFT_OUT" | awk '{print $8}')
if [[ $age =~ ^[0-9]+s$ ]]; then pass "AGE is in seconds ($age)"; else fail "AGE is in seconds" "$age"; fi

json=$(job_json two)
expect_eq "get -o json: one object for one NAME" "TrainJob two" "$(jq -r '"\(.kind) \(.metadata.name)"' <<<"$json")"
expect_eq "status carries upstream's Complete condition" "True AllJobsCompleted" \
	"$(jq -r '.status.conditions[] | select(.type == "Complete") | "\(.status) \(.reason)"' <<<"$json")"
expect_eq "status carries jobsStatus for the node step" "node 1" \
	"$(jq -r '.status.jobsStatus[] | select(.name == "node") | "\(.name) \(.succeeded)"' <<<"$json")"
run_capture kft get two -o yaml
expect_contains "get -o yaml" "$KFT_OUT" "kind: TrainJob"
run_capture kft get -o name
expect_eq "get -o name" "trainjob.trainer.kubeflow.org/two" "$KFT_OUT"

# kubectl's habit of naming the type first, or as TYPE/NAME, in every TrainJob verb.
run_capture kft get trainjobs -o name
expect_eq "get trainjobs: the type word lists the namespace" "trainjob.trainer.kubeflow.org/two" "$KFT_OUT"
run_capture kft get trainjob two -o name
expect_eq "get trainjob NAME" "trainjob.trainer.kubeflow.org/two" "$KFT_OUT"
run_capture kft get trainjobs.trainer.kubeflow.org/two -o name
expect_eq "get TYPE.GROUP/NAME" "trainjob.trainer.kubeflow.org/two" "$KFT_OUT"
expect_exit "wait trainjob/NAME" 0 kft wait trainjob/two --for condition=Complete --timeout 10s
run_capture kft logs trainjob/two --node 1
expect_eq "logs trainjob/NAME" "$(printf 'hello from 1\ndone')" "$KFT_OUT"
expect_exit "mixing the two forms: exit 2" 2 kft get trainjob/two two
expect_contains "... in kubectl's words" "$KFT_ERR" "there is no need to specify a resource type as a separate argument"

run_capture kft logs two
expect_eq "logs: every node, prefixed, node 0 first" \
	"$(printf '[node-0] hello from 0\n[node-0] done\n[node-1] hello from 1\n[node-1] done')" "$KFT_OUT"
run_capture kft logs two --node 1
expect_eq "logs --node 1: that node only, unprefixed" "$(printf 'hello from 1\ndone')" "$KFT_OUT"
run_capture kft logs two --node 1 --prefix
expect_eq "logs --prefix forces the prefix" "[node-1] hello from 1" "$(head -1 <<<"$KFT_OUT")"
expect_exit "logs --node beyond the nodes: exit 1" 1 kft logs two --node 2
expect_contains "... naming the range" "$KFT_ERR" "0..1"
expect_exit "logs --step unknown: exit 1" 1 kft logs two --step dataset-initializer
expect_contains "... naming the job's steps" "$KFT_ERR" "its steps: node"
run_capture kft logs -f two
expect_eq "logs -f of a finished job prints everything and ends" 4 "$(wc -l <<<"$KFT_OUT")"

# -f: a file TrainJob without a name but with generateName, and one without either.
cat >"$KFT_CASE_TMP/job.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  generateName: gen-
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    command: ["true"]
YAML
expect_exit "train -f (generateName) exits 0" 0 kft train -f "$KFT_CASE_TMP/job.yaml"
gen=$(sed -n 's#^trainjob.trainer.kubeflow.org/\(.*\) created$#\1#p' <<<"$KFT_OUT")
if [[ $gen =~ ^gen-[a-z0-9]{5}$ ]]; then pass "generateName gives gen-xxxxx ($gen)"; else fail "generateName" "$KFT_OUT"; fi
expect_exit "train without --name exits 0" 0 kft train --runtime torch-distributed -- true
sdk=$(sed -n 's#^trainjob.trainer.kubeflow.org/\(.*\) created$#\1#p' <<<"$KFT_OUT")
if [[ $sdk =~ ^[a-z][0-9a-f]{11}$ ]]; then pass "a generated name as the SDK's ($sdk)"; else fail "generated name" "$KFT_OUT"; fi
expect_exit "wait for several names" 0 kft wait "$gen" "$sdk" --timeout 60s
expect_eq "one condition-met line each" 2 "$(grep -c 'condition met' <<<"$KFT_OUT")"
expect_exit "the same name again: exit 1" 1 kft train --runtime torch-distributed --name two -- true
expect_contains "kubectl's already-exists wording" "$KFT_ERR" '"two" already exists'

expect_exit "delete exits 0 (the type word first, as with kubectl)" 0 kft delete trainjob two "$gen"
expect_eq "kubectl's deleted lines" \
	"$(printf 'trainjob.trainer.kubeflow.org "two" deleted\ntrainjob.trainer.kubeflow.org "%s" deleted' "$gen")" "$KFT_OUT"
expect_exit "delete --all exits 0" 0 kft delete --all
expect_eq "delete --all deletes the rest" "trainjob.trainer.kubeflow.org \"$sdk\" deleted" "$KFT_OUT"
run_capture kft get
expect_eq "the store is empty again" "No resources found in default namespace." "$KFT_ERR"
expect_eq "no job directory is left" "" "$(ls -A "$KFTRAINER_STATE_DIR/jobs/default" 2>/dev/null)"
expect_no_processes "no process left"
