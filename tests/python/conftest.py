"""Fixtures of the python tier: a TrainerClient on a state directory of its own per test,
the built-in runtimes plus examples/sdk/python-with-initializers.yaml, and a file server
standing in for the Hugging Face hub. After each test every job is deleted and no process of
the test may be left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kftrainer

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "local"))
import fileserver  # noqa: E402  (tests/local/fileserver.py, after its directory is on the path)

RUNTIMES = [
    str(REPO / "manifests" / "runtimes"),
    str(REPO / "examples" / "sdk" / "python-with-initializers.yaml"),
]


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose environment or command line contains text (the state
    directory: every job process carries its status file path in its environment)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for f in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{f}", "rb") as fh:
                    if text.encode() in fh.read():
                        found.append(int(pid))
                        break
            except OSError:
                pass
    return found


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "state"
    yield d
    if d.exists():
        for what in (["optimizationjobs", "--all"], ["--all"]):
            subprocess.run(
                [kftrainer.engine.find_binary(), "--state-dir", str(d), "delete", *what],
                capture_output=True,
                check=False,
            )
    deadline = time.monotonic() + 10
    while processes_mentioning(str(d)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = processes_mentioning(str(d))
    assert not left, f"processes left behind by the test: {left}"


@pytest.fixture
def config(state_dir: Path, tmp_path: Path) -> kftrainer.LocalBackendConfig:
    return kftrainer.LocalBackendConfig(
        state_dir=str(state_dir), runtimes=RUNTIMES, venv_cache_dir=str(tmp_path / "venvs")
    )


@pytest.fixture
def client(config: kftrainer.LocalBackendConfig) -> kftrainer.TrainerClient:
    return kftrainer.TrainerClient(backend_config=config)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A stand-in Hugging Face hub (tests/local/fileserver.py): (URL, root directory)."""
    root = tmp_path / "hub"
    root.mkdir()
    with fileserver.running(root) as url:
        yield url, root
