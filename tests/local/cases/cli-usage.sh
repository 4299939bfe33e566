#!/usr/bin/env bash
# Usage errors and help of every verb: bad usage exits 2 and names the flag or argument at
# fault; --help exits 0 with an "Exit status" section; nothing is stored.
# Pins: kubectl's habits (exit 1 for failures, usage errors distinct) as cmd/kftrainer/cli.h
# fixes them; no upstream counterpart (upstream has no CLI).
. "$KFT_LOCAL_DIR/lib.sh"

for verb in train optimize get logs wait suspend resume delete runtimes validate render; do
	run_capture kft "$verb" --help
	if [ "$KFT_RC" = 0 ] && grep -qi "exit status" <<<"$KFT_OUT"; then
		pass "$verb --help: exit 0 with an exit-status section"
	else
		fail "$verb --help: exit 0 with an exit-status section" "exit $KFT_RC" "$KFT_OUT"
	fi
done
run_capture kft help train
expect_contains "help VERB shows the verb's usage" "$KFT_OUT" "kftrainer train"
run_capture kft --help
expect_not_contains "the hidden supervise verb is not listed" "$KFT_OUT" "supervise"
expect_contains "--state-dir is documented" "$KFT_OUT" "--state-dir"
expect_contains "--help says which feature gates local jobs run with" "$KFT_OUT" \
	"local jobs (train, the SDK's LocalBackend) always
run with TrainJobStatus=true"

# usage NAME WANT-IN-STDERR CMD...: exit 2 and the message names what is wrong.
usage() {
	local name=$1 want=$2
	shift 2
	expect_exit "$name: exit 2" 2 "$@" && expect_contains "$name: says why" "$KFT_ERR" "$want"
}
usage "no verb" "Usage" kft
usage "unknown verb" 'unknown verb "frobnicate"' kft frobnicate
usage "unknown global option" '"--frob"' kft --frob get
usage "--state-dir without a value" "--state-dir" kft --state-dir
usage "train without input" "-f" kft train
usage "train -f and --runtime" "not both" kft train -f x.yaml --runtime torch-distributed
usage "train -f with a shortcut flag" "--nodes" kft train -f x.yaml --nodes 2
usage "train --nodes not a number" '--nodes: "two"' \
	kft train --runtime torch-distributed --nodes two -- true
usage "train --env without =" '--env: "FOO"' \
	kft train --runtime torch-distributed --env FOO -- true
usage "get -o unknown" '--output: unsupported format "table"' kft get -o table
usage "get NAME -A" "all namespaces" kft get x -A
usage "logs without NAME" "NAME" kft logs
usage "logs --node not a number" '--node: "x"' kft logs job --node x
usage "wait without NAME" "NAME" kft wait
usage "wait --timeout without unit" '--timeout: invalid duration "5"' kft wait job --timeout 5
usage "wait --for unknown form" '--for' kft wait job --for jsonpath=.x
usage "delete without NAME" "--all" kft delete
usage "delete NAME --all" "not both" kft delete x --all
usage "suspend --all is not an option" "Usage" kft suspend --all
usage "runtimes -o unknown" '--output' kft runtimes -o table
usage "optimize without input" "-f" kft optimize
usage "logs --trial without a search" "--trial goes with optimizationjob/NAME" kft logs job --trial x
usage "get optimizationjob/NAME NAME" "resource/name form" kft get optimizationjob/a b

expect_eq "nothing stored by usage errors" 0 "$(kft get -o json | jq '.items | length')"
