#!/usr/bin/env python3
"""Multi-process JAX on the jax-distributed runtime: every node sums the process ids.

The runtime gives each node JAX_COORDINATOR_ADDRESS (node 0's address and a port),
JAX_NUM_PROCESSES and JAX_PROCESS_ID. jax.distributed.initialize() reads none of them
by itself (its automatic detection knows Slurm, Open MPI and Cloud TPU, not these
names), so they are passed explicitly. On CPU, cross-process collectives need gloo.
"""
import os

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
    num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
    process_id=int(os.environ["JAX_PROCESS_ID"]),
)
ids = multihost_utils.process_allgather(jnp.array([jax.process_index()]))
n = jax.process_count()
print(f"process {jax.process_index()} of {n}: ids {ids.ravel().tolist()}, sum {int(ids.sum())}")
if int(ids.sum()) != n * (n - 1) // 2:
    raise SystemExit("the processes disagree")
jax.distributed.shutdown()
