#!/usr/bin/env bash
# Full mode: webhook certificates provided by someone else (certManagement.enable: false), as
# manifests/controller-cert-manager sets it up with cert-manager:
#   overlay    the overlay turns certificate management off, mounts the Secret cert-manager
#              issues at /tmp/k8s-webhook-server/serving-certs, asks cert-manager's CA injector for
#              both webhook configurations, and leaves out the Secret and certificate RBAC
#   serve      the controller serves a CA-signed certificate written where the mounted Secret's
#              files appear (what the kubelet does for cert-manager's Secret), and the API server,
#              given that CA as caBundle (what the CA injector does), reaches the webhooks
#   renew      a renewed certificate written over the files is served without a restart
#              (controller-runtime's certwatcher upstream, ours alike)
# cert-manager itself does not run here; openssl plays its part with the Certificate's names.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
work=$(mktemp -d)
trap 'ctrl_webhooks_unregister; ctrl_stop_all; rm -rf "$work"; [ -n "${ns:-}" ] && kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT

# --- overlay (needs only kubectl) ---
name="cert-manager overlay: certificate management off, the Secret mounted, CA injection asked $tag"
if kubectl kustomize "$KFT_REPO_ROOT/manifests/controller-cert-manager" >"$work/all.yaml" 2>"$work/err"; then
	if out=$(python3 - "$work/all.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
cm = by[("ConfigMap", "kubeflow-trainer-config")]
cfg = yaml.safe_load(cm["data"]["config.yaml"])
assert cfg["certManagement"]["enable"] is False, "certManagement.enable"
dep = by[("Deployment", "kubeflow-trainer-controller-manager")]
pod = dep["spec"]["template"]["spec"]
mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
vol = mounts.get("/tmp/k8s-webhook-server/serving-certs")
assert vol, "no mount at the cert directory"
sec = [v for v in pod["volumes"] if v["name"] == vol][0]["secret"]["secretName"]
cert = by[("Certificate", "kubeflow-trainer-webhook-cert")]
assert cert["spec"]["secretName"] == sec, "the Certificate's Secret is not the mounted one"
assert "kubeflow-trainer-controller-manager.kubeflow-system.svc" in cert["spec"]["dnsNames"], "dnsNames"
for kind, n in (("ValidatingWebhookConfiguration", "validator.trainer.kubeflow.org"),
                ("MutatingWebhookConfiguration", "defaulter.trainer.kubeflow.org")):
    ann = by[(kind, n)]["metadata"].get("annotations", {})
    assert ann.get("cert-manager.io/inject-ca-from") == "kubeflow-system/" + sec, kind
for kind, n in (("Secret", sec), ("Role", "kubeflow-trainer-webhook-cert"),
                ("ClusterRole", "kubeflow-trainer-webhook-configurations")):
    assert (kind, n) not in by, "still has %s %s" % (kind, n)
print(" ".join(cert["spec"]["dnsNames"]))
EOF
	); then
		pass "$name"
		dns=$out
	else
		fail "$name" "$out"
	fi
else
	fail "$name" "does not render: $(cat "$work/err")"
fi

reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "cert-manager certificates served $tag" "$reason"
	exit 0
fi
ns=$(new_namespace certmgr) || exit 0

# openssl as cert-manager: a CA and a serving certificate for the Certificate's names (plus
# 127.0.0.1, the address the API server calls here). issue NAME writes NAME.crt/NAME.key.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cert-manager-test-ca \
	-keyout "$work/ca.key" -out "$work/ca.crt" >/dev/null 2>&1
issue() {
	local sans="IP:127.0.0.1" d
	for d in ${dns:-kubeflow-trainer-controller-manager.kubeflow-system.svc}; do sans="$sans,DNS:$d"; done
	openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$work/$1.key" -out "$work/$1.csr" >/dev/null 2>&1 &&
		openssl x509 -req -in "$work/$1.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
			-extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$sans") \
			-out "$work/$1.crt" >/dev/null 2>&1
}
put() { # the kubelet's part: the Secret's files replaced
	local d="$STATE/controllers/main/tmp/k8s-webhook-server/serving-certs"
	cp "$work/$1.key" "$d/.tls.key" && mv "$d/.tls.key" "$d/tls.key" &&
		cp "$work/$1.crt" "$d/.tls.crt" && mv "$d/.tls.crt" "$d/tls.crt"
}
served() { openssl s_client -connect "127.0.0.1:$CTRL_WEBHOOK_main" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint 2>/dev/null; }
want() { openssl x509 -in "$work/$1.crt" -noout -fingerprint; }

issue first && issue second || {
	fail "cert-manager certificates served $tag" "openssl could not issue the certificates"
	exit 0
}
ctrl_start main || {
	fail "cert-manager certificates served $tag" "the controller did not start"
	exit 0
}
name="cert-manager certificates: served, and the API server reaches the webhooks with their CA $tag"
put first
if wait_for 20 sh -c "[ \"\$(openssl s_client -connect 127.0.0.1:$CTRL_WEBHOOK_main </dev/null 2>/dev/null | openssl x509 -noout -fingerprint 2>/dev/null)\" = \"$(want first)\" ]" &&
	ctrl_webhooks_register main "$work/ca.crt" && wait_for 30 webhook_reached "$ns"; then
	pass "$name"
else
	fail "$name" "served $(served), want $(want first); probe: $(webhook_probe "$ns" | tail -1)"
	ctrl_log_tail main 10
fi
name="cert-manager certificates: a renewed certificate is served without a restart $tag"
pid=$(ctrl_pid main)
put second
if wait_for 20 sh -c "[ \"\$(openssl s_client -connect 127.0.0.1:$CTRL_WEBHOOK_main </dev/null 2>/dev/null | openssl x509 -noout -fingerprint 2>/dev/null)\" = \"$(want second)\" ]" &&
	webhook_reached "$ns" && [ "$(ctrl_pid main)" = "$pid" ] && ctrl_alive main; then
	pass "$name"
else
	fail "$name" "served $(served), want $(want second)"
fi
