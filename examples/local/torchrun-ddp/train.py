#!/usr/bin/env python3
"""torch DDP over gloo, started by torchrun (which reads the runtime's PET_* variables).

The torch-distributed runtime launches no torchrun: the TrainJob's command is run once per
node, so the command is `torchrun train.py` and torchrun starts PET_NPROC_PER_NODE workers.
Each worker trains the same tiny model on its own batch; DDP averages the gradients, so every
rank ends with the same parameters, which rank 0 checks.
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(rank)
for step in range(20):
    x = torch.randn(32, 4)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
every = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(every, flat)
if rank == 0:
    same = all(torch.equal(every[0], t) for t in every)
    print(f"{world} ranks, loss {loss.item():.4f}, equal parameters: {same}")
    if not same:
        raise SystemExit(1)
dist.destroy_process_group()
