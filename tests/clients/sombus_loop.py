#!/usr/bin/env python3
"""The sombus document's consumer loop, as a separate client program (standard library only).

Gets a token with the client id and secret, then: receive with wait=20; handle each message;
acknowledge the ones handled; release (nack) the ones to retry; repeat, until every expected
message is handled. Checks that each story's messages were handled in the order published and
that a released message came back with receive_count 2.

usage: sombus_loop.py BASE WORKSPACE CLIENT_ID CLIENT_SECRET EXPECTED
"""

import base64
import json
import sys
import urllib.error
import urllib.request


def call(method, url, headers, body=None):
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def main():
    base, workspace, client_id, secret, expected = sys.argv[1:6]
    expected = int(expected)
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    status, answer = call(
        "POST",
        f"{base}/v1/oauth/token",
        {"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
        "grant_type=client_credentials",
    )
    assert status == 200, (status, answer)
    token = answer["access_token"]
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    pull = f"{base}/v1/tenants/{workspace}/consumers/{client_id}"

    handled, order, retried, redelivered = set(), {}, set(), set()
    for _ in range(100):
        if len(handled) == expected:
            break
        status, answer = call("GET", f"{pull}/messages?wait=20", auth)
        assert status == 200, (status, answer)
        acks, nacks, held_back = [], [], set()
        for message in answer["messages"]:
            envelope = message["envelope"]
            message_id = envelope["message_id"]
            story = message["correlation_id"]
            # A batch may hold several messages of one story, in order: once one is released,
            # the ones after it are released too, so the story keeps its order.
            if story in held_back:
                nacks.append(message["receipt_handle"])
                continue
            if envelope["payload"].get("retry") and message["receive_count"] == 1:
                nacks.append(message["receipt_handle"])
                retried.add(message_id)
                held_back.add(story)
                continue
            if message["receive_count"] > 1:
                redelivered.add(message_id)
            if message_id not in handled:  # at least once: deduplicate on message_id
                handled.add(message_id)
                order.setdefault(message["correlation_id"], []).append(envelope["payload"]["n"])
            acks.append(message["receipt_handle"])
        if acks:
            status, answer = call("POST", f"{pull}/ack", auth, json.dumps({"receipt_handles": acks}))
            assert status == 200 and not answer["failed"], (status, answer)
        if nacks:
            body = json.dumps({"receipt_handles": nacks, "delay_seconds": 0})
            status, answer = call("POST", f"{pull}/nack", auth, body)
            assert status == 200 and not answer["failed"], (status, answer)
    assert len(handled) == expected, f"handled {len(handled)} of {expected}"
    for story, numbers in order.items():
        assert numbers == sorted(numbers), f"story {story} out of order: {numbers}"
    assert retried and retried <= redelivered, "a released message comes back"
    print(f"sombus loop: {len(handled)} handled in order over {len(order)} stories, {len(retried)} released and redelivered")


if __name__ == "__main__":
    main()
