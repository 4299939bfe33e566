#!/usr/bin/env bash
# Full mode, ours only: the OptimizationJob controller (upstream master defines the kind,
# kubeflow/trainer#3552, and has no controller for it yet). A grid search of 5 trials, 2 at a
# time, whose trials report their loss through the TrainJob status server as a trainer pod would
# (a projected token for the trial's status path) while kwok holds their pods running:
#   trials     TrainJobs owned by the OptimizationJob (controller, blockOwnerDeletion), the
#              value substituted for ${trialParameters.lr} and in KUBEFLOW_TRAINER_OPT_LR (the
#              KEP's env var), never more than parallelTrials at once
#   metrics    each trial's status.trainerStatus.metrics folded into status.trials (min, max,
#              latest), and the trial Succeeded once its TrainJob is Complete
#   restart    the controller stopped while two trials run (4 of 5 created) and restarted: nothing
#              recorded is lost, no trial is created twice and no third runs at once (no tune-5
#              until a slot frees)
#   result     Complete with reason MaxTrialsReached, status.result the trial with the smallest
#              loss and its parameters; Events on the OptimizationJob
#   webhook    kftrainer's OptimizationJob webhook refuses an unknown algorithm annotation
#   gc         deleting the OptimizationJob deletes its trials (owner references)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "optimization $tag" "$reason"
	exit 0
fi
if [ "$(ctrl_flavour)" = upstream ]; then
	skip "optimization $tag" "upstream has no OptimizationJob controller"
	exit 0
fi
ns=$(new_namespace opt) || {
	fail "optimization $tag" "cannot create a namespace"
	exit 0
}
work=$(mktemp -d)
secret_made=
cleanup() {
	ctrl_webhooks_unregister
	ctrl_stop_all
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	[ -n "$secret_made" ] && kubectl -n kubeflow-system delete secret kubeflow-trainer-webhook-cert >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }

status_server_certs "$work" && secret_made=$STATUS_SECRET_MADE
sp=$(free_port)
KFT_CTRL_EXTRA_CONFIG=$(status_server_config "$sp")
export KFT_CTRL_EXTRA_CONFIG
base="https://127.0.0.1:$sp"
if ! ctrl_start opt || ! status_server_serve opt "$work" "$base"; then
	fail "optimization $tag: start" "the controller or its status server did not come up" "$(ctrl_log_tail opt)"
	exit 0
fi
install_builtin_runtimes
# A torch runtime whose pods kwok keeps running (label outcome=hold) until a test releases them.
quick_runtime "$ns" torch-held hold
k apply -f - >/dev/null <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: tune
spec:
  objectives: [{metric: loss}]
  numTrials: 5
  parallelTrials: 2
  searchAlgorithm: {grid: {}}
  parameters:
  - name: lr
    searchSpace: {categorical: {choices: ["0.4", "0.1", "0.3", "0.2", "0.5"]}}
  trainJobTemplate:
    spec:
      runtimeRef: {kind: TrainingRuntime, name: torch-held}
      trainer:
        image: example.invalid/train:1
        command: [torchrun, train.py, "--lr=${trialParameters.lr}"]
        resourcesPerNode:
          requests: {cpu: "1", memory: 1Gi}
EOF

trials() { k get trainjobs -l optimizer.kftrainer.dev/optimization-job=tune -o name 2>/dev/null | sort; }
count_trials() { trials | grep -c .; }
trial_running() { [ "$(k get pods -l "jobset.sigs.k8s.io/jobset-name=$1" -o jsonpath='{.items[*].status.phase}' 2>/dev/null)" = Running ]; }
# report TRIAL LOSS: the trial's trainer sends its loss to the status server.
report() {
	local tok body got
	tok=$(k create token default --audience "$(status_audience "$ns" "$1")")
	body=$(printf '{"trainerStatus":{"metrics":[{"name":"loss","value":"%s"}],"lastUpdatedTime":"%s"}}' "$2" "$(date -u +%Y-%m-%dT%H:%M:%SZ)")
	got=$(status_post "$work" "$base" "$(status_path "$ns" "$1")" "$tok" "$body")
	[ "${got%% *}" = 200 ] || echo "report $1: $got" >&2
}
release() { k label pods -l "jobset.sigs.k8s.io/jobset-name=$1" kwok.kftrainer.test/outcome- >/dev/null; }
trial_state() { k get optimizationjob tune -o jsonpath="{.status.trials[?(@.name==\"$1\")].state}" 2>/dev/null; }
loss_of() { k get optimizationjob tune -o jsonpath="{.status.trials[?(@.name==\"$1\")].metrics[0].min}" 2>/dev/null; }
lr_of() { k get trainjob "$1" -o jsonpath='{.spec.trainer.env[?(@.name=="KUBEFLOW_TRAINER_OPT_LR")].value}'; }

# --- trials -------------------------------------------------------------------------------------
if wait_slowly 60 sh -c "[ \$(kubectl -n $ns get trainjobs -o name | grep -c .) -ge 2 ]"; then
	pass "optimization $tag: trials are created"
else
	fail "optimization $tag: trials" "none appeared" "$(ctrl_log_tail opt)"
	exit 0
fi
sleep 2 # a third trial, were parallelTrials not kept, would have been created by now
expect_two=$(trials | tr '\n' ' ')
if [ "$expect_two" = "trainjob.trainer.kubeflow.org/tune-1 trainjob.trainer.kubeflow.org/tune-2 " ]; then
	pass "optimization $tag: parallelTrials 2: tune-1 and tune-2, no more"
else
	fail "optimization $tag: parallelTrials" "trials: $expect_two"
fi
owner=$(k get trainjob tune-1 -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}/{.metadata.ownerReferences[0].blockOwnerDeletion}')
args=$(k get trainjob tune-1 -o jsonpath='{.spec.trainer.command[2]}')
if [ "$owner" = "OptimizationJob/tune/true/true" ] && [ "$args" = "--lr=$(lr_of tune-1)" ] && [ "$(lr_of tune-1)" = 0.4 ]; then
	pass "optimization $tag: a trial is owned by its OptimizationJob, its value in the command and KUBEFLOW_TRAINER_OPT_LR"
else
	fail "optimization $tag: trial shape" "owner: $owner" "command[2]: $args" "env: $(lr_of tune-1)"
fi

# --- metrics and completion ---------------------------------------------------------------------------
run_trial() { # run_trial TRIAL: report twice (loss = lr, then lr + 1) and let it finish
	local lr
	lr=$(lr_of "$1")
	wait_slowly 60 trial_running "$1" || echo "trial $1 never ran" >&2
	report "$1" "$(python3 -c "print($lr + 1)")"
	wait_slowly 30 sh -c "[ -n \"\$(kubectl -n $ns get optimizationjob tune -o jsonpath='{.status.trials[?(@.name==\"$1\")].metrics}')\" ]"
	sleep 1.1 # the next report carries another lastUpdatedTime
	report "$1" "$lr"
	wait_slowly 30 sh -c "[ \"\$(kubectl -n $ns get optimizationjob tune -o jsonpath='{.status.trials[?(@.name==\"$1\")].metrics[0].min}')\" = $lr ]"
	release "$1"
}
run_trial tune-1
run_trial tune-2
if wait_slowly 60 sh -c "[ \"\$(kubectl -n $ns get optimizationjob tune -o jsonpath='{.status.trials[0].state} {.status.trials[1].state}')\" = 'Succeeded Succeeded' ]"; then
	pass "optimization $tag: trials end Succeeded once their TrainJobs complete"
else
	fail "optimization $tag: completion" "states: $(trial_state tune-1) $(trial_state tune-2)" "$(ctrl_log_tail opt)"
fi
m=$(k get optimizationjob tune -o jsonpath='{.status.trials[0].metrics[0]}')
if [ "$(printf '%s' "$m" | python3 -c 'import json,sys; m=json.load(sys.stdin); print(m["name"], m["min"], m["max"], m["latest"])')" = "loss 0.4 1.4 0.4" ]; then
	pass "optimization $tag: reports folded as Katib keeps metrics (min, max, latest)"
else
	fail "optimization $tag: metrics" "tune-1: $m"
fi

# --- restart mid-search ----------------------------------------------------------------------------
wait_slowly 60 sh -c "[ \$(kubectl -n $ns get trainjobs -o name | grep -c .) -eq 4 ]"
before=$(k get optimizationjob tune -o jsonpath='{.status.trials[*].name} {.status.trials[0].metrics[0].min} {.status.trials[1].metrics[0].min}')
ctrl_stop opt
if ! ctrl_start opt || ! status_server_serve opt "$work" "$base"; then
	fail "optimization $tag: restart" "the controller did not come back" "$(ctrl_log_tail opt)"
	exit 0
fi
sleep 3 # a restarted controller that lost count of its running trials would create tune-5 now
after=$(k get optimizationjob tune -o jsonpath='{.status.trials[*].name} {.status.trials[0].metrics[0].min} {.status.trials[1].metrics[0].min}')
if [ "$(count_trials)" = 4 ] && [ "$after" = "$before" ] && [ "$before" = "tune-1 tune-2 tune-3 tune-4 0.4 0.1" ]; then
	pass "optimization $tag: a restart mid-search loses nothing and creates no extra trial"
else
	fail "optimization $tag: restart" "before: $before" "after: $after" "trials: $(trials | tr '\n' ' ')"
fi
run_trial tune-3
run_trial tune-4
wait_slowly 60 sh -c "kubectl -n $ns get trainjob tune-5 >/dev/null 2>&1"
run_trial tune-5

# --- the result ---------------------------------------------------------------------------------
if wait_slowly 60 sh -c "[ \"\$(kubectl -n $ns get optimizationjob tune -o jsonpath='{.status.conditions[?(@.type==\"Complete\")].reason}')\" = MaxTrialsReached ]"; then
	pass "optimization $tag: Complete, reason MaxTrialsReached"
else
	fail "optimization $tag: Complete" "$(k get optimizationjob tune -o jsonpath='{.status.conditions}')" "$(ctrl_log_tail opt)"
fi
result=$(k get optimizationjob tune -o jsonpath='{.status.result.trainJobName} {.status.result.parameters[0].name}={.status.result.parameters[0].value}')
if [ "$result" = "tune-2 lr=0.1" ]; then
	pass "optimization $tag: status.result is the trial with the smallest loss, with its parameters"
else
	fail "optimization $tag: result" "got: $result" "losses: $(k get optimizationjob tune -o jsonpath='{.status.trials[*].metrics[0].min}')"
fi
evs=$(kubectl -n "$ns" get events --field-selector involvedObject.kind=OptimizationJob,involvedObject.name=tune -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' 2>/dev/null | sort -u | tr '\n' ' ')
case "$evs" in
*MaxTrialsReached*TrialCreated*TrialSucceeded*) pass "optimization $tag: Events on the OptimizationJob: $evs" ;;
*) fail "optimization $tag: events" "got: $evs" ;;
esac

# --- the webhook --------------------------------------------------------------------------------
ctrl_webhooks_register opt
got=$(k apply --dry-run=server -f - 2>&1 <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: bad
  annotations: {optimizer.kftrainer.dev/algorithm: bayes}
spec:
  objectives: [{metric: loss}]
  parameters: [{name: lr, searchSpace: {uniform: {min: "0", max: "1"}}}]
  trainJobTemplate: {spec: {runtimeRef: {name: torch-distributed}}}
EOF
)
case "$got" in
*'admission webhook "validator.optimizationjob.trainer.kubeflow.org" denied the request'*'Unsupported value: "bayes"'*)
	pass "optimization $tag: the webhook refuses an unknown algorithm annotation" ;;
*) fail "optimization $tag: webhook" "got: $got" ;;
esac
ctrl_webhooks_unregister

# --- garbage collection ------------------------------------------------------------------------------
k delete optimizationjob tune >/dev/null
if wait_slowly 60 sh -c "[ \$(kubectl -n $ns get trainjobs -o name | grep -c .) -eq 0 ]"; then
	pass "optimization $tag: deleting the OptimizationJob deletes its trials"
else
	fail "optimization $tag: gc" "left: $(trials | tr '\n' ' ')"
fi
