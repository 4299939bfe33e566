#!/usr/bin/env bash
# The per-framework examples of docs/runtimes.md (issue 11, item 7), each run as its README says
# where its framework is importable, and SKIPped with the reason otherwise: torch DDP started by
# torchrun (examples/local/torchrun-ddp), JAX with explicit jax.distributed.initialize arguments
# (jax-distributed), XGBoost with worker 0 starting the tracker (xgboost-distributed). The
# stdlib-only torch and MPI examples have cases of their own (example-data-parallel.sh,
# example-mpi-allreduce.sh).
# Pins: upstream v2.3.0's torch (PET_*), jax (JAX_*) and xgboost (DMLC_*) plugins' env.
. "$KFT_LOCAL_DIR/lib.sh"

run_example() { # DIR MODULE EXPECTED-LINE
	local dir=$1 module=$2 want=$3
	if ! python3 -c "import $module" >/dev/null 2>&1; then
		skip "$dir" "python3 cannot import $module here"
		return
	fi
	if [ "$module" = torch ] && ! command -v torchrun >/dev/null; then
		skip "$dir" "no torchrun on PATH"
		return
	fi
	(
		cd "$KFT_REPO_ROOT/examples/local/$dir" || exit 0
		run_capture kft train -f trainjob.yaml --follow
		if [ "$KFT_RC" = 0 ]; then pass "$dir: completes"; else fail "$dir: completes" "exit $KFT_RC" "$KFT_OUT" "$KFT_ERR"; fi
		expect_contains "$dir: $want" "$KFT_OUT" "$want"
	)
	kft delete "$dir" >/dev/null 2>&1
}
run_example torchrun-ddp torch "equal parameters: True"
run_example jax-distributed jax "of 2: ids [0, 1], sum 1"
run_example xgboost-distributed xgboost "of 2: 10 trees"
expect_no_processes "no process left"

# `train --help` says what each runtime sets and starts (the same facts as docs/runtimes.md).
run_capture kft train --help
for want in "PET_MASTER_ADDR PET_MASTER_PORT: no torchrun is launched" \
	"--procs starts no processes" "pass them to jax.distributed.initialize() explicitly" \
	"DMLC_TASK_ID: worker 0 starts the tracker" "/etc/mpi/hostfile and OMPI_MCA_*" "KFTRAINER_GPUS"; do
	expect_contains "train --help: $want" "$KFT_OUT" "$want"
done
