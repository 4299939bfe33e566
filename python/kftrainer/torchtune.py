"""The torchtune a BuiltinTrainer job runs with, on this machine.

A torchtune runtime's trainer runs ``tune run``; the engine runs the ``tune`` it finds on the
job's PATH and refuses, before anything starts, one whose environment lacks the tested
versions (``torchtune-requirements.txt`` beside this file: the set upstream's
torchtune-trainer image installs). So that ``train(trainer=BuiltinTrainer(...))`` just works,
the job gets a ``tune`` with exactly that set: the caller's own when the caller's environment
already has it, otherwise a virtual environment holding only the set (as the image holds only
it), built once (pip's progress shown) and cached beside the packages_to_install ones.

``python -m kftrainer.torchtune install`` installs the set into the running environment
instead; ``... env`` builds the cached environment and prints its bin directory (put it first
on PATH for ``kftrainer train -f``); ``... requirements`` prints the file's path (for
``pip install -r``).
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Mapping

from .environment import _key, cached_venv

REQUIREMENTS = os.path.join(os.path.dirname(__file__), "torchtune-requirements.txt")


def pins() -> list[str]:
    """The pinned requirements ("name==version"), in the file's order."""
    with open(REQUIREMENTS) as f:
        lines = (line.split("#", 1)[0].strip() for line in f)
        return [line for line in lines if line]


def _caller_has_pins() -> bool:
    """Whether this interpreter's environment has every pin and its own ``tune``."""
    for pin in pins():
        name, version = pin.split("==", 1)
        try:
            if importlib.metadata.version(name).split("+", 1)[0] != version:
                return False
        except importlib.metadata.PackageNotFoundError:
            return False
    return os.path.exists(os.path.join(os.path.dirname(sys.executable), "tune"))


def torchtune_venv(cache_dir: str | None = None) -> str:
    """The cached virtual environment holding exactly the pins, built when missing.
    Raises ValueError with pip's last lines when pip fails (nothing is left behind)."""
    return cached_venv(
        "torchtune-" + _key(sys.executable, sys.version, pins()),
        pins(),
        [],
        cache_dir,
        field="trainer",
        about=f"the torchtune environment {pins()} (some GB)",
        layered=False,
    )


def torchtune_environment(env: Mapping[str, str], cache_dir: str | None = None) -> dict[str, str]:
    """``env`` with PATH led by the directory of a ``tune`` that has the pinned set."""
    out = dict(env)
    if _caller_has_pins():
        first = os.path.dirname(sys.executable)
    else:
        first = os.path.join(torchtune_venv(cache_dir), "bin")
    rest = [p for p in out.get("PATH", os.defpath).split(os.pathsep) if p and p != first]
    out["PATH"] = os.pathsep.join([first, *rest])
    return out


def main(argv: list[str]) -> int:
    if argv == ["requirements"]:
        print(REQUIREMENTS)
        return 0
    if argv == ["install"]:
        cmd = [sys.executable, "-m", "pip", "install", "-r", REQUIREMENTS]
        return subprocess.call(cmd)
    if argv[:1] == ["env"] and len(argv) in (1, 3) and argv[1:2] in ([], ["--cache-dir"]):
        try:
            print(os.path.join(torchtune_venv(argv[2] if len(argv) == 3 else None), "bin"))
        except ValueError as e:
            print(f"kftrainer: {e}", file=sys.stderr)
            return 1
        return 0
    print(
        "usage: python -m kftrainer.torchtune install | requirements | env [--cache-dir DIR]\n"
        "  install       pip install the tested torchtune set into this environment\n"
        "  requirements  print the path of the pinned requirements file\n"
        "  env           build (once) the cached environment BuiltinTrainer jobs use and\n"
        "                print its bin directory, for PATH",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
