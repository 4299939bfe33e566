#!/usr/bin/env bash
# Two CLIs acting on one job at once: one wins, the other gets a clean error, nothing leaks.
# Pins: the store serializes writers (SQLite WAL plus a busy timeout); kubectl's wording for a
# second delete, `trainjobs.trainer.kubeflow.org "NAME" not found`, and for a second create,
# `... "NAME" already exists` (k8s.io/apimachinery pkg/api/errors, v0.36.2).
. "$KFT_LOCAL_DIR/lib.sh"

start_job() {
	kft train --runtime torch-distributed --name "$1" --nodes 2 -- sh -c 'exec sleep 300' \
		>/dev/null 2>&1 && wait_for 60 job_proc_with_env PET_NODE_RANK=1
}

# run_pair A B: runs two kftrainer command lines at once; sets R1 R2 (status) E1 E2 (stderr).
run_pair() {
	local a=$1 b=$2
	eval "\"\$KFTRAINER\" $a" >/dev/null 2>"$KFT_CASE_TMP/e1" &
	local p1=$!
	eval "\"\$KFTRAINER\" $b" >/dev/null 2>"$KFT_CASE_TMP/e2" &
	local p2=$!
	wait $p1
	R1=$?
	wait $p2
	R2=$?
	E1=$(cat "$KFT_CASE_TMP/e1") E2=$(cat "$KFT_CASE_TMP/e2")
}

# 1. Two deletes.
if start_job twice; then
	run_pair "delete twice" "delete twice"
	codes=$(printf '%s\n' "$R1" "$R2" | sort | tr '\n' ' ')
	expect_eq "two deletes: one succeeds, one exits 3 (not found)" "0 3 " "$codes"
	expect_contains "the loser says not found" "$E1$E2" '"twice" not found'
	expect_no_processes "two deletes: no process left"
else
	fail "two deletes" "the job did not start"
fi

# 2. Suspend and delete at once: whichever order, the job ends up deleted and stopped.
if start_job race; then
	run_pair "suspend race" "delete race"
	expect_eq "delete succeeds" 0 "$R2"
	# Never "has already finished": the delete marks the job before it stops anything, so the
	# supervisor it stops does not write Failed (this failed about one run in ten before).
	if [ "$R1" = 0 ] || grep -qE '"race" not found|race is being deleted' <<<"$E1"; then
		pass "suspend succeeds, says not found or being deleted (status $R1)"
	else
		fail "suspend succeeds, says not found or being deleted" "status $R1" "$E1"
	fi
	run_capture kft get race
	expect_eq "the job is gone" 3 "$KFT_RC"
	expect_no_processes "suspend+delete: no process left"
else
	fail "suspend and delete" "the job did not start"
fi

# 2b. While a delete is under way (the pod ignores SIGTERM, so stopping it takes the whole grace
# period), the job is shown as kubectl shows an object with a deletionTimestamp: STATUS
# Terminating, metadata.deletionTimestamp set, never Failed; suspend is refused.
if kft train --runtime torch-distributed --name slow -- sh -c 'trap "" TERM; sleep 300' \
	>/dev/null 2>&1 && wait_for 60 job_proc_with_env PET_NODE_RANK=0; then
	"$KFTRAINER" delete slow >"$KFT_CASE_TMP/del.out" 2>&1 &
	del=$!
	terminating() { kft get slow --no-headers 2>/dev/null | grep -q ' Terminating '; }
	if wait_for 5 terminating; then
		pass "get shows Terminating while the delete runs"
	else
		fail "get shows Terminating while the delete runs" "$(kft get slow 2>&1)"
	fi
	dt=$(job_json slow | jq -r '.metadata.deletionTimestamp // empty')
	expect_contains "-o json has metadata.deletionTimestamp" "$dt" "Z"
	run_capture kft suspend slow
	expect_eq "suspend during the delete exits 1" 1 "$KFT_RC"
	expect_contains "suspend says it is being deleted" "$KFT_ERR" "slow is being deleted"
	wait $del
	expect_eq "the delete succeeds" 0 "$?"
	run_capture kft get slow
	expect_eq "then the job is gone" 3 "$KFT_RC"
	expect_no_processes "delete during grace: no process left"
else
	fail "delete during grace" "the job did not start"
fi

# 3. Two creates of one name: exactly one job runs.
run_pair "train --runtime torch-distributed --name dup -- sleep 300" \
	"train --runtime torch-distributed --name dup -- sleep 300"
codes=$(printf '%s\n' "$R1" "$R2" | sort | tr '\n' ' ')
expect_eq "two creates: one succeeds, one exits 1" "0 1 " "$codes"
expect_contains "the loser says already exists" "$E1$E2" '"dup" already exists'
wait_for 30 job_proc_with_env PET_NODE_RANK=0
expect_eq "exactly one supervisor" 1 "$(supervisor_pids | wc -l)"
expect_exit "delete dup" 0 kft delete dup
expect_no_processes "two creates: no process left"
