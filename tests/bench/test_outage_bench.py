"""A short run of the connection-kill benchmark, so it never rots: every event reaches the bus
in the end, kills really happen, the report renders. No timing is asserted here."""

from bench import outage


def test_connection_kills_lose_no_event(bench_url: str) -> None:
    steady, under = outage.run(bench_url, seconds=4, kills=4, businesses=2, workers=4)
    assert steady.events > 0 and under.events > 0
    assert under.kills == 4, "each kill found a connection of the application role"
    assert steady.unpublished == under.unpublished == 0, outage.report([steady, under])
    assert "| connection kills |" in outage.report([steady, under])
