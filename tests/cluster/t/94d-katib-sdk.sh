#!/usr/bin/env bash
# Full mode: the search docs/hpo.md runs locally goes to Katib unchanged (issue 21, Done-when 1).
# The same function, search space, trial config, objective and algorithm are handed to the
# Kubeflow SDK's own kubeflow.optimizer.OptimizerClient with KubernetesBackendConfig (kubeflow
# 0.5.0 from PyPI, its Katib backend), which creates a Katib Experiment; Katib's v1beta1
# Experiment CRD comes from its Go module (v0.19.0). Katib's controllers cannot run here (its
# suggestion services are Deployments whose pods kwok does not run), so the test does what
# Katib's trial controller does with one suggestion: every ${trialParameters.NAME} in the
# Experiment's trialSpec text replaced by the assigned value, then name and namespace set
# (Katib's manifest generator, GetRunSpecWithHyperParameters), and creates the result. That
# trial TrainJob is admitted by the controller under test, becomes a JobSet whose node runs
# the function with the assigned values as its keyword arguments, and Completes: against ours
# and, with KFT_CONTROLLER=upstream, against upstream v2.3.0.
# Pins: the SDK's KubernetesBackend.optimize (objective, algorithm, trial counts, trialTemplate
# with primaryContainerName node, retain, func_args placeholders), Katib's substitution.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "Katib through upstream's OptimizerClient $tag" "$reason"
	exit 0
fi
katib=$(module_dir github.com/kubeflow/katib@v0.19.0)
crd=$katib/manifests/v1beta1/components/crd/experiment.yaml
if [ ! -f "$crd" ]; then
	skip "Katib through upstream's OptimizerClient $tag" "Katib v0.19.0's module (its Experiment CRD) cannot be downloaded"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-katib.XXXXXX")
ns=$(new_namespace katib) || {
	fail "Katib through upstream's OptimizerClient $tag" "cannot create a namespace"
	exit 0
}
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }

venv=$(sdk_venv 2>"$work/venv.err") || {
	fail "Katib through upstream's OptimizerClient $tag" "$(cat "$work/venv.err")"
	exit 0
}
if ! kubectl apply --server-side --force-conflicts -f "$crd" >/dev/null ||
	! kubectl wait --for condition=Established --timeout 60s -f "$crd" >/dev/null; then
	fail "Katib through upstream's OptimizerClient $tag" "cannot install Katib's Experiment CRD"
	exit 0
fi
install_builtin_runtimes
ctrl_start katib || {
	fail "Katib through upstream's OptimizerClient $tag" "the controller did not start" "$(ctrl_log_tail katib)"
	exit 0
}

# docs/hpo.md's search, with upstream's client and a cluster instead of kftrainer's.
cat >"$work/optimize.py" <<'EOF'
import sys
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.optimizer import Objective, OptimizerClient, RandomSearch, Search, TrialConfig
from kubeflow.trainer import CustomTrainer, TrainJobTemplate

def train(lr, batch_size):
    lr, batch_size = float(lr), int(batch_size)
    print(f"loss={lr * batch_size}")

client = OptimizerClient(backend_config=KubernetesBackendConfig(namespace=sys.argv[1]))
print(client.optimize(TrainJobTemplate(runtime="torch-distributed",
                                       trainer=CustomTrainer(func=train, num_nodes=2)),
                      trial_config=TrialConfig(num_trials=20, parallel_trials=2),
                      search_space={"lr": Search.loguniform(1e-4, 1e-1),
                                    "batch_size": Search.choice([16, 32, 64])},
                      objectives=[Objective(metric="loss")],
                      algorithm=RandomSearch(random_state=1)))
EOF
if ! exp=$("$venv/bin/python" "$work/optimize.py" "$ns" 2>"$work/optimize.err"); then
	fail "Katib through upstream's OptimizerClient $tag: optimize()" "$(tail -20 "$work/optimize.err")"
	exit 0
fi
k get experiment "$exp" -o json >"$work/experiment.json" || {
	fail "Katib through upstream's OptimizerClient $tag" "no Experiment $exp"
	exit 0
}
shape=$(python3 - "$work/experiment.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["spec"]
t = s["trialTemplate"]
print(s["objective"]["objectiveMetricName"], s["objective"]["type"], s["algorithm"]["algorithmName"],
      s["maxTrialCount"], s["parallelTrialCount"], t["primaryContainerName"],
      t["trialSpec"]["kind"], t["trialSpec"]["spec"]["runtimeRef"]["name"],
      ",".join(p["name"] for p in s["parameters"]))
EOF
)
if [ "$shape" = "loss minimize random 20 2 node TrainJob torch-distributed lr,batch_size" ]; then
	pass "Katib $tag: upstream's client makes the Experiment for the same search ($shape)"
else
	fail "Katib $tag: the Experiment" "got: $shape"
fi

# One suggestion, applied as Katib's trial controller applies it.
python3 - "$work/experiment.json" "$exp-trial1" "$ns" >"$work/trial.json" <<'EOF'
import json, sys
exp, name, ns = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
text = json.dumps(exp["spec"]["trialTemplate"]["trialSpec"])
for p in exp["spec"]["trialTemplate"]["trialParameters"]:
    text = text.replace("${trialParameters.%s}" % p["name"], {"lr": "0.01", "batch_size": "32"}[p["reference"]])
trial = json.loads(text)
trial.setdefault("metadata", {}).update(name=name, namespace=ns)
print(json.dumps(trial))
EOF
if ! k create -f "$work/trial.json" >"$work/create.out" 2>&1; then
	fail "Katib $tag: the trial TrainJob is admitted" "$(cat "$work/create.out")"
	exit 0
fi
pass "Katib $tag: the trial TrainJob Katib would create is admitted"
trial=$exp-trial1
if wait_slowly 60 k get jobset "$trial"; then
	cmd=$(k get jobset "$trial" -o json | python3 -c '
import json, sys
js = json.load(sys.stdin)
rj = next(r for r in js["spec"]["replicatedJobs"] if r["name"] == "node")
c = next(c for c in rj["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == "node")
print(" ".join(c.get("command", []) + c.get("args", [])))')
	if [[ "$cmd" == *"'lr': '0.01'"* && "$cmd" == *"'batch_size': '32'"* && "$cmd" != *trialParameters* ]]; then
		pass "Katib $tag: the trial's node calls train() with the suggestion as its arguments"
	else
		fail "Katib $tag: the trial's node command" "$cmd"
	fi
else
	fail "Katib $tag: the trial's JobSet" "none after 60 s" "$(ctrl_log_tail katib)"
fi
if wait_trainjob_condition 120 "$ns/$trial" Complete; then
	pass "Katib $tag: the trial TrainJob Completes"
else
	fail "Katib $tag: the trial TrainJob Completes" "$(k get trainjob "$trial" -o jsonpath='{.status.conditions}')"
fi
