#!/usr/bin/env bash
# Full mode, fault: the controller's connections are cut under it. The controller talks to the
# API server through tcpproxy.py, which resets every open connection on demand (requests in
# flight fail, watches end with a broken stream, not a clean close). After each of three cuts a
# TrainJob is created; it can only reach the controller through a watch made anew (or a relist).
# Then every TrainJob must have exactly one JobSet and one runtime snapshot, a resumption made
# after the cuts must reach its JobSet, and the controller must still run. Upstream v2.3.0 gets
# this from client-go's reflectors (rewatch from the last resourceVersion, relist on 410).
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
name="watch connections cut: the controller reconnects and converges $tag"
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "$name" "$reason"
	exit 0
fi
ns=$(new_namespace watchcut) || {
	fail "$name" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; [ -f "$STATE/pids/proxy.pid" ] && stop_proc "$STATE/pids/proxy.pid"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || exit 0

if ! start_api_proxy proxy tcpproxy.py 0; then
	fail "$name" "the proxy did not start" "$(cat "$STATE/logs/proxy.log")"
	exit 0
fi
ctrl_start main --kubeconfig "$STATE/controllers/proxy.kubeconfig" || {
	fail "$name" "the controller did not start"
	exit 0
}
trainjob_yaml cut-0 true | kubectl -n "$ns" create -f - >/dev/null
if ! wait_slowly 60 kubectl -n "$ns" get jobset cut-0; then
	fail "$name" "no JobSet before any cut"
	ctrl_log_tail main
	exit 0
fi
for i in 1 2 3; do
	kill -USR1 "$(cat "$STATE/pids/proxy.pid")"
	sleep 1
	trainjob_yaml "cut-$i" true | kubectl -n "$ns" create -f - >/dev/null
	sleep 2
done
kubectl -n "$ns" patch trainjob cut-0 --type merge -p '{"spec":{"suspend":false}}' >/dev/null
all_made() { [ "$(kubectl -n "$ns" get jobsets -o name 2>/dev/null | grep -c .)" -ge 4 ]; }
resumed() { [ "$(kubectl -n "$ns" get jobset cut-0 -o jsonpath='{.spec.suspend}')" = false ]; }
cuts=$(grep -o 'cut [0-9]* connections' "$STATE/logs/proxy.log" | awk '{s += $2} END {print s + 0}')
if ! wait_slowly 90 all_made; then
	fail "$name" "$(kubectl -n "$ns" get jobsets -o name | grep -c .) of 4 JobSets after 90 s ($cuts connections cut)"
	ctrl_log_tail main
elif ! wait_slowly 60 resumed; then
	fail "$name" "the resumption after the cuts did not reach the JobSet"
	ctrl_log_tail main
elif [ "$cuts" -lt 3 ]; then
	fail "$name" "only $cuts connections were cut: the test did not test anything"
elif [ -n "$(children_mismatch "$ns")" ]; then
	fail "$name" "children (name:jobsets,configmaps,secrets,podgroups):$(children_mismatch "$ns")"
elif ! ctrl_alive main; then
	fail "$name" "the controller exited"
	ctrl_log_tail main
else
	pass "$name ($cuts connections cut)"
fi
