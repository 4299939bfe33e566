#!/usr/bin/env bash
# SIGINT to `train --follow` (Ctrl-C): the CLI stops following and the job keeps running; with
# --rm the job is deleted and every process of it stopped.
# Pins: the issue's contract for --follow/--rm (kubectl-style: interrupting a log stream does
# not touch the workload); no upstream counterpart.
. "$KFT_LOCAL_DIR/lib.sh"

# Background jobs of a non-interactive shell start with SIGINT ignored; job control gives each
# its own process group with default dispositions, as a terminal's Ctrl-C would find it.
set -m

# follow_then_interrupt NAME [--rm]: starts a long job with --follow, waits for its output,
# sends SIGINT to the CLI; sets CLI_RC to the CLI's exit status.
follow_then_interrupt() {
	local name=$1 out="$KFT_CASE_TMP/$1.out" pid
	shift
	"$KFTRAINER" train --runtime torch-distributed --name "$name" --follow "$@" \
		-- sh -c 'echo ticking; exec sleep 300' >"$out" 2>&1 &
	pid=$!
	if ! wait_for 60 grep -q ticking "$out"; then
		fail "$name: --follow streams the job's output" "nothing after 60 s" "$(cat "$out")"
		kill -INT "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 1
	fi
	pass "$name: --follow streams the job's output"
	kill -INT "$pid"
	local t0=$SECONDS
	wait "$pid"
	CLI_RC=$?
	if [ $((SECONDS - t0)) -le 10 ]; then
		pass "$name: the CLI exits promptly on SIGINT (status $CLI_RC)"
	else
		fail "$name: the CLI exits promptly on SIGINT" "took $((SECONDS - t0)) s"
	fi
}

if follow_then_interrupt keep; then
	sleep 1
	json=$(job_json keep)
	expect_eq "without --rm the job is still there and not finished" "keep false" \
		"$(jq -r '"\(.metadata.name) \(any(.status.conditions[]?; (.type == "Complete" or .type == "Failed") and .status == "True"))"' <<<"$json")"
	if [ -n "$(job_pids_with_env PET_NODE_RANK=0)" ]; then
		pass "without --rm the job's process still runs"
	else
		fail "without --rm the job's process still runs" "no process with PET_NODE_RANK=0"
	fi
	expect_exit "delete keep" 0 kft delete keep
	expect_no_processes "delete stopped it"
fi

if follow_then_interrupt gone --rm; then
	run_capture kft get gone
	expect_eq "with --rm the job is deleted (get exits 3)" 3 "$KFT_RC"
	expect_no_processes "with --rm no process is left"
fi
