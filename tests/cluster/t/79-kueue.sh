#!/usr/bin/env bash
# Full mode: TrainJobs queued by real Kueue (v0.17.0, built from its Go module; see kueue.sh),
# against KFT_CONTROLLER (ours or upstream v2.3.0; see controller.sh), with the controller's
# webhooks and Kueue's registered with the API server. Checked, in order:
#   quota       a ClusterQueue with quota (2 cpu) for exactly two TrainJobs of 1 node x 1 cpu,
#               four submitted to its LocalQueue: Kueue's webhook suspends all four, it admits
#               two (their Workloads QuotaReserved and Admitted, the TrainJobs unsuspended) and
#               the other two wait suspended, their Workloads pending
#   admission   Kueue's admission reaches the JobSet: its runtime patch (manager
#               kueue.x-k8s.io/manager) carries the ResourceFlavor's nodeLabels, and the admitted
#               TrainJobs' JobSets run with that nodeSelector in the node job's pod template; the
#               waiting ones' JobSets stay suspended
#   complete    the flavour's node label is put on a kwok node: the first two run and Complete,
#               Kueue sees them Finished and releases the quota, and the other two are admitted
#               and Complete in turn
#   3469        one `kubectl patch` (a single request) that adds a runtime patch to a suspended
#               TrainJob and sets suspend=false is accepted by the controller's validating
#               webhook, and the JobSet runs with the patch; changing runtimePatches of a running
#               TrainJob is still refused (upstream kubeflow/trainer#3469, in v2.3.0: the check
#               looks at suspend before or after the update). Kueue v0.17.0 itself still sends
#               two requests: RunWithPodSetsInfo (pkg/controller/jobs/trainjob) Updates the
#               TrainJob's runtimePatches while it is suspended, and the job framework's
#               startJob then patches suspend=false (kubernetes-sigs/kueue#8296 tracks
#               collapsing them), so its own path does not depend on #3469.
#   multikueue  a TrainJob with spec.managedBy kueue.x-k8s.io/multikueue gets no JobSet and no
#               status from the controller, while a sibling in the same queue runs to Complete.
#               Kueue itself does not leave it alone: its job framework does not look at
#               managedBy (only pod-group jobs skip local execution for a MultiKueue check), and
#               with no MultiKueue AdmissionCheck on the ClusterQueue (no MultiKueueConfig, no
#               worker cluster) nothing holds the admission for a worker, so Kueue admits it
#               locally and unsuspends it (checked too); it then holds its quota, as nobody here
#               runs it. With MultiKueue configured the Workload would wait for the admission
#               check and a worker cluster would run a copy.
# Pins: upstream v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go (runtimePatches
# immutability), pkg/util/trainjob (managedBy), Kueue v0.17.0 pkg/controller/jobs/trainjob.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"
. "$(dirname "${BASH_SOURCE[0]}")/kueue.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
[ -n "$reason" ] || reason=$(kueue_unavailable_reason)
if [ -n "$reason" ]; then
	skip "kueue $tag" "$reason"
	exit 0
fi
if ! kueue_build; then
	fail "kueue $tag" "cannot build or find Kueue (see above)"
	exit 0
fi
ns=$(new_namespace kueue) || {
	fail "kueue $tag" "cannot create a namespace"
	exit 0
}
label=kftrainer.test/kueue
# Kueue puts finalizers on Workloads, ClusterQueues and ResourceFlavors and removes them itself,
# so everything goes while it still runs; what is left after 30 s loses its finalizers.
cleanup() {
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	kubectl delete clusterqueue "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
	kubectl delete resourceflavor "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
	gone() { ! kubectl get namespace "$ns" && ! kubectl get clusterqueue "$ns" && ! kubectl get resourceflavor "$ns"; }
	wait_slowly 30 gone
	kueue_stop
	ctrl_webhooks_unregister
	ctrl_stop_all
	local o
	for o in $(kubectl -n "$ns" get workloads.kueue.x-k8s.io -o name 2>/dev/null) "clusterqueue/$ns" "resourceflavor/$ns"; do
		kubectl -n "$ns" patch "$o" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
	done
	kubectl label node --all "$label-" >/dev/null 2>&1
	return 0
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }

install_builtin_runtimes || {
	fail "kueue $tag" "cannot install the runtimes"
	exit 0
}
if ! ctrl_start main >&2 || ! ctrl_webhooks_register main || ! wait_for 30 webhook_reached "$ns"; then
	fail "kueue $tag" "the controller or its webhooks did not come up"
	ctrl_log_tail main
	exit 0
fi
if ! kueue_start; then
	fail "kueue $tag" "Kueue did not come up"
	exit 0
fi

# The flavour's nodeLabels name a label no node has yet, so admitted TrainJobs' pods stay
# unscheduled (and their TrainJobs running) until the test puts it on a node.
if ! out=$(kubectl apply -f - 2>&1 <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $ns}
spec:
  nodeLabels: {$label: $ns}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $ns}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: $ns}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: $ns
      resources:
      - {name: cpu, nominalQuota: "2"}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: $ns}
spec: {clusterQueue: $ns}
EOF
); then
	fail "kueue $tag" "the queue objects were refused" "$out"
	exit 0
fi
cq_active() { [ "$(kubectl get clusterqueue "$ns" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ]; }
wait_for 30 cq_active || {
	fail "kueue $tag" "the ClusterQueue never became Active" "$(kubectl get clusterqueue "$ns" -o yaml 2>&1)"
	exit 0
}

# A TrainJob of torch-distributed (1 node, 1 cpu) in LocalQueue q, created unsuspended (Kueue's
# webhook suspends it), with one more spec line when given.
queued() { # queued NAME [SPEC_LINE]
	trainjob_yaml "$1" false | sed "/^  name: /a\\  labels: {kueue.x-k8s.io/queue-name: q}" |
		if [ -n "${2:-}" ]; then sed "/^spec:/a\\  $2"; else cat; fi
}

# One line per TrainJob: NAME SUSPEND WORKLOAD, WORKLOAD one of admitted, pending (created,
# no quota), finished, none; and the JobSet's spec.suspend and its node job's nodeSelector
# value for $label.
state() {
	k get trainjobs,workloads.kueue.x-k8s.io,jobsets.jobset.x-k8s.io -o json 2>/dev/null | python3 -c '
import json, sys
label = sys.argv[1]
items = json.load(sys.stdin)["items"]
cond = lambda o, t: any(c["type"] == t and c["status"] == "True" for c in o.get("status", {}).get("conditions", []))
wl, js = {}, {}
for o in items:
    owners = [r["name"] for r in o["metadata"].get("ownerReferences", []) if r["kind"] == "TrainJob"]
    if o["kind"] == "Workload" and owners:
        wl[owners[0]] = ("finished" if cond(o, "Finished") else "admitted" if cond(o, "Admitted")
                         else "reserved" if cond(o, "QuotaReserved") else "pending")
    elif o["kind"] == "JobSet" and owners:
        sel = "-"
        for rj in o["spec"]["replicatedJobs"]:
            if rj["name"] == "node":
                sel = rj["template"]["spec"]["template"]["spec"].get("nodeSelector", {}).get(label, "-")
        js[owners[0]] = "%s %s" % (str(o["spec"].get("suspend", False)).lower(), sel)
for o in items:
    if o["kind"] == "TrainJob":
        n = o["metadata"]["name"]
        print(n, str(o["spec"].get("suspend", False)).lower(), wl.get(n, "none"), js.get(n, "nojobset -"))
' "$label" | sort
}
# The names of the TrainJobs among $1 whose state line matches the regular expression $2.
names_in() { state | awk -v re="$2" -v want=" $1 " 'index(want, " " $1 " ") && $0 ~ re { print $1 }' | tr '\n' ' '; }
count_in() { local n; n=$(names_in "$1" "$2"); set -- $n; echo $#; }

# --- quota -----------------------------------------------------------------------------------
four="t1 t2 t3 t4"
for t in $four; do
	if ! out=$(queued "$t" | k create -f - 2>&1); then
		fail "kueue $tag" "TrainJob $t refused" "$out"
		exit 0
	fi
done
two_admitted() {
	[ "$(count_in "$four" "^[^ ]+ false admitted false $ns\$")" = 2 ] &&
		[ "$(count_in "$four" "^[^ ]+ true pending true -\$")" = 2 ]
}
name="quota for two: two admitted and running, two wait suspended $tag"
if wait_slowly 60 two_admitted && sleep 3 && two_admitted; then
	pass "$name"
	first=$(names_in "$four" " admitted ")
	rest=$(names_in "$four" " pending ")
else
	fail "$name" "state (TrainJob, suspend, Workload, JobSet suspend, nodeSelector $label):" "$(state)"
	kueue_log_tail
	exit 0
fi

# --- admission -------------------------------------------------------------------------------
name="Kueue's admission reaches the JobSet through runtimePatches $tag"
t=${first%% *}
# The node job's nodeSelector value for $label in the TrainJob's kueue.x-k8s.io/manager patch.
patch=$(k get trainjob "$t" -o json | python3 -c '
import json, sys
label = sys.argv[1]
for p in json.load(sys.stdin)["spec"].get("runtimePatches", []):
    if p.get("manager") == "kueue.x-k8s.io/manager":
        for rj in p["trainingRuntimeSpec"]["template"]["spec"].get("replicatedJobs", []):
            if rj["name"] == "node":
                print(rj["template"]["spec"]["template"]["spec"].get("nodeSelector", {}).get(label, ""))
' "$label")
if [ "$patch" = "$ns" ]; then
	# two_admitted has just seen the JobSets of the admitted ones running with the nodeSelector.
	pass "$name"
else
	fail "$name" "TrainJob $t's kueue.x-k8s.io/manager patch has nodeSelector $label='$patch'" \
		"$(k get trainjob "$t" -o jsonpath='{.spec.runtimePatches}')"
fi

# --- complete --------------------------------------------------------------------------------
kubectl label node kwok-node-0 "$label=$ns" --overwrite >/dev/null
tj_complete() { test_condition "$ns" "$1" Complete True; }
all_complete() {
	local t
	for t in "$@"; do tj_complete "$t" || return 1; done
}
# check_complete NAME SECONDS TRAINJOBS: the two TrainJobs (a list of names) Complete within
# SECONDS, and Kueue marks both their Workloads Finished.
check_complete() {
	local jobs=$3 # seen by the eval in wait_slowly (bash's dynamic scope)
	# shellcheck disable=SC2086 # a list of names
	if wait_slowly "$2" all_complete $jobs &&
		wait_slowly 30 eval '[ "$(count_in "$jobs" " finished ")" = 2 ]'; then
		pass "$1"
	else
		fail "$1" "state:" "$(state)"
		diagnose "$ns"
		kueue_log_tail
	fi
}
check_complete "the first two Complete through kwok, and Kueue sees them Finished $tag" 60 "$first"
check_complete "then the other two are admitted and Complete $tag" 90 "$rest"

# --- 3469 ------------------------------------------------------------------------------------
name="one request patches runtimePatches and unsuspends (kubeflow/trainer#3469) $tag"
js_state() { k get jobset "$1" -o jsonpath="{.spec.suspend} {.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector}" 2>/dev/null; }
if trainjob_yaml p3469 true | k create -f - >/dev/null && wait_slowly 30 eval '[ "$(js_state p3469)" = "true " ]'; then
	one='{"spec":{"suspend":false,"runtimePatches":[{"manager":"kftrainer.test/kueue","trainingRuntimeSpec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{"spec":{"nodeSelector":{"'$label'":"'$ns'"}}}}}}]}}}}]}}'
	if ! out=$(k patch trainjob p3469 --type merge -p "$one" 2>&1); then
		fail "$name" "the patch was refused" "$out"
	elif wait_slowly 30 eval '[ "$(js_state p3469)" = "false {\"$label\":\"$ns\"}" ]'; then
		pass "$name"
	else
		fail "$name" "accepted, but the JobSet is '$(js_state p3469)'"
	fi
	name="runtimePatches of a running TrainJob are still refused $tag"
	two='{"spec":{"runtimePatches":[{"manager":"kftrainer.test/other"}]}}'
	out=$(k patch trainjob p3469 --type merge -p "$two" 2>&1)
	if [[ "$out" == *'RuntimePatches can only be modified when the TrainJob is suspended before or after the update'* ]]; then
		pass "$name"
	else
		fail "$name" "not refused as upstream refuses it" "$out"
	fi
else
	fail "$name" "the suspended TrainJob or its suspended JobSet did not appear" "$(js_state p3469)"
fi

# --- multikueue ------------------------------------------------------------------------------
name="a TrainJob managed by MultiKueue is left alone $tag"
if queued mk "managedBy: kueue.x-k8s.io/multikueue" | k create -f - >/dev/null &&
	queued sibling | k create -f - >/dev/null && wait_slowly 60 tj_complete sibling; then
	mk=$(state | awk '$1 == "mk"')
	status=$(k get trainjob mk -o jsonpath='{.status}')
	if [ "$(owned_count "$ns" jobsets.jobset.x-k8s.io mk)" = 0 ] && [ -z "$status" ]; then
		pass "$name"
	else
		fail "$name" "the controller acted on it: JobSets $(owned_count "$ns" jobsets.jobset.x-k8s.io mk), status '$status'"
	fi
	# Kueue v0.17.0 without a MultiKueue admission check admits and unsuspends it (see the top).
	if [ "$mk" = "mk false admitted nojobset -" ]; then
		pass "Kueue without MultiKueue admits and unsuspends it $tag"
	else
		fail "Kueue without MultiKueue admits and unsuspends it $tag" "state: '$mk'"
	fi
else
	fail "$name" "the TrainJobs were refused, or the sibling did not Complete" "$(state)"
fi
