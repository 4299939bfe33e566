"""LocalBackendConfig: where the local engine keeps its jobs and finds its runtimes."""

from __future__ import annotations

from pydantic import BaseModel


class LocalBackendConfig(BaseModel):
    """Configuration of :class:`kftrainer.LocalBackend`, the local engine.

    Every field is optional; an unset field means what the ``kftrainer`` CLI does
    without the matching flag, so a notebook and a shell see the same jobs:

    Args:
        state_dir: the engine's state directory (the CLI's ``--state-dir``); default
            ``$KFTRAINER_STATE_DIR``, then ``$XDG_STATE_HOME/kftrainer``, then
            ``~/.local/state/kftrainer``.
        runtimes: runtime files or directories (the CLI's ``-r``); default
            ``$KFTRAINER_RUNTIMES``, ``./manifests/runtimes``, then the runtimes installed
            beside the ``kftrainer`` binary.
        namespace: the namespace jobs are created in (default ``default``).
        kftrainer: the ``kftrainer`` binary to run; default the one this package
            installed into the environment, else the first on ``PATH``.
        venv_cache_dir: where environments for ``packages_to_install`` are cached;
            default ``$XDG_CACHE_HOME/kftrainer/venvs`` (``~/.cache/kftrainer/venvs``).
        plugins: out-of-tree plugin files (shared objects, docs/plugins.md) every engine
            command loads, passed to the CLI as ``$KFTRAINER_PLUGINS``; ``[]`` means none.
            Default: the CLI's own discovery (``$KFTRAINER_PLUGINS``, else the state
            directory's ``plugins`` file), so a notebook and a shell load the same ones.
        tracking_uri: an MLflow tracking server (``http(s)://HOST[:PORT]``): every job
            becomes a run there (docs/tracking.md); passed to the CLI as
            ``$MLFLOW_TRACKING_URI``. Default: that variable as the notebook has it.
        experiment: the MLflow experiment of the runs (``$MLFLOW_EXPERIMENT_NAME``).
    """

    state_dir: str | None = None
    runtimes: list[str] | None = None
    namespace: str = "default"
    kftrainer: str | None = None
    venv_cache_dir: str | None = None
    plugins: list[str] | None = None
    tracking_uri: str | None = None
    experiment: str | None = None
