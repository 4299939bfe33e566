#!/usr/bin/env bash
# Full mode, ours only: experiment tracking and model hand-off through the controller manager
# (kftrainer's; upstream has neither: kubeflow/trainer#2245 and #2438 are unbuilt, KEP-897 has no
# Trainer side). A real mlflow server (PyPI, the tracking tier's venv: tests/tracking/venv.sh)
# receives what the controller sends; the TrainJob status server is on (TrainJobStatus):
#   config     the Configuration's tracking section (mlflowTrackingURI, experiment, exportImage)
#              is read: the manager says it tracks runs there
#   run        a TrainJob becomes a run of the experiment, tagged with its uid, namespace and
#              runtime, params from its spec
#   report     a report a trainer posts to the status server (a token the API server issued)
#              reaches the run as metrics with the report's step
#   export     once Complete, a TrainJob annotated tracking.kftrainer.dev/export-to gets the Job
#              <name>-model-export (owned by it, image exportImage, kftrainer-export --from
#              /workspace/output --to URI, envFrom the export-secret, the TrainJob's identity in
#              KFTRAINER_EXPORT_TRAINJOB) and the finalizer tracking.kftrainer.dev/export; when
#              kwok completes the Job's pod, ModelExported=True reason Exported and the finalizer
#              is gone
#   end        the run ends FINISHED with the job; a TrainJob deleted while it runs ends KILLED
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/controller.sh"

tag=$(ctrl_tag)
reason=$(ctrl_unavailable_reason)
if [ -n "$reason" ]; then
	skip "tracking $tag" "$reason"
	exit 0
fi
if [ "$(ctrl_flavour)" = upstream ]; then
	skip "tracking $tag" "upstream has no experiment tracking or model export"
	exit 0
fi
build=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}
rc=0
venv=$("$KFT_REPO_ROOT/tests/tracking/venv.sh" "$build" 2>"$STATE/logs/tracking-venv.log") || rc=$?
if [ "$rc" != 0 ]; then
	skip "tracking $tag" "no mlflow: $(tail -n 1 "$STATE/logs/tracking-venv.log")"
	exit 0
fi
ns=$(new_namespace tracking) || {
	fail "tracking $tag" "cannot create a namespace"
	exit 0
}
work=$(mktemp -d)
secret_made=
cleanup() {
	ctrl_stop_all
	stop_proc "$STATE/pids/mlflow.pid" 2>/dev/null
	rm -rf "${mdir:-}"
	kubectl -n "$ns" patch trainjob export-me --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	[ -n "$secret_made" ] && kubectl -n kubeflow-system delete secret kubeflow-trainer-webhook-cert >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
cond() { k get trainjob "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null; }

# --- an mlflow server ---------------------------------------------------------------------------
# Its files under the cluster's state directory, which is how stop_proc (and down) know the
# process as the tier's own.
mp=$(free_port)
mdir="$STATE/mlflow-94c"
rm -rf "$mdir"
mkdir -p "$mdir"
start_proc mlflow "$venv/bin/mlflow" server --host 127.0.0.1 --port "$mp" --workers 1 \
	--backend-store-uri "sqlite:///$mdir/db.sqlite" \
	--artifacts-destination "$mdir/artifacts" --serve-artifacts
murl="http://127.0.0.1:$mp"
if ! wait_for 120 curl -sf "$murl/health"; then
	fail "tracking $tag: mlflow" "the server did not start" "$(tail -n 5 "$STATE/logs/mlflow.log")"
	exit 0
fi
# mlq UID: the run tagged kftrainer.uid=UID as "STATUS|metric history of loss|params|tags"
mlq() {
	"$venv/bin/python" - "$murl" "$1" <<'EOF'
import sys
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri=sys.argv[1])
for e in c.search_experiments():
    rs = c.search_runs([e.experiment_id], f"tags.`kftrainer.uid` = '{sys.argv[2]}'")
    if rs:
        r = rs[0]
        h = [(m.step, m.value) for m in c.get_metric_history(r.info.run_id, "loss")]
        t = r.data.tags
        print(f"{r.info.status}|{h}|{r.data.params.get('runtime')}|{e.name}|"
              f"{t.get('kftrainer.namespace')}|{t.get('kftrainer.runtime')}")
        break
EOF
}

# --- the controller, with the status server and the tracking section -----------------------------
status_server_certs "$work" && secret_made=$STATUS_SECRET_MADE
sp=$(free_port)
KFT_CTRL_EXTRA_CONFIG="$(status_server_config "$sp")
tracking:
  mlflowTrackingURI: $murl
  experiment: cluster-tier
  exportImage: kftrainer.test/exporter:1"
export KFT_CTRL_EXTRA_CONFIG
if ! ctrl_start trk; then
	fail "tracking $tag: start" "the controller did not come up" "$(ctrl_log_tail trk)"
	exit 0
fi
base="https://127.0.0.1:$sp"
status_server_serve trk "$work" "$base" || {
	fail "tracking $tag: status server" "no TLS answer on $base" "$(ctrl_log_tail trk)"
	exit 0
}
if grep -q "Tracking runs in MLflow" "$(ctrl_logfile trk)"; then
	pass "tracking $tag: config: the Configuration's tracking section is read"
else
	fail "tracking $tag: config" "no 'Tracking runs in MLflow' line" "$(ctrl_log_tail trk)"
fi

# --- run and report ------------------------------------------------------------------------------
install_builtin_runtimes
hold="{metadata: {labels: {kwok.kftrainer.test/outcome: hold}}}"
trainjob_yaml reporting false 1 "$hold" | k apply -f - >/dev/null
trainjob_yaml doomed false 1 "$hold" | k apply -f - >/dev/null
trainjob_yaml export-me false 1 |
	sed 's/^  name: export-me$/  name: export-me\n  annotations:\n    tracking.kftrainer.dev\/export-to: s3:\/\/models\/team\/x\n    tracking.kftrainer.dev\/export-secret: s3-creds/' |
	k apply -f - >/dev/null
# has_run UID [PATTERN]: the run of UID exists (and its line matches PATTERN), for wait_for
has_run() { bash -c "$(declare -f mlq); murl=$murl venv=$venv; mlq $1 | grep -q -e '${2:-.}'"; }
uid=$(k get trainjob reporting -o jsonpath='{.metadata.uid}')
wait_for 90 has_run "$uid"
got=$(mlq "$uid")
if [ "$(cut -d'|' -f3- <<<"$got")" = "torch-distributed|cluster-tier|$ns|torch-distributed" ]; then
	pass "tracking $tag: run: a TrainJob is a run of the configured experiment, tags and params"
else
	fail "tracking $tag: run" "got: ${got:-none}" "$(ctrl_log_tail trk)"
fi
tok=$(k create token default --audience "$(status_audience "$ns" reporting)")
answers=
for s in 1 2; do
	answers+=$(status_post "$work" "$base" "$(status_path "$ns" reporting)" "$tok" \
		"{\"trainerStatus\":{\"metrics\":[{\"name\":\"loss\",\"value\":\"0.$((9 - s))\"},{\"name\":\"step\",\"value\":\"$((s * 100))\"}],\"lastUpdatedTime\":\"2026-01-02T03:04:0${s}Z\"}}" | cut -c1-3)" "
done
want="[(100, 0.8), (200, 0.7)]"
if wait_for 60 has_run "$uid" "(100, 0.8), (200, 0.7)"; then
	pass "tracking $tag: report: status-server reports reach the run with their steps"
else
	fail "tracking $tag: report" "want $want, got: $(mlq "$uid"); the posts answered: $answers" "$(ctrl_log_tail trk)"
fi

# --- export --------------------------------------------------------------------------------------
if wait_trainjob_condition 120 "$ns/export-me" Complete && wait_slowly 60 k get job export-me-model-export; then
	verdict=$(k get job export-me-model-export -o json | python3 -c '
import json, sys
j = json.load(sys.stdin)
c = j["spec"]["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value") for e in c.get("env", [])}
ident = json.loads(env.get("KFTRAINER_EXPORT_TRAINJOB", "{}"))
o = j["metadata"]["ownerReferences"][0]
ok = (c["image"] == "kftrainer.test/exporter:1" and c["command"] == ["kftrainer-export"]
      and c["args"] == ["--from", "/workspace/output", "--to", "s3://models/team/x"]
      and c["envFrom"] == [{"secretRef": {"name": "s3-creds"}}]
      and env.get("MLFLOW_TRACKING_URI") == sys.argv[1]
      and ident["metadata"]["uid"] == sys.argv[2] and o["kind"] == "TrainJob" and o["controller"])
print("ok" if ok else json.dumps(c))
' "$murl" "$(k get trainjob export-me -o jsonpath='{.metadata.uid}')")
	fin=$(k get trainjob export-me -o jsonpath='{.metadata.finalizers}')
	if [ "$verdict" = ok ]; then
		pass "tracking $tag: export: the model-export Job runs kftrainer-export as the TrainJob says"
	else
		fail "tracking $tag: export Job" "$verdict" "finalizers: $fin"
	fi
	if wait_trainjob_condition 120 "$ns/export-me" ModelExported &&
		[ "$(cond export-me ModelExported reason)" = Exported ] &&
		wait_for 30 bash -c "[ -z \"\$(kubectl -n $ns get trainjob export-me -o jsonpath='{.metadata.finalizers}')\" ]"; then
		pass "tracking $tag: export: ModelExported=True Exported, the finalizer released ($(cond export-me ModelExported message))"
	else
		fail "tracking $tag: export outcome" "ModelExported: $(cond export-me ModelExported status) $(cond export-me ModelExported reason): $(cond export-me ModelExported message); finalizers: $(k get trainjob export-me -o jsonpath='{.metadata.finalizers}')" "$(ctrl_log_tail trk)"
	fi
else
	fail "tracking $tag: export" "no Complete or no export Job" "$(k get trainjob export-me -o yaml 2>&1 | tail -n 30)
$(ctrl_log_tail trk)"
fi

# --- end ----------------------------------------------------------------------------------------
k label pods -l trainer.kubeflow.org/trainjob-name=reporting kwok.kftrainer.test/outcome- >/dev/null 2>&1
k patch jobset reporting --type=json -p '[{"op":"remove","path":"/spec/replicatedJobs/0/template/spec/template/metadata/labels/kwok.kftrainer.test~1outcome"}]' >/dev/null 2>&1
duid=$(k get trainjob doomed -o jsonpath='{.metadata.uid}')
wait_for 60 has_run "$duid" RUNNING
k delete trainjob doomed --wait=false >/dev/null
if wait_for 90 has_run "$duid" "^KILLED"; then
	pass "tracking $tag: end: a TrainJob deleted while it runs ends its run KILLED"
else
	fail "tracking $tag: end (deleted)" "got: $(mlq "$duid")" "$(ctrl_log_tail trk)"
fi
euid=$(k get trainjob export-me -o jsonpath='{.metadata.uid}')
if wait_for 60 has_run "$euid" "^FINISHED"; then
	pass "tracking $tag: end: a completed TrainJob's run ends FINISHED"
else
	fail "tracking $tag: end (completed)" "got: $(mlq "$euid")" "$(ctrl_log_tail trk)"
fi
exit 0
