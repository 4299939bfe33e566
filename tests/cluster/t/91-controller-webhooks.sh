#!/usr/bin/env bash
# Full mode: the admission webhooks, called by the API server for real. The controller
# (KFT_CONTROLLER: ours or upstream v2.3.0) serves them with a certificate it is given
# (certManagement off, as cert-manager would mount one); they are registered with upstream's
# configurations (manifests/controller/webhook.yaml) by a loopback URL, and every case is a
# `kubectl apply` the API server admits or refuses with the webhook's words. Each case pins a rule
# of upstream's webhooks (pkg/webhooks) or of a plugin's CustomValidation (pkg/runtime/framework/
# plugins/{torch,mpi,xgboost,flux,jobset,volcano,plainml}) at admission, and the same rule is what
# `kftrainer validate`/`render` say offline (one code path). The certificate tests for our own
# certificate management are in 92-controller-certs.sh.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "controller webhooks $tag" "$reason"
	exit 0
fi
ns=$(new_namespace webhooks) || {
	fail "controller webhooks $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_webhooks_unregister; ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1; kubectl delete clustertrainingruntime -l kftrainer.test/webhooks --ignore-not-found >/dev/null 2>&1' EXIT
# Runtimes first, unchecked (the built-in ones carry webhook-validation: disabled anyway).
install_builtin_runtimes && quick_runtime "$ns" torch-quick || {
	fail "controller webhooks $tag" "cannot install the runtimes"
	exit 0
}
k() { kubectl -n "$ns" "$@"; }

# A runtime of our own for the MPI, Volcano and initializer cases: $1 name, $2 mlPolicy (flow
# YAML), $3 extra spec lines (podGroupPolicy), $4 replicated jobs (flow YAML list).
runtime() {
	k apply -f - >/dev/null <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: $1
  labels: {trainer.kubeflow.org/webhook-validation: disabled}
spec:
  mlPolicy: $2
$3
  template:
    spec:
      replicatedJobs: $4
EOF
}
NODE_JOB='{name: node, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {template: {spec: {containers: [{name: node, image: example.invalid/t:1}]}}}}}'
runtime mpi-nolauncher '{numNodes: 1, mpi: {runLauncherAsNode: true, numProcPerNode: 1, mpiImplementation: OpenMPI, sshAuthMountPath: /root/.ssh}}' '' "[$NODE_JOB]" &&
	runtime flux-rt '{numNodes: 1, flux: {numProcPerNode: 1}}' '' "[$NODE_JOB]" &&
	runtime volcano-rt '{numNodes: 1, torch: {}}' '  podGroupPolicy: {volcano: {}}' \
		"[{name: node, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {template: {spec: {priorityClassName: kftrainer-test-missing, containers: [{name: node, image: example.invalid/t:1}]}}}}}]" || {
	fail "controller webhooks $tag" "cannot install the test runtimes"
	exit 0
}

ctrl_start main && ctrl_webhooks_register main || {
	fail "controller webhooks $tag" "the controller did not start or its webhooks were not registered"
	exit 0
}

tj() { # tj NAME RUNTIME_KIND/NAME [SPEC LINES...]: a TrainJob on stdout ("a": a fresh name)
	local name=$1 rt=$2
	shift 2
	[ "$name" = a ] && name=case-$RANDOM$RANDOM
	printf 'apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: %s\nspec:\n  runtimeRef:\n    kind: %s\n    name: %s\n' \
		"$name" "${rt%%/*}" "${rt#*/}"
	for l in "$@"; do printf '  %s\n' "$l"; done
}
DENIED='denied the request: '
# refused CASE WEBHOOK DETAIL [kubectl args]: stdin is applied and must be refused by WEBHOOK
# with DETAIL in its message.
refused() {
	local case=$1 hook=$2 want=$3 out
	shift 3
	out=$(k apply "$@" -f - 2>&1)
	local rc=$?
	if [ $rc -eq 0 ]; then
		fail "webhook refuses: $case $tag" "accepted: $out"
	elif [[ "$out" != *"admission webhook \"$hook\" $DENIED"* ]] || [[ "$out" != *"$want"* ]]; then
		fail "webhook refuses: $case $tag" "want \"$want\" from $hook, got: $out"
	else
		pass "webhook refuses: $case $tag"
	fi
}
accepted() {
	local case=$1 out
	shift
	if out=$(k apply "$@" -f - 2>&1); then
		pass "webhook admits: $case $tag"
	else
		fail "webhook admits: $case $tag" "$out"
	fi
}

# The API server calls the webhooks once they answer (the controller's readiness includes them).
wait_for 60 sh -c "kubectl -n $ns apply --dry-run=server -f - 2>&1 <<EOF | grep -q 'admission webhook'
$(tj probe TrainingRuntime/nosuch)
EOF" || {
	fail "controller webhooks $tag" "the API server never reached the webhooks"
	ctrl_log_tail main
	exit 0
}

# --- runtime must exist (trainingruntime.go / clustertrainingruntime.go ValidateObjects) ---
tj a TrainingRuntime/nosuch | refused "missing TrainingRuntime" validator.trainjob.trainer.kubeflow.org \
	'spec.runtimeRef: Invalid value: {"name":"nosuch","apiGroup":"trainer.kubeflow.org","kind":"TrainingRuntime"}: TrainingRuntime.trainer.kubeflow.org "nosuch" not found: specified trainingRuntime must be created before the TrainJob is created'
tj a ClusterTrainingRuntime/nosuch | refused "missing ClusterTrainingRuntime" validator.trainjob.trainer.kubeflow.org \
	'spec.RuntimeRef: Invalid value: {"name":"nosuch","apiGroup":"trainer.kubeflow.org","kind":"ClusterTrainingRuntime"}: ClusterTrainingRuntime.trainer.kubeflow.org "nosuch" not found'
# --- torch: reserved PET_* env (torch.go Validate) ---
tj a TrainingRuntime/torch-quick 'trainer:' '  env: [{name: PET_NNODES, value: "2"}]' |
	refused "torch reserved PET_NNODES" validator.trainjob.trainer.kubeflow.org \
		'spec.trainer.env: Invalid value: [{"name":"PET_NNODES","value":"2"}]: must not have reserved envs, invalid envs configured: [PET_NNODES]'
# --- torchtune: one node for a 1B model (torch.go validateTorchTune) ---
tj a ClusterTrainingRuntime/torchtune-llama3.2-1b 'trainer: {numNodes: 2, command: [tune, run]}' |
	refused "torchtune numNodes" validator.trainjob.trainer.kubeflow.org 'spec.trainer.numNodes: Invalid value: 2: must be 1 for'
# --- MPI: reserved OMPI_MCA_* env, runLauncherAsNode without a launcher (mpi.go Validate) ---
tj a ClusterTrainingRuntime/deepspeed-distributed 'trainer:' '  env: [{name: OMPI_MCA_orte_keep_fqdn_hostnames, value: "true"}]' |
	refused "MPI reserved OMPI_MCA env" validator.trainjob.trainer.kubeflow.org 'must not have reserved envs, invalid envs configured: [OMPI_MCA_orte_keep_fqdn_hostnames]'
tj a TrainingRuntime/mpi-nolauncher 'trainer: {numNodes: 2}' |
	refused "MPI runLauncherAsNode" validator.trainjob.trainer.kubeflow.org \
		'spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either launcher and node'
# --- XGBoost: DMLC_* env (xgboost.go Validate) ---
tj a ClusterTrainingRuntime/xgboost-distributed 'trainer:' '  env: [{name: DMLC_NUM_WORKER, value: "3"}]' |
	refused "XGBoost reserved DMLC env" validator.trainjob.trainer.kubeflow.org 'spec.trainer.env[0]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime'
# --- Flux: the flux-installer init container is the plugin's (flux.go Validate) ---
tj a TrainingRuntime/flux-rt 'runtimePatches:' '  - manager: kftrainer.test/flux' \
	'    trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {initContainers: [{name: flux-installer}]}}}}}]}}}' |
	refused "Flux reserved flux-installer" validator.trainjob.trainer.kubeflow.org \
		'spec.trainer.initContainers: Invalid value: "flux-installer": InitContainer '"'"'flux-installer'"'"' is reserved'
# --- Volcano: a PriorityClass that does not exist (volcano.go Validate) ---
tj a TrainingRuntime/volcano-rt | refused "Volcano PriorityClass" validator.trainjob.trainer.kubeflow.org \
	'PriorityClass "kftrainer-test-missing" doesn'"'"'t exist'
# --- initializers: the job the TrainJob's input needs (jobset.go Validate) ---
tj a TrainingRuntime/torch-quick 'initializer: {dataset: {storageUri: "hf://a/b"}}' |
	refused "dataset initializer job" validator.trainjob.trainer.kubeflow.org \
		'must have dataset-initializer job when trainJob is configured with input datasetConfig'
# --- runtimePatches (jobset.go validateRuntimePatches) ---
patch() { # patch MANAGER REPLICATED_JOB POD_SPEC(flow)
	printf 'runtimePatches:\n  - manager: %s\n    trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: %s, template: {spec: {template: {spec: %s}}}}]}}}\n' "$1" "$2" "$3"
}
tj a TrainingRuntime/torch-quick "$(patch nodomain node '{nodeSelector: {a: b}}')" |
	refused "runtimePatches manager not domain-prefixed" validator.trainjob.trainer.kubeflow.org 'spec.runtimePatches.manager: Invalid value: "nodomain": must be a domain-prefixed path (such as "acme.io/foo")'
# (A patch naming a replicated job or container the runtime lacks is merged into the template
# before the plugins look, in upstream's newRuntimeInfo as in ours, so it is not refused here.)
tj a TrainingRuntime/torch-quick "$(patch kftrainer.test/x node '{containers: [{name: node, env: [{name: A, value: b}]}]}')" |
	refused "runtimePatches env on the node container" validator.trainjob.trainer.kubeflow.org 'must not have envs for the dataset-initializer, model-initializer, node containers'
# changes only while suspended: an update of a running TrainJob's patches is refused
tj running TrainingRuntime/torch-quick "$(patch kftrainer.test/x node '{nodeSelector: {a: b}}')" | accepted "runtimePatches on create"
tj running TrainingRuntime/torch-quick "$(patch kftrainer.test/x node '{nodeSelector: {a: c}}')" |
	refused "runtimePatches changed while running" validator.trainjob.trainer.kubeflow.org 'RuntimePatches can only be modified when the TrainJob is suspended before or after the update'
# --- the defaulter stamps runtimePatches[].time and keeps it while the patch is unchanged ---
name="defaulter stamps runtimePatches[].time $tag"
tj stamped TrainingRuntime/torch-quick 'suspend: true' "$(patch kftrainer.test/x node '{nodeSelector: {a: b}}')" | k apply -f - >/dev/null 2>&1
t1=$(k get trainjob stamped -o jsonpath='{.spec.runtimePatches[0].time}' 2>/dev/null)
if [[ "$t1" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]]; then pass "$name"; else fail "$name" "time is '$t1'"; fi
name="defaulter keeps an unchanged patch's time on update $tag"
sleep 1.1
k label trainjob stamped kftrainer.test/touched=yes >/dev/null 2>&1
t2=$(k get trainjob stamped -o jsonpath='{.spec.runtimePatches[0].time}' 2>/dev/null)
[ -n "$t1" ] && [ "$t1" = "$t2" ] && pass "$name" || fail "$name" "time '$t1' became '$t2'"
name="defaulter stamps a changed patch anew $tag"
tj stamped TrainingRuntime/torch-quick 'suspend: true' "$(patch kftrainer.test/x node '{nodeSelector: {a: changed}}')" | k apply -f - >/dev/null 2>&1
t3=$(k get trainjob stamped -o jsonpath='{.spec.runtimePatches[0].time}' 2>/dev/null)
[ -n "$t3" ] && [ "$t3" != "$t1" ] && pass "$name" || fail "$name" "time '$t1' then '$t3'"

# --- runtimes: ancestor jobs have one replica and their container (trainingruntime_webhook.go) ---
rt_yaml() { # rt_yaml KIND NAME REPLICAS CONTAINER [LABELS]
	cat <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: $1
metadata:
  name: $2
  labels: {kftrainer.test/webhooks: "yes"${5:+, $5}}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        replicas: $3
        template:
          metadata:
            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
          spec:
            template:
              spec:
                containers: [{name: $4, image: example.invalid/t:1}]
EOF
}
rt_yaml TrainingRuntime bad-replicas 2 node | refused "TrainingRuntime ancestor replicas" validator.trainingruntime.trainer.kubeflow.org \
	'spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1'
rt_yaml TrainingRuntime bad-container 1 other | refused "TrainingRuntime ancestor container" validator.trainingruntime.trainer.kubeflow.org \
	'must contain the required container for the ancestor: trainer'
rt_yaml ClusterTrainingRuntime kft-test-bad 2 node | refused "ClusterTrainingRuntime ancestor replicas" validator.clustertrainingruntime.trainer.kubeflow.org \
	'always must be 1'
rt_yaml TrainingRuntime good 1 node | accepted "a valid TrainingRuntime"
# A wide runtime: 20,000 containers (about 0.8 MB) reach the validator, which checks them in one
# pass; its duplicate checks used to compare every pair (8.8 s of CPU for this object, past the
# API server's 10 s timeoutSeconds on a loaded machine, and a failurePolicy Fail refusal). The
# API server checks its own rules first (apiextensions-apiserver's listtype, linear), so the
# object is admitted when both answer in time. `create`, not `apply`: no annotation copy.
wide_runtime() {
	printf '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainingRuntime","metadata":{"name":"wide","labels":{"kftrainer.test/webhooks":"yes"}},"spec":{"mlPolicy":{"numNodes":1,"torch":{}},"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":{"spec":{"containers":[{"name":"node","image":"example.invalid/t:1"}'
	seq 19999 | awk '{printf ",{\"name\":\"c%d\",\"image\":\"example.invalid/t:1\"}", $1}'
	printf ']}}}}}]}}}}\n'
}
name="webhook admits: a TrainingRuntime with 20,000 containers $tag"
if out=$(wide_runtime | k create -f - 2>&1); then pass "$name"; else fail "$name" "$(printf '%s' "$out" | head -c 600)"; fi
rt_yaml TrainingRuntime unchecked 2 other 'trainer.kubeflow.org/webhook-validation: disabled' |
	accepted "webhook-validation: disabled skips the runtime webhook"
tj fine TrainingRuntime/torch-quick 'suspend: true' | accepted "a valid TrainJob"
# The TrainJob webhook has no objectSelector upstream: the label does not skip it.
tj a TrainingRuntime/nosuch | sed 's/^metadata:$/metadata:\n  labels: {trainer.kubeflow.org\/webhook-validation: disabled}/' |
	refused "webhook-validation: disabled does not skip the TrainJob webhook" validator.trainjob.trainer.kubeflow.org 'specified trainingRuntime must be created'

# --- the server: many connections at once, bounded bodies, TLS 1.2+ ---
ca="$STATE/controllers/main/tmp/k8s-webhook-server/serving-certs/tls.crt"
url="https://127.0.0.1:$CTRL_WEBHOOK_main/validate-trainer-kubeflow-org-v1alpha1-trainjob"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"trainer.kubeflow.org","version":"v1alpha1","kind":"TrainJob"},"operation":"CREATE","namespace":"default","object":{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"a","namespace":"default"},"spec":{"runtimeRef":{"name":"nosuch"}}}}}'
# Issue 24.2: 70 idle sockets (more than a thread-per-connection server's slots) are all open
# before the first review is sent, and stay open while the reviews are answered.
name="webhook server: 200 reviews, 50 at a time, beside 70 idle connections, all answered $tag"
idle_out=$(mktemp)
python3 "$KFT_REPO_ROOT/tests/local/flood.py" "127.0.0.1:$CTRL_WEBHOOK_main" 70 --hold >"$idle_out" &
idle=$!
if wait_for 30 grep -q ready "$idle_out"; then
	codes=$(seq 200 | xargs -P 50 -I{} curl -s --max-time 20 --cacert "$ca" -H 'Content-Type: application/json' \
		-d "$review" "$url" -w '%{http_code}\n' -o /dev/null | sort | uniq -c | sed 's/^ *//')
	[ "$codes" = "200 200" ] && pass "$name" || fail "$name" "codes: $codes"
else
	fail "$name" "could not open 70 connections"
fi
kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
rm -f "$idle_out"
if [ "$(ctrl_flavour)" = ours ]; then
	name="webhook server: a body over 7 MiB is refused (413) $tag"
	code=$(head -c 7340033 /dev/zero | tr '\0' ' ' | curl -s --max-time 20 --cacert "$ca" -H 'Content-Type: application/json' \
		--data-binary @- "$url" -o /dev/null -w '%{http_code}')
	[ "$code" = 413 ] && pass "$name" || fail "$name" "got $code"
fi
name="webhook server: TLS 1.1 is refused $tag"
curl -s --max-time 10 --tlsv1.1 --tls-max 1.1 --cacert "$ca" "$url" -o /dev/null 2>/dev/null &&
	fail "$name" "a TLS 1.1 handshake succeeded" || pass "$name"
