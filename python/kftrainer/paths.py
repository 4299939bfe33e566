"""Paths inside a job's pod, on this machine.

A runtime mounts volumes at fixed paths (the initializers' /workspace/dataset and
/workspace/model, the SDK's DATASET_PATH and MODEL_PATH). A local job's process cannot see
a directory at /workspace, so the engine gives each mount a directory of the job's own and
says which in ``KFTRAINER_MOUNTS`` (a JSON object: mount path -> directory). It rewrites
arguments and environment values that start with a mount path, but not paths written in a
function's code; ``host_path`` makes such code run unchanged on a cluster and here.
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
