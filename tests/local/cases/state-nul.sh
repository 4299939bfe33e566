#!/usr/bin/env bash
# Local state is data too: a NUL in a TrainJob's strings ("\u0000" in JSON) never damages the
# state directory. In an annotation it is stored as given and the job runs; in an argument (which
# a process cannot take) it is refused at submission naming the field, with nothing stored. And
# one damaged row (written over in the real SQLite store) is skipped with a warning naming it
# while get, wait, logs and delete --all keep working for the other jobs.
# Pins: the API server stores any string (a Go string holds NUL), so an annotation with one is
# valid; what kubectl shows for the others is unchanged.
. "$KFT_LOCAL_DIR/lib.sh"

tj() { # NAME ANNOTATION-JSON COMMAND-JSON
	printf '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"%s","annotations":%s},"spec":{"runtimeRef":{"name":"torch-distributed"},"trainer":{"command":%s}}}\n' "$@"
}
tj nul-note '{"note":"x\u0000y"}' '["sh","-c","echo from-nul-note"]' >"$KFT_CASE_TMP/note.json"
tj nul-arg '{}' '["sh","-c","echo never","a\u0000b"]' >"$KFT_CASE_TMP/arg.json"
tj plain '{}' '["sh","-c","echo from-plain"]' >"$KFT_CASE_TMP/plain.json"

expect_exit "validate accepts a NUL in an annotation (the API server stores it)" 0 \
	kft validate "$KFT_CASE_TMP/note.json"
expect_exit "train accepts it" 0 kft train -f "$KFT_CASE_TMP/note.json"
expect_exit "a plain job beside it" 0 kft train -f "$KFT_CASE_TMP/plain.json"
expect_exit "wait for the NUL job" 0 kft wait nul-note --for Complete --timeout 120s
expect_exit "wait for the plain job" 0 kft wait plain --for Complete --timeout 120s
expect_eq "the annotation is stored whole" '"x\u0000y"' \
	"$(kft get nul-note -o json | jq -c '.metadata.annotations.note')"
expect_exit "get lists every job" 0 kft get
expect_contains "both are listed" "$KFT_OUT" "nul-note"
expect_eq "logs of the NUL job" from-nul-note "$(kft logs nul-note 2>&1)"

expect_exit "a NUL in an argument is refused" 1 kft train -f "$KFT_CASE_TMP/arg.json"
expect_contains "naming the field" "$KFT_ERR" \
	'"nul-arg" is invalid: spec.trainer.command[3]: Invalid value: a NUL character'
expect_exit "and nothing is stored" 3 kft get nul-arg
[ ! -e "$KFTRAINER_STATE_DIR/jobs/default/nul-arg" ] && pass "no job directory is left" ||
	fail "no job directory is left" "$KFTRAINER_STATE_DIR/jobs/default/nul-arg exists"

# Damage one row as a bug or a hand edit could: its spec is no longer JSON.
"$KFT_PYTHON" - "$KFTRAINER_STATE_DIR/state.db" <<'PY' || fail "damage one row" "python failed"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60)
db.execute("UPDATE jobs SET spec = '{\"metadata\":' WHERE name = 'nul-note'")
db.commit()
PY
expect_exit "get still lists the others" 0 kft get
expect_contains "the plain job is listed" "$KFT_OUT" plain
expect_not_contains "the damaged job is not" "$KFT_OUT" nul-note
expect_contains "a warning names the damaged job" "$KFT_ERR" "warning: skipping TrainJob default/nul-note"
expect_exit "get NAME of another job" 0 kft get plain
expect_exit "wait for another job" 0 kft wait plain --for Complete --timeout 10s
expect_eq "logs of another job" from-plain "$(kft logs plain 2>&1)"
expect_exit "get NAME of the damaged job fails" 1 kft get nul-note
expect_contains "saying why" "$KFT_ERR" "stored JSON is damaged"
expect_exit "delete --all" 0 kft delete --all
expect_contains "deletes the others" "$KFT_OUT" '"plain" deleted'
expect_contains "and warns about the damaged one" "$KFT_ERR" "default/nul-note"
expect_exit "the damaged job can be deleted by name" 0 kft delete nul-note
expect_exit "get: nothing left" 0 kft get
expect_not_contains "nothing listed" "$KFT_OUT" "nul-note"
expect_no_processes "no process left"
