"""The keyboard, a narrow screen, and keys that may do less."""

from playwright.sync_api import expect

from .helpers import (
    BACKEND,
    LIMITED,
    VIEWER,
    http,
    ok,
    queue_by_name,
    goto,
    open_queue,
    row,
    shot,
    state,
    tid,
)


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
    # The pause control, from the keyboard: its confirmation closes with Escape, pausing nothing.
    open_queue(page, state["work"], "send")
    tid(page, "queue-name").focus()
    tab_to(page, "pause-delivery")
    page.keyboard.press("Enter")
    expect(tid(page, "pause-confirm")).to_be_focused()
    page.keyboard.press("Escape")
    expect(tid(page, "pause-dialog")).to_have_count(0)
    expect(tid(page, "pause-delivery")).to_be_focused()
    assert http("GET", f"/v1/queues/{state['work']}")[2]["result"]["delivery_paused"] is False
    # The settings form and the subscription dialog, from the keyboard; focus comes back.
    open_queue(page, state["work"], "settings")
    tid(page, "tab-settings").focus()
    tab_to(page, "edit-delay_seconds")
    open_queue(page, state["work"], "subscriptions")
    tid(page, "tab-subscriptions").focus()
    tab_to(page, "subscription-new")
    page.keyboard.press("Enter")
    expect(tid(page, "sub-name")).to_be_focused()
    page.keyboard.press("Escape")
    expect(tid(page, "subscription-dialog")).to_have_count(0)
    expect(tid(page, "subscription-new")).to_be_focused()
    # The queue list's sort buttons.
    goto(page, "#/queues")
    tid(page, "queue-filter").focus()
    tab_to(page, "sort-name")
    page.keyboard.press("Enter")
    expect(page.locator('thead th[data-col="name"]')).to_have_attribute("aria-sort", "descending")


def tab_to(page, testid, presses=40):
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.dataset.testid") == testid:
            return
    raise AssertionError(f"Tab never reached {testid}")


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
        # The new controls at 375 px: nothing wider than the screen.
        page.set_viewport_size({"width": 375, "height": 812})
        expect(tid(page, "queue-filter")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 376, "the queue list at 375"
        for tab, shown in (("send", "import-file"), ("settings", "settings-save"), ("subscriptions", "subscription-new"),
                           ("metrics", "metrics-utc")):
            open_queue(page, state["work"], tab)
            expect(tid(page, shown)).to_be_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 376, f"the {tab} tab is {width}px wide at 375"
            shot(page, f"narrow-{tab}")
        # A paused queue at 375 px: its banner, its control, its audit trail and its list marker.
        pause = state["pause"]
        ok("POST", f"/v1/queues/{pause}/pause")
        try:
            open_queue(page, pause, "settings")
            expect(tid(page, "paused-banner")).to_be_visible()
            expect(tid(page, "resume-delivery")).to_be_visible()
            expect(tid(page, "audit-entry").first).to_be_visible()
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 376, f"the paused queue's page is {width}px wide at 375"
            shot(page, "narrow-paused")
            goto(page, "#/queues")
            expect(row(page, state["names"]["pause"]).locator('[data-testid="paused-marker"]')).to_be_visible()
            assert page.evaluate("document.documentElement.scrollWidth") <= 376, "the queue list at 375"
        finally:
            ok("POST", f"/v1/queues/{pause}/resume")
        open_queue(page, state["work"], "subscriptions")
        tid(page, "subscription-new").click()
        box = tid(page, "subscription-dialog").bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375, f"the dialog fits: {box}"
        shot(page, "narrow-subscription-dialog")
        page.keyboard.press("Escape")
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


def t_read_only_key(page):
    """A key that may only look ('*=inspect,read_metrics') sees every write control disabled, with why."""
    if not VIEWER:
        raise AssertionError("run.sh gives CONSOLE_VIEWER_KEY")
    goto(page, "#/queues")
    tid(page, "sign-out").click()
    expect(tid(page, "signin-form")).to_be_visible()
    tid(page, "signin-key").fill(VIEWER)
    tid(page, "signin-submit").click()
    expect(tid(page, "who-name")).to_have_text("viewer")
    expect(tid(page, "new-queue")).to_be_disabled()
    src = state["src"]
    open_queue(page, src, "settings")
    for tab in ("send", "receive"):
        expect(tid(page, f"tab-{tab}")).to_be_disabled()
    expect(tid(page, "settings-fields")).to_have_attribute("disabled", "")
    expect(tid(page, "edit-delay_seconds")).to_be_disabled()
    expect(tid(page, "edit-dlq")).to_be_disabled()
    expect(tid(page, "settings-save")).to_be_disabled()
    expect(tid(page, "settings-form")).to_contain_text("needs the manage_queues permission")
    for control in ("purge", "delete-queue"):
        expect(tid(page, control)).to_be_disabled()
    # Pausing and the audit trail take manage_queues: disabled, saying so; the API agrees.
    expect(tid(page, "pause-delivery")).to_be_disabled()
    expect(tid(page, "pause-delivery").locator("xpath=..")).to_contain_text("needs the manage_queues permission")
    expect(tid(page, "audit-unavailable")).to_contain_text("needs the manage_queues permission")
    expect(tid(page, "audit-entry")).to_have_count(0)
    for path in (f"/v1/queues/{src}/pause", f"/v1/queues/{src}/subscription-audit"):
        status, _, answer = http("POST" if path.endswith("pause") else "GET", path, key=VIEWER)
        assert status == 403 and answer["error"]["code"] == "permission_denied", f"{path}: {status} {answer!r}"
    shot(page, "read-only-settings")
    goto(page, f"#/queues/{src}/send")
    expect(tid(page, "tab-unavailable")).to_contain_text("send")
    expect(tid(page, "import-file")).to_have_count(0)
    open_queue(page, src, "subscriptions")
    expect(tid(page, "subscription-new")).to_be_disabled()
    expect(tid(page, "tab-panel")).to_contain_text("needs the manage_queues, receive and delete permissions")
    if BACKEND == "embedded":
        open_queue(page, queue_by_name("push-demo")["id"], "subscriptions")
        for control in ("subscription-pause", "subscription-rotate", "subscription-delete"):
            expect(tid(page, control)).to_be_disabled()
    # The API agrees: the same change is refused to this key.
    status, _, answer = http("PATCH", f"/v1/queues/{src}", {"settings": {"delay_seconds": 1}}, key=VIEWER)
    assert status == 403 and answer["error"]["code"] == "permission_denied", f"{status} {answer!r}"
    shot(page, "read-only-subscriptions")
    if BACKEND == "embedded":
        # Moving takes manage_queues: both move controls disabled, saying so; the API agrees.
        open_queue(page, src, "messages")
        expect(tid(page, "messages-table")).to_be_visible()
        for control in ("move-selected", "move-all"):
            expect(tid(page, control)).to_be_disabled()
        expect(tid(page, "selection-bar")).to_contain_text("needs the manage_queues permission")
        expect(tid(page, "export-all")).to_be_enabled()
        status, _, answer = http("POST", f"/v1/queues/{src}/messages/move",
                                 {"destination_queue_id": state["work"], "messages": [{"message_id": "x", "position": "1"}]}, key=VIEWER)
        assert status == 403 and answer["error"]["code"] == "permission_denied", f"move: {status} {answer!r}"
