#!/usr/bin/env bash
# Full mode: a TrainJob's life through the controller, the JobSet controller, the Job controller,
# the scheduler and kwok. Each check pins what upstream v2.3.0 does (pkg/controller/
# trainjob_controller.go, pkg/runtime/framework/plugins/jobset/jobset.go) and runs against
# KFT_CONTROLLER (ours or upstream; see controller.sh):
#   complete   the JobSet completes; the TrainJob's Complete condition is the JobSet's Completed
#              condition, reason and message included (jobset.go Status), and jobsStatus is the
#              JobSet's replicatedJobsStatus (it counts Jobs: one succeeded Job of two pods)
#   failed     a pod kwok fails fails the Job and the JobSet; the TrainJob's Failed condition
#              carries the JobSet's reason and message
#   suspend    created suspended: JobSet spec.suspend true and Suspended=True reason Suspended
#              ("TrainJob is suspended"); resumed: JobSet spec.suspend false and Suspended=False
#              reason Resumed ("TrainJob is resumed"); suspended again: spec.suspend true again
#   deadline   activeDeadlineSeconds passes with its pod unschedulable: Failed, reason
#              DeadlineExceeded, "TrainJob exceeded its active deadline", and the JobSet deleted
#   gc         deleting a TrainJob lets kube-controller-manager's garbage collector delete its
#              JobSet, Secret and ConfigMaps (owner references with the TrainJob's uid)
#   runtime    upstream v2.3.0 removed the runtime finalizers (commit a1ed1cb8 "Remove Runtime
#              Finalizers", #3716): every TrainJob keeps a snapshot of its runtime in a ConfigMap
#              instead. A runtime in use is deleted at once; a leftover
#              trainer.kubeflow.org/resource-in-use finalizer is removed by the controller; and
#              the TrainJob is still reconciled from its snapshot afterwards (suspending it still
#              suspends its JobSet).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller lifecycle $tag" "$reason"
	exit 0
fi
ns=$(new_namespace lifecycle) || {
	fail "controller lifecycle $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes && quick_runtime "$ns" torch-quick || {
	fail "controller lifecycle $tag" "cannot install the runtimes"
	exit 0
}
ctrl_start main || {
	fail "controller lifecycle $tag" "the controller did not start"
	exit 0
}
export TJ_RUNTIME=TrainingRuntime/torch-quick
k() { kubectl -n "$ns" "$@"; }
cond() { # cond TRAINJOB TYPE FIELD
	k get trainjob "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null
}
jscond() { # jscond JOBSET TYPE FIELD
	k get jobset "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null
}
js_suspend() { k get jobset "$1" -o jsonpath='{.spec.suspend}' 2>/dev/null; }
is_suspend() { [ "$(js_suspend "$1")" = "$2" ]; }
gone() { ! k get "$1" "$2" >/dev/null 2>&1; }
diag() {
	k get trainjob "$1" -o yaml 2>&1 | sed -n '/^status:/,$p' | sed 's/^/    /' >&2
	trainjob_events "$ns" "$1" | sed 's/^/    event: /' >&2
	diagnose "$ns"
	ctrl_log_tail main 15
}

# All TrainJobs first, so that they progress together.
trainjob_yaml ok false 2 | k create -f - >/dev/null &&
	trainjob_yaml doomed false 1 "{metadata: {labels: {kwok.kftrainer.test/outcome: fail}}}" | k create -f - >/dev/null &&
	trainjob_yaml pausable true 1 | k create -f - >/dev/null &&
	trainjob_yaml late false 1 "{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}" |
	sed 's/^spec:$/spec:\n  activeDeadlineSeconds: 8/' | k create -f - >/dev/null || {
	fail "controller lifecycle $tag" "TrainJobs rejected"
	exit 0
}

# --- complete ---
name="TrainJob Complete mirrors the JobSet's Completed condition $tag"
if wait_trainjob_condition 120 "$ns/ok" Complete; then
	tj="$(cond ok Complete reason)|$(cond ok Complete message)"
	js="$(jscond ok Completed reason)|$(jscond ok Completed message)"
	succ=$(k get trainjob ok -o jsonpath='{.status.jobsStatus[?(@.name=="node")].succeeded}')
	if [ "$tj" = "$js" ] && [ "$succ" = 1 ] && [ -z "$(cond ok Failed status)" ]; then
		pass "$name (${tj%%|*}: ${tj#*|})"
	else
		fail "$name" "TrainJob '$tj' vs JobSet '$js', jobsStatus node succeeded '$succ', Failed '$(cond ok Failed status)'"
	fi
else
	fail "$name" "not Complete within 120 s"
	diag ok
fi

# --- failed ---
name="TrainJob Failed carries the JobSet's failure reason $tag"
if wait_trainjob_condition 120 "$ns/doomed" Failed; then
	tj="$(cond doomed Failed reason)|$(cond doomed Failed message)"
	js="$(jscond doomed Failed reason)|$(jscond doomed Failed message)"
	if [ "$tj" = "$js" ] && [ -n "${tj%%|*}" ] && [ -z "$(cond doomed Complete status)" ]; then
		pass "$name (${tj%%|*}: ${tj#*|})"
	else
		fail "$name" "TrainJob '$tj' vs JobSet '$js'"
	fi
else
	fail "$name" "not Failed within 120 s"
	diag doomed
fi

# --- suspend / resume ---
name="suspended TrainJob: JobSet suspended, Suspended=True reason Suspended $tag"
if wait_slowly 60 is_suspend pausable true && wait_trainjob_condition 30 "$ns/pausable" Suspended True; then
	got="$(cond pausable Suspended reason)|$(cond pausable Suspended message)"
	if [ "$got" = "Suspended|TrainJob is suspended" ]; then pass "$name"; else fail "$name" "condition '$got'"; fi
else
	fail "$name" "JobSet spec.suspend '$(js_suspend pausable)', Suspended '$(cond pausable Suspended status)'"
	diag pausable
fi
name="resumed TrainJob: JobSet resumed, Suspended=False reason Resumed $tag"
k patch trainjob pausable --type merge -p '{"spec":{"suspend":false}}' >/dev/null
if wait_slowly 60 is_suspend pausable false && wait_trainjob_condition 30 "$ns/pausable" Suspended False; then
	got="$(cond pausable Suspended reason)|$(cond pausable Suspended message)"
	if [ "$got" = "Resumed|TrainJob is resumed" ]; then pass "$name"; else fail "$name" "condition '$got'"; fi
else
	fail "$name" "JobSet spec.suspend '$(js_suspend pausable)', Suspended '$(cond pausable Suspended status)'"
	diag pausable
fi
name="suspended again: JobSet suspended again $tag"
k patch trainjob pausable --type merge -p '{"spec":{"suspend":true}}' >/dev/null
if wait_slowly 60 is_suspend pausable true && wait_trainjob_condition 30 "$ns/pausable" Suspended True; then
	pass "$name"
else
	fail "$name" "JobSet spec.suspend '$(js_suspend pausable)', Suspended '$(cond pausable Suspended status)'"
	diag pausable
fi

# --- deadline ---
name="activeDeadlineSeconds: Failed DeadlineExceeded and the JobSet deleted $tag"
if wait_trainjob_condition 90 "$ns/late" Failed; then
	got="$(cond late Failed reason)|$(cond late Failed message)"
	if [ "$got" = "DeadlineExceeded|TrainJob exceeded its active deadline" ] && wait_slowly 30 gone jobset late; then
		pass "$name"
	else
		fail "$name" "condition '$got', JobSet $(gone jobset late && echo deleted || echo 'still there')"
	fi
else
	fail "$name" "not Failed within 90 s"
	diag late
fi

# --- garbage collection ---
name="deleting a TrainJob garbage-collects its children $tag"
TJ_RUNTIME=ClusterTrainingRuntime/deepspeed-distributed trainjob_yaml gc true 2 | k create -f - >/dev/null
children() { k get jobsets,secrets,configmaps -o name 2>/dev/null | grep -E '/gc(-|$)' || true; }
has_all() { [ "$(children | grep -c .)" -ge 4 ]; } # JobSet, SSH Secret, hostfile, snapshot
if ! wait_slowly 60 has_all; then
	fail "$name" "the children were not made" "$(children)"
else
	before=$(children | tr '\n' ' ')
	k delete trainjob gc --wait=false >/dev/null
	none() { [ -z "$(children)" ]; }
	if wait_slowly 60 none; then
		pass "$name ($before)"
	else
		fail "$name" "left after 60 s: $(children | tr '\n' ' ')"
	fi
fi

# --- runtime deletion (no finalizer in v2.3.0) ---
quick_runtime "$ns" doomed-runtime
TJ_RUNTIME=TrainingRuntime/doomed-runtime trainjob_yaml user false 1 "{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}" |
	k create -f - >/dev/null
name="a leftover resource-in-use finalizer is removed from a runtime $tag"
if wait_slowly 60 k get jobset user; then
	k patch trainingruntime doomed-runtime --type merge \
		-p '{"metadata":{"finalizers":["trainer.kubeflow.org/resource-in-use"]}}' >/dev/null
	nofin() { [ -z "$(k get trainingruntime doomed-runtime -o jsonpath='{.metadata.finalizers}')" ]; }
	if wait_slowly 30 nofin; then pass "$name"; else fail "$name" "still there after 30 s"; fi
	name="deleting a runtime in use is not held (upstream v2.3.0 keeps a snapshot) $tag"
	k delete trainingruntime doomed-runtime --wait=false >/dev/null
	if wait_slowly 30 gone trainingruntime doomed-runtime; then
		pass "$name"
	else
		fail "$name" "still there after 30 s, finalizers $(k get trainingruntime doomed-runtime -o jsonpath='{.metadata.finalizers}')"
	fi
	name="a TrainJob whose runtime is gone is still reconciled from its snapshot $tag"
	k patch trainjob user --type merge -p '{"spec":{"suspend":true}}' >/dev/null
	if wait_slowly 60 is_suspend user true; then
		pass "$name"
	else
		fail "$name" "JobSet spec.suspend stayed '$(js_suspend user)'"
		diag user
	fi
else
	fail "$name" "no JobSet for the TrainJob within 60 s"
	diag user
fi

if ctrl_alive main; then
	pass "controller still running after the lifecycle checks $tag"
else
	fail "controller still running after the lifecycle checks $tag" "it exited"
	ctrl_log_tail main
fi
