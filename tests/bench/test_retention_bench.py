"""A tiny run of the retention benchmark, so it never rots. No timing is asserted here."""

from bench import retention
from dispatch import db


def test_the_old_jobs_leave_and_the_live_ones_stay(bench_url: str) -> None:
    result = retention.run(bench_url, old_jobs=20, batches=2, batch_size=15)
    assert [r.jobs for r in result["runs"]] == [15, 5]
    assert [r.rows for r in result["runs"]] == [15 * 13, 5 * 13]  # a job and its 12 rows
    with db.connect(bench_url) as conn:
        assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 1}  # live
    assert "retention: " in retention.report(result)


def test_a_run_with_batches_to_spare_reads_back_the_last_archive(bench_url: str) -> None:
    """Found by mypy (issue 36): when the old jobs ran out before the batches did, the run read
    back the empty batch's archive (`Key=None`) instead of the last one written, and failed."""
    result = retention.run(bench_url, old_jobs=20, batches=3, batch_size=15)
    assert [r.jobs for r in result["runs"]] == [15, 5]
    assert result["raw_bytes_per_job"] > 0
