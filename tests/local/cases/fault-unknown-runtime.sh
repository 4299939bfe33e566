#!/usr/bin/env bash
# A TrainJob naming a runtime that does not exist: rejected before anything is stored or run.
# Pins: upstream's runtime lookup rejects an unknown runtimeRef as field spec.RuntimeRef with
# the API's NotFound error followed by ": specified clusterTrainingRuntime must be created
# before the TrainJob is created" (pkg/runtime/core/clustertrainingruntime.go, v2.3.0).
. "$KFT_LOCAL_DIR/lib.sh"

expect_exit "train --runtime no-such-runtime exits 1" 1 \
	kft train --runtime no-such-runtime --name ghost -- true
expect_contains "the error names the runtime" "$KFT_OUT$KFT_ERR" '"no-such-runtime" not found'

trainjob_file "$KFT_CASE_TMP/job.yaml" ghost-file no-such-runtime
expect_exit "train -f with an unknown runtimeRef exits 1" 1 kft train -f "$KFT_CASE_TMP/job.yaml"
expect_contains "the error names the runtime and the kind" "$KFT_OUT$KFT_ERR" \
	'ClusterTrainingRuntime.trainer.kubeflow.org "no-such-runtime" not found: specified clusterTrainingRuntime must be created before the TrainJob is created'

expect_eq "nothing stored" 0 "$(kft get -o json | jq '.items | length')"
run_capture kft get ghost
expect_eq "get ghost: not found (exit 3)" 3 "$KFT_RC"
expect_contains "get ghost says so" "$KFT_ERR" "not found"
expect_no_processes "nothing started" 2
