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


def test_the_database_share_comes_from_the_servers_counters(bench_url: str) -> None:
    """On a counting Postgres of the benchmark's own (this machine's PostgreSQL binaries):
    what each design asked of the server, read from pg_stat_statements and the WAL."""
    from bench import server
    from bench.common import bench_database
    from bench.server import counting_postgres

    with counting_postgres() as admin:
        if admin is None:  # no PostgreSQL binaries here (the embedded one has no such extension)
            assert server.binaries() is None
            rows = accept.run(bench_url, levels=[1], attempts=5, repeats=1)
            assert "not measured" in accept.share_report(rows)
            return
        with bench_database(admin) as url:
            rows = accept.run(url, levels=[1, 3], attempts=12, repeats=1, counting=True)
    measured = {(r.claimers, r.mode): r.database for r in rows}
    assert all(share is not None for share in measured.values())
    shares = {key: share for key, share in measured.items() if share is not None}
    one_claimer = {mode: shares[1, mode] for mode in accept.MODES}
    # Alone, every design wins every job: statements and round trips are exactly the design's.
    assert one_claimer["bare"].statements == one_claimer["bare"].attempts
    assert one_claimer["floor"].round_trips == 1
    assert one_claimer["classic"].round_trips == 8  # BEGIN, six statements, COMMIT
    for share in shares.values():
        assert share is not None and share.database_ms > 0 and share.wal_bytes > 0
    text = accept.share_report(rows)
    assert "| 3 | floor |" in text and "WAL bytes per won job" in text
