#!/usr/bin/env bash
# The local engine through the real CLI when things go wrong: a node exiting non-zero, a
# command that does not exist, the supervisor killed with -9, suspend/resume, delete while
# running, activeDeadlineSeconds.
# Pins: JobSet v0.12's Failed condition (reason FailedJobs, "jobset failed due to one or more
# job failures (first failed job: JOB)") copied into the TrainJob by upstream's jobset plugin
# (pkg/runtime/framework/plugins/jobset, v2.3.0); upstream's TrainJob controller's Suspended
# (Suspended / "TrainJob is suspended", Resumed / "TrainJob is resumed") and DeadlineExceeded
# ("TrainJob exceeded its active deadline") conditions. SupervisorLost is ours (docs/local.md).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_CASE_TMP" || exit 1

# Whether node 1 of a job has a running process (the command is re-evaluated on every poll).
node1_runs() { [ -n "$(job_pids_with_env PET_NODE_RANK=1)" ]; }

# 1. Node 1 exits 3 while node 0 sleeps: Failed, naming the node and the code; node 0 stopped.
kft train --runtime torch-distributed --nodes 2 --name bad -- \
	/bin/sh -c 'test "$PET_NODE_RANK" = 1 && exit 3; sleep 60' >/dev/null
expect_eq "a failing node fails the job" Failed "$(wait_job bad 60)"
msg=$(job_cond bad Failed)
expect_contains "Failed has JobSet's reason" "$msg" "|FailedJobs|"
expect_contains "the message names the first failed job" "$msg" "(first failed job: bad-node-0)"
expect_contains "the message names the node and its exit code" "$msg" \
	"node-1 (pod bad-node-0-1-local) exited with code 3"
expect_no_processes "the other node was stopped"

# 2. A command that does not exist.
kft train --runtime torch-distributed --name nocmd -- no-such-command-kft >/dev/null
expect_eq "a missing command fails the job" Failed "$(wait_job nocmd 30)"
expect_contains "the message names the command" "$(job_cond nocmd Failed)" \
	'exec: "no-such-command-kft": executable file not found in $PATH'

# 3. kill -9 of the supervisor: the next get says Failed/SupervisorLost and nothing is left.
kft train --runtime torch-distributed --nodes 2 --name lost -- sleep 60 >/dev/null
wait_for 20 node1_runs
sup=$(supervisor_pids)
if [ -n "$sup" ]; then
	kill -9 $sup
	wait_for 5 eval '! any_alive '"$sup"
	expect_contains "get reports the job Failed with SupervisorLost" "$(job_cond lost Failed)" \
		"True|SupervisorLost|"
	expect_no_processes "no process of the lost job is left"
else
	fail "a supervisor runs for the job" "none found"
fi

# 4. Suspend stops everything; resume starts the pods again.
kft train --runtime torch-distributed --nodes 2 --name sr -- sleep 60 >/dev/null
wait_for 20 node1_runs
expect_exit "suspend" 0 kft suspend sr
expect_eq "Suspended condition" "True|Suspended|TrainJob is suspended" "$(job_cond sr Suspended)"
expect_no_processes "suspend leaves no process" 5
expect_exit "resume" 0 kft resume sr
expect_eq "Resumed condition" "False|Resumed|TrainJob is resumed" "$(job_cond sr Suspended)"
if wait_for 20 node1_runs; then
	pass "resume starts the pods again"
else
	fail "resume starts the pods again" "no node 1 process"
fi

# 5. Delete while running: no process, no job, no directory.
expect_exit "delete a running job" 0 kft delete sr
expect_no_processes "delete leaves no process" 5
expect_exit "the deleted job is gone" 3 kft get sr
if [ -e "$KFTRAINER_STATE_DIR/jobs/default/sr" ]; then
	fail "delete removes the job directory" "still there"
else
	pass "delete removes the job directory"
fi

# 6. activeDeadlineSeconds.
cat >late.yaml <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: late
spec:
  activeDeadlineSeconds: 1
  runtimeRef:
    name: torch-distributed
  trainer:
    command: [sleep, "60"]
EOF
kft train -f late.yaml >/dev/null
expect_eq "the deadline fails the job" Failed "$(wait_job late 30)"
expect_eq "DeadlineExceeded" "True|DeadlineExceeded|TrainJob exceeded its active deadline" \
	"$(job_cond late Failed)"
expect_no_processes "the deadline stops every process"

for j in bad nocmd lost late; do kft delete "$j" >/dev/null 2>&1; done
