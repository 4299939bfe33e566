#!/usr/bin/env bash
# Download progress of the initializers (issue 4, point 4: "a progress bar on a TTY"). The
# supervisor has no terminal, so the initializer logs a progress line at most once a second
# ("dataset-initializer: downloading FILE: DONE / TOTAL (P%)") and one "fetched" line per file;
# `kftrainer logs -f` / `train --follow` draw the progress lines as a bar redrawn in place when
# stdout is a terminal, and print them as plain lines otherwise.
. "$KFT_LOCAL_DIR/lib.sh"
ex="$KFT_REPO_ROOT/examples/local/initializers"
cd "$ex" || exit 1

mkdir -p "$KFT_CASE_TMP/data"
head -c 600000 /dev/urandom >"$KFT_CASE_TMP/data/big.bin"
# 200 kB/s: the 600 kB file takes about 3 s, long enough for two or three progress lines.
FS_RATE=200000 start_file_server "$KFT_CASE_TMP/data" || {
	fail "file server" "did not start" "$(cat "$FS_LOG" 2>/dev/null)"
	exit 0
}

run_capture timeout 120 "$KFTRAINER" train -r runtime.yaml --runtime torch-with-initializers \
	--name progress --dataset "$FS_URL/big.bin" --model "file://$ex/model" --follow \
	-- wc -c /workspace/dataset/big.bin
expect_eq "train --follow exits 0" 0 "$KFT_RC" || fail "train output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "the trainer read the whole file" "$KFT_OUT" "600000 "
expect_not_contains "not a terminal: no bar drawn" "$KFT_OUT" $'\e[K'

run_capture kft logs progress --step dataset-initializer
lines=$(grep -cE '^dataset-initializer: downloading big\.bin: [0-9.]+ KiB / 585\.9 KiB \([0-9]+%\)$' \
	<<<"$KFT_OUT")
if [ "$lines" -ge 1 ] && [ "$lines" -le 6 ]; then
	pass "the log has a progress line about once a second ($lines)"
else
	fail "the log has a progress line about once a second" "$lines lines" "$KFT_OUT"
fi
expect_eq "one fetched line" 1 "$(grep -c '^fetched big.bin (600000 bytes)$' <<<"$KFT_OUT")"

# On a terminal (script(1) gives logs -f one), the progress lines become a bar: erased and
# redrawn with a carriage return, shown without the log's "dataset-initializer: downloading".
if command -v script >/dev/null; then
	tty_out=$(timeout 60 script -qec "'$KFTRAINER' logs -f progress --step dataset-initializer" \
		/dev/null </dev/null)
	expect_contains "terminal: the bar is drawn in place" "$tty_out" $'\r\e[K'
	if grep -qE 'big\.bin: [0-9.]+ KiB / 585\.9 KiB \([0-9]+%\) \[#* *\]' <<<"$tty_out"; then
		pass "terminal: the bar shows file, sizes, percentage"
	else
		fail "terminal: the bar shows file, sizes, percentage" "not found" "$tty_out"
	fi
	expect_not_contains "terminal: no raw progress line" "$tty_out" \
		"dataset-initializer: downloading"
	expect_contains "terminal: ordinary lines still print" "$tty_out" "fetched big.bin"
else
	skip "terminal rendering" "script(1) is not installed"
fi

kft delete progress >/dev/null 2>&1
expect_no_processes "no process left"
