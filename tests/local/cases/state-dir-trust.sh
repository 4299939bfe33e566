#!/usr/bin/env bash
# The state directory is trusted only when it is ours (as ssh's StrictModes trusts ~/.ssh): one
# that group or others may write, or that another user owns, is refused with an error naming the
# path and the problem. Files under it are never opened through a symlink: a planted
# logs/node-0.log link fails the pod instead of making the job append to the file it points at,
# and a planted job directory link is refused at submission.
. "$KFT_LOCAL_DIR/lib.sh"
sd=$KFTRAINER_STATE_DIR

expect_exit "a fresh state directory works" 0 kft get
for mode in 0777 0770 0757; do
	chmod "$mode" "$sd"
	expect_exit "mode $mode is refused" 1 kft get
	expect_contains "mode $mode: the error names the path and the problem" "$KFT_ERR" \
		"state directory $sd is writable by group or others (mode $mode)"
done
chmod 0755 "$sd"
expect_exit "mode 0755 is accepted" 0 kft get
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	chown nobody "$sd"
	expect_exit "a directory another user owns is refused" 1 kft get
	expect_contains "naming the owner" "$KFT_ERR" "state directory $sd is owned by uid $(id -u nobody)"
	chown 0 "$sd"
else
	skip "a directory another user owns is refused" "needs root to chown"
fi

# A planted log symlink: the job is created suspended, the link planted, then it is resumed.
victim=$KFT_CASE_TMP/victim
printf 'precious\n' >"$victim"
cat >"$KFT_CASE_TMP/job.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: planted
spec:
  suspend: true
  runtimeRef:
    name: torch-distributed
  trainer:
    command: ["sh", "-c", "echo appended"]
YAML
expect_exit "train a suspended job" 0 kft train -f "$KFT_CASE_TMP/job.yaml"
mkdir -p "$sd/jobs/default/planted/logs"
ln -s "$victim" "$sd/jobs/default/planted/logs/node-0.log"
expect_exit "resume it" 0 kft resume planted
expect_eq "the job fails" Failed "$(wait_job planted 120)"
expect_eq "the file the link points at is untouched" precious "$(cat "$victim")"
expect_contains "the pod's failure names the log" "$(kft get planted -o json)" "node-0.log"
expect_exit "delete" 0 kft delete planted
expect_eq "delete removed the link, not its target" precious "$(cat "$victim")"

# A planted job directory: a link where the job's directory goes.
mkdir -p "$KFT_CASE_TMP/elsewhere" "$sd/jobs/default"
ln -s "$KFT_CASE_TMP/elsewhere" "$sd/jobs/default/redirected"
expect_exit "a job whose directory is a planted link is refused" 1 \
	kft train --runtime torch-distributed --name redirected -- echo hi
expect_contains "naming the link" "$KFT_ERR" "jobs/default/redirected is a symbolic link"
expect_eq "nothing was written where it points" "" "$(ls -A "$KFT_CASE_TMP/elsewhere")"
rm -f "$sd/jobs/default/redirected"
expect_no_processes "no process left"
