"""kftrainer.OptimizerClient on the local engine, driven as a notebook drives the Kubeflow SDK's
kubeflow.optimizer.OptimizerClient (SDK 0.5.0, from PyPI).

Each test pins upstream behaviour: the SDK's arguments and types (OptimizationJob, Trial with
its TrainJob, Result, Metric with min/max/latest), its Katib conventions (func_args become
"${trialParameters.NAME}", so the function receives each value as text; "name=value" lines
are read as Katib's StdOut collector reads them), upstream's OptimizationJob validation, and
Katib's algorithm and early-stopping names. Trials are real TrainJobs: real supervisors, real
processes. The trials run on the jax-distributed runtime, whose command the SDK makes
`python FILE` (torch-distributed's is torchrun, which needs torch: the frameworks tier runs
the issue's example verbatim on it, tests/frameworks/test_optimizer_example.py).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime

import pytest
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.optimizer import (
    GridSearch,
    Objective,
    OptimizationJob,
    RandomSearch,
    Result,
    Search,
    TrialConfig,
)
from kubeflow.optimizer import OptimizerClient as UpstreamOptimizerClient
from kubeflow.optimizer.types.optimization_types import Metric, Trial
from kubeflow.optimizer.types.search_types import CategoricalSearchSpace, ContinuousSearchSpace
from kubeflow.trainer import CustomTrainer, TrainJobTemplate
from kubernetes import client as k8s

import kftrainer
from kftrainer import OptimizerClient

# ---- training functions (sent to each trial as source, as the SDK sends them) ---------------


def train(lr, batch_size):
    import math

    # Katib hands every value over as text (the SDK's func_args placeholders).
    loss = abs(math.log10(float(lr)) + 2.5) + int(batch_size) / 1000
    print(f"loss={loss}")  # Katib's default (StdOut) metrics format


def train_two_metrics(lr):
    print(f"epoch 1: loss={float(lr) + 1} accuracy=0.5", flush=True)
    print(f"epoch 2: loss={float(lr)} accuracy=0.75", flush=True)


def train_and_report(lr):
    from kubeflow.trainer import update_trainjob_status

    update_trainjob_status(metrics={"loss": float(lr) * 2})


def train_fails(lr):
    raise SystemExit(3)


def train_long(lr):
    import time

    print("loss=1", flush=True)
    time.sleep(600)


# ---- fixtures ---------------------------------------------------------------------------------

RUNTIME = "jax-distributed"


@pytest.fixture
def optimizer(config: kftrainer.LocalBackendConfig) -> OptimizerClient:
    return OptimizerClient(backend_config=config)


def template(func, nodes: int = 1) -> TrainJobTemplate:
    return TrainJobTemplate(runtime=RUNTIME, trainer=CustomTrainer(func=func, num_nodes=nodes))


def objective_value(trial: Trial, metric: str = "loss") -> float:
    return float(next(m.min for m in trial.metrics if m.name == metric))


# ---- the issue's example -------------------------------------------------------------------


def test_the_issues_example(optimizer, client):
    """The example of issue 21 (with the kftrainer import; its runtime here one without
    torchrun): 20 trials of a 2-node function, 2 at a time, log-uniform and categorical
    values, a seeded random search; the best result is the trial with the smallest loss."""
    name = optimizer.optimize(
        TrainJobTemplate(runtime=RUNTIME, trainer=CustomTrainer(func=train, num_nodes=2)),
        trial_config=TrialConfig(num_trials=20, parallel_trials=2),
        search_space={
            "lr": Search.loguniform(1e-4, 1e-1),
            "batch_size": Search.choice([16, 32, 64]),
        },
        algorithm=RandomSearch(random_state=1),
    )
    job = optimizer.wait_for_job_status(name, timeout=600, polling_interval=1)
    assert isinstance(job, OptimizationJob)
    assert job.status == "Complete"
    best = optimizer.get_best_results(name)
    assert isinstance(best, Result)
    assert set(best.parameters) == {"lr", "batch_size"}
    assert 1e-4 <= float(best.parameters["lr"]) <= 1e-1
    assert best.parameters["batch_size"] in {"16", "32", "64"}
    job = optimizer.get_job(name)
    assert len(job.trials) == 20
    assert all(t.trainjob.status == "Complete" for t in job.trials)
    smallest = min(job.trials, key=objective_value)
    assert best.parameters == smallest.parameters
    assert best.metrics == smallest.metrics
    # Every trial is a 2-node TrainJob of the engine, visible to the TrainerClient too.
    assert {j.name for j in client.list_jobs()} == {t.name for t in job.trials}
    assert all(t.trainjob.num_nodes == 2 for t in job.trials)


# ---- the SDK's types -----------------------------------------------------------------------


def test_types_are_the_sdks(optimizer):
    """get_job and list_jobs answer with the SDK's OptimizationJob: its search space, the
    objectives (additional ones kept, as Katib keeps them), the algorithm with its seed, the
    trial config, each Trial with its parameters, TrainJob and Metric (min, max, latest)."""
    name = optimizer.optimize(
        template(train_two_metrics),
        trial_config=TrialConfig(num_trials=2, parallel_trials=1, max_failed_trials=1),
        search_space={"lr": Search.uniform(0.1, 0.9)},
        objectives=[Objective(metric="loss"), Objective(metric="accuracy")],
        algorithm=RandomSearch(random_state=7),
    )
    optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    job = optimizer.get_job(name)
    assert job.search_space == {
        "lr": ContinuousSearchSpace(
            min=0.1, max=0.9, distribution=job.search_space["lr"].distribution
        )
    }
    assert job.search_space["lr"].distribution.value == "uniform"
    assert [o.metric for o in job.objectives] == ["loss", "accuracy"]
    assert job.algorithm == RandomSearch(random_state=7)
    assert job.trial_config == TrialConfig(num_trials=2, parallel_trials=1, max_failed_trials=1)
    assert isinstance(job.creation_timestamp, datetime)
    assert [j.name for j in optimizer.list_jobs()] == [name]
    for trial in job.trials:
        assert isinstance(trial, Trial)
        assert isinstance(trial.trainjob, kftrainer.TrainJob)
        lr = float(trial.parameters["lr"])
        loss = next(m for m in trial.metrics if m.name == "loss")
        assert isinstance(loss, Metric)
        # min, max and latest over the two epochs, as Katib's trial controller keeps them
        assert (float(loss.min), float(loss.max), float(loss.latest)) == pytest.approx(
            (lr, lr + 1, lr)
        )
        acc = next(m for m in trial.metrics if m.name == "accuracy")
        assert (acc.min, acc.max, acc.latest) == ("0.5", "0.75", "0.75")


def test_metrics_reported_through_update_trainjob_status(optimizer):
    """Metrics sent with the SDK's own update_trainjob_status (the status endpoint, what a
    trainer pod reports to the controller on a cluster) count as the objective too."""
    name = optimizer.optimize(
        template(train_and_report),
        trial_config=TrialConfig(num_trials=1),
        search_space={"lr": Search.choice([0.25])},
        algorithm=GridSearch(),
    )
    optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert optimizer.get_best_results(name).metrics == [
        Metric(name="loss", min="0.5", max="0.5", latest="0.5")
    ]


def test_grid_search_and_katibs_grid_rules(optimizer):
    """GridSearch tries every combination of choices once; a continuous space cannot be
    gridded (upstream's CEL rule), and more trials than combinations is Katib's refusal."""
    name = optimizer.optimize(
        template(train),
        trial_config=TrialConfig(num_trials=4, parallel_trials=2),
        search_space={"lr": Search.choice([0.001, 0.01]), "batch_size": Search.choice([16, 32])},
        algorithm=GridSearch(),
    )
    job = optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert sorted((t.parameters["lr"], t.parameters["batch_size"]) for t in job.trials) == [
        ("0.001", "16"),
        ("0.001", "32"),
        ("0.01", "16"),
        ("0.01", "32"),
    ]
    assert job.algorithm == GridSearch()
    with pytest.raises(ValueError, match="Grid search requires all parameters to be Categorical"):
        optimizer.optimize(
            template(train),
            search_space={"lr": Search.uniform(0.1, 0.2)},
            algorithm=GridSearch(),
        )
    with pytest.raises(
        ValueError, match="Max Trial Count: 10 > all possible search combinations: 2"
    ):
        optimizer.optimize(
            template(train), search_space={"lr": Search.choice([1, 2])}, algorithm=GridSearch()
        )
    with pytest.raises(ValueError, match=r"Search space must be set\."):
        optimizer.optimize(template(train), search_space={})


def test_logs_events_and_delete(optimizer, client):
    """get_job_logs reads the best trial's node-0 (or the one named), get_job_events has the
    search's Events and its trials', delete_job removes the search with its trials."""
    name = optimizer.optimize(
        template(train, nodes=2),
        trial_config=TrialConfig(num_trials=2, parallel_trials=2),
        search_space={"lr": Search.choice([0.001, 0.1]), "batch_size": Search.choice([16])},
        algorithm=GridSearch(),
    )
    job = optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    best = optimizer.get_best_results(name)
    best_trial = next(t for t in job.trials if t.parameters == best.parameters)
    other = next(t for t in job.trials if t is not best_trial)
    assert f"loss={best_trial.metrics[0].latest}" in "\n".join(optimizer.get_job_logs(name))
    assert f"loss={other.metrics[0].latest}" in "\n".join(
        optimizer.get_job_logs(name, trial_name=other.name)
    )
    events = optimizer.get_job_events(name)
    kinds = {(e.involved_object_kind, e.reason) for e in events}
    assert ("OptimizationJob", "TrialCreated") in kinds
    assert ("OptimizationJob", "MaxTrialsReached") in kinds
    assert any(e.involved_object_kind == "Pod" for e in events)  # the trials' own
    assert [e.event_time for e in events] == sorted(e.event_time for e in events)
    optimizer.delete_job(name)
    assert optimizer.list_jobs() == []
    assert client.list_jobs() == []
    with pytest.raises(RuntimeError, match="Failed to get OptimizationJob"):
        optimizer.get_job(name)


def test_max_failed_trials_fails_the_search(optimizer):
    """TrialConfig.max_failed_trials: the search fails once that many trials failed, and
    wait_for_job_status raises as upstream's does for a Failed job."""
    name = optimizer.optimize(
        template(train_fails),
        trial_config=TrialConfig(num_trials=5, parallel_trials=1, max_failed_trials=2),
        search_space={"lr": Search.uniform(0.1, 0.2)},
    )
    with pytest.raises(RuntimeError, match=f"OptimizationJob {name} is Failed"):
        optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    job = optimizer.get_job(name)
    assert job.status == "Failed"
    assert len(job.trials) == 2
    assert optimizer.get_best_results(name) is None


def test_the_search_outlives_the_notebook(config, tmp_path):
    """The search runs under the engine's own supervisor: a Python process that starts it and
    exits does not stop it, and a new process sees it finish."""
    script = tmp_path / "notebook.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import kftrainer
            from kftrainer import OptimizerClient
            from kubeflow.optimizer import Search, TrialConfig
            from kubeflow.trainer import CustomTrainer, TrainJobTemplate

            def train(lr):
                import time
                time.sleep(1)
                print(f"loss={{lr}}")

            c = OptimizerClient(kftrainer.LocalBackendConfig(
                state_dir={config.state_dir!r}, runtimes={config.runtimes!r}))
            print(c.optimize(
                TrainJobTemplate(runtime="jax-distributed", trainer=CustomTrainer(func=train)),
                trial_config=TrialConfig(num_trials=2),
                search_space={{"lr": Search.uniform(0.1, 0.2)}}))
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    name = done.stdout.strip().splitlines()[-1]
    later = OptimizerClient(backend_config=config)
    job = later.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert len(job.trials) == 2


def test_tpe_and_median_stop(optimizer):
    """kftrainer.TPE and kftrainer.MedianStop have the SDK's BaseAlgorithm shape and Katib's
    names and settings, so upstream's Katib client takes them too; the engine runs them."""
    tpe = kftrainer.TPE(n_startup_trials=2, random_state=3)
    spec = tpe._to_katib_spec()
    assert spec.algorithm_name == "tpe"
    assert {(s.name, s.value) for s in spec.algorithm_settings} == {
        ("n_startup_trials", "2"),
        ("random_state", "3"),
    }
    stop = kftrainer.MedianStop(min_trials_required=1, start_step=1)
    assert stop._to_katib_spec().algorithm_name == "medianstop"
    name = optimizer.optimize(
        template(train),
        trial_config=TrialConfig(num_trials=4, parallel_trials=1),
        search_space={"lr": Search.loguniform(1e-4, 1e-1), "batch_size": Search.choice([16])},
        algorithm=tpe,
        early_stopping=stop,
    )
    job = optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert job.algorithm == kftrainer.TPE(n_startup_trials=2, random_state=3)
    assert len(job.trials) == 4


def test_delete_stops_a_running_search(optimizer, client):
    """delete_job stops the search and its running trials at once."""
    name = optimizer.optimize(
        template(train_long),
        trial_config=TrialConfig(num_trials=3, parallel_trials=2),
        search_space={"lr": Search.uniform(0.1, 0.2)},
    )
    optimizer.wait_for_job_status(name, status={"Running"}, timeout=120, polling_interval=1)
    optimizer.delete_job(name)
    assert client.list_jobs() == []


def test_clients_and_configs():
    """kftrainer.OptimizerClient is upstream's client (same methods); KubernetesBackendConfig
    gives the cluster backend; anything else is refused with upstream's words."""
    assert issubclass(OptimizerClient, UpstreamOptimizerClient)
    cluster = OptimizerClient(
        KubernetesBackendConfig(namespace="team-a", client_configuration=k8s.Configuration())
    )
    assert type(cluster.backend).__name__ == "ClusterOptimizerBackend"
    assert cluster.backend.namespace == "team-a"
    with pytest.raises(ValueError, match="Invalid backend config"):
        OptimizerClient(backend_config="nope")  # type: ignore[arg-type]


def test_bad_values_are_refused_with_the_engines_words(optimizer):
    """What upstream's OptimizationJob schema refuses is a ValueError naming the field."""
    with pytest.raises(ValueError, match="parallelTrials cannot exceed numTrials"):
        optimizer.optimize(
            template(train),
            trial_config=TrialConfig(num_trials=1, parallel_trials=2),
            search_space={"lr": Search.uniform(0.1, 0.2)},
        )
    with pytest.raises(ValueError, match="min must be strictly greater than 0"):
        optimizer.optimize(template(train), search_space={"lr": Search.loguniform(0, 1)})
    assert optimizer.list_jobs() == []


def test_categorical_values_keep_their_text(optimizer):
    """Search.choice values reach the function as Katib's str() of each."""
    name = optimizer.optimize(
        template(train),
        trial_config=TrialConfig(num_trials=1),
        search_space={"lr": Search.choice([0.001]), "batch_size": Search.choice([64])},
        algorithm=GridSearch(),
    )
    job = optimizer.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert job.trials[0].parameters == {"lr": "0.001", "batch_size": "64"}
    assert isinstance(job.search_space["batch_size"], CategoricalSearchSpace)


def test_an_mpi_trial_keeps_its_function_in_its_own_directory(optimizer):
    """On an MPI runtime the trial's function file is named in the job's own directory, as a
    TrainJob's is (backend._mpi_home_paths), and the SDK's DEFAULT_MPI_USER_HOME, which every
    thread of the notebook shares, is never changed for it."""
    from kubeflow.trainer.constants import constants

    seen: list[str] = []
    backend = optimizer.backend
    build = backend.trainer_backend._get_trainjob_spec

    def peek(**kw):
        seen.append(constants.DEFAULT_MPI_USER_HOME)
        return build(**kw)

    backend.trainer_backend._get_trainjob_spec = peek
    trial = TrainJobTemplate(
        runtime="deepspeed-distributed",
        trainer=CustomTrainer(func=train, func_args={"lr": "0.1", "batch_size": "8"}, num_nodes=2),
    )
    spec, _ = backend._trainjob_spec(trial)
    assert seen == ["/home/mpiuser"]
    command = " ".join(spec["trainer"]["command"])
    assert "mpirun" in command and "/home/mpiuser" not in command
    assert '> "test_optimizer_client.py"' in command  # relative: the job's directory
