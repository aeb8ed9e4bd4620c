"""A tiny run of the outbox benchmark, so it never rots. No timing is asserted here."""

from bench import outbox


def test_the_relay_drains_the_whole_backlog(bench_url: str) -> None:
    rates = outbox.run(bench_url, events=200, naive_events=20, moto_events=0)
    assert rates["relay"].events == 200
    assert rates["naive"].events == 20
    assert "| relay | 200 |" in outbox.report(rates)
