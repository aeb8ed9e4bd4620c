"""A tiny run of the outbox benchmark, so it never rots. No timing is asserted here."""

import pytest

from bench import outbox
from dispatch import db
from dispatch.config import settings


def test_the_relay_drains_the_whole_backlog(bench_url: str) -> None:
    rates = outbox.run(bench_url, events=200, naive_events=20, moto_events=0)
    assert rates["relay"].events == 200
    assert rates["naive"].events == 20
    assert "| relay | 200 |" in outbox.report(rates)


def test_accepts_under_a_backlog_send_only_their_own_events(
    bench_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", bench_url)
    settings.cache_clear()
    db.close()
    try:
        timings = outbox.accept_under_backlog(bench_url, accepts=8, backlog_events=200)
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        db.close()
    assert [t.count for t in timings.values()] == [4, 4]
    assert "| 200 waiting | 4 |" in outbox.backlog_report(timings)
