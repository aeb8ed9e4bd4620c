"""The local stack (`dispatch dev`) in a subprocess, on a free port, against the test database."""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from dispatch_local import REPO_ROOT

POLL_SECONDS = 0.2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def stack(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home: Path = tmp_path_factory.mktemp("stack-home")
    os.environ.setdefault("DISPATCH_JWT_SECRET", secrets.token_hex(32))
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "DISPATCH_HOME": str(home)}
    log = (home / "stack.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "dispatch_local.cli", "dev", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError((home / "stack.log").read_text()[-4000:])
        time.sleep(POLL_SECONDS)
    yield url
    process.send_signal(signal.SIGINT)  # what Ctrl-C does
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    finally:
        log.close()
