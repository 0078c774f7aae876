"""Why: idempotently creates the SQS queues the gateway's example config needs, on LocalStack at 127.0.0.1:4566."""
import json
import os

import boto3

sqs = boto3.client(
    "sqs",
    endpoint_url=os.environ.get("LOCALSTACK_ENDPOINT", "http://127.0.0.1:4566"),
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
)

# (queue, its dead-letter queue); messages move to the DLQ after 3 receives.
PAIRS = [("orders", "orders-dlq"), ("jobs.fifo", "jobs-dlq.fifo")]
MAX_RECEIVE_COUNT = "3"


def create(name):
    # CreateQueue returns the existing queue when the attributes match, so this is idempotent.
    attrs = {"FifoQueue": "true"} if name.endswith(".fifo") else {}
    return sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]


for name, dlq_name in PAIRS:
    dlq_url = create(dlq_name)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = create(name)
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVE_COUNT})
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": redrive})
    print(f"init.py: {name:14} {url}")
    print(f"init.py: {dlq_name:14} {dlq_url}")
