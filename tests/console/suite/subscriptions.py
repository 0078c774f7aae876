"""The Subscriptions tab: the config file's subscription and its delivery log; making, pausing,
resuming, rotating and deleting one through the API."""

import os
import re

from playwright.sync_api import expect

from .helpers import (
    UPDATE_DOCS,
    URL,
    http,
    ok,
    open_queue,
    queue_by_name,
    send_api,
    shot,
    state,
    tid,
    wait_until,
)


def t_subscriptions(page):
    queue = queue_by_name("push-demo")["id"]
    send_api(queue, "for the push subscription")
    wait_until(lambda: ok("GET", f"/v1/queues/{queue}/subscriptions")["subscriptions"][0]["log"], "a push attempt")
    open_queue(page, queue, "subscriptions")
    card = tid(page, "subscription")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("demo-hook")
    # A config subscription's path stays in the config: the API shows scheme, host and port.
    expect(card).to_contain_text("http://127.0.0.1:9/…")
    expect(tid(page, "subscription-state")).to_have_text(re.compile("active|backing off"))
    expect(tid(page, "subscription-attempt").first).to_contain_text("unreachable")
    expect(tid(page, "subscription-summary")).to_contain_text("unreachable")
    assert "whsec_" not in page.content(), "no secret on the page"
    # The config file's subscription is shown with its controls disabled, saying why.
    expect(tid(page, "subscription-source")).to_have_text("config file")
    for control in ("subscription-pause", "subscription-rotate", "subscription-delete"):
        expect(card.locator(f'[data-testid="{control}"]')).to_be_disabled()
    expect(card.locator(".reason").first).to_contain_text("config file")
    shot(page, "subscriptions")


def sub_named(queue, name):
    for sub in ok("GET", f"/v1/queues/{queue}/subscriptions")["subscriptions"]:
        if sub["name"] == name:
            return sub
    return None


def t_subscriptions_manage(page):
    queue = ok("POST", "/v1/queues", {"name": state["names"]["work"].replace("-work", "-hooks"), "type": "standard"}, status=201)["result"]["id"]
    state["hooks"] = queue
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=URL)
    open_queue(page, queue, "subscriptions")
    expect(tid(page, "subscriptions-none")).to_be_visible()
    # A refusal shows in the API's words.
    bad = {"name": "bad name!", "url": "http://127.0.0.1:9/hook"}
    status, _, answer = http("POST", f"/v1/queues/{queue}/subscriptions", bad)
    assert status == 400, f"{status} {answer!r}"
    tid(page, "subscription-new").click()
    expect(tid(page, "subscription-dialog")).to_be_visible()
    expect(tid(page, "sub-name")).to_be_focused()
    tid(page, "sub-name").fill(bad["name"])
    tid(page, "sub-url").fill(bad["url"])
    tid(page, "sub-create").click()
    expect(tid(page, "dialog-error")).to_have_text(f"{answer['error']['code']}: {answer['error']['message']}")
    shot(page, "subscription-dialog")
    # Made with its optional settings; the secret shows once.
    tid(page, "sub-name").fill("hook-a")
    tid(page, "sub-max_concurrency").fill("2")
    tid(page, "sub-timeout_seconds").fill("3")
    tid(page, "sub-body").select_option("raw")
    with page.expect_response(lambda r: r.url.endswith("/subscriptions") and r.request.method == "POST") as made:
        tid(page, "sub-create").click()
    secret = made.value.json()["secret"]
    expect(tid(page, "subscription-dialog")).to_have_count(0)
    expect(tid(page, "secret-value")).to_have_value(secret)
    tid(page, "secret-copy").click()
    expect(tid(page, "secret-copied")).not_to_be_empty()
    if tid(page, "secret-copied").text_content() == "Copied.":
        assert page.evaluate("navigator.clipboard.readText()") == secret, "the copy button copies the secret"
    shot(page, "secret-dialog")
    tid(page, "secret-done").click()
    expect(tid(page, "secret-dialog")).to_have_count(0)
    expect(tid(page, "subscription-new")).to_be_focused()
    assert secret not in page.content(), "the secret is gone from the page once its dialog closes"
    sub = wait_until(lambda: sub_named(queue, "hook-a"), "hook-a listed")
    managed = sub["managed"]
    assert sub["source"] == "api" and managed["enabled"], sub
    assert (managed["max_concurrency"], managed["timeout_seconds"], managed["body"]) == (2, 3, "raw"), managed
    card = page.locator('[data-testid="subscription"][data-name="hook-a"]')
    expect(card).to_be_visible()
    expect(card.locator('[data-testid="subscription-source"]')).to_have_text("API")
    # Its delivery log: attempts at an address nothing listens on.
    send_api(queue, "for hook-a")
    wait_until(lambda: (sub_named(queue, "hook-a") or {}).get("log"), "a delivery attempt", timeout=30)
    tid(page, "subscriptions-reload").click()
    attempt = card.locator('[data-testid="subscription-attempt"]').first
    expect(attempt).to_contain_text("unreachable")
    expect(card.locator('[data-testid="subscription-log"] thead')).to_contain_text("Latency")
    # Pause, then resume.
    card.locator('[data-testid="subscription-pause"]').click()
    expect(card.locator('[data-testid="subscription-resume"]')).to_be_visible()
    expect(card.locator('[data-testid="subscription-resume"]')).to_be_focused()
    assert sub_named(queue, "hook-a")["managed"]["enabled"] is False, "paused through PATCH enabled: false"
    expect(tid(page, "status")).to_have_text("Paused subscription hook-a.")
    card.locator('[data-testid="subscription-resume"]').click()
    expect(card.locator('[data-testid="subscription-pause"]')).to_be_visible()
    assert sub_named(queue, "hook-a")["managed"]["enabled"] is True, "resumed"
    # Rotate the secret with an overlap: the new one shows once, the old one signs beside it.
    card.locator('[data-testid="subscription-rotate"]').click()
    expect(tid(page, "rotate-overlap")).to_be_focused()
    tid(page, "rotate-overlap").fill("60")
    shot(page, "rotate-dialog")
    with page.expect_response(lambda r: r.url.endswith("/rotate-secret")) as rotated:
        tid(page, "rotate-submit").click()
    assert rotated.value.request.post_data_json == {"overlap_seconds": 60}, rotated.value.request.post_data
    new_secret = rotated.value.json()["secret"]
    assert new_secret != secret
    expect(tid(page, "secret-value")).to_have_value(new_secret)
    page.keyboard.press("Escape")
    expect(tid(page, "secret-dialog")).to_have_count(0)
    assert new_secret not in page.content() and secret not in page.content(), "no secret left in the page"
    assert sub_named(queue, "hook-a")["managed"]["previous_secret_until"], "the replaced secret signs during the overlap"
    expect(card.locator('[data-testid="subscription-settings"]')).to_contain_text("previous one signs too")
    shot(page, "subscriptions-manage")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.screenshot(path="docs/images/console-subscriptions.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    # Delete, behind a confirmation.
    card.locator('[data-testid="subscription-delete"]').click()
    expect(tid(page, "confirm-button")).to_be_disabled()
    tid(page, "confirm-input").fill("hook-a")
    tid(page, "confirm-button").click()
    expect(tid(page, "status")).to_have_text("Deleted subscription hook-a.")
    expect(tid(page, "subscriptions-none")).to_be_visible()
    assert sub_named(queue, "hook-a") is None, "deleted through the API"
