"""Pausing a queue's delivery from its page (confirmed), the paused banner and the list's marker,
the queue's audit trail paged with More, and taking a dead-letter queue away in the settings
form. Pausing works on both backends, so these run on both."""

import os
import re
from datetime import datetime, timezone

from playwright.sync_api import expect

from .helpers import (
    RUN,
    UPDATE_DOCS,
    alert,
    goto,
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

ZONE_STORAGE = "sqsgw.console.zone"


def queue(queue_id):
    return ok("GET", f"/v1/queues/{queue_id}")["result"]


def receive(queue_id, wait):
    return ok("POST", f"/v1/queues/{queue_id}/messages/receive",
              {"max_messages": 10, "wait_time_seconds": wait})["messages"]


def audit(queue_id, query=""):
    return ok("GET", f"/v1/queues/{queue_id}/subscription-audit{query}")


def t_pause_delivery(page):
    name = f"it-console-{RUN}-pause"
    made = ok("POST", "/v1/queues", {"name": name, "type": "standard", "settings": {
        "dead_letter_queue": {"queue_id": state["dlq"], "max_receive_count": 4}}}, status=201)["result"]
    qid = state["pause"] = made["id"]
    state["names"]["pause"] = name
    assert made["delivery_paused"] is False and made["paused_since"] is None, made
    open_queue(page, qid, "settings")
    expect(tid(page, "paused-banner")).to_be_hidden()
    # Pausing asks first, saying what it does; Cancel changes nothing.
    tid(page, "pause-delivery").click()
    dialog = tid(page, "pause-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Consumers get no message")
    expect(dialog).to_contain_text("push subscriptions post nothing")
    expect(dialog).to_contain_text("sends go on")
    expect(tid(page, "pause-confirm")).to_be_focused()
    tid(page, "pause-cancel").click()
    expect(dialog).to_have_count(0)
    expect(tid(page, "pause-delivery")).to_be_focused()
    assert queue(qid)["delivery_paused"] is False, "a cancelled pause pauses nothing"
    tid(page, "pause-delivery").click()
    tid(page, "pause-confirm").click()
    expect(dialog).to_have_count(0)
    expect(tid(page, "status")).to_have_text(f"Paused delivery of {name}.")
    expect(tid(page, "resume-delivery")).to_be_focused()
    expect(tid(page, "pause-delivery")).to_have_count(0)
    paused = queue(qid)
    assert paused["delivery_paused"] is True and paused["paused_since"], paused
    banner = tid(page, "paused-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Delivery paused since")
    expect(banner.locator("time")).to_have_attribute("datetime", paused["paused_since"])
    # The time is in the console's chosen zone: in UTC once it is chosen.
    page.evaluate(f"sessionStorage.setItem('{ZONE_STORAGE}', 'utc')")
    page.reload()
    since = datetime.fromisoformat(paused["paused_since"].replace("Z", "+00:00")).astimezone(timezone.utc)
    expect(banner).to_contain_text(re.compile(rf"{since:%H:%M:%S} UTC"))
    page.evaluate(f"sessionStorage.removeItem('{ZONE_STORAGE}')")
    page.reload()
    expect(banner).to_be_visible()
    # Sends go on; receives answer nothing while paused.
    body = f"sent while paused {RUN}"
    send_api(qid, body)
    assert receive(qid, 1) == [], "a paused queue delivers nothing"
    shot(page, "paused-queue")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 640})
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path="docs/images/console-paused.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    # The list marks it.
    goto(page, "#/queues")
    expect(row(page, name).locator('[data-testid="paused-marker"]')).to_have_text("paused")
    expect(row(page, state["names"]["work"]).locator('[data-testid="paused-marker"]')).to_have_count(0)
    # Resuming (no confirmation: it only gives delivery back) delivers what waited.
    open_queue(page, qid, "settings")
    tid(page, "resume-delivery").click()
    expect(tid(page, "status")).to_have_text(f"Resumed delivery of {name}.")
    expect(tid(page, "pause-delivery")).to_be_focused()
    expect(banner).to_be_hidden()
    resumed = queue(qid)
    assert resumed["delivery_paused"] is False and resumed["paused_since"] is None, resumed
    got = wait_until(lambda: receive(qid, 2), "the message sent while paused, once resumed")
    assert [m["body"] for m in got] == [body], got
    ok("DELETE", f"/v1/queues/{qid}/messages?receipt_handle={got[0]['receipt_handle']}", status=204)
    goto(page, "#/queues")
    expect(row(page, name)).to_be_visible()
    expect(row(page, name).locator('[data-testid="paused-marker"]')).to_have_count(0)
    # A refusal shows in the API's words, in the dialog: here the queue is gone meanwhile.
    gone = ok("POST", "/v1/queues", {"name": f"it-console-{RUN}-gone", "type": "standard"}, status=201)["result"]["id"]
    open_queue(page, gone, "settings")
    ok("DELETE", f"/v1/queues/{gone}", status=204)
    # The sqs backend may find a queue just deleted for a moment: wait until the API refuses.
    status, _, answer = wait_until(lambda: (lambda a: a if a[0] == 404 else None)(http("POST", f"/v1/queues/{gone}/pause")),
                                   "the deleted queue's pause refused with 404")
    tid(page, "pause-delivery").click()
    tid(page, "pause-confirm").click()
    expect(tid(page, "dialog-error")).to_have_text(f"{answer['error']['code']}: {answer['error']['message']}")
    page.keyboard.press("Escape")
    expect(tid(page, "pause-dialog")).to_have_count(0)


def t_audit_trail(page):
    qid = state["pause"]
    trail = audit(qid)["entries"]
    assert [e["action"] for e in trail[:2]] == ["delivery_resumed", "delivery_paused"], trail
    assert all(e["subscription"] is None for e in trail[:2]), trail
    open_queue(page, qid, "settings")
    rows = tid(page, "audit-entry")
    expect(rows).to_have_count(len(trail))
    for i, entry in enumerate(trail[:2]):
        line = rows.nth(i)
        expect(line).to_have_attribute("data-action", entry["action"])
        expect(line).to_contain_text(entry["actor"])
        expect(line).to_contain_text("queue")
        expect(line.locator("time")).to_have_attribute("datetime", entry["at"])
    expect(rows.nth(0)).to_contain_text("delivery resumed")
    expect(rows.nth(1)).to_contain_text("delivery paused")
    expect(tid(page, "audit-more")).to_be_hidden()
    # A pause made on the page is a new first line at once.
    tid(page, "pause-delivery").click()
    tid(page, "pause-confirm").click()
    expect(rows).to_have_count(len(trail) + 1)
    expect(rows.nth(0)).to_have_attribute("data-action", "delivery_paused")
    tid(page, "audit").scroll_into_view_if_needed()
    shot(page, "audit-trail")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 640})
        tid(page, "audit").scroll_into_view_if_needed()
        page.screenshot(path="docs/images/console-audit.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    tid(page, "resume-delivery").click()
    expect(rows).to_have_count(len(trail) + 2)
    # More pages by `before` = the page's `next`, newest first, until there is none.
    for _ in range(10):
        ok("POST", f"/v1/queues/{qid}/pause")
        ok("POST", f"/v1/queues/{qid}/resume")
    everything = audit(qid, "?limit=1000")["entries"]
    assert len(everything) > 20, len(everything)
    first = audit(qid, "?limit=20")
    tid(page, "audit-reload").click()
    expect(rows).to_have_count(20)
    expect(rows.nth(0)).to_have_attribute("data-action", everything[0]["action"])
    more = tid(page, "audit-more")
    expect(more).to_be_visible()
    with page.expect_request(lambda r: "subscription-audit" in r.url and "before=" in r.url) as asked:
        more.click()
    assert f"before={first['next']}" in asked.value.url, (asked.value.url, first["next"])
    expect(rows).to_have_count(min(len(everything), 40))
    shown = [rows.nth(i).get_attribute("data-action") for i in range(min(len(everything), 40))]
    assert shown == [e["action"] for e in everything[:40]], shown
    if len(everything) <= 40:
        expect(more).to_be_hidden()
    assert queue(qid)["delivery_paused"] is False


def t_settings_remove_dlq(page):
    qid, names = state["pause"], state["names"]
    assert queue(qid)["settings"]["dead_letter_queue"] == {"queue_id": state["dlq"], "max_receive_count": 4}
    open_queue(page, qid, "settings")
    expect(tid(page, "edit-dlq")).to_have_value(state["dlq"])
    expect(tid(page, "settings-form")).not_to_contain_text("no way to remove")
    tid(page, "edit-dlq").select_option(label="none")
    expect(tid(page, "edit-max-receive-count")).to_be_disabled()
    with page.expect_request(lambda r: r.method == "PATCH") as sent:
        tid(page, "settings-save").click()
    assert sent.value.post_data_json == {"settings": {"dead_letter_queue": None}}, sent.value.post_data
    expect(tid(page, "status")).to_have_text(f"Saved 1 setting of {names['pause']}: dead_letter_queue.")
    expect(alert(page)).to_be_empty()
    assert queue(qid)["settings"]["dead_letter_queue"] is None, queue(qid)["settings"]
    expect(tid(page, "settings-list")).to_contain_text(re.compile(r"Dead-letter queue\s*none"))
    expect(tid(page, "edit-dlq")).to_have_value("")
    # Saving again with "none" sends nothing: there is nothing to take away.
    tid(page, "settings-save").click()
    expect(alert(page)).to_contain_text("nothing to save")
