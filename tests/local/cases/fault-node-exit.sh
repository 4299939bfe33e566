#!/usr/bin/env bash
# One node of three exits non-zero: the job is Failed naming the node, its exit code and the
# last lines it wrote (issue 24: a failure says why where the user looks; `get NAME` prints it
# under the table), and the other nodes are stopped.
# Pins: JobSet's default failurePolicy (no maxRestarts) fails the JobSet when any Job fails,
# with reason FailedJobs (sigs.k8s.io/jobset v0.12.0, pkg/controllers/failure_policy.go);
# TrainJob copies it into its Failed condition (upstream v2.3.0); a failed JobSet's other Jobs
# are deleted, so their pods stop. The last lines of output are the kubelet's
# FallbackToLogsOnError habit (a failed container's log tail as its message), beyond upstream.
. "$KFT_LOCAL_DIR/lib.sh"

# Node 1 fails after the others are up; nodes 0 and 2 would run for five minutes.
script='echo "node $PET_NODE_RANK up"; if [ "$PET_NODE_RANK" = 1 ]; then sleep 2; echo "ValueError: bad lr" >&2; exit 3; fi; exec sleep 300'
expect_exit "train accepts the job" 0 kft train --runtime torch-distributed --name crash \
	--nodes 3 -- sh -c "$script"
if wait_for 60 job_proc_with_env PET_NODE_RANK=2 && wait_for 10 job_proc_with_env PET_NODE_RANK=0; then
	survivors="$(job_pids_with_env PET_NODE_RANK=0) $(job_pids_with_env PET_NODE_RANK=2)"
	pass "nodes 0 and 2 are running (pids $(echo $survivors))"
else
	survivors=
	fail "nodes 0 and 2 are running" "node 2 never started"
fi
expect_eq "the job fails" Failed "$(wait_job crash 120)"
cond=$(job_cond crash Failed)
expect_contains "the Failed condition's reason" "$cond" "|FailedJobs|"
expect_contains "the message names the failed node's Job" "$cond" "crash-node-0"
expect_contains "the message gives the node and exit code" "$cond" "exited with code 3"
expect_contains "and the failed attempt's last lines" "$cond" \
	'exited with code 3; its last lines:\n  node 1 up\n  ValueError: bad lr'
expect_contains "get NAME prints why under the table" "$(kft get crash)" \
	"crash failed: jobset failed due to one or more job failures (first failed job: crash-node-0): node-1 (pod crash-node-0-1-local) exited with code 3; its last lines:
  node 1 up
  ValueError: bad lr"
if [ -n "$survivors" ] && wait_for 15 eval '! any_alive '"$survivors"; then
	pass "the other nodes were stopped"
else
	fail "the other nodes were stopped" "still alive: $(echo $survivors)"
fi
expect_no_processes "no process left"
expect_exit "delete" 0 kft delete crash
