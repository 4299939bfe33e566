#!/usr/bin/env bash
# Full mode: our certificate management (certManagement.enable, upstream's default), as upstream
# v2.3.0 does it with open-policy-agent/cert-controller's rotator (pkg/util/cert/cert.go):
#   secret     the Secret kubeflow-system/kubeflow-trainer-webhook-cert gets ca.crt, ca.key,
#              tls.crt, tls.key; tls.crt is signed by ca.crt for
#              kubeflow-trainer-controller-manager.kubeflow-system.svc
#   files      tls.crt and tls.key written to the cert directory the webhook server reads
#   inject     the CA lands as caBundle in every webhook of validator.trainer.kubeflow.org and
#              defaulter.trainer.kubeflow.org, and the API server, trusting only it, reaches the
#              webhooks; a caBundle someone resets is injected again
#   rotate     a serving certificate close to expiry is renewed in the Secret and served without
#              a restart (test hooks: 30 s validity, renewed 15 s before expiry, checked every 2 s)
#   replicas   two replicas started together with no Secret share one CA and serve the same
#              certificate (create-if-absent, resourceVersion conflicts)
# Ours only: upstream's rotator writes /tmp/k8s-webhook-server/serving-certs, a path shared by
# every process of the machine, and signs for the Service name only, which a loopback URL cannot
# use, so upstream's certificate management is not exercised here (docs/cluster-tests.md).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
[ -z "$reason" ] && [ "$(ctrl_flavour)" = upstream ] && reason="upstream's rotator writes a machine-wide /tmp path and signs for the Service name only"
if [ -n "$reason" ]; then
	skip "controller certificates $tag" "$reason"
	exit 0
fi
SECRET=kubeflow-trainer-webhook-cert
DNS=kubeflow-trainer-controller-manager.kubeflow-system.svc
work=$(mktemp -d)
ns=$(new_namespace certs) || exit 0
trap 'ctrl_webhooks_unregister; ctrl_stop_all; kubectl -n kubeflow-system delete secret $SECRET --ignore-not-found >/dev/null 2>&1; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1; rm -rf "$work"' EXIT
kubectl -n kubeflow-system delete secret $SECRET --ignore-not-found >/dev/null 2>&1
export KFT_CTRL_MANAGED_CERTS=1 KFT_CTRL_CERT_MANAGEMENT=true
export KFT_CTRL_ENV="KFTRAINER_CERT_LOOPBACK=1 KFTRAINER_CERT_VALIDITY=30 KFTRAINER_CERT_LOOKAHEAD=15 KFTRAINER_CERT_CHECK_INTERVAL=2"

secret_key() { kubectl -n kubeflow-system get secret $SECRET -o "jsonpath={.data.${1//./\\.}}" 2>/dev/null | base64 -d; }
certdir() { echo "$STATE/controllers/$1/tmp/k8s-webhook-server/serving-certs"; }
served() { # the certificate the webhook server of controller $1 presents, as PEM
	local var=${1//-/_} port
	eval "port=\${CTRL_WEBHOOK_$var}"
	openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null | openssl x509 2>/dev/null
}
ready() { local var=${1//-/_}; eval "curl -fsS http://127.0.0.1:\${CTRL_HEALTH_$var}/readyz" >/dev/null 2>&1; }

ctrl_start main || {
	fail "controller certificates $tag" "the controller did not start"
	exit 0
}
wait_for 30 ready main || { fail "controller certificates: ready $tag" "never ready"; ctrl_log_tail main; }

# --- secret ---
name="certificates: the Secret holds a CA and a serving certificate for the Service $tag"
secret_key ca.crt >"$work/ca.crt"
secret_key tls.crt >"$work/tls.crt"
if [ -n "$(secret_key ca.key)" ] && [ -n "$(secret_key tls.key)" ] &&
	openssl verify -CAfile "$work/ca.crt" -verify_hostname "$DNS" "$work/tls.crt" >/dev/null 2>&1 &&
	openssl x509 -in "$work/ca.crt" -noout -subject | grep -q 'CN *= *kubeflow-trainer-ca'; then
	pass "$name"
else
	fail "$name" "$(openssl verify -CAfile "$work/ca.crt" -verify_hostname "$DNS" "$work/tls.crt" 2>&1 | tail -1)"
fi
name="certificates: written where the webhook server reads them $tag"
cmp -s "$work/tls.crt" "$(certdir main)/tls.crt" && [ "$(secret_key tls.key)" = "$(cat "$(certdir main)/tls.key")" ] &&
	pass "$name" || fail "$name" "the files differ from the Secret"

# --- inject ---
ctrl_webhooks_register main none
name="certificates: CA injected into both webhook configurations $tag"
want=$(base64 -w0 <"$work/ca.crt")
bundles() {
	kubectl get validatingwebhookconfiguration validator.trainer.kubeflow.org -o jsonpath='{range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}'
	kubectl get mutatingwebhookconfiguration defaulter.trainer.kubeflow.org -o jsonpath='{range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}'
}
# one caBundle per webhook the manifest registers (upstream's four, ours for OptimizationJobs)
webhooks=$(python3 -c 'import sys, yaml; print(sum(len(d["webhooks"]) for d in yaml.safe_load_all(open(sys.argv[1])) if d))' "$KFT_REPO_ROOT/manifests/controller/webhook.yaml")
injected() { [ "$(bundles | sort -u)" = "$(base64 -w0 <"$work/ca.crt")" ] && [ "$(bundles | wc -l)" = "$webhooks" ]; }
wait_for 20 injected && pass "$name" || fail "$name" "caBundles: $(bundles | cut -c1-20 | tr '\n' ' ') want ${want:0:20}"
name="certificates: the API server reaches the webhooks with the injected CA $tag"
wait_for 20 webhook_reached "$ns" && pass "$name" || fail "$name" "$(webhook_probe "$ns")"
name="certificates: a reset caBundle is injected again $tag"
kubectl patch validatingwebhookconfiguration validator.trainer.kubeflow.org --type=json \
	-p '[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"'"$(base64 -w0 <<<bogus)"'"}]' >/dev/null
wait_for 20 injected && pass "$name" || fail "$name" "not re-injected"

# --- rotate ---
name="certificates: renewed before expiry and served without a restart $tag"
rotated() { [ "$(secret_key tls.crt)" != "$(cat "$work/tls.crt")" ]; }
if wait_for 40 rotated; then
	secret_key tls.crt >"$work/tls2.crt"
	if wait_for 10 sh -c "[ \"\$(openssl s_client -connect 127.0.0.1:$CTRL_WEBHOOK_main </dev/null 2>/dev/null | openssl x509 2>/dev/null)\" = \"\$(openssl x509 -in $work/tls2.crt)\" ]" &&
		cmp -s "$work/ca.crt" <(secret_key ca.crt) && webhook_reached "$ns"; then
		pass "$name"
	else
		fail "$name" "the new certificate is not served, or the CA changed"
	fi
else
	fail "$name" "tls.crt never changed"
	ctrl_log_tail main
fi
ctrl_stop main

# --- replicas ---
name="certificates: two replicas share one Secret $tag"
kubectl -n kubeflow-system delete secret $SECRET >/dev/null 2>&1
export KFT_CTRL_ENV="KFTRAINER_CERT_LOOPBACK=1"
ctrl_start one &
first=$!
ctrl_start two
wait "$first"
# ctrl_start in a subshell set no variables there: read the ports from the configuration
CTRL_WEBHOOK_one=$(sed -n 's/^  port: //p' "$STATE/controllers/one/config.yaml")
CTRL_WEBHOOK_two=$(sed -n 's/^  port: //p' "$STATE/controllers/two/config.yaml")
sleep 2
c1=$(served one) c2=$(served two) s=$(secret_key tls.crt | openssl x509 2>/dev/null)
if [ -n "$s" ] && [ "$c1" = "$s" ] && [ "$c2" = "$s" ] && ctrl_alive one && ctrl_alive two; then
	pass "$name"
else
	fail "$name" "served one=${c1:27:20} two=${c2:27:20} secret=${s:27:20}"
	ctrl_log_tail one 8
	ctrl_log_tail two 8
fi
