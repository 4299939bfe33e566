"""LocalBackend: the Kubeflow SDK's Kubernetes backend, with the local engine for a cluster.

kftrainer's local engine runs the very objects a cluster would run from a TrainJob (the
JobSet, its Jobs and pods, initializers, MPI hostfiles ...), records Pods and Events as a
cluster's controllers would, and keeps TrainJobs with upstream's status and conditions. So
the most faithful SDK backend is upstream's own ``KubernetesBackend``, made by its own
``__init__`` (with a client configuration of its own, so no kubeconfig is read), whose two API
clients are then answered by the engine instead of an API server:

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
interpreter, ``environment.py``), logs (read from the engine, every attempt marked), what
cannot run here (DataCacheInitializer), and a failure's words (the engine's field errors, why a
job failed); a BuiltinTrainer gets a ``tune`` with the tested torchtune set (torchtune.py). The
SDK's module constants are read, never changed, and no call leaves state on the backend for
another to find.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend
from kubeflow.trainer.constants import constants
from kubeflow.trainer.types import types
from kubeflow_trainer_api import models
from kubernetes import client
from kubernetes.client import ApiException

from kftrainer.config import LocalBackendConfig
from kftrainer.engine import Engine, EngineError, NotFoundError
from kftrainer.environment import job_environment
from kftrainer.tracking import func_args_option
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


def _answer(value: Any, async_req: Any = False) -> Any:
    """value, or for ``async_req=True`` what the client returns then (the call is made)."""
    return _Done(value) if async_req else value


class _EngineObjects:
    """The CustomObjectsApi calls KubernetesBackend makes, answered by the engine.

    Upstream's methods reach the API through ``self.custom_api``; a call that needs more than
    the engine (the environment a job is submitted with, the TrainJob a read returned) gets an
    object of its own through ``LocalBackend._calling`` instead of state on the backend, so
    nothing passes from one call to the next and concurrent calls do not meet."""

    def __init__(
        self,
        engine: Engine,
        submit_env: Mapping[str, str] | None = None,
        rewrite: Mapping[str, str] | None = None,
    ):
        self._engine = engine
        self._submit_env = submit_env
        self._rewrite = dict(rewrite or {})
        self.trainjob: dict | None = None  # the TrainJob this object read or submitted last

    # -- TrainJobs --------------------------------------------------------------------
    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: dict, **kw: Any
    ) -> Any:
        self._expect(plural, constants.TRAINJOB_PLURAL)
        e = self._engine
        body = self.trainjob = self._rewritten(body)
        args = ["-f", "-", "-n", namespace, "--job-workdir", *e.runtime_args()]
        e.run("train", *args, input=json.dumps(body), env=self._submit_env)
        return _answer(body, kw.get("async_req", False))

    def _rewritten(self, body: dict) -> dict:
        """body with the trainer's command and args strings rewritten (see _mpi_home_paths)."""
        if not self._rewrite:
            return body
        body = json.loads(json.dumps(body))
        body["spec"] = _rewrite_trainer(body.get("spec") or {}, self._rewrite)
        return body

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        if plural == constants.TRAINJOB_PLURAL:
            job = self._engine.json("get", f"trainjob/{name}", "-n", namespace)
            self.trainjob = job
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
            items = self._engine.json("get", "-n", namespace).get("items", [])
        else:
            self._expect(plural, constants.TRAINING_RUNTIME_PLURAL)
            items = self._runtimes(types.RuntimeKind.TRAINING_RUNTIME.value, namespace)
        return _answer({"items": items}, kw.get("async_req"))

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        self._expect(plural, constants.TRAINJOB_PLURAL)
        self._engine.run("delete", f"trainjob/{name}", "-n", namespace)
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
        e = self._engine
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

    def __init__(self, engine: Engine):
        self._engine = engine

    def list_namespaced_pod(
        self, namespace: str, label_selector: str = "", async_req: bool = False, **kw: Any
    ) -> Any:
        m = _JOBSET_NAME.search(label_selector or "")
        if not m:
            raise ApiException(status=400, reason="the local engine lists pods by jobset-name")
        try:
            pods = self._engine.json("pods", m.group(1), "-n", namespace)
        except NotFoundError:
            pods = {"apiVersion": "v1", "kind": "PodList", "items": []}
        return _answer(_Dict(pods), async_req)

    def list_namespaced_event(self, namespace: str, async_req: bool = False, **kw: Any) -> Any:
        events = self._engine.json("events", "-n", namespace)
        return _answer(models.IoK8sApiCoreV1EventList.from_dict(events), async_req)


def _mpi_home_paths(runtime: types.Runtime, trainer: object) -> dict[str, str]:
    """On a cluster, an MPI job's function file and pip log go to the MPI user's home,
    /home/mpiuser in the runtime's image (the SDK's DEFAULT_MPI_USER_HOME). No such directory
    exists here: locally they go to the job's own working directory (a relative path, which
    every rank mpirun starts inherits). The paths the SDK writes, and what they become."""
    command = runtime.trainer.command if runtime.trainer else []
    if not isinstance(trainer, types.CustomTrainer) or not command or command[0] != "mpirun":
        return {}
    home = constants.DEFAULT_MPI_USER_HOME
    func_file = os.path.basename(inspect.getfile(trainer.func))
    return {
        os.path.join(home, func_file): func_file,
        os.path.join(home, "pip_install.log"): "pip_install.log",
    }


_LAUNCHER_HINTS = {
    "torchrun": "it comes with torch: pip install torch, or "
    "CustomTrainer(packages_to_install=['torch'])",
    "mpirun": "it comes with an MPI implementation, e.g. apt install openmpi-bin",
}


def _check_launcher(runtime: types.Runtime, trainer: object, env: Mapping[str, str]) -> None:
    """A CustomTrainer's function is started by its runtime's launcher (the SDK's command:
    torchrun on torch runtimes, mpirun on MPI ones), which a job finds on its PATH here as it
    finds it in the image on a cluster. Without it every node would exit 127 at once; the
    call is refused before anything starts, naming what to install."""
    command = tuple(runtime.trainer.command) if runtime.trainer else ()
    if not isinstance(trainer, types.CustomTrainer) or not command:
        return
    launcher = "torchrun" if command == constants.TORCH_COMMAND else command[0]
    if launcher not in _LAUNCHER_HINTS or shutil.which(launcher, path=env.get("PATH")):
        return
    raise ValueError(
        f"trainer: runtime {runtime.name} starts the function with {launcher}, which is not "
        f"on PATH ({_LAUNCHER_HINTS[launcher]})"
    )


def _rewrite_trainer(spec: dict, rewrite: dict[str, str]) -> dict:
    """A TrainJob spec whose trainer's command and args have each old string of rewrite
    replaced by its new one (a copy; spec itself is left as it is)."""
    if not rewrite:
        return spec
    spec = json.loads(json.dumps(spec))
    trainer = spec.get("trainer") or {}
    for key in ("command", "args"):
        words: list[str] = trainer.get(key) or []
        for i, w in enumerate(words):
            for old, new in rewrite.items():
                w = w.replace(old, new)
            words[i] = w
    return spec


def _invalid_message(stderr: str, namespace: str, name: str) -> str:
    """The engine's validation report (``FILE: KIND/NS/NAME: problem`` lines, as `kftrainer
    validate` prints them) as a notebook's user reads it: the TrainJob named once, then its
    problems. The TrainJob's own rule about its name (a root-level rule, reported by the API
    server at ``<nil>``) says precisely what ObjectMeta's generic name check says loosely, so
    when it is there it stands alone for metadata.name."""
    prefix = f"<stdin>: TrainJob/{namespace}/{name}: "
    problems = [line.removeprefix(prefix) for line in stderr.strip().splitlines() if line.strip()]
    root_name = [p for p in problems if p.startswith("<nil>: Invalid value: metadata.name ")]
    if root_name:
        problems = [p for p in problems if not p.startswith("metadata.name: ")]
        problems = [
            p.replace("<nil>: Invalid value: ", f"metadata.name: Invalid value: {name!r}: ", 1)
            if p in root_name
            else p
            for p in problems
        ]
    lines = "\n".join(f"  {p}" for p in problems)
    return f"TrainJob {namespace}/{name} is invalid:\n{lines}"


def _check_func(func: Callable) -> None:
    """What upstream's SDK sends is the function's source and a call by its name
    (``NAME(**func_args)``): a lambda has no name to call, and a function without readable
    source (a builtin, a C function) cannot be sent. Both are refused before anything starts
    (upstream's would start a job that fails)."""
    name = getattr(func, "__name__", None)
    if name == "<lambda>":
        raise ValueError(
            "trainer.func: a lambda cannot be sent to the job: the SDK sends the function's "
            "source and calls it by name; define it with def"
        )
    try:
        inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise ValueError(
            f"trainer.func: {name or func!r} cannot be sent to the job: its source is not "
            f"available ({e}); define it in a file or a notebook cell"
        ) from None


class LocalBackend(KubernetesBackend):
    """The Kubeflow SDK on kftrainer's local engine: TrainJobs run as processes on this
    machine, multi-node, through the same pipeline as on a cluster.

    A ``kubeflow.trainer.backends.base.RuntimeBackend`` (through upstream's
    KubernetesBackend), so it can also be assigned to an upstream client's ``backend``.
    """

    def __init__(self, cfg: LocalBackendConfig | None = None):
        self.cfg = cfg or LocalBackendConfig()
        self.engine = Engine(self.cfg)
        # Upstream's own __init__, with a client configuration of its own so that no
        # kubeconfig is read; verify_backend (below) asks no server. Its two API clients are
        # then the engine's.
        super().__init__(
            KubernetesBackendConfig(
                namespace=self.cfg.namespace, client_configuration=client.Configuration()
            )
        )
        self.custom_api = _EngineObjects(self.engine)
        self.core_api = _EngineCore(self.engine)
        self._said: set[str] = set()

    def verify_backend(self) -> None:
        """Nothing to verify: the engine is installed with this package."""

    def _calling(self, custom_api: _EngineObjects) -> LocalBackend:
        """This backend as one call of upstream's code sees it: with a CustomObjectsApi of
        that call's own (see _EngineObjects)."""
        view = copy.copy(self)
        view.custom_api = custom_api
        return view

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
        _check_launcher(runtime, trainer, env)
        if isinstance(trainer, types.BuiltinTrainer):
            # imported here: `python -m kftrainer.torchtune` must not find it loaded
            from kftrainer.torchtune import torchtune_environment

            env = torchtune_environment(env, self.cfg.venv_cache_dir)
        submit = _EngineObjects(self.engine, env, _mpi_home_paths(runtime, trainer))
        try:
            # func_args are the MLflow run's parameters (kftrainer.tracking)
            options = [*(options or []), *func_args_option(trainer)]
            return KubernetesBackend.train(
                self._calling(submit),
                runtime=runtime,
                initializer=initializer,
                trainer=trainer,
                options=options,
            )
        except RuntimeError as e:
            cause = e.__cause__
            if not isinstance(cause, EngineError):
                raise
            # The engine's own words (field paths, kubectl's wording) say more than
            # "Failed to create TrainJob"; an invalid TrainJob is the caller's value.
            if cause.returncode != 1:
                raise RuntimeError(str(cause)) from e
            meta = (submit.trainjob or {}).get("metadata") or {}
            raise ValueError(
                _invalid_message(str(cause), self.namespace, str(meta.get("name", "")))
            ) from e

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
            _check_func(trainer.func)
        if isinstance(trainer, types.CustomTrainerContainer) and trainer.image not in self._said:
            self._said.add(trainer.image)  # once per image: a notice, not a passage of data
            logger.warning(
                "CustomTrainerContainer: the local engine does not pull image %s; the "
                "runtime's command runs natively on this machine",
                trainer.image,
            )

    # -- get_job: upstream's, with what the training reported ------------------------------
    def get_job(self, name: str) -> TrainJob:
        """Upstream's TrainJob, plus the progress the training reported through the status
        endpoint (``update_trainjob_status``) or the status file: ``status.trainerStatus``."""
        reads = _EngineObjects(self.engine)
        job = KubernetesBackend.get_job(self._calling(reads), name)
        status = (reads.trainjob or {}).get("status") or {}
        return TrainJob.from_upstream(job, status.get("trainerStatus"))

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.TRAINJOB_COMPLETE},  # noqa: B006 (upstream's signature)
        timeout: int = 600,
        polling_interval: int = 2,
        callbacks: list[Callable[[types.TrainJob], None]] | None = None,
    ) -> types.TrainJob:
        """Upstream's wait; a job that failed says why, beyond upstream's "TrainJob NAME is
        Failed": its Failed condition's message (for a local job the failing node and pod,
        the exit code and the last lines it wrote)."""
        try:
            return super().wait_for_job_status(name, status, timeout, polling_interval, callbacks)
        except RuntimeError as e:
            if str(e) != f"TrainJob {name} is Failed":
                raise
            job = self.engine.json("get", f"trainjob/{name}", "-n", self.namespace)
            failed: dict[str, Any] = next(
                (
                    c
                    for c in (job.get("status") or {}).get("conditions") or []
                    if c.get("type") == constants.TRAINJOB_FAILED and c.get("status") == "True"
                ),
                {},
            )
            why = failed.get("message")
            raise RuntimeError(f"{e}: {why}" if why else str(e)) from e

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
            f"trainjob/{name}",  # the type named: a job may be called "trainjobs"
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
