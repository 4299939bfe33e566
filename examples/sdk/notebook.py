"""A Kubeflow SDK notebook on kftrainer's local engine: one import changed.

    python examples/sdk/notebook.py      # in an environment where `pip install .` was run

Three jobs, as a data scientist would run them from a notebook:
  1. a 2-node CustomTrainer job (plain Python on the jax-distributed runtime's env);
  2. a job whose dataset and model come through the HuggingFace initializers first, from a
     stand-in hub this script starts on loopback (tests/local/fileserver.py; no model hub is
     reachable from a test machine; unset KFT_EXAMPLE_HUB and point HF_ENDPOINT at a real
     hub to use one);
  3. a job whose function raises: Failed, with its traceback in the logs.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubeflow.trainer import (
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
)

from kftrainer import TrainerClient  # the one changed import: was `from kubeflow.trainer ...`

REPO = Path(__file__).resolve().parent.parent.parent


def train(lr: float = 0.1):
    import os

    rank, size = os.environ["JAX_PROCESS_ID"], os.environ["JAX_NUM_PROCESSES"]
    print(f"node {rank} of {size}: training with lr={lr}")


def train_on_fetched():
    import os

    try:
        from kftrainer import host_path  # this machine: the job's directory for the mount
    except ImportError:  # a cluster's image without the package: the mount itself

        def host_path(path):
            return path

    for what in ("dataset", "model"):
        d = host_path(f"/workspace/{what}")
        print(what, sorted(os.listdir(d)))


def train_and_fail():
    print("epoch 1 ...")
    raise RuntimeError("loss is NaN")


def start_hub(root: Path) -> tuple[subprocess.Popen, str]:
    port_file = root.parent / "hub.port"
    proc = subprocess.Popen([sys.executable, str(REPO / "tests/local/fileserver.py"),
                             "--root", str(root), "--port-file", str(port_file)])
    while not port_file.exists() or not port_file.read_text().strip():
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def main() -> None:
    client = TrainerClient()
    print("runtimes:", [r.name for r in client.list_runtimes()])

    # 1. two nodes
    job = client.train(
        runtime="jax-distributed",
        trainer=CustomTrainer(func=train, func_args={"lr": 0.05}, num_nodes=2),
    )
    done = client.wait_for_job_status(job)
    print(job, done.status, [(s.name, s.status) for s in done.steps])
    for step in ("node-0", "node-1"):
        print("\n".join(client.get_job_logs(job, step=step)))

    # 2. initializers, then the trainer
    with tempfile.TemporaryDirectory() as tmp:
        hub_root = Path(tmp) / "hub"
        (hub_root / "datasets/acme/tiny").mkdir(parents=True)
        (hub_root / "datasets/acme/tiny/train.csv").write_text("x,y\n1,2\n")
        (hub_root / "acme/tiny-model").mkdir(parents=True)
        (hub_root / "acme/tiny-model/config.json").write_text('{"layers": 2}\n')
        hub, url = start_hub(hub_root)
        os.environ["HF_ENDPOINT"] = url
        try:
            from kftrainer import LocalBackendConfig

            runtimes = [str(REPO / "manifests/runtimes"),
                        str(REPO / "examples/sdk/python-with-initializers.yaml")]
            with_init = TrainerClient(LocalBackendConfig(runtimes=runtimes))
            job2 = with_init.train(
                runtime="python-with-initializers",
                initializer=Initializer(
                    dataset=HuggingFaceDatasetInitializer(storage_uri="hf://datasets/acme/tiny"),
                    model=HuggingFaceModelInitializer(storage_uri="hf://acme/tiny-model"),
                ),
                trainer=CustomTrainer(func=train_on_fetched),
            )
            done = with_init.wait_for_job_status(job2)
            print(job2, done.status, [s.name for s in done.steps])
            print("\n".join(with_init.get_job_logs(job2)))
        finally:
            hub.terminate()
            hub.wait()

    # 3. a failing function
    job3 = client.train(runtime="jax-distributed", trainer=CustomTrainer(func=train_and_fail))
    try:
        client.wait_for_job_status(job3)
    except RuntimeError as e:
        print("as expected:", e)
    print("\n".join(client.get_job_logs(job3))[-400:])
    for e in client.get_job_events(job3):
        print(e.involved_object_kind, e.reason, e.message)

    for name in (job, job2, job3):
        client.delete_job(name)


if __name__ == "__main__":
    main()
