#!/usr/bin/env bash
# Secrets and ConfigMaps given to `train -f` beside the TrainJob stand in for the ones a
# cluster would hold in the TrainJob's namespace: the trainer's env reads them (secretKeyRef,
# configMapKeyRef), and an initializer's secretRef supplies the hub token.
# Pins: upstream v2.3.0 TrainJob spec.initializer.{dataset,model}.secretRef ("the secret with
# credentials to download"), which the JobSet plugin turns into envFrom on the initializer
# container; its Hugging Face initializer reads the token from ACCESS_TOKEN.
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"

cat >"$KFT_CASE_TMP/env.yaml" <<'EOF2'
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  token: s3cr3t
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  MODE: fast
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: env-from-objects
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    command: [sh, -c, 'echo "token=$TOKEN mode=$MODE"']
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: creds, key: token}
    - name: MODE
      valueFrom:
        configMapKeyRef: {name: settings, key: MODE}
EOF2
run_capture timeout 120 "$KFTRAINER" train -f "$KFT_CASE_TMP/env.yaml" --follow
expect_eq "train --follow exits 0" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
expect_contains "the Secret and the ConfigMap reached the node's env" "$KFT_OUT" \
	"token=s3cr3t mode=fast"

# A Secret the API server could not store, or an env name its pods would refuse, is refused
# at submission in the server's words (tests/cluster/t/31-core-checks.sh pins them against a
# real one), and nothing is stored or started. Pins: Kubernetes v1.36.2 ValidateSecret,
# ValidateEnv (relaxed names), Go's base64 decoding of Secret data.
sed -e 's/^  token: s3cr3t$/  token: s3cr3t\ndata:\n  extra: "not base64"/' \
	-e 's/name: env-from-objects/name: refused-at-submit/' "$KFT_CASE_TMP/env.yaml" >"$KFT_CASE_TMP/bad.yaml"
run_capture timeout 60 "$KFTRAINER" train -f "$KFT_CASE_TMP/bad.yaml"
expect_eq "a non-base64 Secret value: train exits 1" 1 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
expect_contains "the Secret is refused with the server's words" "$KFT_ERR" \
	'Secret/default/creds: data[extra]: Invalid value: "<secret contents redacted>": Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'
sed -e 's/- name: MODE$/- name: MODE=fast/' \
	-e 's/name: env-from-objects/name: refused-at-submit/' "$KFT_CASE_TMP/env.yaml" >"$KFT_CASE_TMP/bad.yaml"
run_capture timeout 60 "$KFTRAINER" train -f "$KFT_CASE_TMP/bad.yaml"
expect_eq "an env name with '=': train exits 1" 1 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
expect_contains "the env name is refused at the TrainJob's path" "$KFT_ERR" \
	"spec.trainer.env[1].name: Invalid value: \"MODE=fast\": a valid environment variable name must consist only of printable ASCII characters other than '='"
run_capture "$KFTRAINER" get refused-at-submit
expect_eq "nothing was stored" 3 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"

# Dataset and model from a stand-in hub; the token only in the Secret.
hub="$KFT_CASE_TMP/hub"
mkdir -p "$hub/acme/tiny-model" "$hub/datasets/acme/tiny-csv"
cp -r "$ex/model/." "$hub/acme/tiny-model/"
cp "$ex/data/train.csv" "$hub/datasets/acme/tiny-csv/"
start_file_server "$hub" || {
	fail "hub server" "did not start"
	exit 0
}
cat >"$KFT_CASE_TMP/hub.yaml" <<EOF2
apiVersion: v1
kind: Secret
metadata:
  name: hub-token
stringData:
  ACCESS_TOKEN: hf_from_secret
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: token-from-secret
spec:
  runtimeRef:
    name: torch-with-initializers
  initializer:
    dataset:
      storageUri: hf://datasets/acme/tiny-csv
      secretRef: {name: hub-token}
    model:
      storageUri: hf://acme/tiny-model
      secretRef: {name: hub-token}
  trainer:
    command: [python3, checksum.py, /workspace/dataset, /workspace/model]
EOF2
(cd "$ex" && run_capture env -u HF_TOKEN HF_ENDPOINT="$FS_URL" timeout 240 "$KFTRAINER" train \
	-f "$KFT_CASE_TMP/hub.yaml" -r runtime.yaml --follow
	expect_eq "hf:// with secretRef: train --follow exits 0" 0 "$KFT_RC" ||
		note "$KFT_OUT $KFT_ERR")
hublog=$(cat "$FS_LOG")
expect_contains "the model came with the Secret's token" "$hublog" \
	"GET /acme/tiny-model/resolve/main/model.txt - 200 auth"
expect_contains "the dataset came with the Secret's token" "$hublog" \
	"GET /api/datasets/acme/tiny-csv?blobs=true - 200 auth"
kft delete env-from-objects token-from-secret >/dev/null 2>&1
expect_no_processes "no process left"
