#!/usr/bin/env bash
# The README's out-of-cluster controller command on a cluster where the controller was never
# installed (CRDs only, as t/10 leaves it): certificate management keeps its Secret in the
# controller's namespace, kubeflow-system out of a cluster, as upstream's cert rotator does, so
# without that namespace the controller stops; it must say what to do (upstream says only
# `namespaces "kubeflow-system" not found`). Then the README's own preparation (the line it
# gives, read from README.md) makes the same command serve /readyz.
# Runs before anything else creates kubeflow-system (t/20 does); skipped when it exists.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

name="README's out-of-cluster controller on a bare cluster"
if [ "$KFT_CONTROLLER" != ours ]; then
	skip "$name" "checks our controller's advice"
	exit 0
fi
bin=$(ctrl_binary 2>/dev/null) || {
	skip "$name" "no controller binary"
	exit 0
}
if kubectl get namespace kubeflow-system >/dev/null 2>&1; then
	skip "$name" "kubeflow-system exists already (this test runs on a cluster without it)"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"; for lns in kubeflow-system default; do kubectl -n $lns delete lease trainer.kubeflow.org --ignore-not-found >/dev/null 2>&1; done' EXIT
hp=$(free_port) && mp=$(free_port) || exit 0
# The README's command, with loopback ports of this run (the README's are :8080 and :8081).
run() {
	env TMPDIR="$work" timeout "$1" "$bin" --kubeconfig "$KUBECONFIG" --leader-elect \
		--metrics-bind-address "127.0.0.1:$mp" --health-probe-bind-address "127.0.0.1:$hp"
}
grep -q 'kftrainer-controller-manager --kubeconfig ~/.kube/config --leader-elect' \
	"$KFT_REPO_ROOT/README.md" || fail "$name: the README still gives the command" "not found"

run 60 >"$work/out" 2>&1
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
	grep -q 'namespace kubeflow-system does not exist. Create it (kubectl create namespace kubeflow-system' "$work/out"; then
	pass "$name: without kubeflow-system it stops and says what to do"
else
	fail "$name: without kubeflow-system it stops and says what to do" "exit $rc" "$(tail -c 800 "$work/out")"
fi

prep=$(grep -o '^kubectl create namespace kubeflow-system[^#]*' "$KFT_REPO_ROOT/README.md" | head -n1)
if [ -z "$prep" ]; then
	fail "$name: the README gives the preparation" "no 'kubectl create namespace kubeflow-system' line"
	exit 0
fi
eval "$prep" >/dev/null || fail "$name: the README's preparation runs" "$prep"
env TMPDIR="$work" timeout 120 "$bin" --kubeconfig "$KUBECONFIG" --leader-elect \
	--metrics-bind-address "127.0.0.1:$mp" --health-probe-bind-address "127.0.0.1:$hp" \
	>"$work/out2" 2>&1 &
pid=$! # timeout's: it passes a SIGTERM on to the controller and waits for it
if wait_for 60 curl -fsS "http://127.0.0.1:$hp/readyz"; then
	pass "$name: after the README's preparation it serves /readyz"
else
	fail "$name: after the README's preparation it serves /readyz" "$(tail -c 800 "$work/out2")"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null || true
exit 0
