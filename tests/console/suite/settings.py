"""The Settings tab's edit form (every setting PATCH takes, the API's refusals in its words), and
the page's small rules: notices cleared on navigation, plurals, wide enough dropdowns."""

import os
import re

from playwright.sync_api import expect

from .helpers import (
    UPDATE_DOCS,
    alert,
    goto,
    http,
    ok,
    open_queue,
    row,
    shot,
    state,
    tid,
)


def queue(queue_id):
    return ok("GET", f"/v1/queues/{queue_id}")["result"]


def t_settings_edit(page):
    work, names = state["work"], state["names"]
    before = queue(work)["settings"]
    open_queue(page, work, "settings")
    expect(tid(page, "edit-visibility_timeout_seconds")).to_have_value("45")
    expect(tid(page, "edit-retention_seconds")).to_have_value("7200")
    # Out of range: the API refuses, and the page says it in the API's words; nothing changes.
    status, _, answer = http("PATCH", f"/v1/queues/{work}", {"settings": {"delay_seconds": 901}})
    assert status == 400, f"{status} {answer!r}"
    tid(page, "edit-delay_seconds").fill("901")
    tid(page, "settings-save").click()
    expect(alert(page)).to_have_text(f"{answer['error']['code']}: {answer['error']['message']}")
    assert queue(work)["settings"] == before, "a refused change changes nothing"
    # Several at once, the dead-letter queue picked from the list: only the changes are sent.
    tid(page, "edit-delay_seconds").fill("5")
    tid(page, "edit-retention_seconds").fill("86400")
    tid(page, "edit-dlq").select_option(label=names["dlq"])
    tid(page, "edit-max-receive-count").fill("3")
    with page.expect_request(lambda r: r.method == "PATCH") as sent:
        tid(page, "settings-save").click()
    assert sent.value.post_data_json == {"settings": {
        "delay_seconds": 5, "retention_seconds": 86400,
        "dead_letter_queue": {"queue_id": state["dlq"], "max_receive_count": 3}}}, sent.value.post_data
    expect(tid(page, "status")).to_have_text(
        f"Saved 3 settings of {names['work']}: delay_seconds, retention_seconds, dead_letter_queue.")
    expect(alert(page)).to_be_empty()
    after = queue(work)["settings"]
    assert after["delay_seconds"] == 5 and after["retention_seconds"] == 86400, after
    assert after["dead_letter_queue"] == {"queue_id": state["dlq"], "max_receive_count": 3}, after
    assert after["visibility_timeout_seconds"] == 45, "a setting not changed is kept"
    expect(tid(page, "settings-list")).to_contain_text("after 3 receives")
    expect(tid(page, "settings-list")).to_contain_text("5 s")
    expect(tid(page, "settings-save")).to_be_focused()
    # Once set, the chooser still offers "none" (taking it away: pause.py's t_settings_remove_dlq).
    expect(tid(page, "edit-dlq").locator("option[value='']")).to_have_text("none")
    # The chooser is as wide as its longest option.
    wide = tid(page, "edit-dlq").evaluate("""s => {
      const c = document.createElement('canvas').getContext('2d');
      c.font = getComputedStyle(s).font;
      const longest = Math.max(...[...s.options].map(o => c.measureText(o.text).width));
      return s.getBoundingClientRect().width >= longest + 16;
    }""")
    assert wide, "the dead-letter queue chooser shows its options whole"
    shot(page, "settings-edit")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        tid(page, "settings-form").scroll_into_view_if_needed()
        page.screenshot(path="docs/images/console-settings.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    # A FIFO queue's content-based deduplication.
    fifo = state["fifo"]
    open_queue(page, fifo, "settings")
    expect(tid(page, "edit-content-dedup")).to_be_checked()
    tid(page, "edit-content-dedup").uncheck()
    tid(page, "settings-save").click()
    expect(tid(page, "status")).to_contain_text("content_based_deduplication")
    assert queue(fifo)["settings"]["content_based_deduplication"] is False, queue(fifo)["settings"]


def t_notices_and_plurals(page):
    work, names = state["work"], state["names"]
    # What the status line says belongs to the tab and the queue it was said on.
    open_queue(page, work, "send")
    tid(page, "send-body").fill("a notice")
    tid(page, "send-submit").click()
    expect(tid(page, "status")).to_contain_text("Sent message")
    tid(page, "tab-settings").click()
    expect(tid(page, "status")).to_be_empty()
    tid(page, "edit-delay_seconds").fill("901")
    tid(page, "settings-save").click()
    expect(alert(page)).to_contain_text("invalid_argument: ")
    tid(page, "tab-send").click()
    expect(alert(page)).to_be_empty()
    tid(page, "send-body").fill("another notice")
    tid(page, "send-submit").click()
    expect(tid(page, "status")).to_contain_text("Sent message")
    open_queue(page, state["src"], "settings")
    expect(tid(page, "status")).to_be_empty()
    # Plurals: one receive, several queues, one of them shown.
    expect(tid(page, "settings-list")).to_contain_text("after 1 receive")
    expect(tid(page, "settings-list")).not_to_contain_text("receive(s)")
    goto(page, "#/queues")
    expect(row(page, names["src"]).locator('[data-col="dlq"]')).to_contain_text("after 1 receive")
    tid(page, "queue-filter").fill(names["src"])
    expect(tid(page, "queue-count")).to_have_text(re.compile(r"^1 of \d+ queues match$"))
