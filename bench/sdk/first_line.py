"""From train() to the training function's first line: kftrainer's backend, upstream's
LocalProcessBackend and `kftrainer train` from a shell, with the same function, in one run.

The function's first line writes the wall-clock time to a file given in its arguments; the
figure is that time minus the time just before the call that submits the job. Printed as
median, p10 and p90 over the samples (upstream's backend builds a virtual environment and
pip-installs torch on every train(), so it gets fewer samples). Never fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from kubeflow.trainer import CustomTrainer, LocalProcessBackendConfig
from kubeflow.trainer import TrainerClient as UpstreamClient

import kftrainer
import kftrainer.environment


def first_line():
    import os
    import time

    with open(os.environ["FIRST_LINE_FILE"], "w") as f:
        f.write(repr(time.time()))


def trainer(path: str) -> CustomTrainer:
    # upstream's LocalProcessBackend installs nothing for the torch runtime by itself (its
    # torchrun is missing without torch in packages_to_install), and passes func_args as one
    # positional dict: so the same call for every backend is torch as a package and the
    # output file in env.
    return CustomTrainer(
        func=first_line, packages_to_install=["torch"], env={"FIRST_LINE_FILE": path}
    )


def wait_for(path: str, limit: float) -> float:
    end = time.time() + limit
    while time.time() < end:
        try:
            with open(path) as f:
                text = f.read()
            if text:
                return float(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    raise TimeoutError(f"the function never wrote {path}")


def kftrainer_sample(client: kftrainer.TrainerClient, tmp: str, i: int) -> tuple[float, str]:
    path = os.path.join(tmp, f"ours-{i}")
    t0 = time.time()
    name = client.train(runtime="torch-distributed", trainer=trainer(path))
    return wait_for(path, 900) - t0, name


def shell_sample(state: str, command: list[str], env: dict, tmp: str, i: int) -> float:
    path = os.path.join(tmp, f"shell-{i}")
    argv = [kftrainer.engine.find_binary(), "--state-dir", state, "train", "--runtime",
            "torch-distributed", "--job-workdir", "-e", f"FIRST_LINE_FILE={path}", "--",
            *command]
    t0 = time.time()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return wait_for(path, 120) - t0


def upstream_sample(tmp: str, i: int) -> float:
    path = os.path.join(tmp, f"upstream-{i}")
    client = UpstreamClient(backend_config=LocalProcessBackendConfig())
    t0 = time.time()
    name = client.train(runtime="torch-distributed", trainer=trainer(path))
    took = wait_for(path, 900) - t0
    client.wait_for_job_status(name, timeout=900)
    client.delete_job(name)
    return took


def figures(xs: list[float]) -> str:
    xs = sorted(xs)
    p = lambda q: xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]  # noqa: E731
    return f"{statistics.median(xs):8.3f} {p(0.1):8.3f} {p(0.9):8.3f} {len(xs):4d}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=10)  # the first builds the cached venv
    ap.add_argument("--upstream-samples", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kft-bench-sdk-") as tmp:
        state = os.path.join(tmp, "state")
        client = kftrainer.TrainerClient(
            backend_config=kftrainer.LocalBackendConfig(state_dir=state)
        )
        ours, names = [], []
        for i in range(args.samples):
            t, name = kftrainer_sample(client, tmp, i)
            ours.append(t)
            names.append(name)
        # The shell runs exactly the command train() submitted, with the environment
        # train() gave it (the cached venv first on PATH).
        job = json.loads(subprocess.run(
            [kftrainer.engine.find_binary(), "--state-dir", state, "get", names[0], "-o", "json"],
            check=True, capture_output=True, text=True).stdout)
        command = job["spec"]["trainer"]["command"]
        env = kftrainer.environment.job_environment(["torch"], ["https://pypi.org/simple"])
        shell = [shell_sample(state, command, env, tmp, i) for i in range(args.samples)]
        upstream = [upstream_sample(tmp, i) for i in range(args.upstream_samples)]
        subprocess.run([kftrainer.engine.find_binary(), "--state-dir", state, "delete", "--all"],
                       check=False, capture_output=True)
    print(f"SDK bench: train() to the function's first line, torch-distributed, 1 node; "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"{'path':<44} {'median s':>8} {'p10':>8} {'p90':>8} {'n':>4}")
    print(f"{'kftrainer.TrainerClient, first (builds venv)':<44} {figures(ours[:1])}")
    print(f"{'kftrainer.TrainerClient (local engine)':<44} {figures(ours[1:])}")
    print(f"{'kftrainer train (shell, same command)':<44} {figures(shell)}")
    if upstream:
        print(f"{'upstream LocalProcessBackend':<44} {figures(upstream)}")
        print(f"ours / upstream LocalProcessBackend: "
              f"{statistics.median(ours[1:]) / statistics.median(upstream):.4f} (goal < 0.05)")
    print(f"ours / kftrainer train from a shell: "
          f"{statistics.median(ours[1:]) / statistics.median(shell):.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
