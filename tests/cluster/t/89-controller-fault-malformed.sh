#!/usr/bin/env bash
# Full mode, fault: a malformed runtime, and a runtime that does not exist, do not stop the
# controller from working for everyone else. The malformed runtime passes the TrainingRuntime
# schema but names a replicated job "Bad_Job", which JobSet's validating webhook refuses (not a
# DNS-1035 label). What upstream v2.3.0 does (pkg/controller/trainjob_controller.go Reconcile):
# no JobSet, no Failed condition, and a Warning event with reason
# TrainJobResourcesCreationFailed and the message "TrainJob resources reconciliation failed: "
# followed by the API server's refusal (cut at 950 characters); for the missing runtime the same
# event with "TrainingRuntime specified in TrainJob is not found: ..."; the reconcile is retried
# with back-off. TrainJobs created before and after them on good runtimes get their JobSets.
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "malformed runtime $tag" "$reason"
	exit 0
fi
ns=$(new_namespace malformed) || {
	fail "malformed runtime $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || exit 0
k() { kubectl -n "$ns" "$@"; }
if ! out=$(k apply -f - 2>&1 <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: broken
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: Bad_Job
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: example.invalid/torch:1
EOF
); then
	fail "malformed runtime $tag" "the API server refused the runtime itself" "$out"
	exit 0
fi
ctrl_start main || {
	fail "malformed runtime $tag" "the controller did not start"
	exit 0
}
trainjob_yaml good-0 true | k create -f - >/dev/null
TJ_RUNTIME=TrainingRuntime/broken trainjob_yaml bad true | k create -f - >/dev/null
TJ_RUNTIME=TrainingRuntime/not-there trainjob_yaml lost true | k create -f - >/dev/null
for i in 1 2 3; do trainjob_yaml "good-$i" true | k create -f - >/dev/null; done

name="TrainJobs on good runtimes are reconciled beside a malformed one $tag"
goods() { [ "$(k get jobsets -o name 2>/dev/null | grep -c '/good-')" = 4 ]; }
if wait_slowly 60 goods; then pass "$name"; else
	fail "$name" "$(k get jobsets -o name | grep -c '/good-') of 4 JobSets"
	ctrl_log_tail main
fi

# event_like TRAINJOB PREFIX: a Warning event TrainJobResourcesCreationFailed whose message
# starts with PREFIX.
event_like() {
	trainjob_events "$ns" "$1" | grep -qF "Warning TrainJobResourcesCreationFailed: $2"
}
check_bad() { # check_bad TRAINJOB PREFIX WHAT
	local name="$3: Warning event, no JobSet, no Failed condition $tag"
	if ! wait_slowly 60 event_like "$1" "$2"; then
		fail "$name" "no Warning TrainJobResourcesCreationFailed event starting '$2'" \
			"events: $(trainjob_events "$ns" "$1")"
	elif k get jobset "$1" >/dev/null 2>&1; then
		fail "$name" "a JobSet exists"
	elif [ -n "$(k get trainjob "$1" -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}')" ]; then
		fail "$name" "a Failed condition was set: $(k get trainjob "$1" -o jsonpath='{.status.conditions}')"
	else
		pass "$name"
	fi
}
check_bad bad "TrainJob resources reconciliation failed: admission webhook \"vjobset.kb.io\" denied the request" \
	"malformed runtime (JobSet refused)"
check_bad lost "TrainJob resources reconciliation failed: TrainingRuntime specified in TrainJob is not found" \
	"missing runtime"

name="a TrainJob created after the failures is reconciled $tag"
trainjob_yaml good-4 true | k create -f - >/dev/null
if wait_slowly 60 k get jobset good-4; then pass "$name"; else fail "$name" "no JobSet within 60 s"; fi
name="no duplicate children after the failures $tag"
bad=$(children_mismatch "$ns" | tr ' ' '\n' | grep -vE '^(bad|lost):' | tr '\n' ' ')
if [ -z "${bad// /}" ] && ctrl_alive main; then pass "$name"; else
	fail "$name" "children (name:jobsets,configmaps,secrets,podgroups): $bad; controller $(ctrl_alive main && echo running || echo exited)"
fi
