#!/usr/bin/env bash
# The S3 initializer signs its GET for one host (SigV4: Authorization, x-amz-date,
# x-amz-content-sha256, x-amz-security-token, and the signed Host). When the endpoint redirects
# to another host, none of those may follow: they are credentials for the first host (libcurl
# drops a custom Authorization on a cross-host redirect, but keeps x-amz-* and would send the
# session token anywhere). A redirect on the same host keeps them, or S3 would refuse the
# request. Two tier file servers: A (127.0.0.1) redirects /elsewhere/ to B (localhost, another
# port) and /moved/ to its own /here/.
# Pins: upstream v2.3.0 pkg/initializers S3 (boto3/botocore, which re-signs per request and
# sends no credentials to a host it was not signing for); curl's CURLOPT_UNRESTRICTED_AUTH
# rule for Authorization, extended to the x-amz-* headers.
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

b_root="$KFT_CASE_TMP/b" a_root="$KFT_CASE_TMP/a"
mkdir -p "$b_root/elsewhere" "$a_root/here"
cp data/train.csv "$b_root/elsewhere/train.csv"
cp data/train.csv "$a_root/here/train.csv"
start_file_server "$b_root" || {
	fail "server B" "did not start"
	exit 0
}
b_log=$FS_LOG b_port=$FS_PORT
FS_REDIRECTS="/elsewhere/=http://localhost:$b_port/elsewhere/ /moved/=/here/" \
	start_file_server "$a_root" || {
	fail "server A" "did not start"
	exit 0
}
a_log=$FS_LOG
size=$(wc -c <data/train.csv)

# submit NAME BUCKET: an s3:// dataset through endpoint A with (fake) temporary credentials,
# set as upstream's initializer reads them (ENDPOINT, ACCESS_KEY_ID ...) plus the session token.
submit() {
	cat >"$KFT_CASE_TMP/$1.yaml" <<EOF2
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: $1
spec:
  runtimeRef:
    name: torch-with-initializers
  initializer:
    dataset:
      storageUri: s3://$2/train.csv
      env:
      - {name: ENDPOINT, value: "$FS_URL"}
      - {name: ACCESS_KEY_ID, value: AKIDEXAMPLE}
      - {name: SECRET_ACCESS_KEY, value: secret}
      - {name: REGION, value: us-east-1}
      - {name: AWS_SESSION_TOKEN, value: session-token}
    model:
      storageUri: file://$ex/model
  trainer:
    command: [wc, -c, /workspace/dataset/train.csv]
EOF2
	run_capture timeout 120 "$KFTRAINER" train -r runtime.yaml -f "$KFT_CASE_TMP/$1.yaml" --follow
}

submit s3-cross-host elsewhere
expect_eq "cross-host redirect: the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
expect_contains "cross-host redirect: the trainer read the file" "$KFT_OUT" "$size "
expect_contains "A got the signed request" "$(cat "$a_log")" \
	"GET /elsewhere/train.csv - 307 auth amz"
expect_contains "B was asked" "$(cat "$b_log")" "GET /elsewhere/train.csv - 200"
expect_not_contains "B got no Authorization" "$(cat "$b_log")" " auth"
expect_not_contains "B got no x-amz-* header" "$(cat "$b_log")" " amz"

submit s3-same-host moved
expect_eq "same-host redirect: the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
expect_contains "same-host redirect keeps the signature" "$(cat "$a_log")" \
	"GET /here/train.csv - 200 auth amz"
kft delete s3-cross-host s3-same-host >/dev/null 2>&1
expect_no_processes "no process left"
