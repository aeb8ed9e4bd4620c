"""A tiny run of the accept benchmark, so it never rots. No timing is asserted here."""

from bench import accept


def test_every_design_runs_and_each_job_gets_exactly_one_winner(bench_url: str) -> None:
    # run() itself asserts one winner per job and only 200/409 answers for every design.
    rows = accept.run(bench_url, levels=[1, 3], attempts=12, repeats=1)
    assert [(r.claimers, r.mode) for r in rows] == [
        (n, mode) for n in (1, 3) for mode in accept.MODES
    ]
    for row in rows:
        jobs = max(5, 12 // row.claimers)
        assert row.wins == jobs
        assert row.attempts.count == jobs * row.claimers
    table = accept.report(rows)
    assert table.count("\n") == 1 + len(rows)
    assert "| 3 | handler |" in table
