"""A tiny run of the ops reads benchmark, so it never rots. No timing is asserted here."""

from bench import ops


def test_every_ops_route_answers_the_district_through_its_handler_and_bare(
    bench_url: str, redis_url: str
) -> None:
    results = ops.measure(bench_url, redis_url, queries=2)
    assert [r.route for r in results] == list(ops.ROUTES)
    answered = {r.route: r.answer_items for r in results}
    assert answered["workers"] == ops.WORKERS  # every position is fresh and in the box
    assert answered["events"] == 100  # a full page from the middle of the stream
    live = sum(round(share * ops.JOBS) for status, share in ops.MIX if status in ops.LIVE)
    assert answered["jobs"] == live
    assert all(r.handler.count == r.floor.count == 2 for r in results)
    assert "| GET /ops/summary |" in ops.report(results, 2)
