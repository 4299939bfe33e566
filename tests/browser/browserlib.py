"""What the browser tier's scripts share: checks and their count, waiting, plain HTTP, chromium."""

import os
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ART = os.environ["KFT_ARTIFACTS"]
counts = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        counts["passed"] += 1
        print("PASS:", name, flush=True)
    else:
        counts["failed"] += 1
        print("FAIL:", name, detail, flush=True)
    return ok


def summary(prefix):
    print(f"{prefix}: {counts['passed']} passed, {counts['failed']} failed", flush=True)
    return 1 if counts["failed"] else 0


def wait(pred, timeout=30.0, step=0.2):
    end = time.monotonic() + timeout
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception:  # the page is being redrawn; ask again
            pass
        if time.monotonic() > end:
            return None
        time.sleep(step)


# The token of each dashboard started, by its base URL ("http://127.0.0.1:PORT/"): every
# request needs it, loopback included.
TOKENS = {}


def dashboard(first_line):
    """The base URL of a dashboard from the first line it printed (its address with
    ?token=...), remembering the token for http() and login()."""
    base, _, token = first_line.partition("?token=")
    if not base.startswith("http://") or not token:
        raise RuntimeError("ui did not print its address with a token: " + first_line)
    TOKENS[base] = token
    return base


def login(driver, base):
    """Opens the dashboard as its printed address does: ?token= sets the cookie."""
    driver.get(base + "?token=" + TOKENS[base])


def http(url, method="GET", headers=None, body=None, auth=True):
    """A request; with auth, carrying the token of the dashboard url is on."""
    headers = dict(headers or {})
    for base, token in TOKENS.items():
        if auth and url.startswith(base):
            headers.setdefault("Authorization", "Bearer " + token)
    req = urllib.request.Request(url, method=method, headers=headers, data=body)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def shot(driver, name):
    driver.save_screenshot(os.path.join(ART, name + ".png"))


def text_of(driver, css):
    return driver.find_element(By.CSS_SELECTOR, css).text


def new_driver(log_name="chromedriver.log"):
    """Debian's headless chromium through its chromedriver (nothing downloaded)."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1400,1000",
              "--user-data-dir=" + tempfile.mkdtemp(prefix="kft-chromium-")):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service("/usr/bin/chromedriver", log_output=os.path.join(ART, log_name))
    return webdriver.Chrome(service=service, options=opts)
