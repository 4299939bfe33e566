#!/usr/bin/env bash
# Example (c), examples/local/initializers: dataset over HTTP from a file server this case
# starts, model copied from a directory (file://), then a trainer that checksums what it sees
# under /workspace; then the same through hf:// from a stand-in hub; then a missing file.
# Pins: upstream's initializers take the TrainJob's spec.initializer.{dataset,model}.storageUri
# as STORAGE_URI (pkg/runtime/framework/plugins/jobset, v2.3.0) and download into the shared
# volume at /workspace/dataset and /workspace/model; the node step depends on both
# (dependsOn status Complete), so it only starts once both have finished.
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

start_file_server "$ex/data" || {
	fail "file server" "did not start" "$(cat "$FS_LOG" 2>/dev/null)"
	exit 0
}
job="$KFT_CASE_TMP/trainjob.yaml"
sed -e "s#http://127.0.0.1:8000#$FS_URL#" -e "s#file:///opt/kftrainer-example/model#file://$ex/model#" \
	trainjob.yaml >"$job"

# What the trainer must print: the same files laid out as the initializers should leave them.
mkdir -p "$KFT_CASE_TMP/want/dataset" "$KFT_CASE_TMP/want/model"
cp data/train.csv "$KFT_CASE_TMP/want/dataset/"
cp -r model/. "$KFT_CASE_TMP/want/model/"
want=$(python3 checksum.py "$KFT_CASE_TMP/want/dataset" "$KFT_CASE_TMP/want/model" | tail -n1)

run_capture timeout 240 "$KFTRAINER" train -f "$job" -r runtime.yaml --follow
expect_eq "train --follow exits 0" 0 "$KFT_RC" ||
	fail "train --follow output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "the trainer saw the dataset file" "$KFT_OUT" \
	"$(sha256_of data/train.csv)  dataset/train.csv"
expect_contains "the trainer saw the model files" "$KFT_OUT" \
	"$(sha256_of model/model.txt)  model/model.txt"
expect_contains "the trainer's checksum over everything matches" "$KFT_OUT" "$want"
expect_contains "the dataset came from the file server" "$(cat "$FS_LOG")" "GET /train.csv"
expect_eq "Complete" True "$(job_cond initializers Complete | cut -d'|' -f1)"

run_capture kft logs initializers --step dataset-initializer
expect_eq "logs --step dataset-initializer" 0 "$KFT_RC"
run_capture kft logs initializers --step model-initializer
expect_eq "logs --step model-initializer" 0 "$KFT_RC"
jobs=$(job_json initializers | jq -r '[.status.jobsStatus[]?.name] | sort | join(",")')
expect_eq "jobsStatus has all three steps" "dataset-initializer,model-initializer,node" "$jobs"

# The same files through hf://, from a stand-in hub (the file server's hub routes) that
# HF_ENDPOINT points at; HF_TOKEN must be sent as a bearer token. The shortcut form this time.
hub="$KFT_CASE_TMP/hub"
mkdir -p "$hub/datasets/acme/tiny-csv" "$hub/acme/tiny-model"
cp data/train.csv "$hub/datasets/acme/tiny-csv/"
cp -r model/. "$hub/acme/tiny-model/"
start_file_server "$hub" || fail "hub server" "did not start"
run_capture env HF_ENDPOINT="$FS_URL" HF_TOKEN=hf_test_token timeout 240 "$KFTRAINER" train \
	-r runtime.yaml --runtime torch-with-initializers --name initializers-hf \
	--dataset hf://datasets/acme/tiny-csv --model hf://acme/tiny-model --follow \
	-- python3 checksum.py /workspace/dataset /workspace/model
expect_eq "hf://: train --follow exits 0" 0 "$KFT_RC" ||
	fail "hf://: train --follow output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "hf://: the trainer's checksum matches" "$KFT_OUT" "$want"
hublog=$(cat "$FS_LOG")
expect_contains "hf://: the dataset listing was asked for" "$hublog" \
	"GET /api/datasets/acme/tiny-csv?blobs=true - 200 auth"
expect_contains "hf://: files came from resolve/main with the token" "$hublog" \
	"GET /acme/tiny-model/resolve/main/model.txt - 200 auth"

# A storageUri that does not exist fails the initializer, and the trainer never starts.
sed -e "s#/train.csv#/missing.csv#" -e "s#name: initializers#name: initializers-404#" \
	"$job" >"$KFT_CASE_TMP/missing.yaml"
run_capture kft train -f "$KFT_CASE_TMP/missing.yaml" -r runtime.yaml
expect_eq "submitting a job with a missing dataset" 0 "$KFT_RC"
expect_eq "a missing dataset fails the job" Failed "$(wait_job initializers-404 120)"
msg=$(job_cond initializers-404 Failed)
expect_contains "the failure names the dataset initializer" "$msg" "dataset-initializer"
run_capture kft logs initializers-404 --step dataset-initializer
expect_contains "the initializer's log names the HTTP status" "$KFT_OUT$KFT_ERR" "404"
run_capture kft logs initializers-404 --step node
expect_eq "the trainer never ran" "" "$KFT_OUT"
expect_no_processes "no process left"
kft delete initializers initializers-hf initializers-404 >/dev/null 2>&1
