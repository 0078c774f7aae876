"""Finding messages with the server's filters, the detail pane, exporting (selected rows and every
match) and moving messages to another queue; the embedded backend (the sqs one answers 501)."""

import json
import os
import shutil
import urllib.parse

from playwright.sync_api import expect

from .access import tab_to
from .helpers import (
    RUN,
    UPDATE_DOCS,
    alert,
    goto,
    http,
    ok,
    open_queue,
    shot,
    state,
    tid,
    wait_until,
)

EXPORT_OFF = "it-console-export-off"  # run.sh lists it in basaltic.export_disabled


def body_of(n):
    return {"n": n, "total": n * 10, "note": "URGENT" if n % 5 == 0 else "routine", "order": {"lines": [{"sku": f"sku-{n % 3}"}]}}


def matching(queue, filters="", key=None):
    """Every message the API's filters keep, following `next` to the queue's end."""
    found, after = [], None
    while True:
        query = f"?max_messages=10&scan=10000{filters}" + (f"&after={after}" if after else "")
        answer = ok("GET", f"/v1/queues/{queue}/messages{query}")
        found += answer["messages"]
        after = answer["next"]
        if not after:
            return found


def q(**filters):
    return "".join(f"&{k}={urllib.parse.quote(v)}" for k, v in filters.items())


def rows_shown(page):
    return tid(page, "message-row").evaluate_all("rows => rows.map(r => r.dataset.messageId)")


def find(page, **filters):
    for name in ("contains", "message_id", "attribute", "where"):
        tid(page, f"find-{name}").fill(filters.get(name, ""))
    with page.expect_response(lambda r: "/messages?" in r.url):
        tid(page, "find-apply").click()


def read_download(download):
    with open(download.path(), encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().splitlines() if line.strip()]


def t_find(page):
    queue = ok("POST", "/v1/queues", {"name": f"it-console-{RUN}-find", "type": "standard"}, status=201)["result"]["id"]
    state["find"] = queue
    entries = [{"id": f"m{n}", "body": json.dumps(body_of(n)),
                "attributes": {"kind": {"type": "String", "value": "even" if n % 2 == 0 else "odd"}}} for n in range(25)]
    for i in range(0, 25, 10):
        answer = ok("POST", f"/v1/queues/{queue}/messages/batch", {"entries": entries[i:i + 10]})
        assert not answer.get("failed"), answer
    open_queue(page, queue, "messages")
    expect(tid(page, "message-row")).to_have_count(10)
    # By text (any case).
    find(page, contains="urgent")
    expected = [m["message_id"] for m in matching(queue, q(contains="urgent"))]
    assert len(expected) == 5, expected
    expect(tid(page, "message-row")).to_have_count(5)
    assert rows_shown(page) == expected, "the table holds the API's matches, in order"
    expect(tid(page, "messages-info")).to_have_text("5 matching · 25 examined · end of the queue")
    # By attribute: two pages, the examined count summed over them.
    find(page, attribute="kind=even")
    expected = [m["message_id"] for m in matching(queue, q(attribute="kind=even"))]
    assert len(expected) == 13, expected
    expect(tid(page, "message-row")).to_have_count(10)
    first = rows_shown(page)
    tid(page, "messages-next").click()
    expect(tid(page, "messages-page")).to_have_text("Page 2")
    expect(tid(page, "message-row")).to_have_count(3)
    assert first + rows_shown(page) == expected, "the two pages hold the API's matches"
    expect(tid(page, "messages-info")).to_have_text("13 matching · 25 examined · end of the queue")
    tid(page, "messages-prev").click()
    expect(tid(page, "messages-page")).to_have_text("Page 1")
    assert rows_shown(page) == first
    # By expression, and all the filters together.
    find(page, where=".total > 200")
    expected = [m["message_id"] for m in matching(queue, q(where=".total > 200"))]
    assert len(expected) == 4, expected
    expect(tid(page, "message-row")).to_have_count(4)
    assert rows_shown(page) == expected
    find(page, where='.order.lines[0]["sku"] == "sku-1"', attribute="kind=odd", contains="routine")
    expected = [m["message_id"] for m in matching(queue, q(where='.order.lines[0]["sku"] == "sku-1"', attribute="kind=odd", contains="routine"))]
    expect(tid(page, "message-row")).to_have_count(len(expected))
    assert rows_shown(page) == expected
    # A bad expression: the API's refusal, in its words.
    status, _, answer = http("GET", f"/v1/queues/{queue}/messages?max_messages=10{q(where='.total >')}")
    assert status == 400 and answer["error"]["code"] == "invalid_argument", f"{status} {answer!r}"
    assert answer["error"]["message"].startswith("where"), answer
    find(page, where=".total >")
    expect(alert(page)).to_have_text(f"invalid_argument: {answer['error']['message']}")
    # The detail pane: pretty and raw.
    find(page, contains="urgent")
    expect(alert(page)).to_be_empty()
    target = matching(queue, q(contains="urgent"))[1]
    line = page.locator(f'[data-testid="message-row"][data-message-id="{target["message_id"]}"]')
    expect(line.locator('[data-testid="row-size"]')).to_have_attribute("title", f"{len(target['body'].encode())} bytes")
    line.click()
    detail = tid(page, "message-detail")
    expect(detail).to_be_visible()
    expect(tid(page, "detail-title")).to_be_focused()
    expect(tid(page, "detail-id")).to_have_text(target["message_id"])
    expect(tid(page, "detail-position")).to_have_text(target["position"])
    expect(tid(page, "detail-body")).to_have_text(json.dumps(json.loads(target["body"]), indent=2))
    expect(tid(page, "detail-pretty")).to_have_attribute("aria-pressed", "true")
    expect(detail.locator('[data-testid="msg-attribute"]')).to_have_count(1)
    expect(detail.locator('[data-testid="msg-attributes"]')).to_contain_text(target["attributes"]["kind"]["value"])
    shot(page, "messages-find")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1200, "height": 900})
        shutil.copyfile(shot(page, "messages-find"), "docs/images/console-find.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    tid(page, "detail-raw").click()
    expect(tid(page, "detail-body")).to_have_text(target["body"])
    expect(tid(page, "detail-raw")).to_have_attribute("aria-pressed", "true")
    tid(page, "detail-close").click()
    expect(detail).to_be_hidden()
    # Finding read nothing: every receive count is still 0.
    assert all(m["receive_count"] == 0 for m in matching(queue)), "inspecting counts no receive"


def t_export(page):
    queue = state["find"]
    open_queue(page, queue, "messages")
    # Every match, through the export route: the file holds exactly what the API exports.
    urgent = '.note == "URGENT"'
    find(page, where=urgent)
    expect(tid(page, "message-row")).to_have_count(5)
    with page.expect_download() as info:
        tid(page, "export-all").click()
    download = info.value
    assert download.suggested_filename.endswith(".jsonl"), download.suggested_filename
    lines = read_download(download)
    status, headers, raw = http("GET", f"/v1/queues/{queue}/messages/export?limit=1000{q(where=urgent)}")
    assert status == 200 and headers.get("export-next") is None, f"{status} {dict(headers)}"
    api_lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    assert lines == api_lines, f"the file is the API's export: {lines[:1]} vs {api_lines[:1]}"
    expected = [m["message_id"] for m in matching(queue, q(where=urgent))]
    assert [line["message_id"] for line in lines] == expected, "exactly the matching messages"
    expect(tid(page, "export-status")).to_contain_text("Exported 5 messages (25 examined)")
    state["urgent_export"] = lines
    # Selected rows: exactly those, in the export route's shape.
    tid(page, "find-clear").click()
    expect(tid(page, "message-row")).to_have_count(10)
    tid(page, "select-all").check()
    expect(tid(page, "selection-count")).to_have_text("10 selected")
    tid(page, "select-all").uncheck()
    expect(tid(page, "selection-count")).to_have_text("0 selected")
    expect(tid(page, "export-selected")).to_be_disabled()
    chosen = []
    for i in (1, 3, 4):
        line = tid(page, "message-row").nth(i)
        line.locator('[data-testid="row-select"]').check()
        chosen.append(line.get_attribute("data-message-id"))
    expect(tid(page, "selection-count")).to_have_text("3 selected")
    expect(tid(page, "select-all")).to_have_js_property("indeterminate", True)
    with page.expect_download() as info:
        tid(page, "export-selected").click()
    lines = read_download(info.value)
    assert [line["message_id"] for line in lines] == chosen, f"exactly the selected: {lines}"
    by_id = {m["message_id"]: m for m in matching(queue)}
    for line in lines:
        assert set(line) == {"message_id", "position", "sent_at", "receive_count", "body", "attributes"}, sorted(line)
        m = by_id[line["message_id"]]
        assert (line["body"], line["attributes"], line["position"]) == (m["body"], m["attributes"], m["position"]), line
    # A queue whose export is off: the API's 403, in its words.
    off = ok("POST", "/v1/queues", {"name": EXPORT_OFF, "type": "standard"}, status=201)["result"]["id"]
    state["export_off"] = off
    ok("POST", f"/v1/queues/{off}/messages", {"body": "secret"}, status=201)
    status, _, answer = http("GET", f"/v1/queues/{off}/messages/export")
    assert status == 403 and answer["error"]["code"] == "permission_denied", f"{status} {answer!r}"
    assert "basaltic.export_disabled" in answer["error"]["message"], answer
    open_queue(page, off, "messages")
    expect(tid(page, "message-row")).to_have_count(1)
    tid(page, "export-all").click()
    expect(alert(page)).to_have_text(f"permission_denied: {answer['error']['message']}")
    expect(tid(page, "export-all")).to_be_enabled()
    # The exported file imports as it is into another queue: the same bodies and attributes there.
    again = ok("POST", "/v1/queues", {"name": f"it-console-{RUN}-reimport", "type": "standard"}, status=201)["result"]["id"]
    state["reimport"] = again
    exported = state["urgent_export"]
    open_queue(page, again, "send")
    tid(page, "import-file").set_input_files({"name": "urgent.jsonl", "mimeType": "application/x-ndjson",
                                              "buffer": "".join(json.dumps(line) + "\n" for line in exported).encode()})
    tid(page, "import-start").click()
    expect(tid(page, "import-summary")).to_have_text("Imported urgent.jsonl: 5 lines sent, 0 lines failed, of 5 lines.", timeout=30_000)
    there = wait_until(lambda: (lambda ms: ms if len(ms) == 5 else None)(matching(again)), "the 5 imported messages")
    assert sorted((m["body"], json.dumps(m["attributes"], sort_keys=True)) for m in there) == \
        sorted((line["body"], json.dumps(line["attributes"], sort_keys=True)) for line in exported), "the same bodies and attributes"


def t_move(page):
    source = state["find"]
    dest = ok("POST", "/v1/queues", {"name": f"it-console-{RUN}-dest", "type": "standard"}, status=201)["result"]["id"]
    state["dest"] = dest
    dest_name = f"it-console-{RUN}-dest"
    before = [m["message_id"] for m in matching(source)]
    open_queue(page, source, "messages")
    expect(tid(page, "message-row")).to_have_count(10)
    chosen = []
    for i in (0, 2, 5):
        line = tid(page, "message-row").nth(i)
        line.locator('[data-testid="row-select"]').check()
        chosen.append(line.get_attribute("data-message-id"))
    tid(page, "move-selected").click()
    dialog = tid(page, "move-dialog")
    expect(dialog).to_be_visible()
    expect(tid(page, "move-safety")).to_contain_text("Nothing is lost if you stop")
    expect(tid(page, "move-start")).to_be_disabled()
    options = tid(page, "move-destination").locator("option").all_text_contents()
    assert dest_name in options and f"it-console-{RUN}-find" not in options, options
    assert state["names"]["work"] in options and state["names"]["fifo"] not in options, "same-type queues only"
    tid(page, "move-destination").select_option(label=dest_name)
    expect(tid(page, "move-start")).to_be_enabled()
    tid(page, "move-start").click()
    expect(tid(page, "move-summary")).to_have_text(f"3 messages moved to {dest_name}.")
    results = tid(page, "move-result")
    expect(results).to_have_count(3)
    assert results.evaluate_all("rs => rs.map(r => [r.dataset.messageId, r.dataset.outcome])") == [[i, "moved"] for i in chosen]
    shot(page, "move-dialog")
    if UPDATE_DOCS:
        page.set_viewport_size({"width": 1200, "height": 900})
        shutil.copyfile(shot(page, "move-dialog"), "docs/images/console-move.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    tid(page, "move-close").click()
    expect(dialog).to_have_count(0)
    # Its opener is disabled now (nothing is selected): focus goes to the table.
    expect(tid(page, "move-selected")).to_be_disabled()
    expect(tid(page, "messages-table-wrap")).to_be_focused()
    left = [m["message_id"] for m in matching(source)]
    there = [m for m in matching(dest)]
    assert left == [i for i in before if i not in chosen], "the 3 are gone from the source, the rest stay"
    assert sorted(m["message_id"] for m in there) == sorted(chosen), "each is at the destination once, same id"
    assert all(m["receive_count"] == 0 for m in there)
    expect(tid(page, "message-row")).to_have_count(10)
    expect(tid(page, "selection-count")).to_have_text("0 selected")
    # Every match of a filter.
    odd = [m["message_id"] for m in matching(source, q(attribute="kind=odd"))]
    assert odd, "odd messages left to move"
    find(page, attribute="kind=odd")
    tid(page, "move-all").click()
    expect(tid(page, "move-start")).to_be_disabled()
    tid(page, "move-destination").select_option(label=dest_name)
    tid(page, "move-start").click()
    expect(tid(page, "move-summary")).to_have_text(f"{len(odd)} messages moved to {dest_name}.")
    expect(tid(page, "move-result")).to_have_count(len(odd))
    page.keyboard.press("Escape")
    expect(tid(page, "move-dialog")).to_have_count(0)
    expect(tid(page, "move-all")).to_be_focused()
    assert matching(source, q(attribute="kind=odd")) == [], "no odd message left in the source"
    left_now = [m["message_id"] for m in matching(source)]
    assert left_now == [i for i in left if i not in odd], "only the matching ones moved"
    there = [m["message_id"] for m in matching(dest)]
    assert sorted(there) == sorted(chosen + odd) and len(set(there)) == len(there), "each moved message once"


def t_find_keyboard_narrow(page):
    queue = state["find"]
    goto(page, "#/queues")
    open_queue(page, queue, "messages")
    expect(tid(page, "message-row").first).to_be_visible()
    tid(page, "messages-reload").focus()
    tab_to(page, "message-row")
    first = tid(page, "message-row").nth(0)
    expect(first).to_be_focused()
    page.keyboard.press("ArrowDown")
    second = tid(page, "message-row").nth(1)
    expect(second).to_be_focused()
    page.keyboard.press("Enter")
    expect(tid(page, "detail-title")).to_be_focused()
    expect(tid(page, "detail-id")).to_have_text(second.get_attribute("data-message-id"))
    tab_to(page, "detail-raw", presses=5)
    page.keyboard.press("Enter")
    expect(tid(page, "detail-raw")).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Escape")
    expect(tid(page, "message-detail")).to_be_hidden()
    expect(second).to_be_focused()
    # At 375 px the table scrolls inside its own box; the page does not scroll sideways.
    page.set_viewport_size({"width": 375, "height": 812})
    try:
        tid(page, "message-row").first.click()
        expect(tid(page, "message-detail")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 376, f"the Messages tab is {width}px wide at 375"
        wrap = tid(page, "messages-table-wrap")
        assert wrap.evaluate("el => el.scrollWidth > el.clientWidth"), "the table scrolls sideways in its box"
        shot(page, "narrow-messages")
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


# ------------------------------------------------------------------ more than one request's worth

BIG = 1050  # more than the 1,000 messages an inspect request examines by default
NEEDLE = f"needle-{RUN}"


def send_many(queue, bodies):
    for i in range(0, len(bodies), 10):
        answer = ok("POST", f"/v1/queues/{queue}/messages/batch",
                    {"entries": [{"id": f"e{j}", "body": body} for j, body in enumerate(bodies[i:i + 10])]})
        assert not answer.get("failed") and len(answer["successful"]) == len(bodies[i:i + 10]), answer


def hold_routes(page, match, passed=0):
    """Routes the requests whose URL match() keeps: the first `passed` go on, later ones wait in
    the list answered until the test continues them. Answers that list."""
    held = []
    seen = [0]

    def handler(route):
        seen[0] += 1
        if seen[0] <= passed:
            route.continue_()
        else:
            held.append(route)
    page.route(match, handler)
    return held


def wait_held(page, held, n, what):
    """Waits (the page's events go on meanwhile) until n requests are held."""
    for _ in range(400):
        if len(held) >= n:
            return
        page.wait_for_timeout(25)
    raise AssertionError(f"timed out waiting for {what} (held {len(held)})")


def export_pages(queue, pages):
    """The first `pages` pages of the API's own export (1,000 lines each), and the cursor after them."""
    lines, after, scanned = [], None, 0
    for _ in range(pages):
        status, headers, raw = http("GET", f"/v1/queues/{queue}/messages/export?limit=1000" + (f"&after={urllib.parse.quote(after)}" if after else ""))
        assert status == 200, f"{status} {raw!r}"
        lines += [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        scanned += int(headers.get("export-scanned") or 0)
        after = headers.get("export-next")
    return lines, after, scanned


def t_keep_searching(page):
    queue = ok("POST", "/v1/queues", {"name": f"it-console-{RUN}-big", "type": "standard"}, status=201)["result"]["id"]
    state["big"] = queue
    send_many(queue, [f"{NEEDLE} {n}" if n >= BIG - 4 else f"filler {n}" for n in range(BIG)])
    first = ok("GET", f"/v1/queues/{queue}/messages?max_messages=10{q(contains=NEEDLE)}")
    assert first["messages"] == [] and first["next"] and first["scanned"] == 1000, \
        f"one request examines 1,000 messages and finds none: {first['scanned']} {first['next']!r}"
    expected = [m["message_id"] for m in matching(queue, q(contains=NEEDLE))]
    assert len(expected) == 4, expected
    open_queue(page, queue, "messages")
    expect(tid(page, "message-row")).to_have_count(10)
    expect(tid(page, "find-keep-searching")).to_be_hidden()
    find(page, contains=NEEDLE.upper())
    expect(tid(page, "messages-empty")).to_have_text("No match among the messages examined for this page: keep searching to read on.")
    expect(tid(page, "messages-info")).to_have_text("0 matching · 1,000 examined · more after this page")
    keep = tid(page, "find-keep-searching")
    expect(keep).to_be_visible()
    expect(keep).to_be_enabled()
    with page.expect_response(lambda r: "/messages?" in r.url):
        keep.click()
    expect(tid(page, "message-row")).to_have_count(4)
    assert rows_shown(page) == expected, "the matches past the first 1,000, as the API finds them"
    expect(tid(page, "messages-page")).to_have_text("Page 2")
    expect(tid(page, "messages-info")).to_have_text(f"4 matching · {BIG:,} examined · end of the queue")
    expect(keep).to_be_hidden()


def t_export_stop(page):
    queue = state["big"]
    send_many(queue, [f"more {n}" for n in range(1000)])
    api_lines, after, scanned = export_pages(queue, 2)
    assert after, "the queue goes on after two pages"
    _, _, first_scanned = export_pages(queue, 1)
    goto(page, "#/queues")  # the tab afresh: no filter applied
    open_queue(page, queue, "messages")
    expect(tid(page, "message-row")).to_have_count(10)
    # The first export request goes on, the second waits: Stop is clicked while it is under way.
    held = hold_routes(page, lambda url: "/messages/export" in url, passed=1)
    try:
        tid(page, "export-all").click()
        wait_held(page, held, 1, "the second export request")
        expect(tid(page, "export-status")).to_have_text(f"Exporting: 1,000 lines · {first_scanned:,} examined…")
        tid(page, "export-stop").click()
        expect(tid(page, "export-stop")).to_be_disabled()
        with page.expect_download() as info:
            held[0].continue_()
        lines = read_download(info.value)
        assert len(held) == 1, f"no request after the stop: {len(held)} held"
    finally:
        page.unroute_all(behavior="ignoreErrors")
    # The file holds the two pages read, whole: exactly the API's first two pages, each message once.
    assert len(lines) == 2000 and lines == api_lines, f"{len(lines)} lines, the API's first two pages"
    assert len({line["message_id"] for line in lines}) == 2000, "each line a distinct message"
    expect(tid(page, "export-status")).to_have_text(
        f"Exported 2,000 messages ({scanned:,} examined): stopped before the end of the queue.")
    expect(tid(page, "export-stop")).to_be_hidden()
    expect(tid(page, "export-all")).to_be_enabled()


def t_export_cap(page):
    """exportAll's rules on a stubbed fetch: it stops at EXPORT_MAX_LINES (asking no more than the
    lines left), at the queue's end (complete, even at exactly the cap), and on a stop."""
    goto(page, "#/queues")
    expect(tid(page, "queue-row").first).to_be_visible()
    got = page.evaluate("""async () => {
      const { exportAll, EXPORT_MAX_LINES } = await import('/console/js/export.js');
      const real = window.fetch;
      // A queue of `size` messages of which the filters keep `keep` of each 1,000 examined.
      const run = async (size, keep, stopAfter) => {
        const limits = [];
        let pages = 0;
        window.fetch = async (url, init) => {
          if (!String(url).includes('/messages/export')) return real(url, init);
          const u = new URL(url, location.href);
          const limit = Number(u.searchParams.get('limit'));
          const from = Number(u.searchParams.get('after') || 0);
          limits.push(limit);
          const examined = Math.min(1000, size - from);
          const n = Math.min(limit, Math.floor(examined * keep / 1000));
          const body = Array.from({ length: n }, (_, i) => JSON.stringify({ message_id: `m${from + i}` })).join('\\n');
          const headers = { 'export-scanned': String(examined) };
          if (from + examined < size) headers['export-next'] = String(from + examined);
          return new Response(body, { status: 200, headers });
        };
        try {
          const done = await exportAll('q', '', { shouldStop: () => pages >= stopAfter, onProgress: () => { pages += 1; } });
          return { lines: done.lines.length, scanned: done.scanned, complete: done.complete, capped: done.capped,
                   requests: limits.length, lastLimit: limits[limits.length - 1], distinct: new Set(done.lines).size };
        } finally {
          window.fetch = real;
        }
      };
      return {
        max: EXPORT_MAX_LINES,
        endless: await run(1e9, 999, Infinity),
        exact: await run(100000, 1000, Infinity),
        stopped: await run(1e9, 1000, 3),
      };
    }""")
    assert got["max"] == 100_000, got
    # 999 a page: 100 pages hold 99,900, the 101st asks for the 100 left, then the cap.
    assert got["endless"] == {"lines": 100_000, "scanned": 101_000, "complete": False, "capped": True,
                              "requests": 101, "lastLimit": 100, "distinct": 100_000}, got["endless"]
    assert got["exact"] == {"lines": 100_000, "scanned": 100_000, "complete": True, "capped": False,
                            "requests": 100, "lastLimit": 1000, "distinct": 100_000}, got["exact"]
    assert got["stopped"] == {"lines": 3000, "scanned": 3000, "complete": False, "capped": False,
                              "requests": 3, "lastLimit": 1000, "distinct": 3000}, got["stopped"]


def t_move_stop(page):
    source = state["big"]
    dest_name = f"it-console-{RUN}-stopdest"
    dest = ok("POST", "/v1/queues", {"name": dest_name, "type": "standard"}, status=201)["result"]["id"]
    state["stop_dest"] = dest
    before = [m["message_id"] for m in matching(source)]
    assert len(before) == BIG + 1000, len(before)
    open_queue(page, source, "messages")
    expect(tid(page, "message-row")).to_have_count(10)
    tid(page, "move-all").click()
    tid(page, "move-destination").select_option(label=dest_name)
    # The first move request goes on, the second waits: Stop is clicked while it is under way.
    held = hold_routes(page, lambda url: url.endswith("/messages/move"), passed=1)
    try:
        tid(page, "move-start").click()
        wait_held(page, held, 1, "the second move request")
        expect(tid(page, "move-summary")).to_have_text(f"100 messages moved to {dest_name}…")
        tid(page, "move-stop").click()
        expect(tid(page, "move-summary")).to_have_text("Stopping after the request under way…")
        held[0].continue_()
        expect(tid(page, "move-summary")).to_have_text(
            f"200 messages moved to {dest_name}. Stopped: the messages not moved are still in this queue.")
        assert len(held) == 1, f"no request after the stop: {len(held)} held"
    finally:
        page.unroute_all(behavior="ignoreErrors")
    expect(tid(page, "move-result")).to_have_count(200)
    moved = tid(page, "move-result").evaluate_all("rs => rs.map(r => [r.dataset.messageId, r.dataset.outcome])")
    # Every message in exactly one of the two queues: none lost, none doubled.
    left = [m["message_id"] for m in matching(source)]
    there = [m["message_id"] for m in matching(dest)]
    assert len(set(left)) == len(left) and len(set(there)) == len(there), "no message twice in a queue"
    assert not set(left) & set(there), "no message in both queues"
    assert sorted(left + there) == sorted(before), "no message lost"
    assert sorted(there) == sorted(i for i, _ in moved) and all(o == "moved" for _, o in moved), \
        "the dialog's results are the messages the destination holds"
    assert sorted(there) == sorted(before[:200]), "the first 200 messages in queue order moved"
    tid(page, "move-close").click()
    expect(tid(page, "move-dialog")).to_have_count(0)
