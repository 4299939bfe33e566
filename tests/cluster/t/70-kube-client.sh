#!/usr/bin/env bash
# The C kube client (src/kube/kube.h) against the real API server: create, get, paged
# list, update with a stale resourceVersion (409), AlreadyExists, merge and JSON patches,
# server-side apply with two field managers (conflict, then force), the TrainJob status
# subresource (PUT and apply), a watch from a list's resourceVersion (ADDED, MODIFIED, DELETED
# and a BOOKMARK), an event and its repeat count, delete with uid preconditions, and a
# cluster-scoped get. tests/cluster/progs/kube_check.c makes the calls and prints one PASS/FAIL
# line per check; it reads the cluster's kubeconfig from KUBECONFIG, as `up` exports it.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

prog=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/tests/cluster/kube_check
if [ ! -x "$prog" ]; then
	skip "kube client against the API server" "no kube_check at $prog (build the tree first)"
	exit 0
fi
ns=$(new_namespace kube) || {
	fail "kube client against the API server" "cannot create a namespace"
	exit 0
}
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
"$prog" "$ns"
rc=$?
# kube_check prints its own PASS/FAIL lines; a crash leaves fewer lines, so say so.
if [ "$rc" -gt 1 ]; then
	fail "kube_check ran to the end" "exit status $rc"
fi
