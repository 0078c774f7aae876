#!/usr/bin/env python3
"""Drives the sqs-gateway web console (/console) in headless Chromium against one running gateway.

Why: the console is a browser client of the basaltic API; only a real browser shows that it signs
in, sends, inspects, receives, charts, purges and redrives through that API, that it never runs
a message's text as HTML, and that it works with the keyboard and on a narrow screen. run.sh starts
the gateway (embedded or sqs over LocalStack) and runs this once per backend with:

  CONSOLE_URL            the gateway, e.g. http://127.0.0.1:40123
  CONSOLE_BACKEND        embedded | sqs
  CONSOLE_ADMIN_KEY      a basaltic key with '*=*'
  CONSOLE_LIMITED_KEY    a key with everything but inspect
  CONSOLE_PROXY_CONTROL  (sqs) the control port of proxy.py in front of LocalStack
  CONSOLE_SCREENSHOTS    where screenshots go (target/console-screenshots)
  CHROMIUM               the browser (/usr/bin/chromium)

Each test prints one PASS or FAIL line; the script exits non-zero if any failed.
"""
import base64
import json
import os
import re
import shutil
import socket
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid
from datetime import datetime

from playwright.sync_api import expect, sync_playwright

URL = os.environ["CONSOLE_URL"].rstrip("/")
BACKEND = os.environ["CONSOLE_BACKEND"]
ADMIN = os.environ["CONSOLE_ADMIN_KEY"]
LIMITED = os.environ["CONSOLE_LIMITED_KEY"]
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


# ------------------------------------------------------------------ the tests

def t_headers(page):
    for path in ["/console", "/console/", "/console/app.js", "/console/app.css"]:
        status, headers, _ = http("GET", path, key=None)
        assert status == 200, f"{path}: {status}"
        assert headers.get("Content-Security-Policy") == CSP, f"{path}: CSP {headers.get('Content-Security-Policy')!r}"
        assert "no-store" in (headers.get("Cache-Control") or ""), f"{path}: Cache-Control {headers.get('Cache-Control')!r}"
    _, headers, _ = http("GET", "/console/app.js", key=None)
    assert "javascript" in headers.get("Content-Type", ""), headers.get("Content-Type")
    _, headers, _ = http("GET", "/console/", key=None)
    assert headers.get("Content-Type", "").startswith("text/html"), headers.get("Content-Type")


def t_page_logic(page):
    """The page's own rules, on known input: gaps and line breaks in a chart, and Number values."""
    goto(page, "")
    expect(tid(page, "signin-form")).to_be_visible()
    # The rules live in the console's modules, loaded as the page loads them (same origin, so
    # the CSP allows it; the browser keeps one instance of each module).
    got = page.evaluate("""async () => {
      const { findGaps, chart } = await import('/console/js/charts.js');
      const { validNumber } = await import('/console/js/rules.js');
      const t0 = Date.UTC(2026, 0, 1);
      const at = (s) => new Date(t0 + s * 1000).toISOString();
      const taken = (s) => ({ at: at(s), visible: s, in_flight: 0, delayed: 0 });
      const missed = (s) => ({ at: at(s), visible: null, in_flight: null, delayed: null });
      // 2 was not taken, 5 to 7 are missing (a hole of 4 intervals), 9 holds a null value.
      const samples = [taken(0), taken(1), missed(2), taken(3), taken(4), taken(8), { ...taken(9), visible: null }, taken(10)];
      const gaps = findGaps(samples, 1000);
      const figure = chart('visible', 'Visible', samples, 1000, gaps);
      return {
        gaps: gaps.map(([a, b]) => [(a - t0) / 1000, (b - t0) / 1000]),
        rects: figure.querySelectorAll('[data-gap]').length,
        lines: [...figure.querySelectorAll('polyline')].map((l) => l.getAttribute('points').split(' ').length),
        dots: figure.querySelectorAll('circle').length,
        numbers: ['42.5', '-1e5', '0', '1e126', '.5', '5.', '12abc', '', '1e127', '1.5.5', '0x10', 'NaN'].map(validNumber),
      };
    }""")
    assert got["gaps"] == [[1, 3], [4, 8]], got["gaps"]
    assert got["rects"] == 2, got
    assert got["lines"] == [2, 2] and got["dots"] == 2, f"segments 0-1, 3-4, then 8 and 10 alone: {got}"
    assert got["numbers"] == [True] * 6 + [False] * 6, got["numbers"]


def t_signin_refused(page):
    wrong = "sqsgw_" + uuid.uuid4().hex
    status, _, answer = http("GET", "/v1/key", key=wrong)
    assert status == 401, f"GET /v1/key with a wrong key: {status} {answer!r}"
    goto(page, "")
    expect(tid(page, "signin-form")).to_be_visible()
    shot(page, "signin")
    tid(page, "signin-key").fill(wrong)
    tid(page, "signin-submit").click()
    expect(alert(page)).to_have_text(f"{answer['error']['code']}: {answer['error']['message']}")
    assert answer["error"]["code"] == "unauthenticated", answer
    expect(tid(page, "signin-form")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0


def t_signin(page):
    # Where a newcomer finds a key, and that the banner's consumer key is not one.
    goto(page, "")
    expect(tid(page, "signin-where")).to_contain_text("sqs-gateway-data/basaltic-key")
    expect(tid(page, "signin-where")).to_contain_text("ezgh")
    tid(page, "signin-key").fill(ADMIN)
    tid(page, "signin-submit").click()
    expect(tid(page, "queue-table")).to_be_visible()
    expect(tid(page, "who-name")).to_have_text("admin")
    assert page.evaluate("Object.values(sessionStorage)") == [ADMIN], "the key is in sessionStorage"
    assert page.evaluate("localStorage.length") == 0, "nothing in localStorage"
    assert page.evaluate("document.cookie") == "", "no cookie"
    assert ADMIN not in page.url, "the key is not in the URL"
    assert page.url.endswith("#/queues"), page.url


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


def t_create_queues(page):
    names = {k: f"it-console-{RUN}-{k}" for k in ["dlq", "src", "work", "page", "fifo"]}
    state["names"] = names
    goto(page, "#/queues")
    dlq = create_queue_ui(page, names["dlq"])
    src = create_queue_ui(page, names["src"], dead_letter=names["dlq"], max_receives=1)
    work = create_queue_ui(page, names["work"], settings={"visibility_timeout_seconds": 45, "retention_seconds": 7200})
    state.update(dlq=dlq["id"], src=src["id"], work=work["id"])
    assert src["settings"]["dead_letter_queue"] == {"queue_id": dlq["id"], "max_receive_count": 1}, src["settings"]
    assert work["settings"]["visibility_timeout_seconds"] == 45 and work["settings"]["retention_seconds"] == 7200, work["settings"]
    # The list names the dead-letter queue and its depth, from the same list.
    expect(row(page, names["src"]).locator('[data-col="dlq"]')).to_contain_text(names["dlq"])
    expect(row(page, names["src"]).locator('[data-col="dlq-depth"]')).to_have_text("0")
    expect(row(page, names["dlq"]).locator('[data-col="name"]')).to_contain_text("DLQ")
    expect(row(page, names["work"]).locator('[data-col="visible"]')).to_have_text("0")
    # The paging queue and a FIFO queue through the API, to save time.
    state["page"] = ok("POST", "/v1/queues", {"name": names["page"], "type": "standard"}, status=201)["result"]["id"]
    state["fifo"] = ok("POST", "/v1/queues", {"name": names["fifo"], "type": "fifo", "settings": {"content_based_deduplication": True}}, status=201)["result"]["id"]
    # One request for the whole list, never one per queue.
    with page.expect_request(lambda r: "/v1/queues" in r.url) as first:
        tid(page, "refresh-queues").click()
    assert first.value.url.endswith("/v1/queues?include=counts"), first.value.url
    expect(row(page, names["page"])).to_be_visible()
    shot(page, "queues")


def t_send_form(page):
    open_queue(page, state["work"], "send")
    body = '{"order": 1042, "items": ["tea", "cups"], "status": "paid"}'
    tid(page, "send-body").fill(body)
    blob = base64.b64encode(b"\x00\x01hello").decode()
    for i, (name, kind, value) in enumerate([("event", "String", "order.paid"), ("amount", "Number", "42.5"), ("blob", "Binary", blob)]):
        tid(page, "add-attribute").click()
        attribute = tid(page, "attr-row").nth(i)
        attribute.locator('[data-testid="attr-name"]').fill(name)
        attribute.locator('[data-testid="attr-type"]').select_option(kind)
        attribute.locator('[data-testid="attr-value"]').fill(value)
    # What the API would refuse is refused before any request.
    posts = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" else None)
    tid(page, "add-attribute").click()
    extra = tid(page, "attr-row").nth(3)
    for name, kind, value, words in [("AWS.trace", "String", "x", "reserved"), ("sqsgw.x", "String", "x", "reserved"),
                                     ("n", "Number", "12abc", "not a number"), ("b", "Binary", "abc", "base64"),
                                     ("event", "String", "x", "twice"), ("s", "String", "", "1 to 1024 bytes")]:
        extra.locator('[data-testid="attr-name"]').fill(name)
        extra.locator('[data-testid="attr-type"]').select_option(kind)
        extra.locator('[data-testid="attr-value"]').fill(value)
        tid(page, "send-submit").click()
        expect(alert(page)).to_contain_text(words)
    assert not posts, f"no request for a refused form ({len(posts)} sent)"
    extra.locator('[data-testid="attr-remove"]').click()
    expect(tid(page, "attr-row")).to_have_count(3)
    tid(page, "send-submit").click()
    expect(tid(page, "sent-message-id")).to_have_text(re.compile(r"\S{8,}"))
    state["json_id"] = tid(page, "sent-message-id").text_content()
    expect(alert(page)).to_be_empty()
    shot(page, "send")
    # Two more, through the API, for a queue page with a few messages.
    send_api(state["work"], '{"order": 1043, "status": "shipped"}', {"event": {"type": "String", "value": "order.shipped"}})
    send_api(state["work"], "plain text body, not JSON")


def t_send_form_by_type(page):
    open_queue(page, state["fifo"], "send")
    expect(tid(page, "send-group-id")).to_be_visible()
    expect(tid(page, "send-dedup-id")).to_be_visible()
    expect(tid(page, "send-delay")).to_have_count(0)
    tid(page, "send-body").fill("fifo body")
    tid(page, "send-group-id").fill("g1")
    tid(page, "send-submit").click()
    expect(tid(page, "sent-message-id")).not_to_be_empty()
    open_queue(page, state["work"], "send")
    expect(tid(page, "send-delay")).to_be_visible()
    expect(tid(page, "send-group-id")).to_have_count(0)


def t_inspect(page):
    work = state["work"]
    open_queue(page, work, "messages")
    expect(tid(page, "inspect-note")).to_contain_text("Inspecting is not processing: messages stay where they are, receive counts do not change")
    card = page.locator(f'[data-testid="message"][data-message-id="{state["json_id"]}"]')
    expect(card.locator('[data-testid="msg-receive-count"]')).to_have_text("0")
    expect(card.locator('[data-testid="msg-state"]')).to_have_text("visible")
    expect(card.locator('[data-testid="msg-body"]')).to_contain_text('"order": 1042,\n  "items": [')
    expect(card.locator('[data-testid="msg-attribute"]')).to_have_count(3)
    expect(tid(page, "message")).to_have_count(3)
    for _ in range(2):
        with page.expect_response(lambda r: "/messages?" in r.url):
            tid(page, "messages-reload").click()
        expect(card.locator('[data-testid="msg-receive-count"]')).to_have_text("0")
    answer = ok("GET", f"/v1/queues/{work}/messages?max_messages=10")
    mine = [m for m in answer["messages"] if m["message_id"] == state["json_id"]]
    assert mine and mine[0]["receive_count"] == 0, f"receive_count through the API: {mine}"
    assert mine[0]["state"] == "visible", mine[0]
    c = counts(work)
    assert c["visible"] == 3 and c["in_flight"] == 0, c
    shot(page, "messages")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1200, "height": 900})
        shutil.copyfile(shot(page, "messages"), "docs/images/console-queue.png")
        page.set_viewport_size({"width": 1280, "height": 900})


def t_inspect_unsupported(page):
    status, _, answer = http("GET", f"/v1/queues/{state['work']}/messages?max_messages=10")
    assert status == 501 and answer["error"]["code"] == "unsupported", f"{status} {answer!r}"
    open_queue(page, state["work"], "messages")
    expected = f"unsupported: {answer['error']['message']}"
    expect(alert(page)).to_have_text(expected)
    expect(tid(page, "messages-unsupported")).to_contain_text(answer["error"]["message"])
    expect(tid(page, "messages-unsupported")).to_contain_text("Receive tab")
    shot(page, "messages")


def t_paging(page):
    queue = state["page"]
    sent = [send_api(queue, f"page message {n}") for n in range(12)]
    state["page_filled"] = True
    open_queue(page, queue, "messages")
    expect(tid(page, "message")).to_have_count(10)
    expect(tid(page, "messages-prev")).to_be_disabled()
    tid(page, "messages-next").click()
    expect(tid(page, "messages-page")).to_have_text("Page 2")
    expect(tid(page, "message")).to_have_count(2)
    expect(tid(page, "messages-next")).to_be_disabled()
    ids = set(tid(page, "message").evaluate_all("cards => cards.map(c => c.dataset.messageId)"))
    tid(page, "messages-prev").click()
    expect(tid(page, "messages-page")).to_have_text("Page 1")
    expect(tid(page, "message")).to_have_count(10)
    first = set(tid(page, "message").evaluate_all("cards => cards.map(c => c.dataset.messageId)"))
    assert first | ids == set(sent) and not first & ids, "the two pages hold the 12 messages once each"


def t_xss(page):
    work = state["work"]
    open_queue(page, work, "send")
    tid(page, "send-body").fill(XSS_BODY)
    tid(page, "add-attribute").click()
    tid(page, "attr-name").fill("note")
    tid(page, "attr-value").fill(XSS_VALUE)
    tid(page, "send-submit").click()
    expect(tid(page, "sent-message-id")).not_to_be_empty()
    xss_id = tid(page, "sent-message-id").text_content()
    state["xss_id"] = xss_id
    if BACKEND == "embedded":
        open_queue(page, work, "messages")
        listing = tid(page, "messages-list")
    else:  # no inspect: look at it with a receive released at once
        open_queue(page, work, "receive")
        tid(page, "recv-max").fill("10")
        tid(page, "recv-wait").fill("1")
        tid(page, "recv-visibility").fill("0")
        tid(page, "recv-submit").click()
        listing = tid(page, "received-list")
    card = listing.locator(f'[data-testid="message"][data-message-id="{xss_id}"]')
    expect(card.locator('[data-testid="msg-body"]')).to_have_text(XSS_BODY)
    expect(card.locator('[data-testid="msg-attributes"]')).to_contain_text(XSS_VALUE)
    # No element was made from the message's text (so no handler can fire), and none ran.
    assert listing.locator("img, script").count() == 0, "no element made from the message"
    assert page.evaluate("window.__xss") is None, "window.__xss stays undefined"


def t_receive(page):
    work = state["work"]
    c = wait_until(lambda: (lambda c: c if c["visible"] == 4 and c["in_flight"] == 0 else None)(counts(work)), "4 visible messages")
    open_queue(page, work, "receive")
    expect(tid(page, "receive-note")).to_contain_text("debugging by hand")
    tid(page, "recv-max").fill("10")
    tid(page, "recv-wait").fill("1")
    tid(page, "recv-visibility").fill("60")
    with page.expect_response(lambda r: r.url.endswith("/messages/receive")) as response:
        tid(page, "recv-submit").click()
    handles = [m["receipt_handle"] for m in response.value.json()["messages"]]
    assert len(handles) == 4, f"received {len(handles)} of 4"
    cards = tid(page, "received-list").locator('[data-testid="message"]')
    expect(cards).to_have_count(4)
    # Receipt handles: never shown whole, nowhere in the DOM or storage.
    html = page.content()
    storage = page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    for handle in handles:
        assert handle not in html and handle[8:24] not in html, "a receipt handle is in the page"
        assert handle not in storage, "a receipt handle is in storage"
    for text in tid(page, "msg-receipt").all_text_contents():
        assert len(text) <= 9 and text.endswith("…"), f"receipt shown as {text!r}"
    wait_until(lambda: counts(work)["in_flight"] == 4, "4 in flight")
    expect(tid(page, "count-in-flight")).to_have_text("4")
    # Delete the first: the queue's counts drop.
    cards.nth(0).locator('[data-testid="msg-delete"]').click()
    expect(cards.nth(0).locator('[data-testid="msg-outcome"]')).to_have_text("Deleted.")
    wait_until(lambda: (lambda c: c["in_flight"] + c["visible"] == 3)(counts(work)), "3 messages left after the delete")
    expect(tid(page, "count-in-flight")).to_have_text("3")
    # Extend the second.
    cards.nth(1).locator('[data-testid="extend-seconds"]').fill("120")
    cards.nth(1).locator('[data-testid="msg-extend"]').click()
    expect(cards.nth(1).locator('[data-testid="msg-outcome"]')).to_have_text("Lease extended: visible again in 120 s.")
    # Release the third: it is visible again.
    cards.nth(2).locator('[data-testid="msg-release"]').click()
    expect(cards.nth(2).locator('[data-testid="msg-outcome"]')).to_have_text("Released: visible again now.")
    expect(cards.nth(2).locator('[data-testid="msg-extend"]')).to_be_disabled()
    wait_until(lambda: counts(work)["visible"] == 1, "the released message visible")
    expect(alert(page)).to_be_empty()
    if BACKEND == "embedded":
        extended = [m for m in ok("GET", f"/v1/queues/{work}/messages")["messages"] if m["state"] == "in_flight"]
        assert extended, "messages still in flight"
    shot(page, "receive")


def t_metrics(page):
    queue = state["page"]
    # The paging test (embedded only) sent them; else, or when it did not run, they are sent here.
    if not state.get("page_filled"):
        for n in range(12):
            send_api(queue, f"page message {n}")
    def sampled():
        samples = [s for s in ok("GET", f"/v1/queues/{queue}/metrics")["samples"] if s["visible"] is not None]
        return len(samples) >= 3 and samples[-1]["visible"] == 12
    wait_until(sampled, "three samples, the last with the 12 messages", timeout=SAMPLER_WAIT)
    with page.expect_request(lambda r: "/metrics" in r.url) as first:
        open_queue(page, queue, "metrics")
    assert "since=" in first.value.url, first.value.url
    charts = tid(page, "metrics-charts")
    expect(charts.locator("svg")).to_have_count(6)
    # A value is drawn as a line, or as a dot where its neighbours are gaps (a sampler that cannot
    # count every queue within the interval takes them in turn).
    for key in ["visible", "in_flight", "sends", "receives", "repeated_receives"] + (["oldest_message_age_seconds"] if BACKEND == "embedded" else []):
        expect(tid(page, f"chart-svg-{key}").locator("polyline, path, circle")).not_to_have_count(0)
    expect(tid(page, "metrics-caption")).to_contain_text("missing samples are gaps, not empty queues")
    expect(tid(page, "chart-latest-visible")).to_have_text("12")
    # It refreshes with since = the last sample's time (no full reload).
    with page.expect_request(lambda r: "/metrics?since=" in r.url, timeout=30_000) as later:
        pass
    assert "since=" in later.value.url
    shot(page, "metrics")


def t_subscriptions(page):
    queue = queue_by_name("push-demo")["id"]
    send_api(queue, "for the push subscription")
    wait_until(lambda: ok("GET", f"/v1/queues/{queue}/subscriptions")["subscriptions"][0]["log"], "a push attempt")
    open_queue(page, queue, "metrics")
    card = tid(page, "subscription")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("demo-hook")
    # A config subscription's path stays in the config: the API shows scheme, host and port.
    expect(card).to_contain_text("http://127.0.0.1:9/…")
    expect(tid(page, "subscription-state")).to_have_text(re.compile("active|backing off"))
    expect(tid(page, "subscription-attempt").first).to_contain_text("unreachable")
    expect(tid(page, "subscription-summary")).to_contain_text("unreachable")
    assert "whsec_" not in page.content(), "no secret on the page"
    shot(page, "subscriptions")


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


def t_metrics_gap(page):
    queue = state["page"]
    interval = ok("GET", f"/v1/queues/{queue}/metrics")["interval_seconds"]
    open_queue(page, queue, "metrics")
    paused = time.time()
    proxy("pause")
    try:
        time.sleep(3.5 * interval)  # about three sampling intervals with LocalStack out of reach
    finally:
        proxy("resume")
    resumed = time.time()
    at, kind = wait_until(lambda: gap_between(ok("GET", f"/v1/queues/{queue}/metrics")["samples"], interval, paused, resumed),
                          "a gap while the proxy was paused, then a sample", timeout=SAMPLER_WAIT)
    print(f"    the API's samples: {kind} at {at}", flush=True)
    with page.expect_response(lambda r: "/metrics?since=" in r.url):
        tid(page, "metrics-reload").click()
    expect(tid(page, "metrics-charts").locator("svg")).to_have_count(6)
    gaps = tid(page, "chart-svg-visible").locator("[data-gap]")
    expect(gaps).not_to_have_count(0)
    spans = gaps.evaluate_all("rects => rects.map(r => [Date.parse(r.dataset.from) / 1000, Date.parse(r.dataset.to) / 1000])")
    assert any(a <= resumed + interval and b >= paused - interval for a, b in spans), \
        f"no gap drawn over the pause {paused:.0f}-{resumed:.0f}: {spans}"
    expect(tid(page, "chart-svg-visible").locator("polyline, circle")).not_to_have_count(0)
    shot(page, "metrics-gap")


def t_dead_letter_and_redrive(page):
    src, dlq = state["src"], state["dlq"]
    send_api(src, "to be dead-lettered")
    open_queue(page, src, "receive")
    expect(tid(page, "tab-redrive")).to_have_count(0)
    tid(page, "recv-wait").fill("1")
    tid(page, "recv-visibility").fill("0")
    tid(page, "recv-submit").click()
    expect(tid(page, "received-list").locator('[data-testid="msg-receive-count"]')).to_have_text("1")
    for _ in range(4):  # received again past max_receive_count 1: it moves to the dead-letter queue
        if counts(dlq)["visible"] == 1:
            break
        tid(page, "recv-submit").click()
        expect(tid(page, "recv-submit")).to_have_text("Receive")
    wait_until(lambda: counts(dlq)["visible"] == 1, "the message in the dead-letter queue")
    wait_until(lambda: counts(src)["visible"] + counts(src)["in_flight"] == 0, "the source queue empty")
    goto(page, "#/queues")
    tid(page, "refresh-queues").click()
    expect(row(page, state["names"]["src"]).locator('[data-col="dlq-depth"]')).to_have_text("1")
    open_queue(page, dlq, "redrive")
    expect(tid(page, "tab-panel")).to_contain_text(state["names"]["src"])
    tid(page, "redrive-rate").fill("10")
    with page.expect_request(lambda r: r.url.endswith("/redrive") and r.method == "POST") as started:
        tid(page, "redrive-start").click()
    assert json.loads(started.value.post_data) == {"max_messages_per_second": 10}, started.value.post_data
    expect(tid(page, "redrive-status")).to_have_text("completed", timeout=45_000)
    expect(tid(page, "status")).to_have_text(re.compile(r"^Redrive completed: 1 moved\.$"))
    expect(tid(page, "redrive-moved")).to_contain_text("1")
    expect(tid(page, "redrive-task")).to_contain_text("10 messages a second")
    wait_until(lambda: counts(src)["visible"] == 1, "the message back in the source queue")
    assert counts(dlq)["visible"] == 0, counts(dlq)
    expect(tid(page, "count-visible")).to_have_text("0")
    shot(page, "redrive")
    goto(page, "#/queues")
    expect(row(page, state["names"]["src"]).locator('[data-col="visible"]')).to_have_text("1")
    expect(row(page, state["names"]["src"]).locator('[data-col="dlq-depth"]')).to_have_text("0")


def t_purge(page):
    work = state["work"]
    assert counts(work)["visible"] + counts(work)["in_flight"] > 0, "something to purge"
    open_queue(page, work, "settings")
    expect(tid(page, "settings-list")).to_contain_text("45 s")
    shot(page, "settings")
    tid(page, "purge").click()
    dialog = tid(page, "confirm-dialog")
    expect(dialog).to_be_visible()
    expect(tid(page, "confirm-button")).to_be_disabled()
    tid(page, "confirm-input").fill(state["names"]["work"] + "x")
    expect(tid(page, "confirm-button")).to_be_disabled()
    tid(page, "confirm-input").fill(state["names"]["work"])
    expect(tid(page, "confirm-button")).to_be_enabled()
    shot(page, "confirm")
    tid(page, "confirm-button").click()
    expect(dialog).to_have_count(0)
    expect(tid(page, "status")).to_contain_text("Purged")
    wait_until(lambda: (lambda c: c["visible"] == 0 and c["in_flight"] == 0 and c["delayed"] == 0)(counts(work)), "an empty queue", timeout=30)
    expect(tid(page, "count-visible")).to_have_text("0")
    expect(tid(page, "count-in-flight")).to_have_text("0")


def t_delete_queue(page):
    fifo = state["fifo"]
    open_queue(page, fifo, "settings")
    tid(page, "delete-queue").click()
    expect(tid(page, "confirm-button")).to_be_disabled()
    tid(page, "confirm-input").fill(state["names"]["fifo"])
    tid(page, "confirm-button").click()
    expect(tid(page, "queue-table")).to_be_visible()
    expect(tid(page, "status")).to_have_text(f"Deleted queue {state['names']['fifo']}.")
    expect(row(page, state["names"]["fifo"])).to_have_count(0)
    status, _, answer = http("GET", f"/v1/queues/{fifo}")
    assert status == 404, f"{status} {answer!r}"


def t_keyboard(page):
    open_queue(page, state["work"], "send")
    page.locator("body").click(position={"x": 2, "y": 2})
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.getAttribute('role')") == "tab":
            break
    else:
        raise AssertionError("Tab never reached the tabs")
    assert page.evaluate("document.activeElement.dataset.testid") == "tab-send", "Tab lands on the selected tab"
    page.keyboard.press("ArrowRight")
    expect(tid(page, "tab-messages")).to_have_attribute("aria-selected", "true")
    expect(tid(page, "tab-messages")).to_be_focused()
    expect(tid(page, "tab-send")).to_have_attribute("aria-selected", "false")
    assert page.url.endswith(f"#/queues/{state['work']}/messages"), page.url
    page.keyboard.press("ArrowLeft")
    expect(tid(page, "tab-send")).to_have_attribute("aria-selected", "true")
    expect(tid(page, "tab-send")).to_be_focused()
    page.keyboard.press("End")
    expect(tid(page, "tab-settings")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowRight")  # wraps around
    expect(tid(page, "tab-send")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(tid(page, "tab-settings")).to_be_focused()
    # The confirmation is reachable and closable from the keyboard, and focus comes back.
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.dataset.testid") == "purge":
            break
    else:
        raise AssertionError("Tab never reached Purge")
    page.keyboard.press("Enter")
    expect(tid(page, "confirm-input")).to_be_focused()
    page.keyboard.press("Escape")
    expect(tid(page, "confirm-dialog")).to_have_count(0)
    expect(tid(page, "purge")).to_be_focused()
    # Focus is visible.
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), f"focus outline {outline!r}"


def t_narrow(page):
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        open_queue(page, state["src"], "send")
        tid(page, "add-attribute").click()
        shot(page, "narrow-queue")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 391, f"the queue page is {width}px wide at 390"
        goto(page, "#/queues")
        expect(row(page, state["names"]["src"])).to_be_visible()
        shot(page, "narrow-queues")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 391, f"the queue list is {width}px wide at 390"
        wrap = page.locator(".table-wrap").first
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth"), "the table scrolls sideways"
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def t_limited_key(page):
    goto(page, "#/queues")
    tid(page, "sign-out").click()
    expect(tid(page, "signin-form")).to_be_visible()
    expect(tid(page, "status")).to_contain_text("Signed out")
    assert page.evaluate("sessionStorage.length") == 0, "sign out clears the key"
    tid(page, "signin-key").fill(LIMITED)
    tid(page, "signin-submit").click()
    expect(tid(page, "queue-table")).to_be_visible()
    expect(tid(page, "who-name")).to_have_text("no-inspect")
    expect(tid(page, "new-queue")).to_be_enabled()
    open_queue(page, state["src"], "send")
    messages = tid(page, "tab-messages")
    expect(messages).to_be_disabled()
    expect(messages).to_have_attribute("aria-disabled", "true")
    expect(tid(page, "tab-reason-messages")).to_contain_text("inspect")
    expect(tid(page, "tab-receive")).to_be_enabled()
    goto(page, f"#/queues/{state['src']}/messages")
    expect(tid(page, "tab-unavailable")).to_contain_text("inspect")
    shot(page, "limited")


def t_expired_key(page):
    goto(page, "#/queues")
    page.evaluate("sessionStorage.setItem('sqsgw.console.key', 'sqsgw_revoked_key')")
    page.reload()
    expect(tid(page, "signin-form")).to_be_visible()
    expect(alert(page)).to_contain_text("unauthenticated: ")
    assert page.evaluate("sessionStorage.length") == 0, "a refused key is forgotten"


def main():
    os.makedirs(SHOTS, exist_ok=True)
    for old in os.listdir(SHOTS):  # this backend's screenshots are this run's only
        if old.startswith(f"{BACKEND}-") and old.endswith(".png"):
            os.remove(os.path.join(SHOTS, old))
    console_errors = []
    page_errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("console", lambda m: console_errors.append(m.text) if m.type in ("error", "warning") or ADMIN in m.text or LIMITED in m.text else None)
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        tests = [
            ("headers", t_headers, None),
            ("page_logic", t_page_logic, None),
            ("signin_refused", t_signin_refused, None),
            ("signin", t_signin, None),
            ("create_queues", t_create_queues, None),
            ("send_form", t_send_form, None),
            ("send_form_by_type", t_send_form_by_type, None),
            ("inspect", t_inspect, ["embedded"]),
            ("inspect_unsupported", t_inspect_unsupported, ["sqs"]),
            ("paging", t_paging, ["embedded"]),
            ("xss", t_xss, None),
            ("receive", t_receive, None),
            ("metrics", t_metrics, None),
            ("metrics_gap", t_metrics_gap, ["sqs"]),
            ("subscriptions", t_subscriptions, ["embedded"]),
            ("dead_letter_and_redrive", t_dead_letter_and_redrive, None),
            ("purge", t_purge, None),
            ("delete_queue", t_delete_queue, None),
            ("keyboard", t_keyboard, None),
            ("narrow", t_narrow, None),
            ("limited_key", t_limited_key, None),
            ("expired_key", t_expired_key, None),
        ]
        # CONSOLE_ONLY=signin,create_queues,metrics runs those alone (with what they need first).
        chosen = [n for n in os.environ.get("CONSOLE_ONLY", "").split(",") if n]
        for name, fn, only in tests:
            if not chosen or name in chosen:
                run_test(page, name, fn, only)

        def t_no_page_errors(_page):
            # A CSP violation or a script error shows here; an unsupported inspect's 501 is the only
            # failed request the console logs on its own (the browser reports failed fetches).
            bad = [e for e in console_errors if not re.search(r"status of (401|404|501)", e)]
            assert not page_errors, f"script errors: {page_errors[:3]}"
            assert not bad, f"console errors: {bad[:3]}"
        run_test(page, "no_page_errors", t_no_page_errors)
        browser.close()
    # Leave nothing behind in LocalStack (best effort).
    for key in ("work", "src", "dlq", "page", "fifo"):
        if key in state:
            http("DELETE", f"/v1/queues/{state[key]}")
    passed = sum(1 for _, good in results if good)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
