#!/usr/bin/env bash
# Full mode: for every built-in runtime (manifests/runtimes), and for runtimes that make a PodGroup
# of either kind and Flux's objects, a TrainJob created on the cluster gets exactly the objects
# `kftrainer render` prints for it: the same JobSet, Secret, ConfigMap and PodGroup, field for
# field. The TrainJobs are the golden tier's cases (tests/golden/cases/<case>/trainjob.yaml),
# whose render output was itself checked against upstream v2.3.0's code.
#
# How "the same" is decided: render's objects are given the TrainJob's uid in their owner
# references and created with a server-side dry run in a scratch namespace, so the API server and
# JobSet's mutating webhook default them exactly as they did the controller's; objcompare.py then
# compares them with what the controller made, ignoring only what the server sets (uid,
# resourceVersion, timestamps, managedFields, generation, status) and the random key material in
# Secrets. Objects the controller made that render does not print are differences too, except
# the runtime snapshot ConfigMap that upstream v2.3.0 writes for every TrainJob
# (pkg/runtime/core/snapshot.go, "<trainjob>-runtime-snapshot", data key "runtime": the runtime
# as YAML), which is checked on its own here.
#
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

CASES=(
	torch-distributed-several-nodes
	deepspeed-distributed-several-nodes
	mlx-distributed-several-nodes
	jax-distributed-several-nodes-gpu
	xgboost-distributed-several-nodes
	torchtune-llama3.2-1b-default
	torchtune-llama3.2-3b-default
	torchtune-qwen2.5-1.5b-default
	mpi-coscheduling
	torch-custom-volcano
	flux-1-node
)
tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller objects equal render's $tag" "$reason"
	exit 0
fi
KFTRAINER=${KFTRAINER:-${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/bin/kftrainer}
if [ ! -x "$KFTRAINER" ]; then
	skip "controller objects equal render's $tag" "no kftrainer CLI at $KFTRAINER"
	exit 0
fi
ns=$(new_namespace render) && scratch=$(new_namespace expect) || {
	fail "controller objects equal render's $tag" "cannot create namespaces"
	exit 0
}
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-render.XXXXXX")
cluster_runtimes=()
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" "$scratch" --wait=false >/dev/null 2>&1
	for r in "${cluster_runtimes[@]}"; do
		kubectl delete clustertrainingruntime "$r" --wait=false >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT
install_builtin_runtimes || {
	fail "controller objects equal render's $tag" "cannot install manifests/runtimes"
	exit 0
}

# The snapshot ConfigMap holds the runtime the TrainJob was built from: same kind, name and uid,
# and the same spec once the empty objects a typed round trip adds are pruned.
check_snapshot() {
	local tj=$1 rkind=$2 rname=$3 name cm rt
	name="runtime snapshot of $tj $tag"
	cm=$(kubectl -n "$ns" get configmap "$tj-runtime-snapshot" -o json 2>/dev/null) || {
		fail "$name" "no ConfigMap $tj-runtime-snapshot (upstream v2.3.0 writes one per TrainJob)"
		return
	}
	if [ "$rkind" = ClusterTrainingRuntime ]; then
		rt=$(kubectl get clustertrainingruntime "$rname" -o json)
	else
		rt=$(kubectl -n "$ns" get trainingruntime "$rname" -o json)
	fi
	local out
	if out=$(python3 - "$tj" <(echo "$cm") <(echo "$rt") <<'EOF'
import json, sys, yaml
tj, cm, rt = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
# Empty objects are dropped and quantities compared as text: a typed round trip adds the first
# and writes "2" where the manifest (and so the server) has 2.
def prune(v, key=""):
    if isinstance(v, dict):
        if key in ("limits", "requests"):
            return {k: str(x) for k, x in v.items()}
        v = {k: prune(x, k) for k, x in v.items()}
        return {k: x for k, x in v.items() if x not in ({}, None)}
    if isinstance(v, list):
        return [prune(x) for x in v]
    return v
problems = []
refs = [r for r in cm["metadata"].get("ownerReferences", []) if r.get("controller")]
if len(refs) != 1 or refs[0].get("kind") != "TrainJob" or refs[0].get("name") != tj:
    problems.append(f"controller owner reference is not TrainJob/{tj}: {refs}")
snap = yaml.safe_load(cm.get("data", {}).get("runtime", "null")) or {}
for path in (("kind",), ("apiVersion",), ("metadata", "name"), ("metadata", "uid")):
    a, b = snap, rt
    for p in path:
        a, b = (a or {}).get(p), (b or {}).get(p)
    if a != b:
        problems.append(f"{'.'.join(path)}: snapshot has {a!r}, runtime has {b!r}")
# torch.numProcPerNode is a kftrainer extension our CRD keeps and defaults (upstream v2.3.0 removed
# it); upstream's typed snapshot drops it, ours may keep it, so it is not compared.
for obj in (rt, snap):
    torch = ((obj.get("spec") or {}).get("mlPolicy") or {}).get("torch")
    if isinstance(torch, dict):
        torch.pop("numProcPerNode", None)
if prune(snap.get("spec")) != prune(rt.get("spec")):
    problems.append("spec differs from the runtime's")
print("\n".join(problems))
sys.exit(1 if problems else 0)
EOF
	); then
		pass "$name"
	else
		fail "$name" "the snapshot does not match the runtime" "$out"
	fi
}

ctrl_start main || {
	fail "controller objects equal render's $tag" "the controller did not start"
	exit 0
}

# Create every case first, so that the controller works on them all at once.
declare -A tj_of rkind_of rname_of
for c in "${CASES[@]}"; do
	dir=$KFT_REPO_ROOT/tests/golden/cases/$c
	if [ -d "$dir/runtimes" ]; then
		for f in "$dir"/runtimes/*.yaml; do
			to_namespace "$f" "$ns" >"$work/$c-runtime.yaml"
			if ! out=$(kubectl apply --server-side -f "$work/$c-runtime.yaml" 2>&1); then
				fail "$c: objects equal render's $tag" "runtime rejected" "$out"
				continue 2
			fi
			for r in $(sed -n 's|^clustertrainingruntime.trainer.kubeflow.org/\([^ ]*\) .*|\1|p' <<<"$out"); do
				cluster_runtimes+=("$r")
			done
		done
	fi
	to_namespace "$dir/trainjob.yaml" "$ns" >"$work/$c.yaml"
	if ! out=$(kubectl create -f "$work/$c.yaml" -o jsonpath='{.metadata.name} {.spec.runtimeRef.kind} {.spec.runtimeRef.name}' 2>&1); then
		fail "$c: objects equal render's $tag" "TrainJob rejected" "$out"
		continue
	fi
	read -r tj_of[$c] rkind_of[$c] rname_of[$c] <<<"$out"
done

for c in "${CASES[@]}"; do
	[ -n "${tj_of[$c]:-}" ] || continue
	tj=${tj_of[$c]}
	rargs=(-r "$KFT_REPO_ROOT/manifests/runtimes")
	[ -d "$KFT_REPO_ROOT/tests/golden/cases/$c/runtimes" ] && rargs+=(-r "$work/$c-runtime.yaml")
	# Flux's scripts are kftrainer's own (tests/golden/cases/flux-1-node says how they were
	# checked against upstream's computed values); against upstream only their absence would count.
	skipdata=()
	if [ "$(ctrl_flavour)" = upstream ] && [[ "$c" == flux-* ]]; then
		skipdata=(--skip-data "ConfigMap/$tj-flux-entrypoint")
	fi
	objects_equal_render "$c: objects equal render's $tag" "$ns" "$scratch" "$tj" "$work/$c.yaml" \
		"$work/$c" "${rargs[@]}" -- "${skipdata[@]}" || continue
	check_snapshot "$tj" "${rkind_of[$c]:-ClusterTrainingRuntime}" "${rname_of[$c]}"
done
if ctrl_alive main; then
	pass "controller still running after all cases $tag"
else
	fail "controller still running after all cases $tag" "it exited"
	ctrl_log_tail main
fi
