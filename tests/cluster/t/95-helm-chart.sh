#!/usr/bin/env bash
# Full mode: charts/kubeflow-trainer, rendered and installed by a real helm (v3, built from its Go
# module like the tier's other programs: tools/helm).
#   lint       helm lint passes
#   template   helm template's objects are accepted by the API server (apply --dry-run=server)
#   same       the chart's defaults are manifests/controller's: the Configuration, the webhook
#              configurations, the ClusterRole's rules, the Deployment's ports, and the CRDs are
#              manifests/crds' (so neither drifts)
#   names      upstream v2.3.0's chart names: Deployment, Service and ServiceAccount
#              kubeflow-trainer-controller-manager (release kubeflow-trainer), the Service's
#              status-server port 10443, the webhook Secret kubeflow-trainer-webhook-cert mounted at
#              /tmp/k8s-webhook-server/serving-certs; values statusServer.port and featureGates
#              reach the Configuration
#   install    helm install (CRDs off: the tier has them; webhooks off: no controller would answer
#              them) makes every object, helm uninstall removes them
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STATE=${STATE:-$(state_dir)}
if [ "$(cluster_mode)" != full ]; then
	skip "helm chart" "needs tests/cluster/up --full"
	exit 0
fi
if ! build_tool helm >&2; then
	skip "helm chart" "helm could not be built from its Go module (see the tier's build log)"
	exit 0
fi
helm() { HELM_CACHE_HOME="$work/cache" HELM_CONFIG_HOME="$work/config" HELM_DATA_HOME="$work/data" "$(tool_bin_dir helm)/helm" "$@"; }
chart=$KFT_REPO_ROOT/charts/kubeflow-trainer
work=$(mktemp -d)
ns=
cleanup() {
	[ -n "$ns" ] && helm uninstall kft-helm -n "$ns" >/dev/null 2>&1
	[ -n "$ns" ] && kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

if helm lint "$chart" >"$work/lint" 2>&1; then
	pass "helm chart: helm lint"
else
	fail "helm chart: helm lint" "$(tail -5 "$work/lint")"
fi

kubectl get namespace kubeflow-system >/dev/null 2>&1 || kubectl create namespace kubeflow-system >/dev/null
if helm template kubeflow-trainer "$chart" -n kubeflow-system >"$work/all.yaml" 2>"$work/err" &&
	kubectl apply --dry-run=server --server-side --force-conflicts -f "$work/all.yaml" >"$work/dry" 2>&1; then
	pass "helm chart: helm template's $(grep -c "(server dry run)" "$work/dry") objects pass apply --dry-run=server"
else
	fail "helm chart: template" "$(tail -5 "$work/err" "$work/dry" 2>/dev/null)"
fi

# The chart against the kustomize manifests and the CRDs, object by object.
verdict=$(python3 - "$work/all.yaml" "$KFT_REPO_ROOT" <<'EOF'
import glob, sys, yaml
objs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
root = sys.argv[2]
by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
for f in glob.glob(root + "/manifests/crds/*.yaml"):
    crd = yaml.safe_load(open(f))
    got = by.get(("CustomResourceDefinition", crd["metadata"]["name"]))
    want(got == crd, "CRD %s differs from manifests/crds" % crd["metadata"]["name"])
cm = by.get(("ConfigMap", "kubeflow-trainer-config"))
want(cm is not None, "ConfigMap kubeflow-trainer-config")
if cm:
    got = yaml.safe_load(cm["data"]["config.yaml"])
    ref = yaml.safe_load(open(root + "/manifests/controller/config.yaml"))
    want(got == ref, "Configuration differs from manifests/controller/config.yaml: %s vs %s" % (got, ref))
for ref in yaml.safe_load_all(open(root + "/manifests/controller/webhook.yaml")):
    if not ref:
        continue
    got = by.get((ref["kind"], ref["metadata"]["name"]))
    want(got and got["webhooks"] == ref["webhooks"], "%s differs from manifests/controller/webhook.yaml" % ref["metadata"]["name"])
cr = by.get(("ClusterRole", "kubeflow-trainer-controller-manager"))
ref = yaml.safe_load(open(root + "/manifests/controller/cluster_role.yaml"))
want(cr and cr["rules"] == ref["rules"], "ClusterRole rules differ from manifests/controller")
dep = by.get(("Deployment", "kubeflow-trainer-controller-manager"))
ref = yaml.safe_load(open(root + "/manifests/controller/deployment.yaml"))
if dep:
    c, rc = dep["spec"]["template"]["spec"]["containers"][0], ref["spec"]["template"]["spec"]["containers"][0]
    want(c["ports"] == rc["ports"], "Deployment ports %s vs %s" % (c["ports"], rc["ports"]))
    want(dep["spec"]["selector"] == ref["spec"]["selector"], "Deployment selector")
    want(c["volumeMounts"] == rc["volumeMounts"], "Deployment volumeMounts")
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    want(vols.get("cert", {}).get("secret", {}).get("secretName") == "kubeflow-trainer-webhook-cert", "cert volume")
else:
    bad.append("Deployment kubeflow-trainer-controller-manager")
svc = by.get(("Service", "kubeflow-trainer-controller-manager"))
want(svc and {"name": "status-server", "port": 10443, "targetPort": "status-server", "protocol": "TCP"} in svc["spec"]["ports"], "Service status-server port")
want(("ServiceAccount", "kubeflow-trainer-controller-manager") in by, "ServiceAccount")
print("ok" if not bad else "; ".join(bad))
EOF
)
if [ "$verdict" = ok ]; then
	pass "helm chart: defaults equal manifests/controller and manifests/crds, upstream's names"
else
	fail "helm chart: defaults" "$verdict"
fi

got=$(helm template kubeflow-trainer "$chart" -n kubeflow-system --set manager.config.statusServer.port=11443 \
	--set manager.config.featureGates.TrainJobStatus=true -s templates/manager/configmap.yaml 2>&1 |
	python3 -c 'import sys, yaml; c = yaml.safe_load(yaml.safe_load(sys.stdin)["data"]["config.yaml"]); print(c["statusServer"]["port"], c["featureGates"])' 2>&1)
if [ "$got" = "11443 {'TrainJobStatus': True}" ]; then
	pass "helm chart: statusServer.port and featureGates values reach the Configuration"
else
	fail "helm chart: values" "got: $got"
fi

ns=kft-helm-$(openssl rand -hex 3)
kubectl create namespace "$ns" >/dev/null
if helm install kft-helm "$chart" -n "$ns" --set crds.enabled=false --set webhook.enabled=false --set fullnameOverride="$ns" \
	--set manager.replicas=0 >"$work/install" 2>&1 &&
	kubectl -n "$ns" get deployment "$ns-controller-manager" >/dev/null 2>&1 &&
	kubectl get clusterrole "$ns-controller-manager" >/dev/null 2>&1; then
	if helm uninstall kft-helm -n "$ns" >"$work/uninstall" 2>&1 &&
		wait_for 30 sh -c "! kubectl get clusterrole $ns-controller-manager >/dev/null 2>&1"; then
		pass "helm chart: helm install makes the objects, helm uninstall removes them"
	else
		fail "helm chart: uninstall" "$(tail -5 "$work/uninstall")"
	fi
else
	fail "helm chart: install" "$(tail -5 "$work/install")"
fi
