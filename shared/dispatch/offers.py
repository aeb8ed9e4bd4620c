"""Offers in waves: a job that opens is pushed to the nearest qualified, idle workers, a few at
a time, widening until someone takes it.

A round starts when the outbox publisher publishes `job.created`, `job.reopened` or
`job.released`: it schedules wave 1 on the offer queue (a standard SQS queue, so each message
can carry its own delay). Each wave reads fresh positions from Redis, lets Postgres choose
(every skill of the job, no live job, never offered this job, not the worker who just lost or
gave it back; nearest first, rating breaking ties), records the offers and their
`offer.created` events in one transaction, puts the events on the bus, and schedules the next
wave. After the last wave a final check tells the business `job.unfilled` if nobody took it.

A wave stops as soon as the job is no longer open at the round's version. Every step is safe
to repeat: a redelivered wave message finds its `offer_waves` row and only re-puts events
that are still unpublished and re-schedules the next wave.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from dispatch import aws, locations
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs.models import JobEvent, Location
from dispatch.observability import count, logger
from dispatch.publisher import announce

# Events that open a job to the market, and who must not be offered it in the new round.
OPENING_EVENTS = frozenset({"job.created", "job.reopened", "job.released"})

# Distances within the same band count as equal, so that rating can break the tie.
TIE_BAND_M = 100

# The job, if it is still open in this round.
OPEN_JOB: LiteralString = """
SELECT id, version, lat, lng, skills, window_start, window_end FROM jobs
 WHERE id = %(job_id)s AND status = 'open' AND version = %(version)s
"""
# The same, holding the row (FOR SHARE) until commit: an accept that commits first leaves
# nothing to lock; one that comes later waits for the offers to commit
# (job_offers_only_while_open, the database's own guard, locks the same way).
LOCK_OPEN_JOB: LiteralString = OPEN_JOB + "   FOR SHARE"

# A wave runs once per round: its row is the proof (offer_waves primary key).
START_WAVE: LiteralString = """
INSERT INTO offer_waves (job_id, job_version, wave)
VALUES (%(job_id)s, %(version)s, %(wave)s)
ON CONFLICT DO NOTHING
RETURNING wave
"""

# The candidates (nearest first, from Redis) filtered and ranked by Postgres; each chosen
# worker gets one job_offers row (job_offers_once_per_worker) and one offer.created event.
MAKE_OFFERS: LiteralString = """
WITH candidate AS (
    SELECT * FROM unnest(%(worker_ids)s::text[], %(distances)s::float8[])
        AS c(worker_id, distance_m)
), chosen AS (
    SELECT c.worker_id, c.distance_m
      FROM candidate c
      LEFT JOIN workers w ON w.id = c.worker_id
     WHERE coalesce(w.skills, '{}') @> %(skills)s::text[]
       AND c.worker_id IS DISTINCT FROM %(excluded_worker_id)s
       AND NOT EXISTS (SELECT 1 FROM jobs live
                        WHERE live.assignee_id = c.worker_id
                          AND live.status IN ('assigned', 'in_progress'))
       AND NOT EXISTS (SELECT 1 FROM job_offers o
                        WHERE o.job_id = %(job_id)s AND o.worker_id = c.worker_id)
     ORDER BY floor(c.distance_m / %(tie_band_m)s), w.rating DESC NULLS LAST, c.distance_m
     LIMIT %(size)s
), offered AS (
    INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
    SELECT %(job_id)s, worker_id, %(version)s, %(wave)s, distance_m FROM chosen
    RETURNING worker_id, distance_m, created_at
)
INSERT INTO offer_events (job_id, type, version, occurred_at, data)
SELECT %(job_id)s, 'offer.created', %(version)s, created_at,
       jsonb_build_object('worker_id', worker_id, 'distance_m', round(distance_m::numeric, 1),
                          'wave', %(wave)s, 'radius_m', %(radius_m)s, 'job', %(job)s::jsonb)
  FROM offered
RETURNING id
"""

# The final check: the job is still open in this round after every wave (one per round:
# offer_events_one_unfilled_per_round).
UNFILLED: LiteralString = """
INSERT INTO offer_events (job_id, type, version, data)
VALUES (%(job_id)s, 'job.unfilled', %(version)s,
        jsonb_build_object('waves', %(waves)s,
                           'offered', (SELECT count(*) FROM job_offers
                                        WHERE job_id = %(job_id)s AND job_version = %(version)s)))
"""

PENDING_EVENTS: LiteralString = """
SELECT id, job_id, type, version, actor, occurred_at, data FROM offer_events
 WHERE job_id = %(job_id)s AND published_at IS NULL
 ORDER BY occurred_at, id
"""
MARK_PUBLISHED: LiteralString = """
UPDATE offer_events SET published_at = now() WHERE id = ANY(%(ids)s)
"""


class WaveRequest(BaseModel):
    """The offer queue's message: wave `wave` (from 1) of the round opened at `version`."""

    job_id: UUID
    version: int
    wave: int
    excluded_worker_id: str | None = None

    def next(self) -> "WaveRequest":
        return self.model_copy(update={"wave": self.wave + 1})


@dataclass(frozen=True)
class WaveReport:
    offered: int  # offers made by this run
    published: int  # events put on the bus by this run
    scheduled: bool  # whether a next wave (or the final check) was scheduled
    unfilled: bool = False


Schedule = Callable[[WaveRequest, int], None]  # a wave request and its delay in seconds
PutAll = Callable[[Sequence[JobEvent]], None]


def round_for(event: JobEvent) -> WaveRequest | None:
    """The first wave of the round an event opens, or None for events that open nothing."""
    if event.type not in OPENING_EVENTS:
        return None
    excluded = {
        "job.reopened": event.data.get("previous_assignee_id"),  # the lease ran out on them
        "job.released": event.actor,  # they gave it back
    }.get(event.type)
    return WaveRequest(
        job_id=event.job_id, version=event.version, wave=1, excluded_worker_id=excluded
    )


def start_round(event: JobEvent) -> None:
    """Schedule wave 1 at once when `event` opens the job and offers are configured."""
    request = round_for(event)
    if request is not None and settings().offer_queue_url:
        sqs_schedule(request, 0)


def sqs_schedule(request: WaveRequest, delay_seconds: int) -> None:
    aws.client("sqs").send_message(
        QueueUrl=settings().offer_queue_url,
        MessageBody=request.model_dump_json(),
        DelaySeconds=delay_seconds,
    )


def run_wave(conn: Connection, request: WaveRequest, schedule: Schedule, put: PutAll) -> WaveReport:
    waves = settings().offer_waves
    if request.wave > len(waves):
        return _final_check(conn, request, len(waves), put)
    wave = waves[request.wave - 1]
    params: dict[str, Any] = {"job_id": request.job_id, "version": request.version}
    job = conn.execute(OPEN_JOB, params).fetchone()
    if job is None:  # taken (or cancelled) since the round began: the round is over
        return WaveReport(0, publish_pending(conn, request.job_id, put), scheduled=False)
    near = locations.fresh_nearby(
        Location(lat=job["lat"], lng=job["lng"]), wave.radius_m, settings().offer_candidate_limit
    )
    offered = 0
    with conn.transaction():
        job = conn.execute(LOCK_OPEN_JOB, params).fetchone()
        if (
            job is not None
            and conn.execute(START_WAVE, {**params, "wave": request.wave}).fetchone()
        ):
            offered = len(
                conn.execute(
                    MAKE_OFFERS,
                    {
                        **params,
                        "wave": request.wave,
                        "size": wave.size,
                        "radius_m": wave.radius_m,
                        "worker_ids": [worker_id for worker_id, _ in near],
                        "distances": [distance for _, distance in near],
                        "skills": job["skills"],
                        "excluded_worker_id": request.excluded_worker_id,
                        "tie_band_m": TIE_BAND_M,
                        "job": Jsonb(_offered_job(job)),
                    },
                ).fetchall()
            )
    published = publish_pending(conn, request.job_id, put)
    if job is not None:
        schedule(request.next(), settings().offer_wave_interval_seconds)
    count("OffersMade", offered)
    logger.info(
        "offer wave",
        extra={**request.model_dump(mode="json"), "offered": offered, "open": job is not None},
    )
    return WaveReport(offered, published, scheduled=job is not None)


def _final_check(conn: Connection, request: WaveRequest, waves: int, put: PutAll) -> WaveReport:
    params: dict[str, Any] = {"job_id": request.job_id, "version": request.version}
    unfilled = False
    with conn.transaction():
        if (
            conn.execute(LOCK_OPEN_JOB, params).fetchone()
            and conn.execute(START_WAVE, {**params, "wave": request.wave}).fetchone()
        ):
            conn.execute(UNFILLED, {**params, "waves": waves})
            unfilled = True
    if unfilled:
        count("JobsUnfilled")
    return WaveReport(0, publish_pending(conn, request.job_id, put), False, unfilled)


def _offered_job(job: dict[str, Any]) -> dict[str, Any]:
    """What the offered worker needs to decide (they cannot read the job itself until they
    hold it): where, which skills, when, and the version to accept at."""
    return {
        "id": str(job["id"]),
        "version": job["version"],
        "location": {"lat": job["lat"], "lng": job["lng"]},
        "skills": job["skills"],
        "window": {"start": job["window_start"].isoformat(), "end": job["window_end"].isoformat()},
    }


def publish_pending(conn: Connection, job_id: UUID, put: PutAll) -> int:
    """Put the job's unpublished offer events on the bus, then mark them (at least once)."""
    events = [
        JobEvent.model_validate(row) for row in conn.execute(PENDING_EVENTS, {"job_id": job_id})
    ]
    if events:
        put(events)
        conn.execute(MARK_PUBLISHED, {"ids": [e.id for e in events]})
        announce(events)
    return len(events)
