#!/usr/bin/env bash
# Full mode, fault: the controller is throttled with 429 Too Many Requests (Retry-After: 1), as
# the API server's priority and fairness answers when a priority level is full. The controller
# talks to the API server through throttleproxy.py; for 15 s, while TrainJobs are created and one
# is resumed, every other request that is not a watch is answered 429 there. The controller must
# not drop the work it was refused: every TrainJob gets exactly one JobSet and one snapshot, the
# resumption reaches its JobSet, and the controller still runs. Upstream v2.3.0: client-go retries
# 429s honouring Retry-After, then controller-runtime requeues with back-off.
#
# (Why not APF itself: a priority level with no seats still dispatches a request when nothing
# else of that level is executing, so a controller making one request at a time is never
# refused; the proxy gives 429s deterministically.)
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
name="throttled with 429s: no TrainJob is dropped $tag"
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "$name" "$reason"
	exit 0
fi
ns=$(new_namespace throttle) || {
	fail "$name" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; [ -f "$STATE/pids/throttleproxy.pid" ] && stop_proc "$STATE/pids/throttleproxy.pid"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || exit 0

if ! start_api_proxy throttleproxy throttleproxy.py "$STATE/certs"; then
	fail "$name" "the proxy did not start" "$(cat "$STATE/logs/throttleproxy.log")"
	exit 0
fi
ctrl_start main --kubeconfig "$STATE/controllers/throttleproxy.kubeconfig" || {
	fail "$name" "the controller did not start"
	exit 0
}
trainjob_yaml before true | kubectl -n "$ns" create -f - >/dev/null
if ! wait_slowly 60 kubectl -n "$ns" get jobset before; then
	fail "$name" "no JobSet before throttling"
	ctrl_log_tail main
	exit 0
fi
proxy=$(cat "$STATE/pids/throttleproxy.pid")
kill -USR2 "$proxy"
for i in 1 2 3 4 5; do
	trainjob_yaml "during-$i" true
	echo ---
done | kubectl -n "$ns" create -f - >/dev/null
sleep 3
kubectl -n "$ns" patch trainjob before --type merge -p '{"spec":{"suspend":false}}' >/dev/null
sleep 12
kill -USR2 "$proxy"
# The proxy reports the count when it turns throttling off; wait for that line.
wait_for 10 grep -q 'throttling off' "$STATE/logs/throttleproxy.log"
rejected=$(grep 'throttling off' "$STATE/logs/throttleproxy.log" | tail -n 1 | sed 's/.*rejected \([0-9]*\).*/\1/')
all_made() { [ "$(kubectl -n "$ns" get jobsets -o name 2>/dev/null | grep -c .)" -ge 6 ]; }
resumed() { [ "$(kubectl -n "$ns" get jobset before -o jsonpath='{.spec.suspend}')" = false ]; }
if [ "${rejected:-0}" = 0 ]; then
	fail "$name" "no request was refused: the test did not test anything"
elif ! wait_slowly 120 all_made; then
	fail "$name" "$(kubectl -n "$ns" get jobsets -o name | grep -c .) of 6 JobSets 120 s after the throttling ended ($rejected requests refused)"
	ctrl_log_tail main
elif ! wait_slowly 60 resumed; then
	fail "$name" "the resumption made while throttled did not reach the JobSet"
	ctrl_log_tail main
elif [ -n "$(children_mismatch "$ns")" ]; then
	fail "$name" "children (name:jobsets,configmaps,secrets,podgroups):$(children_mismatch "$ns")"
elif ! ctrl_alive main; then
	fail "$name" "the controller exited"
	ctrl_log_tail main
else
	pass "$name ($rejected requests refused with 429)"
fi
