#!/usr/bin/python3
"""An MPI all-reduce with mpi4py: the smallest program that proves every rank can talk to
every other one.

mpirun starts one copy per slot of its hostfile. Each rank contributes rank + 1, so the sum
over N ranks must be N(N+1)/2; each rank also contributes a vector, to exercise a
buffer all-reduce and not just a scalar one. Every rank checks both results and the job
fails (non-zero exit, through MPI_Abort so mpirun stops every rank) on any mismatch.
Rank 0 prints the results and, when KFTRAINER_STATUS_FILE is set, reports 100% progress.
"""
import array
import datetime
import json
import os
import socket
import sys

from mpi4py import MPI

VECTOR_LEN = 1024


def report_done(size, total):
    path = os.environ.get("KFTRAINER_STATUS_FILE")
    if not path:
        return
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"progressPercentage": 100, "estimatedRemainingSeconds": 0,
              "metrics": [{"name": "ranks", "value": str(size)},
                          {"name": "sum", "value": str(total)}],
              "lastUpdatedTime": now}
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, path)


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    print(f"rank {rank} of {size} on {socket.gethostname()} (pid {os.getpid()})", flush=True)

    total = comm.allreduce(rank + 1, op=MPI.SUM)
    want = size * (size + 1) // 2

    # Element i of rank r's vector is r * VECTOR_LEN + i; the sum over ranks is known.
    # A typed buffer (array.array, no numpy needed) goes through MPI_Allreduce directly.
    mine = array.array("d", (float(rank * VECTOR_LEN + i) for i in range(VECTOR_LEN)))
    summed = array.array("d", bytes(8 * VECTOR_LEN))
    comm.Allreduce([mine, MPI.DOUBLE], [summed, MPI.DOUBLE], op=MPI.SUM)
    base = VECTOR_LEN * size * (size - 1) // 2
    bad = [i for i, v in enumerate(summed) if v != base + size * i]

    if total != want or bad:
        print(f"rank {rank}: all-reduce is wrong: sum {total} (want {want}), "
              f"{len(bad)} wrong vector elements", file=sys.stderr, flush=True)
        comm.Abort(1)
    comm.Barrier()
    if rank == 0:
        print(f"allreduce sum over {size} ranks = {total} (expected {want}): OK", flush=True)
        print(f"vector allreduce of {VECTOR_LEN} elements: OK", flush=True)
        report_done(size, total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
