#!/usr/bin/env python3
"""Drives the sqs-gateway web console (/console) in headless Chromium against one running gateway.

Why: the console is a browser client of the basaltic API; only a real browser shows that it signs
in, sends, imports, inspects, finds, exports and moves messages, receives, charts, edits settings,
manages push subscriptions, pauses delivery, reads the audit trail, purges and redrives through
that API, that it never runs a message's text as HTML, and that it works with the keyboard and on
a narrow screen. run.sh starts the gateway (embedded or sqs over LocalStack)
and runs this once per backend with:

  CONSOLE_URL            the gateway, e.g. http://127.0.0.1:40123
  CONSOLE_BACKEND        embedded | sqs
  CONSOLE_ADMIN_KEY      a basaltic key with '*=*'
  CONSOLE_LIMITED_KEY    a key with everything but inspect
  CONSOLE_VIEWER_KEY     a read-only key ('*=inspect,read_metrics')
  CONSOLE_PROXY_CONTROL  (sqs) the control port of proxy.py in front of LocalStack
  CONSOLE_SCREENSHOTS    where screenshots go (target/console-screenshots)
  CHROMIUM               the browser (/usr/bin/chromium)

The tests live in suite/, one module a topic; this runs them in order (later tests use what
earlier ones made). Each test prints one PASS or FAIL line; the script exits non-zero if any
failed. CONSOLE_ONLY=signin,create_queues,metrics runs those alone (with what they need first).
"""
import os
import re
import sys

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from suite.helpers import ADMIN, BACKEND, CHROMIUM, LIMITED, SHOTS, VIEWER, http, results, run_test, state  # noqa: E402
from suite.signin import t_headers, t_page_logic, t_signin_refused, t_signin, t_expired_key  # noqa: E402
from suite.queues import t_create_queues, t_queue_list_filter_sort, t_purge, t_delete_queue  # noqa: E402
from suite.messages import (  # noqa: E402
    t_send_form, t_send_form_by_type, t_inspect, t_inspect_unsupported, t_paging, t_xss, t_receive, t_import)
from suite.find import (  # noqa: E402
    t_find, t_export, t_move, t_find_keyboard_narrow, t_keep_searching, t_export_stop, t_export_cap, t_move_stop)
from suite.metrics import t_metrics, t_charts, t_metrics_gap, t_dead_letter_and_redrive  # noqa: E402
from suite.subscriptions import t_subscriptions, t_subscriptions_manage  # noqa: E402
from suite.settings import t_settings_edit, t_notices_and_plurals  # noqa: E402
from suite.pause import t_pause_delivery, t_audit_trail, t_settings_remove_dlq  # noqa: E402
from suite.access import t_keyboard, t_narrow, t_limited_key, t_read_only_key  # noqa: E402

TESTS = [
    ("headers", t_headers, None),
    ("page_logic", t_page_logic, None),
    ("signin_refused", t_signin_refused, None),
    ("signin", t_signin, None),
    ("create_queues", t_create_queues, None),
    ("queue_list_filter_sort", t_queue_list_filter_sort, None),
    ("send_form", t_send_form, None),
    ("send_form_by_type", t_send_form_by_type, None),
    ("inspect", t_inspect, ["embedded"]),
    ("inspect_unsupported", t_inspect_unsupported, ["sqs"]),
    ("paging", t_paging, ["embedded"]),
    ("xss", t_xss, None),
    ("receive", t_receive, None),
    ("import", t_import, None),
    ("find", t_find, ["embedded"]),
    ("export", t_export, ["embedded"]),
    ("move", t_move, ["embedded"]),
    ("find_keyboard_narrow", t_find_keyboard_narrow, ["embedded"]),
    ("keep_searching", t_keep_searching, ["embedded"]),
    ("export_stop", t_export_stop, ["embedded"]),
    ("export_cap", t_export_cap, None),
    ("move_stop", t_move_stop, ["embedded"]),
    ("metrics", t_metrics, None),
    ("charts", t_charts, None),
    ("metrics_gap", t_metrics_gap, ["sqs"]),
    ("subscriptions", t_subscriptions, ["embedded"]),
    ("subscriptions_manage", t_subscriptions_manage, None),
    ("dead_letter_and_redrive", t_dead_letter_and_redrive, None),
    ("settings_edit", t_settings_edit, None),
    ("notices_and_plurals", t_notices_and_plurals, None),
    ("pause_delivery", t_pause_delivery, None),
    ("audit_trail", t_audit_trail, None),
    ("settings_remove_dlq", t_settings_remove_dlq, None),
    ("purge", t_purge, None),
    ("delete_queue", t_delete_queue, None),
    ("keyboard", t_keyboard, None),
    ("narrow", t_narrow, None),
    ("limited_key", t_limited_key, None),
    ("read_only_key", t_read_only_key, None),
    ("expired_key", t_expired_key, None),
]


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
        page.on("console", lambda m: console_errors.append(m.text) if m.type in ("error", "warning") or ADMIN in m.text or LIMITED in m.text or (VIEWER and VIEWER in m.text) else None)
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        # CONSOLE_ONLY=signin,create_queues,metrics runs those alone (with what they need first).
        chosen = [n for n in os.environ.get("CONSOLE_ONLY", "").split(",") if n]
        for name, fn, only in TESTS:
            if not chosen or name in chosen:
                run_test(page, name, fn, only)

        def t_no_page_errors(_page):
            # A CSP violation or a script error shows here; the browser also reports failed fetches:
            # the refusals the tests provoke (400 out of range, 401 a wrong key, 403 an export a queue
            # refuses, 404, 501 unsupported).
            bad = [e for e in console_errors if not re.search(r"status of (400|401|403|404|501)", e)]
            assert not page_errors, f"script errors: {page_errors[:3]}"
            assert not bad, f"console errors: {bad[:3]}"
        run_test(page, "no_page_errors", t_no_page_errors)
        browser.close()
    # Leave nothing behind in LocalStack (best effort).
    for key in ("work", "src", "dlq", "page", "fifo", "import", "hooks", "pause", "find", "dest", "reimport", "export_off", "big", "stop_dest"):
        if key in state:
            http("DELETE", f"/v1/queues/{state[key]}")
    passed = sum(1 for _, good in results if good)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
