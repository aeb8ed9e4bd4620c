"""A tiny run of the geo benchmark, so it never rots. No timing is asserted here."""

from bench import geo


def test_both_sides_answer_and_agree(bench_url: str, redis_url: str) -> None:
    near = geo.nearby(bench_url, jobs=1_500, queries=10)
    assert near.queries == 20  # every point twice, interleaved
    assert near.mean_results > 0
    updates = geo.locations(redis_url, updates=50)
    assert updates.handler_per_second > 0
    assert updates.geoadd_per_second > 0
    assert "| H3 cells + haversine (ours) |" in geo.report(near, updates)
