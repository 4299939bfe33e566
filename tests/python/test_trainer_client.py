"""kftrainer.TrainerClient on the local engine, driven as a notebook drives the Kubeflow SDK.

Each test pins upstream behaviour (Kubeflow SDK 0.5.0, Kubeflow Trainer v2.3.0) and runs real
jobs: real supervisors, real processes, the real SDK from PyPI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubeflow.trainer import (
    CustomTrainer,
    CustomTrainerContainer,
    DataCacheInitializer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
)
from kubeflow.trainer import TrainerClient as UpstreamClient
from kubeflow.trainer.backends.base import RuntimeBackend
from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend
from kubeflow.trainer.backends.localprocess.types import LocalProcessBackendConfig
from kubeflow.trainer.options import (
    ActiveDeadlineSeconds,
    Annotations,
    Labels,
    Name,
    TrainerArgs,
    TrainerCommand,
)

import kftrainer
from kftrainer.backend import _EngineObjects

REPO = Path(__file__).resolve().parent.parent.parent

# ---- training functions (sent to the job as source, as upstream sends them) ----------------


def report_rank(greeting: str = "hello"):
    import os

    rank = os.environ["JAX_PROCESS_ID"]
    size = os.environ["JAX_NUM_PROCESSES"]
    print(f"{greeting} from rank {rank} of {size}", flush=True)


def allreduce():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    total = comm.allreduce(comm.Get_rank() + 1)
    print(f"rank {comm.Get_rank()} of {comm.Get_size()}: sum {total}", flush=True)


def crash():
    print("about to fail", flush=True)
    raise ZeroDivisionError("the training function failed on purpose")


def sleep_long():
    import time

    print("sleeping", flush=True)
    time.sleep(600)


def read_initialized():
    import os

    import kftrainer

    dataset = kftrainer.host_path("/workspace/dataset")
    model = kftrainer.host_path("/workspace/model")
    for d in (dataset, model):
        for f in sorted(os.listdir(d)):
            with open(os.path.join(d, f)) as fh:
                print(f"{os.path.basename(d)}/{f}: {fh.read().strip()}", flush=True)


def import_tiny():
    import kft_tiny_pkg

    print("tiny says", kft_tiny_pkg.VALUE, flush=True)


def import_callers_packages():
    import kft_tiny_pkg
    import kubeflow.trainer  # noqa: F401  (the SDK's update_trainjob_status lives here)

    from kftrainer import host_path

    print("imports ok", kft_tiny_pkg.VALUE, host_path("/nowhere"), flush=True)


def show_environment():
    import os
    import sys

    print("executable", sys.executable, flush=True)
    print("cwd", os.getcwd(), flush=True)


# ---- helpers ---------------------------------------------------------------------------------


def engine(client: kftrainer.TrainerClient, *args: str) -> str:
    b = client.backend
    assert isinstance(b, kftrainer.LocalBackend)
    return b.engine.run(*args)


def stored(client: kftrainer.TrainerClient, name: str) -> dict:
    return json.loads(engine(client, "get", name, "-o", "json"))


def logs(client: kftrainer.TrainerClient, name: str, step: str = "node-0") -> str:
    return "\n".join(client.get_job_logs(name, step=step))


# ---- the backend ------------------------------------------------------------------------------


def test_default_backend_is_local_and_upstream_configs_are_upstreams(config):
    """TrainerClient() is the local engine; upstream's configs give upstream's backends
    (SDK 0.5.0 TrainerClient.__init__)."""
    assert isinstance(
        kftrainer.TrainerClient(backend_config=config).backend, kftrainer.LocalBackend
    )
    up = kftrainer.TrainerClient(backend_config=LocalProcessBackendConfig())
    assert type(up.backend).__name__ == "LocalProcessBackend"
    # A user keeping upstream's client can assign the backend: it is a RuntimeBackend.
    b = kftrainer.LocalBackend(config)
    assert isinstance(b, RuntimeBackend)
    upstream = UpstreamClient(backend_config=LocalProcessBackendConfig())
    upstream.backend = b
    assert {r.name for r in upstream.list_runtimes()} >= {"torch-distributed", "jax-distributed"}


def test_runtimes_derived_as_upstream_derives_them(client):
    """Framework, num_nodes, device and device_count come from upstream's own derivation
    (utils.get_runtime_trainer) over the runtimes the engine reads."""
    runtimes = {r.name: r for r in client.list_runtimes()}
    assert runtimes["torch-distributed"].trainer.framework == "torch"
    assert runtimes["torch-distributed"].trainer.command[0] == "bash"
    assert runtimes["deepspeed-distributed"].trainer.command[0] == "mpirun"
    assert runtimes["torchtune-llama3.2-1b"].trainer.trainer_type.name == "BUILTIN_TRAINER"
    assert runtimes["torchtune-llama3.2-1b"].trainer.device == "gpu"
    rt = client.get_runtime("jax-distributed")
    assert (rt.name, rt.trainer.framework, rt.trainer.num_nodes) == ("jax-distributed", "jax", 1)
    with pytest.raises(RuntimeError, match="no-such-runtime"):
        client.get_runtime("no-such-runtime")


def test_two_node_job_steps_logs_events(client):
    """A 2-node CustomTrainer: steps named node-0/node-1 with pod names and status as upstream's
    get_job builds them from Pods; logs per step; events with the kubelet's reasons."""
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=report_rank, func_args={"greeting": "hi"}, num_nodes=2),
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete"
    assert job.num_nodes == 2
    # The SDK lists steps newest pod first (creationTimestamp, to the second): order varies.
    assert sorted((s.name, s.status) for s in job.steps) == [
        ("node-0", "Succeeded"),
        ("node-1", "Succeeded"),
    ]
    assert all(s.pod_name and s.pod_name.startswith(f"{name}-node-") for s in job.steps)
    assert "hi from rank 0 of 2" in logs(client, name, "node-0")
    assert "hi from rank 1 of 2" in logs(client, name, "node-1")
    reasons = [(e.involved_object_kind, e.reason) for e in client.get_job_events(name)]
    assert ("Pod", "Started") in reasons
    assert ("JobSet", "AllJobsCompleted") in reasons
    assert name in [j.name for j in client.list_jobs()]
    assert [j.name for j in client.list_jobs(runtime=client.get_runtime("torch-distributed"))] == []


def test_function_runs_in_callers_interpreter_and_own_directory(client, tmp_path, monkeypatch):
    """The function runs with sys.executable (not a throwaway venv) in a directory of the
    job's own: the script file the SDK writes never lands in the caller's directory."""
    import sys

    notebook = tmp_path / "notebook"
    notebook.mkdir()
    monkeypatch.chdir(notebook)
    name = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=show_environment))
    client.wait_for_job_status(name, timeout=120, polling_interval=1)
    out = logs(client, name)
    exe = next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("executable"))
    assert os.path.realpath(exe) == os.path.realpath(sys.executable)
    cwd = next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("cwd "))
    assert Path(cwd) != notebook and name in cwd
    assert not list(notebook.iterdir()), "the job wrote into the caller's directory"


def test_mpi4py_allreduce_two_nodes(client):
    """deepspeed-distributed (MPI, runLauncherAsNode): mpirun starts one rank per node; upstream
    names the launcher's step node-0 and the node pods' node-1..."""
    pytest.importorskip("mpi4py")
    name = client.train(
        runtime="deepspeed-distributed", trainer=CustomTrainer(func=allreduce, num_nodes=2)
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete"
    assert sorted(s.name for s in job.steps) == ["node-0", "node-1"]
    out = logs(client, name, "node-0")
    assert "rank 0 of 2: sum 3" in out and "rank 1 of 2: sum 3" in out


def test_failing_function(client):
    """A function that raises: the job is Failed, wait_for_job_status raises upstream's
    RuntimeError ("TrainJob NAME is Failed") and says why beyond upstream: the failing node
    and pod, its exit code and the last lines it wrote; the traceback is in the logs, and
    every attempt is there."""
    name = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=crash))
    with pytest.raises(RuntimeError, match=f"TrainJob {name} is Failed: ") as failed:
        client.wait_for_job_status(name, timeout=120, polling_interval=1)
    why = str(failed.value)
    assert f"node-0 (pod {name}-node-0-0-local) exited with code 1; its last lines:" in why
    assert "ZeroDivisionError: the training function failed on purpose" in why.splitlines()[-1]
    job = client.get_job(name)
    assert job.status == "Failed"
    out = logs(client, name)
    assert "ZeroDivisionError: the training function failed on purpose" in out
    assert out.count("about to fail") >= 2, "restarted attempts are kept"
    assert ("Pod", "BackOff") in [
        (e.involved_object_kind, e.reason) for e in client.get_job_events(name)
    ]
    done = client.wait_for_job_status(name, status={"Failed"}, timeout=10, polling_interval=1)
    assert done.status == "Failed"


def test_delete_stops_everything(client, state_dir):
    """delete_job stops every process of a running job and removes it."""
    from conftest import processes_mentioning

    name = client.train(
        runtime="jax-distributed", trainer=CustomTrainer(func=sleep_long, num_nodes=2)
    )
    client.wait_for_job_status(name, status={"Running"}, timeout=60, polling_interval=1)
    assert processes_mentioning(str(state_dir))
    client.delete_job(name)
    assert name not in [j.name for j in client.list_jobs()]
    with pytest.raises(RuntimeError):
        client.get_job(name)
    assert processes_mentioning(str(state_dir)) == []


def test_a_job_named_like_the_type(client):
    """The engine's job verbs take kubectl's type words ("kftrainer get trainjobs" lists the
    namespace), so the backend names the type with each job: one called "trainjobs" is
    read, logged and deleted as itself, not taken for the list."""
    other = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_rank))
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=report_rank),
        options=[Name("trainjobs")],
    )
    assert name == "trainjobs"
    client.wait_for_job_status(name, timeout=60, polling_interval=1)
    assert client.get_job(name).name == "trainjobs"
    assert any("rank" in line for line in client.get_job_logs(name))
    client.delete_job(name)
    assert [j.name for j in client.list_jobs()] == [other]


def test_follow_logs_until_the_end(client):
    name = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_rank))
    # Upstream's get_job_logs yields nothing while the step's pod is Pending (its KubernetesBackend
    # returns early), so a notebook waits for Running first, as here; a job that already ended
    # gives its whole log and returns.
    client.wait_for_job_status(name, status={"Running", "Complete"}, timeout=60, polling_interval=1)
    lines = list(client.get_job_logs(name, follow=True))
    client.wait_for_job_status(name, timeout=60, polling_interval=1)
    assert "hello from rank 0 of 1" in lines


def test_wait_callbacks_and_timeout(client):
    seen: list[str] = []
    name = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=sleep_long))
    with pytest.raises(TimeoutError):
        client.wait_for_job_status(
            name, timeout=3, polling_interval=1, callbacks=[lambda j: seen.append(j.status)]
        )
    assert seen and set(seen) <= {"Created", "Running"}
    with pytest.raises(ValueError):
        client.wait_for_job_status(name, status={"Bogus"})


# ---- the TrainJob is upstream's ---------------------------------------------------------------


class _Recorder(_EngineObjects):
    """Runtimes from the engine, creates recorded: what upstream's KubernetesBackend sends."""

    def __init__(self, backend):
        super().__init__(backend.engine)
        self.created: list[dict] = []

    def create_namespaced_custom_object(self, group, version, namespace, plural, body, **kw):
        self.created.append(body)
        return body


def upstream_body(config, **train_kwargs) -> dict:
    """The TrainJob upstream's own KubernetesBackend.train() creates for the same call."""
    local = kftrainer.LocalBackend(config)
    up = KubernetesBackend.__new__(KubernetesBackend)
    up.namespace = "default"
    up.custom_api = _Recorder(local)
    up.train(**train_kwargs)
    return up.custom_api.created[0]


def contains(big, small, path="") -> None:
    """Every field of small is in big with the same value (big has the defaults added)."""
    if isinstance(small, dict):
        assert isinstance(big, dict), path
        for k, v in small.items():
            assert k in big, f"{path}.{k} missing"
            contains(big[k], v, f"{path}.{k}")
    else:
        assert big == small, f"{path}: {big!r} != {small!r}"


def test_trainjob_is_what_upstream_would_create(client, config, hub, monkeypatch):
    """The TrainJob train() submits locally is, field for field, the one upstream's Kubernetes
    backend creates for the same call (command, args, env, resources, initializers, options)."""
    kwargs = dict(
        runtime="python-with-initializers",
        initializer=Initializer(
            dataset=HuggingFaceDatasetInitializer(storage_uri="hf://datasets/acme/none"),
            model=HuggingFaceModelInitializer(storage_uri="hf://acme/none", access_token="t0k"),
        ),
        trainer=CustomTrainer(
            func=report_rank,
            func_args={"greeting": "same"},
            num_nodes=2,
            resources_per_node={"cpu": 1, "memory": "1Gi"},
            env={"MY_FLAG": "1"},
        ),
        options=[
            Name("same-as-upstream"),
            Labels({"team": "ml"}),
            Annotations({"note": "pinned"}),
            ActiveDeadlineSeconds(3600),
        ],
    )
    want = upstream_body(config, **kwargs)
    # Only the object matters here: the job runs, and its initializers fail against the
    # stand-in hub, which has no such repositories (never a real hub).
    monkeypatch.setenv("HF_ENDPOINT", hub[0])
    name = client.train(**kwargs)
    assert name == "same-as-upstream"
    got = stored(client, name)
    contains(got, {k: v for k, v in want.items() if k != "status"})
    assert got["spec"]["trainer"]["command"] == want["spec"]["trainer"]["command"]


# ---- options ----------------------------------------------------------------------------------


def test_options_labels_annotations_deadline(client):
    """Upstream's option classes accept this backend (it is a KubernetesBackend) and go through
    the same pipeline: labels and annotations on the TrainJob, activeDeadlineSeconds enforced."""
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=sleep_long),
        options=[Labels({"team": "ml"}), Annotations({"a": "b"}), ActiveDeadlineSeconds(2)],
    )
    job = stored(client, name)
    assert job["metadata"]["labels"]["team"] == "ml"
    assert job["metadata"]["annotations"]["a"] == "b"
    with pytest.raises(RuntimeError, match="is Failed"):
        client.wait_for_job_status(name, timeout=60, polling_interval=1)
    failed = next(c for c in stored(client, name)["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded"


def test_tracking_options_through_upstreams_kubernetes_backend(config):
    """kftrainer.Tracking and kftrainer.ExportTo are option callables of the SDK's own kind
    (docs/tracking.md): upstream's KubernetesBackend.train, which a cluster's TrainerClient
    runs, puts their tracking.kftrainer.dev annotations on the TrainJob it creates, beside an
    upstream Annotations option given first, whose map they keep."""
    body = upstream_body(
        config,
        runtime="jax-distributed",
        trainer=CustomTrainer(func=sleep_long),
        options=[
            Annotations({"note": "kept"}),
            kftrainer.Tracking(experiment="mnist", params={"lr": 0.1}, log_artifacts=True),
            kftrainer.ExportTo(
                "s3://models/mnist", from_path="/out", secret="s3-creds", register_to="mnist"
            ),
        ],
    )
    assert body["metadata"]["annotations"] == {
        "note": "kept",
        "tracking.kftrainer.dev/experiment": "mnist",
        "tracking.kftrainer.dev/params": '{"lr": 0.1}',
        "tracking.kftrainer.dev/log-artifacts": "true",
        "tracking.kftrainer.dev/export-to": "s3://models/mnist",
        "tracking.kftrainer.dev/export-from": "/out",
        "tracking.kftrainer.dev/export-secret": "s3-creds",
        "tracking.kftrainer.dev/register-to": "mnist",
    }


def test_container_trainer_with_command_and_args(client, caplog):
    """CustomTrainerContainer: the image is not pulled (said once), the command runs natively;
    TrainerCommand/TrainerArgs set spec.trainer.command/args as upstream's options do."""
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainerContainer(image="example.com/trainer:1", num_nodes=2),
        options=[TrainerCommand(["sh", "-c"]), TrainerArgs(['echo "node $JAX_PROCESS_ID up"'])],
    )
    client.wait_for_job_status(name, timeout=60, polling_interval=1)
    assert "node 1 up" in logs(client, name, "node-1")
    assert "does not pull image example.com/trainer:1" in caplog.text
    assert stored(client, name)["spec"]["trainer"]["image"] == "example.com/trainer:1"


# ---- initializers -----------------------------------------------------------------------------


def test_huggingface_initializers_from_a_local_hub(client, hub, monkeypatch):
    """HuggingFace dataset and model initializers fetch through the engine's hf:// fetcher
    (HF_ENDPOINT points at a stand-in hub) before the trainer starts; the access token is
    sent as upstream's initializer sends it. The SDK's default ignore_patterns
    (constants.INITIALIZER_DEFAULT_IGNORE_PATTERNS, sent as IGNORE_PATTERNS) leave out the
    repository's *.bin, as upstream's initializer (huggingface_hub.snapshot_download) does."""
    url, root = hub
    (root / "datasets/acme/tiny").mkdir(parents=True)
    (root / "datasets/acme/tiny/train.csv").write_text("x,y\n1,2\n")
    (root / "acme/model").mkdir(parents=True)
    (root / "acme/model/config.json").write_text('{"layers": 2}\n')
    (root / "acme/model/pytorch_model.bin").write_bytes(b"\0" * 1024)
    monkeypatch.setenv("HF_ENDPOINT", url)
    name = client.train(
        runtime="python-with-initializers",
        initializer=Initializer(
            dataset=HuggingFaceDatasetInitializer(storage_uri="hf://datasets/acme/tiny"),
            model=HuggingFaceModelInitializer(storage_uri="hf://acme/model"),
        ),
        trainer=CustomTrainer(func=read_initialized),
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    # In the SDK's order, newest pod first to the second: node-0 comes first when it started in a
    # later second than the initializers, last otherwise. The trainer reading their files below
    # is what shows they ran first.
    steps = sorted(s.name for s in job.steps)
    assert steps == ["dataset-initializer", "model-initializer", "node-0"]
    out = logs(client, name)
    assert "dataset/train.csv: x,y\n1,2" in out
    assert 'model/config.json: {"layers": 2}' in out
    assert "pytorch_model.bin" not in out, "an ignored file was fetched"
    assert logs(client, name, "dataset-initializer")
    assert "not supported" not in logs(client, name, "model-initializer")


# ---- packages_to_install ---------------------------------------------------------------------


def test_packages_go_into_a_cached_venv_not_the_callers(client, config, tmp_path):
    """packages_to_install builds one cached virtual environment over the caller's
    interpreter, reused by the next job; the caller's environment is not modified."""
    pkg = tmp_path / "tinypkg"
    (pkg / "kft_tiny_pkg").mkdir(parents=True)
    (pkg / "kft_tiny_pkg/__init__.py").write_text("VALUE = 42\n")
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kft-tiny-pkg"\nversion = "1.0"\n'
    )
    trainer = CustomTrainer(func=import_tiny, packages_to_install=[str(pkg)])
    first = client.train(runtime="jax-distributed", trainer=trainer)
    client.wait_for_job_status(first, timeout=180, polling_interval=1)
    assert "tiny says 42" in logs(client, first)
    venvs = [p for p in Path(config.venv_cache_dir).iterdir() if p.is_dir()]
    assert len(venvs) == 1
    stamp = (venvs[0] / ".kftrainer-complete").stat().st_mtime
    second = client.train(runtime="jax-distributed", trainer=trainer)
    client.wait_for_job_status(second, timeout=120, polling_interval=1)
    assert "tiny says 42" in logs(client, second)
    assert (venvs[0] / ".kftrainer-complete").stat().st_mtime == stamp, "built once"
    with pytest.raises(ImportError):
        import kft_tiny_pkg  # noqa: F401


def test_packages_layer_on_the_callers_environment(client, tmp_path, hub, capfd):
    """The package environment is layered on the caller's, a venv included (this tier runs in
    one): inside the job the SDK (``kubeflow``, for update_trainjob_status) and
    ``kftrainer.host_path`` import beside the installed package. The first build shows pip's
    download progress as a shell does (its bar), not a bare list of lines."""
    pkg = tmp_path / "tinypkg"
    (pkg / "kft_tiny_pkg").mkdir(parents=True)
    (pkg / "kft_tiny_pkg/__init__.py").write_text("VALUE = 7\n")
    # incompressible bytes: a wheel over pip's 40 kB threshold for drawing progress
    (pkg / "kft_tiny_pkg/blob.bin").write_bytes(os.urandom(200_000))
    (pkg / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kft-tiny-pkg"\nversion = "1.0"\n'
        '[tool.setuptools.package-data]\nkft_tiny_pkg = ["*.bin"]\n'
    )
    url, index = hub  # a PEP 503 index: ROOT/PROJECT/index.html beside the wheel
    wheels = index / "kft-tiny-pkg"
    wheels.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(pkg)],
        check=True,
    )
    wheel = next(wheels.iterdir()).name
    (wheels / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n')
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(
            func=import_callers_packages,
            packages_to_install=["kft-tiny-pkg"],
            pip_index_urls=[url],
        ),
    )
    shown = capfd.readouterr().err
    assert f"Downloading {url}/kft-tiny-pkg/{wheel}" in shown, shown
    assert "\u2501" in shown and "kB" in shown, f"no progress bar drawn: {shown}"
    client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert "imports ok 7 /nowhere" in logs(client, name)


# ---- bad input --------------------------------------------------------------------------------


def test_bad_input_is_refused_before_anything_starts(
    client, config, state_dir, tmp_path, monkeypatch
):
    """Bad input raises a clear exception naming the argument, and nothing is left: no job,
    no process, no virtual environment."""
    # An unknown runtime fails before any package environment is built for it.
    with pytest.raises(RuntimeError, match="nope"):
        client.train(
            runtime="nope",
            trainer=CustomTrainer(func=report_rank, packages_to_install=[str(tmp_path / "x")]),
        )
    with pytest.raises(ValueError, match=r"trainer\.func"):
        client.train(runtime="jax-distributed", trainer=CustomTrainer(func=len))
    # A lambda's source can be read, but upstream's SDK calls the function by its name.
    with pytest.raises(ValueError, match=r"trainer\.func: a lambda cannot be sent"):
        client.train(
            runtime="jax-distributed",
            trainer=CustomTrainer(func=lambda: print("hi"), packages_to_install=["x"]),
        )
    # An invalid name: one message, naming the TrainJob (not <stdin>), the TrainJob's own
    # name rule at metadata.name (the API server's "<nil>" root path is no help here).
    with pytest.raises(ValueError) as invalid:
        client.train(
            runtime="jax-distributed",
            trainer=CustomTrainer(func=report_rank),
            options=[Name("Bad_Name")],
        )
    assert str(invalid.value) == (
        "TrainJob default/Bad_Name is invalid:\n"
        "  metadata.name: Invalid value: 'Bad_Name': metadata.name must match RFC 1035 DNS "
        "label format"
    )
    with pytest.raises(ValueError, match=r"initializer\.dataset: DataCacheInitializer"):
        client.train(
            runtime="python-with-initializers",
            initializer=Initializer(
                dataset=DataCacheInitializer(
                    storage_uri="cache://s/t", metadata_loc="s3://b/m", num_data_nodes=2
                )
            ),
            trainer=CustomTrainer(func=report_rank),
        )
    with pytest.raises(ValueError, match="packages_to_install"):
        client.train(
            runtime="jax-distributed",
            trainer=CustomTrainer(func=report_rank, packages_to_install=[str(tmp_path / "none")]),
        )
    assert not [p for p in Path(config.venv_cache_dir).iterdir() if p.is_dir()]
    # The default runtime, torch-distributed, starts the function with torchrun (the SDK's
    # command), which comes with torch, as the runtime's image has it on a cluster. Without
    # it on PATH every node would exit 127: refused first, saying what to install.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(
        ValueError,
        match=r"^trainer: runtime torch-distributed starts the function with torchrun, which "
        r"is not on PATH \(it comes with torch: pip install torch, or "
        r"CustomTrainer\(packages_to_install=\['torch'\]\)\)$",
    ):
        client.train(trainer=CustomTrainer(func=report_rank))
    # A TrainJob the engine refuses (torch owns PET_* env): the engine's field error. A
    # torchrun on PATH (never run) gets the call that far.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "torchrun").write_text("#!/bin/sh\nexit 1\n")
    (fake / "torchrun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    with pytest.raises(ValueError, match=r"spec\.trainer\.env"):
        client.train(
            runtime="torch-distributed",
            trainer=CustomTrainer(func=report_rank, env={"PET_NNODES": "3"}),
        )
    assert client.list_jobs() == []
    out = subprocess.run(
        [kftrainer.engine.find_binary(), "--state-dir", str(state_dir), "get", "-o", "name"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.stdout == ""


# ---- GPUs -------------------------------------------------------------------------------------


def show_gpus():
    import os

    print("gpus", os.environ.get("JAX_PROCESS_ID"), os.environ.get("CUDA_VISIBLE_DEVICES"))


def test_gpu_placement_and_oversubscription(client, monkeypatch):
    """resources_per_node GPUs give each node a disjoint CUDA_VISIBLE_DEVICES slice of this
    machine's GPUs (the inventory given by KFTRAINER_GPUS here, as the machine has none); the
    steps report device gpu and its count as upstream derives them from the pods' limits; a
    request for more than is free is refused naming the field, and nothing runs."""
    monkeypatch.setenv("KFTRAINER_GPUS", "4")
    name = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=show_gpus, num_nodes=2, resources_per_node={"gpu": 2}),
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert [(s.device, s.device_count) for s in job.steps] == [("gpu", "2"), ("gpu", "2")]
    slices = {logs(client, name, "node-0").split()[-1], logs(client, name, "node-1").split()[-1]}
    assert slices == {"0,1", "2,3"}
    with pytest.raises(ValueError, match=r"spec\.trainer\.resourcesPerNode"):
        client.train(
            runtime="jax-distributed",
            trainer=CustomTrainer(func=show_gpus, num_nodes=3, resources_per_node={"gpu": 2}),
        )
    assert [j.name for j in client.list_jobs()] == [name]


# ---- progress ---------------------------------------------------------------------------------


def report_progress():
    import time

    from kubeflow.trainer import update_trainjob_status

    ok = update_trainjob_status(
        progress_percent=40, estimated_remaining_seconds=90, metrics={"loss": 0.25, "epoch": 2}
    )
    print("reported", ok, flush=True)
    time.sleep(1)


def test_progress_through_the_sdks_own_helper(client):
    """The SDK's own update_trainjob_status (KUBEFLOW_TRAINER_SERVER_URL with the CA and token
    files upstream's TrainJobStatus plugin names) reaches the engine's per-job status endpoint
    unchanged; get_job carries what was reported."""
    name = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_progress))
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert "reported True" in logs(client, name)
    job = client.get_job(name)
    assert isinstance(job, kftrainer.TrainJob)
    assert job.metrics == {"loss": "0.25", "epoch": "2"}
    assert (job.progress_percent, job.estimated_remaining_seconds) == (40, 90)
    assert job.last_updated is not None


def test_runtime_packages_in_the_jobs_environment(client, capsys):
    """get_runtime_packages is upstream's: a one-node job printing the Python version and
    `pip list` of the environment the job runs in (the caller's), then deleted."""
    client.get_runtime_packages(client.get_runtime("jax-distributed"))
    out = capsys.readouterr().out
    assert "Python: " in out
    assert "kubeflow" in out
    assert client.list_jobs() == []


def test_runtime_patch_goes_through_the_same_pipeline(client):
    """RuntimePatch (manager trainer.kubeflow.org/kubeflow-sdk, as upstream's SDK sets it) is
    merged into the runtime's JobSet template by the same framework code as on a cluster: a
    pod label reaches the pods the engine runs; env on the node container is refused with
    upstream's runtimePatches rule, before anything runs."""
    from kubeflow.trainer.options import (
        ContainerPatch,
        JobSetSpecPatch,
        JobSetTemplatePatch,
        JobSpecPatch,
        JobTemplatePatch,
        PodSpecPatch,
        PodTemplatePatch,
        ReplicatedJobPatch,
        RuntimePatch,
        TrainingRuntimeSpecPatch,
    )

    def patch(pod: PodTemplatePatch) -> RuntimePatch:
        job = JobTemplatePatch(spec=JobSpecPatch(template=pod))
        rjobs = [ReplicatedJobPatch(name="node", template=job)]
        spec = JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=rjobs))
        return RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(template=spec))

    label = patch(PodTemplatePatch(metadata={"labels": {"team": "vision"}}))
    name = client.train(
        runtime="jax-distributed", trainer=CustomTrainer(func=report_rank), options=[label]
    )
    client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert stored(client, name)["spec"]["runtimePatches"][0]["manager"] == (
        "trainer.kubeflow.org/kubeflow-sdk"
    )
    pods = json.loads(engine(client, "pods", name, "-o", "json"))["items"]
    assert pods[0]["metadata"]["labels"]["team"] == "vision"

    env = ContainerPatch(name="node", env=[{"name": "X", "value": "1"}])
    with pytest.raises(ValueError, match="must not have envs for the"):
        client.train(
            runtime="jax-distributed",
            trainer=CustomTrainer(func=report_rank),
            options=[patch(PodTemplatePatch(spec=PodSpecPatch(containers=[env])))],
        )
    assert [j.name for j in client.list_jobs()] == [name]


def test_plugins_field_is_passed_to_every_engine_command(config, state_dir, monkeypatch):
    """LocalBackendConfig(plugins=[...]) is the CLI's plugin list (docs/plugins.md): the
    example plugin's CustomValidation refuses, with the same field path and message as
    `kftrainer validate`, a job without a team label, and lets a labelled one run; [] means no
    plugins whatever the environment says; None leaves the CLI's own discovery alone."""
    build = Path(os.environ.get("KFT_BUILD_DIR", REPO / "build"))
    plugin = build / "plugins" / "require-team-label.so"
    assert plugin.exists(), f"{plugin} not built (cmake --build build --target require-team-label)"
    refusal = "metadata.labels[team]: Required value: every TrainJob must name its owning team"

    with_plugin = kftrainer.TrainerClient(
        backend_config=config.model_copy(update={"plugins": [str(plugin)]})
    )
    with pytest.raises(ValueError, match=re.escape(refusal)):
        with_plugin.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_rank))
    name = with_plugin.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=report_rank),
        options=[Labels({"team": "ml"})],
    )
    with_plugin.wait_for_job_status(name, timeout=120, polling_interval=1)

    # The environment names a plugin file that does not exist: [] overrides it, None does not.
    monkeypatch.setenv("KFTRAINER_PLUGINS", str(state_dir / "gone.so"))
    none = kftrainer.TrainerClient(backend_config=config.model_copy(update={"plugins": []}))
    none.wait_for_job_status(
        none.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_rank)),
        timeout=120,
        polling_interval=1,
    )
    default = kftrainer.TrainerClient(backend_config=config)
    with pytest.raises(RuntimeError, match=r"gone\.so"):
        default.train(runtime="jax-distributed", trainer=CustomTrainer(func=report_rank))


def test_stream_survives_a_verb_that_fills_stderr_first(config, tmp_path):
    """Engine.stream (what get_job_logs(follow=True) reads) takes a verb's stderr while it
    reads stdout: a verb that writes more to stderr than a pipe holds before it ends stdout
    must not stop. The verb here is a shell script standing in for the binary; it writes
    256 KiB of warnings, one line of output, and fails."""
    fake = tmp_path / "kftrainer-noisy"
    fake.write_text("#!/bin/sh\nhead -c 262144 /dev/zero | tr '\\0' w >&2\necho line\nexit 3\n")
    fake.chmod(0o755)
    engine = kftrainer.engine.Engine(config.model_copy(update={"kftrainer": str(fake)}))
    got: list[str] = []
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            got.extend(engine.stream("logs", "x", "-f"))
        except BaseException as e:  # handed to the test's thread
            errors.append(e)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    t.join(120)  # a guard against a hang, not a measure: the script ends at once
    assert not t.is_alive(), "Engine.stream stopped on a full stderr pipe"
    assert got == ["line"]
    assert len(errors) == 1 and isinstance(errors[0], kftrainer.engine.EngineError)
    assert errors[0].returncode == 3 and str(errors[0]).startswith("wwww")


# ---- how the package sits on the SDK (issue 23) ------------------------------------------------


def test_no_sdk_constant_changes_and_no_state_between_calls(client):
    """An MPI job's function file goes to the job's directory without changing the SDK's
    DEFAULT_MPI_USER_HOME (process-wide: another thread, or upstream's own backend in the same
    notebook, would see it); what a call reads or submits stays with that call."""
    from kubeflow.trainer.constants import constants

    seen: list[str] = []

    def peek(job_spec, trainer, backend):  # an option: called inside upstream's train()
        seen.append(constants.DEFAULT_MPI_USER_HOME)

    name = client.train(
        runtime="deepspeed-distributed",
        trainer=CustomTrainer(func=report_mpi_rank, num_nodes=2),
        options=[peek],
    )
    assert seen == ["/home/mpiuser"]
    job = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete"
    assert "mpi rank 1 of 2" in logs(client, name, "node-0")
    command = " ".join(stored(client, name)["spec"]["trainer"]["command"])
    assert "/home/mpiuser" not in command
    backend = client.backend
    assert isinstance(backend, kftrainer.LocalBackend)
    assert isinstance(backend.custom_api, _EngineObjects) and backend.custom_api.trainjob is None


def report_mpi_rank():
    import os

    rank = os.environ.get("OMPI_COMM_WORLD_RANK")
    size = os.environ.get("OMPI_COMM_WORLD_SIZE")
    print(f"mpi rank {rank} of {size}", flush=True)


def test_not_found_is_read_from_the_exit_status(config, tmp_path):
    """The CLI exits 3 for a TrainJob that does not exist; that status, not the words on
    stderr, makes NotFoundError (a message that merely says "(NotFound)" is an EngineError)."""
    engine = kftrainer.engine.Engine(config)
    with pytest.raises(kftrainer.engine.NotFoundError) as missing:
        engine.run("get", "ghost")
    assert missing.value.returncode == 3
    assert 'trainjobs.trainer.kubeflow.org "ghost" not found' in str(missing.value)
    fake = tmp_path / "kftrainer-words"
    fake.write_text("#!/bin/sh\necho 'Error from server (NotFound): but exit 1' >&2\nexit 1\n")
    fake.chmod(0o755)
    words = kftrainer.engine.Engine(config.model_copy(update={"kftrainer": str(fake)}))
    with pytest.raises(kftrainer.engine.EngineError) as other:
        words.run("get", "x")
    assert not isinstance(other.value, kftrainer.engine.NotFoundError)


def test_the_wheel_requires_what_the_package_imports():
    """Every distribution the package imports from is one it requires by name (not one that
    only arrives through kubeflow's own requirements)."""
    import ast
    from importlib import metadata

    package = Path(kftrainer.__file__).parent
    modules = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    owners = metadata.packages_distributions()
    used = {canonical(d) for m in modules - {"kftrainer"} for d in owners.get(m, [])}
    required = {
        canonical(re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0])
        for r in metadata.requires("kftrainer") or []
        if "extra ==" not in r
    }
    assert used and used <= required, f"imported but not required: {sorted(used - required)}"
