#!/usr/bin/env bash
# The CRDs `up` installs are served: JobSet's, both PodGroup kinds, and ours from manifests/crds.
# In full mode, the simulated nodes are Ready and offer nvidia.com/gpu.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

for crd in jobsets.jobset.x-k8s.io podgroups.scheduling.x-k8s.io podgroups.scheduling.volcano.sh; do
	if out=$(kubectl wait --for condition=Established --timeout 10s "crd/$crd" 2>&1); then
		pass "crd $crd established"
	else
		fail "crd $crd established" "not established" "$out"
	fi
done

crd_dir=${KFT_CRD_DIR:-$KFT_REPO_ROOT/manifests/crds}
n=0
for f in "$crd_dir"/*.yaml; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	name=$(kubectl create --dry-run=client -o jsonpath='{.metadata.name}' -f "$f" 2>/dev/null)
	if [ -n "$name" ] && out=$(kubectl wait --for condition=Established --timeout 10s "crd/$name" 2>&1); then
		pass "crd $name ($(basename "$f")) established"
	else
		fail "crd from $(basename "$f") established" "not served" "${out:-could not read its name}"
	fi
done
[ "$n" -gt 0 ] || skip "our CRDs established" "no CRDs in ${crd_dir#"$KFT_REPO_ROOT"/} yet"

# Both PodGroup kinds accept the objects our gang-scheduling plugins create.
pg() {
	kubectl create --dry-run=server -f - 2>&1 <<EOF2
apiVersion: $1
kind: PodGroup
metadata: {name: tier-probe, namespace: default}
spec:
  minMember: 2
  minResources: {cpu: "4", nvidia.com/gpu: "2"}
$2
EOF2
}
if out=$(pg scheduling.x-k8s.io/v1alpha1 "  scheduleTimeoutSeconds: 60"); then
	pass "coscheduling PodGroup accepted"
else
	fail "coscheduling PodGroup accepted" "rejected" "$out"
fi
if out=$(pg scheduling.volcano.sh/v1beta1 "  queue: default"); then
	pass "volcano PodGroup accepted"
else
	fail "volcano PodGroup accepted" "rejected" "$out"
fi

if [ "$(cluster_mode)" = full ]; then
	want=${KFT_CLUSTER_NODES:-2}
	ready=$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.status.allocatable.nvidia\.com/gpu}{"\n"}{end}' 2>&1)
	good=$(grep -c '^True 8$' <<<"$ready" || true)
	if [ "$good" = "$want" ]; then
		pass "$want simulated nodes Ready with 8 GPUs each"
	else
		fail "$want simulated nodes Ready with 8 GPUs each" "found $good" "$ready"
	fi
else
	skip "simulated nodes" "the cluster is in basic mode"
fi
