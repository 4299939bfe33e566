"""The browser tier: `kftrainer ui` in Debian's headless chromium against real jobs.

Each check prints PASS/FAIL; the run closes with "browser: N passed, N failed" and exits 1 on
any failure. Screenshots of every page go to $KFT_ARTIFACTS (one PNG per page).

Environment: KFTRAINER (the binary), KFT_REPO_ROOT, KFT_ARTIFACTS, KFT_STATE_DIR (fresh).
"""

import json
import os
import re
import subprocess
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browserlib import (TOKENS, check, dashboard, http, login, new_driver, shot, summary,
                        text_of, wait)

KFT = os.environ["KFTRAINER"]
REPO = os.environ["KFT_REPO_ROOT"]
STATE = os.environ["KFT_STATE_DIR"]
ENV = dict(os.environ, KFTRAINER_STATE_DIR=STATE,
           KFTRAINER_RUNTIMES=os.path.join(REPO, "manifests", "runtimes"))
GATES = os.path.join(STATE, "..", "gates")

servers = []


def kft(*args, check_rc=True):
    r = subprocess.run([KFT, *args], env=ENV, capture_output=True, text=True, timeout=120)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"kftrainer {' '.join(args)}: {r.stderr}")
    return r


def start_ui(*extra):
    p = subprocess.Popen([KFT, "ui", *extra], env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    servers.append(p)
    first = p.stdout.readline().strip()
    if not first.startswith("http://"):
        raise RuntimeError("ui did not start: " + p.stderr.read())
    return dashboard(first)


def gate(name):
    open(os.path.join(GATES, name), "w").close()


# A job that writes log lines and progress reports in phases, each waiting for a gate file, so
# the test sees the page change while the job runs. Its lines, metric names and command carry
# markup that must show as text.
XSS_LINE = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
XSS_METRIC = "<b onmouseover=window.__xss=3>loss</b>"
LIVE_SCRIPT = r"""
g=$1
report() { printf '{"progressPercentage": %s, "estimatedRemainingSeconds": %s, "metrics": [{"name": "%s", "value": "%s"}]}' "$1" "$2" "$3" "$4" > "$KFTRAINER_STATUS_FILE"; }
echo "hello-1"
echo '""" + XSS_LINE + r"""'
report 10 90 '""" + XSS_METRIC + r"""' 0.9
while [ ! -e "$g/one" ]; do sleep 0.1; done
echo "hello-2"
report 50 40 '""" + XSS_METRIC + r"""' 0.5
while [ ! -e "$g/two" ]; do sleep 0.1; done
report 90 5 '""" + XSS_METRIC + r"""' 0.1234567891
echo "hello-3"
while [ ! -e "$g/three" ]; do sleep 0.1; done
"""


def no_xss(driver):
    return driver.execute_script("return window.__xss === undefined") and not \
        driver.find_elements(By.CSS_SELECTOR, "main img, main script, main b")


# A hyperparameter search whose trials print their loss three times, a little apart, so the
# objective chart has a line per trial; one choice carries markup that must show as text.
XSS_CHOICE = "<b onmouseover=window.__xss=4>wide</b>"
SEARCH = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata: {name: tune}
spec:
  objectives: [{metric: loss}]
  numTrials: 6
  parallelTrials: 2
  searchAlgorithm: {random: {seed: 11}}
  parameters:
    - name: lr
      searchSpace: {logUniform: {min: "0.0001", max: "0.1"}}
    - name: width
      searchSpace: {categorical: {choices: ["narrow", "%s"]}}
  trainJobTemplate:
    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        command:
          - python3
          - -c
          - |
            import math, time
            lr = float("${trialParameters.lr}")
            for step in range(3):
                print(f"step {step} loss={abs(math.log10(lr) + 2.5) + 1 / (step + 1)}", flush=True)
                time.sleep(0.4)
""" % XSS_CHOICE


def searches(driver, url):
    path = os.path.join(STATE, "..", "search.yaml")
    with open(path, "w") as f:
        f.write(SEARCH)
    driver.get(url + "#/optimizations")
    check("the searches page loads empty", wait(lambda: "No searches yet" in text_of(driver, "#optimizations")))
    kft("optimize", "-f", path)
    check("a new search appears without a reload",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-optimization="tune"]')))
    driver.find_element(By.CSS_SELECTOR, 'tr[data-optimization="tune"] a').click()
    check("its trials fill the table as they start",
          wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#trials tr[data-trial]")) >= 2))
    check("the search completes", wait(lambda: "Complete" in text_of(driver, "#opt-status"), 120))
    best = json.loads(kft("get", "optimizationjob", "tune", "-o", "json").stdout)["status"]["result"]["trainJobName"]
    check("every trial has a row", len(driver.find_elements(By.CSS_SELECTOR, "#trials tr[data-trial]")) == 6)
    check("the best trial is marked, as the CLI names it",
          wait(lambda: driver.find_element(By.CSS_SELECTOR, "#trials tr.best").get_attribute("data-trial") == best),
          best)
    check("the best trial is named on its card", wait(lambda: best in text_of(driver, "#opt-best")))
    chart = driver.find_element(By.ID, "objective-chart")
    check("the objective chart has a line per trial",
          wait(lambda: chart.get_attribute("data-series") == "6"), chart.get_attribute("data-series"))
    check("and every value reported (3 per trial)",
          wait(lambda: chart.get_attribute("data-points") == "18"), chart.get_attribute("data-points"))
    for p in ("lr", "width"):
        sel = 'div.chart[data-parameter="%s"]' % p
        check("a scatter of %s against the objective, a point per trial" % p,
              wait(lambda: driver.find_element(By.CSS_SELECTOR, sel).get_attribute("data-points") == "6"))
    charts = json.loads(http(url + "api/session")[2])["charts"]
    if charts:
        check("the charts are drawn (uPlot canvases)",
              len(driver.find_elements(By.CSS_SELECTOR, "#objective-chart canvas, #scatter canvas")) >= 3)
    check("a parameter value carrying markup shows as text",
          wait(lambda: XSS_CHOICE in text_of(driver, "#trials")) and no_xss(driver))
    shot(driver, "10-search")
    driver.execute_script("document.getElementById('scatter').scrollIntoView()")
    shot(driver, "10b-search-scatter")
    driver.find_element(By.CSS_SELECTOR, "#trials tr.best a").click()
    check("a trial links to its TrainJob's page", wait(lambda: best in text_of(driver, "#job-name")))
    driver.back()
    wait(lambda: driver.find_elements(By.ID, "act-delete"))
    driver.find_element(By.ID, "act-delete").click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    check("delete works: back on the list, the search gone",
          wait(lambda: "No searches yet" in text_of(driver, "#optimizations")))
    check("the CLI agrees, trials too", kft("get", "optimizationjob", "tune", check_rc=False).returncode == 3
          and "tune-" not in kft("get", "-o", "name").stdout)
    shot(driver, "11-searches-empty")


def main():
    os.makedirs(GATES, exist_ok=True)
    url = start_ui("--listen", "127.0.0.1:0")
    driver = new_driver()
    try:
        run(driver, url)
        searches(driver, url)
        security(driver, url)
        logs = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        check("the page logged no errors (CSP, scripts)", not logs, json.dumps(logs)[:2000])
    finally:
        driver.quit()
        for g in ("one", "two", "three"):
            gate(g)
        for name in ("live", "sleeper"):
            kft("delete", name, check_rc=False)
        kft("delete", "optimizationjobs", "--all", check_rc=False)
        for p in servers:
            p.terminate()
            p.wait(10)
    return summary("browser")


def run(driver, url):
    login(driver, url)
    check("jobs page loads empty", wait(lambda: "No TrainJobs yet" in text_of(driver, "#jobs")))
    shot(driver, "01-jobs-empty")

    kft("train", "--runtime", "torch-distributed", "--name", "live", "--", "sh", "-c",
        LIVE_SCRIPT, "sh", GATES)
    check("the list shows a new job without a reload",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]')))
    check("its status becomes Running",
          wait(lambda: "Running" in text_of(driver, 'tr[data-job="live"]')))
    check("its progress shows 10%",
          wait(lambda: "10%" in text_of(driver, 'tr[data-job="live"]')))
    shot(driver, "02-jobs-list")
    driver.find_element(By.CSS_SELECTOR, 'tr[data-job="live"] a').click()
    check("the job page shows its pod",
          wait(lambda: "live-node-0-0" in text_of(driver, "#pods")))
    check("the job page shows the step's command",
          wait(lambda: "hello-1" in text_of(driver, "#commands")))
    check("the job page shows conditions and events",
          wait(lambda: text_of(driver, "#events").count("\n") >= 1))
    check("markup in the command shows as text", XSS_LINE in text_of(driver, "#commands"))
    shot(driver, "03-job-overview")

    driver.find_element(By.ID, "tab-logs").click()
    check("logs show the lines written so far",
          wait(lambda: "hello-1" in text_of(driver, "#log")))
    check("a log line carrying markup shows as text",
          wait(lambda: XSS_LINE in text_of(driver, "#log")) and no_xss(driver))
    gate("one")
    check("logs follow: a line written later appears without a reload",
          wait(lambda: "hello-2" in text_of(driver, "#log")))
    driver.find_element(By.ID, "log-search").send_keys("hello-2")
    check("search keeps only matching lines",
          wait(lambda: text_of(driver, "#log").strip() == "hello-2"))
    href = driver.find_element(By.ID, "log-download").get_attribute("href")
    st, hdr, body = http(href)
    check("download gives the whole log as an attachment",
          st == 200 and "attachment" in hdr.get("Content-Disposition", "") and "hello-1" in body,
          f"{st} {hdr}")
    shot(driver, "04-job-logs")

    driver.find_element(By.ID, "tab-metrics").click()
    chart = 'div.chart[data-metric="progress %"]'
    n = wait(lambda: int(driver.find_element(By.CSS_SELECTOR, chart).get_attribute("data-points")))
    check("the progress chart has points", bool(n), str(n))
    charts = json.loads(http(url + "api/session")[2])["charts"]
    if charts:
        check("charts are drawn (uPlot canvas)",
              bool(driver.find_elements(By.CSS_SELECTOR, chart + " canvas")))
    else:
        check("without uPlot the page says so", bool(driver.find_elements(By.ID, "no-charts")))
    gate("two")
    check("the chart gains points as progress is reported",
          wait(lambda: int(driver.find_element(By.CSS_SELECTOR, chart)
                           .get_attribute("data-points")) > (n or 0)))
    check("the last point is the latest report (90)",
          wait(lambda: driver.find_element(By.CSS_SELECTOR, chart)
               .get_attribute("data-last") == "90"))
    check("a metric's card shows six significant digits, its title the value sent",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, '#cards [title="0.1234567891"]')
               and "0.123457" in text_of(driver, "#cards")
               and "0.1234567891" not in text_of(driver, "#cards")), text_of(driver, "#cards"))
    check("a metric named with markup is charted under its name as text",
          wait(lambda: XSS_METRIC in text_of(driver, "#charts")) and no_xss(driver))
    shot(driver, "05-job-metrics")

    driver.find_element(By.ID, "tab-yaml").click()
    check("the YAML tab shows the TrainJob and its JobSet",
          wait(lambda: "kind: TrainJob" in text_of(driver, "#yaml")
               and "kind: JobSet" in text_of(driver, "#yaml")))
    shot(driver, "06-job-yaml")

    # suspend, resume and delete on a job that would otherwise run for long
    kft("train", "--runtime", "torch-distributed", "--name", "sleeper", "--",
        "sh", "-c", "echo sleeping; sleep 600")
    driver.get(url + "#/job/default/sleeper")
    check("a second job's page shows it Running",
          wait(lambda: "Running" in text_of(driver, "#card-status")))
    driver.find_element(By.ID, "act-suspend").click()
    check("suspend asks for confirmation",
          wait(lambda: driver.find_element(By.ID, "confirm").is_displayed()))
    shot(driver, "07-confirm")
    driver.find_element(By.ID, "confirm-ok").click()
    check("suspend works: the job shows Suspended",
          wait(lambda: "Suspended" in text_of(driver, "#card-status")))
    check("the CLI agrees", "Suspended" in kft("get", "sleeper").stdout)
    shot(driver, "08-suspended")
    driver.find_element(By.ID, "act-resume").click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    check("resume works: the job runs again",
          wait(lambda: "Running" in text_of(driver, "#card-status")))
    # every request the page makes from here is recorded, so "nothing was sent" is a fact
    driver.execute_script("""window.kftSent = []; const f = window.fetch;
        window.fetch = (u, o) => { window.kftSent.push(String(u)); return f(u, o); };""")
    driver.find_element(By.ID, "act-delete").click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-cancel").click()
    check("cancel closes the dialog",
          wait(lambda: not driver.find_element(By.ID, "confirm").is_displayed()))
    sent = driver.execute_script("return window.kftSent")
    check("cancel sends nothing", not any("/delete" in u for u in sent), str(sent))
    check("cancel leaves the job alone", kft("get", "sleeper", check_rc=False).returncode == 0)
    driver.find_element(By.ID, "act-delete").click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    check("the confirm dialog opens with Cancel focused",
          driver.switch_to.active_element.get_attribute("id") == "confirm-cancel")
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    check("Esc closes the confirm dialog",
          wait(lambda: not driver.find_element(By.ID, "confirm").is_displayed()))
    sent = driver.execute_script("return window.kftSent")
    check("Esc sends nothing", not any("/delete" in u for u in sent), str(sent))
    driver.find_element(By.ID, "act-delete").click()
    wait(lambda: driver.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    check("delete works: back on the list, the job gone",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]')
               and not driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="sleeper"]')))
    check("the CLI agrees it is gone", kft("get", "sleeper", check_rc=False).returncode == 3)

    # A failed job says why on its page: the node, its exit code and its last lines (as text).
    kft("train", "--runtime", "torch-distributed", "--name", "broken", "--", "sh", "-c",
        'echo "<b>ValueError: browser-boom</b>" >&2; exit 4')
    kft("wait", "broken", "--for", "Failed", "--timeout", "60s")
    driver.get(url + "#/job/default/broken")
    check("a failed job's page says which node failed, its exit code and last lines",
          wait(lambda: "exited with code 4; its last lines:\n  <b>ValueError: browser-boom</b>"
               in text_of(driver, "#job-failure")), text_of(driver, "#cards"))
    check("the failure's markup is shown as text", no_xss(driver))
    shot(driver, "08b-failed")
    kft("delete", "broken")
    driver.get(url + "#/")
    wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]'))
    accessibility(driver, url)
    driver.find_element(By.ID, "status-filter").send_keys("Failed")
    check("the status filter hides jobs of another status",
          wait(lambda: not driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]')))
    driver.get(url + "#/")
    driver.refresh()
    wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]'))
    driver.find_element(By.ID, "filter").send_keys("no-such")
    check("the text filter hides jobs that do not match",
          wait(lambda: "No job matches" in text_of(driver, "#jobs")))

    driver.get(url + "#/runtimes")
    check("runtimes are listed",
          wait(lambda: "torch-distributed" in text_of(driver, "#runtimes")))
    check("a runtime's YAML is shown",
          wait(lambda: "kind: ClusterTrainingRuntime" in text_of(driver, "#runtime-yaml")))
    driver.find_element(By.ID, "preview-run").click()
    check("the preview renders the TrainJob's objects",
          wait(lambda: "kind: JobSet" in text_of(driver, "#preview-output")))
    shot(driver, "09-runtimes")


def unlabelled(driver):
    """The form controls on the page without an accessible name."""
    return driver.execute_script("""return [...document.querySelectorAll('input, select, textarea')]
        .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                       && !e.getAttribute('aria-labelledby'))
        .map((e) => e.id || e.outerHTML.slice(0, 60));""")


def accessibility(driver, url):
    """WAI-ARIA's sortable table and live-region habits, as a keyboard or screen reader meets
    them: headers sort from the keyboard and say so with aria-sort, every control has a name,
    the connection's state is said in words, not colour alone."""
    driver.get(url + "#/")
    wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]'))
    check("the jobs page's inputs have labels", not unlabelled(driver), str(unlabelled(driver)))
    check("the connection's state is said in words",
          wait(lambda: text_of(driver, "#conn") == "live"), text_of(driver, "#conn"))
    th = driver.find_element(By.CSS_SELECTOR, '#jobs th[data-key="name"]')
    button = driver.find_element(By.ID, "sort-name")
    button.send_keys(Keys.ENTER)
    check("Enter on a header sorts by it (aria-sort ascending)",
          wait(lambda: th.get_attribute("aria-sort") == "ascending"), th.get_attribute("aria-sort"))
    driver.find_element(By.ID, "sort-name").send_keys(Keys.SPACE)
    check("again reverses it (aria-sort descending)",
          wait(lambda: th.get_attribute("aria-sort") == "descending"), th.get_attribute("aria-sort"))
    others = driver.find_elements(By.CSS_SELECTOR, '#jobs th:not([data-key="name"])')
    check("the other headers say they do not sort (aria-sort none)",
          all(o.get_attribute("aria-sort") == "none" for o in others))
    shot(driver, "11-keyboard-sort")
    driver.get(url + "#/job/default/live/logs")
    wait(lambda: driver.find_elements(By.ID, "log-search"))
    check("the logs tab's inputs have labels", not unlabelled(driver), str(unlabelled(driver)))
    driver.get(url + "#/runtimes")
    wait(lambda: driver.find_elements(By.ID, "preview-input"))
    check("the runtimes page's inputs have labels", not unlabelled(driver), str(unlabelled(driver)))
    driver.get(url + "#/")
    wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]'))


def security(driver, url):
    m = re.match(r"http://127\.0\.0\.1:(\d+)/", url)
    port = m.group(1)
    st, _, _ = http(url + "api/jobs", headers={"Host": "attacker.example:" + port})
    check("a request naming another Host is refused (DNS rebinding)", st == 403, str(st))
    st, _, _ = http(url + "api/jobs/default/live/suspend", method="POST", body=b"")
    check("an action without the CSRF token is refused", st == 403, str(st))
    csrf = json.loads(http(url + "api/session")[2])["csrf"]
    st, _, _ = http(url + "api/jobs/default/live/suspend", method="POST", body=b"",
                    headers={"X-KFT-CSRF": csrf, "Origin": "http://attacker.example"})
    check("an action from another Origin is refused", st == 403, str(st))
    st, _, _ = http(url + "api/jobs/default/live/suspend", method="GET")
    check("an action is not a GET", st == 404, str(st))
    st, hdr, _ = http(url)
    check("the page forbids inline scripts and framing",
          "script-src 'self'" in hdr.get("Content-Security-Policy", "")
          and hdr.get("X-Frame-Options") == "DENY")

    st, _, _ = http(url + "api/jobs", auth=False)
    check("on loopback too, a request without the token is refused", st == 401, str(st))
    base = start_ui("--listen", "0.0.0.0:0")
    turl = base + "?token=" + TOKENS[base]
    st, _, _ = http(base + "api/jobs", auth=False)
    check("off loopback, a request without the token is refused", st == 401, str(st))
    st, _, _ = http(base + "api/jobs?token=wrong", auth=False)
    check("off loopback, a wrong token is refused", st == 401, str(st))
    port = base.rsplit(":", 1)[1].strip("/")
    st, hdr, _ = http(turl, auth=False)
    check("the token in the address becomes a cookie",
          st == 303 and f"kft_ui_token_{port}=" in hdr.get("Set-Cookie", ""), f"{st} {hdr}")
    driver.get(turl)
    check("with the token the page works",
          wait(lambda: driver.find_elements(By.CSS_SELECTOR, 'tr[data-job="live"]')))
    check("the browser's URL no longer shows the token", "token" not in driver.current_url)
    shot(driver, "10-token")


if __name__ == "__main__":
    sys.exit(main())
