#!/usr/bin/env bash
# An invalid TrainJob: `train` prints exactly the field errors `validate` prints, exits 1, and
# nothing is stored or started.
# Pins: the TrainJob CRD's schema (numNodes minimum 1, metadata.name a DNS-1035 label for
# TrainJobs, enforced by upstream's webhook, pkg/webhooks/trainjob_webhook.go v2.3.0) and the
# API server's `field.Error` wording.
. "$KFT_LOCAL_DIR/lib.sh"

cat >"$KFT_CASE_TMP/bad.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: Bad_Name
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 0
    command: ["true"]
YAML
run_capture kft validate "$KFT_CASE_TMP/bad.yaml"
expect_eq "validate exits 1" 1 "$KFT_RC"
vout=$(printf '%s\n%s\n' "$KFT_OUT" "$KFT_ERR" | grep -F "$KFT_CASE_TMP/bad.yaml:" | sort)
run_capture kft train -f "$KFT_CASE_TMP/bad.yaml"
expect_eq "train exits 1" 1 "$KFT_RC"
tout=$(printf '%s\n%s\n' "$KFT_OUT" "$KFT_ERR" | grep -F "$KFT_CASE_TMP/bad.yaml:" | sort)
if [ -n "$vout" ] && [ "$vout" = "$tout" ]; then
	pass "train prints validate's field errors ($(wc -l <<<"$vout") lines)"
else
	fail "train prints validate's field errors" "they differ" "validate:" "$vout" "train:" "$tout"
fi
expect_contains "the errors name spec.trainer.numNodes" "$tout" "spec.trainer.numNodes"
expect_contains "the errors name metadata.name" "$tout" "metadata.name"

# The shortcut form validates the object it builds the same way.
expect_exit "train --nodes 0 exits 1" 1 kft train --runtime torch-distributed --name ok-name \
	--nodes 0 -- true
expect_contains "--nodes 0 is reported as spec.trainer.numNodes" "$KFT_OUT$KFT_ERR" \
	"spec.trainer.numNodes"

expect_eq "nothing stored" 0 "$(kft get -o json | jq '.items | length')"
expect_eq "no job directory" "" \
	"$(find "$KFTRAINER_STATE_DIR/jobs" -mindepth 2 -maxdepth 2 2>/dev/null)"
expect_no_processes "nothing started" 2
