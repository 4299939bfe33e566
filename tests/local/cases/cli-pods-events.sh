#!/usr/bin/env bash
# `kftrainer pods` and `kftrainer events`: a job's pods as kubectl get pods shows them and its
# Events as kubectl events shows them. Pins: pods are named and labelled as the Job controller
# names them (jobset.sigs.k8s.io/jobset-name, replicatedjob-name, batch.kubernetes.io/
# job-completion-index, as upstream's SDK reads steps from); Events carry the kubelet's reasons
# and words (Created, Started, "Back-off restarting failed container node in pod P") and the
# JobSet controller's condition reason (AllJobsCompleted, FailedJobs).
. "$KFT_LOCAL_DIR/lib.sh"
marker="$KFT_CASE_TMP/crashed-once"

# node 1 crashes once, then succeeds: one restart, one BackOff.
run_capture timeout 120 "$KFTRAINER" train --runtime torch-distributed --nodes 2 --name pe --follow \
	-- sh -c "if [ \"\$PET_NODE_RANK\" = 1 ] && [ ! -e $marker ]; then touch $marker; exit 3; fi; echo ok"
expect_eq "train exits 0" 0 "$KFT_RC"

run_capture kft pods pe
expect_eq "pods: exit 0" 0 "$KFT_RC"
expect_eq "pods: header" "NAME READY STATUS RESTARTS AGE" "$(head -1 <<<"$KFT_OUT" | tr -s ' ')"
expect_eq "pods: node 0" "pe-node-0-0-local 0/1 Completed 0" \
	"$(sed -n 2p <<<"$KFT_OUT" | awk '{print $1, $2, $3, $4}')"
expect_eq "pods: node 1 restarted once" "pe-node-0-1-local 0/1 Completed 1" \
	"$(sed -n 3p <<<"$KFT_OUT" | awk '{print $1, $2, $3, $4}')"
run_capture kft pods pe -o json
expect_eq "pods -o json: a v1 PodList of 2" "PodList 2" "$(jq -r '"\(.kind) \(.items | length)"' <<<"$KFT_OUT")"
expect_eq "pods -o json: the Job controller's labels" "pe node 1" \
	"$(jq -r '.items[1].metadata.labels | "\(.["jobset.sigs.k8s.io/jobset-name"]) \(.["jobset.sigs.k8s.io/replicatedjob-name"]) \(.["batch.kubernetes.io/job-completion-index"])"' <<<"$KFT_OUT")"
expect_eq "pods -o json: terminated with exit 0" "0 Succeeded" \
	"$(jq -r '.items[1].status | "\(.containerStatuses[0].state.terminated.exitCode) \(.phase)"' <<<"$KFT_OUT")"
run_capture kft pods pe -o wide
expect_eq "pods -o wide: EXIT-CODE" "EXIT-CODE" "$(head -1 <<<"$KFT_OUT" | awk '{print $6}')"

run_capture kft events pe
expect_eq "events: exit 0" 0 "$KFT_RC"
expect_eq "events: header" "LAST SEEN TYPE REASON OBJECT MESSAGE" "$(head -1 <<<"$KFT_OUT" | tr -s ' ')"
expect_contains "events: the kubelet's Started" "$KFT_OUT" "Started container node"
expect_contains "events: the kubelet's BackOff" "$KFT_OUT" \
	"Back-off restarting failed container node in pod pe-node-0-1-local"
expect_contains "events: the JobSet completed" "$KFT_OUT" "jobset/pe"
run_capture kft events pe -o json
expect_eq "events -o json: an EventList, last the JobSet's AllJobsCompleted" "EventList JobSet AllJobsCompleted" \
	"$(jq -r '"\(.kind) \(.items[-1].involvedObject.kind) \(.items[-1].reason)"' <<<"$KFT_OUT")"
run_capture kft events
expect_contains "events without NAME: the namespace's" "$KFT_OUT" "pod/pe-node-0-0-local"

expect_exit "pods: no such job, exit 3" 3 kft pods nope
expect_contains "... in kubectl's words" "$KFT_ERR" 'trainjobs.trainer.kubeflow.org "nope" not found'
expect_exit "events: no such job, exit 3" 3 kft events nope
expect_exit "pods without NAME: usage, exit 2" 2 kft pods
expect_exit "events -o wide: usage, exit 2" 2 kft events pe -o wide

kft delete pe >/dev/null
expect_exit "events are gone with the job" 3 kft events pe
