#!/usr/bin/env bash
# Full mode: the deployment manifests (manifests/controller) install for real with
# `kubectl apply -k`, and the RBAC they grant is enough for the controller and no more.
#
#   apply       kubectl apply -k manifests/controller is accepted and makes every object
#   least       the service account may not do what the controller never does (delete Secrets,
#               touch pods, change TrainJob specs, read nodes, update what it only patches or
#               applies) and may do what it does
#   sufficient  the controller runs out-of-cluster as that service account (a token from
#               `kubectl create token`) with leader election, and does everything it does for
#               real: JobSets, MPI Secrets and ConfigMaps, both kinds of PodGroup, status,
#               suspension, events for a TrainJob whose runtime is missing, the deadline's JobSet
#               deletion, a leftover runtime finalizer removed; its log has no "forbidden";
#               ours also manages its webhook certificates as the service account (the Secret,
#               CA injection) and serves the webhooks every TrainJob here goes through
#
# The manifests register the admission webhooks by Service, which nothing serves on this
# cluster: they are re-registered by loopback URL to the controller under test (ours), or
# removed (upstream, whose rotator cannot serve a loopback URL; see 92-controller-certs.sh),
# and removed at the end with the certificate Secret.
# LimitRanges and RuntimeClasses are read as upstream v2.3.0 reads them (the coscheduling and
# Volcano plugins' WatchExtension requeues suspended TrainJobs on their changes), so the same
# manifests serve both controllers.
# Runs against KFT_CONTROLLER (ours or upstream; see controller.sh).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller manifests $tag" "$reason"
	exit 0
fi
SA=kubeflow-trainer-controller-manager
SYS=kubeflow-system
ns=$(new_namespace rbac) || {
	fail "controller manifests $tag" "cannot create a namespace"
	exit 0
}
work=$(mktemp -d "${TMPDIR:-/tmp}/kft-rbac.XXXXXX")
cleanup() {
	ctrl_stop_all
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	# The Deployment's pod would only be a kwok stand-in; keep the rest for later tests.
	kubectl -n "$SYS" delete deployment "$SA" --wait=false >/dev/null 2>&1
	ctrl_webhooks_unregister
	kubectl -n "$SYS" delete secret kubeflow-trainer-webhook-cert --ignore-not-found >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

# --- apply ---
name="kubectl apply -k manifests/controller"
if out=$(kubectl apply -k "$KFT_REPO_ROOT/manifests/controller" 2>&1); then
	missing=""
	for o in namespace/$SYS serviceaccount/$SA clusterrole/$SA clusterrolebinding/$SA \
		role/kubeflow-trainer-leader-election rolebinding/kubeflow-trainer-leader-election \
		deployment/$SA service/$SA configmap/kubeflow-trainer-config secret/kubeflow-trainer-webhook-cert \
		role/kubeflow-trainer-webhook-cert clusterrole/kubeflow-trainer-webhook-configurations \
		validatingwebhookconfiguration/validator.trainer.kubeflow.org \
		mutatingwebhookconfiguration/defaulter.trainer.kubeflow.org; do
		kubectl -n "$SYS" get "$o" >/dev/null 2>&1 || missing="$missing $o"
	done
	if [ -z "$missing" ]; then pass "$name ($(grep -c . <<<"$out") objects)"; else fail "$name" "missing:$missing"; fi
else
	fail "$name" "rejected" "$out"
	exit 0
fi
# Nothing serves the Service the configurations name: until the controller under test does, no
# TrainJob could be created.
ctrl_webhooks_unregister

# --- least privilege ---
# The model export (issue 22, docs/tracking.md) reads a completed TrainJob's JobSet whole once
# (get), applies its export Job (create, patch; never delete: it is owned by the TrainJob) and
# lists its pod for the termination message.
name="the service account has only what the controller uses"
as=(--as "system:serviceaccount:$SYS:$SA")
bad=""
for q in "delete secrets -n $ns" "create pods -n $ns" "update trainjobs -n $ns" "get nodes" \
	"delete trainjobs -n $ns" "create leases -n $ns" \
	"update leases/other -n $SYS" \
	"update validatingwebhookconfigurations/other" "create validatingwebhookconfigurations" \
	"update trainjobs --subresource=status -n $ns" "update jobsets.jobset.x-k8s.io -n $ns" \
	"update secrets -n $ns" "update configmaps -n $ns" "update trainingruntimes -n $ns" \
	"update events -n $ns" "get limitranges -n $ns" "patch leases/trainer.kubeflow.org -n $SYS" \
	"delete jobs.batch -n $ns" "get pods -n $ns"; do
	# shellcheck disable=SC2086
	[ "$(kubectl auth can-i $q "${as[@]}" 2>/dev/null)" = no ] || bad="$bad; may $q"
done
for q in "patch trainjobs --subresource=status -n $ns" "create jobsets.jobset.x-k8s.io -n $ns" "delete jobsets.jobset.x-k8s.io -n $ns" \
	"patch podgroups.scheduling.x-k8s.io -n $ns" "patch podgroups.scheduling.volcano.sh -n $ns" \
	"create events.events.k8s.io -n $ns" "patch trainingruntimes -n $ns" "patch clustertrainingruntimes" \
	"update leases/trainer.kubeflow.org -n $SYS" "create leases -n $SYS" \
	"create secrets -n $SYS" "update secrets/kubeflow-trainer-webhook-cert -n $SYS" \
	"update validatingwebhookconfigurations/validator.trainer.kubeflow.org" \
	"update mutatingwebhookconfigurations/defaulter.trainer.kubeflow.org" \
	"get priorityclasses.scheduling.k8s.io/x" \
	"get jobsets.jobset.x-k8s.io -n $ns" "create jobs.batch -n $ns" "patch jobs.batch -n $ns" \
	"list pods -n $ns"; do
	# shellcheck disable=SC2086
	[ "$(kubectl auth can-i $q "${as[@]}" 2>/dev/null)" = yes ] || bad="$bad; may not $q"
done
if [ -z "$bad" ]; then pass "$name"; else fail "$name" "${bad#; }"; fi

# --- sufficient ---
name="the controller works as the service account, nothing forbidden $tag"
token=$(kubectl -n "$SYS" create token "$SA" --duration 1h 2>&1) || {
	fail "$name" "kubectl create token failed" "$token"
	exit 0
}
server=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
cat >"$STATE/controllers-sa.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tier
  cluster:
    server: $server
    certificate-authority: $STATE/certs/ca.crt
users:
- name: $SA
  user:
    token: $token
contexts:
- name: sa
  context: {cluster: tier, user: $SA}
current-context: sa
EOF
chmod 600 "$STATE/controllers-sa.kubeconfig"
install_builtin_runtimes
for c in mpi-coscheduling torch-custom-volcano; do
	to_namespace "$KFT_REPO_ROOT/tests/golden/cases/$c/runtimes/runtime.yaml" "$ns" | kubectl apply --server-side -f - >/dev/null
done
kubectl -n "$SYS" delete lease trainer.kubeflow.org >/dev/null 2>&1
if [ "$(ctrl_flavour)" = ours ]; then
	kubectl -n "$SYS" delete secret kubeflow-trainer-webhook-cert >/dev/null 2>&1
	export KFT_CTRL_MANAGED_CERTS=1 KFT_CTRL_CERT_MANAGEMENT=true KFT_CTRL_ENV="KFTRAINER_CERT_LOOPBACK=1"
fi
ctrl_start sa --leader-elect --kubeconfig "$STATE/controllers-sa.kubeconfig" || {
	fail "$name" "the controller did not start"
	exit 0
}
k() { kubectl -n "$ns" "$@"; }
# Before the webhooks are registered: they would refuse it, and the reconciler's event is wanted.
TJ_RUNTIME=TrainingRuntime/not-there trainjob_yaml lost false | k create -f - >/dev/null
if [ "$(ctrl_flavour)" = ours ]; then
	injected() {
		[ -n "$(kubectl get mutatingwebhookconfiguration defaulter.trainer.kubeflow.org \
			-o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null)" ]
	}
	ctrl_webhooks_register sa none && wait_for 30 injected ||
		wh_problem="webhooks: the CA was not injected as the service account"
fi
trainjob_yaml plain false | k create -f - >/dev/null
TJ_RUNTIME=ClusterTrainingRuntime/deepspeed-distributed trainjob_yaml mpi true 2 | k create -f - >/dev/null
TJ_RUNTIME=TrainingRuntime/mpi-gang trainjob_yaml gang true 2 | k create -f - >/dev/null
TJ_RUNTIME=TrainingRuntime/torch-volcano trainjob_yaml volcano true 2 | k create -f - >/dev/null
trainjob_yaml late false 1 "{spec: {nodeSelector: {kftrainer.test/nowhere: 'true'}}}" |
	sed 's/^spec:$/spec:\n  activeDeadlineSeconds: 5/' | k create -f - >/dev/null
k patch trainingruntime mpi-gang --type merge \
	-p '{"metadata":{"finalizers":["trainer.kubeflow.org/resource-in-use"]}}' >/dev/null

problems=()
[ -n "${wh_problem:-}" ] && problems+=("$wh_problem")
wait_slowly 60 test_condition "$ns" plain Complete True || problems+=("plain: not Complete")
have_mpi() { [ "$(owned_count "$ns" secrets mpi)" = 1 ] && [ "$(owned_count "$ns" configmaps mpi)" -ge 1 ]; }
wait_slowly 60 have_mpi || problems+=("mpi: no SSH Secret or hostfile ConfigMap")
wait_slowly 60 k get podgroups.scheduling.x-k8s.io gang || problems+=("gang: no scheduling.x-k8s.io PodGroup")
wait_slowly 60 k get podgroups.scheduling.volcano.sh volcano || problems+=("volcano: no Volcano PodGroup")
wait_slowly 60 test_condition "$ns" volcano Suspended True || problems+=("volcano: no Suspended condition")
lost_event() { trainjob_events "$ns" lost | grep -q Warning; }
wait_slowly 60 lost_event || problems+=("lost: no Warning event")
wait_slowly 60 test_condition "$ns" late Failed True || problems+=("late: not Failed")
late_gone() { ! k get jobset late >/dev/null 2>&1; }
wait_slowly 30 late_gone || problems+=("late: JobSet not deleted")
nofin() { [ -z "$(k get trainingruntime mpi-gang -o jsonpath='{.metadata.finalizers}')" ]; }
wait_slowly 30 nofin || problems+=("mpi-gang: finalizer not removed")
[ "$(kubectl -n "$SYS" get lease trainer.kubeflow.org -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] ||
	problems+=("no Lease holder")
forbidden=$(grep -i forbidden "$(ctrl_logfile sa)" | head -n 5 | cut -c1-300)
[ -z "$forbidden" ] || problems+=("forbidden in the log: $forbidden")
if [ "${#problems[@]}" = 0 ]; then
	pass "$name"
else
	fail "$name" "$(printf '%s; ' "${problems[@]}")"
	ctrl_log_tail sa
fi
