#!/usr/bin/env bash
# How the local engine runs a hyperparameter search (issue 21, items 2-4): at most
# parallelTrials at once, in a supervisor of its own that outlives the CLI; metrics from the
# primary node's output and from reports sent to the status endpoint; max-failed-trials;
# trials waiting for free GPUs instead of being refused; median stopping; delete mid-search;
# a lost supervisor.
# Pins: Katib's experiment status rules (Failed and MetricsUnavailable count against
# maxFailedTrialCount; completion at maxTrialCount), Katib's trial rule (a completed job that
# never reported the objective is MetricsUnavailable), Katib's medianstop (the mean of
# succeeded trials' first start_step averages; judged at the start_step-th report with the best
# value so far), the upstream KEP's KUBEFLOW_TRAINER_OPT_<NAME>.
. "$KFT_LOCAL_DIR/lib.sh"

# search NAME TRIALS PARALLEL ALGORITHM PARAMS COMMAND [ANNOTATIONS] [RESOURCES]
search() {
	cat >"$KFT_CASE_TMP/$1.yaml" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: $1
  annotations: {${7:-}}
spec:
  objectives: [{metric: loss}]
  numTrials: $2
  parallelTrials: $3
  searchAlgorithm: $4
  parameters: $5
  trainJobTemplate:
    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        ${8:-}
        command: [sh, -c, '$6']
YAML
}
state() { # NAME: the search's STATUS cell
	kft get optimizationjobs "$1" --no-headers | awk '{print $2}'
}
finished() { case "$(state "$1")" in Complete | Failed) return 0 ;; esac; return 1; }
jget() { # NAME EXPR over o (the OptimizationJob as JSON)
	kft get optimizationjob "$1" -o json | python3 -c "import json,sys; o=json.load(sys.stdin); print($2)"
}
choices='[{name: x, searchSpace: {categorical: {choices: ["a", "b", "c", "d"]}}}]'

# ---- parallelTrials, and a search that outlives the CLI -----------------------------------
# Each trial records its start and end; at most 2 overlap, and 2 do.
search par 4 2 '{grid: {}}' "$choices" \
	'echo start $(date +%s.%N) >>'"$KFT_CASE_TMP"'/runs.$KUBEFLOW_TRAINER_OPT_X; sleep 0.6; echo loss=1; echo end $(date +%s.%N) >>'"$KFT_CASE_TMP"'/runs.$KUBEFLOW_TRAINER_OPT_X'
expect_exit "optimize returns at once" 0 kft optimize -f "$KFT_CASE_TMP/par.yaml"
wait_for 60 finished par
expect_eq "another process sees it complete" Complete "$(state par)"
overlap=$(cat "$KFT_CASE_TMP"/runs.* | python3 -c '
import sys
ev = sorted((float(t), 1 if k == "start" else -1) for k, t in (l.split() for l in sys.stdin))
n = m = 0
for _, d in ev:
    n += d; m = max(m, n)
print(m)')
expect_eq "never more than parallelTrials at once, and that many" 2 "$overlap"
expect_eq "grid: every choice once, in order" "a b c d" \
	"$(jget par "' '.join(t['parameters'][0]['value'] for t in o['status']['trials'])")"

# ---- metrics from the status endpoint's reports, and additional metrics ---------------------
# Trials report through the status file (the same path as update_trainjob_status) and print
# nothing Katib's filter reads; the objective and accuracy come from the reports.
report='r() { printf "{\"trainerStatus\": {\"metrics\": [{\"name\": \"loss\", \"value\": \"%s\"}, {\"name\": \"accuracy\", \"value\": \"%s\"}]}}" $1 $2 >$KFTRAINER_STATUS_FILE.t; mv $KFTRAINER_STATUS_FILE.t $KFTRAINER_STATUS_FILE; sleep 0.4; }; r 0.9 0.5; r 0.3 0.7; r 0.6 0.8'
search rep 1 1 '{random: {seed: 1}}' "$choices" "$report" '"optimizer.kftrainer.dev/additional-metrics": accuracy'
expect_exit "a search whose trial reports" 0 kft optimize -f "$KFT_CASE_TMP/rep.yaml" --follow
expect_eq "loss from the reports: min, max, latest" "0.3 0.9 0.6" \
	"$(jget rep "' '.join(next(m for m in o['status']['trials'][0]['metrics'] if m['name']=='loss')[k] for k in ('min','max','latest'))")"
expect_eq "the additional metric is kept" "0.5 0.8 0.8" \
	"$(jget rep "' '.join(next(m for m in o['status']['trials'][0]['metrics'] if m['name']=='accuracy')[k] for k in ('min','max','latest'))")"

# ---- max-failed-trials; MetricsUnavailable counts as failed --------------------------------
# Trial a fails, b reports nothing, c would succeed: the second failure ends the search.
search fails 4 1 '{grid: {}}' "$choices" \
	'case $KUBEFLOW_TRAINER_OPT_X in a) exit 3;; b) echo no metric here;; *) echo loss=0.1;; esac' \
	'"optimizer.kftrainer.dev/max-failed-trials": "2"'
expect_exit "a failing search fails" 1 kft optimize -f "$KFT_CASE_TMP/fails.yaml" --follow
expect_eq "its trials: Failed, then MetricsUnavailable" "Failed MetricsUnavailable" \
	"$(jget fails "' '.join(t['state'] for t in o['status']['trials'])")"
expect_eq "Failed, reason MaxFailedTrialsReached" MaxFailedTrialsReached \
	"$(jget fails "[c['reason'] for c in o['status']['conditions'] if c['type']=='Failed' and c['status']=='True'][0]")"
expect_contains "the failed trial says why" "$(jget fails "o['status']['trials'][0].get('message','')")" "exit"

# ---- GPUs: a trial waits for free ones ---------------------------------------------------
# One GPU on this machine, trials of one GPU each, two at a time: the second waits (Pending,
# an Event says why) until the first ends; none is refused.
search gpu 2 2 '{grid: {}}' "$choices" 'echo cuda=$CUDA_VISIBLE_DEVICES; sleep 1; echo loss=1' '' \
	'resourcesPerNode: {limits: {nvidia.com/gpu: 1}}'
KFTRAINER_GPUS=1 expect_exit "a search needing more GPUs than are free" 0 kft optimize -f "$KFT_CASE_TMP/gpu.yaml"
wait_for 30 sh -c "$KFTRAINER get optimizationjob gpu -o json | grep -q '\"Pending\"'"
expect_contains "the second trial waits" "$(jget gpu "[t['state'] for t in o['status']['trials']]")" "Pending"
expect_contains "saying why" "$(jget gpu "o['status']['trials'][1].get('message','')")" "1 GPUs requested, but only 0 of this machine's 1 are free"
wait_for 60 finished gpu
expect_eq "both ran, one after the other" "Succeeded Succeeded" \
	"$(jget gpu "' '.join(t['state'] for t in o['status']['trials'])")"
expect_contains "the wait is an Event" "$(kft events optimizationjob/gpu)" "TrialWaiting"

# ---- median stopping ------------------------------------------------------------------------
# min_trials_required=1, start_step=2: trial a succeeds reporting loss 1, 1 (rule: 1.0); trial b
# reports 5, 4 and would then sleep: at its 2nd report its best (4) is worse than 1, so it is
# stopped at once, and its TrainJob ends Failed with reason EarlyStopped.
search med 2 1 '{grid: {}}' "$choices" \
	'if [ $KUBEFLOW_TRAINER_OPT_X = a ]; then echo loss=1; echo loss=1; else echo loss=5; echo loss=4; sleep 300; fi' \
	'"optimizer.kftrainer.dev/early-stopping": medianstop, "optimizer.kftrainer.dev/early-stopping-settings": "min_trials_required=1,start_step=2"'
expect_exit "a search with median stopping" 0 kft optimize -f "$KFT_CASE_TMP/med.yaml"
wait_for 60 finished med
expect_eq "the worse trial is early stopped" "Succeeded EarlyStopped" \
	"$(jget med "' '.join(t['state'] for t in o['status']['trials'])")"
expect_eq "with the rule it started with" "1.0" "$(jget med "o['status']['trials'][1]['medianStop']")"
expect_eq "its TrainJob: Failed, EarlyStopped" EarlyStopped \
	"$(kft get med-2 -o json | python3 -c 'import json,sys; print([c["reason"] for c in json.load(sys.stdin)["status"]["conditions"] if c["type"]=="Failed"][0])')"
expect_eq "and the search still completes" Complete "$(state med)"

# ---- delete mid-search ------------------------------------------------------------------
search long 3 2 '{grid: {}}' "$choices" 'echo loss=1; sleep 300'
expect_exit "a search of long trials" 0 kft optimize -f "$KFT_CASE_TMP/long.yaml"
wait_for 30 sh -c "[ \$($KFTRAINER get -o name | grep -c /long-) = 2 ]"
expect_exit "delete while it runs" 0 kft delete optimizationjob long
expect_eq "no trial is left" "" "$(kft get -o name | grep /long-)"
expect_eq "no process of it is left" "" "$(job_pids)"

# ---- a lost supervisor -----------------------------------------------------------------
search lost 2 1 '{grid: {}}' "$choices" 'echo loss=1; sleep 300'
expect_exit "a search whose supervisor will die" 0 kft optimize -f "$KFT_CASE_TMP/lost.yaml"
wait_for 30 sh -c "$KFTRAINER get -o name | grep -q /lost-1"
sup=$(pgrep -f -- "supervise --state-dir $KFTRAINER_STATE_DIR --optimization default lost")
kill -9 "$sup"
wait_for 10 sh -c "! kill -0 $sup"
expect_eq "the next reader marks it Failed" Failed "$(state lost)"
expect_eq "reason SupervisorLost" SupervisorLost \
	"$(jget lost "[c['reason'] for c in o['status']['conditions'] if c['type']=='Failed'][0]")"
expect_eq "its running trial was stopped" Killed "$(jget lost "o['status']['trials'][0]['state']")"
expect_eq "no process of it is left" "" "$(job_pids)"
kft delete optimizationjob lost >/dev/null
