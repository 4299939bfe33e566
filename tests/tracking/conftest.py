"""The tracking tier's servers and helpers (see run-tier).

A real MLflow tracking server and a real S3-compatible server (SeaweedFS) are started once
for the session on free loopback ports, each in a process group of its own that is killed at
the end; each test gets its own kftrainer state directory and, when it ends, waits for every
supervisor it started to exit (a supervisor lingers only while it drains its tracker), so a
test that leaks a process fails.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from mlflow.tracking import MlflowClient

KFTRAINER = os.environ["KFTRAINER"]
# The tests' own client administers the server (makes buckets); kftrainer gets credentials
# that may read and write objects only, as an exporter's usually are.
ADMIN_KEY, ADMIN_SECRET = "tier-admin", "tier-admin-secret"
ACCESS_KEY, SECRET_KEY = "kftrainer-tier", "kftrainer-tier-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def poll(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Calls check until it returns something true (or timeout): the condition, never a
    sleep, is what a test waits for."""
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # the server may not answer yet
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        with contextlib.suppress(ProcessLookupError):  # its workers, if the leader went first
            os.killpg(self.popen.pid, signal.SIGKILL)


def start(argv: list[str], log: Path, cwd: Path) -> Proc:
    with open(log, "wb") as out:
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    return Proc(p, log)


def healthy(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.status == 200


def start_mlflow(root: Path, port: int) -> Proc:
    root.mkdir(parents=True, exist_ok=True)
    p = start(
        [
            os.environ["KFT_MLFLOW"],
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{root}/mlflow.db",
            "--artifacts-destination",
            str(root / "artifacts"),
            "--serve-artifacts",
        ],
        root / "server.log",
        root,
    )
    try:
        poll(
            "mlflow server",
            lambda: p.popen.poll() is None and healthy(f"http://127.0.0.1:{port}/health"),
            timeout=120,
        )
    except AssertionError as e:
        p.stop()
        raise AssertionError("mlflow server did not start:\n" + p.log.read_text()[-3000:]) from e
    return p


@dataclass
class Mlflow:
    url: str
    client: MlflowClient

    def run_of(self, job: dict[str, Any]) -> Any:
        """The run kftrainer made for a TrainJob: the one tagged with its uid."""
        uid = job["metadata"]["uid"]
        for e in self.client.search_experiments():
            runs = self.client.search_runs([e.experiment_id], f"tags.`kftrainer.uid` = '{uid}'")
            if runs:
                return runs[0]
        return None


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mlflow]:
    port = free_port()
    p = start_mlflow(tmp_path_factory.mktemp("mlflow"), port)
    url = f"http://127.0.0.1:{port}"
    try:
        yield Mlflow(url, MlflowClient(tracking_uri=url, registry_uri=url))
    finally:
        p.stop()


def as_db_user(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, its programs run as the postgres user."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def model_registry() -> Iterator[str]:
    """The Kubeflow Model Registry's REST server (`model-registry proxy`, built from its Go
    module by run-tier) over a PostgreSQL of its own (Debian's initdb and postgres); its
    base URL."""
    server = os.environ.get("KFT_MODEL_REGISTRY")
    initdb = shutil.which("initdb") or next(
        iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None
    )
    if not server:
        pytest.skip("the Model Registry's server could not be built (see run-tier's output)")
    if not initdb:
        pytest.skip("PostgreSQL (initdb) is not installed: the Model Registry stores in it")
    # not under pytest's own directory, which only root may enter
    root = Path(tempfile.mkdtemp(prefix="kft-tier-model-registry-"))
    procs: list[Proc] = []
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres")
        subprocess.run(
            as_db_user([initdb, "-D", str(root / "pg"), "-A", "trust", "-U", "mr"]),
            check=True,
            capture_output=True,
        )
        pg_port, port = free_port(), free_port()
        postgres = str(Path(os.path.realpath(initdb)).parent / "postgres")
        argv = [postgres, "-D", str(root / "pg"), "-p", str(pg_port), "-k", str(root)]
        argv += ["-c", "listen_addresses=127.0.0.1"]
        db = start(
            as_db_user(argv),
            root / "postgres.log",
            root,
        )
        procs.append(db)
        url = f"http://127.0.0.1:{port}"
        poll("postgres", lambda: db.popen.poll() is None and listening(pg_port))
        dsn = f"postgres://mr@127.0.0.1:{pg_port}/postgres?sslmode=disable"
        argv = [server, "proxy", "--hostname", "127.0.0.1", "--port", str(port)]
        argv += ["--embedmd-database-type", "postgres", "--embedmd-database-dsn", dsn]
        mr = start(argv, root / "model-registry.log", root)
        procs.insert(0, mr)
        poll(
            "the Model Registry",
            lambda: (
                mr.popen.poll() is None
                and listening(port)
                and healthy(f"{url}/api/model_registry/v1alpha3/registered_models")
            ),
            timeout=120,
        )
        yield url
    finally:
        for p in procs:
            p.stop()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class S3:
    endpoint: str
    client: Any

    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    root = tmp_path_factory.mktemp("weed")
    (root / "data").mkdir()
    config = root / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "admin",
                        "credentials": [{"accessKey": ADMIN_KEY, "secretKey": ADMIN_SECRET}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    },
                    {
                        "name": "kftrainer",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Read", "Write", "List", "Tagging"],
                    },
                ]
            }
        )
    )
    ports = {k: free_port() for k in ("master", "volume", "filer", "s3")}
    argv = [
        os.environ["KFT_WEED"],
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={root / 'data'}",
        "-s3",
        f"-s3.config={config}",
        f"-master.port={ports['master']}",
        f"-volume.port={ports['volume']}",
        f"-filer.port={ports['filer']}",
        f"-s3.port={ports['s3']}",
        f"-master.port.grpc={free_port()}",
        f"-volume.port.grpc={free_port()}",
        f"-filer.port.grpc={free_port()}",
        f"-s3.port.grpc={free_port()}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        "-volume.max=0",
        "-master.volumeSizeLimitMB=64",
    ]
    p = start(argv, root / "weed.log", root)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ADMIN_KEY,
        aws_secret_access_key=ADMIN_SECRET,
        region_name="us-east-1",
    )
    try:
        poll(
            "SeaweedFS's S3 gateway",
            lambda: p.popen.poll() is None and client.create_bucket(Bucket="models"),
            timeout=120,
        )
    except AssertionError as e:
        p.stop()
        raise AssertionError(
            "weed did not start:\n" + (root / "weed.log").read_text()[-3000:]
        ) from e
    try:
        yield S3(endpoint, client)
    finally:
        p.stop()


def supervisors_of(state: Path) -> list[int]:
    """Live processes whose command line names this state directory."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(state).encode() in cmd:
            found.append(int(d.name))
    return found


class Kft:
    """kftrainer with one state directory and an environment pointing at the servers."""

    def __init__(self, state: Path, env: dict[str, str]):
        self.state = state
        self.env = env

    def run(
        self,
        *args: str,
        check: bool = True,
        env: dict[str, str] | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(
            [KFTRAINER, "--state-dir", str(self.state), *args],
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            input=input,
            check=False,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"kftrainer {' '.join(args)}: {p.returncode}\n{p.stderr}")
        return p

    def train(self, job: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
        self.run("train", "-f", "-", input=json.dumps(job), env=env)
        return self.get(job["metadata"]["name"])

    def get(self, name: str) -> dict[str, Any]:
        return json.loads(self.run("get", name, "-o", "json").stdout)

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        for c in (self.get(name).get("status") or {}).get("conditions") or []:
            if c["type"] == type_:
                return c
        return None

    def wait_for(
        self, name: str, type_: str, status: str = "True", timeout: float = 120
    ) -> dict[str, Any]:
        return poll(
            f"{name} {type_}={status}",
            lambda: (c := self.condition(name, type_)) and c["status"] == status and c,
            timeout,
        )

    def log(self, name: str) -> str:
        return (self.state / "jobs" / "default" / name / "supervisor.log").read_text()


@pytest.fixture
def kft(tmp_path: Path, mlflow_server: Mlflow, s3: S3) -> Iterator[Kft]:
    state = tmp_path / "state"
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server.url, **s3.env()}
    k = Kft(state, env)
    yield k
    poll("the test's supervisors to exit", lambda: not supervisors_of(state), timeout=150)


def trainjob(
    name: str, script: str, annotations: dict[str, str] | None = None, args: list[str] | None = None
) -> dict[str, Any]:
    """A one-node TrainJob on torch-distributed running script with sh."""
    trainer: dict[str, Any] = {"command": ["sh", "-c", script]}
    if args:
        trainer["args"] = args
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer},
    }


def report(loss: str, step: int | None = None, progress: int | None = None) -> str:
    """A shell line writing one progress report to the status file."""
    metrics = [{"name": "loss", "value": loss}]
    if step is not None:
        metrics.append({"name": "step", "value": str(step)})
    body: dict[str, Any] = {"metrics": metrics}
    if progress is not None:
        body["progressPercentage"] = progress
    return f"echo '{json.dumps(body)}' > \"$KFTRAINER_STATUS_FILE\"; sleep 0.6"
