#!/usr/bin/env bash
# Full mode: the TrainJob status server, as upstream v2.3.0 runs it behind the TrainJobStatus
# feature gate (cmd/trainer-controller-manager: statusserver.SetupServer; pkg/statusserver).
#   wiring     with the gate on, a TrainJob's trainer pods get KUBEFLOW_TRAINER_SERVER_URL/_CA_CERT/
#              _TOKEN and the projected volume kubeflow-trainer-token (a service-account token
#              whose audience is the TrainJob's status path, one hour; the CA from ConfigMap
#              <name>-tls-config, which holds ca.crt of the Secret kubeflow-trainer-webhook-cert);
#              plugins/trainjobstatus/trainjobstatus.go
#   report     a token the API server issued for that audience (kubectl create token) updates
#              status.trainerStatus by server-side apply under field manager "trainer-status"
#              (server.go: Status().Apply(..., client.FieldOwner("trainer-status"))) and the
#              request is echoed with 200
#   refused    each as server.go/middleware.go/auth.go answer it, a metav1.Status with code and
#              reason: no token, a token signed by another key, a token whose claims were altered
#              after signing, another TrainJob's audience, a token of another namespace's service
#              account -> 403 Forbidden; a Content-Length over 64 KiB -> 413
#              RequestEntityTooLarge "Payload too large"; GET on the status path, another path ->
#              404 NotFound "Not found"; a body that is not JSON -> 422 Invalid "Invalid payload";
#              a status the CRD refuses -> 422 with the API server's message; a TrainJob that does
#              not exist -> 404 "Train job not found"
#   sdk        the Kubeflow SDK's own update_trainjob_status() (kubeflow 0.5.0 from PyPI), given
#              the plugin's three variables with a real projected token and the CA, updates the
#              TrainJob through the server
# Ours only: upstream's status server reads its certificate from the fixed path
# /tmp/k8s-webhook-server/serving-certs (pkg/util/cert: certDir), which one test on a shared
# machine cannot own.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "status server $tag" "$reason"
	exit 0
fi
if [ "$(ctrl_flavour)" = upstream ]; then
	skip "status server $tag" "upstream reads its serving certificate from the machine-wide /tmp/k8s-webhook-server/serving-certs"
	exit 0
fi
ns=$(new_namespace status) && ns2=$(new_namespace status-other) || {
	fail "status server $tag" "cannot create the namespaces"
	exit 0
}
work=$(mktemp -d)
secret_made=
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" "$ns2" --wait=false >/dev/null 2>&1
	[ -n "$secret_made" ] && kubectl -n kubeflow-system delete secret kubeflow-trainer-webhook-cert >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }

status_server_certs "$work" && secret_made=$STATUS_SECRET_MADE

sp=$(free_port)
KFT_CTRL_EXTRA_CONFIG=$(status_server_config "$sp")
export KFT_CTRL_EXTRA_CONFIG
if ! ctrl_start st; then
	fail "status server $tag: start" "the controller did not come up"
	exit 0
fi
base="https://127.0.0.1:$sp"
if status_server_serve st "$work" "$base"; then
	pass "status server $tag: serves TLS with the webhook certificate once it appears"
else
	fail "status server $tag: serves TLS" "no TLS answer on $base" "$(ctrl_log_tail st)"
	exit 0
fi

path() { status_path "$@"; }
aud() { status_audience "$@"; }
post() { status_post "$work" "$base" "$@"; }
# expect NAME WANT_CODE WANT_REASON "CODE BODY": checks the code and the Status reason.
expect() {
	local name=$1 code=$2 why=$3 got=$4 gcode greason
	gcode=${got%% *}
	greason=$(printf '%s' "${got#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("reason",""))' 2>/dev/null)
	if [ "$gcode" = "$code" ] && [ "$greason" = "$why" ]; then
		pass "status server $tag: $name -> $code $why"
	else
		fail "status server $tag: $name" "want $code $why, got: $got" "$(cat "$work/curl.err" 2>/dev/null)"
	fi
}

# --- wiring ----------------------------------------------------------------------------------------
install_builtin_runtimes
trainjob_yaml job-a true | k apply -f - >/dev/null
trainjob_yaml job-b true | k apply -f - >/dev/null
if wait_slowly 60 k get configmap job-a-tls-config && wait_slowly 60 k get jobset job-a; then
	got_ca=$(k get configmap job-a-tls-config -o jsonpath='{.data.ca\.crt}')
	js=$(k get jobset job-a -o json)
	verdict=$(printf '%s' "$js" | python3 -c '
import json, sys
js = json.load(sys.stdin)
ns, want_aud = sys.argv[1], sys.argv[2]
for rj in js["spec"]["replicatedJobs"]:
    if rj["name"] != "node":
        continue
    pod = rj["template"]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for c in pod["containers"] for e in c.get("env", [])}
    vol = [v for v in pod.get("volumes", []) if v["name"] == "kubeflow-trainer-token"]
    src = vol[0]["projected"]["sources"] if vol else []
    tok = [s["serviceAccountToken"] for s in src if "serviceAccountToken" in s]
    cm = [s["configMap"] for s in src if "configMap" in s]
    ok = (env.get("KUBEFLOW_TRAINER_SERVER_URL") == "https://kubeflow-trainer-controller-manager.kubeflow-system.svc:10443/apis/" + want_aud
          and env.get("KUBEFLOW_TRAINER_SERVER_CA_CERT") == "/var/run/secrets/kubeflow/trainer/ca.crt"
          and env.get("KUBEFLOW_TRAINER_SERVER_TOKEN") == "/var/run/secrets/kubeflow/trainer/token"
          and tok and tok[0] == {"audience": want_aud, "expirationSeconds": 3600, "path": "token"}
          and cm and cm[0]["name"] == "job-a-tls-config")
    print("ok" if ok else "env=%s volume=%s" % (env, vol))
' "$ns" "$(aud "$ns" job-a)")
	if [ "$verdict" = ok ] && [ "$got_ca" = "$(cat "$work/ca.crt")" ]; then
		pass "status server $tag: wiring: env, projected token volume, CA ConfigMap from the webhook Secret"
	else
		fail "status server $tag: wiring" "$verdict" "ca.crt matches: $([ "$got_ca" = "$(cat "$work/ca.crt")" ] && echo yes || echo no)"
	fi
else
	fail "status server $tag: wiring" "no ConfigMap job-a-tls-config / JobSet job-a" "$(ctrl_log_tail st)"
fi

# --- a torchtune trainer gets the status logger (kftrainer; upstream has no such wiring) ----------
if [ "$(ctrl_flavour)" = ours ]; then
	k apply -f - >/dev/null <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune-a}
spec:
  suspend: true
  runtimeRef: {name: torchtune-llama3.2-1b}
  trainer: {command: [tune, run]}
EOF
	if wait_slowly 60 k get configmap tune-a-torchtune-status && wait_slowly 60 k get jobset tune-a; then
		verdict=$(k get jobset tune-a -o json | python3 -c '
import json, sys
js = json.load(sys.stdin)
for rj in js["spec"]["replicatedJobs"]:
    if rj["name"] != "node":
        continue
    pod = rj["template"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v.get("configMap", {}).get("name") for v in pod.get("volumes", [])}
    ok = ("metric_logger._component_=kubeflow_trainer_torchtune.StatusLogger" in c["command"]
          and env.get("PYTHONPATH") == "/var/run/kftrainer/torchtune"
          and mounts.get("/var/run/kftrainer/torchtune") == "kftrainer-torchtune-status"
          and vols.get("kftrainer-torchtune-status") == "tune-a-torchtune-status")
    print("ok" if ok else "command=%s env=%s mounts=%s volumes=%s" % (c["command"], env, mounts, vols))
')
		module=$(k get configmap tune-a-torchtune-status -o jsonpath='{.data.kubeflow_trainer_torchtune\.py}')
		if [ "$verdict" = ok ] && [ "$module" = "$(cat "$KFT_REPO_ROOT/src/plugins/torchtune_status.py")" ]; then
			pass "status server $tag: a torchtune trainer gets the status logger (ConfigMap, mount, PYTHONPATH, metric_logger)"
		else
			fail "status server $tag: torchtune status logger" "$verdict" \
				"module matches src/plugins/torchtune_status.py: $([ "$module" = "$(cat "$KFT_REPO_ROOT/src/plugins/torchtune_status.py")" ] && echo yes || echo no)"
		fi
	else
		fail "status server $tag: torchtune status logger" "no ConfigMap tune-a-torchtune-status / JobSet tune-a" "$(ctrl_log_tail st)"
	fi
else
	skip "status server $tag: torchtune status logger" "kftrainer's own; upstream v2.3.0 adds none"
fi

# --- a valid report ------------------------------------------------------------------------------
tok_a=$(k create token default --audience "$(aud "$ns" job-a)")
tok_b=$(k create token default --audience "$(aud "$ns" job-b)")
tok_other_ns=$(kubectl -n "$ns2" create token default --audience "$(aud "$ns" job-a)")
report='{"trainerStatus":{"progressPercentage":42,"estimatedRemainingSeconds":120,"metrics":[{"name":"loss","value":"0.25"}],"lastUpdatedTime":"2026-01-02T03:04:05.678Z"}}'
got=$(post "$(path "$ns" job-a)" "$tok_a" "$report")
want_echo='{"trainerStatus":{"progressPercentage":42,"estimatedRemainingSeconds":120,"metrics":[{"name":"loss","value":"0.25"}],"lastUpdatedTime":"2026-01-02T03:04:05Z"}}'
ts=$(k get trainjob job-a -o jsonpath='{.status.trainerStatus}')
mgr=$(k get trainjob job-a --show-managed-fields -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(",".join("%s/%s/%s" % (m["manager"], m["operation"], m.get("subresource", "")) for m in o["metadata"]["managedFields"] if m["manager"] == "trainer-status"))')
if [ "$got" = "200 $want_echo" ] &&
	[ "$(printf '%s' "$ts" | python3 -c 'import json,sys; t=json.load(sys.stdin); print(t["progressPercentage"], t["estimatedRemainingSeconds"], t["metrics"], t["lastUpdatedTime"])')" = "42 120 [{'name': 'loss', 'value': '0.25'}] 2026-01-02T03:04:05Z" ] &&
	[ "$mgr" = "trainer-status/Apply/status" ]; then
	pass "status server $tag: a projected token for the TrainJob's audience updates status.trainerStatus (apply as trainer-status)"
else
	fail "status server $tag: report" "answer: $got" "trainerStatus: $ts" "managers: $mgr" "$(ctrl_log_tail st)"
fi

# Issue 24.2: 70 idle sockets held open on the status server do not keep a token holder out.
python3 "$KFT_REPO_ROOT/tests/local/flood.py" "127.0.0.1:$sp" 70 --hold >"$work/idle" &
idle=$!
if wait_for 30 grep -q ready "$work/idle"; then
	got=$(post "$(path "$ns" job-a)" "$tok_a" "$report" --max-time 10)
	[ "${got%% *}" = 200 ] && pass "status server $tag: 70 idle sockets open: the TrainJob's report -> 200" ||
		fail "status server $tag: 70 idle sockets open" "answer: $got" "$(ctrl_log_tail st)"
else
	fail "status server $tag: 70 idle sockets open" "could not open 70 connections"
fi
kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null

# --- refusals ------------------------------------------------------------------------------------
small='{"trainerStatus":{"progressPercentage":1}}'
expect "no token" 403 Forbidden "$(post "$(path "$ns" job-a)" "" "$small")"
expect "another TrainJob's audience" 403 Forbidden "$(post "$(path "$ns" job-a)" "$tok_b" "$small")"
expect "a token of another namespace's service account" 403 Forbidden "$(post "$(path "$ns" job-a)" "$tok_other_ns" "$small")"
# The same header and claims signed with a key the issuer never had, and job-b's token with its
# audience rewritten to job-a's after signing.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/forger.key" 2>/dev/null
forged=$(python3 - "$tok_a" "$work/forger.key" <<'EOF'
import base64, subprocess, sys
tok, key = sys.argv[1], sys.argv[2]
h, p, _ = tok.split(".")
der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=(h + "." + p).encode(),
                     capture_output=True, check=True).stdout
# DER SEQUENCE { INTEGER r, INTEGER s } -> r || s, 32 bytes each
i = 2 if der[1] < 0x80 else 3
out = b""
for _ in range(2):
    n = der[i + 1]
    out += der[i + 2:i + 2 + n].lstrip(b"\0").rjust(32, b"\0")
    i += 2 + n
print(h + "." + p + "." + base64.urlsafe_b64encode(out).rstrip(b"=").decode())
EOF
)
tampered=$(python3 - "$tok_b" "$(aud "$ns" job-a)" <<'EOF'
import base64, json, sys
tok, aud = sys.argv[1], sys.argv[2]
h, p, s = tok.split(".")
claims = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
claims["aud"] = [aud]
p2 = base64.urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode()).rstrip(b"=").decode()
print(h + "." + p2 + "." + s)
EOF
)
expect "a token signed by another key" 403 Forbidden "$(post "$(path "$ns" job-a)" "$forged" "$small")"
expect "a token whose claims were altered" 403 Forbidden "$(post "$(path "$ns" job-a)" "$tampered" "$small")"
head -c 70000 /dev/zero | tr '\0' ' ' >"$work/big"
expect "a body over 64 KiB" 413 RequestEntityTooLarge "$(post "$(path "$ns" job-a)" "$tok_a" "@$work/big")"
expect "GET on the status path" 404 NotFound "$(post "$(path "$ns" job-a)" "$tok_a" "" -X GET)"
expect "another path" 404 NotFound "$(post "/apis/trainer.kubeflow.org/v1alpha1/namespaces/$ns/trainjobs/job-a" "$tok_a" "$small")"
expect "a body that is not JSON" 422 Invalid "$(post "$(path "$ns" job-a)" "$tok_a" 'progress=5')"
got=$(post "$(path "$ns" job-a)" "$tok_a" '{"trainerStatus":{"progressPercentage":101,"lastUpdatedTime":"2026-01-02T03:04:05Z"}}')
expect "a status the CRD refuses" 422 Invalid "$got"
case "$got" in
*'TrainJob.trainer.kubeflow.org \"job-a\" is invalid: status.trainerStatus.progressPercentage'*) pass "status server $tag: the API server's message is passed on" ;;
*) fail "status server $tag: the API server's message" "got: $got" ;;
esac
tok_gone=$(k create token default --audience "$(aud "$ns" no-such-job)")
expect "a TrainJob that does not exist" 404 NotFound "$(post "$(path "$ns" no-such-job)" "$tok_gone" "$small")"
if [ "$(k get trainjob job-a -o jsonpath='{.status.trainerStatus.progressPercentage}')" = 42 ]; then
	pass "status server $tag: no refused request changed the status"
else
	fail "status server $tag: refused requests" "progressPercentage is now $(k get trainjob job-a -o jsonpath='{.status.trainerStatus.progressPercentage}')"
fi

# --- the Kubeflow SDK's update_trainjob_status ---------------------------------------------------------
venv=$(sdk_venv 2>"$work/venv.err") || {
	fail "status server $tag: sdk" "$(cat "$work/venv.err")"
	exit 0
}
k create token default --audience "$(aud "$ns" job-b)" >"$work/token"
sdk=$(KUBEFLOW_TRAINER_SERVER_URL="$base$(path "$ns" job-b)" KUBEFLOW_TRAINER_SERVER_CA_CERT="$work/ca.crt" \
	KUBEFLOW_TRAINER_SERVER_TOKEN="$work/token" "$venv/bin/python" -c '
from kubeflow.trainer import update_trainjob_status
print(update_trainjob_status(progress_percent=77, estimated_remaining_seconds=9, metrics={"loss": 0.125, "step": 40}))' 2>&1)
ts=$(k get trainjob job-b -o jsonpath='{.status.trainerStatus.progressPercentage} {.status.trainerStatus.estimatedRemainingSeconds} {.status.trainerStatus.metrics}')
if [ "$sdk" = True ] && [ "$ts" = '77 9 [{"name":"loss","value":"0.125"},{"name":"step","value":"40"}]' ]; then
	pass "status server $tag: the Kubeflow SDK's update_trainjob_status() reports through the server"
else
	fail "status server $tag: sdk" "update_trainjob_status: $sdk" "trainerStatus: $ts" "$(ctrl_log_tail st)"
fi
