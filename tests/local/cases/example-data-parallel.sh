#!/usr/bin/env bash
# Example (a), examples/local/data-parallel: 2 nodes x 2 processes on torch-distributed,
# gradients averaged over TCP through the PET_* rendezvous, progress reported through
# KFTRAINER_STATUS_FILE.
# Pins: upstream's torch plugin gives each node PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
# PET_MASTER_ADDR, PET_MASTER_PORT (pkg/runtime/framework/plugins/torch/torch.go, v2.3.0);
# status.trainerStatus carries progressPercentage, estimatedRemainingSeconds, metrics and
# lastUpdatedTime (pkg/apis/trainer/v1alpha1/trainjob_types.go); the TrainJob becomes Complete
# when its JobSet completes.
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT/examples/local/data-parallel" || exit 1

# 1. The YAML as the README runs it, followed to the end.
run_capture timeout 240 "$KFTRAINER" train -f trainjob.yaml --follow
expect_eq "train --follow exits with the job's outcome" 0 "$KFT_RC" ||
	fail "train --follow output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "every epoch's loss is streamed" "$KFT_OUT" "epoch 20/20 loss"
expect_contains "the model converged" "$KFT_OUT" "converged: final loss"
expect_contains "all four ranks joined" "$KFT_OUT" "4 ranks joined"

expect_eq "Complete" True "$(job_cond data-parallel Complete | cut -d'|' -f1)"
json=$(job_json data-parallel)
expect_eq "trainerStatus.progressPercentage" 100 \
	"$(jq -r '.status.trainerStatus.progressPercentage' <<<"$json")"
loss=$(jq -r '.status.trainerStatus.metrics[]? | select(.name == "loss") | .value' <<<"$json")
if [ -n "$loss" ] && jq -en --arg l "$loss" '($l | tonumber) < 0.01' >/dev/null; then
	pass "trainerStatus.metrics carries the final loss ($loss)"
else
	fail "trainerStatus.metrics carries the final loss" "got '$loss'" "$json"
fi
expect_contains "trainerStatus.lastUpdatedTime is set" \
	"$(jq -r '.status.trainerStatus.lastUpdatedTime // ""' <<<"$json")" "T"

table=$(kft get 2>&1)
expect_contains "get lists the job" "$table" "data-parallel"
expect_contains "get shows 100% progress" "$table" "100%"
run_capture kft logs data-parallel
expect_contains "logs keeps node 0's output" "$KFT_OUT" "converged: final loss"
expect_no_processes "no process left once Complete"

# 2. The shortcut form, returning at once, watched while it runs.
run_capture kft train --runtime torch-distributed --name dp-shortcut --nodes 2 --procs 2 \
	--env EPOCHS=15 --env EPOCH_DELAY=0.4 -- python3 train.py
expect_eq "train (no --follow) returns at once, naming the job" \
	"0 trainjob.trainer.kubeflow.org/dp-shortcut created" "$KFT_RC $(tail -n1 <<<"$KFT_OUT")"
mid_progress() {
	local p
	p=$(job_json dp-shortcut | jq -r '.status.trainerStatus.progressPercentage // 0')
	[ "$p" -gt 0 ] && [ "$p" -lt 100 ]
}
if wait_for 90 mid_progress; then
	pass "progress is visible while training ($(job_json dp-shortcut |
		jq -r .status.trainerStatus.progressPercentage)%)"
else
	fail "progress is visible while training" "never between 0 and 100" "$(job_json dp-shortcut)"
fi
expect_exit "wait --for Complete" 0 kft wait dp-shortcut --for Complete --timeout 180s
run_capture kft logs dp-shortcut
expect_contains "--nodes 2 --procs 2 made four ranks" "$KFT_OUT" "4 ranks joined"
expect_no_processes "no process left after the shortcut job"

# 3. Deleting removes the jobs, their records and directories.
expect_exit "delete data-parallel" 0 kft delete data-parallel
expect_exit "delete dp-shortcut" 0 kft delete dp-shortcut
expect_eq "get shows no job after delete" "0" "$(kft get -o json | jq '.items | length')"
left=$(find "$KFTRAINER_STATE_DIR/jobs" -mindepth 2 -maxdepth 2 2>/dev/null | head -n3)
expect_eq "no job directory left" "" "$left"
