#!/usr/bin/env bash
# up/down hygiene, on a cluster of its own (basic mode, separate state directory):
#   - ten up/down cycles leave no process, listening port, temporary directory or build scratch
#   - up is idempotent (a second up reuses the running cluster), down twice is harmless
#   - a killed cluster, an `up` killed half-way, and a stale state directory whose pid file
#     names someone else's process are all handled: the next up starts clean, and only our own
#     processes are ever signalled
# run-tier runs this before starting the tier's main cluster. KFT_CYCLES sets the count (10).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

UP=$KFT_CLUSTER_DIR/up
DOWN=$KFT_CLUSTER_DIR/down
tmp=${TMPDIR:-/tmp}
KFT_CLUSTER_STATE="$(state_dir)-cycles"
export KFT_CLUSTER_STATE
STATE=$KFT_CLUSTER_STATE
export KUBECACHEDIR="$STATE/kube-cache"
cycles=${KFT_CYCLES:-10}
# up creates nothing in the temporary directory but its state directory.
ours_in_tmp() { find "$tmp" -maxdepth 1 -name 'kftrainer-cluster*' | sort; }
tmp_before=$(ours_in_tmp)

pids_seen=()
ports_seen=()
record_procs() {
	local f pid
	for f in "$STATE"/pids/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		pids_seen+=("$pid")
		mapfile -t -O "${#ports_seen[@]}" ports_seen < <(listening_ports_of_pid "$pid")
	done
}
# Is anything recorded so far still alive (as ours) or still listening?
leftovers() {
	local pid port live
	live=$(listening_ports_all)
	for pid in "${pids_seen[@]}"; do
		pid_is_ours "$pid" && echo "process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-120)"
	done
	for port in "${ports_seen[@]}"; do
		grep -qx "$port" <<<"$live" && echo "port $port still listening"
	done
	[ -d "$STATE" ] && echo "state directory $STATE still exists"
	return 0
}
stranger=
# shellcheck disable=SC2317 # called through the trap
cleanup() {
	"$DOWN" >/dev/null 2>&1
	rm -f "$tmp/kft-cycles-$$.err"
	[ -z "$stranger" ] || kill "$stranger" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# --- ten cycles ---------------------------------------------------------------------------------
ok=1
for i in $(seq 1 "$cycles"); do
	if ! out=$("$UP" 2>"$tmp/kft-cycles-$$.err"); then
		fail "up/down cycle $i" "up failed" "$(tail -n 20 "$tmp/kft-cycles-$$.err")"
		ok=0
		break
	fi
	if [ "$(grep -c . <<<"$out")" != 2 ] || ! grep -q '^export KUBECONFIG=' <<<"$out" ||
		! grep -q '^export PATH=' <<<"$out"; then
		fail "up prints only the two exports" "stdout was:" "$out"
		ok=0
	fi
	if ! (eval "$out" && [ "$(command -v kubectl)" = "$(cat "$STATE/bin-dir")/kubectl" ] &&
		kubectl get namespace default >/dev/null); then
		fail "up/down cycle $i" "the exported kubectl/KUBECONFIG do not reach the cluster"
		ok=0
	fi
	record_procs
	if [ "$i" = 1 ]; then
		t=$SECONDS
		api=$(cat "$STATE/pids/kube-apiserver.pid")
		again=$("$UP" 2>/dev/null)
		if [ "$again" = "$out" ] && [ "$(cat "$STATE/pids/kube-apiserver.pid")" = "$api" ]; then
			pass "second up reuses the running cluster ($((SECONDS - t)) s)"
		else
			fail "second up reuses the running cluster" "a new cluster was started or the exports changed"
		fi
	fi
	if ! "$DOWN" 2>"$tmp/kft-cycles-$$.err"; then
		fail "up/down cycle $i" "down failed" "$(cat "$tmp/kft-cycles-$$.err")"
		ok=0
		break
	fi
done
rm -f "$tmp/kft-cycles-$$.err"
left=$(leftovers)
# Only new entries count: another session's cluster may go down in the meantime.
new_in_tmp=$(comm -13 <(echo "$tmp_before") <(ours_in_tmp))
[ -z "$new_in_tmp" ] || left+=$'\n'"temporary entries: $new_in_tmp"
# A build's scratch is a leftover once no build holds its module's lock: the cache is shared,
# and another checkout's build (of a module this cluster does not need) may be under way.
abandoned_scratch() {
	local d name
	for d in "$(cache_root)"/.build-*; do
		[ -d "$d" ] || continue
		name=${d##*/.build-}
		name=${name%.*}
		flock -n "$(cache_root)/.lock-$name" true && echo "$d"
	done
}
[ -z "$(abandoned_scratch)" ] || left+=$'\n'"build scratch left: $(abandoned_scratch)"
if [ "$ok" = 1 ] && [ -z "${left//$'\n'/}" ]; then
	pass "$cycles up/down cycles leave no process, port or temp directory (${#pids_seen[@]} processes checked)"
else
	fail "$cycles up/down cycles leave no process, port or temp directory" "leftovers" "$left"
fi
if "$DOWN" && "$DOWN"; then
	pass "down with no cluster succeeds"
else
	fail "down with no cluster succeeds" "non-zero exit"
fi

# --- a killed cluster -----------------------------------------------------------------------------
pids_seen=() ports_seen=()
if out=$("$UP" 2>/dev/null); then
	(eval "$out" && kubectl create configmap left-from-before -n default >/dev/null)
	record_procs
	for f in "$STATE"/pids/*.pid; do kill -KILL "$(cat "$f")" 2>/dev/null; done
	sleep 0.5
	if out=$("$UP" 2>/dev/null) && ! (eval "$out" && kubectl get configmap left-from-before -n default >/dev/null 2>&1); then
		left=$(leftovers | grep '^process')
		if [ -z "$left" ]; then
			pass "after a killed cluster, up starts clean (no old data, no old processes)"
		else
			fail "after a killed cluster, up starts clean" "leftovers" "$left"
		fi
	else
		fail "after a killed cluster, up starts clean" "up failed or the old etcd data survived"
	fi
	"$DOWN" 2>/dev/null
else
	fail "after a killed cluster, up starts clean" "up failed"
fi

# --- an up killed half-way --------------------------------------------------------------------------
pids_seen=() ports_seen=()
"$UP" >/dev/null 2>&1 &
uppid=$!
wait_for 60 test -f "$STATE/pids/kube-apiserver.pid"
kill -KILL "$uppid" 2>/dev/null
wait "$uppid" 2>/dev/null
record_procs
if "$UP" >/dev/null 2>&1; then
	# Only processes are compared: the new cluster may have drawn one of the old ports.
	left=$(leftovers | grep '^process')
	if [ -z "$left" ]; then
		pass "after an up killed half-way, the next up cleans its processes"
	else
		fail "after an up killed half-way, the next up cleans its processes" "leftovers" "$left"
	fi
else
	fail "after an up killed half-way, the next up cleans its processes" "up failed"
fi
record_procs
"$DOWN" 2>/dev/null
left=$(leftovers)
[ -z "$left" ] || fail "down after a recovered up leaves nothing" "leftovers" "$left"

# --- stale state naming a stranger's pid ------------------------------------------------------------
sleep 300 &
stranger=$!
mkdir -p "$STATE/pids"
echo "$stranger" >"$STATE/pids/etcd.pid"
echo "$stranger" >"$STATE/pids/kube-apiserver.pid"
touch "$STATE/ready"
if "$UP" >/dev/null 2>&1 && kill -0 "$stranger" 2>/dev/null; then
	pass "a stale state directory is replaced and a stranger's pid is never signalled"
else
	fail "a stale state directory is replaced and a stranger's pid is never signalled" \
		"up failed or process $stranger was killed"
fi
"$DOWN" 2>/dev/null
kill -0 "$stranger" 2>/dev/null || fail "down never signals a stranger" "process $stranger died"
kill "$stranger" 2>/dev/null
wait "$stranger" 2>/dev/null
stranger=
exit 0
