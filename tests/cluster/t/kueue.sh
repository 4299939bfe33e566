# shellcheck shell=bash
# Sourced by the Kueue test (79-kueue.sh): start and stop Kueue's manager out-of-cluster against
# the tier's API server, as `up --full` runs the JobSet controller.
#
# Kueue v0.17.0 is built from its Go module (tests/cluster/tools/kueue, cached like the tier's
# other programs; the first build takes minutes) and started only by the test that needs it:
# its admission webhooks on TrainJobs would otherwise add a runtime patch to every TrainJob of
# every other test. kueue_start
#   - installs Kueue's CRDs from the module (config/components/crd/bases; they stay installed),
#   - runs `kueue` as tier process "kueue" (pid in $STATE/pids, so `down` stops it too) with the
#     Configuration $STATE/kueue/config.yaml: namespace kueue-system, leader election and
#     internal certificate management off, health and metrics on free loopback ports, the
#     webhook server on 127.0.0.1 with a certificate the tier's CA issued for 127.0.0.1, and
#     one integration, "trainer.kubeflow.org/trainjob" (VisibilityOnDemand off: that feature
#     would serve an aggregated API on a fixed port),
#   - registers the webhooks of the module's config/components/webhook/manifests.yaml for
#     kueue.x-k8s.io and trainer.kubeflow.org objects (names, paths, rules, failurePolicy as
#     Kueue's) under Kueue's installed names, kueue-{mutating,validating}-webhook-configuration,
#     each called by a loopback URL with the tier's CA as caBundle.
# kueue_stop removes those webhook configurations and stops the process; a test calls it from
# its EXIT trap.
#
# One detail of running it out-of-cluster: with internal certificate management off, Kueue's
# main reads the metrics server's certificate from the fixed path /etc/kueue/metrics/certs (where
# its Deployment mounts a Secret) and exits when it is missing. Rather than write to this
# machine's /etc, Kueue runs in a mount namespace of its own (unshare -m; -r added when not root)
# whose /etc is an overlay of the real one with that one directory added on a tmpfs; nothing
# outside that process sees it, and it goes away with the process.

KUEUE_NAMESPACE=kueue-system
KUEUE_WEBHOOK_CONFIGS="mutatingwebhookconfiguration/kueue-mutating-webhook-configuration validatingwebhookconfiguration/kueue-validating-webhook-configuration"

# Kueue's module source (CRDs, webhook manifests), or nothing.
kueue_module_dir() { module_dir "$(tool_pin kueue)"; }

# Why Kueue cannot run here, or nothing. Does not build it: kueue_build does.
kueue_unavailable_reason() {
	if [ "$(cluster_mode)" != full ]; then
		echo "needs tests/cluster/up --full"
		return
	fi
	if ! command -v unshare >/dev/null 2>&1; then
		echo "unshare (util-linux) is missing"
		return
	fi
	kueue_ns_cmd ""
	if ! "${KUEUE_NS_CMD[@]}" test -d /etc/kueue/metrics/certs; then
		echo "cannot make a mount namespace with an overlay /etc (unshare -m; as non-root this needs user namespaces)"
		return
	fi
}

# Build Kueue (cached: the first build takes minutes, progress on stderr) and find its module
# source. Fails, saying why on stderr, when either cannot be had.
kueue_build() {
	build_tool kueue >&2 || return 1
	[ -d "$(kueue_module_dir)/config/components/crd/bases" ] || {
		echo "cannot find $(tool_pin kueue)'s source (its CRDs) in the Go module cache" >&2
		return 1
	}
}

# kueue_ns_cmd CERT_DIR: sets KUEUE_NS_CMD to a command prefix that runs the command after it in
# a private mount namespace whose /etc has kueue/metrics/certs/tls.{crt,key} copied from CERT_DIR
# (none when empty). The prefix exec's the command, so a pid recorded for it is the command's.
kueue_ns_cmd() {
	local flags=(-m --propagation private) tmp="$STATE/kueue-etc"
	[ "$(id -u)" = 0 ] || flags=(-r "${flags[@]}")
	mkdir -p "$tmp"
	KUEUE_NS_CMD=(unshare "${flags[@]}" sh -c '
		set -e
		mount -t tmpfs -o size=1m,mode=700 kft-kueue-etc "$1"
		mkdir -p "$1/upper/kueue/metrics/certs" "$1/work"
		[ -z "$2" ] || cp "$2/tls.crt" "$2/tls.key" "$1/upper/kueue/metrics/certs/"
		mount -t overlay kft-kueue-etc -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
		shift 2
		exec "$@"' kueue-ns "$tmp" "$1")
}

# Start Kueue and wait until its webhooks answer. Sets KUEUE_HEALTH (port). Returns 1, with the
# log's tail on stderr, when it does not come up within 60 s.
kueue_start() {
	local bin mod dir hp mp wp _
	bin="$(tool_bin_dir kueue)/kueue"
	mod=$(kueue_module_dir)
	[ -x "$bin" ] && [ -d "$mod/config/components/crd/bases" ] || return 1
	dir="$STATE/kueue"
	rm -rf "$dir"
	mkdir -p "$dir/certs"
	kubectl apply --server-side --force-conflicts -f "$mod/config/components/crd/bases" >/dev/null &&
		kubectl wait --for condition=Established --timeout 60s \
			-f "$mod/config/components/crd/bases" >/dev/null || return 1
	kubectl get namespace "$KUEUE_NAMESPACE" >/dev/null 2>&1 ||
		kubectl create namespace "$KUEUE_NAMESPACE" >/dev/null || return 1
	issue kueue-webhook "/CN=kueue-webhook" server "IP:127.0.0.1,DNS:localhost" || return 1
	cp "$STATE/certs/kueue-webhook.crt" "$dir/certs/tls.crt"
	cp "$STATE/certs/kueue-webhook.key" "$dir/certs/tls.key"
	for _ in 1 2 3; do
		hp=$(free_port) && mp=$(free_port) && wp=$(free_port) || return 1
		cat >"$dir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $KUEUE_NAMESPACE
health:
  healthProbeBindAddress: 127.0.0.1:$hp
metrics:
  bindAddress: 127.0.0.1:$mp
webhook:
  host: 127.0.0.1
  port: $wp
  certDir: $dir/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 50
  burst: 100
integrations:
  frameworks:
  - trainer.kubeflow.org/trainjob
featureGates:
  VisibilityOnDemand: false
EOF
		: >"$STATE/logs/kueue.log"
		kueue_ns_cmd "$dir/certs"
		start_proc kueue "${KUEUE_NS_CMD[@]}" "$bin" \
			--kubeconfig "$STATE/kubeconfig" --config "$dir/config.yaml" --zap-log-level=3
		wait_for 60 curl -fsS "http://127.0.0.1:$hp/readyz" && break
		proc_alive kueue || ! grep -q 'address already in use' "$STATE/logs/kueue.log" || continue
		echo "Kueue did not become ready on 127.0.0.1:$hp within 60 s" >&2
		kueue_log_tail
		return 1
	done
	KUEUE_HEALTH=$hp
	kueue_webhooks_register "$mod/config/components/webhook/manifests.yaml" "$wp" || return 1
	# Until its webhooks answer, a ResourceFlavor cannot even be dry-run created (failurePolicy
	# Fail).
	if ! wait_for 30 kubectl create --dry-run=server -f - <<'EOF'; then
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: kftrainer-webhook-probe}
EOF
		echo "Kueue's webhooks did not answer within 30 s" >&2
		kueue_log_tail
		return 1
	fi
}

# kueue_webhooks_register MANIFESTS PORT: Kueue's webhooks for kueue.x-k8s.io and
# trainer.kubeflow.org objects, called at https://127.0.0.1:PORT/PATH, the tier's CA as caBundle.
kueue_webhooks_register() {
	python3 - "$1" "$2" "$STATE/certs/ca.crt" <<'EOF' | kubectl apply -f - >/dev/null
import base64, sys, yaml
path, port, ca = sys.argv[1:4]
bundle = base64.b64encode(open(ca, "rb").read()).decode()
groups = {"kueue.x-k8s.io", "trainer.kubeflow.org"}
out = []
for d in yaml.safe_load_all(open(path)):
    if not d:
        continue
    hooks = [w for w in d["webhooks"]
             if all(set(r["apiGroups"]) <= groups for r in w["rules"])]
    for w in hooks:
        svc = w["clientConfig"].pop("service")
        w["clientConfig"]["url"] = "https://127.0.0.1:%s%s" % (port, svc["path"])
        w["clientConfig"]["caBundle"] = bundle
    d["metadata"] = {"name": "kueue-" + d["metadata"]["name"]}
    d["webhooks"] = hooks
    out.append(d)
print(yaml.safe_dump_all(out, sort_keys=False), end="")
EOF
}

# Remove Kueue's webhook configurations and stop it; for an EXIT trap. Kueue's CRDs, and the
# objects of them, stay.
kueue_stop() {
	local c
	for c in $KUEUE_WEBHOOK_CONFIGS; do
		kubectl delete "$c" --ignore-not-found >/dev/null 2>&1
	done
	[ -f "$STATE/pids/kueue.pid" ] && stop_proc "$STATE/pids/kueue.pid"
	rm -rf "$STATE/kueue-etc"
	return 0
}

kueue_log_tail() {
	echo "    --- last lines of $STATE/logs/kueue.log:" >&2
	tail -n "${1:-25}" "$STATE/logs/kueue.log" 2>/dev/null | cut -c1-400 | sed 's/^/    /' >&2
}
