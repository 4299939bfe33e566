#!/usr/bin/env bash
# Full mode: a TrainJob with dataset and model initializers on a torchtune runtime runs to
# Complete, against KFT_CONTROLLER (ours or upstream; see controller.sh).
#
# torchtune-llama3.2-1b's JobSet asks for a claim "initializer" (volumeClaimPolicies, 20Gi,
# ReadWriteOnce) that both initializers fill and the trainer reads; JobSet creates it from the
# template and its pods cannot be scheduled until it is bound. The full-mode cluster binds it
# as a real one does: `up --full` makes a default StorageClass served by
# kube-controller-manager's hostPath provisioner (before it, the claim stayed Pending and the
# job never started). Checked, in order:
#   claim       the JobSet's claim is created from the template and Bound, to a volume of the
#               default class
#   steps       the initializer Jobs complete before the trainer's Job starts (JobSet's
#               startupPolicy InOrder / dependsOn, as the runtime says), and every pod was
#               scheduled (a pod with an unbound claim never is)
#   complete    the TrainJob is Complete, its JobSet Completed
#   released    deleting the TrainJob deletes the claim with the JobSet (retentionPolicy
#               whenDeleted: Delete, JobSet's default) and the provisioner removes the volume
# Pins: upstream v2.3.0 manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml (the
# volumeClaimPolicies and initializer steps), JobSet v0.12 volumeClaimPolicies.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller initializers $tag" "$reason"
	exit 0
fi
if ! kubectl get storageclass standard >/dev/null 2>&1; then
	fail "controller initializers $tag" "no default StorageClass: start the cluster with this checkout's tests/cluster/up --full"
	exit 0
fi
ns=$(new_namespace init) || {
	fail "controller initializers $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || {
	fail "controller initializers $tag" "cannot install the runtimes"
	exit 0
}
ctrl_start main || {
	fail "controller initializers $tag" "the controller did not start"
	exit 0
}
k() { kubectl -n "$ns" "$@"; }

# As the Kubeflow SDK's BuiltinTrainer(TorchTuneConfig) with both initializers builds it.
k create -f - >/dev/null <<EOF || { fail "controller initializers $tag" "TrainJob rejected"; exit 0; }
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune, namespace: $ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b}
  initializer:
    dataset: {storageUri: 'hf://tatsu-lab/alpaca/data'}
    model: {storageUri: 'hf://meta-llama/Llama-3.2-1B-Instruct'}
  trainer: {numNodes: 1}
EOF

# --- claim ---
name="the initializer claim is bound to a volume of the default class $tag"
claim_phase() { jp -n "$ns" get pvc -l jobset.sigs.k8s.io/jobset-name=tune -o jsonpath='{.items[*].status.phase}'; }
claim_bound() { [ "$(claim_phase)" = Bound ]; }
if wait_slowly 120 claim_bound; then
	claims=$(k get pvc -o jsonpath='{range .items[*]}{.metadata.name} {.spec.storageClassName} {.spec.volumeName}{"\n"}{end}')
	pv=$(awk 'NR==1{print $3}' <<<"$claims")
	if [ "$(wc -l <<<"$claims")" = 1 ] && grep -q '^initializer-tune standard pvc-' <<<"$claims"; then
		pass "$name ($pv)"
	else
		fail "$name" "unexpected claims" "$claims"
	fi
else
	fail "$name" "claim phase: '$(claim_phase)'" "$(k get pvc -o wide 2>&1; k get events 2>&1 | tail -n 5)"
	diagnose "$ns"
	pv=""
fi

# --- complete ---
name="the TrainJob with initializers completes $tag"
if wait_trainjob_condition 300 "$ns/tune" Complete; then
	pass "$name"
else
	fail "$name" "not Complete within 300 s" "$(k get trainjob tune -o jsonpath='{.status}' 2>&1)"
	diagnose "$ns"
	ctrl_log_tail main
fi

# --- steps ---
name="initializers finished before the trainer started; every pod scheduled $tag"
times=$(k get jobs -o jsonpath='{range .items[*]}{.metadata.labels.jobset\.sigs\.k8s\.io/replicatedjob-name} {.status.startTime} {.status.completionTime}{"\n"}{end}')
unscheduled=$(k get pods -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' | awk 'NF < 2')
ds_done=$(awk '$1=="dataset-initializer"{print $3}' <<<"$times")
md_done=$(awk '$1=="model-initializer"{print $3}' <<<"$times")
tr_start=$(awk '$1=="node"{print $2}' <<<"$times")
if [ -z "$ds_done" ] || [ -z "$md_done" ] || [ -z "$tr_start" ]; then
	fail "$name" "missing Jobs or times" "$times"
elif [[ "$ds_done" > "$tr_start" ]] || [[ "$md_done" > "$tr_start" ]]; then
	fail "$name" "the trainer started before an initializer finished" "$times"
elif [ -n "$unscheduled" ]; then
	fail "$name" "pods never scheduled" "$unscheduled"
else
	pass "$name"
fi

# --- released ---
name="deleting the TrainJob releases the claim and its volume $tag"
k delete trainjob tune --wait=false >/dev/null 2>&1
gone() { [ -z "$(k get pvc -o name 2>/dev/null)" ] && { [ -z "$pv" ] || ! kubectl get pv "$pv" >/dev/null 2>&1; }; }
if wait_slowly 120 gone; then
	pass "$name"
else
	fail "$name" "still there" "$(k get pvc 2>&1; kubectl get pv 2>&1)"
fi
