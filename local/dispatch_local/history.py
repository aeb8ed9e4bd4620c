"""A history of what clients asked and heard, and an offline checker of the invariants.

Recording: every request is one `Op` (who, what, the key, when it was invoked and completed,
and its outcome: `ok` for 2xx, `fail` for a definite refusal (4xx), `unknown` when the client
cannot tell whether it happened: a 5xx, a timeout, a dropped connection). A deliberate retry
with the same idempotency key names the op it repeats.

Checking (after the run, against the history and the database as the system left it):

- at most one winner per (job, version): no two successful accepts produce the same version;
- versions contiguous: each job's events are versions 1..n and the job is at version n;
- one event per change: every successful change has exactly its event (type and actor) at the
  version it answered, and every event a client caused comes from a request that succeeded or
  whose outcome is unknown (never from a refused one);
- no worker with two live jobs, replaying the events in the order they were written;
- every expired lease reopened: no job is left assigned with a lease long past;
- the business's choice: a business_choice job is assigned only by its business or the
  auto-pick (never by an accept), only to a worker who had applied for it, and no job to a
  worker its business had blocked; every standing application has its application.created;
- every committed event published (recorded by the publisher as put on the bus), the
  application events too;
- replays identical: a retry with the same key heard exactly what the first request heard.
"""

import json
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dispatch.db import Connection

# Which event a successful request writes (transitions name theirs in the body).
EVENT_OF_ROUTE = {
    "create": "job.created",
    "accept": "job.assigned",
    "assign": "job.assigned",  # the business's choice: the business is the actor
    "attach": "job.photo_attached",
    "rate": "job.rated",
}
EVENT_OF_TRANSITION = {
    "check_in": "job.checked_in",
    "release": "job.released",
    "start": "job.started",
    "complete": "job.completed",
    "cancel": "job.cancelled",
}
LIVE_UNTIL = {"job.released", "job.reopened", "job.completed", "job.cancelled", "job.expired"}


@dataclass
class Op:
    client: str
    route: str  # create, accept, transition, attach, rate, read, nearby, offers, decline, ...
    method: str
    path: str
    key: str | None
    body: Any
    invoked_at: float
    completed_at: float = 0.0
    outcome: str = "unknown"  # ok | fail | unknown
    status: int | None = None
    response: Any = None
    retry_of: int | None = None  # index of the op this one repeats with the same key
    index: int = -1

    @property
    def job(self) -> dict[str, Any] | None:
        """The job a successful change answered with."""
        if self.outcome == "ok" and isinstance(self.response, dict) and "version" in self.response:
            return self.response
        return None


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def invoke(self, op: Op) -> Op:
        with self._lock:
            op.index = len(self.ops)
            self.ops.append(op)
        return op

    def save(self, path: Path) -> None:
        with path.open("w") as out:
            for op in self.ops:
                out.write(json.dumps(asdict(op), default=str) + "\n")

    @staticmethod
    def load(path: Path) -> "History":
        return History([Op(**json.loads(line)) for line in path.read_text().splitlines()])


def outcome_of(status: int | None) -> str:
    if status is None or status >= 500:
        return "unknown"
    return "ok" if status < 400 else "fail"


# -- the checks -------------------------------------------------------------------------


def check(
    history: History,
    conn: Connection,
    lease_grace_seconds: float = 30,
    past_jobs: frozenset[str] = frozenset(),
) -> list[str]:
    """Every violation found, as sentences; empty when the history is consistent. `past_jobs`:
    jobs written before the history began, not through the product (the simulator's past):
    their events came from no request by design; every other check still covers them."""
    events = [
        event
        for event in conn.execute(
            "SELECT id, job_id::text AS job_id, type, version, actor,"
            " data ->> 'assignee_id' AS assignee FROM job_events ORDER BY id"
        ).fetchall()
        if event["job_id"] not in past_jobs
    ]
    return [
        *one_winner_per_version(history.ops),
        *replays_identical(history.ops),
        *versions_contiguous(conn),
        *one_event_per_change(history.ops, events),
        *no_worker_holds_two(events),
        *expired_leases_reopened(conn, lease_grace_seconds),
        *choices_kept(conn),
        *every_event_published(conn),
    ]


def one_winner_per_version(ops: Iterable[Op]) -> Iterator[str]:
    winners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for op in ops:
        if op.route in ("accept", "assign") and op.job and op.retry_of is None:
            winners[(op.job["id"], op.job["version"])].add(op.client)
    for (job_id, version), clients in winners.items():
        if len(clients) > 1:
            yield f"job {job_id} version {version} was won by {sorted(clients)}"


def replays_identical(ops: list[Op]) -> Iterator[str]:
    for op in ops:
        if op.retry_of is None:
            continue
        first = ops[op.retry_of]
        if first.outcome == "unknown" or op.outcome == "unknown":
            continue  # nothing was stored for a 5xx, and a timeout heard nothing
        if (op.status, op.response) != (first.status, first.response):
            yield (
                f"op {op.index} replayed op {first.index} but heard {op.status} {op.response!r}"
                f" instead of {first.status} {first.response!r}"
            )


def versions_contiguous(conn: Connection) -> Iterator[str]:
    rows = conn.execute("""
        SELECT j.id::text AS job_id, j.version, array_agg(e.version ORDER BY e.version) AS seen
          FROM jobs j LEFT JOIN job_events e ON e.job_id = j.id
         GROUP BY j.id, j.version
    """)
    for row in rows:
        if row["seen"] != list(range(1, row["version"] + 1)):
            yield f"job {row['job_id']} is at version {row['version']} with events {row['seen']}"


def expected_event(op: Op) -> str | None:
    if op.route == "transition" and isinstance(op.body, dict):
        return EVENT_OF_TRANSITION.get(op.body.get("event", ""))
    return EVENT_OF_ROUTE.get(op.route)


def one_event_per_change(ops: list[Op], events: list[dict[str, Any]]) -> Iterator[str]:
    by_change = {(e["job_id"], e["version"]): e for e in events}
    asked: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # job, type, actor -> outcomes
    for op in ops:
        wanted = expected_event(op)
        if wanted is None:
            continue
        job = op.job
        if job is not None:
            event = by_change.get((job["id"], job["version"]))
            if event is None or (event["type"], event["actor"]) != (wanted, op.client):
                yield (
                    f"op {op.index} ({op.route}) answered version {job['version']} of job"
                    f" {job['id']} but the event there is {event}"
                )
            asked[(job["id"], wanted, op.client)].add("ok")
        else:  # refused, unknown, or a success that answers with something else (a rating)
            job_id = _job_id_of(op)
            if job_id:
                asked[(job_id, wanted, op.client)].add(op.outcome)
    for event in events:
        if event["actor"].startswith("system"):
            continue
        outcomes = asked.get((event["job_id"], event["type"], event["actor"]), set())
        if event["type"] == "job.created":
            continue  # the job id is only known from a successful answer (checked above)
        if not outcomes & {"ok", "unknown"}:
            yield (
                f"event {event['type']} v{event['version']} of job {event['job_id']} by"
                f" {event['actor']} came from no request that could have made it"
            )


def _job_id_of(op: Op) -> str | None:
    parts = op.path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "jobs" and parts[2] != "nearby" else None


def no_worker_holds_two(events: list[dict[str, Any]]) -> Iterator[str]:
    """Replays the events in the order they were written (UUIDv7 ids are stamped at insert,
    after any lock wait, so a second holder's event always follows the first one's end)."""
    live: dict[str, str] = {}  # worker -> job
    holder: dict[str, str] = {}  # job -> worker
    for e in events:
        job_id = e["job_id"]
        if e["type"] == "job.assigned":
            worker = e.get("assignee") or e["actor"]  # an assign's actor is who chose
            previous = holder.pop(job_id, None)  # a retake of an expired lease ends the last one
            if previous is not None:
                live.pop(previous, None)
            if worker in live and live[worker] != job_id:
                yield f"{worker} took job {job_id} while holding job {live[worker]}"
            live[worker], holder[job_id] = job_id, worker
        elif e["type"] in LIVE_UNTIL and job_id in holder:
            live.pop(holder.pop(job_id), None)


def expired_leases_reopened(conn: Connection, grace_seconds: float) -> Iterator[str]:
    rows = conn.execute(
        """SELECT id::text AS job_id, lease_expires_at FROM jobs
            WHERE status = 'assigned'
              AND lease_expires_at < now() - make_interval(secs => %s)""",
        (grace_seconds,),
    )
    for row in rows:
        yield f"job {row['job_id']} still assigned, lease expired at {row['lease_expires_at']}"


# The business's choice, read from the events and the tables as the run left them.
CHOICES_BROKEN = """
SELECT 'accepted' AS broken, e.job_id::text AS job_id, e.version, e.data ->> 'assignee_id' AS who
  FROM job_events e JOIN jobs j ON j.id = e.job_id
 WHERE e.type = 'job.assigned' AND j.assignment = 'business_choice'
   AND e.actor = e.data ->> 'assignee_id'
UNION ALL
SELECT 'not an applicant', e.job_id::text, e.version, e.data ->> 'assignee_id'
  FROM job_events e JOIN jobs j ON j.id = e.job_id
 WHERE e.type = 'job.assigned' AND j.assignment = 'business_choice'
   AND NOT EXISTS (SELECT 1 FROM job_applications a
                    WHERE a.job_id = e.job_id AND a.worker_id = e.data ->> 'assignee_id'
                      AND a.applied_at <= e.occurred_at)
UNION ALL
SELECT 'blocked', e.job_id::text, e.version, e.data ->> 'assignee_id'
  FROM job_events e JOIN jobs j ON j.id = e.job_id
  JOIN rosters r ON r.business_id = j.business_id AND r.worker_id = e.data ->> 'assignee_id'
 WHERE e.type = 'job.assigned' AND r.list = 'blocked' AND r.added_at < e.occurred_at
UNION ALL
SELECT 'no application.created', a.job_id::text, NULL, a.worker_id
  FROM job_applications a
 WHERE a.withdrawn_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM offer_events o
                    WHERE o.job_id = a.job_id AND o.type = 'application.created'
                      AND o.data ->> 'worker_id' = a.worker_id)
"""
SAID = {
    "accepted": "was accepted by {who} although its business chooses",
    "not an applicant": "was assigned to {who}, who had not applied",
    "blocked": "was assigned to {who}, whom its business had blocked",
    "no application.created": "has an application by {who} without its application.created",
}


def choices_kept(conn: Connection) -> Iterator[str]:
    for row in conn.execute(CHOICES_BROKEN):
        at = f" version {row['version']}" if row["version"] is not None else ""
        yield f"job {row['job_id']}{at} " + SAID[row["broken"]].format(who=row["who"])


def every_event_published(conn: Connection) -> Iterator[str]:
    rows = conn.execute("""
        SELECT id::text AS id, type, job_id::text AS job_id FROM job_events
         WHERE published_at IS NULL
        UNION ALL
        SELECT id::text, type, job_id::text FROM offer_events
         WHERE published_at IS NULL AND type LIKE 'application.%'
    """)
    for row in rows:
        yield f"event {row['type']} {row['id']} of job {row['job_id']} never reached the bus"
