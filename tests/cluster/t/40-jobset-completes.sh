#!/usr/bin/env bash
# Full mode: a JobSet of two replicated jobs goes all the way through the real controllers. The
# JobSet controller creates the Jobs, the Job controller their pods, the scheduler places them on
# kwok's nodes, kwok runs them to success, and the JobSet ends Completed.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

name="jobset reaches Completed through kwok"
if [ "$(cluster_mode)" != full ]; then
	skip "$name" "needs tests/cluster/up --full"
	exit 0
fi
ns=$(new_namespace jobset) || {
	fail "$name" "cannot create a namespace"
	exit 0
}
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT

# Two replicated jobs: "leader" (1 Job, 1 pod) and "workers" (2 Jobs of 2 pods each).
if ! out=$(kubectl -n "$ns" create -f - 2>&1 <<'EOF2'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: two-jobs
spec:
  replicatedJobs:
  - name: leader
    replicas: 1
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: example.invalid/trainer:1
              resources:
                limits: {cpu: "1", nvidia.com/gpu: "1"}
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: example.invalid/trainer:1
              resources:
                limits: {cpu: "2", nvidia.com/gpu: "2"}
EOF2
); then
	fail "$name" "JobSet rejected" "$out"
	exit 0
fi

if ! out=$(kubectl -n "$ns" wait --for condition=Completed --timeout 120s jobset/two-jobs 2>&1); then
	fail "$name" "not Completed within 120 s" "$out"
	diagnose "$ns"
	exit 0
fi
pass "$name"

# What the controllers did on the way: 3 Jobs complete, 5 pods succeeded, each on a kwok node.
jobs=$(kubectl -n "$ns" get jobs -o jsonpath='{range .items[*]}{.status.succeeded}{"\n"}{end}')
pods=$(kubectl -n "$ns" get pods -o jsonpath='{range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}')
if [ "$(grep -c . <<<"$jobs")" = 3 ] && [ "$(grep -cE '^Succeeded kwok-node-[0-9]+$' <<<"$pods")" = 5 ]; then
	pass "jobset made 3 Jobs and 5 pods that succeeded on kwok nodes"
else
	fail "jobset made 3 Jobs and 5 pods that succeeded on kwok nodes" "unexpected objects" \
		"jobs (succeeded): $jobs" "pods: $pods"
fi
# JobSet's own webhook ran: the pods carry its labels.
labelled=$(kubectl -n "$ns" get pods -l jobset.sigs.k8s.io/jobset-name=two-jobs -o name 2>&1)
if [ "$(grep -c '^pod/' <<<"$labelled")" = 5 ]; then
	pass "jobset pods carry JobSet's labels"
else
	fail "jobset pods carry JobSet's labels" "expected 5 pods labelled jobset.sigs.k8s.io/jobset-name=two-jobs" "$labelled"
fi
