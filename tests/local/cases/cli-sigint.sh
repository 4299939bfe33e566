#!/usr/bin/env bash
# Interrupting `train --follow`: the CLI exits 128+signal and says how to reattach, the job
# keeps running, and `logs -f` picks it up again until the job ends; with --rm the job is
# deleted and every process stopped.
# Pins: the issue's contract for SIGINT during --follow; shells' 128+N convention.
. "$KFT_LOCAL_DIR/lib.sh"
set -m # background jobs get default signal dispositions, as at a terminal

gate=$KFT_CASE_TMP/gate
# follow NAME SIGNAL [ARGS...]: starts a job that prints "ready" then waits for the gate file,
# follows it, signals the CLI once "ready" shows; sets CLI_RC, CLI_ERR.
follow() {
	local name=$1 sig=$2 out=$KFT_CASE_TMP/$1.out err=$KFT_CASE_TMP/$1.err pid
	shift 2
	"$KFTRAINER" train --runtime torch-distributed --name "$name" --follow "$@" -- sh -c \
		"echo ready; while [ ! -e '$gate' ]; do sleep 0.1; done; echo after" >"$out" 2>"$err" &
	pid=$!
	wait_for 60 grep -q ready "$out" || { fail "$name: ready" "no output" "$(cat "$out" "$err")"; kill -KILL $pid; return 1; }
	kill -"$sig" "$pid"
	wait "$pid"
	CLI_RC=$? CLI_ERR=$(cat "$err")
}

follow keep INT || exit 0
expect_eq "SIGINT: exit 130" 130 "$CLI_RC"
expect_eq "SIGINT: says how to reattach" \
	"kftrainer: stopped following; trainjob keep keeps running. Reattach with: kftrainer logs -f keep" "$CLI_ERR"
expect_eq "the job still runs" Running "$(kft get keep --no-headers | awk '{print $3}')"

# Reattach: logs -f shows what was written and what comes, and ends with the job.
kft logs -f keep >"$KFT_CASE_TMP/logs.out" 2>&1 &
lpid=$!
wait_for 30 grep -q ready "$KFT_CASE_TMP/logs.out"
if kill -0 $lpid 2>/dev/null; then pass "logs -f keeps following a running job"; else fail "logs -f keeps following" "it exited" "$(cat "$KFT_CASE_TMP/logs.out")"; fi
touch "$gate"
if wait_for 60 sh -c "! kill -0 $lpid 2>/dev/null"; then pass "logs -f ends when the job finishes"; else fail "logs -f ends when the job finishes" "still running"; kill $lpid; fi
wait $lpid
expect_eq "logs -f exit 0" 0 $?
expect_eq "logs -f printed the lines before and after reattaching" "ready
after" "$(cat "$KFT_CASE_TMP/logs.out")"
rm -f "$gate"

follow term TERM || exit 0
expect_eq "SIGTERM: exit 143" 143 "$CLI_RC"
kft delete term >/dev/null

follow gone INT --rm || exit 0
expect_eq "--rm and SIGINT: exit 130" 130 "$CLI_RC"
expect_exit "--rm: the job is deleted" 3 kft get gone
expect_not_contains "--rm: no reattach hint for a deleted job" "$CLI_ERR" "Reattach"
expect_no_processes "no process left"
