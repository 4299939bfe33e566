#!/usr/bin/env bash
# Full mode, fault: others write the TrainJob and its JobSet while the controller works on them,
# so every write the controller makes with a resourceVersion it read races someone else's (409
# Conflict) and its cache is always a little stale. For 20 s two writers annotate the TrainJob and
# the JobSet as fast as kubectl goes, while the TrainJob's suspension is flipped six times. Then:
# the JobSet's spec.suspend and the TrainJob's Suspended condition follow the last flip; the
# TrainJob has one JobSet and one snapshot; the other writers' annotations are still on the
# JobSet (upstream v2.3.0 writes with server-side apply, field manager "trainer", which leaves
# other managers' fields alone); the controller still runs. Runs against KFT_CONTROLLER.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
name="concurrent writers (409 conflicts): the controller converges $tag"
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "$name" "$reason"
	exit 0
fi
ns=$(new_namespace conflicts) || {
	fail "$name" "cannot create a namespace"
	exit 0
}
writers=()
cleanup() {
	local p
	for p in "${writers[@]}"; do kill "$p" 2>/dev/null; done
	[ "${#writers[@]}" = 0 ] || wait "${writers[@]}" 2>/dev/null
	ctrl_stop_all
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
}
trap cleanup EXIT
install_builtin_runtimes || exit 0
ctrl_start main || {
	fail "$name" "the controller did not start"
	exit 0
}
# Its pods are never scheduled: a finished TrainJob is left alone, so the JobSet must not finish.
trainjob_yaml busy true 2 "{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}" | kubectl -n "$ns" create -f - >/dev/null
if ! wait_slowly 60 kubectl -n "$ns" get jobset busy; then
	fail "$name" "no JobSet to begin with"
	ctrl_log_tail main
	exit 0
fi
writer() { # writer KIND: annotate it in a loop until killed
	local i=0
	while :; do
		i=$((i + 1))
		kubectl -n "$ns" annotate "$1" busy "kftrainer.test/writer=$i" --overwrite >/dev/null 2>&1
	done
}
writer trainjob &
writers+=($!)
writer jobset &
writers+=($!)
state=true
for _ in 1 2 3 4 5 6; do
	sleep 3
	[ "$state" = true ] && state=false || state=true
	kubectl -n "$ns" patch trainjob busy --type merge -p "{\"spec\":{\"suspend\":$state}}" >/dev/null
done
sleep 2
for p in "${writers[@]}"; do kill "$p" 2>/dev/null; done
wait "${writers[@]}" 2>/dev/null
writers=()

want_cond=True
[ "$state" = false ] && want_cond=False
settled() {
	[ "$(kubectl -n "$ns" get jobset busy -o jsonpath='{.spec.suspend}')" = "$state" ] &&
		test_condition "$ns" busy Suspended "$want_cond"
}
if ! wait_slowly 60 settled; then
	fail "$name" "JobSet spec.suspend '$(kubectl -n "$ns" get jobset busy -o jsonpath='{.spec.suspend}')', Suspended '$(kubectl -n "$ns" get trainjob busy -o jsonpath='{.status.conditions[?(@.type=="Suspended")].status}')'; want $state/$want_cond"
	ctrl_log_tail main
elif [ -n "$(children_mismatch "$ns")" ]; then
	fail "$name" "children (name:jobsets,configmaps,secrets,podgroups):$(children_mismatch "$ns")"
elif [ -z "$(kubectl -n "$ns" get jobset busy -o jsonpath='{.metadata.annotations.kftrainer\.test/writer}')" ]; then
	fail "$name" "the other writer's annotation was removed from the JobSet"
elif ! ctrl_alive main; then
	fail "$name" "the controller exited"
	ctrl_log_tail main
else
	pass "$name (JobSet written $(kubectl -n "$ns" get jobset busy -o jsonpath='{.metadata.annotations.kftrainer\.test/writer}') times by another writer)"
fi
