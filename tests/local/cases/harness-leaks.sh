#!/usr/bin/env bash
# The harness's own leak checks (run-tier), run on a fixture that leaks on purpose: they must
# report the leaked process and temporary files as failures, kill the process, and still
# remove everything of the nested tier.
. "$KFT_LOCAL_DIR/lib.sh"

pidfile="$KFT_CASE_TMP/leak.pid"
run_capture env KFT_LEAK_PID_FILE="$pidfile" "$KFT_LOCAL_DIR/run-tier" \
	"$KFT_LOCAL_DIR/fixtures/leaky.sh"
expect_eq "the nested tier fails" 1 "$KFT_RC"
expect_contains "the fixture's own check passed" "$KFT_OUT" "PASS: leaky fixture ran"
expect_contains "the leaked process is reported" "$KFT_OUT" \
	"FAIL: leaky: leak: 1 process(es) still running"
expect_contains "the leaked TMPDIR entry is reported" "$KFT_OUT" \
	"FAIL: leaky: leak: temporary files left in systmp: kft-leaked."
leaked=$(cat "$pidfile" 2>/dev/null)
if [ -n "$leaked" ] && ! any_alive "$leaked"; then
	pass "the leaked process was killed (pid $leaked)"
else
	fail "the leaked process was killed" "pid '${leaked}' is alive or unknown"
	[ -n "$leaked" ] && kill -KILL "$leaked" 2>/dev/null
fi
if grep -q "^FAIL: leaky: leak: temporary files left in slash-tmp: kftrainer-leaked-" <<<"$KFT_OUT"; then
	pass "a file written to /tmp directly is reported (private /tmp)"
else
	# Without a private /tmp the fixture wrote to the real /tmp: clean it and say why.
	rm -rf /tmp/kftrainer-leaked-* 2>/dev/null
	skip "a file written to /tmp directly is reported" "no private /tmp here (needs root and unshare)"
fi
expect_contains "the summary line" "$KFT_OUT" "local: 1 passed, "
