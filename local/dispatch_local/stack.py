"""The local stack (`dispatch dev`) in a subprocess, on a free port: for the end-to-end tests
and the soak benchmark."""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from dispatch_local import REPO_ROOT

POLL_SECONDS = 0.2
# A stack stops its pollers, environments and services on Ctrl-C; on a machine busy with the
# whole suite (one process per core, each with its stacks) that took over 20 s once.
STOP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stack(
    database_url: str, home: Path, port: int | None = None, **environment: str
) -> tuple[str, subprocess.Popen[bytes]]:
    """`dispatch dev` on the port (a free one when none is given); returns its base URL once
    /health answers."""
    os.environ.setdefault("DISPATCH_JWT_SECRET", secrets.token_hex(32))
    port = port or free_port()
    env = {
        **os.environ,
        # The owner's URL: the stack migrates with it, and its functions sign in as the
        # application role on the same database (dispatch_local.services).
        "DATABASE_URL": database_url,
        "DATABASE_OWNER_URL": database_url,
        "DISPATCH_HOME": str(home),
        # Its own queue and bus on the shared AWS stand-in: its poller must not take the
        # in-process tests' messages.
        "EVENT_BUS_NAME": f"dispatch-e2e-{port}",
        "OUTBOX_QUEUE_URL": "",
        "OFFER_QUEUE_URL": "",
        "PUSH_DELIVERY_QUEUE_URL": "",
        "PUSH_GONE_QUEUE_URL": "",
        # And its own Redis (embedded, in its home), or its own keyspace of a shared one: its
        # sweeper prunes worker positions, and must not prune another stack's.
        "REDIS_URL": "",
        "REDIS_CLUSTER": "false",
        "DISPATCH_REDIS_NAMESPACE": f"dispatch-e2e-{port}",
        **environment,
    }
    log = (home / "stack.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "dispatch_local.cli", "dev", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        # A process group of its own, as a terminal gives `make dev`: a test can kill -9 the
        # stack and all it started without killing itself.
        start_new_session=True,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return url, process
        except requests.RequestException:  # not listening yet, or too busy starting to answer
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError((home / "stack.log").read_text()[-4000:])
        time.sleep(POLL_SECONDS)


def stop_stack(process: subprocess.Popen[bytes], timeout: float = STOP_SECONDS) -> None:
    process.send_signal(signal.SIGINT)  # what Ctrl-C does
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
