"""A worker's side of offers, through the handlers: pull the ones still open (push is a hint,
pulling is the truth), and say no to one, for good."""

import json
from functools import partial
from typing import Any
from uuid import UUID

import redis

from dispatch import db, sweeper
from dispatch.jobs import commands
from dispatch.offers import inbox, rounds
from dispatch.offers import waves as offer_waves
from dispatch.offers.models import WaveRequest
from dispatch.workers import locations
from tests.integration.conftest import Waves
from tests.integration.test_offers import first_wave, open_job, place
from tests.support import Api, in_parallel, make_job, on_the_queue, worker

ME = ("near-1", "worker")


def offers(api: Api, who: tuple[str, str] = ME) -> list[dict[str, Any]]:
    reply = api.call("GET", "/workers/me/offers", who)
    assert reply.status == 200, reply.body
    found: list[dict[str, Any]] = reply.body["offers"]
    return found


def test_an_offered_worker_pulls_what_the_event_carried(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    place(conn, ME[0], 800)
    first, created = open_job(conn)
    waves.run(conn, first_wave(created))
    second, created = open_job(conn)
    waves.run(conn, first_wave(created))

    pulled = offers(api)
    assert [o["job"]["id"] for o in pulled] == [str(second), str(first)]  # newest first
    sent = next(e for e in waves.put if e.type == "offer.created" and e.job_id == second)
    assert pulled[0]["job"] == sent.data["job"]  # what offer.created carried, exactly
    assert (pulled[0]["distance_m"], pulled[0]["wave"]) == (sent.data["distance_m"], 1)
    assert set(pulled[0]["job"]) == {"id", "version", "location", "skills", "window", "min_rating"}
    assert offers(api, worker("nobody")) == []


def test_a_taken_or_declined_job_leaves_the_list(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    place(conn, ME[0], 800)
    place(conn, "rival", 900)
    taken, created = open_job(conn)
    waves.run(conn, first_wave(created))
    declined, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert len(offers(api)) == 2

    assert api.call("POST", f"/jobs/{taken}/accept", ("rival", "worker"), {}).status == 200
    reply = api.call("POST", f"/jobs/{declined}/decline", ME, {})
    assert (reply.status, reply.body) == (200, {"job_id": str(declined), "declined": True})
    assert offers(api) == []
    assert api.call("POST", f"/jobs/{declined}/decline", ME, {}).status == 200  # again: fine
    rows = conn.execute("SELECT job_id, worker_id FROM job_declines").fetchall()
    assert rows == [{"job_id": declined, "worker_id": ME[0]}]


def test_a_declined_job_is_never_offered_to_that_worker_again(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    place(conn, ME[0], 800)
    place(conn, "other", 2_500)
    job_id, created = open_job(conn)
    # Seen in the nearby list, declined before any offer: not offered in any wave or round.
    assert api.call("POST", f"/jobs/{job_id}/decline", ME, {}).status == 200
    waves.run(conn, first_wave(created))
    assert waves.offered() == ["other"]


def test_decline_of_a_job_that_does_not_exist(api: Api) -> None:
    reply = api.call("POST", "/jobs/01930000-0000-7000-8000-000000000000/decline", ME, {})
    assert (reply.status, reply.code) == (404, "NOT_FOUND")
    refused = api.call("POST", "/jobs/01930000-0000-7000-8000-000000000000/decline", ME, {"x": 1})
    assert (refused.status, refused.code) == (400, "VALIDATION_FAILED")


def test_when_everyone_offered_declines_the_next_wave_goes_out_at_once(
    api: Api, conn: db.Connection, waves: Waves, queues: dict[str, str]
) -> None:
    for n in range(3):
        place(conn, f"decliner-{n}", 500 + n * 100)
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert len(waves.offered()) == 3
    on_the_queue(queues["offers"])  # nothing else waits there

    for n in range(2):
        api.call("POST", f"/jobs/{job_id}/decline", (f"decliner-{n}", "worker"), {})
    assert on_the_queue(queues["offers"]) == []  # one still might take it
    api.call("POST", f"/jobs/{job_id}/decline", ("decliner-2", "worker"), {})
    (body,) = on_the_queue(queues["offers"])  # no delay: visible at once
    assert WaveRequest.model_validate_json(body) == WaveRequest(job_id=job_id, version=1, wave=2)


def test_declines_at_the_same_instant_hurry_the_next_wave_which_runs_once(
    api: Api,
    conn: db.Connection,
    waves: Waves,
    queues: dict[str, str],
    database_url: str,
    cache: redis.Redis,
) -> None:
    """Three offered workers decline together, over and over, each on a connection of its own
    (what the decline route does after its commit): the wave is hurried at least once per
    round (the last decline to commit sees every other), and runs once whatever number of
    messages ask for it (offer_waves)."""
    for round_ in range(5):
        conn.execute("TRUNCATE job_races_lost, job_offers, offer_waves, job_declines, offer_events")
        locations.forget_everyone()  # the last round's decliners
        for n in range(3):
            place(conn, f"decliner-{round_}-{n}", 500 + n * 100)
        job = make_job(api)
        waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
        on_the_queue(queues["offers"])

        def decline(who: str, job_id: UUID = job["id"]) -> None:
            with db.connect(database_url) as own:
                inbox.decline(own, job_id, who)
            rounds.send_now_if_all_declined(job_id)

        in_parallel([partial(decline, f"decliner-{round_}-{n}") for n in range(3)])
        hurried = [json.loads(body) for body in on_the_queue(queues["offers"])]
        assert hurried and all(h["wave"] == 2 for h in hurried), hurried
        for message in hurried:
            waves.run(conn, WaveRequest.model_validate(message))
        ran = conn.execute("SELECT count(*) AS n FROM offer_waves WHERE wave = 2").fetchone()
        assert ran == {"n": 1}


def test_a_round_whose_wave_message_was_lost_goes_on_from_the_sweep(
    conn: db.Connection, waves: Waves, queues: dict[str, str], configure: Any
) -> None:
    """Found from outside: a kill -9 of the local stack lost the offer queue's messages (its
    stand-in lives in the stack's processes), and the rounds they carried stopped for good: no
    more waves, no job.unfilled. The sweep now sends a stalled round's next wave again, and
    only a stalled one: not while its event waits for the publisher, not while its next wave is
    merely due, not once the final check ran, not for a job that was taken."""
    configure(DISPATCH_OFFER_WAVES="1@3000", DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="60")
    place(conn, "silent", 800)

    def published_ago(job_id: UUID, seconds: int) -> None:
        conn.execute(
            "UPDATE job_events SET published_at = now() - make_interval(secs => %s)"
            " WHERE job_id = %s",
            (seconds, job_id),
        )

    def waves_ran_ago(job_id: UUID, seconds: int) -> None:
        """The round's last step (a wave, or the sweeper's resend of one) that long ago."""
        conn.execute(
            "UPDATE offer_waves SET ran_at = now() - make_interval(secs => %s) WHERE job_id = %s",
            (seconds, job_id),
        )
        conn.execute(
            "UPDATE offer_rounds_resumed SET resumed_at = now() - make_interval(secs => %s)"
            " WHERE job_id = %s",
            (seconds, job_id),
        )

    def resumed() -> list[WaveRequest]:
        report = offer_waves.resume_stalled_rounds(conn, 100)
        assert report.left == 0
        return [WaveRequest.model_validate_json(b) for b in on_the_queue(queues["offers"])]

    job_id, _ = open_job(conn)
    assert resumed() == []  # its job.created is not on the bus yet: the publisher starts it
    published_ago(job_id, 30)
    assert resumed() == []  # wave 1's message may still be on its way
    published_ago(job_id, 200)  # it was not: lost with its queue
    (request,) = resumed()
    assert request == WaveRequest(job_id=job_id, version=1, wave=1)
    waves.run(conn, request)
    assert resumed() == []  # the wave ran just now: its next is due in an interval
    waves_ran_ago(job_id, 200)
    assert sweeper.sweep(conn).rounds_resumed == 1  # the sweep does it, on its schedule
    (request,) = [WaveRequest.model_validate_json(b) for b in on_the_queue(queues["offers"])]
    assert request == WaveRequest(job_id=job_id, version=1, wave=2)  # the final check
    assert waves.run(conn, request).unfilled
    waves_ran_ago(job_id, 200)
    assert resumed() == []  # the round is over

    taken, _ = open_job(conn)
    published_ago(taken, 200)
    commands.accept_job(conn, job_id=taken, worker_id="silent", version=None)
    assert resumed() == []  # no longer open in that round
