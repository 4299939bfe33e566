#!/usr/bin/env bash
# kill -9 of a job's supervisor: the next `get` reports the job Failed with a reason and no
# process of the job is left running; nothing says Running any more: its pods are Failed
# (killed: exit 137, reason SupervisorLost) and jobsStatus counts no active Job (issue 24).
# Pins: the issue's contract (a dead supervisor is noticed by the next reader); the reason is
# kftrainer's own, SupervisorLost, since upstream has no supervisor; a pod whose containers were
# killed reports phase Failed with terminated state exitCode 137 / signal 9, as a kubelet does.
. "$KFT_LOCAL_DIR/lib.sh"

expect_exit "train accepts the job" 0 kft train --runtime torch-distributed --name orphan \
	--nodes 2 -- sh -c 'echo up; exec sleep 300'
if ! wait_for 60 job_proc_with_env PET_NODE_RANK=1 || ! wait_for 10 job_proc_with_env PET_NODE_RANK=0; then
	fail "both nodes start" "node 1 never started"
	exit 0
fi
sup=$(supervisor_pids)
if [ "$(wc -w <<<"$sup")" != 1 ]; then
	fail "one supervisor runs" "found: '$sup'"
	exit 0
fi
pass "one supervisor runs (pid $sup)"
nodes="$(job_pids_with_env PET_NODE_RANK=0) $(job_pids_with_env PET_NODE_RANK=1)"
active() { kft get orphan -o json | python3 -c '
import json, sys
sys.exit(0 if [j["active"] for j in json.load(sys.stdin)["status"].get("jobsStatus", [])] == [1] else 1)'; }
wait_for 30 active || fail "jobsStatus says the Job is active before the kill" "$(kft get orphan -o yaml)"
kill -KILL "$sup"
wait_for 5 eval "! any_alive $sup"

cond=$(job_cond orphan Failed)
expect_eq "the next get reports Failed" True "$(cut -d'|' -f1 <<<"$cond")"
expect_eq "with reason SupervisorLost" SupervisorLost "$(cut -d'|' -f2 <<<"$cond")"
expect_contains "the message says what happened" "$(cut -d'|' -f3 <<<"$cond")" "supervisor"
phases=$(kft pods orphan -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    t = p["status"]["containerStatuses"][0]["state"].get("terminated", {})
    print(p["status"]["phase"], t.get("exitCode"), t.get("reason"))')
expect_eq "the pods no longer say Running" "Failed 137 SupervisorLost
Failed 137 SupervisorLost" "$phases"
expect_eq "kftrainer pods agrees" "0" "$(kft pods orphan | grep -c Running)"
counts=$(kft get orphan -o json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["status"]["jobsStatus"]:
    print(j["name"], j["active"], j["ready"], j["failed"])')
expect_eq "jobsStatus counts the Job failed, none active or ready" "node 0 0 1" "$counts"
if wait_for 15 eval "! any_alive $nodes"; then
	pass "the nodes were stopped"
else
	fail "the nodes were stopped" "still alive: $(echo $nodes)"
fi
expect_no_processes "no process left"
expect_exit "wait --for Failed returns at once" 0 kft wait orphan --for Failed --timeout 5s
expect_exit "delete" 0 kft delete orphan
