"""kftrainer: the Kubeflow SDK on kftrainer's local engine.

A notebook written for the Kubeflow SDK changes one import::

    from kftrainer import TrainerClient          # was: from kubeflow.trainer import ...
    from kubeflow.trainer import CustomTrainer

    client = TrainerClient()                      # the local engine, multi-node
    job = client.train(trainer=CustomTrainer(func=train, num_nodes=2))

Everything ``kubeflow.trainer`` exports is re-exported here, so
``from kftrainer import TrainerClient, CustomTrainer`` works as well.

Hyperparameter search changes the same import: ``from kftrainer import OptimizerClient``
(``kubeflow.optimizer``'s client and types; trials are TrainJobs of the engine).
"""

from kubeflow.trainer import *  # noqa: F403  (the SDK's types, re-exported unchanged)
from kubeflow.trainer import __all__ as _sdk_all

from kftrainer.algorithms import TPE, MedianStop
from kftrainer.backend import LocalBackend
from kftrainer.client import TrainerClient
from kftrainer.config import LocalBackendConfig
from kftrainer.engine import EngineError
from kftrainer.optimizer import OptimizerClient
from kftrainer.paths import host_path
from kftrainer.types import TrainJob

__all__ = [
    *[n for n in _sdk_all if n != "TrainerClient"],
    "EngineError",
    "LocalBackend",
    "LocalBackendConfig",
    "MedianStop",
    "OptimizerClient",
    "TPE",
    "TrainJob",
    "TrainerClient",
    "host_path",
]
