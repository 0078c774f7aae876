#!/usr/bin/env python3
"""Real-client SQS scenario, driven by boto3 against any SQS-compatible endpoint.

The same script serves both wire protocols: boto3 speaks AWS JSON 1.0 with its
bundled model, and the older Query/XML protocol when AWS_DATA_PATH points at a
directory holding the old Query SQS model (tests/clients/run.sh prepares one).
Nothing here picks the protocol; --expect-protocol only asserts which one the
client actually used (default: "query" if AWS_DATA_PATH is set, else "json").

Each check is a small function. It prints "PASS name" or "FAIL name: reason";
the script exits 1 if any check failed. Receipt handles never reach the output.

Where the expected behaviour is AWS's documented one and an emulator may
differ, the check accepts AWS's behaviour (and, where noted, a documented
range of behaviours), never an emulator quirk.

Usage: scenario.py [--endpoint-url URL] [--region us-east-1] [--expect-protocol json|query]
Environment: SQS_ENDPOINT (default http://127.0.0.1:4566), AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY (default test/test), AWS_DATA_PATH (optional).
"""

import argparse
import hashlib
import json
import os
import re
import struct
import sys
import time
import traceback
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

# --------------------------------------------------------------------------- helpers


class CheckFailed(Exception):
    pass


def expect(cond, reason):
    if not cond:
        raise CheckFailed(reason)


def md5_hex(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.md5(data).hexdigest()


def md5_of_message_attributes(attrs):
    """MD5OfMessageAttributes as AWS documents it: attributes sorted by name; for
    each, length-prefixed (4-byte big-endian) name, data type, then one transport
    byte (1 = String/Number, 2 = Binary) and the length-prefixed value."""
    buf = b""
    for name in sorted(attrs):
        attr = attrs[name]
        dtype = attr["DataType"]

        def enc(b):
            return struct.pack(">I", len(b)) + b

        buf += enc(name.encode("utf-8")) + enc(dtype.encode("utf-8"))
        if dtype.split(".", 1)[0] == "Binary":
            value = attr["BinaryValue"]
            if isinstance(value, str):
                value = value.encode("utf-8")
            buf += b"\x02" + enc(value)
        else:
            buf += b"\x01" + enc(attr["StringValue"].encode("utf-8"))
    return hashlib.md5(buf).hexdigest()


def error_code(exc):
    return exc.response.get("Error", {}).get("Code", "")


NONEXISTENT_CODES = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
INVALID_PARAM_CODES = {"InvalidParameterValue", "InvalidParameterValueException", "ReadCountOutOfRange"}


class Ctx:
    """State shared by the checks (one scenario run)."""

    def __init__(self, client, expected_protocol, target):
        self.client = client
        self.expected_protocol = expected_protocol
        self.target = target  # "localstack" tolerates (and reports) its known deviations; "aws" is strict
        self.deviations = []  # (check name, text) tolerated in this run
        self.current = ""
        self.filtered = False  # -k given: not every operation runs
        self.run = uuid.uuid4().hex[:10]
        self.prefix = f"sgwc-{self.run}-"
        self.queues = {}  # logical name -> url
        self.wire = []  # (operation, request content-type, x-amz-target, body head, status, response content-type)
        self.receipts = set()  # every receipt handle seen, for redaction
        self.state = {}
        op = client.meta.service_model.operation_model("ReceiveMessage")
        self.system_attr_param = (
            "MessageSystemAttributeNames" if "MessageSystemAttributeNames" in op.input_shape.members else "AttributeNames"
        )

    def name(self, logical, fifo=False):
        return self.prefix + logical + (".fifo" if fifo else "")

    def redact(self, text):
        text = str(text)
        for handle in sorted(self.receipts, key=len, reverse=True):
            if handle:
                text = text.replace(handle, "<receipt-handle>")
        return text

    def remember(self, messages):
        for m in messages:
            self.receipts.add(m.get("ReceiptHandle", ""))
        return messages

    def receive(self, url, max_n=10, wait=1, visibility=None, **extra):
        kwargs = dict(
            QueueUrl=url,
            MaxNumberOfMessages=max_n,
            WaitTimeSeconds=wait,
            MessageAttributeNames=["All"],
        )
        kwargs[self.system_attr_param] = ["All"]
        if visibility is not None:
            kwargs["VisibilityTimeout"] = visibility
        kwargs.update(extra)
        resp = self.client.receive_message(**kwargs)
        return self.remember(resp.get("Messages", []))

    def receive_until(self, url, count, timeout=15, visibility=30):
        """Receive until `count` distinct messages arrived (standard queues may hand
        out fewer than asked per call) or the timeout passes."""
        got = {}
        deadline = time.time() + timeout
        while len(got) < count and time.time() < deadline:
            for m in self.receive(url, max_n=10, wait=2, visibility=visibility):
                got[m["MessageId"]] = m
        return list(got.values())

    def create_queue(self, logical, fifo=False, attributes=None):
        attrs = dict(attributes or {})
        if fifo:
            attrs["FifoQueue"] = "true"
        url = self.client.create_queue(QueueName=self.name(logical, fifo), Attributes=attrs)["QueueUrl"]
        self.queues[logical] = url
        return url

    def deviation(self, aws_ok, known_deviation, what):
        """AWS's documented behaviour passes. A *known* LocalStack deviation passes
        only when the target is LocalStack, and is printed and counted; anything
        else fails."""
        if aws_ok:
            return
        if known_deviation and self.target == "localstack":
            self.deviations.append((self.current, what))
            print(f"DEVIATION {self.current}: {what}")
            return
        raise CheckFailed(what)

    def need(self, *keys):
        missing = [k for k in keys if k not in self.state]
        if missing:
            raise CheckFailed("prerequisite missing (an earlier check failed): " + ", ".join(missing))
        return [self.state[k] for k in keys]


def eventually(fn, timeout=10, interval=0.5):
    """For AWS's eventually consistent list calls: fn() until truthy or timeout; last value."""
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value or time.time() > deadline:
            return value
        time.sleep(interval)


def check_message_md5s(msg, body, attrs, what):
    expect(msg.get("MD5OfBody") == md5_hex(body), f"{what}: MD5OfBody {msg.get('MD5OfBody')} != md5(body)")
    if attrs:
        want = md5_of_message_attributes(attrs)
        expect(
            msg.get("MD5OfMessageAttributes") == want,
            f"{what}: MD5OfMessageAttributes {msg.get('MD5OfMessageAttributes')} != {want}",
        )


# --------------------------------------------------------------------------- checks: protocol

WIRE_OPERATIONS = {
    "CreateQueue", "GetQueueUrl", "SendMessage", "ReceiveMessage", "ChangeMessageVisibility", "DeleteMessage",
    "SendMessageBatch", "ChangeMessageVisibilityBatch", "DeleteMessageBatch", "GetQueueAttributes",
    "SetQueueAttributes", "ListQueues", "PurgeQueue", "TagQueue", "ListQueueTags", "UntagQueue",
    "ListDeadLetterSourceQueues", "DeleteQueue",
}


def check_model_protocol(ctx):
    proto = ctx.client.meta.service_model.protocol
    expect(proto == ctx.expected_protocol, f"client model protocol is {proto!r}, expected {ctx.expected_protocol!r}")


def check_wire_protocol(ctx):
    """Every request and every 2xx response so far used the expected wire format."""
    expect(ctx.wire, "no request recorded")
    if not ctx.filtered:
        missing = WIRE_OPERATIONS - {w[0] for w in ctx.wire}
        expect(not missing, f"operations never sent: {sorted(missing)}")
    for op, req_ct, target, body_head, status, resp_ct in ctx.wire:
        if ctx.expected_protocol == "query":
            expect(
                req_ct.startswith("application/x-www-form-urlencoded"),
                f"{op}: request Content-Type {req_ct!r} is not form-encoded",
            )
            expect(f"Action={op}" in body_head, f"{op}: form body lacks Action={op}")
            expect(not target, f"{op}: query request carries X-Amz-Target {target!r}")
            expect("xml" in resp_ct, f"{op}: HTTP {status} response Content-Type {resp_ct!r} is not XML")
        else:
            expect(req_ct.startswith("application/x-amz-json-1.0"), f"{op}: request Content-Type {req_ct!r}")
            expect(target == f"AmazonSQS.{op}", f"{op}: X-Amz-Target {target!r}")
            expect("json" in resp_ct, f"{op}: HTTP {status} response Content-Type {resp_ct!r} is not JSON")


# --------------------------------------------------------------------------- checks: standard queue

STD_ATTRS = {
    "color": {"DataType": "String", "StringValue": "blue \u00e9\u00e8 \u2603"},
    "count": {"DataType": "Number", "StringValue": "42"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xffbin"},
}


def check_create_queue(ctx):
    url = ctx.create_queue("std")
    expect(url.rstrip("/").endswith("/" + ctx.name("std")), f"queue URL {url} does not end with the queue name")
    ctx.state["std"] = url


def check_get_queue_url(ctx):
    (url,) = ctx.need("std")
    got = ctx.client.get_queue_url(QueueName=ctx.name("std"))["QueueUrl"]
    expect(got == url, f"GetQueueUrl returned {got}, CreateQueue returned {url}")


def check_create_queue_idempotent(ctx):
    (url,) = ctx.need("std")
    again = ctx.client.create_queue(QueueName=ctx.name("std"))["QueueUrl"]
    expect(again == url, f"second CreateQueue with same name/attributes returned {again}")


def check_send_message(ctx):
    (url,) = ctx.need("std")
    body = f"hello {ctx.run} \u00fcnic\u00f6de"
    resp = ctx.client.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=STD_ATTRS)
    expect(resp.get("MessageId"), "no MessageId")
    expect(resp.get("MD5OfMessageBody") == md5_hex(body), f"MD5OfMessageBody {resp.get('MD5OfMessageBody')} != md5(body)")
    want = md5_of_message_attributes(STD_ATTRS)
    expect(
        resp.get("MD5OfMessageAttributes") == want,
        f"MD5OfMessageAttributes {resp.get('MD5OfMessageAttributes')} != {want}",
    )
    expect("SequenceNumber" not in resp, "standard queue returned a SequenceNumber")
    ctx.state["std_msg"] = (resp["MessageId"], body)


def check_receive_message(ctx):
    url, (mid, body) = ctx.need("std", "std_msg")
    t0 = time.time()
    msgs = ctx.receive(url, max_n=10, wait=5, visibility=30)
    expect(len(msgs) == 1, f"expected 1 message, got {len(msgs)} after {time.time() - t0:.1f}s")
    m = msgs[0]
    expect(m["MessageId"] == mid, "MessageId differs from SendMessage's")
    expect(m["Body"] == body, f"body {m['Body']!r} != {body!r}")
    check_message_md5s(m, body, STD_ATTRS, "received")
    got_attrs = m.get("MessageAttributes", {})
    expect(set(got_attrs) == set(STD_ATTRS), f"message attribute names {sorted(got_attrs)}")
    for name, want in STD_ATTRS.items():
        got = got_attrs[name]
        expect(got["DataType"] == want["DataType"], f"{name}: DataType {got['DataType']}")
        if "BinaryValue" in want:
            expect(got.get("BinaryValue") == want["BinaryValue"], f"{name}: BinaryValue {got.get('BinaryValue')!r}")
        else:
            expect(got.get("StringValue") == want["StringValue"], f"{name}: StringValue {got.get('StringValue')!r}")
    sa = m.get("Attributes", {})
    for key in ("SenderId", "SentTimestamp", "ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount"):
        expect(key in sa, f"system attribute {key} missing (got {sorted(sa)})")
    expect(sa["ApproximateReceiveCount"] == "1", f"ApproximateReceiveCount {sa['ApproximateReceiveCount']!r} != '1'")
    sent = int(sa["SentTimestamp"])
    expect(abs(sent / 1000 - time.time()) < 300, f"SentTimestamp {sent} is not epoch milliseconds near now")
    expect(int(sa["ApproximateFirstReceiveTimestamp"]) >= sent, "ApproximateFirstReceiveTimestamp < SentTimestamp")
    ctx.state["std_rh1"] = m["ReceiptHandle"]


def check_in_flight_hidden(ctx):
    (url, _) = ctx.need("std", "std_rh1")
    msgs = ctx.receive(url, max_n=10, wait=1)
    expect(not msgs, f"message under a 30s visibility timeout was delivered again ({len(msgs)} messages)")


def check_change_visibility_and_redeliver(ctx):
    url, rh1, (mid, body) = ctx.need("std", "std_rh1", "std_msg")
    ctx.client.change_message_visibility(QueueUrl=url, ReceiptHandle=rh1, VisibilityTimeout=0)
    msgs = ctx.receive(url, max_n=10, wait=5, visibility=30)
    expect(len(msgs) == 1, f"expected the message back after ChangeMessageVisibility(0), got {len(msgs)}")
    m = msgs[0]
    expect(m["MessageId"] == mid and m["Body"] == body, "a different message came back")
    check_message_md5s(m, body, STD_ATTRS, "redelivered")
    count = m.get("Attributes", {}).get("ApproximateReceiveCount")
    expect(count == "2", f"ApproximateReceiveCount {count!r} != '2'")
    expect(m["ReceiptHandle"] != rh1, "second receive returned the same receipt handle as the first")
    ctx.state["std_rh2"] = m["ReceiptHandle"]


def check_delete_message(ctx):
    url, rh2 = ctx.need("std", "std_rh2")
    ctx.client.delete_message(QueueUrl=url, ReceiptHandle=rh2)
    # AWS: the visibility timeout left on the message would hide it anyway, so make
    # sure it's gone and not just hidden: it must not come back either way.
    msgs = ctx.receive(url, max_n=10, wait=1)
    expect(not msgs, f"{len(msgs)} message(s) still delivered after DeleteMessage")


def check_long_poll_waits(ctx):
    """WaitTimeSeconds on an empty queue holds the call for about that long, then answers empty."""
    (url,) = ctx.need("std")
    t0 = time.time()
    msgs = ctx.receive(url, max_n=10, wait=2)
    took = time.time() - t0
    expect(not msgs, f"{len(msgs)} message(s) from a queue that should be empty")
    expect(took >= 1.8, f"long poll of WaitTimeSeconds=2 on an empty queue returned after {took:.2f}s")
    expect(took < 10, f"long poll of WaitTimeSeconds=2 took {took:.1f}s")


def check_send_message_batch(ctx):
    (url,) = ctx.need("std")
    entries = []
    for i in range(3):
        entry = {"Id": f"e{i}", "MessageBody": f"batch {i} {ctx.run}"}
        if i == 1:
            entry["MessageAttributes"] = {"n": {"DataType": "Number", "StringValue": str(i)}}
        if i == 2:
            entry["DelaySeconds"] = 0
        entries.append(entry)
    resp = ctx.client.send_message_batch(QueueUrl=url, Entries=entries)
    ok = resp.get("Successful", [])
    failed = resp.get("Failed", [])
    expect(not failed, f"Failed entries: {failed}")
    expect(sorted(e["Id"] for e in ok) == ["e0", "e1", "e2"], f"Successful ids {[e['Id'] for e in ok]}")
    by_id = {e["Id"]: e for e in entries}
    for r in ok:
        e = by_id[r["Id"]]
        expect(r.get("MessageId"), f"{r['Id']}: no MessageId")
        expect(r.get("MD5OfMessageBody") == md5_hex(e["MessageBody"]), f"{r['Id']}: MD5OfMessageBody mismatch")
        if "MessageAttributes" in e:
            want = md5_of_message_attributes(e["MessageAttributes"])
            expect(r.get("MD5OfMessageAttributes") == want, f"{r['Id']}: MD5OfMessageAttributes mismatch")
    ctx.state["batch"] = {r["MessageId"]: by_id[r["Id"]] for r in ok}


def check_receive_batch(ctx):
    url, batch = ctx.need("std", "batch")
    msgs = ctx.receive_until(url, 3, timeout=15, visibility=30)
    expect(sorted(m["MessageId"] for m in msgs) == sorted(batch), f"received {len(msgs)} of the 3 batch messages")
    for m in msgs:
        e = batch[m["MessageId"]]
        expect(m["Body"] == e["MessageBody"], f"body mismatch for {e['Id']}")
        check_message_md5s(m, e["MessageBody"], e.get("MessageAttributes"), e["Id"])
    ctx.state["batch_msgs"] = msgs


BOGUS_HANDLE = "not-a-real-receipt-handle"


def check_bogus_batch_entry(ctx, f):
    # AWS reports a malformed receipt handle per entry: Code ReceiptHandleIsInvalid,
    # SenderFault true (the caller's fault), inside a 200 response.
    expect(f.get("Code") == "ReceiptHandleIsInvalid", f"bogus entry Code {f.get('Code')!r}")
    expect(f.get("Message"), "bogus entry has no Message")
    ctx.deviation(
        f.get("SenderFault") is True,
        f.get("SenderFault") is False,
        "batch entry failed with ReceiptHandleIsInvalid reports SenderFault false (AWS: true)",
    )


def check_change_visibility_batch(ctx):
    url, msgs = ctx.need("std", "batch_msgs")
    entries = [{"Id": f"v{i}", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 60} for i, m in enumerate(msgs)]
    entries.append({"Id": "bogus", "ReceiptHandle": BOGUS_HANDLE, "VisibilityTimeout": 60})
    resp = ctx.client.change_message_visibility_batch(QueueUrl=url, Entries=entries)
    ok = sorted(e["Id"] for e in resp.get("Successful", []))
    failed = resp.get("Failed", [])
    expect(ok == sorted(f"v{i}" for i in range(len(msgs))), f"Successful ids {ok}")
    expect([f["Id"] for f in failed] == ["bogus"], f"Failed ids {[f['Id'] for f in failed]}")
    check_bogus_batch_entry(ctx, failed[0])


def check_delete_message_batch(ctx):
    url, msgs = ctx.need("std", "batch_msgs")
    entries = [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)]
    entries.append({"Id": "bogus", "ReceiptHandle": BOGUS_HANDLE})
    resp = ctx.client.delete_message_batch(QueueUrl=url, Entries=entries)
    ok = sorted(e["Id"] for e in resp.get("Successful", []))
    failed = resp.get("Failed", [])
    expect(ok == sorted(f"d{i}" for i in range(len(msgs))), f"Successful ids {ok}")
    expect([f["Id"] for f in failed] == ["bogus"], f"Failed ids {[f['Id'] for f in failed]}")
    check_bogus_batch_entry(ctx, failed[0])
    left = ctx.receive(url, max_n=10, wait=1)
    expect(not left, f"{len(left)} message(s) delivered after DeleteMessageBatch")


def check_batch_id_rules(ctx):
    """AWS rejects a batch whose entries repeat an Id (BatchEntryIdsNotDistinct)."""
    (url,) = ctx.need("std")
    try:
        ctx.client.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": "same", "MessageBody": "a"}, {"Id": "same", "MessageBody": "b"}],
        )
    except ClientError as e:
        code = error_code(e)
        expect(
            code in {"AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "BatchEntryIdsNotDistinct"},
            f"error code {code!r}",
        )
        return
    raise CheckFailed("duplicate batch entry Ids were accepted")


def check_get_queue_attributes(ctx):
    (url,) = ctx.need("std")
    attrs = ctx.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    for key in (
        "QueueArn",
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
        "CreatedTimestamp",
        "LastModifiedTimestamp",
        "VisibilityTimeout",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "DelaySeconds",
        "ReceiveMessageWaitTimeSeconds",
    ):
        expect(key in attrs, f"attribute {key} missing (got {sorted(attrs)})")
    expect(
        re.fullmatch(r"arn:aws:sqs:us-east-1:\d{12}:" + re.escape(ctx.name("std")), attrs["QueueArn"]),
        f"QueueArn {attrs['QueueArn']!r}",
    )
    expect(attrs["VisibilityTimeout"] == "30", f"default VisibilityTimeout {attrs['VisibilityTimeout']!r}")
    expect(attrs["DelaySeconds"] == "0", f"default DelaySeconds {attrs['DelaySeconds']!r}")
    expect(attrs["MessageRetentionPeriod"] == "345600", f"default MessageRetentionPeriod {attrs['MessageRetentionPeriod']!r}")
    expect(attrs["MaximumMessageSize"] in ("262144", "1048576"), f"default MaximumMessageSize {attrs['MaximumMessageSize']!r}")
    expect("FifoQueue" not in attrs, "standard queue reports FifoQueue")
    ctx.state["std_arn"] = attrs["QueueArn"]


def check_get_queue_attributes_selected(ctx):
    (url,) = ctx.need("std")
    attrs = ctx.client.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout", "DelaySeconds"])[
        "Attributes"
    ]
    expect(set(attrs) == {"VisibilityTimeout", "DelaySeconds"}, f"asked for 2 attributes, got {sorted(attrs)}")


def check_set_queue_attributes(ctx):
    (url,) = ctx.need("std")
    ctx.client.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "45"})
    attrs = ctx.client.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
    expect(attrs.get("VisibilityTimeout") == "45", f"VisibilityTimeout after set is {attrs.get('VisibilityTimeout')!r}")


def check_list_queues_prefix(ctx):
    (url,) = ctx.need("std")
    other = ctx.create_queue("zz-other")
    # AWS's ListQueues is eventually consistent for new queues: poll a little.
    urls = eventually(
        lambda: [u for u in [ctx.client.list_queues(QueueNamePrefix=ctx.name("std")).get("QueueUrls", [])] if url in u]
    )
    urls = urls[0] if urls else ctx.client.list_queues(QueueNamePrefix=ctx.name("std")).get("QueueUrls", [])
    expect(url in urls, f"{ctx.name('std')} missing from ListQueues(prefix) {urls}")
    expect(other not in urls, "ListQueues(prefix) returned a queue outside the prefix")
    expect(all(u.rsplit("/", 1)[-1].startswith(ctx.name("std")) for u in urls), f"prefix not honoured: {urls}")
    everything = eventually(
        lambda: (lambda got: got if other in got else [])(ctx.client.list_queues(QueueNamePrefix=ctx.prefix).get("QueueUrls", []))
    ) or []
    expect(url in everything and other in everything, "ListQueues(run prefix) misses this run's queues")
    none = ctx.client.list_queues(QueueNamePrefix=ctx.prefix + "no-such-queue").get("QueueUrls", [])
    expect(none == [], f"ListQueues with an unmatched prefix returned {none}")


def check_purge_queue(ctx):
    (url,) = ctx.need("std")
    for i in range(2):
        ctx.client.send_message(QueueUrl=url, MessageBody=f"purge-me {i}")
    ctx.client.purge_queue(QueueUrl=url)
    # AWS: "The message deletion process takes up to 60 seconds." Poll within that.
    deadline = time.time() + 60
    while True:
        attrs = ctx.client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        visible = int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])
        if visible == 0 or time.time() > deadline:
            break
        time.sleep(1)
    expect(visible == 0, f"{visible} message(s) left 60s after PurgeQueue")
    msgs = ctx.receive(url, max_n=10, wait=1)
    expect(not msgs, f"{len(msgs)} message(s) delivered after PurgeQueue")


def check_tags(ctx):
    (url,) = ctx.need("std")
    ctx.client.tag_queue(QueueUrl=url, Tags={"env": "test", "team": "gateway"})
    tags = ctx.client.list_queue_tags(QueueUrl=url).get("Tags", {})
    expect(tags == {"env": "test", "team": "gateway"}, f"tags after TagQueue: {tags}")
    ctx.client.untag_queue(QueueUrl=url, TagKeys=["team"])
    tags = ctx.client.list_queue_tags(QueueUrl=url).get("Tags", {})
    expect(tags == {"env": "test"}, f"tags after UntagQueue: {tags}")


# --------------------------------------------------------------------------- checks: FIFO

def fifo_send(ctx, url, group, body):
    return ctx.client.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)


def check_fifo_create(ctx):
    url = ctx.create_queue("fifo", fifo=True, attributes={"ContentBasedDeduplication": "true"})
    expect(url.endswith(".fifo"), f"FIFO queue URL {url}")
    attrs = ctx.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    expect(attrs.get("FifoQueue") == "true", f"FifoQueue {attrs.get('FifoQueue')!r}")
    expect(attrs.get("ContentBasedDeduplication") == "true", f"ContentBasedDeduplication {attrs.get('ContentBasedDeduplication')!r}")
    ctx.state["fifo"] = url


def check_fifo_requires_group(ctx):
    (url,) = ctx.need("fifo")
    try:
        ctx.client.send_message(QueueUrl=url, MessageBody=f"no group {ctx.run}")
    except ClientError as e:
        code = error_code(e)
        expect(code in {"MissingParameter", "InvalidParameterValue", "MissingRequiredParameterException"}, f"error code {code!r}")
        return
    raise CheckFailed("SendMessage without MessageGroupId to a FIFO queue succeeded")


def check_fifo_send_sequence_numbers(ctx):
    (url,) = ctx.need("fifo")
    a1 = fifo_send(ctx, url, "A", f"A1 {ctx.run}")
    a2 = fifo_send(ctx, url, "A", f"A2 {ctx.run}")
    ctx.state["fifo_a"] = [(a1["MessageId"], f"A1 {ctx.run}"), (a2["MessageId"], f"A2 {ctx.run}")]
    for name, r in (("A1", a1), ("A2", a2)):
        seq = r.get("SequenceNumber")
        expect(isinstance(seq, str) and re.fullmatch(r"[0-9]+", seq), f"{name}: SequenceNumber {seq!r} is not a string of digits")
    # AWS: "SequenceNumber continues to increase for a particular MessageGroupId."
    expect(int(a2["SequenceNumber"]) > int(a1["SequenceNumber"]), "SequenceNumber did not increase within the group")
    expect(a1["MessageId"] != a2["MessageId"], "two different messages got the same MessageId")


def check_fifo_dedup(ctx):
    url, fifo_a = ctx.need("fifo", "fifo_a")
    (a1_id, a1_body) = fifo_a[0]
    again = fifo_send(ctx, url, "A", a1_body)
    expect(again["MessageId"] == a1_id, "resend within the 5-minute deduplication interval got a new MessageId")
    # And with an explicit MessageDeduplicationId overriding content-based dedup:
    first = ctx.client.send_message(
        QueueUrl=url, MessageBody=f"D1 {ctx.run}", MessageGroupId="D", MessageDeduplicationId=f"dd-{ctx.run}"
    )
    second = ctx.client.send_message(
        QueueUrl=url, MessageBody=f"D1 changed {ctx.run}", MessageGroupId="D", MessageDeduplicationId=f"dd-{ctx.run}"
    )
    expect(second["MessageId"] == first["MessageId"], "same MessageDeduplicationId, different body: new MessageId")
    ctx.state["fifo_d"] = (first["MessageId"], f"D1 {ctx.run}")


def check_fifo_order_and_group_hold(ctx):
    """Group A holds A1, A2; group D holds D1. Receive one message at a time.
    AWS: a group's next message is not returned while an earlier one of the same
    group is in flight; other groups keep flowing; within a group, send order."""
    url, fifo_a, fifo_d = ctx.need("fifo", "fifo_a", "fifo_d")
    (a1_id, a1_body), (a2_id, a2_body) = fifo_a
    d1_id = fifo_d[0]
    seen = []
    in_flight = {}
    deadline = time.time() + 20
    # Collect one message per call until A1 and D1 (the two group heads) are both in flight.
    while time.time() < deadline and not ({a1_id, d1_id} <= set(in_flight)):
        msgs = ctx.receive(url, max_n=1, wait=2, visibility=60)
        for m in msgs:
            seen.append(m["MessageId"])
            in_flight[m["MessageId"]] = m
    expect(a2_id not in seen, "A2 was delivered while A1 could still be pending (order within a group broken)")
    expect({a1_id, d1_id} <= set(in_flight), f"group heads not both delivered in 20s (got {len(seen)} message(s))")
    expect(len(seen) == len(set(seen)), "a message was delivered twice while in flight (dedup resend delivered?)")
    a1 = in_flight[a1_id]
    expect(a1["Body"] == a1_body, "A1 body mismatch")
    attrs = a1.get("Attributes", {})
    expect(attrs.get("MessageGroupId") == "A", f"A1 MessageGroupId attribute {attrs.get('MessageGroupId')!r}")
    expect(re.fullmatch(r"[0-9]+", attrs.get("SequenceNumber", "")), f"A1 SequenceNumber attribute {attrs.get('SequenceNumber')!r}")
    expect(attrs.get("MessageDeduplicationId"), "A1 has no MessageDeduplicationId attribute (content-based)")
    # Both groups' heads are in flight: nothing may be delivered now.
    held = ctx.receive(url, max_n=10, wait=2)
    expect(not held, f"{len(held)} message(s) delivered while every group had a message in flight (group not held)")
    # Release group A by deleting A1: A2 (and only A2) comes next.
    ctx.client.delete_message(QueueUrl=url, ReceiptHandle=a1["ReceiptHandle"])
    nxt = ctx.receive(url, max_n=10, wait=3, visibility=60)
    expect([m["MessageId"] for m in nxt] == [a2_id], f"after deleting A1 expected [A2], got {len(nxt)} message(s)")
    expect(nxt[0]["Body"] == a2_body, "A2 body mismatch")
    expect(
        int(nxt[0]["Attributes"]["SequenceNumber"]) > int(attrs["SequenceNumber"]),
        "A2 SequenceNumber not greater than A1's",
    )
    for m in (nxt[0], in_flight[d1_id]):
        ctx.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    # The dedup resends of A1 and D1 must never be delivered.
    rest = ctx.receive(url, max_n=10, wait=1)
    expect(not rest, f"{len(rest)} message(s) left: a deduplicated resend was delivered")


def check_fifo_receive_request_attempt_id(ctx):
    (url,) = ctx.need("fifo")
    ids = []
    for i in range(3):
        ids.append(fifo_send(ctx, url, "R", f"R{i} {ctx.run}")["MessageId"])
    attempt = f"attempt-{ctx.run}"
    # A long poll returns as soon as the group's messages are there; 10 s leaves room for a message
    # an earlier check's poll took to be handed back first.
    first = ctx.receive(url, max_n=10, wait=10, visibility=60, ReceiveRequestAttemptId=attempt)
    expect(first, "first receive with ReceiveRequestAttemptId returned nothing")
    expect(
        [m["MessageId"] for m in first] == ids[: len(first)],
        "first receive did not return group R's messages in send order",
    )
    replay = ctx.receive(url, max_n=10, wait=0, visibility=60, ReceiveRequestAttemptId=attempt)
    same_ids = [m["MessageId"] for m in replay] == [m["MessageId"] for m in first]
    same_handles = [m["ReceiptHandle"] for m in replay] == [m["ReceiptHandle"] for m in first]
    ctx.deviation(
        same_ids and same_handles,
        not replay,  # LocalStack ignores ReceiveRequestAttemptId: the replay finds the group in flight
        f"ReceiveRequestAttemptId replay returned {len(replay)} message(s) (same ids: {same_ids}, same receipt handles: "
        f"{same_handles}); AWS returns the same {len(first)} message(s) and receipt handles",
    )
    other = ctx.receive(url, max_n=10, wait=1, ReceiveRequestAttemptId=f"other-{ctx.run}")
    expect(not other, f"a new attempt id got {len(other)} message(s) while group R was in flight")
    for m in first:
        ctx.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    rest = ctx.receive_until(url, len(ids) - len(first), timeout=10)
    for m in rest:
        ctx.client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    expect(
        [m["MessageId"] for m in first] + sorted(m["MessageId"] for m in rest) == ids[: len(first)] + sorted(ids[len(first):]),
        "messages of group R lost",
    )


# --------------------------------------------------------------------------- checks: dead-letter queue

def check_dead_letter(ctx):
    dlq = ctx.create_queue("dlq")
    dlq_arn = ctx.client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})
    src = ctx.create_queue("src", attributes={"RedrivePolicy": policy})
    got = ctx.client.get_queue_attributes(QueueUrl=src, AttributeNames=["RedrivePolicy"])["Attributes"]
    rp = json.loads(got.get("RedrivePolicy", "{}"))
    expect(rp.get("deadLetterTargetArn") == dlq_arn, f"RedrivePolicy target {rp.get('deadLetterTargetArn')!r}")
    expect(int(rp.get("maxReceiveCount", 0)) == 1, f"RedrivePolicy maxReceiveCount {rp.get('maxReceiveCount')!r}")
    body = f"poison {ctx.run}"
    mid = ctx.client.send_message(QueueUrl=src, MessageBody=body)["MessageId"]
    first = ctx.receive(src, max_n=1, wait=5, visibility=30)
    expect([m["MessageId"] for m in first] == [mid], "source queue did not deliver the message once")
    ctx.client.change_message_visibility(QueueUrl=src, ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
    # Past maxReceiveCount the next receive moves it to the DLQ instead of delivering it.
    again = ctx.receive(src, max_n=10, wait=2)
    expect(not again, "message delivered a second time despite maxReceiveCount 1")
    moved = []
    deadline = time.time() + 20
    while not moved and time.time() < deadline:
        moved = ctx.receive(dlq, max_n=10, wait=2, visibility=30)
    expect([m["MessageId"] for m in moved] == [mid], f"DLQ holds {len(moved)} message(s), expected the poison one")
    expect(moved[0]["Body"] == body, "DLQ message body differs")
    src_arn = ctx.client.get_queue_attributes(QueueUrl=src, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    got_src = moved[0].get("Attributes", {}).get("DeadLetterQueueSourceArn")
    expect(got_src == src_arn, f"DLQ message DeadLetterQueueSourceArn {got_src!r} != {src_arn!r}")
    ctx.client.delete_message(QueueUrl=dlq, ReceiptHandle=moved[0]["ReceiptHandle"])
    ctx.state["dlq"] = (dlq, src)


def check_list_dead_letter_source_queues(ctx):
    ((dlq, src),) = ctx.need("dlq")
    urls = eventually(lambda: ctx.client.list_dead_letter_source_queues(QueueUrl=dlq).get("queueUrls", []))
    expect(urls == [src], f"ListDeadLetterSourceQueues returned {urls}")


def check_message_move_task(ctx):
    """StartMessageMoveTask moves a dead-lettered message back to its source queue;
    ListMessageMoveTasks reports the task; a queue that is no DLQ is refused."""
    if ctx.expected_protocol != "json":
        return  # The old Query model predates message move tasks (botocore added them in 2023).
    ((dlq, src),) = ctx.need("dlq")
    attrs = lambda url: ctx.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    dlq_arn, src_arn = attrs(dlq)["QueueArn"], attrs(src)["QueueArn"]
    body = f"redrive {ctx.run}"
    mid = ctx.client.send_message(QueueUrl=src, MessageBody=body)["MessageId"]
    first = ctx.receive(src, max_n=1, wait=5, visibility=30)
    expect([m["MessageId"] for m in first] == [mid], "source queue did not deliver the message")
    ctx.client.change_message_visibility(QueueUrl=src, ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
    expect(not ctx.receive(src, max_n=10, wait=2), "delivered past maxReceiveCount")
    eventually(lambda: attrs(dlq)["ApproximateNumberOfMessages"] == "1" or None, timeout=20)
    handle = ctx.client.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    expect(handle, "no TaskHandle")
    done = eventually(
        lambda: [
            t
            for t in ctx.client.list_message_move_tasks(SourceArn=dlq_arn, MaxResults=10)["Results"]
            if t["Status"] == "COMPLETED"
        ]
        or None,
        timeout=20,
    )
    expect(done and done[0]["ApproximateNumberOfMessagesMoved"] == 1, f"task {done}")
    expect(done[0]["SourceArn"] == dlq_arn, f"task SourceArn {done[0].get('SourceArn')!r}")
    back = ctx.receive_until(src, 1, timeout=15)
    expect([m["MessageId"] for m in back] == [mid], "the message is not back in its source queue")
    expect(back[0]["Body"] == body, "the redriven body differs")
    ctx.client.delete_message(QueueUrl=src, ReceiptHandle=back[0]["ReceiptHandle"])
    try:
        ctx.client.start_message_move_task(SourceArn=src_arn)
    except ClientError as e:
        expect(error_code(e) == "InvalidParameterValue", f"a queue that is no DLQ: {error_code(e)!r}")
        return
    raise CheckFailed("StartMessageMoveTask on a queue that is no DLQ succeeded")


# --------------------------------------------------------------------------- checks: errors

def check_sender_type(ctx, e):
    # Query/XML error bodies carry <Type>Sender</Type> for client errors. (Over JSON 1.0 boto3 only
    # knows the type from the x-amzn-query-error header, which the brief's accepted codes don't imply.)
    if ctx.expected_protocol == "query":
        expect(e.response["Error"].get("Type") == "Sender", f"error Type {e.response['Error'].get('Type')!r}")


def check_error_missing_queue(ctx):
    try:
        ctx.client.get_queue_url(QueueName=ctx.name("does-not-exist"))
    except ClientError as e:
        code = error_code(e)
        expect(code in NONEXISTENT_CODES, f"error code {code!r}")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        expect(status == 400, f"HTTP status {status}")
        check_sender_type(ctx, e)
        modeled = ctx.client.exceptions.QueueDoesNotExist
        expect(isinstance(e, modeled), f"boto3 raised {type(e).__name__}, not client.exceptions.QueueDoesNotExist")
        return
    raise CheckFailed("GetQueueUrl of a missing queue succeeded")


def check_error_max_messages(ctx):
    (url,) = ctx.need("std")
    try:
        ctx.client.receive_message(QueueUrl=url, MaxNumberOfMessages=11)
    except ClientError as e:
        code = error_code(e)
        expect(code in INVALID_PARAM_CODES, f"error code {code!r}")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        expect(status == 400, f"HTTP status {status}")
        check_sender_type(ctx, e)
        return
    raise CheckFailed("ReceiveMessage with MaxNumberOfMessages=11 succeeded")


def check_error_bad_receipt_handle(ctx):
    (url,) = ctx.need("std")
    try:
        ctx.client.delete_message(QueueUrl=url, ReceiptHandle=BOGUS_HANDLE)
    except ClientError as e:
        code = error_code(e)
        expect(code in {"ReceiptHandleIsInvalid", "InvalidParameterValue"}, f"error code {code!r}")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        expect(status == 400, f"HTTP status {status}")
        etype = e.response["Error"].get("Type")
        ctx.deviation(
            etype == "Sender",
            etype is None and ctx.expected_protocol == "query",
            f"{code} error response has no <Type>Sender</Type> (Query/XML errors carry it on AWS)",
        )
        return
    raise CheckFailed("DeleteMessage with a malformed receipt handle succeeded")


def check_presigned_url(ctx):
    """A URL botocore presigns (SigV4QueryAuth hashes the empty payload, as AWS verifies it) works
    as it is, POSTed with no body, and cannot be turned into another action by a form body."""
    if ctx.expected_protocol != "query":
        return  # A presigned URL carries Query parameters; JSON 1.0 names its action in a header.
    import urllib.error
    import urllib.parse
    import urllib.request

    (url,) = ctx.need("std")
    presigned = ctx.client.generate_presigned_url(
        "get_queue_url", Params={"QueueName": ctx.name("std")}, ExpiresIn=300
    )
    with urllib.request.urlopen(urllib.request.Request(presigned, data=b"", method="POST"), timeout=10) as r:
        body = r.read().decode()
    expect("<QueueUrl>" in body and ctx.name("std") in body, f"presigned GetQueueUrl answered {body[:200]!r}")
    smuggled = urllib.parse.urlencode({"Action": "SendMessage", "QueueUrl": url, "MessageBody": "smuggled"})
    request = urllib.request.Request(
        presigned,
        data=smuggled.encode(),
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    ctx.deviation(
        status == 403,
        status == 200,
        f"a presigned GetQueueUrl URL with a SendMessage form body answered {status} (LocalStack checks no signature)",
    )


# --------------------------------------------------------------------------- checks: teardown

XRAY_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
W3C_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def check_trace_header(ctx):
    """An X-Ray producer's AWSTraceHeader (a message system attribute) reaches a consumer that
    asks for it, outside the message attributes and only when asked; a W3C producer's
    traceparent attribute comes back byte-exact."""
    url = ctx.create_queue("trace")
    sent = ctx.client.send_message(
        QueueUrl=url,
        MessageBody="x-ray",
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": XRAY_HEADER}},
    )
    expect(sent.get("MD5OfMessageSystemAttributes"), "no MD5OfMessageSystemAttributes for a trace header")
    ctx.client.send_message(
        QueueUrl=url,
        MessageBody="w3c",
        MessageAttributes={"traceparent": {"DataType": "String", "StringValue": W3C_PARENT}},
    )
    got = {}
    deadline = time.time() + 15
    while len(got) < 2 and time.time() < deadline:
        resp = ctx.client.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=2,
            VisibilityTimeout=0,
            MessageAttributeNames=["All"],
            **{ctx.system_attr_param: ["AWSTraceHeader"]},
        )
        for m in ctx.remember(resp.get("Messages", [])):
            got[m["Body"]] = m
    expect(set(got) == {"x-ray", "w3c"}, f"received {sorted(got)}")
    xray = got["x-ray"]
    ctx.deviation(
        xray.get("Attributes", {}).get("AWSTraceHeader") == XRAY_HEADER,
        True,
        f"AWSTraceHeader {xray.get('Attributes', {}).get('AWSTraceHeader')!r}",
    )
    expect("AWSTraceHeader" not in xray.get("MessageAttributes", {}), "the trace header is a message attribute")
    w3c = got["w3c"]
    expect("AWSTraceHeader" not in w3c.get("Attributes", {}), "a message sent without a trace header has one")
    expect(
        w3c.get("MessageAttributes", {}).get("traceparent", {}).get("StringValue") == W3C_PARENT,
        "the traceparent attribute is not byte-exact",
    )
    unasked = ctx.client.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, **{ctx.system_attr_param: ["SentTimestamp"]}
    )
    for m in ctx.remember(unasked.get("Messages", [])):
        expect("AWSTraceHeader" not in m.get("Attributes", {}), "AWSTraceHeader answered unasked")


def check_delete_queues(ctx):
    expect(ctx.queues, "no queue to delete")
    for url in list(ctx.queues.values()):
        ctx.client.delete_queue(QueueUrl=url)
    # AWS: "The deletion process takes up to 60 seconds." Poll ListQueues within that.
    deadline = time.time() + 60
    while True:
        left = ctx.client.list_queues(QueueNamePrefix=ctx.prefix).get("QueueUrls", [])
        if not left or time.time() > deadline:
            break
        time.sleep(1)
    expect(not left, f"{len(left)} queue(s) still listed 60s after DeleteQueue")
    ctx.queues.clear()
    try:
        ctx.client.get_queue_url(QueueName=ctx.name("std"))
    except ClientError as e:
        expect(error_code(e) in NONEXISTENT_CODES, f"GetQueueUrl after delete: {error_code(e)!r}")
        return
    raise CheckFailed("GetQueueUrl still finds the deleted queue")


CHECKS = [
    check_model_protocol,
    check_create_queue,
    check_get_queue_url,
    check_create_queue_idempotent,
    check_send_message,
    check_receive_message,
    check_in_flight_hidden,
    check_change_visibility_and_redeliver,
    check_delete_message,
    check_long_poll_waits,
    check_send_message_batch,
    check_receive_batch,
    check_change_visibility_batch,
    check_delete_message_batch,
    check_batch_id_rules,
    check_get_queue_attributes,
    check_get_queue_attributes_selected,
    check_set_queue_attributes,
    check_list_queues_prefix,
    check_purge_queue,
    check_tags,
    check_trace_header,
    check_fifo_create,
    check_fifo_requires_group,
    check_fifo_send_sequence_numbers,
    check_fifo_dedup,
    check_fifo_order_and_group_hold,
    check_fifo_receive_request_attempt_id,
    check_dead_letter,
    check_list_dead_letter_source_queues,
    check_message_move_task,
    check_error_missing_queue,
    check_error_max_messages,
    check_error_bad_receipt_handle,
    check_presigned_url,
    check_delete_queues,
    check_wire_protocol,
]


# --------------------------------------------------------------------------- main

def detect_target(endpoint):
    import urllib.request

    try:
        with urllib.request.urlopen(endpoint.rstrip("/") + "/_localstack/health", timeout=3) as r:
            return "localstack" if b'"services"' in r.read(4096) else "aws"
    except Exception:  # noqa: BLE001 - anything else is held to AWS's behaviour
        return "aws"


def make_client(endpoint, region):
    client = boto3.session.Session().client(
        "sqs",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30, connect_timeout=5),
    )
    return client


def install_wire_recorder(ctx):
    pending = {}

    def before_send(request, **_):
        h = request.headers

        def hv(name):
            v = h.get(name)
            return v.decode() if isinstance(v, bytes) else (v or "")

        body = request.body or b""
        if not isinstance(body, (bytes, bytearray)):
            body = str(body).encode()
        pending["req"] = (hv("Content-Type"), hv("X-Amz-Target"), body[:200].decode("utf-8", "replace"))

    def after_call(http_response, model, **_):
        req = pending.pop("req", ("", "", ""))
        ctx.wire.append(
            (model.name, req[0], req[1], req[2], http_response.status_code, http_response.headers.get("Content-Type", ""))
        )

    ctx.client.meta.events.register("before-send.sqs", before_send)
    ctx.client.meta.events.register("after-call.sqs", after_call)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint-url", default=os.environ.get("SQS_ENDPOINT", "http://127.0.0.1:4566"))
    p.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    p.add_argument("--expect-protocol", choices=["json", "query"], default=None)
    p.add_argument(
        "--target",
        choices=["auto", "localstack", "aws"],
        default=os.environ.get("SQS_TARGET", "auto"),
        help="localstack: tolerate (and report) LocalStack's known deviations from AWS; aws: strict; "
        "auto (default): localstack if the endpoint answers /_localstack/health",
    )
    p.add_argument("-k", dest="only", default=None, help="run only checks whose name contains this")
    args = p.parse_args()

    expected = args.expect_protocol or ("query" if os.environ.get("AWS_DATA_PATH") else "json")
    target = args.target if args.target != "auto" else detect_target(args.endpoint_url)
    client = make_client(args.endpoint_url, args.region)
    ctx = Ctx(client, expected, target)
    install_wire_recorder(ctx)
    print(
        f"# endpoint {args.endpoint_url}  protocol {client.meta.service_model.protocol} (expected {expected})  "
        f"target {target}  boto3 {boto3.__version__}  run {ctx.run}  system-attribute parameter {ctx.system_attr_param}"
    )

    passed = failed = 0
    checks = CHECKS
    if args.only:
        ctx.filtered = True
        checks = [c for c in CHECKS if args.only in c.__name__ or c in (check_model_protocol, check_create_queue, check_delete_queues)]
    try:
        for check in checks:
            name = check.__name__[len("check_"):]
            ctx.current = name
            try:
                check(ctx)
            except CheckFailed as e:
                failed += 1
                print(f"FAIL {name}: {ctx.redact(e)}")
            except ClientError as e:
                failed += 1
                print(f"FAIL {name}: unexpected {error_code(e)} from {e.operation_name}: {ctx.redact(e)}")
            except Exception as e:  # noqa: BLE001 - report and go on
                failed += 1
                here = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]
                where = f" (scenario.py line {here[-1].lineno})" if here else ""
                print(f"FAIL {name}: {type(e).__name__}: {ctx.redact(e)}{where}")
            else:
                passed += 1
                print(f"PASS {name}")
            sys.stdout.flush()
    finally:
        for url in ctx.queues.values():  # queues left by a failed run
            try:
                client.delete_queue(QueueUrl=url)
            except Exception:  # noqa: BLE001
                pass
    if ctx.deviations:
        print(f"# {len(ctx.deviations)} LocalStack deviation(s) from AWS tolerated (target localstack)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
