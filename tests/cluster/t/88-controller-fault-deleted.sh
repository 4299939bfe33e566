#!/usr/bin/env bash
# Full mode, fault: children deleted behind the controller's back are made again, once. The
# controller watches the JobSets, Secrets and ConfigMaps its TrainJobs own (upstream v2.3.0:
# the plugins' WatchExtension, handler.EnqueueRequestForOwner with OnlyControllerOwner), so a
# deletion requeues the TrainJob and the next reconcile builds the child anew:
#   - a suspended TrainJob's JobSet comes back (a new uid), exactly one;
#   - an MPI TrainJob's hostfile ConfigMap and SSH Secret come back, one of each;
#   - the runtime snapshot ConfigMap comes back, one.
# Each is deleted twice in a row to show that the re-creation settles at one object.
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "children deleted behind the controller's back $tag" "$reason"
	exit 0
fi
ns=$(new_namespace deleted) || {
	fail "children deleted behind the controller's back $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || exit 0
ctrl_start main || {
	fail "children deleted behind the controller's back $tag" "the controller did not start"
	exit 0
}
k() { kubectl -n "$ns" "$@"; }
trainjob_yaml plain true | k create -f - >/dev/null
TJ_RUNTIME=ClusterTrainingRuntime/deepspeed-distributed trainjob_yaml mpi true 2 | k create -f - >/dev/null
made() { [ -z "$(children_mismatch "$ns" "1 1 0 0" | grep -v ' mpi:')" ] && children_counts "$ns" | grep -qx 'mpi 1 2 1 0'; }
if ! wait_slowly 60 made; then
	fail "children deleted behind the controller's back $tag" "the children were not made" "$(children_counts "$ns")"
	ctrl_log_tail main
	exit 0
fi

# recreated KIND NAME TRAINJOB WANT: delete it twice, then it must exist once more with a new uid
# and the TrainJob's children must be WANT ("jobsets configmaps secrets podgroups").
recreated() {
	local kind=$1 obj=$2 tj=$3 want=$4 uid0 uid name
	name="deleted $kind $obj is made again, once $tag"
	uid0=$(k get "$kind" "$obj" -o jsonpath='{.metadata.uid}')
	for _ in 1 2; do
		k delete "$kind" "$obj" --wait=true --timeout 30s >/dev/null 2>&1
		sleep 0.5
	done
	again() { uid=$(k get "$kind" "$obj" -o jsonpath='{.metadata.uid}' 2>/dev/null) && [ -n "$uid" ] && [ "$uid" != "$uid0" ]; }
	if ! wait_slowly 60 again; then
		fail "$name" "not there again after 60 s"
		ctrl_log_tail main 10
		return
	fi
	sleep 2
	local got
	got=$(children_counts "$ns" | awk -v t="$tj" '$1 == t { $1 = ""; sub(/^ /, ""); print }')
	if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "$tj's children now '$got', want '$want'"; fi
}
recreated jobset plain plain "1 1 0 0"
recreated configmap mpi-mpi-hostfile mpi "1 2 1 0"
recreated secret mpi-mpi-ssh-auth mpi "1 2 1 0"
recreated configmap plain-runtime-snapshot plain "1 1 0 0"
if ctrl_alive main; then
	pass "controller still running after the deletions $tag"
else
	fail "controller still running after the deletions $tag" "it exited"
	ctrl_log_tail main
fi
