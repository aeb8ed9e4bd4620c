"""Accept benchmark: the real handler against its own SQL, the classic design and a bare UPDATE.

    make bench-accept            (or: python -m bench.accept [--quick] [--levels 1,3,10,50])

For each contention level N, N claimer processes (each its own connection and identities)
take the same fresh jobs one after another: before each job all N wait at a barrier, then tap
Accept at the same instant. Every job gets N simultaneous accepts and exactly one winner.
The four designs run on identical data in the same run, interleaved A B C D D C B A so that
drift on a shared machine hits them alike; the report is ratios, not absolute times.

- handler: the Lambda handler in-process (event in, HTTP answer out), exactly as deployed.
- floor:   the very SQL the handler sends (pipelined), straight through psycopg, no handler.
- classic: SELECT ... FOR UPDATE, checks in Python, UPDATE, event, idempotency row; one
           transaction, one round trip per statement: the design we claim to beat.
- bare:    a single conditional UPDATE in autocommit, nothing else: the reference floor.
- classic-handler: the classic design inside the same Lambda handler stack (Powertools
           resolver, validation, logger, metrics): deployed against deployed.

The database's share, per design and contention, on a Postgres of the benchmark's own that
counts (bench/server.py: pg_stat_statements, pg_walinspect, nothing else running), read from
the server's counters around each pass, never from the client's clock: database time per
attempt (planning and execution, waits for row locks included), WAL bytes per won job (the
records, full-page images left out: those depend on when the last checkpoint was, not on the
design), statements per attempt, row locks taken per attempt (the WAL's heap LOCK records:
SELECT ... FOR UPDATE, and an UPDATE that waited for another's row and locks its new version),
and round trips per attempt (libpq's trace of one won and one lost attempt, weighted 1 : N-1).
Where no such Postgres can be made here, the client-side table stands alone.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

from psycopg.types.json import Jsonb

from bench.common import Timing, bench_database, one, timing
from bench.server import counting_postgres
from dispatch import db, idempotency
from dispatch.config import settings
from dispatch.jobs import sql as jobs_sql
from dispatch_local import environment_restored
from dispatch_local.services import app_url

MODES = ("bare", "floor", "classic", "handler", "classic-handler")
LEASE_SECONDS = 600
RESULTS = Path(__file__).parent / "results"
Attempt = tuple[UUID, str]  # (job id, worker id)

SETUP = [
    "TRUNCATE jobs, job_events, idempotency_keys, workers CASCADE",
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-1', 12.97, 77.59, '{wash}', now() + interval '1 hour', now() + interval '3 hours'
         FROM generate_series(1, %(jobs)s)""",
    """INSERT INTO job_events (job_id, type, version, actor, data)
       SELECT id, 'job.created', 1, 'b-1', dispatch_job(j) FROM jobs j""",
    """INSERT INTO workers (id, skills)
       SELECT 'w-' || c || '-' || j, '{wash}'
         FROM generate_series(0, %(claimers)s - 1) c, generate_series(0, %(jobs)s - 1) j""",
    "ANALYZE jobs",
    "ANALYZE workers",
]

BARE_UPDATE = """
UPDATE jobs SET status = 'assigned', assignee_id = %(worker_id)s, version = version + 1,
       lease_expires_at = now() + make_interval(secs => %(lease_seconds)s), updated_at = now()
 WHERE id = %(job_id)s AND status = 'open'
"""

CLASSIC_KEY = "SELECT status_code FROM idempotency_keys WHERE principal = %s AND key = %s"
CLASSIC_LOCK = "SELECT * FROM jobs WHERE id = %s FOR UPDATE"
CLASSIC_WORKER = """
SELECT w.skills, EXISTS (SELECT 1 FROM jobs l WHERE l.assignee_id = w.id
                          AND l.status IN ('assigned', 'in_progress')) AS busy
  FROM workers w WHERE w.id = %s
"""
CLASSIC_UPDATE = """
UPDATE jobs SET status = 'assigned', assignee_id = %(worker_id)s, version = version + 1,
       lease_expires_at = now() + make_interval(secs => %(lease_seconds)s), updated_at = now()
 WHERE id = %(job_id)s RETURNING dispatch_job(jobs) AS document
"""
CLASSIC_EVENT = """
INSERT INTO job_events (job_id, type, version, actor, data)
VALUES (%(job_id)s, 'job.assigned', %(version)s, %(worker_id)s, %(document)s)
"""
CLASSIC_STORE = """
INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
VALUES (%(worker_id)s, %(key)s, %(fingerprint)s, %(status)s, %(body)s)
"""


def _lost_body() -> str:
    """The 409 a loser is answered and its key keeps, as the handler writes it."""
    from dispatch.errors import Code, error_body

    return json.dumps(error_body(Code.JOB_TAKEN, str(UUID(int=7)), None))


LOST_BODY = _lost_body()


def _params(job_id: UUID, worker_id: str) -> dict[str, Any]:
    """Every design stores the same idempotency row a real request does: its fingerprint and
    its answer (a lost race, the contract's 409 body)."""
    return {
        "job_id": job_id,
        "worker_id": worker_id,
        "version": None,
        "lease_seconds": LEASE_SECONDS,
        "event_type": "job.assigned",
        "actor": worker_id,
        "principal": worker_id,
        "key": f"k-{job_id}",
        "fingerprint": idempotency.fingerprint(
            "POST", "/jobs/{job_id}/accept", {"job_id": str(job_id)}, {}
        ),
    }


def claim_bare(conn: db.Connection, attempt: Attempt) -> int:
    job_id, worker_id = attempt
    changed = conn.execute(BARE_UPDATE, _params(job_id, worker_id)).rowcount
    return 200 if changed else 409


def claim_floor(conn: db.Connection, attempt: Attempt) -> int:
    """The statements the handler sends, straight through psycopg: the one statement that
    changes the job, writes its event and records the key with its answer; a loser reads why
    (in this benchmark always taken) and records its 409."""
    job_id, worker_id = attempt
    params = _params(job_id, worker_id)
    key = {**params, "answer_status": 200}
    row = conn.execute(jobs_sql.ACCEPT_JOB.sql, {**params, **key}).fetchone()
    if row is not None:
        return 200
    conn.execute(jobs_sql.ACCEPT_FAILURE_FACTS.sql, params).fetchone()
    body = LOST_BODY
    conn.execute(idempotency.CLAIM_KEY_WITH_ANSWER.sql, {**params, "status": 409, "body": body})
    return 409


def claim_classic(conn: db.Connection, attempt: Attempt) -> int:
    return classic_transaction(conn, *attempt)[0]


def classic_transaction(conn: db.Connection, job_id: UUID, worker_id: str) -> tuple[int, str]:
    params = _params(job_id, worker_id)
    with conn.transaction():
        conn.execute(CLASSIC_KEY, (worker_id, params["key"])).fetchone()
        job = conn.execute(CLASSIC_LOCK, (job_id,)).fetchone()
        me = conn.execute(CLASSIC_WORKER, (worker_id,)).fetchone()
        claimable = (
            job is not None
            and me is not None
            and job["status"] == "open"
            and set(job["skills"]) <= set(me["skills"])
            and not me["busy"]
        )
        if claimable:
            row = conn.execute(CLASSIC_UPDATE, params).fetchone()
            assert row is not None
            document = row["document"]
            conn.execute(
                CLASSIC_EVENT,
                {**params, "version": document["version"], "document": Jsonb(document)},
            )
            status, body = 200, json.dumps(document)
        else:
            status, body = 409, LOST_BODY
        conn.execute(CLASSIC_STORE, {**params, "status": status, "body": body})
    return status, body


def classic_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The classic design deployed the way ours is: the same Powertools stack around it."""
    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.openapi.params import Body

    from dispatch.auth import Role
    from dispatch.http.keyed import KeyedResolver
    from dispatch.http.resolver import JSON, entrypoint
    from dispatch.jobs.requests import AcceptJob

    app = KeyedResolver()
    no_version = AcceptJob()

    @app.endpoint("POST", "/jobs/<job_id>/accept", roles={Role.WORKER}, operation_id="acceptJob")
    def accept(job_id: UUID, claim: Annotated[AcceptJob, Body()] = no_version) -> Response[Any]:
        status, body = classic_transaction(db.connection(), job_id, app.caller.id)
        return Response(status, JSON, body)

    return entrypoint(app)


def claim_classic_handler(_: db.Connection, event: dict[str, Any]) -> int:
    from dispatch_local.events import LambdaContext

    if "classic" not in _ROUTES:
        _ROUTES["classic"] = classic_handler()
    answer = _ROUTES["classic"](event, LambdaContext(function_name="ClassicAcceptFunction"))
    return int(answer["statusCode"])


def api_gateway_event(job_id: UUID, worker_id: str) -> dict[str, Any]:
    """What API Gateway hands the Lambda; built before the clock starts, it is not our work."""
    from dispatch_local.events import http_api_event
    from dispatch_local.template import find
    from dispatch_local.tokens import as_api_gateway_claims

    path = f"/jobs/{job_id}/accept"
    found = find(_all_routes(), "POST", path)
    assert found is not None
    route, path_parameters = found
    return http_api_event(
        route,
        path_parameters,
        "POST",
        path,
        "",
        [("content-type", "application/json"), ("idempotency-key", f"k-{job_id}")],
        b"{}",
        as_api_gateway_claims({"sub": worker_id, "cognito:groups": ["worker"]}),
    )


def claim_handler(_: db.Connection, event: dict[str, Any]) -> int:
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import find, handler_of

    if "accept" not in _ROUTES:
        _ROUTES["accept"] = find(_all_routes(), "POST", f"/jobs/{UUID(int=0)}/accept")[0]  # type: ignore[index]
    route = _ROUTES["accept"]
    answer = handler_of(route)(event, LambdaContext(function_name=route.function))
    return int(answer["statusCode"])


_ROUTES: dict[str, Any] = {}


def _all_routes() -> Any:
    from dispatch_local.template import routes

    if "all" not in _ROUTES:
        _ROUTES["all"] = routes()
    return _ROUTES["all"]


CLAIMS: dict[str, Callable[[db.Connection, Any], int]] = {
    "bare": claim_bare,
    "floor": claim_floor,
    "classic": claim_classic,
    "handler": claim_handler,
    "classic-handler": claim_classic_handler,
}


def as_is(job_id: UUID, worker_id: str) -> tuple[UUID, str]:
    """The attempt the SQL-only claimers take: the job and the worker, as they are."""
    return (job_id, worker_id)


def claim_into(
    answers: list[int],
    claim: Callable[[db.Connection, Any], int],
    conn: db.Connection,
    attempt: Any,
) -> None:
    """One claim, its status appended to `answers` (what `traced` runs)."""
    answers.append(claim(conn, attempt))


PREPARE: dict[str, Callable[[UUID, str], Any]] = {
    "handler": api_gateway_event,
    "classic-handler": api_gateway_event,
}
_PROCESS: dict[str, Any] = {}


def _init(url: str, barrier: Any) -> None:
    _PROCESS["barrier"] = barrier
    os.environ["DATABASE_URL"] = app_url(url)  # the functions' own role, as deployed
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # stdout I/O is not what we measure
    os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    # One connection per process, the handler's own: every design gets the same footing.
    _PROCESS["conn"] = db.connection()
    # Import, connect (no such job: each answers 404, under a key of its own).
    warm_up = f"warm-up-{os.getpid()}"
    claim_handler(_PROCESS["conn"], api_gateway_event(UUID(int=0), warm_up))
    claim_classic_handler(_PROCESS["conn"], api_gateway_event(UUID(int=1), warm_up))


def _claimer(
    mode: str, claimer: int, job_ids: list[UUID]
) -> tuple[list[int], list[int], float, float]:
    claim, conn, barrier = CLAIMS[mode], _PROCESS["conn"], _PROCESS["barrier"]
    prepare = PREPARE.get(mode, as_is)
    attempts = [prepare(job_id, f"w-{claimer}-{j}") for j, job_id in enumerate(job_ids)]
    latencies: list[int] = []
    statuses: list[int] = []
    began = 0.0
    for j, attempt in enumerate(attempts):
        barrier.wait(timeout=120)  # all claimers of this job tap at once
        if j == 0:
            began = time.time()
        t0 = time.perf_counter_ns()
        statuses.append(claim(conn, attempt))
        latencies.append(time.perf_counter_ns() - t0)
    return latencies, statuses, began, time.time()


def _ready() -> None:
    """Returns once every process of the pool has run its initializer (each waits for all)."""
    _PROCESS["barrier"].wait(timeout=120)


@dataclass
class DatabaseShare:
    """What the server did for one design at one contention, from its own counters."""

    attempts: int
    wins: int
    database_ms: float  # planning + execution, pg_stat_statements
    statements: int  # calls, pg_stat_statements (BEGIN and COMMIT included)
    wal_bytes: int  # WAL records written, full-page images left out (pg_walinspect)
    row_locks: int  # heap LOCK and LOCK_UPDATED records in that WAL
    round_trips: float = 0.0  # per attempt, from the wire (set after the run)

    def __add__(self, other: "DatabaseShare") -> "DatabaseShare":
        return DatabaseShare(
            self.attempts + other.attempts,
            self.wins + other.wins,
            self.database_ms + other.database_ms,
            self.statements + other.statements,
            self.wal_bytes + other.wal_bytes,
            self.row_locks + other.row_locks,
        )


# Flushed WAL only: every transaction of a pass has committed (and flushed) before it is read.
COUNTERS_RESET = "SELECT pg_stat_statements_reset(), pg_current_wal_flush_lsn() AS lsn"
WAL_END = "SELECT pg_current_wal_flush_lsn() AS lsn"
# The counters' own readings mention them by name; every other statement is the designs'.
COUNTED_STATEMENTS = """
SELECT coalesce(sum(calls), 0)::bigint AS statements,
       coalesce(sum(total_plan_time + total_exec_time), 0)::float8 AS database_ms
  FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND query !~ '(pg_stat_statements|pg_current_wal_lsn|pg_get_wal_stats)'
"""
WAL_WRITTEN = """
SELECT coalesce(sum(record_size), 0)::bigint AS wal_bytes,
       coalesce(sum(count) FILTER (WHERE "resource_manager/record_type"
                                   IN ('Heap/LOCK', 'Heap2/LOCK_UPDATED')), 0)::bigint AS row_locks
  FROM pg_get_wal_stats(%(since)s, %(until)s, true)
"""


def counted(admin: db.Connection, since: str, attempts: int, wins: int) -> DatabaseShare:
    work = admin.execute(COUNTED_STATEMENTS).fetchone()
    until = one(admin.execute(WAL_END))["lsn"]
    wal = (
        admin.execute(WAL_WRITTEN, {"since": since, "until": until}).fetchone()
        if until != since  # nothing written (pg_walinspect refuses an empty range)
        else {"wal_bytes": 0, "row_locks": 0}
    )
    assert work is not None and wal is not None
    return DatabaseShare(
        attempts, wins, work["database_ms"], work["statements"], wal["wal_bytes"], wal["row_locks"]
    )


def wire_round_trips(url: str) -> dict[str, tuple[int, int]]:
    """Round trips of one won and one lost attempt per design (libpq's trace), the relay
    after commit included where the handler does one."""
    from dispatch_local.wire import traced

    found: dict[str, tuple[int, int]] = {}
    with (
        environment_restored("DATABASE_URL", "POWERTOOLS_METRICS_DISABLED"),
        db.connect(url) as admin,
    ):
        os.environ["DATABASE_URL"] = app_url(url)
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # stdout is the report's
        settings.cache_clear()
        db.close()
        for mode in MODES:
            for statement in SETUP:
                admin.execute(statement, {"jobs": 1, "claimers": 2})
            (job_id,) = [r["id"] for r in admin.execute("SELECT id FROM jobs")]
            prepare = PREPARE.get(mode, as_is)
            trips = []
            for claimer, expected in ((0, 200), (1, 409)):
                attempt = prepare(job_id, f"w-{claimer}-0")
                conn = db.connection() if mode in PREPARE else admin
                answers: list[int] = []
                claim = CLAIMS[mode]
                wire = traced(partial(claim_into, answers, claim, conn, attempt), conn)
                assert answers == [expected], (mode, answers)
                trips.append(wire.round_trips + wire.after_commit_round_trips)
            found[mode] = (trips[0], trips[1])
        db.close()
    return found


@dataclass
class Row:
    claimers: int
    mode: str
    attempts: Timing
    wins: int
    database: DatabaseShare | None = None

    @property
    def wins_per_second(self) -> float:
        return self.wins / self.attempts.seconds if self.attempts.seconds else 0.0


def run(
    url: str, levels: list[int], attempts: int, repeats: int = 2, counting: bool = False
) -> list[Row]:
    """Every design at every contention; with `counting` (a server from bench/server.py), the
    database's share of each pass from the server's counters too."""
    rows: list[Row] = []
    ctx = multiprocessing.get_context("spawn")
    with db.connect(url) as admin:
        if counting:
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        for claimers in levels:
            jobs = max(5, attempts // claimers)
            pooled: dict[str, tuple[list[int], float, int]] = {m: ([], 0.0, 0) for m in MODES}
            shares: dict[str, DatabaseShare] = {}
            barrier = ctx.Barrier(claimers)
            with ctx.Pool(processes=claimers, initializer=_init, initargs=(url, barrier)) as pool:
                pool.starmap(_ready, [()] * claimers)  # every process warmed up, off the counters
                order = [m for r in range(repeats) for m in (MODES if r % 2 == 0 else MODES[::-1])]
                for mode in order:
                    for statement in SETUP:
                        admin.execute(statement, {"jobs": jobs, "claimers": claimers})
                    job_ids = [r["id"] for r in admin.execute("SELECT id FROM jobs ORDER BY id")]
                    if counting:
                        admin.execute("CHECKPOINT")
                        since = one(admin.execute(COUNTERS_RESET))["lsn"]
                    results = pool.starmap(_claimer, [(mode, c, job_ids) for c in range(claimers)])
                    if counting:
                        share = counted(admin, since, claimers * len(job_ids), len(job_ids))
                        shares[mode] = shares[mode] + share if mode in shares else share
                    statuses = [s for r in results for s in r[1]]
                    unexpected = set(statuses) - {200, 409}
                    assert not unexpected, f"{mode}: unexpected answers {unexpected}"
                    wins = statuses.count(200)
                    assert wins == len(job_ids), f"{mode}: {wins} winners for {len(job_ids)} jobs"
                    seconds = max(r[3] for r in results) - min(r[2] for r in results)
                    lat, secs, won = pooled[mode]
                    pooled[mode] = (
                        lat + [x for r in results for x in r[0]],
                        secs + seconds,
                        won + wins,
                    )
            for mode in MODES:
                lat, secs, won = pooled[mode]
                rows.append(Row(claimers, mode, timing(lat, secs), won, shares.get(mode)))
    if counting:
        trips = wire_round_trips(url)
        for row in rows:
            won, lost = trips[row.mode]
            assert row.database is not None
            row.database.round_trips = (won + (row.claimers - 1) * lost) / row.claimers
    return rows


def report(rows: list[Row]) -> str:
    lines = [
        "| claimers | design | attempts/s | jobs won/s | p50 ms | p99 ms "
        "| x floor | x classic | x classic-handler |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        same = {r.mode: r.attempts.per_second for r in rows if r.claimers == row.claimers}
        mine = row.attempts.per_second
        lines.append(
            f"| {row.claimers} | {row.mode} | {mine:,.0f} | {row.wins_per_second:,.0f} "
            f"| {row.attempts.p50_ms:.2f} | {row.attempts.p99_ms:.2f} "
            f"| {mine / same['floor']:.2f} | {mine / same['classic']:.2f} "
            f"| {mine / same['classic-handler']:.2f} |"
        )
    return "\n".join(lines)


# The design we claim to beat, for each of ours: SQL against SQL, handler against handler.
RIVAL = {"floor": "classic", "handler": "classic-handler"}


SHARE_MEASURES: tuple[tuple[str, Callable[[DatabaseShare], float]], ...] = (
    # (label, per-row figure); lower is better for every one
    ("database ms per attempt", lambda d: d.database_ms / d.attempts),
    ("WAL bytes per won job", lambda d: d.wal_bytes / d.wins),
    ("statements per attempt", lambda d: d.statements / d.attempts),
    ("round trips per attempt", lambda d: d.round_trips),
    ("row locks per attempt", lambda d: d.row_locks / d.attempts),
)


def share_report(rows: list[Row]) -> str:
    counted_rows = [r for r in rows if r.database is not None]
    if not counted_rows:
        return (
            "The database's share: not measured (no PostgreSQL with pg_stat_statements and"
            " pg_walinspect could be started here; see bench/server.py)."
        )
    lines = [
        "The database's share (the server's own counters; lower is better on every column;"
        ' "x rival" is ours over the classic design at the same contention: floor against'
        " classic, handler against classic-handler):",
        "",
        "| claimers | design | " + " | ".join(label for label, _ in SHARE_MEASURES) + " | x rival"
        " (db time, WAL) | at or below the rival on every measure |",
        "| ---: | --- |" + " ---: |" * len(SHARE_MEASURES) + " ---: | --- |",
    ]
    for row in counted_rows:
        d = row.database
        assert d is not None
        figures = [measure(d) for _, measure in SHARE_MEASURES]
        cells = " | ".join(f"{f:,.2f}" if f < 100 else f"{f:,.0f}" for f in figures)
        rival_mode = RIVAL.get(row.mode)
        rival = next(
            (
                r.database
                for r in counted_rows
                if r.claimers == row.claimers and r.mode == rival_mode
            ),
            None,
        )
        if rival is None:
            versus, verdict = "", ""
        else:
            theirs = [measure(rival) for _, measure in SHARE_MEASURES]
            versus = f"{figures[0] / theirs[0]:.2f}, {figures[1] / theirs[1]:.2f}"
            worse = [
                label
                for (label, _), a, b in zip(SHARE_MEASURES, figures, theirs, strict=True)
                if a > b
            ]
            verdict = "yes" if not worse else "no: " + ", ".join(worse)
        lines.append(f"| {row.claimers} | {row.mode} | {cells} | {versus} | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.accept", description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="1,3,10,50", help="claimers per job")
    parser.add_argument("--attempts", type=int, default=2400, help="accepts per design and level")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved passes per design")
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    levels = [1, 3] if args.quick else [int(x) for x in args.levels.split(",")]
    attempts = 30 if args.quick else args.attempts
    with counting_postgres() as counting, bench_database(counting) as url:
        rows = run(url, levels, attempts, args.repeats, counting=counting is not None)
    table = report(rows) + "\n\n" + share_report(rows)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "accept.json").write_text(
        json.dumps([{**asdict(r), "wins_per_second": r.wins_per_second} for r in rows], indent=2)
    )
    (RESULTS / "accept.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
