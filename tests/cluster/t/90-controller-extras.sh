#!/usr/bin/env bash
# Full mode: what the controller does beyond the TrainJob lifecycle of 82-controller-lifecycle.sh.
#   events     a TrainJob whose runtime does not exist gets an events.k8s.io/v1 Event, as upstream
#              v2.3.0 records it (trainjob_controller.go: recorder from
#              GetEventRecorder("trainer-trainjob-controller"), Eventf(..., Warning,
#              "TrainJobResourcesCreationFailed", "Reconciling", message)); client-go's
#              tools/events names the reporting instance "<controller>-<hostname>" and turns
#              repeats into a series (count >= 2) instead of new Events
#   requeue    upstream's coscheduling and volcano plugins watch LimitRanges and RuntimeClasses
#              and requeue suspended TrainJobs (their PodGroup depends on both): a new LimitRange
#              requeues the suspended TrainJobs of its namespace, a changed RuntimeClass those
#              whose runtime's pods use it; seen as the controller's "Reconciling TrainJob"
#              log lines for that TrainJob going up (V(2), both controllers)
#   finalizer  ours only, kftrainer's RuntimeInUseFinalizer gate (Trainer v2.2.0's
#              trainingruntime_controller.go / clustertrainingruntime_controller.go): a runtime
#              a TrainJob uses gets the trainer.kubeflow.org/resource-in-use finalizer, deleting
#              it is held (deletionTimestamp set, object still there) until the TrainJob is
#              deleted, then it goes; for a TrainingRuntime and a ClusterTrainingRuntime. Gate
#              off (the default, v2.3.0), a runtime in use gets no finalizer.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"
export KFT_CTRL_LOG_LEVEL=2 # "Reconciling TrainJob" lines, counted per TrainJob below

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller extras $tag" "$reason"
	exit 0
fi
ns=$(new_namespace extras) || {
	fail "controller extras $tag" "cannot create a namespace"
	exit 0
}
suffix=$(openssl rand -hex 3)
crt="kft-extras-$suffix"
rclass="kft-extras-$suffix"
wrapdir=$(mktemp -d)
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	kubectl delete clustertrainingruntime "$crt" --wait=false >/dev/null 2>&1
	kubectl patch clustertrainingruntime "$crt" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
	kubectl delete runtimeclass "$rclass" --wait=false >/dev/null 2>&1
	rm -rf "$wrapdir"
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
gone() { ! k get "$1" "$2" >/dev/null 2>&1; }
unschedulable="{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}"

# How often controller $1 has reconciled the TrainJob $2 of this test's namespace: its V(2) "Reconciling
# TrainJob" log lines for that key (both controllers log them, with the key as trainJob's name and
# namespace). Not controller_runtime_reconcile_total, which counts every TrainJob of the cluster:
# after the controller's restart, TrainJobs other tests left behind (in namespaces still being
# deleted, slowly on a loaded machine) that fail, a missing runtime say, retry with exponential
# back-off, 5 ms doubling, so their retries land 10, 20, 40 s later, in any window below whatever
# it waits beforehand; that was the intermittent failure.
reconciles() {
	grep -F '"Reconciling TrainJob"' "$(ctrl_logfile "$1")" 2>/dev/null |
		grep -F "\"name\":\"$2\"" | grep -cF "\"namespace\":\"$ns\""
}
# Wait until the count stays put for 3 s (at most 30 s); print it.
settled_reconciles() { # unchanged over three 3 s looks in a row (a JobSet's status settles late)
	local a b still=0
	a=$(reconciles "$1" "$2")
	for _ in $(seq 1 15); do
		sleep 3
		b=$(reconciles "$1" "$2")
		if [ "$a" = "$b" ]; then
			still=$((still + 1))
			[ "$still" -ge 3 ] && break
		else
			still=0
		fi
		a=$b
	done
	echo "$a"
}
above() { [ "$(reconciles "$1" "$2")" -gt "$3" ]; }

quick_runtime "$ns" torch-quick || {
	fail "controller extras $tag" "cannot install the runtime"
	exit 0
}
ctrl_start main || {
	fail "controller extras $tag" "the controller did not start"
	exit 0
}

# --- events ---
name="a failed reconcile records an events.k8s.io/v1 Event, action Reconciling, as a series $tag"
TJ_RUNTIME=TrainingRuntime/no-such-runtime trainjob_yaml orphan | k create -f - >/dev/null
# "TYPE|REASON|ACTION|CONTROLLER|INSTANCE|SERIES COUNT|NOTE" of each new-style Event about orphan.
v1_events() {
	k get events.v1.events.k8s.io -o json 2>/dev/null | python3 -c '
import json, sys
for e in json.load(sys.stdin)["items"]:
    r = e.get("regarding", {})
    if r.get("kind") == "TrainJob" and r.get("name") == "orphan":
        print("|".join([e.get("type", ""), e.get("reason", ""), e.get("action", ""),
                        e.get("reportingController", ""), e.get("reportingInstance", ""),
                        str((e.get("series") or {}).get("count", 1)), e.get("note", "")]))'
}
series_seen() { v1_events | awk -F'|' '$6 >= 2' | grep -q .; }
if wait_slowly 60 series_seen; then
	line=$(v1_events | awk -F'|' '$6 >= 2' | head -n 1)
	IFS='|' read -r typ rsn act ctl inst _ note <<<"$line"
	want_note="TrainJob resources reconciliation failed: TrainingRuntime specified in TrainJob is not found"
	if [ "$typ|$rsn|$act|$ctl" = "Warning|TrainJobResourcesCreationFailed|Reconciling|trainer-trainjob-controller" ] &&
		[ "$inst" = "trainer-trainjob-controller-$(hostname)" ] && [ "${note#"$want_note"}" != "$note" ]; then
		pass "$name"
	else
		fail "$name" "got: $line" "want: Warning|TrainJobResourcesCreationFailed|Reconciling|trainer-trainjob-controller|trainer-trainjob-controller-$(hostname)|N|$want_note..."
	fi
else
	fail "$name" "no Event with series count >= 2 within 60 s" "events: $(v1_events)"
	ctrl_log_tail main 10
fi
k delete trainjob orphan --wait=false >/dev/null

# --- requeue on LimitRange and RuntimeClass changes ---
if ! kubectl get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1; then
	skip "LimitRange and RuntimeClass changes requeue suspended TrainJobs $tag" "no PodGroup CRD"
else
	kubectl create -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: $rclass
handler: runc
EOF
	k get trainingruntime torch-quick -o json | python3 -c '
import json, sys
rt = json.load(sys.stdin)
md = rt["metadata"]
rt["metadata"] = {"name": "with-class", "namespace": md["namespace"]}
rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["runtimeClassName"] = sys.argv[1]
print(json.dumps(rt))' "$rclass" | k create -f - >/dev/null
	TJ_RUNTIME=TrainingRuntime/with-class trainjob_yaml classy true 1 "$unschedulable" | k create -f - >/dev/null
	wait_slowly 60 k get jobset classy
	name="a new LimitRange requeues the suspended TrainJobs of its namespace $tag"
	before=$(settled_reconciles main classy)
	k create -f - >/dev/null <<EOF
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
spec:
  limits:
  - type: Container
    defaultRequest: {cpu: 100m}
EOF
	if wait_slowly 20 above main classy "$before"; then
		pass "$name"
	else
		fail "$name" "reconciles of classy stayed at $before"
	fi
	name="a changed RuntimeClass requeues the suspended TrainJobs whose runtime uses it $tag"
	before=$(settled_reconciles main classy)
	kubectl label runtimeclass "$rclass" kftrainer.test/touched=1 >/dev/null
	if wait_slowly 20 above main classy "$before"; then
		pass "$name"
	else
		fail "$name" "reconciles of classy stayed at $before"
	fi
	name="a RuntimeClass change does not requeue TrainJobs that are not suspended $tag"
	k patch trainjob classy --type merge -p '{"spec":{"suspend":false}}' >/dev/null
	before=$(settled_reconciles main classy)
	kubectl label runtimeclass "$rclass" kftrainer.test/touched=2 --overwrite >/dev/null
	sleep 5
	after=$(reconciles main classy)
	if [ "$after" = "$before" ]; then
		pass "$name"
	else
		fail "$name" "reconciles went from $before to $after for a TrainJob no longer suspended"
		ctrl_log_tail main 30
	fi
fi

# --- gate off (v2.3.0): no finalizer on a runtime in use ---
has_fin() { # has_fin KIND NAME [NS]
	kubectl ${3:+-n "$3"} get "$1" "$2" -o jsonpath='{.metadata.finalizers}' 2>/dev/null |
		grep -q 'trainer.kubeflow.org/resource-in-use'
}
quick_runtime "$ns" plain-runtime
TJ_RUNTIME=TrainingRuntime/plain-runtime trainjob_yaml plain-user false 1 "$unschedulable" | k create -f - >/dev/null
name="gate off: a runtime in use gets no resource-in-use finalizer $tag"
if wait_slowly 60 k get jobset plain-user; then
	sleep 3
	if has_fin trainingruntime plain-runtime "$ns"; then
		fail "$name" "finalizers: $(k get trainingruntime plain-runtime -o jsonpath='{.metadata.finalizers}')"
	else
		pass "$name"
	fi
else
	fail "$name" "no JobSet for the TrainJob within 60 s"
fi

# --- gate on: the finalizer holds deletion while a TrainJob uses the runtime ---
if [ "$(ctrl_flavour)" != ours ]; then
	skip "RuntimeInUseFinalizer $tag" "a kftrainer feature gate; upstream v2.3.0 has none"
	exit 0
fi
ctrl_stop main
real=$(ctrl_binary) || exit 0
cat >"$wrapdir/kftrainer-controller-manager" <<EOF
#!/bin/sh
exec "$real" --feature-gates=RuntimeInUseFinalizer=true "\$@"
EOF
chmod +x "$wrapdir/kftrainer-controller-manager"
KFT_CONTROLLER_BIN="$wrapdir/kftrainer-controller-manager" ctrl_start gated || {
	fail "RuntimeInUseFinalizer $tag" "the controller did not start with the gate on"
	exit 0
}
k get trainingruntime torch-quick -o json | python3 -c '
import json, sys
rt = json.load(sys.stdin)
print(json.dumps({"apiVersion": rt["apiVersion"], "kind": "ClusterTrainingRuntime",
                  "metadata": {"name": sys.argv[1]}, "spec": rt["spec"]}))' "$crt" |
	kubectl create -f - >/dev/null
quick_runtime "$ns" held-runtime
TJ_RUNTIME=TrainingRuntime/held-runtime trainjob_yaml held-user false 1 "$unschedulable" | k create -f - >/dev/null
TJ_RUNTIME=ClusterTrainingRuntime/$crt trainjob_yaml cluster-user false 1 "$unschedulable" | k create -f - >/dev/null

# check_held LABEL KIND NAME NS TRAINJOB
check_held() {
	local label=$1 kind=$2 rt=$3 rns=$4 tj=$5 n
	n="gate on: a $label in use gets the resource-in-use finalizer $tag"
	if ! wait_slowly 30 has_fin "$kind" "$rt" "$rns"; then
		fail "$n" "finalizers after 30 s: $(kubectl ${rns:+-n "$rns"} get "$kind" "$rt" -o jsonpath='{.metadata.finalizers}')"
		ctrl_log_tail gated 10
		return
	fi
	pass "$n"
	n="gate on: deleting a $label in use is held until its TrainJob is deleted $tag"
	kubectl ${rns:+-n "$rns"} delete "$kind" "$rt" --wait=false >/dev/null
	sleep 5
	local ts
	ts=$(kubectl ${rns:+-n "$rns"} get "$kind" "$rt" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)
	if [ -z "$ts" ]; then
		fail "$n" "5 s after the delete: $(kubectl ${rns:+-n "$rns"} get "$kind" "$rt" 2>&1 | tail -n 1)"
		ctrl_log_tail gated 40
		return
	fi
	k delete trainjob "$tj" --wait=false >/dev/null
	rt_gone() { ! kubectl ${rns:+-n "$rns"} get "$kind" "$rt" >/dev/null 2>&1; }
	if wait_slowly 30 rt_gone; then
		pass "$n"
	else
		fail "$n" "still there 30 s after the TrainJob's deletion, finalizers $(kubectl ${rns:+-n "$rns"} get "$kind" "$rt" -o jsonpath='{.metadata.finalizers}')"
		ctrl_log_tail gated 10
	fi
}
check_held TrainingRuntime trainingruntime held-runtime "$ns" held-user
check_held ClusterTrainingRuntime clustertrainingruntime "$crt" "" cluster-user

if ctrl_alive gated; then
	pass "controller still running after the extras checks $tag"
else
	fail "controller still running after the extras checks $tag" "it exited"
	ctrl_log_tail gated
fi
