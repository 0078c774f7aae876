"""Why: lets a newcomer put a message into a LocalStack queue (the ezgh API has no send)."""
import argparse
import os
import uuid

import boto3

parser = argparse.ArgumentParser(description="Send one message to a LocalStack SQS queue.")
parser.add_argument("queue", help="SQS queue name, e.g. orders or jobs.fifo")
parser.add_argument("body", help="message body")
parser.add_argument("--group", help="message group id (FIFO queues)", default="default")
parser.add_argument("--attribute", action="append", default=[], metavar="NAME=VALUE",
                    help="a String message attribute (repeatable)")
args = parser.parse_args()

sqs = boto3.client(
    "sqs",
    endpoint_url=os.environ.get("LOCALSTACK_ENDPOINT", "http://127.0.0.1:4566"),
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
)
url = sqs.get_queue_url(QueueName=args.queue)["QueueUrl"]
request = {"QueueUrl": url, "MessageBody": args.body}
if args.attribute:
    request["MessageAttributes"] = {
        name: {"DataType": "String", "StringValue": value}
        for name, value in (item.split("=", 1) for item in args.attribute)
    }
if args.queue.endswith(".fifo"):
    request["MessageGroupId"] = args.group
    request["MessageDeduplicationId"] = str(uuid.uuid4())
print(sqs.send_message(**request)["MessageId"])
