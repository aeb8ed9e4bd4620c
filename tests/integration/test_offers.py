"""Offers in waves, against a real Redis (positions) and a real Postgres (the choice, the
guards): who is offered, how the waves widen, that a wave stops the moment the job is taken,
that nobody is offered twice, and what an unreachable Redis does."""

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, cast
from uuid import UUID

import boto3
import psycopg
import pytest
import redis

from dispatch import db
from dispatch.auth import Caller, Role
from dispatch.config import settings
from dispatch.events import Event
from dispatch.jobs import commands
from dispatch.jobs.models import TransitionEvent
from dispatch.jobs.requests import CreateJob, Location
from dispatch.offers import waves as offer_waves
from dispatch.workers import locations
from dispatch.workers.models import WorkerPosition
from dispatch_local.gateway import deliver_batch
from tests.integration.conftest import Waves
from tests.integration.test_accept_races import together
from tests.support import (
    Api,
    consumer_of,
    destination,
    drain,
    job_body,
    make_job,
    make_worker,
    on_the_bus,
    worker,
)

HERE = (12.9716, 77.5946)
# Long enough that wave 2 is still waiting after the first wave's drains on a loaded machine
# (1 s was not, with other work beside the suite).
WAVE_GAP_SECONDS = 4
BUSINESS_ID = "business-1"


def open_job(
    conn: db.Connection, skills: list[str] | None = None, at: tuple[float, float] = HERE
) -> tuple[UUID, Event]:
    """A new open job at HERE (or `at`), and its job.created event (what starts the round)."""
    spec = CreateJob.model_validate(job_body(skills or ["wash"], *at))
    job = commands.create_job(conn, BUSINESS_ID, spec)
    return job.id, last_event(conn, job.id)


def last_event(conn: db.Connection, job_id: UUID) -> Event:
    row = conn.execute(
        "SELECT dispatch_event(e) AS document FROM job_events e WHERE e.job_id = %s"
        " ORDER BY e.version DESC LIMIT 1",
        (job_id,),
    ).fetchone()
    assert row is not None
    return Event.from_document(row["document"])


def first_wave(event: Event) -> offer_waves.WaveRequest:
    request = offer_waves.round_for(event)
    assert request is not None
    return request


def place(
    conn: db.Connection,
    worker_id: str,
    metres: float,
    bearing: float = 0,
    skills: Sequence[str] = ("wash",),
    seen_seconds_ago: float = 0,
    rated: tuple[int, int] = (0, 0),
    at: tuple[float, float] = HERE,
) -> None:
    """A worker with a profile, standing `metres` from HERE (or `at`), last seen a while ago."""
    conn.execute(
        "INSERT INTO workers (id, skills, ratings, stars) VALUES (%s, %s, %s, %s)",
        (worker_id, list(skills), *rated),
    )
    lat, lng = destination(*at, bearing, metres)
    locations.report(
        worker_id, WorkerPosition(lat=lat, lng=lng), now=time.time() - seen_seconds_ago
    )


def area_of(conn: db.Connection, at: tuple[float, float]) -> int:
    """The market's area of a position (dispatch_market_area, migration 0058)."""
    row = conn.execute("SELECT dispatch_market_area(%s, %s) AS area", at).fetchone()
    assert row is not None
    return int(row["area"])


def profile(conn: db.Connection, worker_id: str) -> str:
    """A worker who can take the test jobs but reports no position (never offered)."""
    conn.execute("INSERT INTO workers (id, skills) VALUES (%s, '{wash}')", (worker_id,))
    return worker_id


def offers_of(conn: db.Connection, job_id: UUID) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT worker_id, wave, job_version FROM job_offers WHERE job_id = %s ORDER BY id",
        (job_id,),
    ).fetchall()


def test_waves_widen_on_schedule_then_tell_the_business(
    conn: db.Connection, waves: Waves, cache: redis.Redis
) -> None:
    for n in range(4):
        place(conn, f"a{n}", 1_000 + n * 400, bearing=n * 90)  # within 3 km
    for n in range(12):
        place(conn, f"b{n}", 3_500 + n * 80, bearing=n * 30)  # within 5 km
    for n in range(30):
        place(conn, f"c{n}", 6_000 + n * 50, bearing=n * 12)  # within 8 km
    place(conn, "far", 9_000)
    # Kept in cells of the map: the waves read each their radius reaches, as one map.
    assert len(cast(set[bytes], cache.smembers(locations.cells_key()))) == 4
    job_id, created = open_job(conn)

    request = first_wave(created)
    assert (request.wave, request.version) == (1, 1)
    reports = []
    while True:
        reports.append(waves.run(conn, request))
        if not waves.scheduled or waves.scheduled[-1][0].wave == request.wave:
            break
        request, delay = waves.scheduled[-1]
        assert delay == 60  # the default gap between waves

    assert [r.offered for r in reports] == [3, 10, 25, 0]
    assert [w for w in waves.offered()][:3] == ["a0", "a1", "a2"]  # nearest first
    assert set(waves.offered()[3:13]) == {"a3"} | {f"b{n}" for n in range(9)}
    assert set(waves.offered()[13:]) == {f"b{n}" for n in range(9, 12)} | {
        f"c{n}" for n in range(22)
    }
    assert [r["wave"] for r in offers_of(conn, job_id)] == [1] * 3 + [2] * 10 + [3] * 25
    unfilled = [e for e in waves.put if e.type == "job.unfilled"]
    assert [(e.job_id, e.version, e.data) for e in unfilled] == [
        (job_id, 1, {"waves": 3, "offered": 38, "reason": None, "applicants": None})
    ]
    assert reports[-1].unfilled and not reports[-1].scheduled
    # Every offer event names the worker and carries what they need to decide.
    offer = waves.put[0]
    assert offer.data["job"]["id"] == str(job_id) and offer.data["job"]["skills"] == ["wash"]
    assert offer.data["wave"] == 1 and offer.data["radius_m"] == 3000
    assert 999 <= offer.data["distance_m"] <= 1001
    pending = conn.execute("SELECT count(*) AS n FROM offer_events WHERE published_at IS NULL")
    assert pending.fetchone() == {"n": 0}


def test_only_fresh_qualified_idle_workers_never_the_last_holder(
    conn: db.Connection, waves: Waves, configure: Callable[..., None]
) -> None:
    configure(DISPATCH_OFFER_WAVES="50@3000")
    place(conn, "ready", 500, skills=["wash", "iron"])
    place(conn, "stale", 400, skills=["wash", "iron"], seen_seconds_ago=361)
    place(conn, "fresh-enough", 600, skills=["wash", "iron"], seen_seconds_ago=340)
    place(conn, "unskilled", 300, skills=["wash"])
    place(conn, "busy", 200, skills=["wash", "iron"])
    place(conn, "loser", 100, skills=["wash", "iron"])
    locations.report("no-profile", WorkerPosition(lat=HERE[0], lng=HERE[1]))
    busy_job, _ = open_job(conn, ["wash"])
    commands.accept_job(conn, busy_job, "busy", None)

    job_id, _ = open_job(conn, ["wash", "iron"])
    commands.accept_job(conn, job_id, "loser", None)
    conn.execute("UPDATE jobs SET lease_expires_at = now() WHERE id = %s", (job_id,))
    assert len(commands.reopen_expired(conn, 10)) == 1
    event = last_event(conn, job_id)
    assert event.type == "job.reopened"
    request = first_wave(event)
    assert request.version == 3  # "loser" held it at version 2: not offered it again

    waves.run(conn, request)
    assert waves.offered() == ["ready", "fresh-enough"]


def test_a_released_job_is_not_offered_back_to_who_gave_it_back(
    conn: db.Connection, waves: Waves
) -> None:
    place(conn, "giver", 100)
    place(conn, "other", 900)
    job_id, _ = open_job(conn)
    job = commands.accept_job(conn, job_id, "giver", None)
    giver = Caller("giver", frozenset({Role.WORKER}))
    commands.transition(conn, job_id, giver, TransitionEvent.RELEASE, job.version)
    request = first_wave(last_event(conn, job_id))
    waves.run(conn, request)
    assert waves.offered() == ["other"]


def test_nearest_first_and_rating_breaks_ties(conn: db.Connection, waves: Waves) -> None:
    place(conn, "closest", 50)
    place(conn, "rated-low", 510, bearing=90, rated=(10, 20))  # ten of 2 stars: 2.67
    place(conn, "rated-high", 560, bearing=180, rated=(10, 50))  # same 100 m band: 4.67
    place(conn, "unrated", 520, bearing=270)
    place(conn, "next-band", 620, bearing=45, rated=(50, 250))
    _, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert waves.offered() == ["closest", "rated-high", "rated-low"]


def test_a_redelivered_wave_offers_nobody_twice(
    conn: db.Connection, waves: Waves, database_url: str
) -> None:
    """The same wave message handled by two consumers at once, again and again."""
    for n in range(6):
        place(conn, f"w{n}", 300 + n * 100)
    for _ in range(10):
        job_id, created = open_job(conn)
        request = first_wave(created)
        reports = together([partial(waves.run, request=request)] * 3, database_url)
        assert not [r for r in reports if isinstance(r, BaseException)], reports
        assert sorted(r.offered for r in reports) == [0, 0, 3]
        assert [o["worker_id"] for o in offers_of(conn, job_id)] == ["w0", "w1", "w2"]
        # Both may schedule the next wave; it, too, runs once.
        for r in together([partial(waves.run, request=request.next())] * 2, database_url):
            assert not isinstance(r, BaseException), r
        assert len(offers_of(conn, job_id)) == 6
    per_job_worker = conn.execute(
        "SELECT count(*) AS n FROM offer_events e GROUP BY e.job_id, e.data->>'worker_id'"
        " HAVING count(*) > 1"
    ).fetchall()
    assert per_job_worker == []


def test_a_wave_stops_the_moment_the_job_is_taken(
    conn: db.Connection, waves: Waves, database_url: str
) -> None:
    """A wave and an accept released together, many times. Whichever locks the job first
    goes first: either the offers were made while it was open, or none are. Never an error,
    never an offer to a taken job, and the round ends either way.

    A wave reads positions (and, through the pooler and the cluster, waits longer) before it
    locks the job, so the accept is held back by a delay that follows the tipping point: longer
    after the accept went first, shorter after the wave did. Each attempt is then a close race."""
    for n in range(3):
        place(conn, f"w{n}", 300 + n * 100)
    outcomes = set()
    hold_back_s = 0.0
    for attempt in range(40):
        job_id, created = open_job(conn)
        request = first_wave(created)
        taker = profile(conn, f"taker-{attempt}")

        def accept(
            c: db.Connection, job_id: UUID = job_id, taker: str = taker, wait: float = hold_back_s
        ) -> Any:
            time.sleep(wait)
            return commands.accept_job(c, job_id=job_id, worker_id=taker, version=None)

        calls: list[Callable[[db.Connection], Any]] = [partial(waves.run, request=request), accept]
        wave, accepted = together(calls, database_url)
        assert not isinstance(wave, BaseException), wave
        assert not isinstance(accepted, BaseException), accepted
        offered = offers_of(conn, job_id)
        assert len(offered) in (0, 3)
        assert all(o["job_version"] == 1 for o in offered)
        outcomes.add(len(offered))
        hold_back_s = max(0.0, hold_back_s + (0.003 if not offered else -0.003))
        # The round is over: the next wave and the final check do nothing.
        assert waves.run(conn, request.next()) == offer_waves.WaveReport(0, scheduled=False)
        final = request.model_copy(update={"wave": 4})
        assert not waves.run(conn, final).unfilled
    assert outcomes == {0, 3}, "the race never went both ways"
    assert not [e for e in waves.put if e.type == "job.unfilled"]


def test_a_job_beyond_what_redis_geo_indexes_is_offered_to_nobody(
    conn: db.Connection, waves: Waves
) -> None:
    """POST /jobs refuses such a job now (test_service_area.py); one posted before still has
    its round, which finds nobody and fails nothing."""
    spec = CreateJob.model_validate(job_body(["wash"]))
    spec.location = Location.model_construct(lat=89.5, lng=10.0)
    job = commands.create_job(conn, BUSINESS_ID, spec)
    report = waves.run(conn, first_wave(last_event(conn, job.id)))
    assert (report.offered, report.scheduled) == (0, True)


def test_events_that_open_nothing_start_no_round(conn: db.Connection) -> None:
    job_id, _ = open_job(conn)
    commands.accept_job(conn, job_id, profile(conn, "w"), None)
    assert offer_waves.round_for(last_event(conn, job_id)) is None


def test_the_database_refuses_offers_that_break_the_rules(conn: db.Connection) -> None:
    """Plain SQL, no application: each rule is the database's own."""
    job_id, _ = open_job(conn)
    insert = (
        "INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)"
        " VALUES (%s, %s, %s, 1, 10)"
    )
    conn.execute(insert, (job_id, "w1", 1))
    with pytest.raises(psycopg.errors.UniqueViolation, match="job_offers_once_per_worker"):
        conn.execute(insert, (job_id, "w1", 1))
    with pytest.raises(psycopg.errors.CheckViolation, match="not open at version"):
        conn.execute(insert, (job_id, "w2", 2))  # not the job's version: not this round
    commands.accept_job(conn, job_id, profile(conn, "w9"), None)
    with pytest.raises(psycopg.errors.CheckViolation, match="not open at version"):
        conn.execute(insert, (job_id, "w3", 2))  # taken
    unfilled = (
        "INSERT INTO offer_events (job_id, type, version, data)"
        " VALUES (%s, 'job.unfilled', 1, '{\"waves\": 3, \"offered\": 0}')"
    )
    conn.execute(unfilled, (job_id,))
    with pytest.raises(psycopg.errors.UniqueViolation, match="one_unfilled_per_round"):
        conn.execute(unfilled, (job_id,))
    with pytest.raises(psycopg.errors.CheckViolation, match="offer_events_type_valid"):
        conn.execute(
            "INSERT INTO offer_events (job_id, type, version) VALUES (%s, 'job.assigned', 1)",
            (job_id,),
        )
    with pytest.raises(psycopg.errors.CheckViolation, match="offer_waves_wave_positive"):
        conn.execute(
            "INSERT INTO offer_waves (job_id, job_version, wave) VALUES (%s, 1, -1)", (job_id,)
        )


wave_consumer = consumer_of("OfferQueue")


def test_a_new_job_reaches_a_nearby_worker_through_the_queues(
    api: Api, conn: db.Connection, cache: redis.Redis, queues: dict[str, str], configure: Any
) -> None:
    """The whole path on the AWS stand-in: the writer relays job.created, the publisher puts
    it on the bus and schedules wave 1, the wave function offers (relaying its offer.created to
    the same outbox queue, whose publisher puts it on the bus) and schedules wave 2 with the
    configured delay."""
    configure(DISPATCH_OFFER_WAVE_INTERVAL_SECONDS=str(WAVE_GAP_SECONDS))
    make_worker(api, worker(1))
    reply = api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.975, "lng": 77.5946})
    assert reply.status == 204
    job = make_job(api)
    drain(queues["outbox"])
    drain(queues["offers"], wave_consumer)
    drain(queues["outbox"])

    bus = on_the_bus(queues["tap"])
    assert [e["detail-type"] for e in bus] == ["job.created", "offer.created"]
    offer = bus[1]["detail"]
    assert (offer["job_id"], offer["data"]["worker_id"]) == (job["id"], "worker-1")
    assert 350 < offer["data"]["distance_m"] < 390

    # Wave 2 waits its delay on the queue, then comes.
    sqs = boto3.client("sqs")
    assert not sqs.receive_message(QueueUrl=queues["offers"]).get("Messages")
    time.sleep(WAVE_GAP_SECONDS)
    (message,) = sqs.receive_message(QueueUrl=queues["offers"], WaitTimeSeconds=2)["Messages"]
    assert offer_waves.WaveRequest.model_validate_json(message["Body"]).wave == 2


def test_redis_down_waves_wait_while_claims_and_publishing_go_on(
    api: Api,
    conn: db.Connection,
    cache: redis.Redis,
    queues: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_worker(api, worker(1))
    api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.975, "lng": 77.5946})
    make_worker(api, worker(2))
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    settings.cache_clear()
    locations.client.cache_clear()
    try:
        job = make_job(api)
        taken = make_job(api)
        assert api.call("POST", f"/jobs/{taken['id']}/accept", worker(2), {}).status == 200
        drain(queues["outbox"])  # published, and wave 1 scheduled: no Redis needed
        assert [e["detail-type"] for e in on_the_bus(queues["tap"])] == [
            "job.created",
            "job.created",
            "job.assigned",
        ]
        sqs = boto3.client("sqs")
        handled = deliver_batch(sqs, queues["offers"], 10, wave_consumer, retry_failed_now=True)
        assert handled == 2
        assert conn.execute("SELECT count(*) AS n FROM offer_waves").fetchone() == {"n": 0}
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        locations.client.cache_clear()
    # Redis is back: the waves that failed run on their next receive.
    drain(queues["offers"], wave_consumer)
    offered = conn.execute("SELECT job_id, worker_id FROM job_offers").fetchall()
    assert offered == [{"job_id": UUID(job["id"]), "worker_id": "worker-1"}]
