#!/usr/bin/env bash
# A trainer command that does not exist: the job is Failed and the reason names the command.
# Pins: the kubelet's wording for a missing executable, `exec: "NAME": executable file not
# found in $PATH` (runc, as a pod's StartError shows it), and upstream's TrainJob Failed
# condition copied from the JobSet's (reason FailedJobs, pkg/runtime/framework/plugins/jobset,
# v2.3.0).
. "$KFT_LOCAL_DIR/lib.sh"

expect_exit "train accepts the job" 0 kft train --runtime torch-distributed --name nocmd \
	-- kft-no-such-command-4711 --flag
expect_eq "the job fails" Failed "$(wait_job nocmd 90)"
cond=$(job_cond nocmd Failed)
expect_contains "the Failed condition is the JobSet's" "$cond" "|FailedJobs|"
expect_contains "its message names the command as containerd would" "$cond" \
	'exec: "kft-no-such-command-4711": executable file not found in $PATH'
expect_exit "wait --for Complete on a Failed job exits non-zero" 1 \
	kft wait nocmd --for Complete --timeout 10s
expect_no_processes "no process left"
expect_exit "delete" 0 kft delete nocmd
