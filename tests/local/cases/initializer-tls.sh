#!/usr/bin/env bash
# An https:// dataset from a server whose certificate no public CA signed (the tier's TLS file
# server, self-signed): the initializer trusts the CA bundle named by SSL_CERT_FILE or
# CURL_CA_BUNDLE, as curl's command-line tool does, taken from the submitter's environment
# (the base environment) or from the pod's env; without one the fetch fails on the certificate.
# Also pins the initializer's log: one "fetched FILE (N bytes)" line per file (it was printed
# several times, once per libcurl progress call after the last byte).
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

start_file_server "$ex/data" --tls || {
	fail "TLS file server" "did not start" "$(cat "$FS_LOG" 2>/dev/null)"
	exit 0
}

# submit NAME [ENV...]: the shortcut form with the dataset over https and the model from a
# directory; the trainer prints the dataset's size. The submitter's own CA settings are dropped
# first (CURL_CA_BUNDLE wins over SSL_CERT_FILE, as in curl's tool), then ENV applies.
submit() {
	local name=$1
	shift
	run_capture env -u CURL_CA_BUNDLE -u SSL_CERT_FILE -u SSL_CERT_DIR "$@" timeout 120 "$KFTRAINER" train -r runtime.yaml \
		--runtime torch-with-initializers --name "$name" --dataset "$FS_URL/train.csv" \
		--model "file://$ex/model" --follow -- wc -c /workspace/dataset/train.csv
}

size=$(wc -c <data/train.csv)

submit tls-ssl-cert-file SSL_CERT_FILE="$FS_CA"
expect_eq "SSL_CERT_FILE: the job completes" 0 "$KFT_RC" ||
	fail "SSL_CERT_FILE: output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "SSL_CERT_FILE: the trainer read the fetched file" "$KFT_OUT" "$size "
run_capture kft logs tls-ssl-cert-file --step dataset-initializer
n=$(grep -c '^fetched .*train.csv' <<<"$KFT_OUT")
expect_eq "the fetched line is printed once" 1 "$n" || fail "initializer log" "see below" "$KFT_OUT"

submit tls-curl-ca-bundle CURL_CA_BUNDLE="$FS_CA"
expect_eq "CURL_CA_BUNDLE: the job completes" 0 "$KFT_RC" ||
	fail "CURL_CA_BUNDLE: output" "see below" "$KFT_OUT" "$KFT_ERR"

# Without a bundle naming the CA, the certificate is refused and the trainer never runs.
submit tls-untrusted
expect_eq "no CA bundle: train --follow exits 1" 1 "$KFT_RC"
expect_eq "no CA bundle: the job failed" True "$(job_cond tls-untrusted Failed | cut -d'|' -f1)"
run_capture kft logs tls-untrusted --step dataset-initializer
expect_contains "no CA bundle: the log says why" "$KFT_OUT$KFT_ERR" "certificate"

# From the pod's env instead: the TrainJob's initializer env sets it.
job="$KFT_CASE_TMP/pod-env.yaml"
cat >"$job" <<YAML
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: tls-pod-env
spec:
  runtimeRef:
    name: torch-with-initializers
  initializer:
    dataset:
      storageUri: $FS_URL/train.csv
      env:
        - name: SSL_CERT_FILE
          value: $FS_CA
    model:
      storageUri: file://$ex/model
  trainer:
    command: [wc, -c, /workspace/dataset/train.csv]
YAML
run_capture env -u SSL_CERT_FILE -u CURL_CA_BUNDLE -u SSL_CERT_DIR timeout 120 "$KFTRAINER" train -f "$job" \
	-r runtime.yaml --follow
expect_eq "pod env SSL_CERT_FILE: the job completes" 0 "$KFT_RC" ||
	fail "pod env: output" "see below" "$KFT_OUT" "$KFT_ERR"

kft delete tls-ssl-cert-file tls-curl-ca-bundle tls-untrusted tls-pod-env >/dev/null 2>&1
expect_no_processes "no process left"
