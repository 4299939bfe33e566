"""The browser tier's cluster part: `kftrainer ui --kubeconfig` against the simulated cluster.

Run by cluster-part (which brings the cluster and our controller up). The same pages as the local
part, fed by TrainJobs, JobSets, Jobs, pods and Events of a real API server:
  list       both TrainJobs appear with their status (kwok's pods finish: Complete; the other
             created suspended: Suspended) and the scope reads "cluster · namespace NS"
  overview   the JobSet's pods as the Job controller made them (two, Succeeded, exit 0), the
             TrainJob's conditions (upstream's Complete, from the JobSet), the Events of its
             Job and pods (the scheduler's Scheduled, the Job controller's SuccessfulCreate)
  metrics    status.trainerStatus written three times through the status subresource (what
             upstream's TrainJobStatus holds: progressPercentage, estimatedRemainingSeconds,
             metrics) is charted as the UI records it: three points, the last 80
  YAML       the TrainJob, JobSet, Job and pods; a Secret the TrainJob owns shows <redacted>,
             never its value
  logs       kwok plays the kubelet without serving logs: the tab shows the API server's answer
             for the pods' log subresource (the request path is the real one)
  actions    resume patches spec.suspend false (kubectl agrees), suspend patches it true again,
             delete removes the TrainJob (kubectl agrees)
  runtimes   the ClusterTrainingRuntimes and the namespace's TrainingRuntime; the preview
             renders a TrainJob against the cluster's runtimes
  viewer     a ServiceAccount that may only read TrainJobs starts the dashboard, sees the jobs,
             and an action comes back as the API server's 403
Environment: KFTRAINER, KFT_ARTIFACTS, KUBECONFIG, KFT_UI_NS.
"""

import base64
import json
import os
import re
import subprocess
import sys
import time

from selenium.webdriver.common.by import By

from browserlib import check, dashboard, http, login, new_driver, shot, summary, text_of, wait

KFT = os.environ["KFTRAINER"]
KC = os.environ["KUBECONFIG"]
NS = os.environ["KFT_UI_NS"]
SECRET_VALUE = "s3cr3t-value-never-shown"
servers = []


def kubectl(*args, stdin=None, check_rc=True):
    r = subprocess.run(["kubectl", "-n", NS, *args], input=stdin, capture_output=True,
                       text=True, timeout=60)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr}")
    return r


def trainjob(name, suspend, unschedulable=False):
    # an unschedulable pod keeps a resumed TrainJob from completing before it is suspended again
    patch = """  runtimePatches:
  - manager: kftrainer.test/browser-tier
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template: {spec: {nodeSelector: {nowhere: 'true'}}}
""" if unschedulable else ""
    return f"""apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
spec:
  suspend: {str(suspend).lower()}
  runtimeRef:
    kind: TrainingRuntime
    name: torch-quick
  trainer:
    image: example.invalid/train:1
    command: [torchrun, train.py]
    numNodes: 2
""" + patch


def report(progress):
    ts = {"progressPercentage": progress, "estimatedRemainingSeconds": 100 - progress,
          "metrics": [{"name": "loss", "value": "%.2f" % (1 - progress / 100)}],
          # required by the CRD's validation whenever trainerStatus is set
          "lastUpdatedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    kubectl("patch", "trainjob", "alpha", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"trainerStatus": ts}}))


def start_ui(*extra):
    p = subprocess.Popen([KFT, "ui", "--kubeconfig", KC, "--listen", "127.0.0.1:0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    servers.append(p)
    first = p.stdout.readline().strip()
    if not first.startswith("http://"):
        raise RuntimeError("ui did not start: " + p.stderr.read())
    return dashboard(first)


def confirm(driver, button):
    driver.find_element(By.ID, button).click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()


def run(driver):
    kubectl("apply", "-f", "-", stdin=trainjob("alpha", False))
    kubectl("apply", "-f", "-", stdin=trainjob("held", True, unschedulable=True))
    uid = kubectl("get", "trainjob", "alpha", "-o", "jsonpath={.metadata.uid}").stdout
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "alpha-token", "ownerReferences": [
                  {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                   "name": "alpha", "uid": uid}]},
              "data": {"token": base64.b64encode(SECRET_VALUE.encode()).decode()}}
    kubectl("apply", "-f", "-", stdin=json.dumps(secret))

    url = start_ui("--namespace", NS)
    login(driver, url)
    check("the cluster's TrainJobs are listed",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="alpha"]')
               and driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="held"]')))
    check("the header names the cluster's namespace",
          wait(lambda: text_of(driver, "#scope") == "cluster · namespace " + NS),
          text_of(driver, "#scope"))
    check("alpha completes (kwok's pods exit 0)",
          wait(lambda: "Complete" in text_of(driver, 'tr[data-job="alpha"]'), timeout=60))
    check("held shows Suspended", "Suspended" in text_of(driver, 'tr[data-job="held"]'))
    shot(driver, "c01-cluster-jobs")

    driver.find_element(By.CSS_SELECTOR, 'tr[data-job="alpha"] a').click()
    check("the job page shows the JobSet's two pods, Succeeded",
          wait(lambda: text_of(driver, "#pods").count("Succeeded") == 2
               and "alpha-node-0-0-" in text_of(driver, "#pods")), text_of(driver, "#pods"))
    check("the TrainJob's Complete condition is shown",
          wait(lambda: "Complete" in text_of(driver, "#conditions")))
    check("the step's command is shown", "torchrun train.py" in text_of(driver, "#commands"))
    check("the Events of its Job and pods are shown",
          wait(lambda: "SuccessfulCreate" in text_of(driver, "#events")
               and "Scheduled" in text_of(driver, "#events")), text_of(driver, "#events"))
    shot(driver, "c02-cluster-overview")

    driver.find_element(By.ID, "tab-metrics").click()
    chart = 'div.chart[data-metric="progress %"]'
    for p in (10, 40, 80):
        report(p)
        check(f"the chart gains the report of {p}%",
              wait(lambda: driver.find_element(By.CSS_SELECTOR, chart)
                   .get_attribute("data-last") == str(p)))
    check("the chart holds the three reports the UI saw",
          driver.find_element(By.CSS_SELECTOR, chart).get_attribute("data-points") == "3")
    check("the loss metric is charted",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'div.chart[data-metric="loss"]')))
    shot(driver, "c03-cluster-metrics")

    driver.find_element(By.ID, "tab-yaml").click()
    y = wait(lambda: "kind: Secret" in text_of(driver, "#yaml") and text_of(driver, "#yaml"))
    check("the YAML has the TrainJob, JobSet, Job and pods",
          y and all(re.search("^kind: " + k + "$", y, re.M)
                    for k in ("TrainJob", "JobSet", "Job", "Pod")), y[:500])
    encoded = base64.b64encode(SECRET_VALUE.encode()).decode()
    check("an owned Secret shows <redacted>, never its value",
          y and "<redacted>" in y and encoded not in y and SECRET_VALUE not in y)
    shot(driver, "c04-cluster-yaml")

    driver.find_element(By.ID, "tab-logs").click()
    check("the logs tab shows the API server's answer for the log subresource",
          wait(lambda: "containerLogs/" + NS + "/alpha-node-0-0-" in text_of(driver, "#log"),
               timeout=60), text_of(driver, "#log"))
    shot(driver, "c05-cluster-logs")

    driver.get(url + "#/job/" + NS + "/held")
    check("held's page shows Suspended", wait(lambda: "Suspended" in text_of(driver, "#card-status")))
    confirm(driver, "act-resume")
    check("resume patches spec.suspend false",
          wait(lambda: kubectl("get", "trainjob", "held", "-o",
                               "jsonpath={.spec.suspend}").stdout == "false"))
    check("the page leaves Suspended",
          wait(lambda: "Suspended" not in text_of(driver, "#card-status"), timeout=60))
    confirm(driver, "act-suspend")
    check("suspend patches spec.suspend true",
          wait(lambda: kubectl("get", "trainjob", "held", "-o",
                               "jsonpath={.spec.suspend}").stdout == "true"))
    check("the page shows Suspended again",
          wait(lambda: "Suspended" in text_of(driver, "#card-status"), timeout=60))
    shot(driver, "c06-cluster-actions")
    confirm(driver, "act-delete")
    check("delete removes the TrainJob",
          wait(lambda: kubectl("get", "trainjob", "held", check_rc=False).returncode != 0))
    check("the list no longer shows it",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="alpha"]')
               and not driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="held"]')))

    driver.get(url + "#/runtimes")
    check("the cluster's runtimes are listed (cluster-wide and the namespace's)",
          wait(lambda: "torch-quick" in text_of(driver, "#runtimes")
               and "torch-distributed" in text_of(driver, "#runtimes")))
    driver.find_element(By.LINK_TEXT, "torch-quick").click()
    check("a TrainingRuntime's YAML is shown",
          wait(lambda: "kind: TrainingRuntime" in text_of(driver, "#runtime-yaml")))
    driver.find_element(By.ID, "preview-run").click()
    check("the preview renders against the cluster's runtime",
          wait(lambda: "kind: JobSet" in text_of(driver, "#preview-output")
               and "example.invalid/torch:1" in text_of(driver, "#preview-output")),
          text_of(driver, "#preview-output"))
    shot(driver, "c07-cluster-runtimes")

    viewer(url)

    aurl = start_ui("--all-namespaces")
    st, _, body = http(aurl + "api/jobs")
    check("--all-namespaces lists the namespace's jobs too",
          st == 200 and any(r["namespace"] == NS and r["name"] == "alpha"
                            for r in json.loads(body)["items"]), body[:300])
    r = subprocess.run([KFT, "ui", "--kubeconfig", "/nonexistent/kubeconfig"],
                       capture_output=True, text=True, timeout=30)
    check("a missing kubeconfig is an error naming it",
          r.returncode == 1 and "/nonexistent/kubeconfig" in r.stderr, r.stderr)
    r = subprocess.run([KFT, "ui", "--namespace", "x"], capture_output=True, text=True,
                       timeout=30)
    check("--namespace without --kubeconfig is a usage error", r.returncode == 2, r.stderr)


def viewer(url):
    """A user who may only read TrainJobs: the dashboard still starts (the kinds it may not
    watch stay empty), and an action comes back as the API server's refusal, 403."""
    kubectl("create", "serviceaccount", "ui-viewer")
    kubectl("create", "role", "ui-viewer", "--verb=get,list,watch",
            "--resource=trainjobs.trainer.kubeflow.org")
    kubectl("create", "rolebinding", "ui-viewer", "--role=ui-viewer",
            "--serviceaccount=" + NS + ":ui-viewer")
    token = kubectl("create", "token", "ui-viewer").stdout.strip()
    cfg = json.loads(subprocess.run(["kubectl", "config", "view", "--raw", "-o", "json"],
                                    capture_output=True, text=True, check=True).stdout)
    cluster = cfg["clusters"][0]
    kc = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster],
          "users": [{"name": "viewer", "user": {"token": token}}],
          "contexts": [{"name": "viewer", "context": {"cluster": cluster["name"],
                                                      "user": "viewer", "namespace": NS}}],
          "current-context": "viewer"}
    path = os.path.join(os.environ["KFT_ARTIFACTS"], "viewer.kubeconfig")
    with open(path, "w") as f:
        json.dump(kc, f)
    os.chmod(path, 0o600)
    try:
        p = subprocess.Popen([KFT, "ui", "--kubeconfig", path, "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        servers.append(p)
        first = p.stdout.readline().strip()
        check("a user who may only read TrainJobs can start the dashboard",
              first.startswith("http://"), first)
        vurl = dashboard(first)
        st, _, body = http(vurl + "api/jobs")
        check("and sees the namespace's TrainJobs",
              st == 200 and '"alpha"' in body, f"{st} {body[:200]}")
        csrf = json.loads(http(vurl + "api/session")[2])["csrf"]
        st, _, body = http(vurl + "api/jobs/" + NS + "/alpha/suspend", method="POST", body=b"",
                           headers={"X-KFT-CSRF": csrf})
        check("an action it may not do is the API server's refusal, 403",
              st == 403 and "forbidden" in body, f"{st} {body[:300]}")
    finally:
        os.remove(path)


def main():
    driver = new_driver("chromedriver-cluster.log")
    try:
        run(driver)
        logs = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
                and "/logs/" not in e["message"]]
        check("the page logged no errors (CSP, scripts)", not logs, json.dumps(logs)[:2000])
    except Exception as e:  # a step that cannot go on fails the part, not the tier's runner
        check("the cluster part ran to its end", False, repr(e))
    finally:
        driver.quit()
        # each server's stderr is kept: what it warned of, and sanitizer reports when the
        # binary was built with them
        for i, p in enumerate(servers):
            p.terminate()
            p.wait(30)
            with open(os.path.join(os.environ["KFT_ARTIFACTS"], f"ui-cluster-{i}.err"),
                      "w") as f:
                f.write(p.stderr.read())
    return summary("browser cluster")


if __name__ == "__main__":
    sys.exit(main())
