"""Real torch DDP through kftrainer.TrainerClient: 2 nodes x 2 processes, gloo, on this machine.

Pins upstream's contract for CustomTrainer on the torch-distributed runtime: the SDK runs the
function with torchrun (TORCH_COMMAND), and the torch plugin gives torchrun its rendezvous
through PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kubeflow.trainer import CustomTrainer

import kftrainer

REPO = Path(__file__).resolve().parent.parent.parent


def ddp_train(steps: int = 60):
    import hashlib
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(256, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == steps - 1:
            print(f"rank {rank}/{world} step {step} loss {loss.item():.6f}", flush=True)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    digest = hashlib.sha256(repr(flat.tolist()).encode()).hexdigest()[:16]
    print(f"rank {rank} node {os.environ.get('PET_NODE_RANK')} params {digest} "
          f"final {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


def test_two_nodes_two_processes_gloo_ddp(tmp_path):
    pytest.importorskip("torch")
    client = kftrainer.TrainerClient(
        backend_config=kftrainer.LocalBackendConfig(
            state_dir=str(tmp_path / "state"), runtimes=[str(REPO / "manifests/runtimes")]
        )
    )
    name = client.train(
        runtime="torch-distributed",
        # Two CPUs per node: the torch plugin resolves numProcPerNode "auto" to the CPU
        # count without GPUs (upstream v2.3.0), so torchrun starts 2 processes per node.
        trainer=CustomTrainer(func=ddp_train, num_nodes=2, resources_per_node={"cpu": 2}),
    )
    try:
        job = client.wait_for_job_status(name, timeout=600, polling_interval=2)
        assert job.status == "Complete"
        out = "\n".join(client.get_job_logs(name, step="node-0")) + "\n" + "\n".join(
            client.get_job_logs(name, step="node-1")
        )
        finals = re.findall(r"rank (\d) node \d params (\w+) final ([\d.]+)", out)
        assert sorted(int(r) for r, _, _ in finals) == [0, 1, 2, 3], out
        assert len({d for _, d, _ in finals}) == 1, f"ranks disagree on parameters:\n{out}"
        assert all(float(f) < 0.01 for _, _, f in finals), f"did not converge:\n{out}"
    finally:
        client.delete_job(name)
