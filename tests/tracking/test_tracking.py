"""kftrainer's jobs in a real MLflow tracking server and a real S3 server (see run-tier).

What is pinned: MLflow's REST API as its own client reads it back (runs, params, metric
histories with step and timestamp, tags, RunStatus FINISHED/FAILED/KILLED,
mlflow.parentRunId nesting, registered model versions with source and run_id) and S3's
(objects and their bytes, no multipart upload left open); upstream v2.3.0's TrainerStatus is
what a job reports (metrics as name/value strings, progressPercentage).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kftrainer
from conftest import (
    KFTRAINER,
    S3,
    Kft,
    Mlflow,
    free_port,
    poll,
    report,
    start,
    start_mlflow,
    trainjob,
)


def finished_run(mlflow: Mlflow, job: dict, status: str = "FINISHED"):
    return poll(
        f"run of {job['metadata']['name']} {status}",
        lambda: (r := mlflow.run_of(job)) and r.info.status == status and r,
    )


def test_a_job_is_a_run(kft: Kft, mlflow_server: Mlflow) -> None:
    script = "; ".join([report("2.5", 10, 30), report("1.25", 20, 60), report("0.5", 30, 100)])
    job = kft.train(
        trainjob(
            "run-basic",
            script,
            {
                "tracking.kftrainer.dev/experiment": "tier-basic",
                "tracking.kftrainer.dev/params": json.dumps({"batch": 32}),
            },
            args=["epochs=3", "--lr=0.01", "-v"],
        )
    )
    kft.wait_for("run-basic", "Complete")
    run = finished_run(mlflow_server, job)
    exp = mlflow_server.client.get_experiment(run.info.experiment_id)
    assert exp.name == "tier-basic"
    assert run.info.run_name == "run-basic"
    assert run.data.params["runtime"] == "torch-distributed"
    assert run.data.params["epochs"] == "3" and run.data.params["lr"] == "0.01"
    assert run.data.params["args"] == '["-v"]'
    assert run.data.params["batch"] == "32"
    tags = run.data.tags
    assert tags["kftrainer.namespace"] == "default" and tags["kftrainer.name"] == "run-basic"
    assert tags["kftrainer.runtime"] == "torch-distributed"
    history = mlflow_server.client.get_metric_history(run.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(10, 2.5), (20, 1.25), (30, 0.5)]
    assert history[0].timestamp <= history[1].timestamp <= history[2].timestamp
    progress = mlflow_server.client.get_metric_history(run.info.run_id, "progressPercentage")
    assert [m.value for m in progress] == [30, 60, 100]
    assert run.info.end_time and run.info.end_time >= run.info.start_time


def test_failed_and_killed(kft: Kft, mlflow_server: Mlflow) -> None:
    failed = kft.train(trainjob("run-fails", report("9") + "; exit 3"))
    long = kft.train(trainjob("run-killed", report("7") + "; sleep 300"))
    kft.wait_for("run-fails", "Failed")
    finished_run(mlflow_server, failed, "FAILED")
    poll("run-killed's run", lambda: mlflow_server.run_of(long))
    kft.run("delete", "run-killed")
    finished_run(mlflow_server, long, "KILLED")


def test_reports_wait_while_the_server_is_down(kft: Kft, tmp_path: Path) -> None:
    """The job runs to the end while nothing answers at its tracking URI; the reports wait
    in the tracker's queue, and reach the server once it is up (retried with back-off)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    script = "; ".join(report(str(v), s) for s, v in ((1, 3.0), (2, 2.0), (3, 1.0)))
    job = kft.train(
        trainjob("run-outage", script),
        env={"MLFLOW_TRACKING_URI": url, "KFTRAINER_TRACKING_DRAIN": "120"},
    )
    # the queue is bounded: past KFTRAINER_TRACKING_MAX_REPORTS the oldest report goes
    five = "; ".join(report(str(float(s)), s) for s in range(1, 6))
    bounded = kft.train(
        trainjob("run-bounded", five),
        env={
            "MLFLOW_TRACKING_URI": url,
            "KFTRAINER_TRACKING_DRAIN": "120",
            "KFTRAINER_TRACKING_MAX_REPORTS": "2",
        },
    )
    kft.wait_for("run-outage", "Complete")
    kft.wait_for("run-bounded", "Complete")
    poll("the retry line", lambda: "will retry with back-off" in kft.log("run-outage"))
    server = start_mlflow(tmp_path / "late-mlflow", port)
    try:
        late = Mlflow(url, kftrainer_client(url))
        run = finished_run(late, job)
        history = late.client.get_metric_history(run.info.run_id, "loss")
        assert [(m.step, m.value) for m in history] == [(1, 3.0), (2, 2.0), (3, 1.0)]
        assert "reachable again" in kft.log("run-outage")
        run = finished_run(late, bounded)
        history = late.client.get_metric_history(run.info.run_id, "loss")
        assert [(m.step, m.value) for m in history] == [(4, 4.0), (5, 5.0)]
        # said as they go: the counts since the last line, summing to the three dropped
        said = re.findall(r"(\d+) reports? dropped while the server", kft.log("run-bounded"))
        assert sum(map(int, said)) == 3
    finally:
        server.stop()


def kftrainer_client(url: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=url, registry_uri=url)


def test_search_is_a_parent_run(kft: Kft, mlflow_server: Mlflow, tmp_path: Path) -> None:
    opt = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {
            "name": "tune",
            "annotations": {"tracking.kftrainer.dev/experiment": "tier-search"},
        },
        "spec": {
            "objectives": [{"metric": "loss"}],
            "numTrials": 3,
            "parallelTrials": 2,
            "searchAlgorithm": {"random": {"seed": 7}},
            "parameters": [
                {"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "0.9"}}}
            ],
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"command": ["sh", "-c", report("${trialParameters.lr}")]},
                }
            },
        },
    }
    f = tmp_path / "opt.json"
    f.write_text(json.dumps(opt))
    env = {"MLFLOW_EXPERIMENT_NAME": "tier-search"}
    kft.run("optimize", "-f", str(f), "--follow", env=env)
    exp = poll(
        "the search's experiment",
        lambda: mlflow_server.client.get_experiment_by_name("tier-search"),
    )

    def runs():
        rs = mlflow_server.client.search_runs([exp.experiment_id])
        return len(rs) == 4 and all(r.info.status == "FINISHED" for r in rs) and rs

    rs = poll("the search and its 3 trials FINISHED", runs)
    parent = next(r for r in rs if r.data.tags["kftrainer.kind"] == "OptimizationJob")
    trials = [r for r in rs if r is not parent]
    assert parent.info.run_name == "tune"
    assert parent.data.params["objective"] == "loss"
    assert parent.data.params["numTrials"] == "3"
    assert json.loads(parent.data.params["space.lr"])["uniform"]["min"] == "0.1"
    assert sorted(r.info.run_name for r in trials) == ["tune-1", "tune-2", "tune-3"]
    for t in trials:
        assert t.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert float(t.data.params["lr"]) == t.data.metrics["loss"]
    best = min(trials, key=lambda t: t.data.metrics["loss"])
    assert parent.data.params["best.lr"] == best.data.params["lr"]
    assert parent.data.metrics["best.loss"] == best.data.metrics["loss"]


def make_model(name: str, big_mib: int = 0) -> str:
    """A script that writes a model directory at /tmp/kft-tier-<name> (a path on no volume:
    the pod's view of it is this machine's own)."""
    out = f"/tmp/kft-tier-{name}"
    big = f"; head -c {big_mib * 1048576} /dev/urandom > {out}/weights.bin" if big_mib else ""
    return (
        f"rm -rf {out}; mkdir -p {out}/tokenizer && echo '{{\"dim\": 8}}' > {out}/config.json"
        f" && echo vocab > {out}/tokenizer/vocab.txt{big}; " + report("0.1")
    )


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_to_s3_multipart(kft: Kft, s3: S3) -> None:
    out = Path("/tmp/kft-tier-exp-s3")
    kft.train(
        trainjob(
            "exp-s3",
            make_model("exp-s3", big_mib=12),
            {
                "tracking.kftrainer.dev/export-to": "s3://models/runs/exp-s3/",
                "tracking.kftrainer.dev/export-from": str(out),
            },
        ),
        env={"KFTRAINER_EXPORT_PART_SIZE": str(5 << 20)},
    )
    c = kft.wait_for("exp-s3", "ModelExported")
    assert c["reason"] == "Exported"
    assert c["message"] == f"exported {out} to s3://models/runs/exp-s3/"
    listed = s3.client.list_objects_v2(Bucket="models", Prefix="runs/exp-s3/")["Contents"]
    keys = sorted(o["Key"] for o in listed)
    assert keys == [
        "runs/exp-s3/config.json",
        "runs/exp-s3/tokenizer/vocab.txt",
        "runs/exp-s3/weights.bin",
    ]
    body = s3.client.get_object(Bucket="models", Key="runs/exp-s3/weights.bin")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == sha(out / "weights.bin")
    # a multipart upload's ETag names its part count: 12 MiB in 5 MiB parts is 3
    head = s3.client.head_object(Bucket="models", Key="runs/exp-s3/weights.bin")
    assert head["ETag"].strip('"').endswith("-3")
    assert not s3.client.list_multipart_uploads(Bucket="models").get("Uploads")
    assert "exporting the model" in kft.log("exp-s3")
    log = kft.state / "jobs/default/exp-s3/logs/model-exporter.log"
    assert "exported weights.bin" in log.read_text()


def test_export_part_size_must_be_a_number(kft: Kft, s3: S3) -> None:
    # A knob typed wrong is named, not read as 0 (bad input gets a clear error): the export
    # fails and says why, and nothing reaches the bucket.
    out = Path("/tmp/kft-tier-exp-bad")
    kft.train(
        trainjob(
            "exp-bad",
            make_model("exp-bad"),
            {
                "tracking.kftrainer.dev/export-to": "s3://models/runs/exp-bad/",
                "tracking.kftrainer.dev/export-from": str(out),
            },
        ),
        env={"KFTRAINER_EXPORT_PART_SIZE": "5MiB"},
    )
    c = kft.wait_for("exp-bad", "ModelExported", status="False")
    assert c["reason"] == "ExportFailed"
    assert "KFTRAINER_EXPORT_PART_SIZE is not a whole number of bytes" in c["message"]
    assert not s3.client.list_objects_v2(Bucket="models", Prefix="runs/exp-bad/").get("Contents")


def dashboard_delete(kft: Kft, name: str) -> tuple[int, str]:
    """POST /api/jobs/default/NAME/delete to a `kftrainer ui` of kft's state: (status, error)."""
    log = kft.state.parent / "ui.log"
    ui = start(
        [KFTRAINER, "--state-dir", str(kft.state), "ui", "--listen", "127.0.0.1:0"],
        log,
        kft.state.parent,
    )
    try:
        url = poll(
            "the dashboard's address", lambda: re.search(r"http://\S+token=\w+", log.read_text())
        )
        base, token = url[0].split("?token=")
        auth = {"Authorization": f"Bearer {token}"}
        with urllib.request.urlopen(
            urllib.request.Request(base + "api/session", headers=auth)
        ) as r:
            csrf = json.load(r)["csrf"]
        req = urllib.request.Request(
            f"{base}api/jobs/default/{name}/delete",
            method="POST",
            headers={**auth, "X-KFT-CSRF": csrf},
        )
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, ""
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)["error"]
    finally:
        ui.stop()


def test_export_failure_then_retry(kft: Kft, s3: S3) -> None:
    out = Path("/tmp/kft-tier-exp-retry")
    kft.train(
        trainjob(
            "exp-retry",
            make_model("exp-retry"),
            {
                "tracking.kftrainer.dev/export-to": "s3://later/model",
                "tracking.kftrainer.dev/export-from": str(out),
            },
        )
    )
    c = kft.wait_for("exp-retry", "ModelExported", "False")
    assert c["reason"] == "ExportFailed"
    # the first file refused ends it: its key and the server's Code are said
    assert re.fullmatch(r"s3 s3://later/model/\S+: HTTP 403 AccessDenied", c["message"])
    assert kft.condition("exp-retry", "Complete")["status"] == "True"  # the job still completed
    assert (out / "config.json").exists()  # and its output is kept
    # the output is not deleted before the model is out
    p = kft.run("delete", "exp-retry", check=False)
    assert p.returncode == 1 and "its model is not exported" in p.stderr
    assert (kft.state / "jobs/default/exp-retry").is_dir()
    code, said = dashboard_delete(kft, "exp-retry")
    assert code == 409 and "its model is not exported" in said  # nor from the dashboard
    assert (kft.state / "jobs/default/exp-retry").is_dir()
    p = kft.run("export", "exp-retry", check=False)
    assert p.returncode == 1 and "AccessDenied" in p.stderr
    s3.client.create_bucket(Bucket="later")
    p = kft.run("export", "exp-retry")
    assert "exported /tmp/kft-tier-exp-retry to s3://later/model" in p.stdout
    assert kft.condition("exp-retry", "ModelExported")["status"] == "True"
    got = s3.client.get_object(Bucket="later", Key="model/tokenizer/vocab.txt")["Body"].read()
    assert got == b"vocab\n"
    kft.run("delete", "exp-retry")  # exported: nothing stands in the way


def test_export_to_the_registry_and_a_directory(
    kft: Kft, mlflow_server: Mlflow, tmp_path: Path
) -> None:
    out = Path("/tmp/kft-tier-exp-reg")
    job = kft.train(
        trainjob(
            "exp-reg",
            make_model("exp-reg"),
            {
                "tracking.kftrainer.dev/export-to": "models:/tier-model",
                "tracking.kftrainer.dev/export-from": str(out),
                "tracking.kftrainer.dev/log-artifacts": "true",
            },
        )
    )
    c = kft.wait_for("exp-reg", "ModelExported")
    run = finished_run(mlflow_server, job)
    versions = mlflow_server.client.search_model_versions("name='tier-model'")
    assert len(versions) == 1
    v = versions[0]
    assert c["message"] == f"exported {out} to models:/tier-model/{v.version}"
    assert v.run_id == run.info.run_id
    assert v.source == run.info.artifact_uri + "/model"
    files = {f.path for f in mlflow_server.client.list_artifacts(run.info.run_id, "model")}
    assert files == {"model/config.json", "model/tokenizer"}
    assert run.data.tags["kftrainer.export.uri"] == f"models:/tier-model/{v.version}"
    logs = [f.path for f in mlflow_server.client.list_artifacts(run.info.run_id, "logs")]
    assert logs == ["logs/node-0.log"]
    local = mlflow_server.client.download_artifacts(
        run.info.run_id, "model/config.json", str(tmp_path)
    )
    assert Path(local).read_text() == '{"dim": 8}\n'
    # the same output once more, by hand, to a directory
    dest = tmp_path / "exported"
    kft.run("export", "exp-reg", "--to", f"file://{dest}")
    assert (dest / "tokenizer" / "vocab.txt").read_text() == "vocab\n"


def registry_get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def test_export_registered_in_the_kubeflow_model_registry(
    kft: Kft, s3: S3, model_registry: str
) -> None:
    """register-to (issue 22, Done-when 4): the exported files become a version of a model in
    the Kubeflow Model Registry, read back through its REST API (v1alpha3): the registered
    model, one version named after the TrainJob, one model artifact at the S3 URI; a retried
    export finds them and adds nothing twice."""
    out = Path("/tmp/kft-tier-exp-kmr")
    env = {"KFTRAINER_MODEL_REGISTRY_URL": model_registry}
    kft.train(
        trainjob(
            "exp-kmr",
            make_model("exp-kmr"),
            {
                "tracking.kftrainer.dev/export-to": "s3://models/kmr/",
                "tracking.kftrainer.dev/export-from": str(out),
                "tracking.kftrainer.dev/register-to": "tier-kmr",
            },
        ),
        env=env,
    )
    c = kft.wait_for("exp-kmr", "ModelExported")
    assert c["message"] == (
        f"exported {out} to s3://models/kmr/, registered as tier-kmr version exp-kmr"
    )
    api = model_registry + "/api/model_registry/v1alpha3/"

    def registered() -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
        # the whole listings: v0.3.0 over PostgreSQL cannot list one model's versions
        model = registry_get(api + "registered_model?name=tier-kmr")
        versions = [
            (v["name"], v.get("author", ""))
            for v in registry_get(api + "model_versions")["items"]
            if v["registeredModelId"] == model["id"]
        ]
        artifacts = [
            (a["artifactType"], a["name"], a["uri"])
            for a in registry_get(api + "model_artifacts")["items"]
            if a["name"] == "tier-kmr"
        ]
        return versions, artifacts

    want = ([("exp-kmr", "kftrainer")], [("model-artifact", "tier-kmr", "s3://models/kmr/")])
    assert registered() == want
    body = s3.client.get_object(Bucket="models", Key="kmr/config.json")["Body"].read()
    assert body == b'{"dim": 8}\n'
    kft.run("export", "exp-kmr", env=env)
    assert registered() == want
    # without the server's address the export fails, saying what to set
    p = kft.run("export", "exp-kmr", check=False)
    assert p.returncode == 1 and "set KFTRAINER_MODEL_REGISTRY_URL" in p.stderr
    # refused before it runs: MLflow's models:/ is no place for the registry to point at
    bad = trainjob(
        "bad-kmr",
        "true",
        {
            "tracking.kftrainer.dev/export-to": "models:/x",
            "tracking.kftrainer.dev/register-to": "tier-kmr",
        },
    )
    p = kft.run("train", "-f", "-", check=False, input=json.dumps(bad))
    assert p.returncode == 1
    assert "metadata.annotations[tracking.kftrainer.dev/register-to]: Invalid value" in p.stderr
    assert "needs an s3:// or file://" in p.stderr


def test_export_from_the_cli_shortcut(kft: Kft, tmp_path: Path) -> None:
    """kftrainer train --runtime's --export-to/--export-from write the export annotations
    (issue 22: "the SDK/CLI options that set it"), checked like a file's."""
    out = Path("/tmp/kft-tier-exp-cli")
    dest = tmp_path / "from-cli"
    kft.run(
        "train",
        "--runtime",
        "torch-distributed",
        "--name",
        "exp-cli",
        "--export-to",
        f"file://{dest}",
        "--export-from",
        str(out),
        "--",
        "sh",
        "-c",
        make_model("exp-cli"),
    )
    ann = kft.get("exp-cli")["metadata"]["annotations"]
    assert ann["tracking.kftrainer.dev/export-to"] == f"file://{dest}"
    assert ann["tracking.kftrainer.dev/export-from"] == str(out)
    c = kft.wait_for("exp-cli", "ModelExported")
    assert c["message"] == f"exported {out} to file://{dest}"
    assert (dest / "tokenizer" / "vocab.txt").read_text() == "vocab\n"
    p = kft.run(
        "train",
        "--runtime",
        "torch-distributed",
        "--export-to",
        "s3://x/m",
        "--",
        "true",
        check=False,
    )
    assert p.returncode == 1
    assert (
        "metadata.annotations[tracking.kftrainer.dev/export-to]: Invalid value: "
        '"s3://x/m": not a valid bucket name'
    ) in p.stderr
    p = kft.run(
        "train", "--runtime", "torch-distributed", "--export-from", "/o", "--", "true", check=False
    )
    assert p.returncode == 2 and "--export-from needs --export-to" in p.stderr
    assert kft.run("get", "-o", "name").stdout.split() == ["trainjob.trainer.kubeflow.org/exp-cli"]


def test_refused_before_it_runs(kft: Kft) -> None:
    p = kft.run(
        "train",
        "-f",
        "-",
        check=False,
        input=json.dumps(
            trainjob("bad", "true", {"tracking.kftrainer.dev/export-to": "s3://x/model"})
        ),
    )
    assert p.returncode == 1
    assert (
        "metadata.annotations[tracking.kftrainer.dev/export-to]: Invalid value: "
        '"s3://x/model": not a valid bucket name'
    ) in p.stderr
    assert "bad" not in kft.run("get").stdout


def test_sdk(kft: Kft, mlflow_server: Mlflow, tmp_path: Path) -> None:
    """The SDK: LocalBackendConfig(tracking_uri=...), func_args as params, the options."""
    script = tmp_path / "sdk_job.py"
    script.write_text(f"""
import kftrainer
from kubeflow.trainer import CustomTrainer

def train(lr: float = 0.1, layers: int = 2):
    import json, os, pathlib
    out = pathlib.Path("/tmp/kft-tier-sdk")
    out.mkdir(exist_ok=True)
    (out / "model.txt").write_text(f"lr={{lr}} layers={{layers}}")
    pathlib.Path(os.environ["KFTRAINER_STATUS_FILE"]).write_text(json.dumps(
        {{"metrics": [{{"name": "loss", "value": str(lr * layers)}}]}}))

client = kftrainer.TrainerClient(kftrainer.LocalBackendConfig(
    state_dir={str(kft.state)!r}, kftrainer={os.environ["KFTRAINER"]!r},
    tracking_uri={mlflow_server.url!r}, experiment="tier-sdk"))
name = client.train(runtime="jax-distributed",
                    trainer=CustomTrainer(func=train, func_args={{"lr": 0.25, "layers": 3}}),
                    options=[kftrainer.Tracking(params={{"dataset": "toy"}}),
                             kftrainer.ExportTo("s3://models/sdk", from_path="/tmp/kft-tier-sdk")])
client.wait_for_job_status(name)
print(name)
""")
    env = {k: v for k, v in kft.env.items() if not k.startswith("MLFLOW_")}
    p = subprocess.run(
        [os.environ.get("KFT_TIER_PYTHON", "python3"), str(script)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=os.environ.get("KFT_REPO", "."),
    )
    assert p.returncode == 0, p.stderr
    name = p.stdout.strip().splitlines()[-1]
    job = kft.get(name)
    run = finished_run(mlflow_server, job)
    assert mlflow_server.client.get_experiment(run.info.experiment_id).name == "tier-sdk"
    assert run.data.params["lr"] == "0.25" and run.data.params["layers"] == "3"
    assert run.data.params["dataset"] == "toy"
    assert run.data.metrics["loss"] == 0.75
    kft.wait_for(name, "ModelExported")
    assert kftrainer.ExportTo  # the public names
