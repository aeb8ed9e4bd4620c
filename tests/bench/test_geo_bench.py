"""A tiny run of the geo benchmark, so it never rots. No timing is asserted here."""

from bench import geo


def test_every_side_answers_and_agrees(bench_url: str, redis_url: str) -> None:
    smaller = geo.nearby(bench_url, jobs=500, queries=5)
    near = geo.nearby(bench_url, jobs=1_500, queries=5)
    ours = near.side(geo.OURS)
    assert ours is not None
    assert all(ours.by_place[place].count == 5 for place in geo.PLACES)  # every point, once
    assert near.mean_results["dense"] > 0
    for side in near.sides:  # PostGIS, where the server has it, answers exactly as we do
        assert side.disagreements == 0, side.name
    updates = geo.locations(redis_url, updates=50, blocks=2)
    assert updates.handler_cpu_us > 0 and updates.bare_cpu_us > 0
    text = geo.report([smaller, near], updates)
    assert f"| 500 | dense | {geo.OURS} |" in text and f"| 1,500 | sparse | {geo.OURS} |" in text
    assert "| through the handler |" in text and "| bare GEOADD + ZADD" in text
