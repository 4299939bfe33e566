#!/usr/bin/env bash
# JAX and XGBoost runtimes get their coordinator/tracker env the way torch gets PET_*: the
# address of node 0 (127.0.0.1 locally) and a free loopback port picked at submit. Three nodes
# per job hand-shake over it (fixtures/rendezvous.py), so the job completes only if every node
# got the same reachable endpoint and its own id.
# Pins: upstream v2.3.0 pkg/runtime/framework/plugins/jax (JAX_COORDINATOR_ADDRESS
# "<node-0 address>:<port>", JAX_NUM_PROCESSES, JAX_PROCESS_ID from the completion index) and
# plugins/xgboost (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_NUM_WORKER, DMLC_TASK_ID).
. "$KFT_LOCAL_DIR/lib.sh"

rdv="$KFT_LOCAL_DIR/fixtures/rendezvous.py"
run_one() { # NAME RUNTIME ARGS-FOR-rendezvous.py...
	local name=$1 runtime=$2
	shift 2
	expect_exit "$runtime: train accepts 3 nodes" 0 kft train --runtime "$runtime" --name "$name" \
		--nodes 3 -- python3 "$rdv" "$@"
	expect_eq "$runtime: the job completes" Complete "$(wait_job "$name" 120)"
	local logs
	logs=$(kft logs "$name" 2>&1)
	expect_contains "$runtime: node 0 heard from every node" "$logs" \
		"coordinator heard from nodes [1, 2]"
	expect_contains "$runtime: the coordinator is on loopback" "$logs" "coordinator 127.0.0.1:"
	expect_exit "$runtime: delete" 0 kft delete "$name"
}
run_one jax jax-distributed JAX_COORDINATOR_ADDRESS - JAX_PROCESS_ID JAX_NUM_PROCESSES
run_one xgb xgboost-distributed DMLC_TRACKER_URI DMLC_TRACKER_PORT DMLC_TASK_ID DMLC_NUM_WORKER
expect_no_processes "no process left"
