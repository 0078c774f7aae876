"""Sending, importing a JSON-lines file, inspecting, paging, receiving by hand, and text that
must stay text."""

import base64
import json
import os
import re
import shutil

from playwright.sync_api import expect

from .helpers import (
    BACKEND,
    UPDATE_DOCS,
    XSS_BODY,
    XSS_VALUE,
    alert,
    counts,
    http,
    ok,
    open_queue,
    row,
    send_api,
    shot,
    state,
    tid,
    wait_until,
)


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
    line = page.locator(f'[data-testid="message-row"][data-message-id="{state["json_id"]}"]')
    expect(line.locator('[data-testid="row-receive-count"]')).to_have_text("0")
    expect(line.locator('[data-testid="row-state"]')).to_have_text("visible")
    expect(line.locator('[data-testid="row-preview"]')).to_have_text('{"order": 1042, "items": ["tea", "cups"], "status": "paid"}')
    expect(line.locator('[data-testid="row-id"]')).to_have_attribute("title", state["json_id"])
    expect(tid(page, "message-row")).to_have_count(3)
    line.click()
    detail = tid(page, "message-detail")
    expect(detail.locator('[data-testid="detail-body"]')).to_contain_text('"order": 1042,\n  "items": [')
    expect(detail.locator('[data-testid="msg-attribute"]')).to_have_count(3)
    expect(detail.locator('[data-testid="detail-receive-count"]')).to_have_text("0")
    for _ in range(2):
        with page.expect_response(lambda r: "/messages?" in r.url):
            tid(page, "messages-reload").click()
        expect(line.locator('[data-testid="row-receive-count"]')).to_have_text("0")
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
    # No table, and no find, export or move control.
    for control in ("messages-table", "find-form", "export-all", "export-selected", "move-all", "move-selected"):
        expect(tid(page, control)).to_have_count(0)
    shot(page, "messages")


def t_paging(page):
    queue = state["page"]
    sent = [send_api(queue, f"page message {n}") for n in range(12)]
    state["page_filled"] = True
    open_queue(page, queue, "messages")
    rows = tid(page, "message-row")
    expect(rows).to_have_count(10)
    expect(tid(page, "messages-prev")).to_be_disabled()
    tid(page, "messages-next").click()
    expect(tid(page, "messages-page")).to_have_text("Page 2")
    expect(rows).to_have_count(2)
    expect(tid(page, "messages-next")).to_be_disabled()
    expect(tid(page, "messages-info")).to_have_text("12 shown · 12 examined · end of the queue")
    ids = set(rows.evaluate_all("rows => rows.map(r => r.dataset.messageId)"))
    tid(page, "messages-prev").click()
    expect(tid(page, "messages-page")).to_have_text("Page 1")
    expect(rows).to_have_count(10)
    first = set(rows.evaluate_all("rows => rows.map(r => r.dataset.messageId)"))
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
        line = page.locator(f'[data-testid="message-row"][data-message-id="{xss_id}"]')
        expect(line.locator('[data-testid="row-preview"]')).to_have_text(XSS_BODY)
        line.click()
        listing = tid(page, "tab-panel")
        card = tid(page, "message-detail")
        expect(card.locator('[data-testid="detail-body"]')).to_have_text(XSS_BODY)
        tid(page, "detail-raw").click()
        expect(card.locator('[data-testid="detail-body"]')).to_have_text(XSS_BODY)
        expect(card.locator('[data-testid="msg-attributes"]')).to_contain_text(XSS_VALUE)
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


def t_import(page):
    queue = ok("POST", "/v1/queues", {"name": f"{state['names']['work']}-import".replace("-work-", "-"), "type": "standard"}, status=201)["result"]["id"]
    state["import"] = queue
    lines = [
        '{"body": "first"}',
        "not json {",
        '{"body": "second", "attributes": {"kind": {"type": "String", "value": "a"}}}',
        '{"body": "too late", "delay_seconds": 901}',
        "",
        "[1, 2]",
    ] + [json.dumps({"body": f"bulk {n}"}) for n in range(10)]
    posts = []
    def watch(r):
        if r.method == "POST" and "/messages" in r.url:
            posts.append(r.url)
    page.on("request", watch)
    try:
        _import_file(page, queue, lines, posts)
    finally:
        page.remove_listener("request", watch)


def _import_file(page, queue, lines, posts):
    open_queue(page, queue, "send")
    # Past the bounds: refused whole, nothing sent.
    tid(page, "import-file").set_input_files({"name": "many.jsonl", "mimeType": "application/x-ndjson", "buffer": b'{"body":"x"}\n' * 10001})
    tid(page, "import-start").click()
    expect(tid(page, "import-summary")).to_contain_text("too_large: many.jsonl has 10,001 lines; the console imports at most 10,000")
    tid(page, "import-file").set_input_files({"name": "big.jsonl", "mimeType": "application/x-ndjson", "buffer": b"x" * (10 * 1024 * 1024 + 1)})
    tid(page, "import-start").click()
    expect(tid(page, "import-summary")).to_contain_text("at most 10 MiB")
    assert not posts, f"nothing sent for a refused file: {posts}"
    # A file with bad lines: each line gets its result, the bad ones stop nothing.
    tid(page, "import-file").set_input_files({"name": "messages.jsonl", "mimeType": "application/x-ndjson", "buffer": "\n".join(lines).encode()})
    tid(page, "import-start").click()
    expect(tid(page, "import-summary")).to_have_text("Imported messages.jsonl: 12 lines sent, 3 lines failed, of 15 lines.", timeout=30_000)
    assert len(posts) == 2 and all(p.endswith("/messages/batch") for p in posts), f"two batches of up to 10: {posts}"
    results = tid(page, "import-result")
    expect(results).to_have_count(15)
    by_line = lambda n: page.locator(f'[data-testid="import-result"][data-line="{n}"]')  # noqa: E731
    expect(by_line(1)).to_have_attribute("data-outcome", "sent")
    expect(by_line(1).locator('[data-testid="import-message-id"]')).to_have_text(re.compile(r"\S{8,}"))
    expect(by_line(2)).to_contain_text("not JSON")
    expect(by_line(6)).to_contain_text("not a JSON object")
    # The API's own failure, code and message, for the line it refused.
    answer = ok("POST", f"/v1/queues/{queue}/messages/batch", {"entries": [{"id": "x", "body": "too late", "delay_seconds": 901}]})
    failure = answer["failed"][0]
    expect(by_line(4)).to_contain_text(f"{failure['code']}: {failure['message']}")
    expect(by_line(4)).to_have_attribute("data-outcome", "failed")
    c = wait_until(lambda: (lambda c: c if c["visible"] == 12 else None)(counts(queue)), "the 12 sent lines in the queue", timeout=30)
    assert c["visible"] == 12, c
    shot(page, "import")
