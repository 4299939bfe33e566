"""Experiment tracking and model hand-off from the SDK (docs/tracking.md).

A TrainJob becomes an MLflow run wherever a tracking server is configured: for the local
engine, ``MLFLOW_TRACKING_URI`` in the notebook's environment or
``LocalBackendConfig(tracking_uri=...)``; on a cluster, the controller's own setting. What
a job adds goes in its annotations, which these options write (they are the SDK's option
callables, so they go in ``train(options=[...])`` beside upstream's)::

    client.train(trainer=CustomTrainer(func=train, func_args={"lr": 0.1}),
                 options=[kftrainer.Tracking(experiment="mnist"),
                          kftrainer.ExportTo("s3://models/mnist")])

With the local engine a ``CustomTrainer``'s ``func_args`` are the run's parameters without
any option.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeflow.trainer import CustomTrainer

PREFIX = "tracking.kftrainer.dev/"
EXPERIMENT = PREFIX + "experiment"
ENABLED = PREFIX + "enabled"
PARAMS = PREFIX + "params"
LOG_ARTIFACTS = PREFIX + "log-artifacts"
EXPORT_TO = PREFIX + "export-to"
EXPORT_FROM = PREFIX + "export-from"
EXPORT_SECRET = PREFIX + "export-secret"
REGISTER_TO = PREFIX + "register-to"


def _annotate(job_spec: dict[str, Any], values: Mapping[str, str]) -> None:
    """Adds to the TrainJob's annotations, keeping what another option set (upstream's
    ``Annotations`` replaces the whole map, so it must come first)."""
    annotations = job_spec.setdefault("metadata", {}).setdefault("annotations", {}) or {}
    job_spec["metadata"]["annotations"] = annotations
    for k, v in values.items():
        annotations.setdefault(k, v)


@dataclass
class Tracking:
    """How the job's MLflow run is made.

    Args:
        experiment: the MLflow experiment (default: ``MLFLOW_EXPERIMENT_NAME`` where the
            run is made, else MLflow's ``Default``).
        params: more run parameters (values are written as text).
        log_artifacts: upload the job's logs as artifacts of its run when it ends (local
            engine).
        enabled: ``False`` keeps this job out of tracking where a server is configured.
    """

    experiment: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    log_artifacts: bool = False
    enabled: bool = True

    def __call__(self, job_spec: dict[str, Any], trainer: Any, backend: Any) -> None:
        values: dict[str, str] = {}
        if self.experiment:
            values[EXPERIMENT] = self.experiment
        if self.params:
            # merged with parameters an earlier option declared, which win
            annotations = (job_spec.get("metadata") or {}).get("annotations") or {}
            before = json.loads(annotations.pop(PARAMS, None) or "{}")
            merged = {str(k): v for k, v in self.params.items()} | before
            values[PARAMS] = json.dumps(merged, default=str)
        if self.log_artifacts:
            values[LOG_ARTIFACTS] = "true"
        if not self.enabled:
            values[ENABLED] = "false"
        _annotate(job_spec, values)


@dataclass
class ExportTo:
    """Where the trained model goes when the job completes.

    Args:
        uri: ``s3://BUCKET[/PREFIX]``, ``file:///DIR`` or ``models:/NAME`` (a new version
            of an MLflow registered model, linked to the job's run).
        from_path: the model's directory as the trainer's pod sees it (default
            ``/workspace/output``, where a torchtune fine-tune leaves it).
        secret: on a cluster, the Secret whose keys become the export step's environment
            (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ...).
        register_to: once exported (an ``s3://`` or ``file://`` uri), the files become a
            version, named after the TrainJob, of this registered model in the Kubeflow Model
            Registry that ``KFTRAINER_MODEL_REGISTRY_URL`` names where the export runs.
    """

    uri: str
    from_path: str | None = None
    secret: str | None = None
    register_to: str | None = None

    def __call__(self, job_spec: dict[str, Any], trainer: Any, backend: Any) -> None:
        values = {EXPORT_TO: self.uri}
        if self.from_path:
            values[EXPORT_FROM] = self.from_path
        if self.secret:
            values[EXPORT_SECRET] = self.secret
        if self.register_to:
            values[REGISTER_TO] = self.register_to
        _annotate(job_spec, values)


def func_args_option(trainer: Any) -> list[Tracking]:
    """A CustomTrainer's ``func_args`` as its run's parameters (the local engine's default;
    parameters given with ``Tracking(params=...)`` win)."""
    if isinstance(trainer, CustomTrainer) and trainer.func_args:
        return [Tracking(params=dict(trainer.func_args))]
    return []


def tracking_env(tracking_uri: str | None, experiment: str | None) -> dict[str, str]:
    """What ``LocalBackendConfig``'s tracking fields put in the engine's environment; the
    job keeps them (its supervisor makes its run with them)."""
    env = {}
    if tracking_uri:
        env["MLFLOW_TRACKING_URI"] = tracking_uri
    if experiment:
        env["MLFLOW_EXPERIMENT_NAME"] = experiment
    return env
