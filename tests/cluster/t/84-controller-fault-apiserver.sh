#!/usr/bin/env bash
# Full mode, fault: the API server is restarted while the controller is in the middle of
# reconciling a burst of TrainJobs. The server goes away for 3 s (every connection of the
# controller breaks: requests in flight fail, watches end) and comes back on the same port. The
# controller must keep running, reconnect its watches, and converge: every TrainJob of the burst
# and every TrainJob created after the restart gets exactly one JobSet and one runtime snapshot,
# and a change made after the restart (suspension) reaches the JobSet. Upstream v2.3.0 gets this
# from client-go's reflectors (relist and rewatch with back-off) and controller-runtime's
# requeue with back-off on errors. Runs against KFT_CONTROLLER (ours or upstream).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "API server restart mid-reconcile $tag" "$reason"
	exit 0
fi
ns=$(new_namespace apirestart) || {
	fail "API server restart mid-reconcile $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || exit 0
ctrl_start main || {
	fail "API server restart mid-reconcile $tag" "the controller did not start"
	exit 0
}
N=30
for i in $(seq 1 $N); do
	trainjob_yaml "burst-$i" true
	echo "---"
done >"$STATE/controllers/main/burst.yaml"

name="API server restarted mid-reconcile: every TrainJob converges, no duplicates $tag"
kubectl -n "$ns" create -f "$STATE/controllers/main/burst.yaml" >/dev/null
made_before=$(kubectl -n "$ns" get jobsets -o name 2>/dev/null | grep -c .)
if ! restart_apiserver 3; then
	fail "$name" "the API server did not come back"
	exit 0
fi
# Created once the server is back: reaches the controller only through a new watch.
trainjob_yaml after-1 true | kubectl -n "$ns" create -f - >/dev/null
trainjob_yaml after-2 false 1 "{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}" |
	kubectl -n "$ns" create -f - >/dev/null
all_made() { [ "$(kubectl -n "$ns" get jobsets -o name 2>/dev/null | grep -c .)" -ge $((N + 2)) ]; }
if ! wait_slowly 120 all_made; then
	fail "$name" "$(kubectl -n "$ns" get jobsets -o name | grep -c .) of $((N + 2)) JobSets after 120 s"
	ctrl_log_tail main
else
	kubectl -n "$ns" patch trainjob after-2 --type merge -p '{"spec":{"suspend":true}}' >/dev/null
	suspended() { [ "$(kubectl -n "$ns" get jobset after-2 -o jsonpath='{.spec.suspend}')" = true ]; }
	sleep 2
	dups=$(children_mismatch "$ns")
	if [ -n "$dups" ]; then
		fail "$name" "TrainJobs without exactly one JobSet and snapshot (name:jobsets,configmaps,secrets,podgroups):$dups"
	elif ! wait_slowly 60 suspended; then
		fail "$name" "a suspension after the restart did not reach the JobSet"
		ctrl_log_tail main
	elif ! ctrl_alive main; then
		fail "$name" "the controller exited"
		ctrl_log_tail main
	else
		pass "$name ($made_before of $N JobSets made before the restart)"
	fi
fi
