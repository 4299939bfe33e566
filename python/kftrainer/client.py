"""TrainerClient: upstream's client, whose default backend is the local engine."""

from __future__ import annotations

from typing import Any

from kubeflow.trainer import LocalProcessBackendConfig
from kubeflow.trainer import TrainerClient as _UpstreamClient

from kftrainer.backend import LocalBackend
from kftrainer.config import LocalBackendConfig


class TrainerClient(_UpstreamClient):
    """``kubeflow.trainer.TrainerClient`` with one more backend.

    ``TrainerClient()`` and ``TrainerClient(backend_config=LocalBackendConfig(...))`` run
    TrainJobs on this machine with kftrainer's engine; upstream's configurations
    (``KubernetesBackendConfig``, ``LocalProcessBackendConfig``,
    ``ContainerBackendConfig``) give upstream's backends, exactly as upstream's client does.
    Every method is upstream's.
    """

    def __init__(self, backend_config: Any = None):
        local = backend_config is None or isinstance(backend_config, LocalBackendConfig)
        # Upstream's __init__ runs whole, whatever it sets up besides the backend. It knows
        # only its own configurations: for ours it gets its LocalProcessBackendConfig, whose
        # backend is a plain object with no side effects, and ours then takes its place.
        super().__init__(backend_config=LocalProcessBackendConfig() if local else backend_config)
        if local:
            self.backend = LocalBackend(backend_config)
