"""History benchmark: every statement the product runs, on N days of history against empty.

    make bench-history [DAYS=30]      (or: python -m bench.history --days 30 [--runs 7])

Two databases on DATABASE_URL's server: dispatch_bench_empty (the current state only) and
dispatch_bench_history_N (N days of the seed's load, bench.history_load, then the same current
state). The history one is kept and reused while its days, volume and loader match, so a rerun
does not reload it (its current state is written anew); a newer schema is migrated onto it, as
a deployment migrates its own database. Each named statement (the sql modules'
constants, with parameters from the current state) runs alternately on each, inside a
transaction rolled back after (a write measured never changes what the next run sees), and the
sweeper's whole pass the same way. p50 of the runs, the ratio, and EXPLAIN (ANALYZE, BUFFERS) of
the worst three. Writes bench/results/history.json and its section of docs/benchmarks.md; its
last line: `worst path at N days: R x empty (NAME)`.
"""

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench import history_load
from dispatch import db, idempotency
from dispatch_local import REPO_ROOT
from dispatch_local.services import owner_url

RESULTS = Path(__file__).parent / "results"
MODULES = (
    "dispatch.jobs.sql",
    "dispatch.ops.sql",
    "dispatch.choice.sql",
    "dispatch.offers.sql",
    "dispatch.outbox.sql",
    "dispatch.push.sql",
    "dispatch.rosters.sql",
    "dispatch.idempotency",
    "dispatch.workers.profiles",
    "dispatch.jobs.photos",
)
# Named constants that are not statements the product sends, and why.
EXCLUDED = {
    "dispatch.idempotency.NO_KEY": "the key's parameters when there is none, not SQL",
    "dispatch.idempotency.NO_LOCK_WAIT": "a setting of the probe's transaction, reads nothing",
}
SWEEP = "sweeper.sweep (the whole pass)"
BOX = {"min_lat": 12.79, "max_lat": 13.15, "min_lng": 77.41, "max_lng": 77.78}
WORKER = "w-7"  # one of the pool every day's jobs are offered to and done by


def named_statements() -> dict[str, str]:
    """Every public upper-case SQL constant of the statement modules, as `module.NAME`: its
    SQL (a `db.Query`'s, or a string's), or its type's name for a collection of fragments."""
    found: dict[str, str] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if name.startswith("_") or not name.isupper():
                continue
            if isinstance(value, db.Query):
                found[f"{module_name}.{name}"] = value.sql
            elif isinstance(value, str | dict | tuple):  # not a number, nor a class
                found[f"{module_name}.{name}"] = (
                    value if isinstance(value, str) else type(value).__name__
                )
    return found


def facts(conn: db.Connection) -> dict[str, Any]:
    """The rows of the current state the statements are sent about (ids differ per database)."""

    def one(sql: str) -> dict[str, Any]:
        row = conn.execute(sql).fetchone()
        assert row is not None, sql
        return dict(row)

    due = one(
        "SELECT id, version, business_id FROM jobs WHERE assignment = 'business_choice'"
        " AND status = 'open' AND choose_by <= now() ORDER BY choose_by LIMIT 1"
    )
    applicant = one(
        f"SELECT worker_id FROM job_applications WHERE job_id = '{due['id']}' ORDER BY applied_at"
        " LIMIT 1"
    )["worker_id"]
    open_job = one(
        "SELECT id, version, business_id FROM jobs WHERE status = 'open'"
        " AND assignment = 'first_come' ORDER BY created_at DESC LIMIT 1"
    )
    held = one(
        "SELECT id, version, business_id, assignee_id FROM jobs WHERE status = 'assigned'"
        " AND lease_expires_at > now() ORDER BY created_at LIMIT 1"
    )
    working = one(
        "SELECT id, version, business_id, assignee_id, before_photo_id FROM jobs"
        " WHERE status = 'in_progress' ORDER BY created_at LIMIT 1"
    )
    # The console's cursor two pages back in the stream: a full page after it on either
    # database (from the newest event, the empty one had nothing left to read and the other a
    # page of the current state's offer events: 0 rows against 100).
    event = one(
        "SELECT tx::text AS tx, id FROM job_events ORDER BY tx DESC, id DESC OFFSET 200 LIMIT 1"
    )
    # What the publisher marks once it has put them on the bus: a few of the newest.
    unpublished = one(
        "SELECT array(SELECT id FROM offer_events WHERE published_at IS NULL"
        " ORDER BY id DESC LIMIT 3) AS ids"
    )["ids"]
    return {
        "due": due,
        "applicant": applicant,
        "open": open_job,
        "held": held,
        "working": working,
        "event": event,
        "unpublished_offer_events": unpublished,
    }


def _change(kind: str, actor: str, **more: Any) -> dict[str, Any]:
    return {"event_type": kind, "actor": actor, **idempotency.NO_KEY, **more}


# Each timed statement's parameters, from the current state's facts: what its route, duty or
# consumer sends (the statement's own module names them).
CASES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "dispatch.jobs.sql.CREATE_JOB": lambda f: _change(
        "job.created", "b-1", business_id="b-1", lat=12.97, lng=77.59, skills=["wash"],
        window_start=datetime.now(UTC) + timedelta(hours=1),
        window_end=datetime.now(UTC) + timedelta(hours=4), min_rating=None, assignment="first_come",
        auto_pick=None, choose_within_s=None, offer_first_to=None,
    ),
    "dispatch.jobs.sql.ACCEPT_JOB": lambda f: _change(
        "job.assigned", WORKER, job_id=f["open"]["id"], worker_id=WORKER, version=None,
        lease_seconds=600,
    ),
    "dispatch.jobs.sql.ACCEPT_FAILURE_FACTS": lambda f: {
        "job_id": f["held"]["id"], "worker_id": WORKER, "version": None,
    },
    "dispatch.jobs.sql.RECORD_LOST_RACE": lambda f: {
        "job_id": f["held"]["id"], "worker_id": WORKER,
    },
    "dispatch.jobs.sql.JOB_BY_ID": lambda f: {"job_id": f["working"]["id"]},
    "dispatch.jobs.sql.EVENTS_OF_JOB": lambda f: {
        "job_id": f["working"]["id"], "everything": True, "caller_id": "ops", "through": None,
    },
    "dispatch.jobs.sql.HOLD_ENDED": lambda f: {"job_id": f["working"]["id"], "worker_id": WORKER},
    "dispatch.jobs.sql.TRANSITION_JOB": lambda f: _change(
        "job.checked_in", f["held"]["assignee_id"], job_id=f["held"]["id"], target="assigned",
        sources=["assigned"], version=f["held"]["version"], actor_kind="assignee", needs=None,
        within_window=True, lease_seconds=600,
    ),
    "dispatch.jobs.sql.TRANSITION_FAILURE_FACTS": lambda f: {
        "job_id": f["working"]["id"], "actor": WORKER, "photo_id": None,
    },
    "dispatch.jobs.sql.ATTACH_PHOTO": lambda f: _change(
        "job.photo_attached", f["working"]["assignee_id"], job_id=f["working"]["id"],
        slot="after", slot_status="in_progress", photo_id=f["working"]["before_photo_id"],
    ),
    "dispatch.jobs.sql.RATE_JOB": lambda f: _change(
        "job.rated", f["working"]["business_id"], job_id=f["working"]["id"], stars=5,
    ),
    "dispatch.jobs.sql.REOPEN_EXPIRED": lambda f: _change(
        "job.reopened", "system:lease-sweeper", batch_size=100
    ),
    "dispatch.jobs.sql.EXPIRE_ENDED": lambda f: _change(
        "job.expired", "system:lease-sweeper", batch_size=100
    ),
    "dispatch.jobs.sql.NEARBY_JOBS": lambda f: {
        "lat": 12.97, "lng": 77.59, "radius_m": 5000, "worker_id": WORKER, "limit": 20,
    },
    "dispatch.ops.sql.JOBS_IN_BOX": lambda f: {
        **BOX, "statuses": ["open", "assigned", "in_progress", "completed", "cancelled",
                            "expired"], "limit": 500,
    },
    "dispatch.ops.sql.BUSY_WORKERS": lambda f: {"ids": [f"w-{n}" for n in range(1, 200)]},
    "dispatch.ops.sql.EVENTS_AFTER": lambda f: {
        "tx": f["event"]["tx"], "id": f["event"]["id"], "limit": 100,
    },
    "dispatch.ops.sql.NEWEST_EVENTS": lambda f: {"limit": 100},
    "dispatch.ops.sql.JOBS_BY_STATUS": lambda f: {},
    "dispatch.ops.sql.LAST_HOUR": lambda f: {},
    "dispatch.choice.sql.ASSIGN_JOB": lambda f: _change(
        "job.assigned", f["due"]["business_id"], job_id=f["due"]["id"],
        business_id=f["due"]["business_id"], worker_id=f["applicant"], version=None,
        lease_seconds=600,
    ),
    "dispatch.choice.sql.ASSIGN_FAILURE_FACTS": lambda f: {
        "job_id": f["due"]["id"], "business_id": f["due"]["business_id"], "worker_id": WORKER,
        "version": None,
    },
    "dispatch.choice.sql.APPLY": lambda f: {
        "job_id": f["due"]["id"], "worker_id": WORKER, "note": None, **idempotency.NO_KEY,
    },
    "dispatch.choice.sql.APPLY_FAILURE_FACTS": lambda f: {
        "job_id": f["due"]["id"], "worker_id": WORKER,
    },
    "dispatch.choice.sql.WITHDRAW": lambda f: {
        "job_id": f["due"]["id"], "worker_id": f["applicant"],
    },
    "dispatch.choice.sql.JOB_FOR_APPLICANTS": lambda f: {
        "job_id": f["due"]["id"], "ops": False, "business_id": f["due"]["business_id"],
    },
    "dispatch.choice.sql.APPLICANT_IDS": lambda f: {"job_id": f["due"]["id"]},
    "dispatch.choice.sql.APPLICANTS": lambda f: {
        "job_id": f["due"]["id"], "position_ids": [], "lats": [], "lngs": [],
    },
    "dispatch.choice.sql.DUE_CHOICES": lambda f: {"batch_size": 100},
    "dispatch.choice.sql.BEST_APPLICANT": lambda f: {"job_id": f["due"]["id"]},
    "dispatch.choice.sql.CHOICE_UNFILLED": lambda f: {
        "job_id": f["due"]["id"], "version": f["due"]["version"],
        "actor": "system:choice-deadline",
    },
    "dispatch.offers.sql.OPEN_JOB": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"],
    },
    "dispatch.offers.sql.LOCK_OPEN_JOB": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"],
    },
    "dispatch.offers.sql.START_WAVE": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"], "wave": 2,
    },
    "dispatch.offers.sql.MAKE_OFFERS": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"], "wave": 2,
        "worker_ids": [f"w-{n}" for n in range(3000, 3100)],
        "distances": [100.0 * n for n in range(100)], "skills": ["wash"], "min_rating": None,
        "tie_band_m": 500, "size": 10, "radius_m": 5000,
    },
    "dispatch.offers.sql.MARKET_ANSWERS": lambda f: {"history_s": 86400},
    # The sweeper's fold of the offers since its cursor: the current state's (the loader folded
    # the history before it), all of them (no settle), one batch at most.
    "dispatch.offers.sql.FOLD_ANSWERS": lambda f: {
        "band_m": 250, "batch": 5000, "settle_s": 0, "history_s": 86400, "silence_s": 60,
        "half_m": 2500.0, "door": 0.5, "min_answers": 50,
    },
    "dispatch.offers.sql.SAVE_MARKET": lambda f: {
        "area": -1, "door": 0.5, "half_distance_m": 2500.0, "answers": 100,
    },
    "dispatch.offers.sql.LIKELY_CANDIDATES": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"],
        "worker_ids": [f"w-{n}" for n in range(3000, 3100)],
        "distances": [100.0 * n for n in range(100)], "skills": ["wash"], "min_rating": None,
        "half_m": 2500.0, "door": 0.5, "min_answers": 50, "pool": 30, "history_s": 86400,
        "recent": 12, "silence_s": 60, "settle_s": 840,
    },
    "dispatch.offers.sql.MAKE_CHOSEN_OFFERS": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"], "wave": 2,
        "worker_ids": ["w-3001"], "distances": [300.0], "why": [json.dumps({"policy": "x"})],
        "radius_m": 5000,
    },
    "dispatch.offers.sql.UNFILLED": lambda f: {
        "job_id": f["open"]["id"], "version": f["open"]["version"], "waves": 3,
    },
    "dispatch.offers.sql.STALLED_ROUNDS": lambda f: {
        "opening": ["job.created", "job.reopened", "job.released"], "waves": 3,
        "stalled_s": 60, "limit": 100,
    },
    "dispatch.offers.sql.RECORD_RESUMED": lambda f: {
        "job_ids": [f["open"]["id"]], "versions": [f["open"]["version"]], "waves": [1],
    },
    "dispatch.offers.sql.OFFERS_OF_WORKER": lambda f: {"worker_id": WORKER, "limit": 100},
    "dispatch.offers.sql.DECLINE": lambda f: {
        "job_id": f["open"]["id"], "worker_id": WORKER, "answer": "{}", **idempotency.NO_KEY,
    },
    "dispatch.offers.sql.WAVE_ALL_DECLINED": lambda f: {"job_id": f["open"]["id"]},
    "dispatch.outbox.sql.CLAIM_UNPUBLISHED": lambda f: {
        "batch_size": 1000, "claim_seconds": 30, "resend_seconds": 20,
    },
    "dispatch.outbox.sql.CLAIM_UNPUBLISHED_OF_JOB": lambda f: {
        "batch_size": 1000, "claim_seconds": 30, "resend_seconds": 20,
        "job_id": f["working"]["id"],
    },
    "dispatch.outbox.sql.MARK_RELAYED": lambda f: {"claimed": [], "sent": []},
    "dispatch.outbox.sql.UNPUBLISHED_UP_TO": lambda f: {
        "job_ids": [f["working"]["id"]], "versions": [f["working"]["version"]],
    },
    "dispatch.outbox.sql.MARK_PUBLISHED": lambda f: {
        "ids": [f["event"]["id"], *f["unpublished_offer_events"]],
    },
    "dispatch.outbox.sql.RELAY_LAG": lambda f: {},
    "dispatch.push.sql.CONNECT": lambda f: {
        "connection_id": "conn-new", "caller_id": WORKER, "roles": ["worker"],
        "token_expires_at": None,
    },
    "dispatch.push.sql.FORGET": lambda f: {"connection_ids": ["conn-1"]},
    "dispatch.push.sql.DISCONNECT": lambda f: {"connection_id": "conn-1", "caller_id": WORKER},
    "dispatch.push.sql.RECIPIENTS": lambda f: {
        "workers": [WORKER], "job_event": True, "job_id": f["working"]["id"],
        "version": f["working"]["version"],
    },
    "dispatch.push.sql.EXPIRED": lambda f: {"limit": 100},
    "dispatch.rosters.sql.ADD_FAVOURITE": lambda f: {"business_id": "b-1", "worker_id": WORKER},
    "dispatch.rosters.sql.BLOCK": lambda f: {"business_id": "b-1", "worker_id": WORKER},
    "dispatch.rosters.sql.ON_LIST": lambda f: {
        "business_id": "b-1", "worker_id": WORKER, "list": "favourite",
    },
    "dispatch.rosters.sql.REMOVE": lambda f: {
        "business_id": "b-1", "worker_id": WORKER, "list": "favourite",
    },
    "dispatch.rosters.sql.LIST": lambda f: {
        "business_id": "b-1", "list": "favourite", "limit": 100,
    },
    "dispatch.rosters.sql.BLOCKED_AMONG": lambda f: {"business_id": "b-1", "worker_ids": [WORKER]},
    "dispatch.rosters.sql.FAVOURITES": lambda f: {"business_id": "b-1"},
    "dispatch.idempotency.CLAIM_KEY_WITH_ANSWER": lambda f: {
        "principal": "b-1", "key": "k-new", "fingerprint": "f", "status": 409, "body": "{}",
    },
    "dispatch.idempotency.TRY_KEY": lambda f: {
        "principal": "b-1", "key": "k-new", "fingerprint": "f",
    },
    "dispatch.idempotency.STORED_ANSWER": lambda f: {"principal": "b-1", "key": "k-new"},
    "dispatch.idempotency.EXPIRE_KEYS": lambda f: {"hours": 24, "limit": 100},
    "dispatch.workers.profiles.SET_SKILLS": lambda f: {
        "worker_id": WORKER, "skills": ["wash"], **idempotency.NO_KEY,
    },
    "dispatch.jobs.photos.CREATE_PHOTO": lambda f: {
        "owner_id": WORKER, "s3_key": "photos/new", "content_type": "image/jpeg",
        "upload_url": "https://bucket/", "upload_fields": "{}", "expires_in": 900,
        **idempotency.NO_KEY,
    },
    "dispatch.jobs.photos.PHOTO_OF_OWNER": lambda f: {
        "photo_id": f["working"]["before_photo_id"], "owner_id": f["working"]["assignee_id"],
    },
}  # fmt: skip


@dataclass
class Path_:
    name: str
    empty_ms: float
    history_ms: float
    empty_buffers: int | None = None
    history_buffers: int | None = None

    @property
    def ratio(self) -> float:
        return self.history_ms / self.empty_ms if self.empty_ms else 0.0


def _once(conn: db.Connection, run: Callable[[db.Connection], object]) -> float:
    """One run in a transaction rolled back after: its milliseconds."""
    started = time.perf_counter()
    try:
        with conn.transaction():
            run(conn)
            raise psycopg.Rollback()
    finally:
        elapsed = (time.perf_counter() - started) * 1000
    return elapsed


def _statement(sql: str, params: dict[str, Any]) -> Callable[[db.Connection], object]:
    def run(conn: db.Connection) -> object:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else None

    return run


def _aws_stand_in() -> None:
    """The sweeper's pass puts the auto-picks' events on the bus: on moto, as the local stack
    does (the same puts on both sides)."""
    from dispatch_local import embedded

    if not os.environ.get("AWS_ENDPOINT_URL"):
        embedded.use_aws_stand_in(embedded.aws())
    os.environ.setdefault("EVENT_BUS_NAME", "dispatch-bench")
    embedded.ensure_outbox(os.environ["EVENT_BUS_NAME"])  # the bus (and a queue left unused)


def _sweep(conn: db.Connection) -> object:
    from dispatch import sweeper

    return sweeper.sweep(conn)


# A statement of a millisecond runs until each side has spent this long (at most MAX_RUNS
# runs): its p50 is then of dozens of runs, not of seven that a busy machine's noise decides.
SAMPLE_MS = 300.0
MAX_RUNS = 61


def runs_of(
    conns: tuple[db.Connection, db.Connection], runs: int, progress: Callable[[str], None]
) -> list[Path_]:
    """Every case and the sweeper's pass, alternating empty and history, p50 of `runs` (more
    for a quick statement: SAMPLE_MS)."""
    statements = named_statements()
    found = (facts(conns[0]), facts(conns[1]))
    paths: list[Path_] = []
    names = [*CASES, SWEEP]
    for n, name in enumerate(names, 1):
        work = [
            _sweep if name == SWEEP else _statement(statements[name], CASES[name](found[side]))
            for side in (0, 1)
        ]
        times: tuple[list[float], list[float]] = ([], [])
        run = 0  # the first is a warm-up
        while run <= runs or (sum(times[1]) < SAMPLE_MS and run <= MAX_RUNS):
            for side in (0, 1) if run % 2 else (1, 0):
                ms = _once(conns[side], work[side])
                if run:
                    times[side].append(ms)
            run += 1
        path = Path_(name, statistics.median(times[0]), statistics.median(times[1]))
        if name != SWEEP:
            path.empty_buffers, path.history_buffers = (buffers(c, name) for c in conns)
        paths.append(path)
        progress(
            f"[{n}/{len(names)}] {name}: {path.empty_ms:.2f} ms empty, "
            f"{path.history_ms:.2f} ms history ({path.ratio:.2f}x)"
        )
    return paths


def explain(conn: db.Connection, name: str) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of a case on `conn`, rolled back."""
    sql = named_statements()[name]
    params = CASES[name](facts(conn))
    lines: list[str] = []

    def run(c: db.Connection) -> None:
        rows = c.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params).fetchall()
        lines.extend(str(next(iter(row.values()))) for row in rows)

    _once(conn, run)
    return "\n".join(lines)


def buffers(conn: db.Connection, name: str) -> int:
    """Shared buffers (hit + read) a case touches on `conn`, from EXPLAIN (ANALYZE, BUFFERS):
    deterministic where time is not, so tests can hold a path to them."""
    sql = named_statements()[name]
    params = CASES[name](facts(conn))
    found: list[int] = []

    def run(c: db.Connection) -> None:
        row = c.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql,
            params,
        ).fetchone()
        assert row is not None
        plan = next(iter(row.values()))[0]["Plan"]
        found.append(int(plan["Shared Hit Blocks"]) + int(plan["Shared Read Blocks"]))

    _once(conn, run)
    return found[0]


def schema_version() -> str:
    return sorted(p.name for p in (REPO_ROOT / "migrations").glob("0*.sql"))[-1]


def _database(admin: str, name: str) -> str:
    return psycopg.conninfo.make_conninfo(admin, dbname=name)


def _exists(admin: str, name: str) -> str | None:
    """The database's comment (what it holds), or None when it does not exist."""
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database"
            " WHERE datname = %s",
            (name,),
        ).fetchone()
    return None if row is None else str(row[0])


def _create(admin: str, name: str) -> str:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _database(admin, name)
    _migrate(url)
    return url


def _current_anew(url: str) -> None:
    """The current state written again (its times are relative to now): every unfinished job
    and what hangs off it goes, history (all finished) stays."""
    with db.connect(url) as conn:
        with conn.transaction():
            # The bench's own reset, as the superuser: jobs_deleted_only_when_finished refuses
            # deleting an unfinished job to anyone else (migration 0045), rightly.
            conn.execute("SET LOCAL session_replication_role = replica")
            live = "SELECT id FROM jobs WHERE status IN ('open', 'assigned', 'in_progress')"
            for table in ("job_events", "offer_events", "job_offers", "job_declines",
                          "job_applications", "offer_waves"):  # fmt: skip
                conn.execute(f"DELETE FROM {table} WHERE job_id IN ({live})")
            conn.execute(f"DELETE FROM jobs WHERE id IN ({live})")
            conn.execute("DELETE FROM photos WHERE owner_id LIKE 'w-cur-%'")
            conn.execute("DELETE FROM push_connections")
        # What the sweeper would have folded of the history and has not yet (all of its last
        # day on a database migrated to the fold; nothing on the next run).
        history_load.fold(conn)
        history_load.current(conn)


def build(
    admin: str,
    days: int,
    jobs_per_day: int,
    progress: Callable[[str], None],
    prefix: str = "dispatch_bench",
) -> tuple[str, str]:
    """(empty, history): the history one reused when it matches, the empty one made anew
    after it (their current states written moments apart)."""
    history = _history(admin, days, jobs_per_day, progress, prefix)
    empty = _create(admin, f"{prefix}_empty")
    with db.connect(empty) as conn:
        conn.execute(history_load.WORKERS_SQL, {"workers": history_load.WORKERS})
        conn.commit()
        history_load.current(conn)
    history_load.analyze(empty)
    return empty, history


def _history(
    admin: str, days: int, jobs_per_day: int, progress: Callable[[str], None], prefix: str
) -> str:
    suffix = "" if jobs_per_day == history_load.JOBS_PER_DAY else f"_{jobs_per_day}"
    name = f"{prefix}_history_{days}{suffix}"
    loaded = f"days={days} jobs_per_day={jobs_per_day} loader={history_load.VERSION}"
    holds = f"{loaded} schema={schema_version()}"
    found = _exists(admin, name)
    if found is not None and _loaded_part(found) == loaded:
        url = _database(admin, name)
        if found != holds:
            # A newer schema is migrated onto the history, as a deployment migrates its own
            # database: the same migrations, timed here on weeks of rows.
            progress(f"{name}: migrating ({found} -> {holds})")
            started = time.monotonic()
            _migrate(url)
            progress(f"{name}: migrated in {time.monotonic() - started:.0f} s")
            _comment(admin, name, holds)
        progress(f"{name}: reused ({holds})")
        _current_anew(url)
        history_load.analyze(url)
        return url
    progress(f"{name}: loading {days} days of {jobs_per_day:,} jobs")
    url = _create(admin, name)
    started = time.monotonic()
    history_load.load(url, days, jobs_per_day, progress)
    progress(f"{name}: loaded in {time.monotonic() - started:.0f} s")
    _comment(admin, name, holds)
    return url


def _loaded_part(holds: str) -> str:
    """What a history database's comment says was loaded, without the schema it is at."""
    return " ".join(part for part in holds.split() if not part.startswith("schema="))


def _comment(admin: str, name: str, holds: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{holds}'")


def _migrate(url: str) -> None:
    from dispatch import migrations

    with db.connect(url) as conn:
        migrations.apply(conn, migrations.load(REPO_ROOT / "migrations"))


@dataclass
class Report:
    days: int
    jobs_per_day: int
    runs: int
    paths: list[Path_]
    plans: dict[str, str]
    sizes: dict[str, str]

    def worst(self) -> Path_:
        return max(self.paths, key=lambda p: p.ratio)


def _sizes(url: str) -> dict[str, str]:
    with db.connect(url) as conn:
        rows = conn.execute(
            "SELECT s.relname, pg_size_pretty(pg_total_relation_size(c.oid)) AS size,"
            " n_live_tup FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid"
            " ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 8"
        ).fetchall()
    return {r["relname"]: f"{r['size']} ({r['n_live_tup']:,} rows)" for r in rows}


def measure(
    admin: str,
    days: int,
    jobs_per_day: int = history_load.JOBS_PER_DAY,
    runs: int = 7,
    progress: Callable[[str], None] = lambda _: None,
    prefix: str = "dispatch_bench",
) -> Report:
    os.environ.setdefault(
        "DATABASE_URL", admin
    )  # the settings ask for one; each call names its own
    _aws_stand_in()
    empty, history = build(admin, days, jobs_per_day, progress, prefix)
    with db.connect(empty) as e, db.connect(history) as h:
        for conn in (e, h):
            conn.autocommit = True
            conn.execute("SET statement_timeout = 0")  # a slow path is measured, not cut short
        paths = runs_of((e, h), runs, progress)
        worst = sorted((p for p in paths if p.name != SWEEP), key=lambda p: -p.ratio)[:3]
        plans = {p.name: explain(h, p.name) for p in worst}
    return Report(days, jobs_per_day, runs, paths, plans, _sizes(history))


def report(result: Report) -> str:
    worst = result.worst()
    lines = [
        f"{result.days} days of {result.jobs_per_day:,} jobs a day against the current state"
        f" alone, p50 of at least {result.runs} runs each (a quick statement: until it has"
        f" run {SAMPLE_MS:.0f} ms on each side), alternated in one run:",
        "",
        "| path | empty (ms) | history (ms) | ratio | buffers: empty | history |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for path in sorted(result.paths, key=lambda p: -p.ratio):
        lines.append(
            f"| {path.name.removeprefix('dispatch.')} | {path.empty_ms:.2f}"
            f" | {path.history_ms:.2f} | {path.ratio:.2f}x"
            f" | {_count(path.empty_buffers)} | {_count(path.history_buffers)} |"
        )
    lines += ["", "The history database's largest tables:", ""]
    lines += [f"- {table}: {size}" for table, size in result.sizes.items()]
    for name, plan in result.plans.items():
        lines += ["", f"EXPLAIN (ANALYZE, BUFFERS) of {name} on history:", "", "```", plan, "```"]
    lines += [
        "",
        f"worst path at {result.days} days: {worst.ratio:.1f} x empty"
        f" ({worst.name.removeprefix('dispatch.')})",
    ]
    return "\n".join(lines)


def _count(n: int | None) -> str:
    return "" if n is None else f"{n:,}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.history", description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument(
        "--jobs-per-day",
        type=int,
        default=int(os.environ.get("DISPATCH_HISTORY_JOBS_PER_DAY", history_load.JOBS_PER_DAY)),
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    admin = owner_url()
    if not admin:
        sys.exit("bench-history needs DATABASE_URL (a Postgres it may create databases on)")
    result = measure(
        admin, args.days, args.jobs_per_day, args.runs, lambda line: print(line, flush=True)
    )
    text = report(result)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "history.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    (RESULTS / "history.md").write_text(text + "\n")
    from bench import report as docs

    print(f"wrote the History section of {docs.write_section('history')}")
    print(text)  # its last line: worst path at N days


if __name__ == "__main__":
    main()
