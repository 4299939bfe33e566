"""Reports a torchtune fine-tune's progress and metrics to Kubeflow Trainer's status endpoint.

kftrainer's TrainJobStatus plugin ships this file in a ConfigMap mounted into a torchtune
trainer (with PYTHONPATH naming its directory) and sets torchtune's
``metric_logger._component_`` to ``kubeflow_trainer_torchtune.StatusLogger``: torchtune's
own DiskLogger, so ``${output_dir}/logs`` is written as before, that also sends every logged
step to the endpoint upstream's TrainJobStatus plugin names (KUBEFLOW_TRAINER_SERVER_URL,
KUBEFLOW_TRAINER_SERVER_CA_CERT, KUBEFLOW_TRAINER_SERVER_TOKEN) as the Kubeflow SDK's
``update_trainjob_status`` sends it: the metrics torchtune logs (loss, lr, tokens per
second ...), the step, and the progress and remaining time from the recipe's step count.

It needs nothing beyond the standard library and torchtune. Reporting never stops the
fine-tune: without the variables nothing is sent, and a failed request is said once on
stderr. Only the first rank logs, as torchtune's recipes instantiate the logger there only.
"""

from __future__ import annotations

import inspect
import json
import os
import ssl
import sys
import time
import urllib.request
from datetime import datetime, timezone
from typing import Any, Mapping

from torchtune.training.metric_logging import DiskLogger

MIN_INTERVAL_SECONDS = 2.0  # at most one report per interval, but always the last step
MAX_METRICS = 256  # as the SDK's update_trainjob_status truncates


def _recipe_steps() -> tuple[int | None, int | None]:
    """The running recipe's (total optimizer steps, steps per epoch), read from the recipe
    object that called the logger (torchtune's recipes keep ``total_epochs`` and
    ``_steps_per_epoch``); (None, None) when no caller has them."""
    frame = inspect.currentframe()
    try:
        f = frame.f_back if frame else None
        while f is not None:
            recipe = f.f_locals.get("self")
            epochs = getattr(recipe, "total_epochs", None)
            per_epoch = getattr(recipe, "_steps_per_epoch", None)
            if isinstance(epochs, int) and isinstance(per_epoch, int) and per_epoch > 0:
                return epochs * per_epoch, per_epoch
            f = f.f_back
        return None, None
    finally:
        del frame


class StatusLogger(DiskLogger):
    """torchtune's DiskLogger that also reports each step to the TrainJob's status."""

    def __init__(self, log_dir: str, filename: str | None = None, **kwargs: Any) -> None:
        super().__init__(log_dir=log_dir, filename=filename, **kwargs)
        self._url = os.environ.get("KUBEFLOW_TRAINER_SERVER_URL")
        self._ca = os.environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT")
        self._token_path = os.environ.get("KUBEFLOW_TRAINER_SERVER_TOKEN")
        self._started: float | None = None
        self._first_step: int | None = None
        self._last_sent = 0.0
        self._pending: dict[str, Any] | None = None
        self._failed = False
        self._total: int | None = None

    def log(self, name: str, data: Any, step: int) -> None:
        super().log(name, data, step)
        self._report({name: data}, step)

    def log_dict(self, payload: Mapping[str, Any], step: int) -> None:
        super().log_dict(payload, step)
        self._report(dict(payload), step)

    def close(self) -> None:
        if self._pending is not None:
            self._send(self._pending)
        super().close()

    def _report(self, metrics: dict[str, Any], step: int) -> None:
        if not self._url:
            return
        now = time.monotonic()
        if self._total is None:
            self._total, _ = _recipe_steps()
        if self._started is None:
            self._started, self._first_step = now, step
        status: dict[str, Any] = {
            "lastUpdatedTime": datetime.now(timezone.utc).isoformat(),
            "metrics": [
                {"name": str(k), "value": _text(v)}
                for k, v in list({**metrics, "step": step}.items())[:MAX_METRICS]
            ],
        }
        if self._total:
            status["progressPercentage"] = max(0, min(100, round(100 * step / self._total)))
            done = step - (self._first_step or 0)
            if done > 0:
                rate = (now - self._started) / done
                status["estimatedRemainingSeconds"] = max(0, round(rate * (self._total - step)))
        last = self._total is not None and step >= self._total
        if last or now - self._last_sent >= MIN_INTERVAL_SECONDS:
            self._send(status)
            self._pending = None
        else:
            self._pending = status

    def _send(self, status: dict[str, Any]) -> None:
        self._last_sent = time.monotonic()
        try:
            with open(self._token_path or "") as f:
                token = f.read().strip()
            context = ssl.create_default_context(cafile=self._ca or None)
            request = urllib.request.Request(
                self._url or "",
                data=json.dumps({"trainerStatus": status}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=10, context=context) as response:
                response.read()
        except Exception as e:  # reporting never stops the fine-tune
            if not self._failed:
                print(f"kubeflow_trainer_torchtune: status not reported: {e}", file=sys.stderr)
                self._failed = True


def _text(value: Any) -> str:
    item = getattr(value, "item", None)  # a tensor
    if callable(item):
        value = item()
    return str(value)
