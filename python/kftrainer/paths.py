"""Paths inside a job's pod, on this machine.

A runtime mounts volumes at fixed paths (the initializers' /workspace/dataset and
/workspace/model, the SDK's DATASET_PATH and MODEL_PATH). The engine gives each mount a
directory of the job's own, says which in ``KFTRAINER_MOUNTS`` (a JSON object: mount path ->
directory), and runs the job's processes in a private view where each mount path *is* that
directory, so paths work as written. Where the kernel allows no such view, arguments and
environment values are rewritten instead, but not paths written in a function's code;
``host_path`` makes such code run unchanged on a cluster and in either case here.
"""

from __future__ import annotations

import json
import os

from kftrainer.config import LocalBackendConfig


def host_path(
    path: str,
    job: str | None = None,
    *,
    step: str | None = None,
    backend_config: LocalBackendConfig | None = None,
) -> str:
    """Where ``path``, as a job's pod sees it, is on this machine.

    Inside a local job (``job`` None): ``path`` under the longest mount that contains it,
    mapped to the mount's directory; ``path`` itself outside a local job (on a cluster)
    or any mount. With ``job``, from a notebook or script: the directory behind ``path``
    for that job's pod (the trainer's first node, or ``step``'s), as ``kftrainer path``
    answers it, e.g. ``host_path("/workspace/output", job=name)`` for a fine-tune's
    checkpoint. ``backend_config`` says which engine state to ask (default: the CLI's).
    Raises ValueError when no volume of the pod holds ``path``, and the engine's
    NotFoundError for an unknown job."""
    if job is not None:
        from kftrainer.engine import Engine, EngineError, NotFoundError

        args = ["path", job, path, "-n", (backend_config or LocalBackendConfig()).namespace]
        if step:
            args += ["--step", step]
        try:
            return Engine(backend_config or LocalBackendConfig()).run(*args).strip()
        except NotFoundError:
            raise
        except EngineError as e:
            raise ValueError(str(e).removeprefix("kftrainer: ")) from None
    try:
        mounts = json.loads(os.environ.get("KFTRAINER_MOUNTS") or "{}")
    except ValueError:
        return path
    if not isinstance(mounts, dict):
        return path
    for mount in sorted(mounts, key=len, reverse=True):
        base = mount.rstrip("/")
        if path == base or path.startswith(base + "/"):
            return str(mounts[mount]) + path[len(base) :]
    return path
