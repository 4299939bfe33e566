#!/usr/bin/env bash
# Hyperparameter search from the command line (issue 21): `optimize` starts an OptimizationJob
# (upstream master's kind) whose trials are TrainJobs of the engine; `get`, `logs`, `events`
# and `delete` take kubectl's type-first habit (optimizationjobs, optimizationjob NAME,
# optimizationjob/NAME).
# Pins: the Kubeflow SDK 0.5.0 OptimizerClient (get_best_results: the best trial's parameters;
# get_job_logs: the best trial's node-0, else the first trial), Katib's StdOut collector
# (name=value lines), Katib's "max trial count has reached" completion, upstream's
# OptimizationJob CEL rules, and kubectl's NotFound and "deleted" wording.
. "$KFT_LOCAL_DIR/lib.sh"

# opt_file NAME SEED [ANNOTATIONS]: a 4-trial search, 2 at a time, whose trials print
# loss = |log10(lr) + 2.5| (best near lr = 0.00316) on both nodes.
opt_file() {
	cat >"$KFT_CASE_TMP/$1.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: $1
  annotations: {${3:-}}
spec:
  objectives: [{metric: loss}]
  numTrials: 4
  parallelTrials: 2
  searchAlgorithm: {random: {seed: $2}}
  parameters:
    - name: lr
      searchSpace: {logUniform: {min: "0.0001", max: "0.1"}}
    - name: bs
      searchSpace: {categorical: {choices: ["16", "32"]}}
  trainJobTemplate:
    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        numNodes: 2
        command:
          - python3
          - -c
          - |
            import math, os
            lr = float("\${trialParameters.lr}")
            print("starting", os.environ["KUBEFLOW_TRAINER_OPT_BS"], flush=True)
            print(f"epoch 1: loss={abs(math.log10(lr) + 2.5) + 0.5}", flush=True)
            print(f"epoch 2: loss = {abs(math.log10(lr) + 2.5)} acc=0.9", flush=True)
YAML
}

# json_get NAME EXPR: a Python expression over `o`, the OptimizationJob as JSON.
json_get() {
	kft get optimizationjob "$1" -o json | python3 -c "import json,sys; o=json.load(sys.stdin); print($2)"
}

opt_file tune 7
expect_exit "optimize --follow runs the search to its end" 0 \
	kft optimize -f "$KFT_CASE_TMP/tune.yaml" --follow
expect_contains "it says it was created" "$KFT_OUT" "optimizationjob.trainer.kubeflow.org/tune created"
expect_contains "it prints the trials as they start" "$KFT_OUT" "Normal TrialCreated: Created trial TrainJob tune-1: lr="
expect_contains "and how it ended" "$KFT_OUT" "Normal MaxTrialsReached: OptimizationJob has succeeded because max trial count has reached: 4 trials finished"

run_capture kft get optimizationjobs
expect_contains "get optimizationjobs: one row" "$KFT_OUT" "tune   Complete   4/4      0         4           0"
run_capture kft get optimizationjob tune
expect_contains "get optimizationjob NAME: the trials, a column per parameter and metric" "$KFT_OUT" "TRIAL    STATE       LR"
expect_contains "every trial succeeded" "$(printf '%s\n' "$KFT_OUT" | grep -c 'tune-[1-4]   Succeeded')" 4
expect_contains "and the best is named" "$KFT_OUT" "Best trial: tune-"

# The best is the trial with the smallest loss (each trial's min, Katib's default strategy
# for a minimized objective), and the result carries its parameters.
best=$(json_get tune "o['status']['result']['trainJobName']")
want=$(json_get tune "min(o['status']['trials'], key=lambda t: float(next(m['min'] for m in t['metrics'] if m['name']=='loss')))['name']")
expect_eq "status.result names the trial with the smallest loss" "$want" "$best"
expect_eq "the min is epoch 2's" "$(json_get tune "[m for t in o['status']['trials'] for m in t['metrics'] if t['name']=='$best'][0]['latest'] == [m for t in o['status']['trials'] for m in t['metrics'] if t['name']=='$best'][0]['min']")" True
expect_eq "result.parameters are the best trial's" \
	"$(json_get tune "[t['parameters'] for t in o['status']['trials'] if t['name']=='$best'][0]")" \
	"$(json_get tune "o['status']['result']['parameters']")"
expect_eq "the trials are labelled as the search's" tune \
	"$(kft get "$best" -o json | python3 -c "import json,sys; print(json.load(sys.stdin)['metadata']['labels']['optimizer.kftrainer.dev/optimization-job'])")"

# RandomSearch(random_state): the same seed draws the same values, trial by trial.
opt_file again 7
expect_exit "a second search with the same seed" 0 kft optimize -f "$KFT_CASE_TMP/again.yaml" --follow
expect_eq "draws the same parameters" "$(json_get tune "[t['parameters'] for t in o['status']['trials']]")" \
	"$(json_get again "[t['parameters'] for t in o['status']['trials']]")"
opt_file other 8
expect_exit "another seed" 0 kft optimize -f "$KFT_CASE_TMP/other.yaml" --follow
if [ "$(json_get tune "[t['parameters'] for t in o['status']['trials']]")" != \
	"$(json_get other "[t['parameters'] for t in o['status']['trials']]")" ]; then
	pass "another seed draws other values"
else
	fail "another seed draws other values" "the same values"
fi

# Logs: the best trial by default (the SDK's get_job_logs), a named one with --trial.
run_capture kft logs optimizationjob/tune --node 0
expect_eq "logs optimizationjob/NAME: the best trial's" \
	"$(kft logs "$best" --node 0)" "$KFT_OUT"
expect_exit "logs --trial TRIAL" 0 kft logs optimizationjob tune --trial tune-1 --node 1
expect_contains "shows that trial's node" "$KFT_OUT" "epoch 2: loss"
expect_exit "logs --trial of another search: refused" 1 kft logs optimizationjob/tune --trial again-1
expect_contains "naming the search" "$KFT_ERR" "--trial: again-1 is not a trial of optimizationjob.trainer.kubeflow.org/tune"

run_capture kft events optimizationjob/tune
expect_contains "events: the trials' starts" "$KFT_OUT" "TrialCreated"
expect_contains "events: their ends" "$KFT_OUT" "TrialSucceeded"
expect_contains "events: the trials' own TrainJob events follow" "$KFT_OUT" "pod/tune-1-node-0-0"
expect_eq "events -o json: an EventList" EventList \
	"$(kft events optimizationjob/tune -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kind"])')"

# Delete takes the trials with it.
expect_exit "delete optimizationjob NAME" 0 kft delete optimizationjob tune
expect_eq "kubectl's wording" 'optimizationjob.trainer.kubeflow.org "tune" deleted' "$KFT_OUT"
expect_eq "its trials are gone" "" "$(kft get -o name | grep '/tune-')"
expect_eq "the other searches' trials stay" 4 "$(kft get -o name | grep -c '/again-')"
expect_exit "a second delete: NotFound" 3 kft delete optimizationjob/tune
expect_eq "in kubectl's words" 'Error from server (NotFound): optimizationjobs.trainer.kubeflow.org "tune" not found' "$KFT_ERR"
expect_exit "--ignore-not-found" 0 kft delete optimizationjob tune --ignore-not-found
expect_exit "get of a missing one: NotFound" 3 kft get optimizationjob tune
expect_exit "delete one by name" 0 kft delete optimizationjobs again
expect_exit "delete optimizationjobs --all" 0 kft delete optimizationjobs --all
expect_contains "deletes the rest" "$KFT_OUT" 'optimizationjob.trainer.kubeflow.org "other" deleted'
expect_exit "names and --all: refused" 2 kft delete optimizationjobs x --all
expect_eq "nothing is left" "" "$(kft get -o name; kft get optimizationjobs -o name)"

# Refusals: nothing stored, nothing started.
cat >"$KFT_CASE_TMP/bad.yaml" <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata: {name: bad}
spec:
  objectives: [{metric: loss}]
  numTrials: 1
  parallelTrials: 2
  parameters: [{name: lr, searchSpace: {uniform: {min: "1", max: "0.5"}}}]
  trainJobTemplate: {spec: {runtimeRef: {name: torch-distributed}}}
YAML
expect_exit "upstream's CEL rules: refused" 1 kft optimize -f "$KFT_CASE_TMP/bad.yaml"
expect_contains "as validate prints them" "$KFT_ERR" "OptimizationJob/default/bad: spec: Invalid value: parallelTrials cannot exceed numTrials"
expect_contains "every rule" "$KFT_ERR" "spec.parameters[0].searchSpace.uniform: Invalid value: min must be strictly less than max"
sed -e 's/name: bad}/name: typo}/' -e 's/parallelTrials: 2/parallelTrials: 1/' -e 's/"1", max: "0.5"/"0", max: "1"/' \
	-e 's/{spec: {runtimeRef: {name: torch-distributed}}}/{spec: {runtimeRef: {name: torch-distributed}, trainer: {args: ["${trialParameters.rate}"]}}}/' \
	"$KFT_CASE_TMP/bad.yaml" >"$KFT_CASE_TMP/typo.yaml"
expect_exit "a placeholder naming no parameter: refused" 1 kft optimize -f "$KFT_CASE_TMP/typo.yaml"
expect_contains "naming the field" "$KFT_ERR" 'spec.trainJobTemplate.spec.trainer.args[0]: Invalid value: "${trialParameters.rate}": names no parameter of spec.parameters'
sed -e 's/name: typo}/name: nort}/' -e 's/name: torch-distributed}, trainer.*$/name: no-such-runtime}}}/' \
	"$KFT_CASE_TMP/typo.yaml" >"$KFT_CASE_TMP/nort.yaml"
expect_exit "an unknown runtime: refused" 1 kft optimize -f "$KFT_CASE_TMP/nort.yaml"
expect_contains "as train refuses it" "$KFT_ERR" 'ClusterTrainingRuntime.trainer.kubeflow.org "no-such-runtime" not found'
sed -e 's/name: nort}/name: dot.ted}/' -e 's/name: no-such-runtime}/name: torch-distributed}/' \
	"$KFT_CASE_TMP/nort.yaml" >"$KFT_CASE_TMP/dotted.yaml"
expect_exit "a name no trial TrainJob can carry: refused before it starts" 1 kft optimize -f "$KFT_CASE_TMP/dotted.yaml"
expect_contains "with the trial's own error" "$KFT_ERR" "its trials' TrainJob would be invalid"
trainjob_file "$KFT_CASE_TMP/tj.yaml" tj torch-distributed
expect_exit "a TrainJob is not a search" 2 kft optimize -f "$KFT_CASE_TMP/tj.yaml"
expect_exit "optimize without -f" 2 kft optimize
expect_eq "none of them was stored or started" "" "$(kft get optimizationjobs -o name; kft get -o name)"
expect_exit "get optimizationjobs -A" 0 kft get optimizationjobs -A
expect_exit "names across namespaces: refused as kubectl does" 2 kft get optimizationjob x -A
