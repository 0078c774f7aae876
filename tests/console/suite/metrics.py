"""The Metrics tab's charts (gaps, ticks, rates, the readout, the time zone), and dead-lettering
with a redrive."""

import json
import os
import re
import time

from playwright.sync_api import expect

from .helpers import (
    ADMIN,
    BACKEND,
    SAMPLER_WAIT,
    UPDATE_DOCS,
    counts,
    gap_between,
    goto,
    ok,
    open_queue,
    proxy,
    row,
    send_api,
    shot,
    sign_in,
    state,
    tid,
    wait_until,
)


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


def t_charts(page):
    """Ticks on both axes, rates per second, a readout by pointer and by key, and the time zone."""
    # The rules on known input: value ticks, and counts per interval shown per second.
    got = page.evaluate("""async () => {
      const { valueTicks, chart } = await import('/console/js/charts.js');
      const t0 = Date.UTC(2026, 0, 1);
      const samples = [0, 10, 20, 30].map((s, i) => ({ at: new Date(t0 + s * 1000).toISOString(), visible: 1, in_flight: 0, delayed: 0, sends: 50 * i }));
      const figure = chart('sends', 'Sends (/s)', samples, 10000, [], true);
      return {
        ticks: [valueTicks(12).ticks, valueTicks(0.35).ticks, valueTicks(0).ticks],
        latest: figure.querySelector('[data-testid="chart-latest-sends"]').textContent,
        values: [...figure.querySelectorAll('[data-tick="value"]')].map((t) => t.textContent),
        times: figure.querySelectorAll('[data-tick="time"]').length,
      };
    }""")
    assert got["ticks"] == [[0, 5, 10, 15], [0, 0.1, 0.2, 0.3, 0.4], [0, 1]], got["ticks"]
    assert got["latest"] == "15/s", f"150 sends in a 10 s interval: {got}"
    assert got["values"] == ["0/s", "5/s", "10/s", "15/s"], got
    assert got["times"] == 4, f"a tick every 10 s over 30 s: {got}"
    queue = state["page"]
    open_queue(page, queue, "metrics")
    expect(tid(page, "metrics-charts").locator("svg")).to_have_count(6)
    for key in ("visible", "sends"):
        svg = tid(page, f"chart-svg-{key}")
        assert svg.locator('[data-tick="value"]').count() >= 2, f"{key}: value ticks"
        assert svg.locator('[data-tick="time"]').count() >= 2, f"{key}: time ticks"
    expect(tid(page, "chart-sends")).to_contain_text("Sends (/s)")
    expect(tid(page, "chart-latest-sends")).to_have_text(re.compile(r"/s$"))
    expect(tid(page, "metrics-zone")).to_contain_text("Times in ")
    # The pointer's sample: time and value.
    tid(page, "chart-svg-visible").hover(position={"x": 250, "y": 40})
    expect(tid(page, "chart-readout-visible")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d \S+: (\d+|no sample \(gap\))$"))
    shot(page, "charts-hover")
    if UPDATE_DOCS:
        os.makedirs("docs/images", exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        tid(page, "metrics-charts").scroll_into_view_if_needed()
        tid(page, "chart-svg-visible").hover(position={"x": 250, "y": 40})
        page.screenshot(path="docs/images/console-charts.png")
        page.set_viewport_size({"width": 1280, "height": 900})
    # The keyboard's: End is the latest sample, the arrows move.
    tid(page, "chart-svg-sends").focus()
    page.keyboard.press("End")
    expect(tid(page, "chart-readout-sends")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d \S+: [\d.]+/s$"))
    page.keyboard.press("ArrowLeft")
    expect(tid(page, "chart-readout-sends")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d "))
    # Local time by default, UTC on demand (kept for the tab): in a zone far from UTC the ticks move.
    context = page.context.browser.new_context(viewport={"width": 1280, "height": 900}, timezone_id="Asia/Kolkata")
    try:
        other = context.new_page()
        sign_in(other, ADMIN)
        expect(tid(other, "queue-table")).to_be_visible()
        open_queue(other, queue, "metrics")
        expect(tid(other, "metrics-zone")).to_contain_text(re.compile("Asia/(Kolkata|Calcutta)"))
        expect(tid(other, "metrics-utc")).not_to_be_checked()
        ticks = lambda: tid(other, "chart-svg-visible").locator('[data-tick="time"]').all_text_contents()  # noqa: E731
        expect(tid(other, "chart-svg-visible").locator('[data-tick="time"]').first).to_be_visible()
        local = ticks()
        tid(other, "metrics-utc").check()
        expect(tid(other, "metrics-zone")).to_have_text("Times in UTC.")
        assert other.evaluate("sessionStorage.getItem('sqsgw.console.zone')") == "utc"
        in_utc = ticks()
        assert local and in_utc and set(local) != set(in_utc), f"ticks {local} in Kolkata, {in_utc} in UTC"
        other.reload()
        expect(tid(other, "metrics-utc")).to_be_checked()
        other.locator('[data-testid="chart-svg-visible"]').focus()
        expect(tid(other, "chart-readout-visible")).to_contain_text(" UTC: ")
        shot(other, "charts-utc")
    finally:
        context.close()
