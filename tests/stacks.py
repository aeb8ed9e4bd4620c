"""The local stack (`dispatch dev`) in a subprocess, on a free port, for the tiers that drive
it from outside (e2e over HTTP, the browser): one per test session, shared."""

from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

import pytest

from dispatch_local.stack import start_stack, stop_stack


@pytest.fixture(scope="session")
def stack_database_url(admin_url: str) -> Iterator[str]:
    """The stacks get databases of their own: their schedulers (the sweeper, the relay) must
    not touch what the in-process tests are looking at."""
    from tests.conftest import create_database, drop_database

    url = create_database(admin_url)
    yield url
    drop_database(admin_url, url)


@pytest.fixture(scope="session")
def stack_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the main stack keeps its embedded data, signing key and services record."""
    return tmp_path_factory.mktemp("stack-home")


class SharedRedis(TypedDict, total=False):
    """The stack's environment for its Redis (start_stack's keyword arguments)."""

    REDIS_URL: str
    REDIS_CLUSTER: str


def shared_redis(redis_url: str) -> SharedRedis:
    """In the AWS-path tier the stacks use the session's Redis Cluster, each in a keyspace of
    its own; otherwise each starts an embedded Redis of its own."""
    from tests.conftest import AWS_PATH

    return {"REDIS_URL": redis_url, "REDIS_CLUSTER": "true"} if AWS_PATH else {}


@pytest.fixture(scope="session")
def stack(
    stack_database_url: str, stack_home: Path, aws_stand_in: str, redis_url: str
) -> Iterator[str]:
    """`dispatch dev` on the session's AWS stand-in (so tests can tap its bus)."""
    url, process = start_stack(stack_database_url, stack_home, **shared_redis(redis_url))
    yield url
    stop_stack(process)


@pytest.fixture(scope="session")
def short_lease_stack(
    admin_url: str, tmp_path_factory: pytest.TempPathFactory, aws_stand_in: str, redis_url: str
) -> Iterator[str]:
    """A stack whose leases last 3 s and whose sweeper passes every second."""
    from tests.conftest import create_database, drop_database

    database = create_database(admin_url)
    url, process = start_stack(
        database,
        tmp_path_factory.mktemp("short-lease-home"),
        DISPATCH_LEASE_SECONDS="3",
        DISPATCH_SWEEP_INTERVAL_SECONDS="1",
        **shared_redis(redis_url),
    )
    yield url
    stop_stack(process)
    drop_database(admin_url, database)
