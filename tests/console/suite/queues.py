"""The queue list: creating queues with the form, filtering and sorting it, purge and delete."""

import re
import time

from playwright.sync_api import expect

from .helpers import (
    RUN,
    counts,
    create_queue_ui,
    goto,
    http,
    ok,
    open_queue,
    row,
    shot,
    state,
    tid,
    wait_until,
)


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


def t_queue_list_filter_sort(page):
    names = state["names"]
    mine = f"it-console-{RUN}-"
    # Two messages on the FIFO queue, so that sorting by Visible has something to order.
    for n in range(2):
        ok("POST", f"/v1/queues/{state['fifo']}/messages", {"body": f"sort {n}", "group_id": "g"}, status=201)
    goto(page, "#/queues")
    shown = lambda: tid(page, "queue-row").evaluate_all("rows => rows.map(r => r.dataset.queueName)")  # noqa: E731
    tid(page, "queue-filter").fill(mine)
    expect(tid(page, "queue-row")).to_have_count(5)
    expect(tid(page, "queue-count")).to_have_text(re.compile(r"^5 of \d+ queues match$"))
    # By id, too.
    tid(page, "queue-filter").fill(state["dlq"][:13])
    expect(tid(page, "queue-row")).to_have_count(1)
    expect(row(page, names["dlq"])).to_be_visible()
    tid(page, "queue-filter").fill(f"no-such-queue-{RUN}")
    expect(tid(page, "queue-none")).to_contain_text(f"no-such-queue-{RUN}")
    tid(page, "queue-filter").fill(mine)
    # Sorted by name at first; a header's button sorts by its column, again the other way.
    name_head = page.locator('thead th[data-col="name"]')
    expect(name_head).to_have_attribute("aria-sort", "ascending")
    assert shown() == sorted(shown()), shown()
    tid(page, "sort-name").click()
    expect(name_head).to_have_attribute("aria-sort", "descending")
    assert shown() == sorted(shown(), reverse=True), shown()
    expect(row(page, names["fifo"]).locator('[data-col="visible"]')).to_have_text("2", timeout=30_000)
    tid(page, "sort-visible").click()
    expect(page.locator('thead th[data-col="visible"]')).to_have_attribute("aria-sort", "ascending")
    expect(name_head).not_to_have_attribute("aria-sort", re.compile("."))
    tid(page, "sort-visible").click()
    expect(page.locator('thead th[data-col="visible"]')).to_have_attribute("aria-sort", "descending")
    assert shown()[0] == names["fifo"], shown()
    shot(page, "queues-filtered")
    # Both hold across the 10 s refresh.
    with page.expect_response(lambda r: r.url.endswith("/v1/queues?include=counts"), timeout=20_000):
        pass
    expect(tid(page, "queue-filter")).to_have_value(mine)
    expect(tid(page, "queue-row")).to_have_count(5)
    expect(page.locator('thead th[data-col="visible"]')).to_have_attribute("aria-sort", "descending")
    assert shown()[0] == names["fifo"], shown()
