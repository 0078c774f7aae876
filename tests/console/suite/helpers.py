"""What every browser test of the console shares: the environment run.sh gives, the API from
Python (http, ok), waiting, screenshots, the test runner and the page helpers.

Each test module holds the tests of one topic; console_test.py runs them in order."""
import json
import os
import socket
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid
from datetime import datetime

from playwright.sync_api import expect

URL = os.environ["CONSOLE_URL"].rstrip("/")
BACKEND = os.environ["CONSOLE_BACKEND"]
ADMIN = os.environ["CONSOLE_ADMIN_KEY"]
LIMITED = os.environ["CONSOLE_LIMITED_KEY"]
VIEWER = os.environ.get("CONSOLE_VIEWER_KEY", "")
PROXY_CONTROL = os.environ.get("CONSOLE_PROXY_CONTROL")
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS", "target/console-screenshots")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
UPDATE_DOCS = os.environ.get("SQSGW_UPDATE_DOCS_IMAGES") == "1"
RUN = uuid.uuid4().hex[:8]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
XSS_BODY = '<img src=x onerror="window.__xss=1">'
XSS_VALUE = "<script>window.__xss=2</script>"

expect.set_options(timeout=15_000)


# ------------------------------------------------------------------ the API, from Python

def http(method, path, body=None, key=ADMIN):
    """One API call; answers (status, headers, parsed JSON or None). Never raises on 4xx/5xx."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, method=method)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, response.headers, (json.loads(raw) if raw and response.headers.get_content_type() == "application/json" else raw)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw
        return error.code, error.headers, parsed


def ok(method, path, body=None, key=ADMIN, status=None):
    got, _, answer = http(method, path, body, key)
    if (status is not None and got != status) or got >= 300:
        raise AssertionError(f"{method} {path} answered {got}: {answer!r}")
    return answer


def queue_by_name(name):
    for queue in ok("GET", "/v1/queues?include=counts")["queues"]:
        if queue["name"] == name:
            return queue
    raise AssertionError(f"queue {name} is not listed")


def counts(queue_id):
    return ok("GET", f"/v1/queues/{queue_id}?include=counts")["result"]["counts"]


def send_api(queue_id, body, attributes=None):
    request = {"body": body}
    if attributes:
        request["attributes"] = attributes
    return ok("POST", f"/v1/queues/{queue_id}/messages", request, status=201)["result"]["message_id"]


# The metrics tests wait on the sampler's samples, read from the API, never on a number of
# intervals: a deadline a loaded machine meets (a sampling round ends within its interval, but a
# busy LocalStack answers slowly).
SAMPLER_WAIT = float(os.environ.get("CONSOLE_SAMPLER_WAIT", "120"))


def wait_until(check, what, timeout=20.0, every=0.25):
    """Polls check() until it answers something truthy; raises with what it waited for."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = check()
            if last:
                return last
        except AssertionError as error:
            last = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(every)


def proxy(command):
    with socket.create_connection(("127.0.0.1", int(PROXY_CONTROL)), timeout=10) as conn:
        conn.sendall(command.encode() + b"\n")
        answer = conn.makefile("r").readline().strip()
    if not answer.startswith("ok"):
        raise AssertionError(f"proxy {command}: {answer}")
    return answer


# ------------------------------------------------------------------ the test runner

results = []
state = {}


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, f"{BACKEND}-{name}.png")
    page.screenshot(path=path, full_page=True)
    return path


def run_test(page, name, fn, only=None):
    if only and BACKEND not in only:
        print(f"SKIP {BACKEND} {name}: not on this backend", flush=True)
        return
    start = time.monotonic()
    try:
        fn(page)
    except Exception as error:  # noqa: BLE001 (every failure is reported, then the run goes on)
        results.append((name, False))
        detail = str(error).strip().splitlines()
        print(f"FAIL {BACKEND} {name} ({time.monotonic() - start:.1f}s): {detail[0] if detail else type(error).__name__}", flush=True)
        for line in detail[1:8]:
            print(f"    {line}", flush=True)
        if not isinstance(error, AssertionError):
            traceback.print_exc(limit=3, file=sys.stdout)
        try:
            shot(page, f"FAIL-{name}")
        except Exception:  # noqa: BLE001
            pass
    else:
        results.append((name, True))
        print(f"PASS {BACKEND} {name} ({time.monotonic() - start:.1f}s)", flush=True)


def tid(page, testid):
    return page.locator(f'[data-testid="{testid}"]')


def alert(page):
    return tid(page, "alert")


def goto(page, hash_):
    page.goto(f"{URL}/console/{hash_}")


def open_queue(page, queue_id, tab):
    goto(page, f"#/queues/{queue_id}/{tab}")
    expect(tid(page, f"tab-{tab}")).to_have_attribute("aria-selected", "true")


def sign_in(page, key):
    goto(page, "#/signin")
    tid(page, "signin-key").fill(key)
    tid(page, "signin-submit").click()


def row(page, name):
    return page.locator(f'[data-testid="queue-row"][data-queue-name="{name}"]')


def create_queue_ui(page, name, kind="standard", dead_letter=None, max_receives=None, settings=None):
    tid(page, "new-queue").click()
    tid(page, "create-name").fill(name)
    tid(page, "create-type").select_option(kind)
    for key, value in (settings or {}).items():
        tid(page, f"create-{key}").fill(str(value))
    if dead_letter:
        tid(page, "create-dlq").select_option(label=dead_letter)
        if max_receives is not None:
            tid(page, "create-max-receive-count").fill(str(max_receives))
    tid(page, "create-submit").click()
    expect(tid(page, "status")).to_contain_text(f"Created queue {name}")
    expect(row(page, name)).to_be_visible()
    return wait_until(lambda: queue_by_name(name), f"{name} listed by the API", timeout=10)


def _ts(at):
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def gap_between(samples, interval, start, end):
    """A gap (a sample not taken, or a hole over 1.5 intervals) overlapping [start, end], with a
    sample taken after it; None if there is none yet."""
    for i, sample in enumerate(samples):
        at = _ts(sample["at"])
        missing = all(sample.get(k) is None for k in ("visible", "in_flight", "delayed"))
        hole = i > 0 and at - _ts(samples[i - 1]["at"]) > 1.5 * interval
        begins = _ts(samples[i - 1]["at"]) if i > 0 else at
        later = any(s.get("visible") is not None for s in samples[i + 1:])
        if (missing or hole) and later and begins <= end and at >= start:
            return sample["at"], "not taken" if missing else f"a hole of {at - begins:.0f}s"
    return None
