"""Signing in and out, the console's headers and its page rules on known input."""

import uuid

from playwright.sync_api import expect

from .helpers import (
    ADMIN,
    CSP,
    URL,
    alert,
    goto,
    http,
    shot,
    tid,
)


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


def t_expired_key(page):
    goto(page, "#/queues")
    page.evaluate("sessionStorage.setItem('sqsgw.console.key', 'sqsgw_revoked_key')")
    page.reload()
    expect(tid(page, "signin-form")).to_be_visible()
    expect(alert(page)).to_contain_text("unauthenticated: ")
    assert page.evaluate("sessionStorage.length") == 0, "a refused key is forgotten"
