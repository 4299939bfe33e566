"""OptimizerClient: the Kubeflow SDK's hyperparameter search, on kftrainer.

``kubeflow.optimizer.OptimizerClient`` runs a search as a Katib Experiment on a cluster.
``kftrainer.OptimizerClient`` takes the same arguments and returns the same types, and runs it
as an OptimizationJob (upstream Kubeflow Trainer master's kind, trainer.kubeflow.org/v1alpha1)
whose trials are TrainJobs:

- by default on the local engine: ``kftrainer optimize``; the search runs under a supervisor
  of its own, not in the notebook, so closing the notebook does not stop it and any later
  process sees it;
- with ``KubernetesBackendConfig``, on a cluster whose controller runs OptimizationJobs
  (kftrainer's controller manager).

The trial template is what the SDK builds for Katib: the TrainJob spec of the
TrainJobTemplate with ``${trialParameters.NAME}`` in the function's ``func_args``, which each
trial's values replace; a function written for Katib (``print(f"loss={loss}")``, the
StdOut collector's format) runs unchanged. What upstream's OptimizationJob cannot say
(``max_failed_trials``, additional objectives, TPE, median stopping) travels in its
``optimizer.kftrainer.dev/*`` annotations.
"""

from __future__ import annotations

import copy
import json
import logging
import random
import string
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import kubeflow.common.utils as common_utils
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.optimizer import OptimizerClient as UpstreamClient
from kubeflow.optimizer.backends.base import RuntimeBackend
from kubeflow.optimizer.backends.kubernetes.backend import (
    KubernetesBackend as KatibBackend,
)
from kubeflow.optimizer.constants import constants
from kubeflow.optimizer.types.algorithm_types import BaseAlgorithm, GridSearch, RandomSearch
from kubeflow.optimizer.types.optimization_types import (
    Direction,
    Metric,
    Objective,
    OptimizationJob,
    Result,
    Trial,
    TrialConfig,
)
from kubeflow.optimizer.types.search_types import (
    CategoricalSearchSpace,
    ContinuousSearchSpace,
    Distribution,
)
from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend as TrainerBackend
from kubeflow.trainer.constants import constants as trainer_constants
from kubeflow.trainer.types.types import Event, Runtime, TrainJobTemplate
from kubernetes import client, config

from kftrainer.algorithms import TPE, MedianStop
from kftrainer.backend import LocalBackend, _check_launcher, _mpi_home_paths, _rewrite_trainer
from kftrainer.config import LocalBackendConfig
from kftrainer.engine import EngineError
from kftrainer.environment import job_environment

logger = logging.getLogger(__name__)

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
PLURAL = "optimizationjobs"
KIND = "OptimizationJob"
ANNOTATION = "optimizer.kftrainer.dev/"


# ---- the OptimizationJob from the SDK's arguments ------------------------------------------


def _space(name: str, spec: Any) -> dict:
    """One parameter of spec.parameters from a Katib V1beta1ParameterSpec (what the SDK's
    Search.uniform/loguniform/choice return)."""
    kind = getattr(spec, "parameter_type", None)
    fs = getattr(spec, "feasible_space", None)
    if kind in ("categorical", "discrete") and fs is not None and fs.list:
        return {
            "name": name,
            "searchSpace": {"categorical": {"choices": [str(v) for v in fs.list]}},
        }
    if kind in ("double", "int") and fs is not None and fs.min is not None and fs.max is not None:
        dist = "logUniform" if fs.distribution == Distribution.LOG_UNIFORM.value else "uniform"
        space = {"min": str(fs.min), "max": str(fs.max)}
        if kind == "int":
            space["type"] = "Int"
        return {"name": name, "searchSpace": {dist: space}}
    raise ValueError(
        f"search_space[{name!r}]: use Search.uniform, Search.loguniform or Search.choice "
        f"(got {spec!r})"
    )


def _algorithm(algorithm: BaseAlgorithm, annotations: dict[str, str]) -> dict:
    """spec.searchAlgorithm, and the annotations a TPE needs."""
    if isinstance(algorithm, GridSearch):
        return {"grid": {}}
    if isinstance(algorithm, RandomSearch | TPE):
        seed = algorithm.random_state
        if isinstance(algorithm, TPE):
            annotations[ANNOTATION + "algorithm"] = "tpe"
            settings = [
                f"{k}={v}"
                for k, v in (
                    ("n_startup_trials", algorithm.n_startup_trials),
                    ("n_ei_candidates", algorithm.n_ei_candidates),
                )
                if v is not None
            ]
            if settings:
                annotations[ANNOTATION + "algorithm-settings"] = ",".join(settings)
        return {"random": {} if seed is None else {"seed": int(seed)}}
    raise ValueError(
        f"algorithm: {type(algorithm).__name__} is not supported here "
        "(RandomSearch, GridSearch or kftrainer.TPE)"
    )


def optimization_job(
    name: str,
    trainjob_spec: dict,
    search_space: dict[str, Any],
    trial_config: TrialConfig,
    objectives: list[Objective],
    algorithm: BaseAlgorithm,
    early_stopping: MedianStop | None,
) -> dict:
    """The OptimizationJob the arguments of OptimizerClient.optimize describe."""
    annotations: dict[str, str] = {}
    search = _algorithm(algorithm, annotations)
    if trial_config.max_failed_trials is not None:
        annotations[ANNOTATION + "max-failed-trials"] = str(trial_config.max_failed_trials)
    if len(objectives) > 1:
        annotations[ANNOTATION + "additional-metrics"] = ",".join(o.metric for o in objectives[1:])
    if early_stopping is not None:
        annotations[ANNOTATION + "early-stopping"] = early_stopping.algorithm_name
        if early_stopping.settings():
            annotations[ANNOTATION + "early-stopping-settings"] = early_stopping.settings()
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "objectives": [
                {
                    "metric": objectives[0].metric,
                    "direction": objectives[0].direction.value.capitalize(),
                }
            ],
            "searchAlgorithm": search,
            "parameters": [_space(k, v) for k, v in search_space.items()],
            "numTrials": trial_config.num_trials,
            "parallelTrials": trial_config.parallel_trials,
            "trainJobTemplate": {"spec": trainjob_spec},
        },
    }


# ---- the SDK's types from the OptimizationJob -----------------------------------------------


def _search_space(spec: dict) -> dict[str, ContinuousSearchSpace | CategoricalSearchSpace]:
    out: dict[str, ContinuousSearchSpace | CategoricalSearchSpace] = {}
    for p in spec.get("parameters", []):
        ss = p.get("searchSpace", {})
        if "categorical" in ss:
            out[p["name"]] = CategoricalSearchSpace(choices=list(ss["categorical"]["choices"]))
            continue
        dist = Distribution.LOG_UNIFORM if "logUniform" in ss else Distribution.UNIFORM
        r = ss.get("logUniform") or ss.get("uniform") or {}
        out[p["name"]] = ContinuousSearchSpace(
            min=float(r["min"]), max=float(r["max"]), distribution=dist
        )
    return out


def _settings(text: str) -> dict[str, int]:
    return {k.strip(): int(v) for k, v in (kv.split("=", 1) for kv in text.split(",") if kv)}


def _algorithm_of(opt: dict) -> BaseAlgorithm:
    spec, ann = opt.get("spec", {}), opt.get("metadata", {}).get("annotations") or {}
    sa = spec.get("searchAlgorithm") or {}
    if "grid" in sa:
        return GridSearch()
    seed = (sa.get("random") or {}).get("seed")
    if ann.get(ANNOTATION + "algorithm") == "tpe":
        return TPE(random_state=seed, **_settings(ann.get(ANNOTATION + "algorithm-settings", "")))
    return RandomSearch(random_state=seed)


def _objectives(opt: dict) -> list[Objective]:
    spec, ann = opt.get("spec", {}), opt.get("metadata", {}).get("annotations") or {}
    first = spec["objectives"][0]
    direction = Direction(first.get("direction", "Minimize").lower())
    extra = [m.strip() for m in ann.get(ANNOTATION + "additional-metrics", "").split(",") if m]
    # Katib optimizes the first; the others are kept with the same direction (as the SDK
    # reads an Experiment back).
    return [Objective(metric=m, direction=direction) for m in [first["metric"], *extra]]


def _status(opt: dict) -> str:
    st = opt.get("status") or {}
    for c in st.get("conditions") or []:
        if c.get("status") == "True" and c.get("type") == "Complete":
            return constants.OPTIMIZATION_JOB_COMPLETE
        if c.get("status") == "True" and c.get("type") == "Failed":
            return constants.OPTIMIZATION_JOB_FAILED
    if any(t.get("state") in ("Running", "Pending") for t in st.get("trials") or []):
        return constants.OPTIMIZATION_JOB_RUNNING
    return constants.OPTIMIZATION_JOB_CREATED


def _metrics(trial: dict) -> list[Metric]:
    return [
        Metric(name=m["name"], min=m["min"], max=m["max"], latest=m["latest"])
        for m in trial.get("metrics") or []
    ]


def _parameters(trial: dict) -> dict[str, str]:
    return {a["name"]: a["value"] for a in trial.get("parameters") or []}


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


# ---- the backends ---------------------------------------------------------------------------


class _OptimizationJobs(RuntimeBackend):
    """What the local and the cluster backend share: the SDK's arguments into an
    OptimizationJob, an OptimizationJob into the SDK's types. Subclasses store and read the
    objects (``_create``, ``_read``, ``_list``, ``_delete``, ``_events``)."""

    trainer_backend: TrainerBackend
    namespace: str

    # -- storage, per backend
    def _create(self, body: dict, env: dict[str, str] | None) -> None:
        raise NotImplementedError

    def _read(self, name: str) -> dict:
        raise NotImplementedError

    def _list(self) -> list[dict]:
        raise NotImplementedError

    def _delete(self, name: str) -> None:
        raise NotImplementedError

    def _events(self, name: str, trials: list[str]) -> list[Event]:
        raise NotImplementedError

    def _trainjob_spec(self, template: TrainJobTemplate) -> tuple[dict, dict[str, str] | None]:
        spec = self.trainer_backend._get_trainjob_spec(
            runtime=template.runtime, trainer=template.trainer, initializer=template.initializer
        )
        return spec.to_dict(), None

    # -- the RuntimeBackend interface
    def optimize(
        self,
        trial_template: TrainJobTemplate,
        *,
        search_space: dict[str, Any],
        trial_config: TrialConfig | None = None,
        objectives: list[Objective] | None = None,
        algorithm: BaseAlgorithm | None = None,
        early_stopping: MedianStop | None = None,
    ) -> str:
        # The SDK's name: a letter and 11 hex digits.
        name = random.choice(string.ascii_lowercase) + uuid.uuid4().hex[:11]
        if not search_space:
            raise ValueError("Search space must be set.")
        template = copy.deepcopy(trial_template)
        search_space = copy.deepcopy(search_space)
        objectives = objectives or [Objective()]
        algorithm = algorithm or RandomSearch()
        trial_config = trial_config or TrialConfig()
        # The trial parameters reach the function as the SDK passes them to Katib.
        if not hasattr(template.trainer, "func_args"):
            raise ValueError(
                "trial_template.trainer: the trial's values reach a CustomTrainer's function "
                f"as func_args; got {type(template.trainer).__name__}"
            )
        if template.trainer.func_args is None:
            template.trainer.func_args = {}
        for param in search_space:
            template.trainer.func_args[param] = f"${{trialParameters.{param}}}"
        spec, env = self._trainjob_spec(template)
        body = optimization_job(
            name, spec, search_space, trial_config, objectives, algorithm, early_stopping
        )
        self._create(body, env)
        logger.debug("%s %s/%s has been created", KIND, self.namespace, name)
        return name

    def _job_from(self, opt: dict) -> OptimizationJob:
        spec = opt.get("spec", {})
        ann = opt.get("metadata", {}).get("annotations") or {}
        max_failed = ann.get(ANNOTATION + "max-failed-trials")
        trials = []
        for t in (opt.get("status") or {}).get("trials") or []:
            if t.get("state") == "Pending":
                continue  # no TrainJob yet (waiting for GPUs)
            trials.append(
                Trial(
                    name=t["name"],
                    parameters=_parameters(t),
                    trainjob=self.trainer_backend.get_job(t["name"]),
                    metrics=_metrics(t),
                )
            )
        return OptimizationJob(
            name=opt["metadata"]["name"],
            search_space=_search_space(spec),
            objectives=_objectives(opt),
            # upstream's type names its two algorithms; kftrainer.TPE is a third
            algorithm=_algorithm_of(opt),  # type: ignore[arg-type]
            trial_config=TrialConfig(
                num_trials=spec.get("numTrials", 1),
                parallel_trials=spec.get("parallelTrials", 1),
                max_failed_trials=int(max_failed) if max_failed is not None else None,
            ),
            trials=trials,
            # set by the engine and by the API server alike
            creation_timestamp=_timestamp(opt["metadata"].get("creationTimestamp")),  # type: ignore[arg-type]
            status=_status(opt),
        )

    def list_jobs(self) -> list[OptimizationJob]:
        try:
            return [self._job_from(o) for o in self._list()]
        except Exception as e:
            raise RuntimeError(f"Failed to list {KIND}s in namespace: {self.namespace}: {e}") from e

    def get_job(self, name: str) -> OptimizationJob:
        return self._job_from(self._read(name))

    def _get_best_trial(self, name: str) -> Trial | None:
        opt = self._read(name)
        st = opt.get("status") or {}
        best = (st.get("result") or {}).get("trainJobName")
        for t in st.get("trials") or []:
            if best and t.get("name") == best:
                return Trial(
                    name=best,
                    parameters=_parameters(t),
                    trainjob=self.trainer_backend.get_job(best),
                    metrics=_metrics(t),
                )
        return None

    def get_best_results(self, name: str) -> Result | None:
        best = self._get_best_trial(name)
        return None if best is None else Result(parameters=best.parameters, metrics=best.metrics)

    def get_job_logs(
        self, name: str, trial_name: str | None = None, follow: bool = False
    ) -> Iterator[str]:
        if trial_name is None:
            best = self._get_best_trial(name)
            if best is not None:
                trial_name = best.name
            else:
                trials = self.get_job(name).trials
                if not trials:
                    return
                trial_name = trials[0].name
            logger.debug("Getting logs from trial: %s", trial_name)
        # No metrics collector sidecar here: the trial's primary node (node-0) itself.
        yield from self.trainer_backend.get_job_logs(
            trial_name, follow=follow, step=trainer_constants.NODE + "-0"
        )

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.OPTIMIZATION_JOB_COMPLETE},  # noqa: B006 (upstream's)
        timeout: int = 3600,
        polling_interval: int = 2,
        callbacks: list[Callable[[OptimizationJob], None]] | None = None,
    ) -> OptimizationJob:
        # Upstream's loop, over this backend's get_job.
        return KatibBackend.wait_for_job_status(
            self,  # type: ignore[arg-type]
            name=name,
            status=status,
            timeout=timeout,
            polling_interval=polling_interval,
            callbacks=callbacks,
        )

    def get_job_events(self, name: str) -> list[Event]:
        job = self._read(name)
        trials = [t["name"] for t in (job.get("status") or {}).get("trials") or []]
        events = self._events(name, trials)
        events.sort(key=lambda e: e.event_time)
        return events

    def delete_job(self, name: str) -> None:
        self._delete(name)
        logger.debug("%s %s/%s has been deleted", KIND, self.namespace, name)


def _event(e: dict) -> Event | None:
    io = e.get("involvedObject") or {}
    when = _timestamp(e.get("firstTimestamp"))
    if not when:
        return None
    return Event(
        involved_object_kind=io.get("kind", ""),
        involved_object_name=io.get("name", ""),
        message=e.get("message") or "",
        reason=e.get("reason") or "",
        event_time=when,
    )


class LocalOptimizerBackend(_OptimizationJobs):
    """OptimizationJobs on kftrainer's local engine (``kftrainer optimize``)."""

    trainer_backend: LocalBackend

    def __init__(self, cfg: LocalBackendConfig | None = None):
        self.trainer_backend = LocalBackend(cfg)
        self.engine = self.trainer_backend.engine
        self.namespace = self.trainer_backend.namespace

    def _trainjob_spec(self, template: TrainJobTemplate) -> tuple[dict, dict[str, str] | None]:
        tb = self.trainer_backend
        tb._check_local(template.initializer, template.trainer)
        trainer = template.trainer
        packages = getattr(trainer, "packages_to_install", None)
        index_urls = getattr(trainer, "pip_index_urls", None) or list(
            trainer_constants.DEFAULT_PIP_INDEX_URLS
        )
        env = job_environment(packages, index_urls, tb.cfg.venv_cache_dir)
        # The runtime now, so that an MPI trial's paths can be made the job's own (see
        # backend._mpi_home_paths); template is optimize's copy.
        if not isinstance(template.runtime, Runtime):
            template.runtime = tb.get_runtime(
                template.runtime or trainer_constants.DEFAULT_TRAINING_RUNTIME
            )
        _check_launcher(template.runtime, trainer, env)
        spec, _ = super()._trainjob_spec(template)
        return _rewrite_trainer(spec, _mpi_home_paths(template.runtime, trainer)), env

    def _create(self, body: dict, env: dict[str, str] | None) -> None:
        e = self.engine
        args = ["-f", "-", "-n", self.namespace, "--job-workdir", *e.runtime_args()]
        try:
            e.run("optimize", *args, input=json.dumps(body), env=env)
        except EngineError as err:
            # The engine's own words (field paths) say more than "Failed to create".
            raise (ValueError if err.returncode == 1 else RuntimeError)(str(err)) from err

    def _read(self, name: str) -> dict:
        try:
            return self.engine.json("get", "optimizationjob", name, "-n", self.namespace)
        except EngineError as e:
            raise RuntimeError(f"Failed to get {KIND}: {self.namespace}/{name}: {e}") from e

    def _list(self) -> list[dict]:
        return self.engine.json("get", "optimizationjobs", "-n", self.namespace).get("items", [])

    def _delete(self, name: str) -> None:
        try:
            self.engine.run("delete", "optimizationjob", name, "-n", self.namespace)
        except EngineError as e:
            raise RuntimeError(f"Failed to delete {KIND}: {self.namespace}/{name}: {e}") from e

    def _events(self, name: str, trials: list[str]) -> list[Event]:
        items = self.engine.json("events", f"optimizationjob/{name}", "-n", self.namespace)
        return [ev for ev in (_event(e) for e in items.get("items", [])) if ev]


class ClusterOptimizerBackend(_OptimizationJobs):
    """OptimizationJobs on a cluster (kftrainer's controller manager runs them)."""

    def __init__(self, cfg: KubernetesBackendConfig):
        if cfg.namespace is None:
            cfg.namespace = common_utils.get_default_target_namespace(cfg.context)
        if cfg.client_configuration is None:
            if cfg.config_file or not common_utils.is_running_in_k8s():
                config.load_kube_config(config_file=cfg.config_file, context=cfg.context)
            else:
                config.load_incluster_config()
        api = client.ApiClient(cfg.client_configuration)
        self.custom_api = client.CustomObjectsApi(api)
        self.core_api = client.CoreV1Api(api)
        self.namespace = cfg.namespace
        self.trainer_backend = TrainerBackend(cfg)

    def _create(self, body: dict, env: dict[str, str] | None) -> None:
        try:
            self.custom_api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, body
            )
        except Exception as e:
            raise RuntimeError(
                f"Failed to create {KIND}: {self.namespace}/{body['metadata']['name']}: {e}"
            ) from e

    def _read(self, name: str) -> dict:
        try:
            return self.custom_api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, name
            )
        except Exception as e:
            raise RuntimeError(f"Failed to get {KIND}: {self.namespace}/{name}") from e

    def _list(self) -> list[dict]:
        return self.custom_api.list_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL
        ).get("items", [])

    def _delete(self, name: str) -> None:
        try:
            self.custom_api.delete_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, name
            )
        except Exception as e:
            raise RuntimeError(f"Failed to delete {KIND}: {self.namespace}/{name}") from e

    def _events(self, name: str, trials: list[str]) -> list[Event]:
        wanted = {(KIND, name), *((trainer_constants.TRAINJOB_KIND, t) for t in trials)}
        found = self.core_api.list_namespaced_event(self.namespace).to_dict().get("items") or []
        out = []
        for e in found:
            io = e.get("involved_object") or {}
            # events.k8s.io Events (what controllers record) carry eventTime
            when = e.get("first_timestamp") or e.get("event_time")
            if (io.get("kind"), io.get("name")) not in wanted or not when:
                continue
            out.append(
                Event(
                    involved_object_kind=io["kind"],
                    involved_object_name=io["name"],
                    message=e.get("message") or "",
                    reason=e.get("reason") or "",
                    event_time=when,
                )
            )
        return out


class OptimizerClient(UpstreamClient):
    """``kubeflow.optimizer.OptimizerClient``, with its methods and types, run by kftrainer.

    ``OptimizerClient()`` or ``OptimizerClient(LocalBackendConfig(...))``: the local engine.
    ``OptimizerClient(KubernetesBackendConfig(...))``: OptimizationJobs on that cluster (run
    by kftrainer's controller manager; upstream's own client, for Katib, is
    ``kubeflow.optimizer.OptimizerClient``). ``optimize`` also takes
    ``early_stopping=MedianStop(...)``, and ``algorithm`` also ``kftrainer.TPE(...)``.
    Every other method is upstream's.
    """

    def __init__(self, backend_config: LocalBackendConfig | KubernetesBackendConfig | None = None):
        # Not upstream's __init__, which makes a Katib backend; upstream's methods call only
        # self.backend's, which ours has (upstream's attribute is typed as its Katib backend).
        self.backend: _OptimizationJobs  # type: ignore[assignment]
        if backend_config is None or isinstance(backend_config, LocalBackendConfig):
            self.backend = LocalOptimizerBackend(backend_config)
        elif isinstance(backend_config, KubernetesBackendConfig):
            self.backend = ClusterOptimizerBackend(backend_config)
        else:
            raise ValueError(f"Invalid backend config '{backend_config}'")

    def optimize(
        self,
        trial_template: TrainJobTemplate,
        *,
        trial_config: TrialConfig | None = None,
        search_space: dict[str, Any],
        objectives: list[Objective] | None = None,
        algorithm: BaseAlgorithm | None = None,
        early_stopping: MedianStop | None = None,
    ) -> str:
        """Start a search (upstream's ``optimize``, plus ``early_stopping``); returns the
        OptimizationJob's name."""
        return self.backend.optimize(
            trial_template,
            trial_config=trial_config,
            search_space=search_space,
            objectives=objectives,
            algorithm=algorithm,
            early_stopping=early_stopping,
        )
