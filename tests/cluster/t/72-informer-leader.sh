#!/usr/bin/env bash
# The informer and leader election (src/kube/kube_cache.h) against the real API server.
# tests/cluster/progs/cache_check.c does the work and prints one PASS/FAIL line per check:
#   - informer: an informer on the ConfigMaps of a fresh namespace sees what kubectl creates,
#     labels and deletes (with old and new objects, indexes following), re-watches from the last
#     resourceVersion when the server ends a watch, and caches objects without managedFields;
#   - leader: two electors in one process on one Lease: exactly one leads, the standby takes over
#     when the leader stops (without and with ReleaseOnCancel), leaseTransitions increments.
# Then two elector processes on one Lease: the leader is killed with SIGKILL (no chance to
# release) and the other takes over within leaseDuration plus the jittered retry period, as
# client-go's leaderelection promises (3 s lease, 0.5 s retry here), seen with kubectl.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

prog=${KFT_BUILD_DIR:-$KFT_REPO_ROOT/build}/tests/cluster/cache_check
if [ ! -x "$prog" ]; then
	skip "informer and leader election against the API server" "no cache_check at $prog (build the tree first)"
	exit 0
fi
ns=$(new_namespace cache) || {
	fail "informer and leader election against the API server" "cannot create a namespace"
	exit 0
}
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$work"
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
}
trap cleanup EXIT

for mode in informer leader; do
	"$prog" "$mode" "$ns"
	rc=$?
	# cache_check prints its own PASS/FAIL lines; a crash leaves fewer lines, so say so.
	[ "$rc" -le 1 ] || fail "cache_check $mode ran to the end" "exit status $rc"
done

# --- two processes, the leader killed ------------------------------------------------------
"$prog" elect "$ns" procs p1 >"$work/p1" 2>&1 &
pids+=($!)
"$prog" elect "$ns" procs p2 >"$work/p2" 2>&1 &
pids+=($!)
leading() { grep -l '^LEADING' "$work/p1" "$work/p2" 2>/dev/null | wc -l; }
someone_leads() { [ "$(leading)" -ge 1 ]; }
if ! wait_for 30 someone_leads; then
	fail "processes: one of two leads" "nobody leads after 30 s" "$(cat "$work/p1" "$work/p2")"
	exit 0
fi
sleep 4 # longer than the 3 s lease: the leader keeps it by renewing
if [ "$(leading)" -eq 1 ]; then
	pass "processes: exactly one of two leads"
else
	fail "processes: exactly one of two leads" "$(leading) say they lead"
fi
if grep -q '^LEADING' "$work/p1"; then first=1; else first=2; fi
other=$((3 - first))
holder=$(kubectl -n "$ns" get lease procs -o jsonpath='{.spec.holderIdentity}')
trans=$(kubectl -n "$ns" get lease procs -o jsonpath='{.spec.leaseTransitions}')
if [ "$holder" = "p$first" ]; then
	pass "processes: the Lease names the leader"
else
	fail "processes: the Lease names the leader" "holder '$holder', leader p$first"
fi
victim=${pids[$((first - 1))]}
kill -9 "$victim"
wait "$victim" 2>/dev/null # reap it quietly (no "Killed" notice)
start=$SECONDS
# leaseDuration 3 s + retryPeriod 0.5 s * 2.2 (jitter), plus slack for a shared machine.
if wait_for 8 grep -q '^LEADING' "$work/p$other"; then
	pass "processes: the standby takes over after SIGKILL ($((SECONDS - start)) s)"
else
	fail "processes: the standby takes over after SIGKILL" "not within 8 s" "$(cat "$work/p$other")"
fi
holder=$(kubectl -n "$ns" get lease procs -o jsonpath='{.spec.holderIdentity}')
trans2=$(kubectl -n "$ns" get lease procs -o jsonpath='{.spec.leaseTransitions}')
if [ "$holder" = "p$other" ] && [ "$trans2" = "$((${trans:-0} + 1))" ]; then
	pass "processes: leaseTransitions $trans -> $trans2, holder p$other"
else
	fail "processes: leaseTransitions incremented, holder changed" \
		"holder '$holder', transitions '$trans' -> '$trans2'"
fi
renew=$(kubectl -n "$ns" get lease procs -o jsonpath='{.spec.renewTime}')
if [[ $renew =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$ ]]; then
	pass "processes: renewTime is a MicroTime ($renew)"
else
	fail "processes: renewTime is a MicroTime" "'$renew'"
fi
