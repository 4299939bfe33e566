#!/usr/bin/env bash
# Verbs on a job that does not exist: kubectl's NotFound line, exit 3 (ours: kubectl exits 1,
# but a program, such as the Python package, must tell NotFound from a failure without reading
# the words), and nothing else happens; a failure beside a missing job still exits 1; the forms that tolerate absence (delete --ignore-not-found, wait --for delete)
# succeed.
# Pins: kubectl's `Error from server (NotFound): trainjobs.trainer.kubeflow.org "NAME" not
# found` (k8s.io/apimachinery pkg/api/errors NewNotFound, v0.36.2) and `No resources found`.
. "$KFT_LOCAL_DIR/lib.sh"

nf='Error from server (NotFound): trainjobs.trainer.kubeflow.org "ghost" not found'
for cmd in "get ghost" "get ghost -o json" "logs ghost" "logs -f ghost" "wait ghost" \
	"suspend ghost" "resume ghost" "delete ghost" "pods ghost"; do
	# shellcheck disable=SC2086
	expect_exit "$cmd: exit 3" 3 kft $cmd && expect_eq "$cmd: NotFound" "$nf" "$KFT_ERR"
	expect_eq "$cmd: nothing on stdout" "" "$KFT_OUT"
done
expect_exit "get two names, both missing: exit 3" 3 kft get ghost other -o name
expect_eq "... one NotFound line each" 2 "$(grep -c 'NotFound' <<<"$KFT_ERR")"
expect_exit "delete --ignore-not-found: exit 0" 0 kft delete ghost --ignore-not-found
expect_eq "... silently" "" "$KFT_OUT$KFT_ERR"
expect_exit "wait --for delete on a missing job: exit 0" 0 kft wait ghost --for delete
expect_eq "... condition met" "trainjob.trainer.kubeflow.org/ghost condition met" "$KFT_OUT"
expect_exit "delete --all on an empty namespace: exit 0" 0 kft delete --all
expect_eq "... No resources found" "No resources found" "$KFT_ERR"

run_capture kft get -A
expect_eq "get -A on an empty store" "No resources found" "$KFT_ERR"
run_capture kft get -n team-a
expect_eq "get -n names the namespace" "No resources found in team-a namespace." "$KFT_ERR"
run_capture kft get -o json
expect_eq "get -o json on an empty store: an empty v1 List" "v1 List 0" \
	"$(jq -r '"\(.apiVersion) \(.kind) \(.items | length)"' <<<"$KFT_OUT")"
expect_eq "nothing was created" "" "$(ls -A "$KFTRAINER_STATE_DIR/jobs" 2>/dev/null)"
