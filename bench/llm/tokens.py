"""The same torchtune LoRA fine-tune through kftrainer.TrainerClient and by hand, in one run.

Through the engine: Trainer v2's BuiltinTrainer example (LoRA rank 8) on the shipped
torchtune-llama3.2-1b runtime, the model and data set fetched by its initializers from a hub
stand-in, the trainer on CPU. By hand: `tune run` with the very command and args the engine
ran (from the job's pod), the /workspace paths replaced by the job's own directories, the
output elsewhere and torchtune's default DiskLogger instead of the status logger. Figures:
torchtune's own tokens per second (median over the steps) and the time from train() (or the
process start) to the first logged step; the engine's includes its initializers, printed
apart. Prints figures; never fails on time.
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
from pathlib import Path

from kubeflow.trainer import (
    BuiltinTrainer,
    DataFormat,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LoraConfig,
    TorchTuneConfig,
    TorchTuneInstructDataset,
)

import kftrainer

STEPS = 3  # optimizer steps; the LoRA config accumulates 8 samples a step


def step_lines(logs: Path) -> list[dict[str, float]]:
    out = []
    for log in sorted(logs.glob("log_*.txt")):
        for line in log.read_text().splitlines():
            fields = dict(f.split(":", 1) for f in line.split("|")[-1].split() if ":" in f)
            out.append({k: float(v) for k, v in fields.items()})
    return out


def wait_first_step(logs: Path, start: float, proc: subprocess.Popen | None = None) -> float:
    while not step_lines(logs):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"tune run exited with {proc.returncode}")
        time.sleep(0.2)
    return time.monotonic() - start


def through_engine(cfg, tmp: Path) -> tuple[str, float, list[float], float]:
    client = kftrainer.TrainerClient(backend_config=cfg)
    start = time.monotonic()
    name = client.train(
        runtime="torchtune-llama3.2-1b",
        initializer=Initializer(
            dataset=HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data"),
            model=HuggingFaceModelInitializer(storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct"),
        ),
        trainer=BuiltinTrainer(
            config=TorchTuneConfig(
                batch_size=1,
                epochs=1,
                peft_config=LoraConfig(lora_rank=8),
                dataset_preprocess_config=TorchTuneInstructDataset(
                    source=DataFormat.PARQUET, split=f"train[:{8 * STEPS}]"
                ),
            )
        ),
    )
    out = None
    while out is None:
        try:
            out = Path(kftrainer.host_path("/workspace/output", job=name, backend_config=cfg))
        except ValueError:
            time.sleep(0.2)
    first = wait_first_step(out / "logs", start)
    job = client.wait_for_job_status(name, timeout=7200, polling_interval=2)
    assert job.status == "Complete", job.status
    tps = [s["tokens_per_second_per_gpu"] for s in step_lines(out / "logs")]
    pods = pods_of(cfg, name)
    init = 0.0
    for p in pods:
        if "initializer" in p["metadata"]["name"]:
            t = p["status"]["containerStatuses"][0]["state"].get("terminated", {})
            if t.get("startedAt") and t.get("finishedAt"):
                init = max(init, iso_seconds(t["finishedAt"]) - iso_seconds(t["startedAt"]))
    return name, first, tps, init


def pods_of(cfg, name: str) -> list[dict]:
    """The job's pods as `kftrainer pods -o json` lists them."""
    argv = [kftrainer.engine.find_binary(), "--state-dir", str(cfg.state_dir), "pods", name]
    out = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["items"]


def iso_seconds(t: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def by_hand(cfg, name: str, tune_bin: str, tmp: Path) -> tuple[float, list[float]]:
    tmp.mkdir(parents=True, exist_ok=True)
    pods = pods_of(cfg, name)
    node = next(p for p in pods if "-node-" in p["metadata"]["name"])
    c = node["spec"]["containers"][0]
    ws = kftrainer.host_path("/workspace", job=name, backend_config=cfg)
    out = tmp / "by-hand-output"
    argv = []
    for a in c.get("command", []) + c.get("args", []):
        if a.startswith("metric_logger._component_="):
            continue  # no status endpoint by hand: torchtune's DiskLogger, its default
        if a.startswith("output_dir="):
            a = f"output_dir={out}"
        argv.append(a.replace("/workspace", ws))
    argv[0] = os.path.join(tune_bin, "tune")
    start = time.monotonic()
    with open(tmp / "by-hand.log", "w") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp,
            env={**os.environ, "PATH": f"{tune_bin}:{os.environ['PATH']}"},
            # A session of its own, as a terminal's command has and as the engine gives each
            # pod: with the kernel's autogroup scheduling (sched_autogroup_enabled) a session is
            # one scheduling group, so on a loaded machine `tune` in this script's session
            # would share the bench's group (and its niced neighbours') instead. Under load
            # that gave the by-hand run 2 to 7 times the engine's tokens/s; with a session of
            # its own, the engine's (a tiny model, load 5 to 10).
            start_new_session=True,
        )
        first = wait_first_step(out / "logs", start, proc)
        assert proc.wait() == 0, (tmp / "by-hand.log").read_text()[-3000:]
    return first, [s["tokens_per_second_per_gpu"] for s in step_lines(out / "logs")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hub", required=True)
    p.add_argument("--tune-bin", required=True)
    p.add_argument("--venvs", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--samples", type=int, default=1)
    a = p.parse_args()
    rows = []
    sys.path.insert(0, os.path.join(a.repo, "tests", "local"))
    import fileserver  # tests/local/fileserver.py, the llm tier's hub stand-in too

    with (
        tempfile.TemporaryDirectory(prefix="kft-bench-llm-") as d,
        fileserver.running(a.hub) as url,
    ):
        tmp = Path(d)
        os.environ["HF_ENDPOINT"] = url
        for i in range(a.samples):
            cfg = kftrainer.LocalBackendConfig(
                state_dir=str(tmp / f"state-{i}"),
                runtimes=[str(Path(a.repo) / "manifests/runtimes")],
                venv_cache_dir=a.venvs,
            )
            name, e_first, e_tps, init = through_engine(cfg, tmp)
            print(
                f"run {i}: TrainerClient: first step after {e_first:.1f} s "
                f"(initializers {init:.1f} s), tokens/s {e_tps}",
                flush=True,
            )
            h_first, h_tps = by_hand(cfg, name, a.tune_bin, tmp / f"hand-{i}")
            print(
                f"run {i}: by hand: first step after {h_first:.1f} s, tokens/s {h_tps}",
                flush=True,
            )
            rows.append(
                (e_first, init, statistics.median(e_tps), h_first, statistics.median(h_tps))
            )
            subprocess.run(
                [
                    kftrainer.engine.find_binary(),
                    "--state-dir",
                    cfg.state_dir,
                    "delete",
                    "--all",
                ],
                capture_output=True,
                check=False,
            )
    print(
        f"torchtune LoRA, Llama 3.2 1B architecture, CPU, {STEPS} steps x 8 samples; "
        f"{a.samples} run(s), medians"
    )
    med = [statistics.median(col) for col in zip(*rows, strict=True)]
    print(f"{'':34}{'TrainerClient':>15}{'tune run by hand':>18}{'ratio':>8}")
    print(
        f"{'tokens/s (torchtune, per step)':34}{med[2]:>15.2f}{med[4]:>18.2f}"
        f"{med[2] / med[4]:>8.3f}"
    )
    print(f"{'start to first step (s)':34}{med[0]:>15.1f}{med[3]:>18.1f}{med[0] / med[3]:>8.3f}")
    print(f"{'  of which initializers (s)':34}{med[1]:>15.1f}{'-':>18}")
    print(
        f"{'  without the initializers (s)':34}{med[0] - med[1]:>15.1f}{med[3]:>18.1f}"
        f"{(med[0] - med[1]) / med[3]:>8.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
