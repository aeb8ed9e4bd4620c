"""A tiny run of the sweeper benchmark, so it never rots. No timing is asserted here."""

from collections.abc import Iterator

import pytest

from bench import sweeper
from tests.conftest import create_database, drop_database


@pytest.fixture
def bench_url(admin_url: str) -> Iterator[str]:
    url = create_database(admin_url)
    yield url
    drop_database(admin_url, url)


def test_the_sweep_reopens_everything_while_accepts_go_on(bench_url: str) -> None:
    result = sweeper.run(bench_url, expired=150, scan_sizes=[10, 50], scan_jobs=60)
    assert result.reopened == 150
    assert set(result.batch_scan) == {10, 50}
    assert result.accepts_idle.count > 0
    assert result.accepts_during_sweep.count > 0
    text = sweeper.report(result)
    assert "p99 during the sweep / p99 idle" in text
