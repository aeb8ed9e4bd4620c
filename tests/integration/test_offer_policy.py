"""Who a wave offers to, policy by policy (dispatch.offers.policy), on a real Redis and a real
Postgres: `nearest` makes exactly the seed's choices; `likely` stops offering to a near
worker who always says no, still offers the only worker there is, and writes down why it
chose each worker."""

import random
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from dispatch import db, sweeper
from dispatch.jobs import commands
from dispatch.offers import inbox, market
from dispatch.workers import locations
from tests.conftest import empty_the_tables
from tests.integration.conftest import Waves
from tests.integration.test_offers import HERE, area_of, first_wave, open_job, place

Configure = Callable[..., None]


def nearest_rule(workers: list[dict[str, Any]], size: int, radius_m: int) -> list[str]:
    """The seed's rule, written again in Python: within the radius, nearest first in 100 m
    bands, the higher rating first within a band (unrated last), then the nearer."""
    inside = [w for w in workers if w["distance"] <= radius_m]
    inside.sort(key=lambda w: (w["distance"] // 100, -(w["rating"] or -1), w["distance"]))
    return [w["id"] for w in inside[:size]]


@pytest.mark.parametrize("policy", [None, "nearest"])
def test_nearest_makes_exactly_the_seed_choices(
    conn: db.Connection,
    waves: Waves,
    configure: Configure,
    cache: "locations.Client",
    policy: str | None,
) -> None:
    """Twenty random towns: the workers each wave offers are those the seed's rule picks
    (unset, the policy is `nearest`)."""
    if policy is not None:
        configure(DISPATCH_OFFER_POLICY=policy)
    configure(DISPATCH_OFFER_WAVES="3@1500,4@3000")
    rng = random.Random(24)
    for town in range(20):
        empty_the_tables(conn)
        locations.forget_everyone(cache)
        workers = []
        for n in range(rng.randrange(3, 15)):
            # Away from the 100 m band edges, so that Redis's rounding cannot move a worker.
            distance = rng.randrange(0, 35) * 100 + rng.randrange(20, 80)
            ratings = rng.randrange(0, 6)
            stars = rng.randrange(ratings, 5 * ratings + 1)
            place(conn, f"t{town}-w{n}", distance, bearing=rng.uniform(0, 360),
                  rated=(ratings, stars))  # fmt: skip
            rating = None if ratings == 0 else round((25 + stars) / (5 + ratings), 2)
            workers.append({"id": f"t{town}-w{n}", "distance": distance, "rating": rating})
        _, created = open_job(conn)
        waves.put.clear()
        waves.run(conn, first_wave(created))
        first = nearest_rule(workers, 3, 1500)
        assert waves.offered() == first, town
        waves.run(conn, first_wave(created).next())
        rest = nearest_rule([w for w in workers if w["id"] not in first], 4, 3000)
        assert waves.offered() == first + rest, town


def likely(configure: Configure, waves: str, **more: str) -> None:
    configure(
        DISPATCH_OFFER_POLICY="likely",
        DISPATCH_OFFER_WAVES=waves,
        DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="60",
        **more,
    )


def offered_in(conn: db.Connection, job_id: UUID, wave: int) -> list[str]:
    rows = conn.execute(
        "SELECT worker_id FROM job_offers WHERE job_id = %s AND wave = %s ORDER BY id",
        (job_id, wave),
    ).fetchall()
    return [r["worker_id"] for r in rows]


def test_likely_stops_offering_to_the_near_worker_who_always_declines(
    conn: db.Connection, waves: Waves, configure: Configure
) -> None:
    """One worker 200 m away says no to everything; ten others 1.5 km away take what they
    are offered. `nearest` would offer the near one first every time; `likely` learns from
    the declines it recorded and stops, after at most four (a quick "no" still reads as a
    quick answer, and a worker with no record is guessed slow: each decline costs the near
    worker more than the 1.3 km they have on the others)."""
    likely(configure, "1@3000,1@3000", DISPATCH_OFFER_MAX_SIZE="1")
    place(conn, "near-no", 200)
    for n in range(10):
        place(conn, f"far-{n}", 1500, bearing=36 * n)
    first_offers = []
    for _ in range(8):
        job_id, created = open_job(conn)
        request = first_wave(created)
        waves.run(conn, request)
        (chosen,) = offered_in(conn, job_id, 1)
        first_offers.append(chosen)
        if chosen == "near-no":
            inbox.decline(conn, job_id, "near-no")
            waves.run(conn, request.next())
            (chosen,) = offered_in(conn, job_id, 2)
        commands.accept_job(conn, job_id=job_id, worker_id=chosen, version=None)
    assert first_offers[0] == "near-no"  # no record yet: the nearest is the likeliest
    assert first_offers.count("near-no") <= 4, first_offers
    assert "near-no" not in first_offers[-4:], first_offers


def test_likely_offers_the_only_worker_every_job_even_one_who_declines(
    conn: db.Connection, waves: Waves, configure: Configure
) -> None:
    """A town with one worker: however poor their record, each job is offered to them (a
    policy ranks; it never shuts anyone out), the later waves find nobody new, and the
    business hears `job.unfilled` after the last."""
    likely(configure, "3@3000,10@8000")
    place(conn, "only", 2500)
    for _ in range(5):
        job_id, created = open_job(conn)
        request = first_wave(created)
        assert waves.run(conn, request).offered == 1
        inbox.decline(conn, job_id, "only")
        assert waves.run(conn, request.next()).offered == 0
        assert waves.run(conn, request.next().next()).unfilled
    assert waves.offered() == ["only"] * 5


def test_each_offer_records_why_the_worker_was_chosen(
    conn: db.Connection, waves: Waves, configure: Configure
) -> None:
    """The offer event's row keeps the ranking inputs, the worker's record as the product
    holds it: one who declined the last job offered to them carries that decline into the
    next; the one who took it holds a live job and is no longer part of the supply."""
    likely(configure, "2@3000")
    place(conn, "keen", 900, rated=(2, 10))
    place(conn, "picky", 700, bearing=180)
    past, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert sorted(offered_in(conn, past, 1)) == ["keen", "picky"]  # 0.9 needs both
    inbox.decline(conn, past, "picky")
    commands.accept_job(conn, job_id=past, worker_id="keen", version=None)
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    (row,) = conn.execute(
        "SELECT data->'why' AS why FROM offer_events WHERE job_id = %s AND type = 'offer.created'",
        (job_id,),
    ).fetchall()
    why = row["why"]
    assert why["policy"] == "likely" and why["rank"] == 1 and why["supply"] == 1
    assert (why["offers"], why["accepts"], why["declines"], why["silences"]) == (1, 0, 1, 0)
    assert (why["releases"], why["leases_run_out"], why["round_declines"]) == (0, 0, 0)
    assert abs(why["distance_m"] - 700) < 5 and why["rating"] is None
    assert why["min_rating"] is None and why["answer_s"] is not None
    assert 0 < why["chance"] < 1 and why["score"] > 0


@pytest.mark.parametrize("policy", ["nearest", "likely"])
def test_every_offer_event_on_the_bus_says_why(
    conn: db.Connection, waves: Waves, configure: Configure, policy: str
) -> None:
    """`offer.created` carries the inputs that ranked the worker, for both policies, in the
    AsyncAPI document's form (every stored event is checked against it when the test ends)."""
    likely(configure, "3@3000", DISPATCH_OFFER_MAX_SIZE="3", DISPATCH_OFFER_TARGET="0.99")
    configure(DISPATCH_OFFER_POLICY=policy)
    place(conn, "a", 300, rated=(5, 25))  # (5 x 4.0 + 25) / 10 = 4.5
    place(conn, "b", 800, bearing=90)
    place(conn, "c", 1500, bearing=180)
    _, created = open_job(conn)
    waves.run(conn, first_wave(created))
    events = [e for e in waves.put if e.type == "offer.created"]
    whys = sorted((e.data["why"] for e in events), key=lambda why: why["rank"])
    assert [why["rank"] for why in whys] == [1, 2, 3]
    for event in events:
        why = event.data["why"]
        assert why["policy"] == policy
        assert abs(why["distance_m"] - event.data["distance_m"]) < 0.1
        assert why["min_rating"] is None
    by_worker = {e.data["worker_id"]: e.data["why"] for e in events}
    assert by_worker["a"]["rating"] == 4.5 and by_worker["b"]["rating"] is None
    if policy == "nearest":
        assert [by_worker[w]["rank"] for w in "abc"] == [1, 2, 3]
        assert by_worker["a"]["score"] is None  # nearest ranks by distance and rating alone
    else:
        assert all(0 < why["chance"] < 1 and why["supply"] == 3 for why in whys)


@pytest.mark.parametrize("ahead", [0, 1])
def test_likely_reaches_the_next_waves_radius_when_no_one_is_near(
    conn: db.Connection, waves: Waves, configure: Configure, ahead: int
) -> None:
    """A thin evening: nobody within the first wave's 2 km, one worker 4 km away. Reaching one
    wave ahead (the default), the first wave offers them at once instead of leaving the job
    unoffered for an interval; with the reach at 0 it finds nobody, as the seed's would. Where
    someone is near, the near one still ranks first (a wave of one)."""
    likely(configure, "1@2000,1@5000", DISPATCH_OFFER_REACH_WAVES=str(ahead),
           DISPATCH_OFFER_MAX_SIZE="1")  # fmt: skip
    place(conn, "far", 4000)
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert offered_in(conn, job_id, 1) == (["far"] if ahead else [])
    (radius,) = {e.data["radius_m"] for e in waves.put if e.type == "offer.created"} or {None}
    assert radius == (5000 if ahead else None)  # the event says how far the wave looked
    place(conn, "near", 1000, bearing=180)
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert offered_in(conn, job_id, 1) == ["near"]


def test_the_sweep_fits_the_markets_curve_and_the_waves_read_it(
    conn: db.Connection, waves: Waves, configure: Configure, cache: "locations.Client"
) -> None:
    """A city whose workers say yes further out than the configured curve (half at 2.5 km):
    sixty offers answered at 0.5 to 6.5 km, as a curve that halves at 5 km says. The sweep
    fits the market's curve from those answers (once, until it is due again; never under
    `nearest`, which reads none), and the next `likely` wave reads its chances with it, once
    it stands on enough answers, and says so in the offer's `why`."""
    configure(DISPATCH_OFFER_WAVES="1@9000", DISPATCH_OFFER_MARKET_MIN_ANSWERS="60")
    for distance in (500, 2500, 4500, 6500):
        takes = round(15 * 0.9 / (1 + (distance / 5000) ** 2))  # of the 15 offered there
        for n in range(15):
            locations.forget_everyone(cache)
            place(conn, f"w{distance}-{n}", distance, bearing=24 * n)
            job_id, created = open_job(conn)
            waves.run(conn, first_wave(created))
            if n < takes:
                commands.accept_job(conn, job_id=job_id, worker_id=f"w{distance}-{n}", version=None)
            else:
                inbox.decline(conn, job_id, f"w{distance}-{n}")
    assert sweeper.sweep(conn).market_refit is False  # nearest: no curve to keep
    likely(configure, "1@9000")
    # The sweep folds an answer once it can no longer change (market.settle_seconds): here
    # 2 x 1 s of silence, a 1 s lease and 2 x 1 s sweep periods.
    configure(DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="0", DISPATCH_LEASE_SECONDS="1",
              DISPATCH_SWEEP_INTERVAL_SECONDS="1")  # fmt: skip
    assert market.settle_seconds() == 5
    time.sleep(5.1)
    assert sweeper.sweep(conn).market_refit is True
    fitted = conn.execute(
        "SELECT * FROM offer_market WHERE area = dispatch_market_area(%s, %s)", HERE
    ).fetchone()
    assert fitted is not None and fitted["answers"] == 60
    assert 3500 < fitted["half_distance_m"] < 7000 and 0.75 < fitted["door"] <= 1, fitted
    assert sweeper.sweep(conn).market_refit is False  # not due again for ten minutes

    why = why_of_next_offer(conn, waves, cache)
    assert why["half_distance_m"] == round(fitted["half_distance_m"], 1)
    assert why["market_door"] == round(fitted["door"], 4)
    configure(DISPATCH_OFFER_MARKET_MIN_ANSWERS="61")  # one more than it stands on
    configured = why_of_next_offer(conn, waves, cache)
    assert (configured["half_distance_m"], configured["market_door"]) == (2500, 0.6)
    assert configured["chance"] < why["chance"]  # 4 km: the market says likelier


def why_of_next_offer(
    conn: db.Connection, waves: Waves, cache: "locations.Client", at: tuple[float, float] = HERE
) -> dict[str, Any]:
    """The `why` of the offer of a new job at `at`, to the one worker 4 km away."""
    locations.forget_everyone(cache)
    place(conn, f"next-{len(waves.put)}", 4000, at=at)
    _, created = open_job(conn, at=at)
    waves.run(conn, first_wave(created))
    why: dict[str, Any] = waves.put[-1].data["why"]
    return why


# Three metros of one deployment, each in an area of its own (dispatch_market_area: a cell of a
# degree by a degree), and a fourth with no answers.
COMPACT = HERE  # Bengaluru
SPREAD = (13.0827, 80.2707)  # Chennai
THIN = (28.6139, 77.2090)  # Delhi
QUIET = (18.5204, 73.8567)  # Pune


def test_each_area_fits_its_own_curve_and_its_waves_read_it(
    conn: db.Connection, waves: Waves, configure: Configure, cache: "locations.Client"
) -> None:
    """In one metro workers say yes near the job and seldom beyond (as a curve that halves at
    1.5 km says), in another they drive (6 km), in a third four offers were answered. The
    sweep fits each area's curve to its own answers, and the deployment's to all of them; a
    wave reads its job's area's curve, the deployment's where the area stands on too few
    answers (or none), and the configured one where nothing does."""
    configure(DISPATCH_OFFER_WAVES="1@9000", DISPATCH_OFFER_MARKET_MIN_ANSWERS="30")
    answered = {COMPACT: (1500, 8), SPREAD: (6000, 8), THIN: (6000, 1)}  # half, offers each
    for at, (half, n) in answered.items():
        for distance in (500, 2500, 4500, 6500):
            takes = round(n * 0.9 / (1 + (distance / half) ** 2))
            for k in range(n):
                worker = f"w{at[1]:.0f}-{distance}-{k}"
                locations.forget_everyone(cache)
                place(conn, worker, distance, bearing=40 * k, at=at)
                job_id, created = open_job(conn, at=at)
                waves.run(conn, first_wave(created))
                if k < takes:
                    commands.accept_job(conn, job_id=job_id, worker_id=worker, version=None)
                else:
                    inbox.decline(conn, job_id, worker)
    likely(configure, "1@9000")
    configure(DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="0", DISPATCH_LEASE_SECONDS="1",
              DISPATCH_SWEEP_INTERVAL_SECONDS="1")  # fmt: skip
    time.sleep(market.settle_seconds() + 0.1)
    assert sweeper.sweep(conn).market_refit is True
    curves = {r["area"]: r for r in conn.execute("SELECT * FROM offer_market").fetchall()}
    areas = {at: area_of(conn, at) for at in (COMPACT, SPREAD, THIN, QUIET)}
    assert len(set(areas.values())) == 4 and set(curves) == {-1, *list(areas.values())[:3]}
    compact, spread, whole = curves[areas[COMPACT]], curves[areas[SPREAD]], curves[-1]
    assert compact["answers"] == spread["answers"] == 32 and curves[areas[THIN]]["answers"] == 4
    assert whole["answers"] == 68
    assert compact["half_distance_m"] < 2200 and spread["half_distance_m"] > 4000, curves
    assert compact["half_distance_m"] < whole["half_distance_m"] < spread["half_distance_m"]

    for at, curve in ((COMPACT, compact), (SPREAD, spread), (THIN, whole), (QUIET, whole)):
        why = why_of_next_offer(conn, waves, cache, at)
        read = (why["half_distance_m"], why["market_door"])
        assert read == (round(curve["half_distance_m"], 1), round(curve["door"], 4)), at
    configure(DISPATCH_OFFER_MARKET_MIN_ANSWERS="69")  # more than the deployment stands on
    for at in (COMPACT, QUIET):
        why = why_of_next_offer(conn, waves, cache, at)
        assert (why["half_distance_m"], why["market_door"]) == (2500, 0.6), at


def test_a_cold_markets_wave_is_no_wider_than_the_seeds_until_its_curve_stands(
    conn: db.Connection, waves: Waves, configure: Configure, cache: "locations.Client"
) -> None:
    """Ten workers 4 km away, none with a record, and a first wave of 2: with no curve on
    record (a new deployment) `likely` offers 2, as the seed's wave would, nearest first; once
    the job's area has a curve standing, the same supply gets a wave sized to the target (up
    to the cap of 4). Each offer's `why` says which it was, and that everyone was left out."""
    likely(configure, "2@5000,10@8000")
    for n in range(10):
        place(conn, f"w{n}", 4000 + 10 * n, bearing=36 * n)
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert offered_in(conn, job_id, 1) == ["w0", "w1"]
    whys = [e.data["why"] for e in waves.put if e.type == "offer.created"]
    assert {(w["market_stands"], w["left_out"], w["since_offer_s"]) for w in whys} == {
        (False, True, None)
    }
    conn.execute(
        "INSERT INTO offer_market (area, door, half_distance_m, answers)"
        " VALUES (dispatch_market_area(%s, %s), 0.6, 2500, 500)",
        HERE,
    )
    waves.put.clear()
    job_id, created = open_job(conn)
    waves.run(conn, first_wave(created))
    assert len(offered_in(conn, job_id, 1)) == 4
    whys = [e.data["why"] for e in waves.put if e.type == "offer.created"]
    assert all(w["market_stands"] for w in whys)
    # w0 and w1 were offered a moment ago: the floor ranks the eight left out first.
    assert not {"w0", "w1"} & set(offered_in(conn, job_id, 1))
