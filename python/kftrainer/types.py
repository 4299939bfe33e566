"""The one type kftrainer adds to the SDK's: a TrainJob that carries reported progress."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubeflow.trainer.types import types


@dataclass
class TrainJob(types.TrainJob):
    """``kubeflow.trainer.types.TrainJob`` (every field as upstream fills it) plus what the
    training reported (upstream v2.3.0 ``status.trainerStatus``): the percentage done, the
    estimated seconds left as of ``last_updated``, and the metrics by name."""

    progress_percent: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    last_updated: datetime | None = None

    @classmethod
    def from_upstream(cls, job: types.TrainJob, reported: dict[str, Any] | None) -> TrainJob:
        base = {f.name: getattr(job, f.name) for f in dataclasses.fields(types.TrainJob)}
        reported = reported or {}
        updated = reported.get("lastUpdatedTime")
        return cls(
            **base,
            progress_percent=reported.get("progressPercentage"),
            estimated_remaining_seconds=reported.get("estimatedRemainingSeconds"),
            metrics={
                str(m.get("name")): str(m.get("value"))
                for m in reported.get("metrics") or []
                if isinstance(m, dict)
            },
            last_updated=datetime.fromisoformat(updated.replace("Z", "+00:00"))
            if isinstance(updated, str)
            else None,
        )
