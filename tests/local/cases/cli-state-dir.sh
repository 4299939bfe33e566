#!/usr/bin/env bash
# The global option --state-dir DIR (before the verb) and KFTRAINER_STATE_DIR choose the store;
# a relative path is taken from the current directory and still reaches the job's supervisor.
# Pins: the global option; kftrainer's store location rules (store.h).
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_CASE_TMP" || exit 1
export KFTRAINER_RUNTIMES="$KFT_REPO_ROOT/manifests/runtimes"

expect_exit "train --state-dir rel" 0 "$KFTRAINER" --state-dir rel train --runtime torch-distributed \
	--name here -- sh -c 'echo in-rel'
expect_exit "wait in rel" 0 "$KFTRAINER" --state-dir="$KFT_CASE_TMP/rel" wait here --timeout 60s
expect_eq "the store is in ./rel" "yes" "$([ -f rel/state.db ] && echo yes)"
run_capture kft get here
expect_eq "the default store does not have it" 3 "$KFT_RC"
run_capture env KFTRAINER_STATE_DIR=rel "$KFTRAINER" logs here
expect_eq "a relative KFTRAINER_STATE_DIR works too" "in-rel" "$KFT_OUT"
mkdir -p sub
run_capture sh -c 'cd sub && "$KFTRAINER" --state-dir ../rel get here -o name'
expect_eq "relative to the current directory" "trainjob.trainer.kubeflow.org/here" "$KFT_OUT"
expect_exit "--state-dir after the verb is the verb's (unknown) option" 2 kft get --state-dir rel
expect_exit "delete in rel" 0 "$KFTRAINER" --state-dir rel delete here
expect_no_processes "no process left"
