"""Search algorithms and early stopping beyond the Kubeflow SDK's RandomSearch and GridSearch.

Both have the SDK's ``BaseAlgorithm`` shape (an ``algorithm_name`` and a ``_to_katib_spec()``
made from the dataclass's fields), so they also work with upstream's Katib client: ``tpe``
and ``medianstop`` are Katib's names and settings for the same things. kftrainer's engine
and controller run them from the OptimizationJob's ``optimizer.kftrainer.dev/*``
annotations (docs/hpo.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kubeflow.optimizer.types.algorithm_types import BaseAlgorithm, algorithm_to_katib_spec
from kubeflow_katib_api import models


@dataclass
class TPE(BaseAlgorithm):
    """Tree-structured Parzen Estimator (Optuna's univariate TPE, Katib's ``tpe``).

    Args:
        n_startup_trials: trials drawn at random before the model is used (default 10).
        n_ei_candidates: candidates drawn from the model for each new trial (default 24).
        random_state: seed, so that the same search draws the same values.
    """

    n_startup_trials: int | None = None
    n_ei_candidates: int | None = None
    random_state: int | None = None

    @property
    def algorithm_name(self) -> str:
        return "tpe"

    def _to_katib_spec(self) -> models.V1beta1AlgorithmSpec:
        return algorithm_to_katib_spec(self)


@dataclass
class MedianStop:
    """Katib's median stopping rule: a trial whose best objective over its first
    ``start_step`` reports is worse than the mean of the succeeded trials' averages over
    theirs is stopped (once ``min_trials_required`` trials have succeeded).

    Args:
        min_trials_required: succeeded trials needed before any trial is stopped (default 3).
        start_step: reports of the objective after which a trial is judged (default 4).
    """

    min_trials_required: int | None = None
    start_step: int | None = None

    @property
    def algorithm_name(self) -> str:
        return "medianstop"

    def _to_katib_spec(self) -> models.V1beta1EarlyStoppingSpec:
        settings = [
            models.V1beta1EarlyStoppingSetting(name=f.name, value=str(getattr(self, f.name)))
            for f in fields(self)
            if getattr(self, f.name) is not None
        ]
        return models.V1beta1EarlyStoppingSpec(
            algorithmName=self.algorithm_name, algorithmSettings=settings or None
        )

    def settings(self) -> str:
        """The annotation's text: ``name=value`` pairs, comma-separated."""
        return ",".join(
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if getattr(self, f.name) is not None
        )
