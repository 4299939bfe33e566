#!/usr/bin/env bash
# An s3:// model or data set is a folder of objects: upstream v2.3.0's S3 initializers list
# every object under the URI's key (pkg/initializers/utils/opendal.py: a recursive
# ListObjectsV2, then each object) and lay them out below the destination by their path
# after the prefix, leaving out keys that match IGNORE_PATTERNS; one object named exactly by
# the key is that object alone. Here, through
# an S3 endpoint stand-in (the tier's file server, path-style, signed requests), with list
# replies of 2 keys so the continuation token is followed (issue 20, item 2: s3:// for the
# torchtune runtimes' initializers).
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

root=$KFT_CASE_TMP/bkt
mkdir -p "$root/models/llama/original" "$root/models/llama-other" "$root/data"
echo '{"layers": 2}' >"$root/models/llama/config.json"
echo weights >"$root/models/llama/model.safetensors"
echo tok >"$root/models/llama/original/tokenizer.model"
echo pickled >"$root/models/llama/original/consolidated.pth" # the SDK's default IGNORE_PATTERNS
echo not-this >"$root/models/llama-other/config.json" # shares the prefix "llama" but no "/"
cp data/train.csv "$root/data/train.csv"
FS_S3_PAGE=2 start_file_server "$KFT_CASE_TMP" || {
	fail "file server" "did not start"
	exit 0
}

cat >"$KFT_CASE_TMP/job.yaml" <<EOF2
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: s3-folder
spec:
  runtimeRef:
    name: torch-with-initializers
  initializer:
    dataset:
      storageUri: s3://bkt/data/train.csv
      env:
      - {name: ENDPOINT, value: "$FS_URL"}
      - {name: ACCESS_KEY_ID, value: AKIDEXAMPLE}
      - {name: SECRET_ACCESS_KEY, value: secret}
    model:
      storageUri: s3://bkt/models/llama
      env:
      - {name: ENDPOINT, value: "$FS_URL"}
      - {name: ACCESS_KEY_ID, value: AKIDEXAMPLE}
      - {name: SECRET_ACCESS_KEY, value: secret}
      - {name: IGNORE_PATTERNS, value: "*.msgpack,*.h5,*.bin,*.pt,*.pth"}
  trainer:
    command: [sh, -c, 'cd /workspace && find dataset model -type f | sort && cat model/original/tokenizer.model']
EOF2
run_capture timeout 120 "$KFTRAINER" train -r runtime.yaml -f "$KFT_CASE_TMP/job.yaml" --follow
expect_eq "train --follow exits 0" 0 "$KFT_RC" || note "$KFT_OUT $KFT_ERR"
for f in dataset/train.csv model/config.json model/model.safetensors model/original/tokenizer.model; do
	expect_contains "$f fetched" "$KFT_OUT" "$f"
done
expect_not_contains "a key sharing the prefix without its '/' is not fetched" "$KFT_OUT" "not-this"
expect_contains "the nested object's content" "$KFT_OUT" "tok"
expect_not_contains "IGNORE_PATTERNS leaves out the keys that match (opendal.py's fnmatch)" \
	"$KFT_OUT" "consolidated.pth"
log=$(cat "$FS_LOG")
expect_contains "the folder was listed, signed" "$log" "GET /bkt?list-type=2&prefix=models%2Fllama%2F - 200 auth amz"
expect_contains "the next page asked with the token" "$log" "GET /bkt?continuation-token="
expect_contains "the single object fetched as itself" "$log" "GET /bkt/data/train.csv - 200 auth amz"

# A folder with nothing in it: the initializer fails, saying so.
sed -e 's|models/llama$|models/none|' -e 's/name: s3-folder/name: s3-none/' "$KFT_CASE_TMP/job.yaml" >"$KFT_CASE_TMP/none.yaml"
run_capture timeout 120 "$KFTRAINER" train -r runtime.yaml -f "$KFT_CASE_TMP/none.yaml" --follow
expect_eq "an empty folder: the job fails" 1 "$KFT_RC"
expect_contains "... naming the prefix" "$KFT_OUT" "no object under models/none/"
expect_exit "delete" 0 kft delete s3-folder s3-none
