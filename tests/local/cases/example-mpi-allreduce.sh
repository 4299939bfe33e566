#!/usr/bin/env bash
# Example (b), examples/local/mpi-allreduce: mpi4py all-reduce over Debian's OpenMPI on the
# deepspeed-distributed runtime, 2 nodes x 2 slots.
# Pins: upstream's MPI plugin (pkg/runtime/framework/plugins/mpi/mpi.go, v2.3.0) gives the
# launcher OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile with one line per node and
# numProcPerNode slots each, runLauncherAsNode counting the launcher as a node; the JobSet's
# successPolicy targets the launcher, so the job is Complete when mpirun exits 0.
. "$KFT_LOCAL_DIR/lib.sh"
cd "$KFT_REPO_ROOT/examples/local/mpi-allreduce" || exit 1

if ! command -v mpirun >/dev/null || ! /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
	skip "mpi example" "needs Debian's openmpi-bin and python3-mpi4py (scripts/install-deps.sh)"
	exit 0
fi

run_capture timeout 240 "$KFTRAINER" train -f trainjob.yaml --follow
expect_eq "train --follow exits 0" 0 "$KFT_RC" ||
	fail "train --follow output" "see below" "$KFT_OUT" "$KFT_ERR"
expect_contains "rank 0 prints the sum over 4 ranks" "$KFT_OUT" \
	"allreduce sum over 4 ranks = 10 (expected 10): OK"
expect_contains "the buffer all-reduce checks out" "$KFT_OUT" "vector allreduce of 1024 elements: OK"
expect_eq "Complete" True "$(job_cond mpi-allreduce Complete | cut -d'|' -f1)"
expect_eq "trainerStatus from rank 0" "100 4" \
	"$(job_json mpi-allreduce | jq -r '.status.trainerStatus |
		"\(.progressPercentage) \(.metrics[]? | select(.name == "ranks") | .value)"')"
expect_no_processes "no process left (mpirun, its ranks, the node pods)"
expect_exit "delete" 0 kft delete mpi-allreduce
