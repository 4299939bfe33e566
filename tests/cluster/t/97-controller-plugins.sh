#!/usr/bin/env bash
# Full mode, ours only (upstream loads no plugin files): the example out-of-tree plugins,
# configured in the Configuration's `plugins` list, in the controller manager.
#   verdict    require-team-label's CustomValidation refuses a TrainJob without a team label
#              with the very field error `kftrainer validate --plugin` prints, and nothing is
#              built for it
#   build      shared-config's ComponentBuilder ConfigMap is applied, owned by the TrainJob,
#              and its EnforcePodSpec mounts it in the JobSet's node pods
#   terminal   shared-config's TerminalCondition: annotated stop, the TrainJob is Complete with
#              reason StopRequested
#   admission  with the webhooks registered, `kubectl apply` of a TrainJob without a team label
#              is denied at admission with the same field error (the verdicts above are the
#              reconciler's, for a TrainJob admitted without the webhooks)
# The static manager is started with the list; it hands over to the dynamically linked
# kftrainer-controller-manager-plugins beside it, which can load shared objects.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
[ -z "$reason" ] && [ "$(ctrl_flavour)" = upstream ] && reason="upstream's controller loads no plugin files"
plugins=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/plugins
[ -z "$reason" ] && { [ -f "$plugins/require-team-label.so" ] && [ -f "$plugins/shared-config.so" ]; } ||
	reason=${reason:-"the example plugins are not built in $plugins"}
if [ -n "$reason" ]; then
	skip "controller plugins $tag" "$reason"
	exit 0
fi
ns=$(new_namespace plugins) || {
	fail "controller plugins $tag" "cannot create a namespace"
	exit 0
}
trap 'ctrl_webhooks_unregister; ctrl_stop_all; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1' EXIT
install_builtin_runtimes || {
	fail "controller plugins $tag" "cannot install the runtimes"
	exit 0
}
export KFT_CTRL_EXTRA_CONFIG="plugins: [$plugins/require-team-label.so, $plugins/shared-config.so]"
ctrl_start main || {
	fail "controller plugins $tag" "the controller did not start"
	exit 0
}
k() { kubectl -n "$ns" "$@"; }
cond() { k get trainjob "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null; }
job() { # job NAME [LABELS [SUSPEND]]
	cat <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: $1, namespace: $ns, labels: {${2:-}}}
spec:
  suspend: ${3:-false}
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 1}
EOF
}
# vision stays suspended, so that kwok cannot complete its pods before the stop annotation does.
job anon | k create -f - >/dev/null && job vision "team: vision" true | k create -f - >/dev/null || {
	fail "controller plugins $tag" "TrainJobs rejected"
	exit 0
}

name="a plugin's CustomValidation refuses as \`kftrainer validate\` does $tag"
want=$(job anon | "${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/bin/kftrainer" validate \
	--plugin "$plugins/require-team-label.so" --plugin "$plugins/shared-config.so" \
	--runtimes "$KFT_REPO_ROOT/manifests/runtimes" -f - 2>&1 | sed -n 's/.*\(metadata\.labels\[team\]: .*\)/\1/p' | head -1)
if [ -z "$want" ]; then
	fail "$name" "kftrainer validate printed no field error for the team label"
elif wait_trainjob_condition 60 "$ns/anon" Failed; then
	msg=$(cond anon Failed message)
	if [[ "$msg" == *"$want"* ]] && ! k get jobset anon >/dev/null 2>&1; then
		pass "$name ($(cond anon Failed reason): $want)"
	else
		fail "$name" "message '$msg' (want it to carry '$want'), JobSet $(k get jobset anon -o name 2>&1)"
	fi
else
	fail "$name" "not Failed within 60 s: $(k get trainjob anon -o jsonpath='{.status}')"
	ctrl_log_tail main 10
fi

name="a plugin's ComponentBuilder and EnforcePodSpec reach the cluster $tag"
if wait_for 60 k get configmap vision-shared-config && wait_for 60 k get jobset vision; then
	owner=$(k get configmap vision-shared-config -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')
	conf=$(k get configmap vision-shared-config -o jsonpath='{.data.team\.conf}')
	mount=$(k get jobset vision -o jsonpath='{.spec.replicatedJobs[?(@.name=="node")].template.spec.template.spec.containers[?(@.name=="node")].volumeMounts[?(@.name=="shared-config")].mountPath}')
	vol=$(k get jobset vision -o jsonpath='{.spec.replicatedJobs[?(@.name=="node")].template.spec.template.spec.volumes[?(@.name=="shared-config")].configMap.name}')
	if [ "$owner" = TrainJob/vision ] && [[ "$conf" == *team=vision* ]] &&
		[ "$mount" = /etc/kftrainer/shared ] && [ "$vol" = vision-shared-config ]; then
		pass "$name"
	else
		fail "$name" "owner '$owner', team.conf '$conf', mount '$mount', volume '$vol'"
	fi
else
	fail "$name" "ConfigMap or JobSet missing: $(k get configmap,jobset -o name 2>&1 | tr '\n' ' ')"
	ctrl_log_tail main 10
fi

name="a plugin's TerminalCondition ends the TrainJob in the controller $tag"
k annotate trainjob vision example.kftrainer.dev/stop=true >/dev/null
if wait_trainjob_condition 60 "$ns/vision" Complete; then
	r=$(cond vision Complete reason)
	if [ "$r" = StopRequested ]; then pass "$name"; else fail "$name" "reason '$r'"; fi
else
	fail "$name" "not Complete within 60 s: $(k get trainjob vision -o jsonpath='{.status.conditions}')"
fi

name="a plugin's CustomValidation refuses at admission $tag"
if ctrl_webhooks_register main; then
	out=$(job late | k apply -f - 2>&1)
	if [[ "$out" == *"denied the request"* ]] && [[ "$out" == *"$want"* ]] && ! k get trainjob late >/dev/null 2>&1; then
		pass "$name"
	else
		fail "$name" "kubectl apply said: $out"
	fi
else
	fail "$name" "the webhooks were not registered"
fi
