#!/usr/bin/env bash
# Every manifest under manifests/ (and the SDK example's runtime) applies to the real API server. Each kustomization directory is
# rendered with `kubectl kustomize`; YAML files outside any kustomization are taken as they are.
# The namespaces they use are created for real, then everything is applied with a server-side
# dry run: the server validates each object fully (schemas, CEL, defaulting) but keeps nothing,
# so webhook configurations among the manifests cannot disturb the other tests.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

root=$KFT_REPO_ROOT/manifests
crd_dir=${KFT_CRD_DIR:-$root/crds}
have_crds=0
compgen -G "$crd_dir/*.yaml" >/dev/null && have_crds=1
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-manifests.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Units to check: kustomization directories, then loose files not under one.
units=()
while IFS= read -r k; do units+=("k:$(dirname "$k")"); done < <(find "$root" -name kustomization.yaml | sort)
in_kustomize_tree() {
	local d
	d=$(dirname "$1")
	while [ "${#d}" -ge "${#root}" ]; do
		[ -f "$d/kustomization.yaml" ] && return 0
		d=$(dirname "$d")
	done
	return 1
}
while IFS= read -r f; do
	in_kustomize_tree "$f" || units+=("f:$f")
done < <(find "$root" \( -name '*.yaml' -o -name '*.yml' \) ! -name kustomization.yaml | sort)
# The SDK example's runtime is for clusters too (docs/sdk.md).
units+=("f:$KFT_REPO_ROOT/examples/sdk/python-with-initializers.yaml")

if [ "${#units[@]}" = 0 ]; then
	skip "manifests apply" "no manifests under manifests/"
	exit 0
fi

i=0
for u in "${units[@]}"; do
	i=$((i + 1))
	path=${u#?:}
	name="manifests apply: ${path#"$KFT_REPO_ROOT"/}"
	out="$work/$i.yaml"
	case "$u" in
	k:*) kubectl kustomize "$path" >"$out" 2>"$work/err" ;;
	f:*) cp "$path" "$out" 2>"$work/err" ;;
	esac || {
		fail "$name" "does not render" "$(cat "$work/err")"
		continue
	}
	if [ ! -s "$out" ]; then
		skip "$name" "renders to nothing"
		continue
	fi
	# cert-manager's kinds (manifests/controller-cert-manager) need its CRDs, which this cluster
	# does not have: they are left out of the dry run (93-controller-cert-manager.sh checks them).
	python3 - "$out" <<'PYEOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep = [d for d in docs if not str(d.get("apiVersion", "")).startswith("cert-manager.io/")]
with open(sys.argv[1], "w") as f:
    yaml.safe_dump_all(keep, f, sort_keys=False)
PYEOF
	if [ "$have_crds" = 0 ] && grep -q 'apiVersion: trainer.kubeflow.org/' "$out"; then
		skip "$name" "uses trainer.kubeflow.org kinds but ${crd_dir#"$KFT_REPO_ROOT"/} has no CRDs yet"
		continue
	fi
	# Namespaces named by the objects, and Namespace objects themselves, are created for real.
	nss=$(kubectl create --dry-run=client -o jsonpath='{.metadata.namespace}{"|"}{.kind}{"|"}{.metadata.name}{"\n"}' \
		-f "$out" 2>"$work/err") || {
		fail "$name" "kubectl cannot read it" "$(cat "$work/err")"
		continue
	}
	for ns in $(awk -F'|' '$1 != "" {print $1} $2 == "Namespace" {print $3}' <<<"$nss" | sort -u); do
		kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null 2>&1
	done
	# Server-side apply: CRDs are too large for client-side apply's last-applied annotation.
	if res=$(kubectl apply --server-side --force-conflicts --field-manager kftrainer-tier \
		--dry-run=server -f "$out" 2>&1); then
		pass "$name ($(grep -c . <<<"$res") objects)"
	else
		fail "$name" "rejected by the API server" "$res"
	fi
done
