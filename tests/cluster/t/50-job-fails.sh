#!/usr/bin/env bash
# Full mode: a Job whose pod kwok makes fail (label kwok.kftrainer.test/outcome=fail, see
# kwok/stages.yaml) is marked Failed by the real Job controller.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

name="job with a failing pod reaches Failed"
if [ "$(cluster_mode)" != full ]; then
	skip "$name" "needs tests/cluster/up --full"
	exit 0
fi
ns=$(new_namespace jobfail) || {
	fail "$name" "cannot create a namespace"
	exit 0
}
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT

if ! out=$(kubectl -n "$ns" create -f - 2>&1 <<'EOF2'
apiVersion: batch/v1
kind: Job
metadata:
  name: doomed
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        kwok.kftrainer.test/outcome: fail
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: example.invalid/trainer:1
EOF2
); then
	fail "$name" "Job rejected" "$out"
	exit 0
fi
if ! out=$(kubectl -n "$ns" wait --for condition=Failed --timeout 120s job/doomed 2>&1); then
	fail "$name" "not Failed within 120 s" "$out"
	diagnose "$ns"
	exit 0
fi
pass "$name"

reason=$(kubectl -n "$ns" get job doomed -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
phase=$(kubectl -n "$ns" get pods -l job-name=doomed -o jsonpath='{.items[0].status.phase} {.items[0].status.containerStatuses[0].state.terminated.exitCode}')
if [ "$reason" = BackoffLimitExceeded ] && [ "$phase" = "Failed 1" ]; then
	pass "failed job: reason BackoffLimitExceeded, pod Failed with exit code 1"
else
	fail "failed job: reason BackoffLimitExceeded, pod Failed with exit code 1" "got reason '$reason', pod '$phase'"
fi
