#!/usr/bin/env bash
# Full mode: the Kubeflow SDK's BuiltinTrainer (kubeflow 0.5.0 from PyPI, its own
# KubernetesBackend) creates Trainer v2's fine-tune TrainJobs, full and LoRA, on the
# torchtune-llama3.2-1b runtime with both initializers, as a notebook does against a cluster
# (issue 20, item 7); the objects the controller makes for each equal `kftrainer render`'s for
# the TrainJob the SDK created, as 81-controller-render.sh decides "equal". Run with
# KFT_CONTROLLER=upstream the same SDK calls give upstream v2.3.0's objects, which equal
# render's too: side by side, ours and upstream's agree.
# Pins: the SDK's get_args_using_torchtune_config (dtype, batch_size, epochs, data_dir from the
# dataset initializer's URI, the LoraConfig fields, TorchTuneInstructDataset) and upstream's
# Torch plugin for `tune run` (recipe, config, protected settings), v2.3.0.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "SDK fine-tune objects equal render's $tag" "$reason"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-sdk-tt.XXXXXX")
ns=$(new_namespace sdk-tt) && scratch=$(new_namespace sdk-tt-expect) || {
	fail "SDK fine-tune objects equal render's $tag" "cannot create namespaces"
	exit 0
}
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" "$scratch" --wait=false >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
install_builtin_runtimes || {
	fail "SDK fine-tune objects equal render's $tag" "cannot install manifests/runtimes"
	exit 0
}
venv=$(sdk_venv 2>"$work/venv.err") || {
	fail "SDK fine-tune objects equal render's $tag" "$(cat "$work/venv.err")"
	exit 0
}
ctrl_start main || {
	fail "SDK fine-tune objects equal render's $tag" "the controller did not start"
	exit 0
}

# Trainer v2's example (the issue's), with the data set read from the initializer's files as
# upstream's notebooks do; LoRA and full. Prints "NAME KIND" per TrainJob created.
cat >"$work/sdk.py" <<'EOF'
import sys
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import (BuiltinTrainer, DataFormat, HuggingFaceDatasetInitializer,
                              HuggingFaceModelInitializer, Initializer, LoraConfig,
                              TorchTuneConfig, TorchTuneInstructDataset, TrainerClient)
client = TrainerClient(backend_config=KubernetesBackendConfig(namespace=sys.argv[1]))
init = Initializer(
    dataset=HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data"),
    model=HuggingFaceModelInitializer(storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct"))
for kind, peft in (("lora", LoraConfig(lora_rank=8)), ("full", None)):
    name = client.train(runtime="torchtune-llama3.2-1b", initializer=init,
                        trainer=BuiltinTrainer(config=TorchTuneConfig(
                            batch_size=1, epochs=1, num_nodes=1, peft_config=peft,
                            dataset_preprocess_config=TorchTuneInstructDataset(
                                source=DataFormat.PARQUET))))
    print(name, kind)
EOF
if ! made=$("$venv/bin/python" "$work/sdk.py" "$ns" 2>"$work/sdk.err"); then
	fail "SDK fine-tune objects equal render's $tag" "the SDK's train() failed" "$(tail -20 "$work/sdk.err")"
	exit 0
fi
while read -r tj kind; do
	kubectl -n "$ns" get trainjob "$tj" -o json | python3 -c '
import json, sys
tj = json.load(sys.stdin)
print(json.dumps({"apiVersion": tj["apiVersion"], "kind": tj["kind"],
                  "metadata": {"name": tj["metadata"]["name"], "namespace": tj["metadata"]["namespace"]},
                  "spec": tj["spec"]}))' >"$work/$kind.json"
	args=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["spec"]["trainer"].get("args", [])))' "$work/$kind.json")
	case "$kind" in
	lora) expect="model.lora_rank=8" ;;
	full) expect="dataset.source=parquet" ;;
	esac
	if [[ " $args " == *" $expect "* ]]; then
		pass "SDK $kind fine-tune: the SDK's args ($args)"
	else
		fail "SDK $kind fine-tune: the SDK's args" "no $expect in: $args"
	fi
	objects_equal_render "SDK $kind fine-tune: objects equal render's $tag" "$ns" "$scratch" "$tj" \
		"$work/$kind.json" "$work/$kind" -r "$KFT_REPO_ROOT/manifests/runtimes" --
done <<<"$made"
