#!/usr/bin/env bash
# Each job's processes get a TMPDIR of the job's own, under its job directory, removed with the
# job (issue 11, item 7: torchrun left 27 torchelastic_* folders in the system's temporary
# directory). A TMPDIR the pod's own env sets still wins, as any env the pod declares does.
. "$KFT_LOCAL_DIR/lib.sh"

mk='import tempfile; print("made", tempfile.mkdtemp(prefix="torchelastic_"))'
expect_exit "train" 0 kft train --runtime torch-distributed --name tmp --nodes 2 -- python3 -c "$mk"
expect_eq "it completes" Complete "$(wait_job tmp 60)"
jobdir=$KFTRAINER_STATE_DIR/jobs/default/tmp
logs=$(kft logs tmp 2>&1)
expect_contains "node 0's temporary folder is under the job directory" "$logs" "[node-0] made $jobdir/tmp/torchelastic_"
expect_contains "node 1's too" "$logs" "[node-1] made $jobdir/tmp/torchelastic_"
expect_eq "nothing reached the submitter's TMPDIR" "" "$(ls "$TMPDIR" | grep torchelastic_)"
expect_exit "delete" 0 kft delete tmp
if [ -e "$jobdir" ]; then fail "the folders went with the job" "$(ls -R "$jobdir")"; else pass "the folders went with the job"; fi

expect_exit "a pod's own TMPDIR" 0 kft train --runtime torch-distributed --name own \
	--env TMPDIR="$KFT_CASE_TMP" -- sh -c 'echo "tmp=$TMPDIR"'
expect_eq "it completes" Complete "$(wait_job own 60)"
expect_contains "wins over the job's" "$(kft logs own 2>&1)" "tmp=$KFT_CASE_TMP"
expect_exit "delete" 0 kft delete own
expect_no_processes "no process left"
