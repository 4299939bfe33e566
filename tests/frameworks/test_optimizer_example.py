"""The example of issue 21, verbatim but for a state directory: kftrainer.OptimizerClient
tunes a 2-node function on the torch-distributed runtime (the SDK runs it with torchrun, from
real torch), 20 trials, 2 at a time.

Pins the Kubeflow SDK 0.5.0 OptimizerClient contract (optimize's arguments, wait_for_job_status,
get_best_results returning a Result) and Katib's StdOut metrics format (`loss=VALUE` lines),
which the function uses unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


def test_the_issues_example(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("KFTRAINER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KFTRAINER_RUNTIMES", str(REPO / "manifests/runtimes"))

    # ---- the issue's example --------------------------------------------------------------
    from kubeflow.optimizer import RandomSearch, Search, TrialConfig
    from kubeflow.trainer import CustomTrainer, TrainJobTemplate

    from kftrainer import OptimizerClient  # the one changed import

    def train(lr, batch_size):
        import math

        loss = abs(math.log10(float(lr)) + 2.5) + int(batch_size) / 1000
        print(f"loss={loss}")  # Katib's default (StdOut) metrics format

    client = OptimizerClient()
    name = client.optimize(
        TrainJobTemplate(runtime="torch-distributed", trainer=CustomTrainer(func=train, num_nodes=2)),
        trial_config=TrialConfig(num_trials=20, parallel_trials=2),
        search_space={
            "lr": Search.loguniform(1e-4, 1e-1),
            "batch_size": Search.choice([16, 32, 64]),
        },
        algorithm=RandomSearch(random_state=1),
    )
    client.wait_for_job_status(name)
    print(client.get_best_results(name))
    # ---------------------------------------------------------------------------------------

    job = client.get_job(name)
    assert job.status == "Complete"
    best = client.get_best_results(name)
    losses = {t.name: float(t.metrics[0].min) for t in job.trials}
    assert len(losses) == 20
    smallest = min(job.trials, key=lambda t: losses[t.name])
    assert best is not None and best.parameters == smallest.parameters
    client.delete_job(name)
