"""A tiny run of the sweeper benchmark, so it never rots. No timing is asserted here."""

from bench import sweeper


def test_the_sweep_reopens_everything_while_accepts_go_on(bench_url: str) -> None:
    result = sweeper.run(bench_url, expired=150, scan_sizes=[10, 50], scan_jobs=60)
    assert result.reopened == 150
    assert set(result.batch_scan) == {10, 50}
    assert result.accepts_idle.count > 0
    assert result.accepts_during_sweep.count > 0
    text = sweeper.report(result)
    assert "p99 during the sweep / p99 idle" in text
