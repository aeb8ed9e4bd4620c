"""Offer answers folded once (migration 0048, offers/sql.py FOLD_ANSWERS), on a real Postgres
and Redis: each answer kind is folded exactly once and never while it can still change, the
cursor moves batch by batch, a rerun folds nothing again, the tallies halve in tau * ln 2, the
market's fit and a worker's record read from the folded tallies what the old recounts read; a
lost accept race (migration 0057) is a yes in both, and not a job taken."""

import math
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
import redis

from dispatch import db
from dispatch.auth import Caller, Role
from dispatch.config.offer_policy import offer_policy_settings
from dispatch.errors import Code, DispatchError
from dispatch.jobs import commands
from dispatch.jobs.models import TransitionEvent
from dispatch.offers import inbox, market
from dispatch.offers.sql import LIKELY_CANDIDATES, MARKET_ANSWERS
from dispatch.workers import locations
from dispatch.workers.models import WorkerPosition
from tests.integration.conftest import Waves
from tests.integration.test_offers import HERE, area_of, first_wave, open_job, place
from tests.support import destination

Configure = Callable[..., None]
SILENCE_S = 1  # the wave interval is 0 here: an unanswered offer is silence after 1 s
SETTLE_S = 2 * SILENCE_S

# The statements the folds replaced, kept here only to hold the folded records to them; a lost
# race counted as a yes (an accept) as the folds count it, never as the last job taken.
OLD_MARKET_ANSWERS = """
SELECT floor(r.distance_m / %(band_m)s)::int AS band, count(*) AS offers,
       count(*) FILTER (WHERE a.answer IN ('accept', 'lost_race')) AS accepts
  FROM (SELECT o.job_id, o.job_version, o.worker_id, o.distance_m, o.created_at
          FROM job_offers o ORDER BY o.id DESC LIMIT %(sample)s) r
     CROSS JOIN LATERAL dispatch_offer_answer(r.job_id, r.job_version, r.worker_id,
                                              r.created_at, %(silence_s)s::float8) a
 WHERE a.answer <> 'pending'
   AND r.created_at > now() - make_interval(secs => %(history_s)s)
 GROUP BY 1 ORDER BY 1
"""
OLD_LIKELY_CANDIDATES = """
WITH market AS (
    SELECT coalesce(m.half_distance_m, %(half_m)s::float8) AS half_m,
           coalesce(m.door, %(door)s::float8) AS door
      FROM (SELECT) one
      LEFT JOIN offer_market m ON m.answers >= %(min_answers)s
), qualified AS (
    SELECT c.worker_id, c.distance_m, c.rating
      FROM dispatch_offerable(%(job_id)s::uuid, %(version)s::integer,
                              %(worker_ids)s::text[], %(distances)s::float8[]) c
     ORDER BY c.distance_m
     LIMIT %(pool)s
)
SELECT q.worker_id, h.*
  FROM qualified q
 CROSS JOIN market
 CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE a.answer <> 'pending') AS offers,
           count(*) FILTER (WHERE a.answer IN ('accept', 'lost_race')) AS accepts,
           count(*) FILTER (WHERE a.answer = 'decline') AS declines,
           count(*) FILTER (WHERE a.answer = 'silence') AS silences,
           count(*) FILTER (WHERE a.ending = 'job.released') AS releases,
           count(*) FILTER (WHERE a.ending = 'job.reopened') AS leases_run_out,
           count(*) FILTER (WHERE a.answer = 'lost_race') AS lost_races,
           coalesce(sum(1 / (1 + (r.distance_m / market.half_m) ^ 2))
                    FILTER (WHERE a.answer <> 'pending'), 0)::float8 AS expected,
           avg(a.seconds) AS answer_s,
           extract(epoch FROM now() - max(r.created_at) FILTER (WHERE a.answer = 'accept'))
               ::float8 AS since_accept_s
      FROM (SELECT o.job_id, o.job_version, o.worker_id, o.distance_m, o.created_at
              FROM job_offers o
             WHERE o.worker_id = q.worker_id
               AND o.created_at > now() - make_interval(secs => %(history_s)s)
             ORDER BY o.created_at DESC
             LIMIT %(recent)s) r
     CROSS JOIN LATERAL dispatch_offer_answer(r.job_id, r.job_version, r.worker_id,
                                              r.created_at, %(silence_s)s::float8) a
 ) h
 ORDER BY q.distance_m
"""
ELSEWHERE = (13.0827, 80.2707)  # another area than HERE's (Chennai's, HERE Bengaluru)
RECORD = ("offers", "accepts", "declines", "silences", "releases", "leases_run_out", "lost_races",
          "expected")  # fmt: skip


@pytest.fixture
def quick(configure: Configure) -> None:
    """One worker offered at a time (nearest, 1 within 3 km), silence after a second."""
    configure(DISPATCH_OFFER_WAVES="1@3000", DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="0")


def offer_to(conn: db.Connection, waves: Waves, cache: redis.Redis, worker: str,
             metres: float = 1000) -> UUID:  # fmt: skip
    """A new job offered to `worker` alone (standing `metres` away, the only one there)."""
    locations.forget_everyone(cache)
    if conn.execute("SELECT 1 FROM workers WHERE id = %s", (worker,)).fetchone():
        lat, lng = destination(*HERE, 0, metres)
        locations.report(worker, WorkerPosition(lat=lat, lng=lng), now=time.time())
    else:
        place(conn, worker, metres)
    job_id, created = open_job(conn)
    assert waves.run(conn, first_wave(created)).offered == 1
    return job_id


def lose_race(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, loser: str,
    winner: str, metres: float = 1000,
) -> UUID:  # fmt: skip
    """A new job offered to `loser` and `winner` alone (both `metres` away, one wave of two):
    the winner takes it, then the loser taps Accept and is answered JOB_TAKEN."""
    locations.forget_everyone(cache)
    for bearing, worker in enumerate((loser, winner)):
        if conn.execute("SELECT 1 FROM workers WHERE id = %s", (worker,)).fetchone():
            lat, lng = destination(*HERE, 90 * bearing, metres)
            locations.report(worker, WorkerPosition(lat=lat, lng=lng), now=time.time())
        else:
            place(conn, worker, metres, bearing=90 * bearing)
    configure(DISPATCH_OFFER_WAVES="2@3000")
    job_id, created = open_job(conn)
    assert waves.run(conn, first_wave(created)).offered == 2
    configure(DISPATCH_OFFER_WAVES="1@3000")
    commands.accept_job(conn, job_id, winner, None)
    time.sleep(0.1)  # the loser's tap comes after
    with pytest.raises(DispatchError) as lost:
        commands.accept_job(conn, job_id, loser, None)
    assert lost.value.code is Code.JOB_TAKEN
    return job_id


def release(conn: db.Connection, job_id: UUID, worker: str) -> None:
    job = commands.accept_job(conn, job_id, worker, None)
    commands.transition(
        conn, job_id, Caller(worker, frozenset({Role.WORKER})), TransitionEvent.RELEASE,
        job.version,
    )  # fmt: skip


def each_kind(conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure) -> None:
    """Five offers, one of each answer: declined, accepted, accepted then released, accepted
    and the lease ran out (reopened by the sweeper's duty), unanswered (silence)."""
    inbox.decline(conn, offer_to(conn, waves, cache, "decliner"), "decliner")
    commands.accept_job(conn, offer_to(conn, waves, cache, "taker"), "taker", None)
    release(conn, offer_to(conn, waves, cache, "giver"), "giver")
    configure(DISPATCH_LEASE_SECONDS="1")
    commands.accept_job(conn, offer_to(conn, waves, cache, "vanisher"), "vanisher", None)
    configure(DISPATCH_LEASE_SECONDS="600")
    offer_to(conn, waves, cache, "silent")
    time.sleep(1.1)
    assert len(commands.reopen_expired(conn, 10)) == 1  # the vanisher's lease ran out


def records(conn: db.Connection) -> dict[str, dict[str, Any]]:
    rows = conn.execute("SELECT * FROM worker_answers ORDER BY worker_id").fetchall()
    return {r["worker_id"]: r for r in rows}


def cursor(conn: db.Connection) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM offer_answers_folded").fetchone()
    assert row is not None
    return row


def offer_ids(conn: db.Connection) -> list[UUID]:
    return [r["id"] for r in conn.execute("SELECT id FROM job_offers ORDER BY id").fetchall()]


def test_each_answer_is_folded_once_and_never_while_it_can_change(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    each_kind(conn, waves, cache, configure)
    time.sleep(SETTLE_S)
    offer_to(conn, waves, cache, "late")  # still pending: not folded, the cursor stops before
    assert market.fold(conn, settle_s=SETTLE_S) == 5
    kept = records(conn)
    assert set(kept) == {"decliner", "taker", "giver", "vanisher", "silent"}
    expected = {
        "decliner": {"declines": 1},
        "taker": {"accepts": 1},
        "giver": {"accepts": 1, "releases": 1},
        "vanisher": {"accepts": 1, "leases_run_out": 1},
        "silent": {"silences": 1},
    }
    for worker, counts in expected.items():
        row = kept[worker]
        for field in ("accepts", "declines", "silences", "releases", "leases_run_out"):
            # Each answer weighs exp(-age / a day): seconds old, 1 within 1e-4.
            assert row[field] == pytest.approx(counts.get(field, 0), abs=1e-4), (worker, field)
        assert row["offers"] == pytest.approx(1, abs=1e-4)
        assert row["expected"] == pytest.approx(1 / (1 + (1000 / 2500) ** 2), rel=1e-4)
        answered = worker != "silent"
        assert row["answer_s_count"] == pytest.approx(1 if answered else 0, abs=1e-4)
        assert (row["last_accept_at"] is not None) == ("accepts" in counts)
    bands = conn.execute("SELECT * FROM offer_market_bands").fetchall()
    assert [(b["area"], b["band"]) for b in bands] == [(area_of(conn, HERE), 1000 // market.BAND_M)]
    assert bands[0]["offers"] == pytest.approx(5, abs=1e-3)
    assert bands[0]["accepts"] == pytest.approx(3, abs=1e-3)
    ids = offer_ids(conn)
    assert cursor(conn)["last_offer_id"] == ids[4]  # the fifth; the late one after it

    # Again at once: nothing new is settled, nothing is folded twice.
    assert market.fold(conn, settle_s=SETTLE_S) == 0
    assert records(conn) == kept
    # Once the late offer has gone silent and settled, it alone is folded.
    time.sleep(SETTLE_S + 0.1)
    assert market.fold(conn, settle_s=SETTLE_S) == 1
    assert records(conn)["late"]["silences"] == pytest.approx(1, abs=1e-4)
    assert records(conn)["decliner"]["declines"] == pytest.approx(1, abs=1e-4)
    assert cursor(conn)["last_offer_id"] == ids[5]


def test_a_lost_race_reads_as_a_yes_that_took_no_job(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    """The loser's offer reads as `lost_race` (dispatch_offer_answer), `seconds` after the
    offer (when the accept was refused), with no ending; folded, it is a yes in the market's
    band and the loser's record (and their answer pace), in lost_races, and never their last
    accept: they took no job."""
    job_id = lose_race(conn, waves, cache, configure, "loser", "winner")
    answers = conn.execute(
        """SELECT o.worker_id, a.*, extract(epoch FROM l.lost_at - o.created_at) AS lost_s
             FROM job_offers o
             LEFT JOIN job_races_lost l USING (job_id, worker_id)
            CROSS JOIN LATERAL dispatch_offer_answer(o.job_id, o.job_version, o.worker_id,
                                                     o.created_at, %s::float8) a
            WHERE o.job_id = %s ORDER BY o.worker_id""",
        (SILENCE_S, job_id),
    ).fetchall()
    loser, winner = answers
    assert (loser["worker_id"], loser["answer"], loser["ending"]) == ("loser", "lost_race", None)
    assert loser["seconds"] == pytest.approx(float(loser["lost_s"])) and loser["seconds"] > 0
    assert (winner["worker_id"], winner["answer"], winner["lost_s"]) == ("winner", "accept", None)

    time.sleep(SETTLE_S)
    assert market.fold(conn, settle_s=SETTLE_S) == 2
    kept = records(conn)
    for worker, lost in (("loser", 1), ("winner", 0)):
        row = kept[worker]
        assert row["offers"] == pytest.approx(1, abs=1e-4)
        assert row["accepts"] == pytest.approx(1, abs=1e-4), worker
        assert row["lost_races"] == pytest.approx(lost, abs=1e-4), worker
        assert row["silences"] == row["declines"] == 0
        assert row["answer_s_count"] == pytest.approx(1, abs=1e-4)
    assert kept["loser"]["answer_s_sum"] == pytest.approx(loser["seconds"], rel=1e-3)
    assert kept["loser"]["last_accept_at"] is None  # a yes, not a job taken
    assert kept["winner"]["last_accept_at"] is not None
    (band,) = conn.execute("SELECT * FROM offer_market_bands").fetchall()
    assert (band["offers"], band["accepts"]) == (pytest.approx(2, abs=1e-3),
                                                 pytest.approx(2, abs=1e-3))  # fmt: skip


def test_each_answer_is_tallied_in_its_jobs_area_and_read_with_its_curve(
    conn: db.Connection, waves: Waves, cache: redis.Redis, quick: None
) -> None:
    """Two declines at 1 km, of jobs in two areas whose curves differ (migration 0058): each is
    tallied in its job's area's band, and its worker's `expected` reads it with that area's
    curve."""
    halves = {HERE: 1000.0, ELSEWHERE: 4000.0}
    for at, half in halves.items():
        conn.execute(
            "INSERT INTO offer_market (area, door, half_distance_m, answers)"
            " VALUES (dispatch_market_area(%s, %s), 0.5, %s, 500)",
            (*at, half),
        )
        locations.forget_everyone(cache)
        place(conn, f"w{half:.0f}", 1000, at=at)
        job_id, created = open_job(conn, at=at)
        assert waves.run(conn, first_wave(created)).offered == 1
        inbox.decline(conn, job_id, f"w{half:.0f}")
    time.sleep(SETTLE_S)
    assert market.fold(conn, settle_s=SETTLE_S) == 2
    bands = conn.execute("SELECT * FROM offer_market_bands ORDER BY area").fetchall()
    assert [(b["area"], b["band"]) for b in bands] == sorted(
        (area_of(conn, at), 1000 // market.BAND_M) for at in halves
    )
    assert all(b["offers"] == pytest.approx(1, abs=1e-4) for b in bands)
    for half in halves.values():
        expected = records(conn)[f"w{half:.0f}"]["expected"]
        assert expected == pytest.approx(1 / (1 + (1000 / half) ** 2), rel=1e-3), half


def test_the_fold_stops_at_its_batch_and_goes_on_from_its_cursor(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    each_kind(conn, waves, cache, configure)
    time.sleep(SETTLE_S)
    ids = offer_ids(conn)
    assert market.fold(conn, batch=2, settle_s=SETTLE_S) == 2
    assert set(records(conn)) == {"decliner", "taker"}
    assert cursor(conn)["last_offer_id"] == ids[1]
    assert market.fold(conn, batch=2, settle_s=SETTLE_S) == 2
    assert market.fold(conn, batch=2, settle_s=SETTLE_S) == 1
    assert market.fold(conn, batch=2, settle_s=SETTLE_S) == 0
    assert cursor(conn)["last_offer_id"] == ids[4]
    assert set(records(conn)) == {"decliner", "taker", "giver", "vanisher", "silent"}
    assert all(r["offers"] == pytest.approx(1, abs=1e-4) for r in records(conn).values())


def test_the_first_fold_starts_no_further_back_than_the_history(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    """An offer older than the history window (its id and time moved back two days, by the
    owner) is never folded; the cursor starts at the window."""
    old = offer_to(conn, waves, cache, "old")
    inbox.decline(conn, old, "old")
    conn.execute(
        "UPDATE job_offers SET id = dispatch_uuid7_floor(now() - interval '2 days'),"
        " created_at = now() - interval '2 days' WHERE job_id = %s",
        (old,),
    )
    inbox.decline(conn, offer_to(conn, waves, cache, "recent"), "recent")
    time.sleep(SETTLE_S)
    assert market.fold(conn, settle_s=SETTLE_S) == 1
    assert set(records(conn)) == {"recent"}


def test_a_tally_halves_in_tau_ln2(conn: db.Connection, configure: Configure) -> None:
    tau = 3600
    configure(DISPATCH_OFFER_HISTORY_SECONDS=str(tau))
    with conn.transaction():  # one now(): written and read at the same moment
        conn.execute(
            "INSERT INTO offer_market_bands (area, band, offers, accepts, as_of)"
            " VALUES (7, 4, 8, 2, now() - make_interval(secs => %s))",
            (tau * math.log(2),),
        )
        (band,) = conn.execute(MARKET_ANSWERS.sql, {"history_s": tau}).fetchall()
    assert (band["offers"], band["accepts"]) == (pytest.approx(4), pytest.approx(1))
    # Folded at that age, an answer weighs the same: a record is the same whenever folded.
    half = conn.execute(
        "SELECT dispatch_decayed(1, now() - make_interval(secs => %s), now(), %s) AS w",
        (tau * math.log(2), tau),
    ).fetchone()
    assert half == {"w": pytest.approx(0.5)}
    # Forty time constants on, nothing is left (and nothing underflows).
    gone = conn.execute(
        "SELECT dispatch_decayed(1e300, now() - interval '41 hours', now(), %s) AS w", (tau,)
    ).fetchone()
    assert gone == {"w": 0}


def test_the_markets_fit_on_folded_answers_is_the_fit_on_the_recounted_ones(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    """Answers at four distances, as a curve that halves at 5 km says: the fit on the folded
    bands is the fit on the same answers counted from their rows (the statement it replaced)."""
    configure(DISPATCH_OFFER_WAVES="1@9000")
    n = 0
    for distance in (500, 2500, 4500, 6500):
        takes = round(8 * 0.9 / (1 + (distance / 5000) ** 2))
        for k in range(8):
            n += 1
            worker = f"w{n}"
            job_id = offer_to(conn, waves, cache, worker, distance)
            if k < takes:
                commands.accept_job(conn, job_id, worker, None)
            else:
                inbox.decline(conn, job_id, worker)
    counted = conn.execute(
        OLD_MARKET_ANSWERS,
        {"band_m": market.BAND_M, "sample": 20000, "history_s": 86400, "silence_s": SILENCE_S},
    ).fetchall()
    time.sleep(SETTLE_S)
    assert market.fold(conn, settle_s=SETTLE_S) == 32
    folded = conn.execute(MARKET_ANSWERS.sql, {"history_s": 86400}).fetchall()
    assert [b["band"] for b in folded] == [b["band"] for b in counted]
    for old, new in zip(counted, folded, strict=True):
        assert new["offers"] == pytest.approx(old["offers"], rel=1e-3)
        assert new["accepts"] == pytest.approx(old["accepts"], rel=1e-3)

    def fit(rows: list[dict[str, Any]]) -> market.Curve | None:
        bands = [market.Band((r["band"] + 0.5) * market.BAND_M, r["offers"], r["accepts"])
                 for r in rows]  # fmt: skip
        return market.fit(bands, 2500)

    before, after = fit(counted), fit(folded)
    assert before is not None and after is not None
    assert after.half_distance_m == before.half_distance_m
    assert after.door == pytest.approx(before.door, rel=1e-3)
    assert after.answers == before.answers == 32


def test_a_workers_record_reads_as_the_recount_did(
    conn: db.Connection, waves: Waves, cache: redis.Redis, configure: Configure, quick: None
) -> None:
    """A worker with fewer than `recent` offers in the day, some folded and some since: the
    `likely` policy's view of them is the one the recount of their offers gave."""
    worker = "mixed"
    inbox.decline(conn, offer_to(conn, waves, cache, worker, 800), worker)
    job_id = offer_to(conn, waves, cache, worker, 1200)
    time.sleep(0.3)
    release(conn, job_id, worker)
    offer_to(conn, waves, cache, worker, 2000)  # silence
    configure(DISPATCH_LEASE_SECONDS="1")
    commands.accept_job(conn, offer_to(conn, waves, cache, worker, 600), worker, None)
    configure(DISPATCH_LEASE_SECONDS="600")
    time.sleep(1.1)
    assert len(commands.reopen_expired(conn, 10)) == 1  # their lease ran out
    lose_race(conn, waves, cache, configure, worker, "winner-1", 1100)  # after their last accept
    time.sleep(SETTLE_S)
    assert market.fold(conn, settle_s=SETTLE_S) == 6  # the race's two offers too
    # And three since the fold, read live: a decline, a lost race and a pending one.
    inbox.decline(conn, offer_to(conn, waves, cache, worker, 1500), worker)
    lose_race(conn, waves, cache, configure, worker, "winner-2", 1300)
    offer_to(conn, waves, cache, worker, 900)
    time.sleep(0.2)

    job_id, _ = open_job(conn)
    params = {
        "job_id": job_id, "version": 1, "worker_ids": [worker], "distances": [700.0],
        "skills": ["wash"], "min_rating": None, "pool": 24, "recent": 12, "history_s": 86400,
        "silence_s": SILENCE_S, "settle_s": SETTLE_S, "half_m": 2500.0, "door": 0.6,
        "min_answers": 200,
    }  # fmt: skip
    with conn.transaction():  # one now() for both reads, so the clock between them is not measured
        (old,) = conn.execute(OLD_LIKELY_CANDIDATES, params).fetchall()
        (new,) = conn.execute(LIKELY_CANDIDATES.sql, params).fetchall()
    counted = ("offers", "accepts", "releases", "leases_run_out", "lost_races")
    assert tuple(old[field] for field in counted) == (7, 4, 1, 1, 2)
    for field in RECORD:
        assert new[field] == pytest.approx(float(old[field]), rel=1e-3, abs=1e-6), field
    assert new["answer_s"] == pytest.approx(old["answer_s"], rel=1e-3)
    assert new["since_accept_s"] == pytest.approx(old["since_accept_s"], abs=1e-6)
    assert offer_policy_settings().offer_history_offers == 12


def test_more_answers_than_recent_are_scaled_to_recent(
    conn: db.Connection, configure: Configure
) -> None:
    """A busy worker's record weighs like their latest `recent` offers: every count scaled
    by recent / offers, their pace and last accept as they are."""
    conn.execute("INSERT INTO workers (id, skills) VALUES ('busy', '{wash}')")
    conn.execute(
        "INSERT INTO worker_answers VALUES ('busy', 48, 24, 12, 12, 4, 2, 30, 480, 36,"
        " now() - interval '1 hour', now())"
    )
    job_id, _ = open_job(conn)
    params = {
        "job_id": job_id, "version": 1, "worker_ids": ["busy"], "distances": [700.0],
        "skills": ["wash"], "min_rating": None, "pool": 24, "recent": 12, "history_s": 86400,
        "silence_s": SILENCE_S, "settle_s": SETTLE_S, "half_m": 2500.0, "door": 0.6,
        "min_answers": 200,
    }  # fmt: skip
    (row,) = conn.execute(LIKELY_CANDIDATES.sql, params).fetchall()
    scaled = {"offers": 12, "accepts": 6, "declines": 3, "silences": 3, "releases": 1,
              "leases_run_out": 0.5, "expected": 7.5}  # fmt: skip
    for field, value in scaled.items():
        assert row[field] == pytest.approx(value, rel=1e-4), field
    assert row["answer_s"] == pytest.approx(480 / 36)
    assert row["since_accept_s"] == pytest.approx(3600, abs=5)
