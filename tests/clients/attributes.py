#!/usr/bin/env python3
"""Receives one message with boto3 (JSON 1.0, or Query with the old model on AWS_DATA_PATH) and
prints what the Rust tests check: its attributes (name -> [type, value]) and whether
MD5OfMessageAttributes is right by AWS's algorithm (scenario.py's independent implementation).

Usage: attributes.py ENDPOINT QUEUE_URL     (credentials and region from the environment)
"""

import base64
import json
import os
import sys

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenario import md5_of_message_attributes  # noqa: E402


def main():
    endpoint, queue_url = sys.argv[1], sys.argv[2]
    client = boto3.session.Session().client(
        "sqs", endpoint_url=endpoint, config=Config(retries={"max_attempts": 1})
    )
    answer = client.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=1,
        WaitTimeSeconds=5,
        VisibilityTimeout=0,
        MessageAttributeNames=["All"],
    )
    messages = answer.get("Messages", [])
    if not messages:
        print(json.dumps({"error": "no message"}))
        return 1
    message = messages[0]
    attributes = message.get("MessageAttributes", {})
    shown = {}
    for name, value in attributes.items():
        if "BinaryValue" in value:
            shown[name] = [value["DataType"], base64.b64encode(value["BinaryValue"]).decode()]
        else:
            shown[name] = [value["DataType"], value["StringValue"]]
    print(
        json.dumps(
            {
                "protocol": client.meta.service_model.protocol,
                "attributes": shown,
                "md5_ok": message.get("MD5OfMessageAttributes") == md5_of_message_attributes(attributes),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
