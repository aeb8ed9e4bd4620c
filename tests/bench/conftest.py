from collections.abc import Iterator

import pytest

from tests.conftest import create_database, drop_database


@pytest.fixture
def bench_url(admin_url: str) -> Iterator[str]:
    """A database of its own: the benchmarks empty the tables they use."""
    url = create_database(admin_url)
    yield url
    drop_database(admin_url, url)
