#!/usr/bin/env bash
# Full mode: two replicas with leader election fail over when the leader is killed. Upstream
# v2.3.0 elects through the Lease named by leaderElection.resourceName, trainer.kubeflow.org
# (manifests/base/manager/controller_manager_config.yaml), with controller-runtime's 15 s lease,
# 10 s renew deadline and 2 s retry period; only the holder reconciles.
#
# Replica A starts alone and takes the Lease; B starts second and must wait. A reconciles a
# TrainJob; then A is killed with SIGKILL (no release: B must wait for the lease to expire), B
# takes the Lease over and reconciles a TrainJob created after the kill. Runs against
# KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "leader election fail-over $tag" "$reason"
	exit 0
fi
ns=$(new_namespace leader) || {
	fail "leader election fail-over $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || {
	fail "leader election fail-over $tag" "cannot install manifests/runtimes"
	exit 0
}
lease() { kubectl -n kubeflow-system get lease trainer.kubeflow.org -o jsonpath="{.spec.$1}" 2>/dev/null; }
held() { [ -n "$(lease holderIdentity)" ]; }
held_by_other() { [ -n "$(lease holderIdentity)" ] && [ "$(lease holderIdentity)" != "$1" ]; }
# No replica of an earlier run may still be named as holder.
kubectl -n kubeflow-system delete lease trainer.kubeflow.org >/dev/null 2>&1

name="the first replica takes the Lease kubeflow-system/trainer.kubeflow.org $tag"
if ! ctrl_start a --leader-elect || ! wait_for 60 held; then
	fail "$name" "no holder within 60 s"
	ctrl_log_tail a
	exit 0
fi
holder_a=$(lease holderIdentity)
pass "$name"
ctrl_start b --leader-elect || {
	fail "leader election fail-over $tag" "the second replica did not start"
	exit 0
}
sleep 5 # several of B's retry periods
name="the second replica waits while the first holds the Lease $tag"
if [ "$(lease holderIdentity)" = "$holder_a" ] && ctrl_alive b; then
	pass "$name"
else
	fail "$name" "holder '$(lease holderIdentity)' (A was '$holder_a'), B $(ctrl_alive b && echo running || echo exited)"
fi

name="the leader reconciles $tag"
trainjob_yaml before true | kubectl -n "$ns" create -f - >/dev/null
if wait_slowly 60 kubectl -n "$ns" get jobset before; then
	pass "$name"
else
	fail "$name" "no JobSet within 60 s"
	ctrl_log_tail a
fi

name="after SIGKILL of the leader, the other replica takes the Lease $tag"
t0=$SECONDS
ctrl_kill9 a
if wait_for 90 held_by_other "$holder_a"; then
	pass "$name ($((SECONDS - t0)) s)"
else
	fail "$name" "holder still '$(lease holderIdentity)' after 90 s"
	ctrl_log_tail b
fi
name="the new leader reconciles a TrainJob created after the fail-over $tag"
trainjob_yaml after true | kubectl -n "$ns" create -f - >/dev/null
if wait_slowly 60 kubectl -n "$ns" get jobset after; then
	pass "$name"
else
	fail "$name" "no JobSet within 60 s"
	ctrl_log_tail b
fi
name="one JobSet per TrainJob after the fail-over $tag"
got="$(owned_count "$ns" jobsets before) $(owned_count "$ns" jobsets after)"
if [ "$got" = "1 1" ]; then pass "$name"; else fail "$name" "JobSets owned by before/after: $got"; fi
