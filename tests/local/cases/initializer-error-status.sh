#!/usr/bin/env bash
# An initializer says "fetched FILE" only for a file it really has: an error reply's body (S3
# and most object stores answer 403/500 with an XML document and a Content-Length) is not the
# file, so the log shows the HTTP status and no "fetched" line (it used to print
# "fetched train.csv (N bytes)" for the error document, then fail). A good file still gets
# exactly one "fetched" line, printed after it is in place.
# Pins: upstream v2.3.0 pkg/initializers (the log reports a download once it has succeeded).
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

mkdir -p "$KFT_CASE_TMP/root/ok"
cp data/train.csv "$KFT_CASE_TMP/root/ok/train.csv"
FS_ERRORS="/denied/=403 /broken/=500" start_file_server "$KFT_CASE_TMP/root" || {
	fail "file server" "did not start"
	exit 0
}

submit() {
	run_capture timeout 120 "$KFTRAINER" train -r runtime.yaml --runtime torch-with-initializers \
		--name "$1" --dataset "$FS_URL/$2/train.csv" --model "file://$ex/model" --follow -- \
		wc -c /workspace/dataset/train.csv
}

for what in denied:403 broken:500; do
	path=${what%:*} status=${what#*:}
	submit "status-$status" "$path"
	expect_eq "HTTP $status: the job fails" 1 "$KFT_RC"
	run_capture kft logs "status-$status" --step dataset-initializer
	expect_contains "HTTP $status: the log gives the status" "$KFT_OUT$KFT_ERR" "HTTP $status"
	expect_not_contains "HTTP $status: no fetched line for the error document" "$KFT_OUT$KFT_ERR" "fetched "
done

submit status-200 ok
expect_eq "HTTP 200: the job completes" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
run_capture kft logs status-200 --step dataset-initializer
n=$(grep -c '^fetched train.csv' <<<"$KFT_OUT")
expect_eq "HTTP 200: one fetched line" 1 "$n" || note "$KFT_OUT"
kft delete status-403 status-500 status-200 >/dev/null 2>&1
expect_no_processes "no process left"
