#!/usr/bin/env python3
"""Celery with kombu's SQS transport against an SQS endpoint (run by run.sh as the `celery` scenario).

A real worker (solo pool, short long polls) consumes a predefined queue made for the run; this
program, as the producer, sends CELERY_TASKS tasks (default 20) through the same app, then checks that
each task ran exactly once, stops the worker with SIGTERM (Celery's warm shutdown, exit 0) and checks
that the queue is empty (nothing visible, nothing in flight). The worker runs in a process group of its
own and is killed with it whatever happens (a failed check, an exception, SIGINT or SIGTERM), so no
process is left running.

The same module is the worker's app (`celery -A celery_tasks worker`): its configuration comes from
the environment this program sets (SGWC_CELERY_QUEUE, SGWC_CELERY_QUEUE_URL, SGWC_CELERY_RECORD),
plus SQS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_DEFAULT_REGION as run.sh exports
them. The configuration is the one docs/api/sqs.md gives for the gateway.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.parse
import uuid

from celery import Celery

HERE = os.path.dirname(os.path.abspath(__file__))
ENDPOINT = os.environ.get("SQS_ENDPOINT", "http://127.0.0.1:8787")
KEY = os.environ.get("AWS_ACCESS_KEY_ID", "test")
SECRET = os.environ.get("AWS_SECRET_ACCESS_KEY", "test")
REGION = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
QUEUE = os.environ.get("SGWC_CELERY_QUEUE", "celery-unset")
QUEUE_URL = os.environ.get("SGWC_CELERY_QUEUE_URL", "")
RECORD = os.environ.get("SGWC_CELERY_RECORD", os.devnull)
TASKS = int(os.environ.get("CELERY_TASKS", "20"))
# Short long polls: the worker notices new tasks, and stops, within about a second.
WAIT_SECONDS = 1


def broker_url(endpoint, key, secret):
    """`sqs://KEY:SECRET@HOST:PORT`: kombu takes the endpoint from the URL's host (http unless the
    transport option `is_secure` is true); the key and secret are percent-encoded."""
    parts = urllib.parse.urlsplit(endpoint)
    quote = lambda text: urllib.parse.quote(text, safe="")  # noqa: E731
    port = f":{parts.port}" if parts.port else ""
    return f"sqs://{quote(key)}:{quote(secret)}@{parts.hostname}{port}"


def make_app(queue, queue_url):
    """The Celery app of `queue` (which exists at `queue_url`): docs/api/sqs.md's configuration."""
    celery = Celery("sgwc", broker=broker_url(ENDPOINT, KEY, SECRET))
    celery.conf.update(
        broker_transport_options={
            "region": REGION,
            "is_secure": ENDPOINT.startswith("https:"),
            # The queue exists already: kombu neither lists nor creates queues.
            "predefined_queues": {
                queue: {"url": queue_url, "access_key_id": KEY, "secret_access_key": SECRET},
            },
            "wait_time_seconds": WAIT_SECONDS,
            "polling_interval": 0.2,
            "visibility_timeout": 30,
        },
        task_default_queue=queue,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
    )
    return celery


# The worker's app (`celery -A celery_tasks worker`), configured from the environment.
app = make_app(QUEUE, QUEUE_URL)


@app.task(name="sgwc.record")
def record(n):
    """The task: appends its argument and the worker's pid to the record file."""
    with open(RECORD, "a", encoding="utf-8") as out:
        out.write(f"{n} {os.getpid()}\n")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        sys.stdout.flush()
        return ok


def recorded(path):
    try:
        with open(path, encoding="utf-8") as lines:
            return [int(line.split()[0]) for line in lines if line.strip()]
    except FileNotFoundError:
        return []


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def interrupted(signum, _frame):
    raise SystemExit(f"interrupted by signal {signum}")


def is_localstack(endpoint):
    """Whether the endpoint is LocalStack itself (it answers its health route; the gateway doesn't)."""
    import urllib.request

    try:
        with urllib.request.urlopen(endpoint.rstrip("/") + "/_localstack/health", timeout=3) as answer:
            return b'"services"' in answer.read()
    except Exception:  # noqa: BLE001 - anything but an answer means "not LocalStack"
        return False


def main():
    import boto3  # the driver's own client, to make and inspect the queue (not the worker's)

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    checks = Checks()
    expected = sys.argv[sys.argv.index("--expect-protocol") + 1] if "--expect-protocol" in sys.argv else None
    run_id = uuid.uuid4().hex[:8]
    sqs = boto3.client("sqs", endpoint_url=ENDPOINT, region_name=REGION)
    if expected is not None:
        # kombu's clients load the same botocore model (AWS_DATA_PATH picks the Query one).
        protocol = sqs.meta.service_model.protocol
        checks.check(f"botocore's SQS model speaks {expected}", protocol == expected, f"it speaks {protocol}")
    name = f"sgwc-{run_id}-celery"
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    logs = os.environ.get("CLIENTS_LOGS", os.path.join(os.environ.get("TMPDIR", "/tmp"), "sqs-gateway-clients"))
    os.makedirs(logs, exist_ok=True)
    record_path = os.path.join(logs, f"celery-{run_id}.record")
    worker_log_path = os.path.join(logs, f"celery-{run_id}-worker.log")
    env = dict(os.environ, SGWC_CELERY_QUEUE=name, SGWC_CELERY_QUEUE_URL=url, SGWC_CELERY_RECORD=record_path,
               PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    worker = None
    try:
        with open(worker_log_path, "wb") as worker_log:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool", "solo",
                 "--queues", name, "--hostname", f"sgwc-{run_id}@%h", "--without-gossip",
                 "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
                cwd=HERE, env=env, stdin=subprocess.DEVNULL, stdout=worker_log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # The producer: this process, with the same configuration as the worker.
        producer = make_app(name, url)
        for n in range(TASKS):
            producer.send_task("sgwc.record", args=(n,), queue=name)
        checks.check(f"sent {TASKS} tasks", True)
        deadline = time.monotonic() + 90
        while len(recorded(record_path)) < TASKS and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.2)
        # Time for a duplicate to show: several of the worker's long polls.
        time.sleep(4 * WAIT_SECONDS + 1)
        got = recorded(record_path)
        counts = {n: got.count(n) for n in set(got)}
        checks.check(
            f"each of the {TASKS} tasks ran exactly once",
            sorted(got) == list(range(TASKS)),
            f"ran {len(got)}: missing {sorted(set(range(TASKS)) - set(got))}, "
            f"more than once {sorted(n for n, c in counts.items() if c > 1)}, worker exit {worker.poll()}",
        )
        # Warm shutdown: SIGTERM to the worker, which finishes and exits 0.
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGTERM)
        try:
            code = worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        checks.check("the worker stops on SIGTERM with exit 0", code == 0, f"exit {code}")
        checks.check("no process of the worker is left", not group_alive(worker.pid), "its process group lives on")
        attributes = sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        checks.check(
            "the queue is empty after (0 visible, 0 in flight)",
            attributes.get("ApproximateNumberOfMessages") == "0"
            and attributes.get("ApproximateNumberOfMessagesNotVisible") == "0",
            str(attributes),
        )
        # Sent within the stopped worker's last long poll: a poll whose client went away spends
        # no delivery attempt, so the message's first delivery counts 1.
        sqs.send_message(QueueUrl=url, MessageBody="after the worker stopped")
        after = sqs.receive_message(
            QueueUrl=url, WaitTimeSeconds=5, MaxNumberOfMessages=1, AttributeNames=["ApproximateReceiveCount"]
        ).get("Messages", [])
        count = after[0]["Attributes"].get("ApproximateReceiveCount") if after else None
        if after:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=after[0]["ReceiptHandle"])
        if count != "1" and is_localstack(ENDPOINT):
            # LocalStack's own long polls take for a caller that left; the gateway's must not.
            print(f"LocalStack deviation (not a gateway check): the first delivery after the stop counts {count}")
        else:
            checks.check(
                "the next message's first delivery counts 1 (the stopped worker's poll spent no attempt)",
                count == "1",
                f"ApproximateReceiveCount {count}",
            )
    finally:
        if worker is not None:
            if group_alive(worker.pid):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        try:
            sqs.delete_queue(QueueUrl=url)
        except Exception as error:  # noqa: BLE001 - the cleanup reports and carries on
            print(f"cleanup: cannot delete {name}: {error}")
        if checks.failed:
            print(f"worker log ({worker_log_path}), last lines:")
            try:
                with open(worker_log_path, encoding="utf-8", errors="replace") as log:
                    for line in log.readlines()[-25:]:
                        print("    | " + line.rstrip())
            except OSError:
                pass
        print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
