#!/usr/bin/env bash
# kubectl wait semantics: condition met, timeout wording and status, durations, several names,
# waiting for Failed or Suspended; a job finished the other way ends the wait at once.
# Pins: kubectl wait (k8s.io/kubectl pkg/cmd/wait, v0.36.2): "condition met", "timed out
# waiting for the condition on trainjobs/NAME", --timeout as a Go duration (time.ParseDuration);
# upstream v2.3.0's TrainJob conditions (Complete, Failed, Suspended).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1

kft train --runtime torch-distributed --name slow -- sh -c 'exec sleep 300' >/dev/null
t0=$(date +%s%N)
expect_exit "timeout: exit 1" 1 kft wait slow --timeout 1500ms
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "timeout: kubectl's words" "error: timed out waiting for the condition on trainjobs/slow" "$KFT_ERR"
if [ "$ms" -ge 1400 ] && [ "$ms" -lt 5000 ]; then pass "waited about 1.5 s ($ms ms)"; else fail "waited about 1.5 s" "$ms ms"; fi
expect_exit "--timeout 0 checks once" 1 kft wait slow --timeout 0
expect_exit "--for condition=Complete=false: not met while the job has no such condition" 1 \
	kft wait slow --for condition=Complete=false --timeout 0

expect_exit "suspend" 0 kft suspend slow
expect_exit "--for Suspended: met" 0 kft wait slow --for Suspended --timeout 30s
expect_exit "--for condition=suspended (any case): met" 0 kft wait slow --for condition=suspended --timeout 1s
expect_exit "resume" 0 kft resume slow
expect_exit "--for condition=Suspended=False after resume: met" 0 \
	kft wait slow --for condition=Suspended=False --timeout 30s

kft train --runtime torch-distributed --name boom -- sh -c 'exit 4' >/dev/null
expect_exit "--for Failed on a failing job: met" 0 kft wait boom --for Failed --timeout 60s
t0=$SECONDS
expect_exit "--for Complete on a failed job: exit 1 at once" 1 kft wait boom --timeout 60s
expect_eq "... without sitting out the timeout" 1 $(( SECONDS - t0 < 10 ))
expect_contains "... saying it failed and why" "$KFT_ERR" "trainjob boom is Failed ("
expect_contains "... and that the condition will never be met" "$KFT_ERR" "condition Complete=True will never be met"

kft train --runtime torch-distributed --name quick -- true >/dev/null
expect_exit "several names share one timeout" 0 kft wait quick --for condition=Complete --timeout 1m
expect_exit "one name met, one not: exit 1" 1 kft wait quick slow --timeout 500ms
expect_eq "... the met one is reported" "trainjob.trainer.kubeflow.org/quick condition met" "$KFT_OUT"

kft delete slow >/dev/null &
expect_exit "--for delete: met once deleted" 0 kft wait slow --for delete --timeout 60s
wait
kft delete --all >/dev/null
expect_no_processes "no process left"
