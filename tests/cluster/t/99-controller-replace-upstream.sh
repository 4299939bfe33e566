#!/usr/bin/env bash
# Full mode: our manifests over an upstream install, as a platform team would swap controllers.
# Upstream v2.3.0's manifests (its manager overlay, from the Go module the tier builds upstream's
# controller from, without the JobSet it bundles and without the CRDs, which the tier has) are
# installed the way upstream's guide installs them, `kubectl apply --server-side`; then ours with
# docs/deploy.md's `kubectl apply --server-side --force-conflicts -k manifests/controller`.
#   replace    the apply is accepted, and the Deployment (image, args, ports, volumes), the
#              Service's ports, the ClusterRole's rules, the Configuration and both webhook
#              configurations are then exactly ours: nothing of upstream's lingers in them
#   client     a client-side `kubectl apply -k` over the same install is refused (the two ports
#              lists merge into a duplicate "metrics"), which is why the guide says --server-side
# Everything applied is removed at the end (the namespace stays: other tests use it).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

if [ "$(cluster_mode)" != full ]; then
	skip "replacing an upstream install" "needs tests/cluster/up --full"
	exit 0
fi
upstream_manifests() {
	local d
	d="$(go env GOMODCACHE 2>/dev/null)/github.com/kubeflow/trainer/v2@v2.3.0/manifests"
	[ -d "$d/overlays/manager" ] && echo "$d"
}
src=$(upstream_manifests) || { build_tool trainer >/dev/null 2>&1 && src=$(upstream_manifests); } || {
	skip "replacing an upstream install" "upstream v2.3.0's module (its manifests) is not available"
	exit 0
}
work=$(mktemp -d)
cleanup() {
	for f in "$work/ours.yaml" "$work/upstream.yaml"; do
		[ -f "$f" ] && kubectl delete --ignore-not-found --wait=false -f "$f" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT

# Upstream's overlay without its bundled JobSet (this cluster runs one) and without the CRDs; ours
# without the Namespace (shared with the other tests).
cp -r "$src" "$work/m" && chmod -R u+w "$work/m" &&
	sed -i '/third-party\/jobset/d' "$work/m/overlays/manager/kustomization.yaml" &&
	kubectl kustomize "$work/m/overlays/manager" >"$work/upstream-all.yaml" &&
	kubectl kustomize "$KFT_REPO_ROOT/manifests/controller" >"$work/ours-all.yaml" || {
	fail "replacing an upstream install" "cannot render the manifests"
	exit 0
}
drop_kinds() { # drop_kinds IN OUT KIND...
	python3 - "$@" <<'EOF'
import sys, yaml
src, dst, kinds = sys.argv[1], sys.argv[2], set(sys.argv[3:])
docs = [d for d in yaml.safe_load_all(open(src)) if d and d["kind"] not in kinds]
open(dst, "w").write(yaml.safe_dump_all(docs, sort_keys=False))
EOF
}
drop_kinds "$work/upstream-all.yaml" "$work/upstream.yaml" CustomResourceDefinition Namespace
drop_kinds "$work/ours-all.yaml" "$work/ours.yaml" Namespace

install_upstream() {
	kubectl apply --server-side --force-conflicts -f "$work/upstream.yaml" >"$work/out" 2>&1
}

# --- client-side apply over upstream's ---
name="a client-side apply over upstream's install is refused (the guide says --server-side)"
if install_upstream; then
	if out=$(kubectl apply -f "$work/ours.yaml" 2>&1); then
		fail "$name" "accepted: the guide's warning is out of date"
	elif [[ "$out" == *'Duplicate value: "metrics"'* ]]; then
		pass "$name"
	else
		fail "$name" "refused, but not for the merged ports: $(tail -1 <<<"$out")"
	fi
else
	fail "$name" "upstream's manifests were refused: $(tail -3 "$work/out")"
fi

# --- server-side apply over upstream's ---
name="kubectl apply --server-side --force-conflicts -k manifests/controller replaces upstream's install"
kubectl delete --ignore-not-found -f "$work/ours.yaml" >/dev/null 2>&1
kubectl delete --ignore-not-found -f "$work/upstream.yaml" >/dev/null 2>&1
if ! install_upstream; then
	fail "$name" "upstream's manifests were refused: $(tail -3 "$work/out")"
elif ! out=$(kubectl apply --server-side --force-conflicts -k "$KFT_REPO_ROOT/manifests/controller" 2>&1); then
	fail "$name" "refused: $(tail -2 <<<"$out")"
else
	kubectl get -f "$work/ours.yaml" -o json >"$work/live.json" 2>"$work/err"
	if diffs=$(python3 - "$work/ours.yaml" "$work/live.json" <<'EOF'
import json, sys, yaml
want = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
live = {(d["kind"], d["metadata"]["name"]): d for d in json.load(open(sys.argv[2]))["items"]}
bad = []
def same(what, a, b):
    if a != b:
        bad.append(f"{what}: want {a!r}, live {b!r}")
def pick(c, keys):
    return {k: c.get(k) for k in keys}
dep = ("Deployment", "kubeflow-trainer-controller-manager")
w, l = want[dep]["spec"]["template"]["spec"], live[dep]["spec"]["template"]["spec"]
wc, lc = w["containers"][0], l["containers"][0]
same("Deployment containers", len(w["containers"]), len(l["containers"]))
for k in ("image", "args", "command", "env"):
    same(f"Deployment container {k}", wc.get(k), lc.get(k))
same("Deployment ports", [(p["name"], p["containerPort"]) for p in wc["ports"]],
     [(p["name"], p["containerPort"]) for p in lc["ports"]])
same("Deployment volumes", sorted(v["name"] for v in w.get("volumes", [])),
     sorted(v["name"] for v in l.get("volumes", [])))
same("Deployment volumeMounts", sorted((m["name"], m["mountPath"]) for m in wc.get("volumeMounts", [])),
     sorted((m["name"], m["mountPath"]) for m in lc.get("volumeMounts", [])))
svc = ("Service", "kubeflow-trainer-controller-manager")
same("Service ports", sorted((p["name"], p["port"]) for p in want[svc]["spec"]["ports"]),
     sorted((p["name"], p["port"]) for p in live[svc]["spec"]["ports"]))
cr = ("ClusterRole", "kubeflow-trainer-controller-manager")
same("ClusterRole rules", want[cr]["rules"], live[cr]["rules"])
cm = ("ConfigMap", "kubeflow-trainer-config")
same("Configuration", yaml.safe_load(want[cm]["data"]["config.yaml"]),
     yaml.safe_load(live[cm]["data"]["config.yaml"]))
for k in (("ValidatingWebhookConfiguration", "validator.trainer.kubeflow.org"),
          ("MutatingWebhookConfiguration", "defaulter.trainer.kubeflow.org")):
    # the API server's defaults (a rule's scope "*", an empty objectSelector) are not ours to say
    def hooks(d):
        rules = lambda h: [{k: v for k, v in r.items() if (k, v) != ("scope", "*")} for r in h["rules"]]
        return [(h["name"], h["clientConfig"]["service"]["path"], h["failurePolicy"],
                 json.dumps(rules(h), sort_keys=True), json.dumps(h.get("objectSelector") or None, sort_keys=True))
                for h in d["webhooks"]]
    same(k[1], hooks(want[k]), hooks(live[k]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
	); then
		pass "$name"
	else
		fail "$name" "upstream's fields linger" "$diffs"
	fi
fi
