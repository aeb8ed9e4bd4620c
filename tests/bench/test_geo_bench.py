"""A tiny run of the geo benchmark, so it never rots. No timing is asserted here."""

from bench import geo


def test_both_sides_answer_and_agree(bench_url: str, redis_url: str) -> None:
    smaller = geo.nearby(bench_url, jobs=500, queries=10)
    near = geo.nearby(bench_url, jobs=1_500, queries=10)
    assert near.queries == 20  # every point twice, interleaved
    assert near.mean_results > 0
    updates = geo.locations(redis_url, updates=50, processes=[1, 2])
    assert [run.processes for run in updates.runs] == [1, 2]
    assert all(run.handler_per_second > 0 and run.geoadd_per_second > 0 for run in updates.runs)
    text = geo.report(near, updates, [smaller, near])
    assert "| H3 cells + haversine (ours) |" in text and "| 2 |" in text
    assert "| 500 |" in text and "| 1,500 |" in text  # the table by data size
