#!/usr/bin/env bash
# The disk holding the logs fills up while a job writes.
#
#  1. Only the logs' filesystem is full (a 256 KiB tmpfs mounted over the job's logs directory;
#     the store is elsewhere): the writer's failure fails the job like any failing node, with
#     the node and exit code in the message, and nothing is left running.
#  2. The whole state directory is on a full filesystem (1 MiB tmpfs), so the store cannot be
#     written either: the supervisor must survive it (docs/local.md: it keeps the job and
#     retries), `get` still answers, and `delete` stops everything and frees the space.
#
# Pins: the issue's "full disk for logs" fault; a container whose writes fail with ENOSPC exits
# non-zero like any failing program, and the JobSet's first-failure message names it (jobset
# v0.12.0 "jobset failed due to one or more job failures", detail as docs/local.md).
#
# Mounting needs root with CAP_SYS_ADMIN. Without it, part 1 uses RLIMIT_FSIZE (ulimit -f)
# instead, which fails the writer with SIGXFSZ rather than ENOSPC, and part 2 is skipped.
. "$KFT_LOCAL_DIR/lib.sh"

# Writes 4 MiB; exits 7 when the write fails, so the job's message can be checked exactly.
writer='head -c 4194304 /dev/zero | tr "\0" x || exit 7; echo wrote-everything'

can_mount=0
probe="$KFT_CASE_TMP/probe"
mkdir -p "$probe"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k kft-probe "$probe" 2>/dev/null; then
	umount "$probe"
	can_mount=1
fi

# check_failed_by_writer NAME: the job fails because node 0 exited 7.
check_failed_by_writer() {
	expect_eq "$1: the job fails" Failed "$(wait_job "$1" 90)"
	local cond
	cond=$(job_cond "$1" Failed)
	expect_contains "$1: the JobSet's reason" "$cond" "|FailedJobs|"
	expect_contains "$1: the message names the node and exit code" "$cond" \
		"node-0 (pod $1-node-0-0-local) exited with code 7"
	run_capture kft logs "$1"
	expect_not_contains "$1: the log does not claim the write succeeded" "$KFT_OUT" \
		"wrote-everything"
}

# --- 1. the logs' filesystem is full --------------------------------------------------------
if [ "$can_mount" = 1 ]; then
	logs="$KFTRAINER_STATE_DIR/jobs/default/logfull/logs"
	mkdir -p -m 0700 "$logs"
	mount -t tmpfs -o size=256k,mode=0700 kft-logs "$logs"
	on_exit "umount -l '$logs' 2>/dev/null"
	expect_exit "logfull: train accepts the job" 0 kft train --runtime torch-distributed \
		--name logfull -- sh -c "$writer"
	check_failed_by_writer logfull
	expect_no_processes "logfull: no process left"
	umount "$logs"
	expect_exit "logfull: delete" 0 kft delete logfull
else
	note "no tmpfs (not root, or mount not permitted): ulimit -f stands in for a full disk"
	run_capture bash -c "ulimit -f 256 && exec \"\$KFTRAINER\" train \
		--runtime torch-distributed --name logfull -- sh -c '$writer'"
	expect_eq "logfull: train accepts the job (ulimit -f 256)" 0 "$KFT_RC"
	check_failed_by_writer logfull
	expect_exit "logfull: delete" 0 kft delete logfull
fi
expect_no_processes "logfull: no process left after delete"

# --- 2. the store's filesystem is full too ---------------------------------------------------
if [ "$can_mount" = 0 ]; then
	skip "statefull" "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)"
	exit 0
fi
mnt="$KFT_CASE_TMP/small"
mkdir -p "$mnt"
mount -t tmpfs -o size=1m,mode=0700 kft-state "$mnt"
on_exit "umount -l '$mnt' 2>/dev/null"
export KFTRAINER_STATE_DIR="$mnt/state"

# The store and the job's files fit in 1 MiB with room to spare: the job starts, and then its
# writer fills the disk. (A train that is refused has not reached what this part checks.)
run_capture kft train --runtime torch-distributed --name statefull -- sh -c "$writer"
if [ "$KFT_RC" != 0 ]; then
	fail "statefull: train accepts the job" "exit $KFT_RC: the store no longer fits 1 MiB?" \
		"$KFT_OUT" "$KFT_ERR"
else
	pass "statefull: train accepts the job"
	# Once the writer has filled the disk and ended, the supervisor has had to record that.
	# (The writer fails within a second; it may be gone before a poll could see it start.)
	sleep 2
	wait_for 60 eval '! job_proc_with_env PET_NODE_RANK=0'
	sleep 2
	expect_eq "statefull: the supervisor survives a full store" 1 "$(supervisor_pids | wc -l)" ||
		note "supervisor.log: $(cat "$KFTRAINER_STATE_DIR"/jobs/default/statefull/supervisor.log 2>&1)"
	run_capture kft get statefull -o json
	if [ "$KFT_RC" = 0 ]; then
		expect_not_contains "statefull: get does not report the supervisor lost" \
			"$(jq -r '[.status.conditions[]?.reason] | join(",")' <<<"$KFT_OUT")" SupervisorLost
	else
		fail "statefull: get answers" "exit $KFT_RC" "$KFT_ERR"
	fi
fi
expect_exit "statefull: delete" 0 kft delete statefull
used=$(du -sk "$mnt/state/jobs" 2>/dev/null | cut -f1)
if [ "${used:-0}" -le 8 ]; then
	pass "statefull: delete freed the job's files (${used:-0} KiB left)"
else
	fail "statefull: delete freed the job's files" "${used} KiB left" "$(ls -laR "$mnt/state/jobs")"
fi
expect_no_processes "statefull: no process left"
