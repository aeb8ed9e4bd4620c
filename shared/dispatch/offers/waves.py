"""Offers in waves: a job that opens is pushed to the nearest qualified, idle workers, a few at
a time, widening until someone takes it.

A round starts when the outbox publisher publishes `job.created`, `job.reopened` or
`job.released`: it schedules wave 1 on the offer queue (a standard SQS queue, so each message
can carry its own delay). Each wave reads fresh positions from Redis, lets Postgres choose
(every skill of the job, no live job, never offered this job, not the worker who just lost or
gave it back; nearest first, rating breaking ties), records the offers and their
`offer.created` events in one transaction, relays the events to the outbox queue (they reach
the bus the way every event does, dispatch.outbox), and schedules the next wave. After the
last wave a final check tells the business `job.unfilled` if nobody took it.

A wave stops as soon as the job is no longer open at the round's version. Every step is safe
to repeat: a redelivered wave message finds its `offer_waves` row and only relays what is
still unrelayed and re-schedules the next wave.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dispatch.config.offers import Wave, offer_settings
from dispatch.db import Connection
from dispatch.errors import CacheUnavailable
from dispatch.events import Event
from dispatch.jobs.models import JobEventType
from dispatch.observability import count, logger
from dispatch.offers import policy, sql
from dispatch.offers.models import WaveRequest as WaveRequest  # the offer queue's message
from dispatch.offers.rounds import sqs_schedule, sqs_schedule_all
from dispatch.outbox import relay
from dispatch.rosters import commands as rosters
from dispatch.workers import locations

# Events that open a job to the market: each starts a round of offers.
OPENING_EVENTS = frozenset({JobEventType.CREATED, JobEventType.REOPENED, JobEventType.RELEASED})

# Distances within the same band count as equal, so that rating can break the tie.
TIE_BAND_M = 100


@dataclass(frozen=True)
class WaveReport:
    offered: int  # offers made by this run
    scheduled: bool  # whether a next wave (or the final check) was scheduled
    unfilled: bool = False


Schedule = Callable[[WaveRequest, int], None]  # a wave request and its delay in seconds


def round_for(event: Event) -> WaveRequest | None:
    """The first wave of the round an event opens, or None for events that open nothing."""
    if event.type not in OPENING_EVENTS:
        return None
    first = first_wave(event.data.get("offer_first_to"))
    return WaveRequest(job_id=event.job_id, version=event.version, wave=first)


def first_wave(offer_first_to: str | None) -> int:
    """Wave 0 (the business's favourites) when the job was posted with offer_first_to, else 1."""
    return 0 if offer_first_to == "favourites" else 1


# A round whose last step is this much older than the wave interval has lost its next message.
STALLED_AFTER_S = 60


# SendMessageBatch takes at most ten messages a call.
SEND_BATCH = 10


@dataclass(frozen=True)
class ResumeReport:
    resumed: int  # stalled rounds whose next wave the queue took
    left: int  # stalled rounds found and not sent (refused, or the share ran out): next pass


def resume_stalled_rounds(
    conn: Connection, limit: int, keep_going: Callable[[], bool] = lambda: True
) -> ResumeReport:
    """Send the next wave again of the rounds that stalled (`STALLED_ROUNDS`): its message was
    lost with its queue. Ten to a queue call while `keep_going`; each round the queue took is
    recorded (`RECORD_RESUMED`) so that the next passes leave it alone for a stall period, and
    a round whose entry was refused is not, so the next pass sends it again. None is sent
    twice by one pass. Nothing without an offer queue."""
    s = offer_settings()
    if not s.offer_queue_url:
        return ResumeReport(0, 0)
    rows = sql.STALLED_ROUNDS.all(
        conn,
        {
            "opening": [t.value for t in OPENING_EVENTS],
            "waves": len(s.offer_waves),
            "stalled_s": s.offer_wave_interval_seconds + STALLED_AFTER_S,
            "limit": limit,
        },
    )
    stalled = [
        WaveRequest(
            job_id=row["job_id"],
            version=row["version"],
            wave=first_wave(row["offer_first_to"])
            if row["last_wave"] is None
            else row["last_wave"] + 1,
        )
        for row in rows
    ]
    resumed = 0
    for start in range(0, len(stalled), SEND_BATCH):
        if not keep_going():
            break
        sent = sqs_schedule_all(stalled[start : start + SEND_BATCH], 0)
        if sent:
            sql.RECORD_RESUMED.run(
                conn,
                {
                    "job_ids": [r.job_id for r in sent],
                    "versions": [r.version for r in sent],
                    "waves": [r.wave for r in sent],
                },
            )
        resumed += len(sent)
        for request in sent:
            logger.warning("offer round stalled: its next wave sent again",
                           extra=request.model_dump(mode="json"))  # fmt: skip
    if resumed:
        count("OfferRoundsResumed", resumed)
    if left := len(stalled) - resumed:
        count("OfferRoundsLeft", left)
    return ResumeReport(resumed, left)


def start_round(event: Event) -> None:
    """Schedule wave 1 at once when `event` opens the job and offers are configured."""
    request = round_for(event)
    if request is not None and offer_settings().offer_queue_url:
        sqs_schedule(request, 0)


def run_wave(conn: Connection, request: WaveRequest, schedule: Schedule) -> WaveReport:
    waves = offer_settings().offer_waves
    if request.wave > len(waves):
        return _final_check(conn, request, len(waves))
    wave = waves[request.wave - 1] if request.wave else favourites_wave(waves)
    radius_m = wave.radius_m  # how far the wave looks (`likely` may look further: policy.reach_m)
    if request.wave and offer_settings().offer_policy == "likely":
        radius_m = policy.reach_m(waves, request.wave, offer_settings().offer_reach_waves)
    params: sql.RoundParams = {"job_id": request.job_id, "version": request.version}
    job = sql.OPEN_JOB.one(conn, params)
    if job is None:  # taken (or cancelled) since the round began: the round is over
        return WaveReport(0, scheduled=False)
    near = (
        _positions_near(job["document"]["location"], radius_m, request)
        if request.wave
        else _favourites_near(conn, job["document"], wave.radius_m)
    )
    near = rosters.without_blocked(conn, job["document"]["business_id"], near)
    offered = 0
    with conn.transaction():
        job = sql.LOCK_OPEN_JOB.one(conn, params)
        if job is not None and sql.START_WAVE.one(conn, {**params, "wave": request.wave}):
            choice: sql.MakeOffersParams = {
                **params,
                "wave": request.wave,
                "size": wave.size,
                "radius_m": radius_m,
                "worker_ids": [worker_id for worker_id, _ in near],
                "distances": [distance for _, distance in near],
                "min_rating": job["document"]["min_rating"],
                "tie_band_m": TIE_BAND_M,
            }
            # The hook where a wave picks its workers: the seed's nearest first, or a policy.
            if offer_settings().offer_policy == "likely":
                offered = policy.make_offers(conn, choice)
            else:
                offered = len(sql.MAKE_OFFERS.all(conn, choice))
    # The offers' events, now (and a redelivered wave's, whose first run died before this).
    relay.after_commit(conn, request.job_id)
    if job is not None:
        schedule(request.next(), offer_settings().offer_wave_interval_seconds)
    count("OffersMade", offered)
    logger.info(
        "offer wave",
        extra={**request.model_dump(mode="json"), "offered": offered, "open": job is not None},
    )
    return WaveReport(offered, scheduled=job is not None)


# Wave 0 offers to every fresh qualified favourite within the outermost wave's radius.
FAVOURITES_AT_MOST = 1000


def favourites_wave(waves: Sequence[Wave]) -> Wave:
    return Wave(FAVOURITES_AT_MOST, waves[-1].radius_m)


def _favourites_near(
    conn: Connection, job: dict[str, Any], radius_m: int
) -> list[tuple[str, float]]:
    where = job["location"]
    return rosters.favourites_near(conn, job["business_id"], where["lat"], where["lng"], radius_m)


def _positions_near(
    where: dict[str, float], radius_m: int, request: WaveRequest
) -> list[tuple[str, float]]:
    """The fresh positions a wave may offer to. Redis out of reach fails the wave before it
    writes anything, and says so: the message goes back to the queue and runs again after the
    visibility timeout (then, after five receives, to the dead-letter queue), so a silent
    failure would leave jobs unoffered for minutes with nothing to tell why."""
    try:
        return locations.fresh_nearby(
            where["lat"], where["lng"], radius_m, offer_settings().offer_candidate_limit
        )
    except CacheUnavailable as error:
        count("OfferWavesWithoutPositions")
        logger.warning(
            "offer wave failed: worker positions (Redis) unreachable; it runs again when the "
            "queue delivers it next",
            extra={**request.model_dump(mode="json"), "error": str(error)},
        )
        raise


def _final_check(conn: Connection, request: WaveRequest, waves: int) -> WaveReport:
    params: sql.RoundParams = {"job_id": request.job_id, "version": request.version}
    unfilled = False
    with conn.transaction():
        if sql.LOCK_OPEN_JOB.one(conn, params) and sql.START_WAVE.one(
            conn, {**params, "wave": request.wave}
        ):
            unfilled = sql.UNFILLED.run(conn, {**params, "waves": waves}) == 1
    if unfilled:
        count("JobsUnfilled")
    relay.after_commit(conn, request.job_id)  # its job.unfilled, now (or a redelivery's)
    return WaveReport(0, False, unfilled)
