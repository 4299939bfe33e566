# shellcheck shell=bash
# Sourced by the controller tests (8x-controller-*.sh): start, stop and inspect a TrainJob
# controller running out-of-cluster against the tier's API server.
#
# Every test takes the controller to run from KFT_CONTROLLER, so that the same checks run against
# upstream Kubeflow Trainer v2.3.0 first (what it does is the expectation) and then against ours:
#   KFT_CONTROLLER=ours       $KFT_BUILD_DIR/bin/kftrainer-controller-manager (the default;
#                             KFT_BUILD_DIR defaults to build/; KFT_CONTROLLER_BIN names any binary)
#   KFT_CONTROLLER=upstream   upstream's trainer-controller-manager, built from its Go module by
#                             tests/cluster/build --upstream (cached like the tier's other programs)
#
# Both get the same Configuration file (upstream's format): health and metrics on loopback ports,
# leader election on the Lease kubeflow-system/trainer.kubeflow.org when asked for, certificate
# management off. Both run their webhook server, so both get a self-signed certificate for
# 127.0.0.1 where controller-runtime looks for one ($TMPDIR/k8s-webhook-server/serving-certs);
# their webhooks are not registered with the API server unless a test calls
# ctrl_webhooks_register (91-controller-webhooks.sh), so otherwise both controllers see the same,
# unchecked objects. KFT_CTRL_MANAGED_CERTS=1 makes no certificate (certificate management's own);
# KFT_CTRL_ENV adds VAR=VALUE words to our controller's environment; KFT_CTRL_CERT_MANAGEMENT=true
# turns certificate management on.
# Ours also gets the bind addresses and --leader-elect as flags, which it documents.
# KFT_CTRL_EXTRA_CONFIG, when set, is appended to the Configuration (top-level YAML keys).
# KFT_CTRL_LOG_LEVEL sets both controllers' --zap-log-level (default debug; 2 adds the V(2) lines,
# "Reconciling TrainJob" among them).
#
# A controller is a tier process like the others: started with start_proc under the name
# ctrl-<name>, its pid file in $STATE/pids (so `down` stops it too), its log in
# $STATE/logs/ctrl-<name>.log.

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STATE=${STATE:-$(state_dir)}
KFT_CONTROLLER=${KFT_CONTROLLER:-ours}

# The controller's flavour: ours or upstream.
ctrl_flavour() {
	case "$KFT_CONTROLLER" in
	upstream) echo upstream ;;
	*) echo ours ;;
	esac
}

# The controller binary, or nothing (and a reason on stderr) when it is not available.
ctrl_binary() {
	local b
	case "$KFT_CONTROLLER" in
	ours)
		b=${KFT_CONTROLLER_BIN:-${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/bin/kftrainer-controller-manager}
		;;
	upstream)
		build_tool trainer >&2 || return 1
		b="$(tool_bin_dir trainer)/trainer-controller-manager"
		;;
	*)
		echo "KFT_CONTROLLER must be ours or upstream, not '$KFT_CONTROLLER'" >&2
		return 1
		;;
	esac
	if [ ! -x "$b" ]; then
		echo "no controller binary at $b" >&2
		return 1
	fi
	echo "$b"
}

# Why the controller tests cannot run here, or nothing. They report SKIP with this reason.
ctrl_unavailable_reason() {
	if [ "$(cluster_mode)" != full ]; then
		echo "needs tests/cluster/up --full"
		return
	fi
	local err
	err=$(ctrl_binary 2>&1 >/dev/null) || echo "${err:-the controller is not available}"
}

# The test name suffix saying which controller ran, e.g. "[upstream]".
ctrl_tag() { echo "[$(ctrl_flavour)]"; }

# A self-signed serving certificate for 127.0.0.1 for the webhook server, which will not start
# without one (certManagement off); it is also the CA bundle ctrl_webhooks_register gives the API
# server.
ctrl_webhook_cert() {
	local d=$1/tmp/k8s-webhook-server/serving-certs
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$d/tls.key" -out "$d/tls.crt" >/dev/null 2>&1
}

# ctrl_start NAME [--leader-elect] [--kubeconfig FILE] [--qps N --burst N]
# Start a controller and wait until its health endpoint answers. Sets CTRL_HEALTH_<NAME> and
# CTRL_METRICS_<NAME> (ports; NAME with - replaced by _). Fails (after printing the log's tail on
# stderr) when it does not come up within 60 s.
ctrl_start() {
	local name=$1 le=false kcfg="$STATE/kubeconfig" qps=50 burst=100 bin dir hp mp wp var
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--leader-elect) le=true ;;
		--kubeconfig) kcfg=$2 && shift ;;
		--qps) qps=$2 && shift ;;
		--burst) burst=$2 && shift ;;
		*) echo "ctrl_start: unknown option $1" >&2 && return 1 ;;
		esac
		shift
	done
	bin=$(ctrl_binary) || return 1
	dir="$STATE/controllers/$name"
	rm -rf "$dir"
	mkdir -p "$dir/tmp"
	kubectl get namespace kubeflow-system >/dev/null 2>&1 ||
		kubectl create namespace kubeflow-system >/dev/null 2>&1 || true
	hp=$(free_port) && mp=$(free_port) && wp=$(free_port) || return 1
	cat >"$dir/config.yaml" <<EOF
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:$hp
metrics:
  bindAddress: 127.0.0.1:$mp
  secureServing: false
webhook:
  host: 127.0.0.1
  port: $wp
leaderElection:
  leaderElect: $le
  resourceName: trainer.kubeflow.org
  resourceNamespace: kubeflow-system
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
certManagement:
  enable: ${KFT_CTRL_CERT_MANAGEMENT:-false}
clientConnection:
  qps: $qps
  burst: $burst
${KFT_CTRL_EXTRA_CONFIG:-}
EOF
	: >"$STATE/logs/ctrl-$name.log"
	[ -n "${KFT_CTRL_MANAGED_CERTS:-}" ] || ctrl_webhook_cert "$dir"
	if [ "$(ctrl_flavour)" = upstream ]; then
		start_proc "ctrl-$name" env TMPDIR="$dir/tmp" "$bin" --kubeconfig "$kcfg" \
			--config "$dir/config.yaml" --zap-log-level="${KFT_CTRL_LOG_LEVEL:-debug}"
	else
		local extra=()
		[ "$le" = true ] && extra+=(--leader-elect)
		# shellcheck disable=SC2086 # KFT_CTRL_ENV is words
		start_proc "ctrl-$name" env TMPDIR="$dir/tmp" ${KFT_CTRL_ENV:-} "$bin" --kubeconfig "$kcfg" \
			--config "$dir/config.yaml" --metrics-bind-address "127.0.0.1:$mp" \
			--health-probe-bind-address "127.0.0.1:$hp" --zap-log-level "${KFT_CTRL_LOG_LEVEL:-debug}" "${extra[@]}"
	fi
	var=${name//-/_}
	printf -v "CTRL_HEALTH_$var" '%s' "$hp"
	printf -v "CTRL_METRICS_$var" '%s' "$mp"
	printf -v "CTRL_WEBHOOK_$var" '%s' "$wp"
	if ! wait_for 60 curl -fsS "http://127.0.0.1:$hp/healthz"; then
		echo "controller $name did not answer /healthz on 127.0.0.1:$hp within 60 s" >&2
		ctrl_log_tail "$name"
		return 1
	fi
}

ctrl_pid() { cat "$STATE/pids/ctrl-$1.pid" 2>/dev/null; }

# ctrl_webhooks_register NAME [CA_FILE]
# Registers upstream's webhook configurations (manifests/controller/webhook.yaml: the same names,
# paths, rules, failurePolicy, sideEffects and objectSelectors) with the API server, each calling
# controller NAME by a loopback URL (clientConfig.url https://127.0.0.1:PORT/PATH instead of the
# Service) with CA_FILE as caBundle (default: the controller's self-signed certificate; "none"
# leaves caBundle out, for certificate management to inject).
ctrl_webhooks_register() {
	local name=$1 ca=${2:-} var port
	var=${name//-/_}
	eval "port=\${CTRL_WEBHOOK_$var:-}"
	[ -n "$port" ] || return 1
	[ -n "$ca" ] || ca="$STATE/controllers/$name/tmp/k8s-webhook-server/serving-certs/tls.crt"
	python3 - "$KFT_REPO_ROOT/manifests/controller/webhook.yaml" "$port" "$ca" <<'EOF' |
import base64, sys, yaml
path, port, ca = sys.argv[1:4]
bundle = None if ca == "none" else base64.b64encode(open(ca, "rb").read()).decode()
docs = [d for d in yaml.safe_load_all(open(path)) if d]
for d in docs:
    for w in d["webhooks"]:
        svc = w["clientConfig"].pop("service")
        w["clientConfig"]["url"] = "https://127.0.0.1:%s%s" % (port, svc["path"])
        if bundle:
            w["clientConfig"]["caBundle"] = bundle
print(yaml.safe_dump_all(docs, sort_keys=False), end="")
EOF
		kubectl apply -f - >/dev/null
}

# Removes the webhook configurations (the other tests expect none); for an EXIT trap.
ctrl_webhooks_unregister() {
	kubectl delete validatingwebhookconfiguration validator.trainer.kubeflow.org \
		--ignore-not-found >/dev/null 2>&1
	kubectl delete mutatingwebhookconfiguration defaulter.trainer.kubeflow.org \
		--ignore-not-found >/dev/null 2>&1
	return 0
}

ctrl_alive() { proc_alive "ctrl-$1"; }
ctrl_logfile() { echo "$STATE/logs/ctrl-$1.log"; }

# Stop a controller (SIGTERM, then SIGKILL). Nothing to do when it is not running.
ctrl_stop() {
	[ -f "$STATE/pids/ctrl-$1.pid" ] && stop_proc "$STATE/pids/ctrl-$1.pid"
	return 0
}

# Kill a controller at once, as a crashed node would (no lease release, no clean-up).
ctrl_kill9() {
	local pid
	pid=$(ctrl_pid "$1")
	if pid_is_ours "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		# Reap it when it is our child, so bash does not report the kill on stderr.
		wait "$pid" 2>/dev/null
		for _ in $(seq 1 50); do
			pid_is_ours "$pid" || break
			sleep 0.1
		done
	fi
	rm -f "$STATE/pids/ctrl-$1.pid"
}

# The last lines of a controller's log, indented on stderr (diagnostics for a FAIL).
ctrl_log_tail() {
	echo "    --- last lines of $(ctrl_logfile "$1"):" >&2
	tail -n "${2:-25}" "$(ctrl_logfile "$1")" 2>/dev/null | cut -c1-400 | sed 's/^/    /' >&2
}

# Stop every controller a test started; for its EXIT trap.
ctrl_stop_all() {
	local f
	for f in "$STATE"/pids/ctrl-*.pid; do
		[ -f "$f" ] && stop_proc "$f"
	done
	return 0
}

# A proxy in front of the API server for the fault tests: starts `python3 SCRIPT ARGS...
# API_PORT PORT_FILE` as tier process NAME (log $STATE/logs/NAME.log, pid $STATE/pids/NAME.pid),
# waits for it to write the port it listens on, and writes a kubeconfig that goes through it to
# $STATE/controllers/NAME.kubeconfig. Returns 1 when it does not start (see its log).
start_api_proxy() { # start_api_proxy NAME SCRIPT [ARGS...]
	local name=$1 script=$2 pf api_port
	shift 2
	mkdir -p "$STATE/controllers"
	pf="$STATE/controllers/$name.port"
	rm -f "$pf"
	: >"$STATE/logs/$name.log"
	api_port=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}' | sed 's/.*://')
	start_proc "$name" python3 "$KFT_CLUSTER_DIR/t/$script" "$@" "$api_port" "$pf"
	wait_for 10 test -s "$pf" || return 1
	kubectl config view --raw |
		sed "s|server: https://127.0.0.1:$api_port|server: https://127.0.0.1:$(cat "$pf")|" \
			>"$STATE/controllers/$name.kubeconfig"
	chmod 600 "$STATE/controllers/$name.kubeconfig"
}

# ---- the TrainJob status server (TrainJobStatus gate), as trainer pods reach it ----------------

# status_server_certs WORK: a CA and the serving certificate it signs in WORK (ca.crt, tls.crt,
# tls.key), as the webhook's cert rotator makes them: for the Service's DNS name, plus 127.0.0.1
# where tests reach the out-of-cluster controller; stored as the Secret
# kubeflow-trainer-webhook-cert unless one exists (then its files are used).
# STATUS_SECRET_MADE=1 when this made the Secret (the caller deletes it).
status_server_certs() {
	local w=$1
	STATUS_SECRET_MADE=
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=kubeflow-trainer-ca \
		-keyout "$w/ca.key" -out "$w/ca.crt" >/dev/null 2>&1
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kubeflow-trainer-controller-manager.kubeflow-system.svc \
		-keyout "$w/tls.key" -out "$w/tls.csr" >/dev/null 2>&1
	printf 'subjectAltName=DNS:kubeflow-trainer-controller-manager.kubeflow-system.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$w/ext"
	openssl x509 -req -in "$w/tls.csr" -CA "$w/ca.crt" -CAkey "$w/ca.key" -CAcreateserial -days 1 \
		-extfile "$w/ext" -out "$w/tls.crt" >/dev/null 2>&1
	if ! kubectl -n kubeflow-system get secret kubeflow-trainer-webhook-cert >/dev/null 2>&1; then
		kubectl get namespace kubeflow-system >/dev/null 2>&1 || kubectl create namespace kubeflow-system >/dev/null
		kubectl -n kubeflow-system create secret generic kubeflow-trainer-webhook-cert \
			--from-file=ca.crt="$w/ca.crt" --from-file=tls.crt="$w/tls.crt" --from-file=tls.key="$w/tls.key" >/dev/null &&
			STATUS_SECRET_MADE=1
	else
		kubectl -n kubeflow-system get secret kubeflow-trainer-webhook-cert -o jsonpath='{.data.ca\.crt}' | base64 -d >"$w/ca.crt"
		kubectl -n kubeflow-system get secret kubeflow-trainer-webhook-cert -o jsonpath='{.data.tls\.crt}' | base64 -d >"$w/tls.crt"
		kubectl -n kubeflow-system get secret kubeflow-trainer-webhook-cert -o jsonpath='{.data.tls\.key}' | base64 -d >"$w/tls.key"
	fi
}

# status_server_config PORT: the Configuration lines (KFT_CTRL_EXTRA_CONFIG) that turn the
# TrainJobStatus gate on and serve the status server on PORT.
status_server_config() {
	printf 'featureGates:\n  TrainJobStatus: true\nstatusServer:\n  port: %s\n  qps: 20\n  burst: 40\n' "$1"
}

# status_server_serve NAME WORK BASE: gives controller NAME the serving certificate of WORK and
# waits until BASE answers over TLS with it.
status_server_serve() {
	local certs="$STATE/controllers/$1/tmp/k8s-webhook-server/serving-certs"
	mkdir -p "$certs" && cp "$2/tls.crt" "$2/tls.key" "$certs/"
	wait_for 20 curl -sS --cacert "$2/ca.crt" -o /dev/null "$3/"
}

# The status path of TrainJob NS/NAME, and the audience of a token for it.
status_path() { echo "/apis/trainer.kubeflow.org/v1alpha1/namespaces/$1/trainjobs/$2/status"; }
status_audience() { echo "trainer.kubeflow.org/v1alpha1/namespaces/$1/trainjobs/$2/status"; }

# status_post WORK BASE PATH TOKEN BODY [curl args...] -> "CODE BODY" (body on one line), as a
# trainer pod posts a progress report.
status_post() {
	local w=$1 base=$2 p=$3 tok=$4 body=$5
	shift 5
	local hdr=()
	[ -n "$tok" ] && hdr=(-H "Authorization: Bearer $tok")
	curl -sS --cacert "$w/ca.crt" -o "$w/out" -w '%{http_code}' "${hdr[@]}" \
		-H 'Content-Type: application/json' --data-binary "$body" "$@" "$base$p" 2>"$w/curl.err"
	printf ' %s' "$(tr -d '\n' <"$w/out")"
}

# The built-in runtimes (manifests/runtimes, ClusterTrainingRuntimes) installed; idempotent.
install_builtin_runtimes() {
	kubectl apply --server-side --force-conflicts --field-manager kftrainer-tier \
		-k "$KFT_REPO_ROOT/manifests/runtimes" >/dev/null
}

# The Kubeflow SDK (kubeflow 0.5.0 from PyPI) in a venv of the build directory, made once and
# shared by the tests that call it as a notebook would. Prints the venv's path; fails, saying
# why with pip's last lines on stderr, when it cannot be made.
sdk_venv() {
	local venv=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/cluster-sdk-venv out
	if ! "$venv/bin/python" -c 'import kubeflow.trainer, kubeflow.optimizer' 2>/dev/null; then
		out=$(python3 -m venv "$venv" 2>&1 &&
			"$venv/bin/python" -m pip --disable-pip-version-check -q install 'kubeflow==0.5.0' 2>&1) || {
			echo "cannot make a venv with kubeflow==0.5.0: $(tail -5 <<<"$out")" >&2
			return 1
		}
	fi
	echo "$venv"
}

# Put every namespaced document of a YAML file into namespace $2 (runtimes and TrainJobs).
to_namespace() {
	python3 - "$1" "$2" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d.get("kind") != "ClusterTrainingRuntime":
        d.setdefault("metadata", {})["namespace"] = sys.argv[2]
print(yaml.safe_dump_all(docs, sort_keys=False), end="")
EOF
}

# render's List, owned by the TrainJob with uid $2, moved to namespace $3 for the dry run.
for_dry_run() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for o in doc["items"]:
    o["metadata"]["namespace"] = sys.argv[3]
    for r in o["metadata"].get("ownerReferences", []):
        r["uid"] = sys.argv[2]
print(json.dumps(doc))
EOF
}

# Everything the TrainJob $2 in namespace $1 controls among the kinds controllers make, as one
# List.
controlled_objects() {
	kubectl -n "$1" get jobsets.jobset.x-k8s.io,secrets,configmaps,podgroups.scheduling.x-k8s.io,podgroups.scheduling.volcano.sh \
		-o json 2>/dev/null | python3 -c '
import json, sys
name = sys.argv[1]
items = [o for o in json.load(sys.stdin).get("items", [])
         if any(r.get("kind") == "TrainJob" and r.get("name") == name and r.get("controller")
                for r in o["metadata"].get("ownerReferences", []))]
print(json.dumps({"kind": "List", "items": items}))
' "$2"
}

# objects_equal_render NAME NS SCRATCH TJ JOBFILE WORK RENDER_ARGS... -- [OBJCOMPARE_ARGS...]
# One check, NAME: the objects the controller made for TrainJob TJ in NS (its runtime snapshot
# ConfigMap aside) equal `kftrainer render` of JOBFILE with RENDER_ARGS, given TJ's uid and
# defaulted by a server-side dry run in namespace SCRATCH (so the API server and JobSet's webhook
# default them as they did the controller's), field for field as objcompare.py compares them.
# WORK is a path prefix for the files it writes. Returns non-zero when it failed.
objects_equal_render() {
	local name=$1 ns=$2 scratch=$3 tj=$4 job=$5 work=$6
	shift 6
	local rargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do rargs+=("$1") && shift; done
	[ $# -gt 0 ] && shift
	cargs=("$@")
	local kft=${KFTRAINER:-${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/bin/kftrainer} uid want out
	if ! "$kft" render -f "$job" "${rargs[@]}" -o json >"$work.render.json" 2>"$work.err"; then
		fail "$name" "kftrainer render failed" "$(cat "$work.err")"
		return 1
	fi
	uid=$(kubectl -n "$ns" get trainjob "$tj" -o jsonpath='{.metadata.uid}')
	for_dry_run "$work.render.json" "$uid" "$scratch" >"$work.dry.json"
	if ! kubectl create --dry-run=server -o json -f "$work.dry.json" >"$work.expected.json" 2>"$work.err"; then
		fail "$name" "the API server refused render's objects" "$(cat "$work.err")"
		return 1
	fi
	# kubectl prints one JSON document per object; make them one List.
	python3 -c '
import json, sys
text, dec, items, pos = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while text[pos:].strip():
    pos += len(text[pos:]) - len(text[pos:].lstrip())
    doc, pos = dec.raw_decode(text, pos)
    items.extend(doc["items"] if doc.get("kind") == "List" else [doc])
json.dump({"kind": "List", "items": items}, open(sys.argv[1], "w"))' "$work.expected.json"
	want=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$work.expected.json")
	_made() {
		[ "$(controlled_objects "$ns" "$tj" | python3 -c 'import json,sys; print(len([o for o in json.load(sys.stdin)["items"] if not o["metadata"]["name"].endswith("-runtime-snapshot")]))')" -ge "$want" ]
	}
	if ! wait_slowly 60 _made; then
		fail "$name" "the controller did not make the $want objects within 60 s" "$(kubectl -n "$ns" get trainjob "$tj" -o yaml 2>&1 | sed -n '/^status:/,$p')"
		trainjob_events "$ns" "$tj" | sed 's/^/    /' >&2
		return 1
	fi
	sleep 1 # a reconcile in flight could still be changing them
	controlled_objects "$ns" "$tj" | python3 -c '
import json, sys
d = json.load(sys.stdin)
d["items"] = [o for o in d["items"] if not o["metadata"]["name"].endswith("-runtime-snapshot")]
print(json.dumps(d))' >"$work.actual.json"
	if out=$(python3 "$KFT_CLUSTER_DIR/t/objcompare.py" "${cargs[@]}" "$work.expected.json" "$work.actual.json"); then
		pass "$name ($want objects${cargs[*]:+, ${cargs[*]} not compared})"
	else
		fail "$name" "$(grep -c . <<<"$out") differences" "$(head -n 30 <<<"$out")"
		return 1
	fi
}

# A TrainJob, of the runtime TJ_RUNTIME ("KIND/NAME", default the built-in
# ClusterTrainingRuntime/torch-distributed).
# trainjob_yaml NAME [SUSPEND] [NUM_NODES] [POD_PATCH]
# POD_PATCH, when given, is YAML (flow style) merged into the node job's pod template through
# spec.runtimePatches: e.g. "{metadata: {labels: {kwok.kftrainer.test/outcome: fail}}}" (kwok
# fails the pod) or "{spec: {nodeSelector: {nowhere: 'true'}}}" (it is never scheduled).
trainjob_yaml() {
	local rt=${TJ_RUNTIME:-ClusterTrainingRuntime/torch-distributed}
	cat <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: $1
spec:
  suspend: ${2:-false}
  runtimeRef:
    kind: ${rt%%/*}
    name: ${rt#*/}
  trainer:
    image: example.invalid/train:1
    command: [torchrun, train.py]
    numNodes: ${3:-1}
    resourcesPerNode:
      requests: {cpu: "1", memory: 1Gi}
EOF
	if [ -n "${4:-}" ]; then
		cat <<EOF
  runtimePatches:
  - manager: kftrainer.test/cluster-tier
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template: $4
EOF
	fi
}

# A namespaced torch TrainingRuntime $2 in namespace $1 whose Job gives up after one failed pod
# (backoffLimit 0), so that a failing TrainJob fails in seconds, not after the Job controller's
# minutes of back-off. $3, when given, labels its pods kwok.kftrainer.test/outcome=$3 (fail, or
# hold: kwok keeps them Running until the label goes; tests/cluster/kwok/stages.yaml).
quick_runtime() {
	local pod_meta=
	[ -n "${3:-}" ] && pod_meta="
              metadata:
                labels:
                  kwok.kftrainer.test/outcome: $3"
	kubectl -n "$1" apply --server-side -f - >/dev/null <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: $2
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            backoffLimit: 0
            template:$pod_meta
              spec:
                containers:
                - name: node
                  image: example.invalid/torch:1
EOF
}

# wait_for, polling once a second: for checks that run several kubectl commands, which would
# otherwise take a core of this shared machine to themselves.
wait_slowly() {
	local secs=$1 end
	shift
	end=$((SECONDS + secs))
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 1
	done
	"$@" >/dev/null 2>&1
}

# A field of an object via jsonpath, or nothing when the object does not exist.
jp() { kubectl "$@" 2>/dev/null; }

# Wait up to $1 seconds for a TrainJob's condition $3 to be $4 (default True).
# wait_trainjob_condition SECS NS/NAME TYPE [STATUS]
wait_trainjob_condition() {
	local secs=$1 ns=${2%%/*} n=${2#*/} type=$3 want=${4:-True}
	wait_for "$secs" test_condition "$ns" "$n" "$type" "$want"
}
test_condition() {
	[ "$(kubectl -n "$1" get trainjob "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}" 2>/dev/null)" = "$4" ]
}

# How many objects of a kind in a namespace are controlled by the named TrainJob.
# owned_count NS KIND TRAINJOB
owned_count() {
	kubectl -n "$1" get "$2" -o json 2>/dev/null | python3 -c '
import json, sys
name = sys.argv[1]
items = json.load(sys.stdin).get("items", [])
print(sum(1 for o in items for r in o["metadata"].get("ownerReferences", [])
          if r.get("kind") == "TrainJob" and r.get("name") == name and r.get("controller")))
' "$3"
}

# One line per TrainJob of namespace $1: "NAME JOBSETS CONFIGMAPS SECRETS PODGROUPS", the number
# of each kind it controls (owner reference with controller=true), from one list per kind.
children_counts() {
	kubectl -n "$1" get trainjobs,jobsets.jobset.x-k8s.io,configmaps,secrets,podgroups.scheduling.x-k8s.io,podgroups.scheduling.volcano.sh \
		-o json 2>/dev/null | python3 -c '
import json, sys
items = json.load(sys.stdin).get("items", [])
kinds = ["JobSet", "ConfigMap", "Secret", "PodGroup"]
counts = {o["metadata"]["name"]: dict.fromkeys(kinds, 0) for o in items if o["kind"] == "TrainJob"}
for o in items:
    for r in o["metadata"].get("ownerReferences", []):
        if r.get("kind") == "TrainJob" and r.get("controller") and r.get("name") in counts and o["kind"] in kinds:
            counts[r["name"]][o["kind"]] += 1
for name in sorted(counts):
    print(name, *(counts[name][k] for k in kinds))
'
}

# TrainJobs of namespace $1 whose children are not "JOBSETS CONFIGMAPS SECRETS PODGROUPS" = $2
# (default "1 1 0 0": a JobSet and the runtime snapshot), as " NAME:J,C,S,P" words; nothing
# when all match.
children_mismatch() {
	children_counts "$1" | awk -v want="${2:-1 1 0 0}" '{ n = $1; $1 = ""; sub(/^ /, ""); if ($0 != want) { gsub(/ /, ","); printf " %s:%s", n, $0 } }'
}

# Events about a TrainJob (events.k8s.io ones included), one "TYPE REASON: message" per line.
trainjob_events() {
	kubectl -n "$1" get events --field-selector "involvedObject.kind=TrainJob,involvedObject.name=$2" \
		-o jsonpath='{range .items[*]}{.type}{" "}{.reason}{": "}{.message}{"\n"}{end}' 2>/dev/null
}

# A TrainJob naming a runtime that does not exist, dry-run in namespace $1: what the API server
# answers once it reaches the TrainJob webhook (its denial), or before (admitted, or an error).
webhook_probe() {
	kubectl -n "$1" apply --dry-run=server -f - 2>&1 <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: probe}
spec: {runtimeRef: {kind: TrainingRuntime, name: nosuch}}
EOF
}
# Whether the API server reaches the TrainJob webhook in namespace $1 (its denial comes back).
webhook_reached() { [[ "$(webhook_probe "$1")" == *'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request'* ]]; }
