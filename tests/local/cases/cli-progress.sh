#!/usr/bin/env bash
# Progress a training process reports through $KFTRAINER_STATUS_FILE shows in `get` (PROGRESS,
# ETA counting down from the report, METRICS with -o wide) and in -o json as upstream's
# status.trainerStatus.
# Pins: upstream v2.3.0 TrainerStatus (progressPercentage, estimatedRemainingSeconds, metrics,
# lastUpdatedTime) and UpdateTrainJobStatusRequest's {"trainerStatus": ...} body.
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT" || exit 1
gate=$KFT_CASE_TMP/gate

kft train --runtime torch-distributed --name prog -- sh -c '
	printf "%s" "{\"trainerStatus\": {\"progressPercentage\": 42, \"estimatedRemainingSeconds\": 185,
	  \"metrics\": [{\"name\": \"loss\", \"value\": \"0.25\"}]}}" >"$KFTRAINER_STATUS_FILE"
	while [ ! -e "'"$gate"'" ]; do sleep 0.1; done' >/dev/null
progress() { kft get prog --no-headers | awk '{print $6}'; }
if wait_for 30 sh -c "[ \"\$(\"$KFTRAINER\" get prog --no-headers | awk '{print \$6}')\" = 42% ]"; then
	pass "get shows PROGRESS 42%"
else
	fail "get shows PROGRESS 42%" "got $(progress)"
fi
run_capture kft get prog
eta=$(awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "ETA") c = i} NR == 2 {print $c}' <<<"$KFT_OUT")
# 185 s at the report, counting down since: at most 3m5s, never a wall-clock assertion below
secs=$(sed -E 's/^(([0-9]+)m)?(([0-9]+)s)?$/\2 \4/' <<<"$eta" | awk '{print $1 * 60 + $2}')
if [[ $eta =~ ^([0-9]+m)?([0-9]+s)?$ && -n $eta ]] && [ "$secs" -le 185 ]; then
	pass "ETA counts down from 185 s ($eta)"
else
	fail "ETA counts down from 185 s" "got '$eta'" "$KFT_OUT"
fi
run_capture kft get prog -o wide
expect_eq "-o wide: METRICS" "METRICS loss=0.25" \
	"$(awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "METRICS") c = i} NR == 2 {print "METRICS", $c}' <<<"$KFT_OUT")"
expect_eq "-o json carries trainerStatus" '42 185 loss=0.25 true' \
	"$(job_json prog | jq -r '.status.trainerStatus | "\(.progressPercentage) \(.estimatedRemainingSeconds) \(.metrics[0].name)=\(.metrics[0].value) \(.lastUpdatedTime != null)"')"
touch "$gate"
kft wait prog --timeout 60s >/dev/null
kft delete prog >/dev/null
expect_no_processes "no process left"
