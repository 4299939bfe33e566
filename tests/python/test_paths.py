"""kftrainer.host_path: a path of a job's pod, on this machine (issue 20, item 2).

Inside a job the engine's view puts each volume at its mount path, so a function writes
/workspace/output as on a cluster; from the notebook, ``host_path(path, job=name)`` finds the
job's directory for it, as ``kftrainer path`` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubeflow.trainer import (
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
)

import kftrainer
from kftrainer.engine import NotFoundError


def write_output():
    import os

    import kftrainer

    os.makedirs("/workspace/output", exist_ok=True)
    with open("/workspace/output/adapter.txt", "w") as f:
        f.write("trained")
    print("host_path in the job:", kftrainer.host_path("/workspace/output"))


def test_host_path_of_a_jobs_output(client, config, hub, monkeypatch):
    """The function writes /workspace/output (the runtime's claim) as on a cluster; from
    the notebook, host_path(..., job=name) names the job's directory holding the file."""
    url, root = hub
    (root / "datasets/acme/d").mkdir(parents=True)
    (root / "datasets/acme/d/train.csv").write_text("x\n")
    (root / "acme/m").mkdir(parents=True)
    (root / "acme/m/config.json").write_text("{}\n")
    monkeypatch.setenv("HF_ENDPOINT", url)
    name = client.train(
        runtime="python-with-initializers",
        initializer=Initializer(
            dataset=HuggingFaceDatasetInitializer(storage_uri="hf://acme/d"),
            model=HuggingFaceModelInitializer(storage_uri="hf://acme/m"),
        ),
        trainer=CustomTrainer(func=write_output),
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete", "\n".join(client.get_job_logs(name))
    out = kftrainer.host_path("/workspace/output", job=name, backend_config=config)
    assert Path(out, "adapter.txt").read_text() == "trained"
    assert out.startswith(str(config.state_dir))
    assert not Path("/workspace").exists()
    logs = "\n".join(client.get_job_logs(name))
    assert f"host_path in the job: {out}" in logs
    with pytest.raises(ValueError, match="is on no volume of pod"):
        kftrainer.host_path("/etc/hosts", job=name, backend_config=config)
    with pytest.raises(NotFoundError):
        kftrainer.host_path("/workspace", job="nope", backend_config=config)
    assert kftrainer.host_path("/workspace/output") == "/workspace/output"  # not in a job
