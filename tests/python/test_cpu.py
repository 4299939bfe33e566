"""A job that asks for GPUs on a machine with none runs on CPU (issue 20, item 4), and the
SDK reads it as it reads any job: its steps list (upstream's get_container_devices refuses
limits that name no device, so the engine leaves no empty list behind)."""

from __future__ import annotations

from kubeflow.trainer import CustomTrainer


def show_devices():
    import os

    print("cuda", os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))


def test_gpu_job_runs_on_cpu_without_gpus(client, monkeypatch):
    monkeypatch.setenv("KFTRAINER_GPUS", "")  # this machine has none
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=show_devices, num_nodes=2, resources_per_node={"gpu": 2}),
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert sorted(s.name for s in job.steps) == ["node-0", "node-1"]
    log = "\n".join(client.get_job_logs(name, step="node-0"))
    assert log.startswith("==> this machine has no GPU"), log
    events = [e.reason for e in client.get_job_events(name)]
    assert "NoGPU" in events
