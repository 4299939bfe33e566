#!/usr/bin/env bash
# Several CLIs on one job at once: two deletes (one deletes, the other finds nothing), a
# suspend racing a delete, two trains of one name; a follower sees the job deleted under it.
# Pins: kubectl's NotFound and AlreadyExists wording (k8s.io/apimachinery pkg/api/errors,
# v0.36.2); the store serializes writers.
. "$KFT_LOCAL_DIR/lib.sh"

start() {
	kft train --runtime torch-distributed --name "$1" --nodes 2 -- sh -c 'echo up; exec sleep 300' >/dev/null &&
		wait_for 60 sh -c "\"$KFTRAINER\" logs $1 2>/dev/null | grep -c up | grep -qx 2"
}

start twice || { fail "start twice" "nodes did not come up"; exit 0; }
"$KFTRAINER" delete twice >"$KFT_CASE_TMP/o1" 2>"$KFT_CASE_TMP/e1" &
p1=$!
"$KFTRAINER" delete twice >"$KFT_CASE_TMP/o2" 2>"$KFT_CASE_TMP/e2" &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
expect_eq "two deletes: one exits 0, the other 3 (not found)" "0 3" "$(printf '%s\n' $r1 $r2 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "one deleted line" 'trainjob.trainer.kubeflow.org "twice" deleted' "$(cat "$KFT_CASE_TMP/o1" "$KFT_CASE_TMP/o2")"
expect_eq "one NotFound line" 'Error from server (NotFound): trainjobs.trainer.kubeflow.org "twice" not found' \
	"$(cat "$KFT_CASE_TMP/e1" "$KFT_CASE_TMP/e2")"
expect_no_processes "two deletes leave no process"

start race || { fail "start race" "nodes did not come up"; exit 0; }
"$KFTRAINER" logs -f race >"$KFT_CASE_TMP/fo" 2>"$KFT_CASE_TMP/fe" &
pf=$!
wait_for 30 grep -q up "$KFT_CASE_TMP/fo"
"$KFTRAINER" suspend race >/dev/null 2>&1 &
ps=$!
"$KFTRAINER" delete race >/dev/null 2>&1 &
pd=$!
wait $ps; wait $pd
expect_eq "suspend racing delete: delete wins in the end" 3 "$(kft get race >/dev/null 2>&1; echo $?)"
if wait_for 20 sh -c "! kill -0 $pf 2>/dev/null"; then pass "a follower ends when its job is deleted"; else fail "follower ends" "still running"; kill $pf; fi
wait $pf
expect_eq "... with exit 0 after saying so" "0 kftrainer: race was deleted" "$? $(cat "$KFT_CASE_TMP/fe")"
expect_no_processes "suspend + delete leave no process"

"$KFTRAINER" train --runtime torch-distributed --name dup -- true >"$KFT_CASE_TMP/o1" 2>"$KFT_CASE_TMP/e1" &
p1=$!
"$KFTRAINER" train --runtime torch-distributed --name dup -- true >"$KFT_CASE_TMP/o2" 2>"$KFT_CASE_TMP/e2" &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
expect_eq "two trains of one name: one exits 0, the other 1" "0 1" "$(printf '%s\n' $r1 $r2 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_contains "the loser says already exists" "$(cat "$KFT_CASE_TMP/e1" "$KFT_CASE_TMP/e2")" '"dup" already exists'
kft wait dup --timeout 60s >/dev/null
kft delete dup >/dev/null
expect_no_processes "no process left"
