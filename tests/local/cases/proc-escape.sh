#!/usr/bin/env bash
# No process outlives `delete`, and a supervisor killed with -9 takes its pods with it.
# (The pod command doubles each $: Kubernetes expands $(VAR) and turns $$ into $.)
# - A pod's child that starts a session of its own (setsid), clears its environment (env -i, so
#   no KFTRAINER_* variable names it) and ignores SIGTERM is gone when `delete` returns: the
#   supervisor, a child subreaper, kills every descendant before it exits.
# - kill -9 of the supervisor: its pods die at once (PR_SET_PDEATHSIG), without any CLI call
#   noticing first. Polled with a generous bound; no timing is asserted.
# Pins: the Kubernetes contract that deleting a pod stops every process in its containers.
. "$KFT_LOCAL_DIR/lib.sh"

pidfile=$KFT_CASE_TMP/escaped.pid
# The grandchild: its own session, an empty environment, SIGTERM ignored across the exec.
expect_exit "train a job whose pod leaves an escaped grandchild" 0 kft train --runtime torch-distributed --name escape -- \
	sh -c "setsid env -i sh -c 'trap \"\" TERM; echo \$\$\$\$ >$pidfile; exec sleep 300' & exec sleep 300"
if ! wait_for 60 test -s "$pidfile"; then
	fail "the grandchild starts" "no pid in $pidfile" "$(kft logs escape 2>&1)"
	exit 0
fi
gpid=$(cat "$pidfile")
on_exit "kill -KILL $gpid 2>/dev/null"
if any_alive "$gpid" && [ "$(cut -d' ' -f6 "/proc/$gpid/stat")" = "$gpid" ] &&
	! grep -qa KFTRAINER "/proc/$gpid/environ"; then
	pass "the grandchild runs in a session of its own with no KFTRAINER variable"
else
	fail "the grandchild runs in a session of its own with no KFTRAINER variable" \
		"$(cat "/proc/$gpid/stat" 2>&1)"
fi
expect_exit "delete" 0 kft delete escape
if any_alive "$gpid"; then
	fail "the escaped grandchild is gone when delete returns" "pid $gpid: $(tr '\0' ' ' <"/proc/$gpid/cmdline")"
else
	pass "the escaped grandchild is gone when delete returns"
fi
expect_no_processes "no process of the job left"

# kill -9 of the supervisor: no CLI call in between, the pods go by themselves.
expect_exit "train a two-node job" 0 kft train --runtime torch-distributed --name orphan \
	--nodes 2 -- sh -c 'exec sleep 300'
if ! wait_for 60 job_proc_with_env PET_NODE_RANK=1 || ! wait_for 10 job_proc_with_env PET_NODE_RANK=0; then
	fail "both nodes start" "a node never started"
	exit 0
fi
sup=$(supervisor_pids)
nodes="$(job_pids_with_env PET_NODE_RANK=0) $(job_pids_with_env PET_NODE_RANK=1)"
on_exit "kill -KILL $nodes 2>/dev/null"
kill -KILL "$sup"
if wait_for 20 eval "! any_alive $nodes"; then
	pass "kill -9 of the supervisor kills its pods without a CLI call"
else
	fail "kill -9 of the supervisor kills its pods without a CLI call" "still alive: $(echo $nodes)"
fi
expect_exit "delete the orphaned job" 0 kft delete orphan
expect_no_processes "no process left"
