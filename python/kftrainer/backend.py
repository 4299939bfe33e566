"""LocalBackend: the Kubeflow SDK's Kubernetes backend, with the local engine for a cluster.

kftrainer's local engine runs the very objects a cluster would run from a TrainJob (the
JobSet, its Jobs and pods, initializers, MPI hostfiles ...), records Pods and Events as a
cluster's controllers would, and keeps TrainJobs with upstream's status and conditions. So
the most faithful SDK backend is upstream's own ``KubernetesBackend`` with its two API
clients answered by the engine instead of an API server:

- ``custom_api`` (CustomObjectsApi): TrainJobs are created, read, listed and deleted, and
  runtimes read, through the ``kftrainer`` CLI (``train -f -``, ``get``, ``delete``,
  ``runtimes``);
- ``core_api`` (CoreV1Api): Pods and Events come from ``kftrainer pods`` and
  ``kftrainer events``.

Everything else is upstream's code, unchanged: the TrainJob ``train()`` builds (command,
args, env, resources, initializers and every option, which accept this backend because it
is a KubernetesBackend), runtime derivation (framework, num_nodes, device, device_count),
steps and their status, event filtering, waiting, ``get_runtime_packages``. Only what a
cluster and a machine do differently is ours: the environment a job runs in (the caller's
interpreter, ``environment.py``), logs (read from the engine, every attempt marked), and
what cannot run here (DataCacheInitializer); a BuiltinTrainer gets a ``tune`` with the tested
torchtune set (torchtune.py).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend
from kubeflow.trainer.constants import constants
from kubeflow.trainer.types import types
from kubeflow_trainer_api import models
from kubernetes.client import ApiException

from kftrainer.config import LocalBackendConfig
from kftrainer.engine import Engine, EngineError, NotFoundError
from kftrainer.environment import job_environment
from kftrainer.types import TrainJob

logger = logging.getLogger(__name__)

_JOBSET_NAME = re.compile(re.escape(constants.JOBSET_NAME_LABEL) + r"=([^,\s]+)")


class _Done:
    """What the Kubernetes client returns for ``async_req=True``: the call has already
    been made, ``get()`` hands over its result."""

    def __init__(self, value: Any):
        self._value = value

    def get(self, timeout: float | None = None) -> Any:
        return self._value


class _Dict(dict):
    """A decoded answer that, like the client's models, has ``to_dict()``."""

    def to_dict(self) -> dict:
        return dict(self)


def _answer(value: Any, async_req: bool = False) -> Any:
    return _Done(value) if async_req else value


class _EngineObjects:
    """The CustomObjectsApi calls KubernetesBackend makes, answered by the engine."""

    def __init__(self, backend: LocalBackend):
        self._b = backend
        self.last_trainjob: dict | None = None  # the TrainJob get_namespaced... read last

    # -- TrainJobs --------------------------------------------------------------------
    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: dict, **kw: Any
    ) -> Any:
        self._expect(plural, constants.TRAINJOB_PLURAL)
        e = self._b.engine
        args = ["-f", "-", "-n", namespace, "--job-workdir", *e.runtime_args()]
        e.run("train", *args, input=json.dumps(body), env=self._b._submit_env)
        return _answer(body, kw.get("async_req", False))

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        if plural == constants.TRAINJOB_PLURAL:
            job = self._b.engine.json("get", name, "-n", namespace)
            self.last_trainjob = job
            return _answer(job, kw.get("async_req"))
        self._expect(plural, constants.TRAINING_RUNTIME_PLURAL)
        for r in self._runtimes(types.RuntimeKind.TRAINING_RUNTIME.value, namespace):
            if r["metadata"].get("name") == name:
                return _answer(r, kw.get("async_req"))
        raise ApiException(status=404, reason=f'trainingruntimes "{name}" not found')

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **kw: Any
    ) -> Any:
        if plural == constants.TRAINJOB_PLURAL:
            items = self._b.engine.json("get", "-n", namespace).get("items", [])
        else:
            self._expect(plural, constants.TRAINING_RUNTIME_PLURAL)
            items = self._runtimes(types.RuntimeKind.TRAINING_RUNTIME.value, namespace)
        return _answer({"items": items}, kw.get("async_req"))

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        self._expect(plural, constants.TRAINJOB_PLURAL)
        self._b.engine.run("delete", name, "-n", namespace)
        return _answer({}, kw.get("async_req"))

    # -- ClusterTrainingRuntimes -----------------------------------------------------
    def get_cluster_custom_object(
        self, group: str, version: str, plural: str, name: str, **kw: Any
    ) -> Any:
        self._expect(plural, constants.CLUSTER_TRAINING_RUNTIME_PLURAL)
        for r in self._runtimes(types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value, None):
            if r["metadata"].get("name") == name:
                return _answer(r, kw.get("async_req"))
        raise ApiException(status=404, reason=f'clustertrainingruntimes "{name}" not found')

    def list_cluster_custom_object(self, group: str, version: str, plural: str, **kw: Any) -> Any:
        self._expect(plural, constants.CLUSTER_TRAINING_RUNTIME_PLURAL)
        items = self._runtimes(types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value, None)
        return _answer({"items": items}, kw.get("async_req"))

    def _runtimes(self, kind: str, namespace: str | None) -> list[dict]:
        e = self._b.engine
        found = json.loads(e.run("runtimes", *e.runtime_args(), "-o", "json"))
        return [
            r
            for r in found.get("items", [])
            if r.get("kind") == kind
            and (namespace is None or r.get("metadata", {}).get("namespace") == namespace)
        ]

    @staticmethod
    def _expect(plural: str, wanted: str) -> None:
        if plural != wanted:
            raise ApiException(status=404, reason=f"the local engine has no {plural}")


class _EngineCore:
    """The CoreV1Api calls KubernetesBackend makes, answered by the engine."""

    def __init__(self, backend: LocalBackend):
        self._b = backend

    def list_namespaced_pod(
        self, namespace: str, label_selector: str = "", async_req: bool = False, **kw: Any
    ) -> Any:
        m = _JOBSET_NAME.search(label_selector or "")
        if not m:
            raise ApiException(status=400, reason="the local engine lists pods by jobset-name")
        try:
            pods = self._b.engine.json("pods", m.group(1), "-n", namespace)
        except NotFoundError:
            pods = {"apiVersion": "v1", "kind": "PodList", "items": []}
        return _answer(_Dict(pods), async_req)

    def list_namespaced_event(self, namespace: str, async_req: bool = False, **kw: Any) -> Any:
        events = self._b.engine.json("events", "-n", namespace)
        return _answer(models.IoK8sApiCoreV1EventList.from_dict(events), async_req)


@contextlib.contextmanager
def _mpi_home_here() -> Iterator[None]:
    """On a cluster, an MPI job's function file is written to the MPI user's home,
    /home/mpiuser in the runtime's image (the SDK's DEFAULT_MPI_USER_HOME). No such
    directory exists here, so for the local engine that home is the job's own working
    directory (a relative path: every rank mpirun starts inherits it)."""
    saved = constants.DEFAULT_MPI_USER_HOME
    constants.DEFAULT_MPI_USER_HOME = ""
    try:
        yield
    finally:
        constants.DEFAULT_MPI_USER_HOME = saved


class LocalBackend(KubernetesBackend):
    """The Kubeflow SDK on kftrainer's local engine: TrainJobs run as processes on this
    machine, multi-node, through the same pipeline as on a cluster.

    A ``kubeflow.trainer.backends.base.RuntimeBackend`` (through upstream's
    KubernetesBackend), so it can also be assigned to an upstream client's ``backend``.
    """

    def __init__(self, cfg: LocalBackendConfig | None = None):
        # Not KubernetesBackend.__init__: there is no kubeconfig to load.
        self.cfg = cfg or LocalBackendConfig()
        self.engine = Engine(self.cfg)
        self.namespace = self.cfg.namespace
        self.custom_api = _EngineObjects(self)
        self.core_api = _EngineCore(self)
        self._submit_env: dict[str, str] | None = None
        self._said_image = False

    def verify_backend(self) -> None:
        """Nothing to verify: the engine is installed with this package."""

    # -- train ---------------------------------------------------------------------------
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.CustomTrainer
        | types.CustomTrainerContainer
        | types.BuiltinTrainer
        | None = None,
        options: list | None = None,
    ) -> str:
        self._check_local(initializer, trainer)
        # The runtime first, as upstream's train() would: an unknown one must fail before
        # a package environment is built for it (upstream takes the Runtime as it is).
        if runtime is None:
            runtime = self.get_runtime(constants.DEFAULT_TRAINING_RUNTIME)
        elif isinstance(runtime, str):
            runtime = self.get_runtime(runtime)
        packages = trainer.packages_to_install if isinstance(trainer, types.CustomTrainer) else None
        index_urls = (
            trainer.pip_index_urls
            if isinstance(trainer, types.CustomTrainer)
            else list(constants.DEFAULT_PIP_INDEX_URLS)
        )
        env = job_environment(packages, index_urls, self.cfg.venv_cache_dir)
        if isinstance(trainer, types.BuiltinTrainer):
            # imported here: `python -m kftrainer.torchtune` must not find it loaded
            from kftrainer.torchtune import torchtune_environment

            env = torchtune_environment(env, self.cfg.venv_cache_dir)
        self._submit_env = env
        try:
            with _mpi_home_here():
                return super().train(
                    runtime=runtime, initializer=initializer, trainer=trainer, options=options
                )
        except RuntimeError as e:
            cause = e.__cause__
            if isinstance(cause, EngineError):
                # The engine's own words (field paths, kubectl's wording) say more than
                # "Failed to create TrainJob"; an invalid TrainJob is the caller's value.
                raise (ValueError if cause.returncode == 1 else RuntimeError)(str(cause)) from e
            raise
        finally:
            self._submit_env = None

    def _check_local(
        self,
        initializer: types.Initializer | None,
        trainer: types.CustomTrainer | types.CustomTrainerContainer | types.BuiltinTrainer | None,
    ) -> None:
        for what in ("dataset", "model"):
            if isinstance(getattr(initializer, what, None), types.DataCacheInitializer):
                raise ValueError(
                    f"initializer.{what}: DataCacheInitializer streams from a distributed "
                    "data cache that runs on a Kubernetes cluster; it needs a cluster "
                    "(KubernetesBackendConfig)"
                )
        if isinstance(trainer, types.CustomTrainer):
            try:
                inspect.getsource(trainer.func)
            except (OSError, TypeError) as e:
                raise ValueError(
                    f"trainer.func: {getattr(trainer.func, '__name__', trainer.func)!r} cannot "
                    f"be sent to the job: its source is not available ({e}); define it in a "
                    "file or a notebook cell"
                ) from None
        if isinstance(trainer, types.CustomTrainerContainer) and not self._said_image:
            self._said_image = True
            logger.warning(
                "CustomTrainerContainer: the local engine does not pull image %s; the "
                "runtime's command runs natively on this machine",
                trainer.image,
            )

    # -- get_job: upstream's, with what the training reported ------------------------------
    def get_job(self, name: str) -> TrainJob:
        """Upstream's TrainJob, plus the progress the training reported through the status
        endpoint (``update_trainjob_status``) or the status file: ``status.trainerStatus``."""
        job = super().get_job(name)
        cr = self.custom_api.last_trainjob or {}
        return TrainJob.from_upstream(job, (cr.get("status") or {}).get("trainerStatus"))

    # -- logs ------------------------------------------------------------------------------
    def get_job_logs(
        self,
        name: str,
        follow: bool = False,
        step: str = constants.NODE + "-0",
    ) -> Iterator[str]:
        """The step's log lines, every attempt of its pod in order, each restart marked as
        the engine marks it; with ``follow``, lines as they are written until the job ends."""
        pod_name = None
        for s in self.get_job(name).steps:
            if s.status != constants.POD_PENDING and s.name == step:
                pod_name = s.pod_name
                break
        if pod_name is None:
            return
        pods = self.engine.json("pods", name, "-n", self.namespace).get("items", [])
        labels = next(
            (p["metadata"].get("labels", {}) for p in pods if p["metadata"]["name"] == pod_name),
            None,
        )
        if labels is None:
            return
        args = [
            "logs",
            name,
            "-n",
            self.namespace,
            "--step",
            labels[constants.JOBSET_RJOB_NAME_LABEL],
            "--node",
            labels.get(constants.JOB_INDEX_LABEL, "0"),
        ]
        try:
            if follow:
                yield from self.engine.stream(*args, "-f")
            else:
                yield from self.engine.run(*args).splitlines()
        except EngineError as e:
            raise RuntimeError(
                f"Failed to read logs for the pod {self.namespace}/{pod_name}: {e}"
            ) from e
