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


def host_path(path: str) -> str:
    """``path`` under the longest mount that contains it, mapped to the mount's directory
    on this machine; ``path`` itself outside a local job (on a cluster) or any mount."""
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
