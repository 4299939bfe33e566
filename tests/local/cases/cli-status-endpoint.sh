#!/usr/bin/env bash
# Progress reported the upstream way: a 2-node job's processes call the Kubeflow SDK's own
# kubeflow.trainer.update_trainjob_status() (PyPI kubeflow==0.5.0, in a venv made here), which
# posts to $KUBEFLOW_TRAINER_SERVER_URL with the CA and token files the TrainJobStatus plugin
# names; the job's supervisor serves that endpoint on loopback and records
# status.trainerStatus, which `get` shows (PROGRESS, ETA, METRICS with -o wide).
# Then the endpoint itself, with curl and openssl, against upstream v2.3.0 pkg/statusserver:
#   - a token that is not the job's, or none → 403 Forbidden (upstream answers 403, not 401:
#     handleTrainJobRuntimeStatus turns a failed Authorize into StatusReasonForbidden);
#   - another job's or namespace's status path → 403 (the token's audience is this job only);
#     any other path → 404 "Not found" (handleDefault);
#   - a body over maxBodySize (1 << 16) → 413 "Payload too large" (bodySizeLimitMiddleware);
#   - a body that does not decode → 422 "Invalid payload"; a status the CRD refuses → 422;
#   - plain HTTP and TLS without forward secrecy are refused (our rule: ECDHE suites only).
# And ours (issue 24.2, 24.8): the job's own report is answered while another local user holds
# 70 idle connections and opens new ones as fast as it can; a status port another process took
# while the job was suspended makes `resume` fail, naming the port, and the job stays suspended.
# The next jobs' servers present the CA kept in the state directory; a damaged one is replaced.
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1
gate=$KFT_CASE_TMP/gate
venv=$KFT_CASE_TMP/venv
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip}

if ! command -v curl >/dev/null || ! command -v openssl >/dev/null; then
	skip "status endpoint" "curl and openssl are needed"
	exit 0
fi
if ! "$KFT_PYTHON" -m venv "$venv" >"$KFT_CASE_TMP/venv.log" 2>&1; then
	skip "SDK reports progress" "python3 -m venv failed: $(tail -1 "$KFT_CASE_TMP/venv.log")"
	exit 0
fi
if ! timeout 240 "$venv/bin/pip" install -q --disable-pip-version-check kubeflow==0.5.0 \
	>>"$KFT_CASE_TMP/venv.log" 2>&1; then
	skip "SDK reports progress" "pip install kubeflow==0.5.0 failed (PyPI unreachable?): $(tail -1 "$KFT_CASE_TMP/venv.log")"
	exit 0
fi

# Each node reports once through the SDK (it throttles to one report per 5 s per process),
# says whether it was accepted, leaves the URL for the checks below and waits for the gate.
kft train --runtime torch-distributed --nodes 2 --name sdk -- sh -c '
	printf "%s\n" "$KUBEFLOW_TRAINER_SERVER_URL" >"'"$KFT_CASE_TMP"'/url"
	"'"$venv"'/bin/python" -c "
from kubeflow.trainer import update_trainjob_status
ok = update_trainjob_status(progress_percent=40, estimated_remaining_seconds=600,
                            metrics={\"loss\": 0.25})
print(\"reported\", ok)"
	while [ ! -e "'"$gate"'" ]; do sleep 0.1; done' >/dev/null

ts() { job_json sdk | jq -r '.status.trainerStatus // empty | "\(.progressPercentage) \(.estimatedRemainingSeconds) \(.metrics | map("\(.name)=\(.value)") | join(","))"'; }
wait_for 90 sh -c "\"$KFTRAINER\" get sdk -o json | jq -e '.status.trainerStatus.metrics'"
expect_eq "the SDK's report is status.trainerStatus" "40 600 loss=0.25" "$(ts)"
wait_for 30 sh -c "[ \"\$(\"$KFTRAINER\" logs sdk | grep -c 'reported True')\" = 2 ]"
expect_eq "both nodes' update_trainjob_status() returned True" 2 "$(kft logs sdk | grep -c 'reported True')"
expect_eq "lastUpdatedTime as metav1.Time writes it (UTC, whole seconds)" true \
	"$(job_json sdk | jq -r '.status.trainerStatus.lastUpdatedTime | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")')"

run_capture kft get sdk
col() { awk -v want="$1" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == want) c = i} NR == 2 {print $c}' <<<"$KFT_OUT"; }
expect_eq "get: PROGRESS" "40%" "$(col PROGRESS)"
eta=$(col ETA)
if [[ $eta =~ ^([0-9]+m)?([0-9]+s)?$ && -n $eta ]]; then
	pass "get: ETA counts down from the reported 600 s ($eta)"
else
	fail "get: ETA counts down from the reported 600 s" "got '$eta'" "$KFT_OUT"
fi
run_capture kft get sdk -o wide
expect_eq "get -o wide: METRICS" "loss=0.25" "$(col METRICS)"

# ---- the endpoint by hand ------------------------------------------------------------------
url=$(cat "$KFT_CASE_TMP/url")
dir=$KFTRAINER_STATE_DIR/jobs/default/sdk/status-server
ca=$dir/ca.crt
token=$(cat "$dir/token")
expect_eq "CA and token files are 0600" "600 600" "$(stat -c %a "$ca") $(stat -c %a "$dir/token")"
hostport=$(sed -E 's|https://([^/]+)/.*|\1|' <<<"$url")
post() { # post TOKEN URL DATA-FILE: prints "CODE BODY"
	curl -sS --cacert "$ca" -o "$KFT_CASE_TMP/body" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer $1" -H 'Content-Type: application/json' --data-binary "@$3" "$2"
	printf ' %s' "$(cat "$KFT_CASE_TMP/body")"
}
printf '%s' '{"trainerStatus": {"progressPercentage": 55, "lastUpdatedTime": "2026-01-02T03:04:05Z"}}' >"$KFT_CASE_TMP/ok.json"
expect_eq "a report with the job's token: 200, the request echoed" \
	'200 {"trainerStatus":{"progressPercentage":55,"lastUpdatedTime":"2026-01-02T03:04:05Z"}}' \
	"$(post "$token" "$url" "$KFT_CASE_TMP/ok.json")"
wait_for 10 sh -c "[ \"\$(\"$KFTRAINER\" get sdk -o json | jq -r .status.trainerStatus.progressPercentage)\" = 55 ]"
expect_eq "curl's report replaced trainerStatus" "55 null" \
	"$(job_json sdk | jq -r '.status.trainerStatus | "\(.progressPercentage) \(.metrics)"')"
forbidden='403 {"metadata":{},"status":"Failure","message":"Forbidden","reason":"Forbidden","code":403}'
expect_eq "a wrong token: 403 Forbidden" "$forbidden" "$(post "x$token" "$url" "$KFT_CASE_TMP/ok.json")"
expect_eq "an empty bearer token: 403 Forbidden" "$forbidden" "$(post "" "$url" "$KFT_CASE_TMP/ok.json")"
expect_eq "another job's path: 403" "$forbidden" \
	"$(post "$token" "${url%/trainjobs/sdk/status}/trainjobs/other/status" "$KFT_CASE_TMP/ok.json")"
expect_eq "another namespace's path: 403" "$forbidden" \
	"$(post "$token" "${url/namespaces\/default/namespaces/team-a}" "$KFT_CASE_TMP/ok.json")"
expect_eq "another path: 404 Not found" \
	'404 {"metadata":{},"status":"Failure","message":"Not found","reason":"NotFound","code":404}' \
	"$(post "$token" "https://$hostport/apis" "$KFT_CASE_TMP/ok.json")"
head -c 70000 /dev/zero | tr '\0' ' ' >"$KFT_CASE_TMP/big.json"
expect_eq "a body over 64 KiB: 413" \
	'413 {"metadata":{},"status":"Failure","message":"Payload too large","reason":"RequestEntityTooLarge","code":413}' \
	"$(post "$token" "$url" "$KFT_CASE_TMP/big.json")"
printf 'not json' >"$KFT_CASE_TMP/bad.json"
expect_eq "a body that does not decode: 422 Invalid payload" \
	'422 {"metadata":{},"status":"Failure","message":"Invalid payload","reason":"Invalid","code":422}' \
	"$(post "$token" "$url" "$KFT_CASE_TMP/bad.json")"
printf '%s' '{"trainerStatus": {"progressPercentage": 101, "lastUpdatedTime": "2026-01-02T03:04:05Z"}}' >"$KFT_CASE_TMP/over.json"
got=$(post "$token" "$url" "$KFT_CASE_TMP/over.json")
expect_contains "progressPercentage 101: 422 naming the field" "$got" 'progressPercentage: Invalid value: 101'
expect_eq "the refused report changed nothing" 55 "$(job_json sdk | jq -r .status.trainerStatus.progressPercentage)"

if curl -sS -m 5 -o /dev/null "http://$hostport/" 2>/dev/null; then
	fail "plain HTTP is refused" "curl got an HTTP answer"
else
	pass "plain HTTP is refused"
fi
tls() { openssl s_client -connect "$hostport" -CAfile "$ca" "$@" </dev/null 2>&1; }
expect_contains "TLS 1.2 with ECDHE: a verified session" \
	"$(tls -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256)" "Verify return code: 0 (ok)"
expect_contains "a suite without forward secrecy (AES128-GCM-SHA256): refused" \
	"$(tls -tls1_2 -cipher AES128-GCM-SHA256)" "Cipher is (NONE)"

# ---- a flood from another local user (four processes as user nobody) ------------------------
flood_report() {
	printf '%s' '{"trainerStatus": {"progressPercentage": 66, "lastUpdatedTime": "2026-01-02T03:04:05Z"}}' >"$KFT_CASE_TMP/flood.json"
	expect_eq "$1" '200 {"trainerStatus":{"progressPercentage":66,"lastUpdatedTime":"2026-01-02T03:04:05Z"}}' \
		"$(post "$token" "$url" "$KFT_CASE_TMP/flood.json" 2>&1)"
}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! as_nobody /usr/bin/python3 -c pass 2>/dev/null; then
	skip "under another user's connection flood, the job's own report: 200" \
		"needs root, setpriv and /usr/bin/python3 to be another user"
else
	floods=()
	for i in 1 2 3 4; do
		setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$hostport" 70 \
			<"$KFT_LOCAL_DIR/flood.py" >"$KFT_CASE_TMP/flood$i" &
		floods+=($!)
		on_exit "kill $! 2>/dev/null"
	done
	if wait_for 30 sh -c "cat '$KFT_CASE_TMP'/flood? | grep -c ready | grep -qx 4"; then
		for i in 1 2 3; do flood_report "under another user's connection flood, the job's own report: 200 ($i)"; done
	else
		fail "under another user's connection flood, the job's own report: 200" "the flood never held 70 connections"
	fi
	kill "${floods[@]}" 2>/dev/null
	wait "${floods[@]}" 2>/dev/null
fi
"$KFT_PYTHON" "$KFT_LOCAL_DIR/flood.py" "$hostport" 70 --hold >"$KFT_CASE_TMP/idle" &
idle=$!
on_exit "kill $idle 2>/dev/null"
if wait_for 30 grep -q ready "$KFT_CASE_TMP/idle"; then
	flood_report "70 idle sockets open: the job's own report: 200"
else
	fail "70 idle sockets open: the job's own report: 200" "could not open 70"
fi
kill "$idle"
wait "$idle" 2>/dev/null

# ---- the status port taken while suspended ----------------------------------------------------
port=${hostport##*:}
kft suspend sdk >/dev/null
wait_for 30 job_has sdk Suspended
"$KFT_PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").close(); time.sleep(300)' "$port" "$KFT_CASE_TMP/squatting" &
squatter=$!
on_exit "kill $squatter 2>/dev/null"
wait_for 10 test -e "$KFT_CASE_TMP/squatting" || fail "another process takes the status port" "it could not"
expect_exit "resume with the status port taken: exit 1" 1 kft resume sdk
expect_contains "the error names the port" "$KFT_ERR" "127.0.0.1:$port is in use"
expect_eq "the job is still suspended" True "$(job_cond sdk Suspended | cut -d'|' -f1)"
kill "$squatter"
wait "$squatter" 2>/dev/null
expect_exit "resume once the port is free: exit 0" 0 kft resume sdk
wait_for 60 sh -c "[ \"\$(\"$KFTRAINER\" get sdk -o json | jq -r .status.trainerStatus.progressPercentage)\" = 40 ]"
expect_eq "after resume the nodes' reports are served again" 40 \
	"$(job_json sdk | jq -r .status.trainerStatus.progressPercentage)"

touch "$gate"
kft wait sdk --timeout 60s >/dev/null
expect_eq "the job completes" "True" "$(job_cond sdk Complete | cut -d'|' -f1)"
first_ca=$(cat "$ca")
kft delete sdk >/dev/null

# ---- the state directory's kept CA and certificate (issue 24.16) ------------------------------
# Every job's server presents the one CA kept in <state dir>/status-server.pem, as upstream's
# controller serves every TrainJob with its rotator's one certificate; a kept file that does not
# hold is replaced, and the next job's SDK report is verified against the new CA.
kept=$KFTRAINER_STATE_DIR/status-server.pem
report_once() { # report_once NAME: a 1-node job whose process reports once through the SDK
	kft train --runtime torch-distributed --name "$1" -- "$venv/bin/python" -c "
from kubeflow.trainer import update_trainjob_status
print('reported', update_trainjob_status(progress_percent=70))" >/dev/null
	kft wait "$1" --timeout 90s >/dev/null
	kft logs "$1" | grep -c 'reported True'
}
expect_eq "the kept credentials are 0600" 600 "$(stat -c %a "$kept")"
expect_eq "the next job's report is verified and recorded" 1 "$(report_once kept1)"
expect_eq "... with the same CA as the job before" "$first_ca" \
	"$(cat "$KFTRAINER_STATE_DIR/jobs/default/kept1/status-server/ca.crt")"
printf '%s\n' '-----BEGIN CERTIFICATE-----' 'damaged' '-----END CERTIFICATE-----' >"$kept"
expect_eq "a damaged kept file: the next job's report is still verified" 1 "$(report_once kept2)"
kept2_ca=$(cat "$KFTRAINER_STATE_DIR/jobs/default/kept2/status-server/ca.crt")
if [ "$kept2_ca" != "$first_ca" ] && grep -qF "$(sed -n 2p <<<"$kept2_ca")" "$kept" &&
	! grep -q damaged "$kept" && [ "$(stat -c %a "$kept")" = 600 ]; then
	pass "... with a new CA, kept (0600) in place of the damaged file"
else
	fail "... with a new CA, kept (0600) in place of the damaged file" "$(ls -l "$kept"; head -3 "$kept")"
fi
kft delete kept1 >/dev/null
kft delete kept2 >/dev/null
expect_no_processes "no process left"
