"""The `likely` policy's arithmetic, without any service: a wave is as wide as the supply
needs (narrow in a crowd of keen workers, wide where workers are far or say no), never
empty while anyone qualifies, and best first."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatch.config.offers import Wave
from dispatch.offers import policy
from dispatch.offers.policy import Candidate, Knobs, choose, judge

KNOBS = Knobs(interval_s=60, history_s=7200)


def keen(n: int, distance_m: float) -> Candidate:
    """A worker who took the last ten offers, answering in ten seconds."""
    return Candidate(f"keen-{n}", distance_m, offers=10, accepts=10, expected=9.0, answer_s=10)


def test_a_crowd_of_keen_near_workers_gets_a_narrow_wave() -> None:
    crowd = [keen(n, 300 + 10 * n) for n in range(30)]
    chosen = choose(crowd, KNOBS, wave_size=3, min_rating=None, round_declines=0)
    assert 1 <= len(chosen) <= 2


def test_far_or_unwilling_supply_gets_a_wide_wave() -> None:
    far = [Candidate(f"far-{n}", 4500 + 10 * n) for n in range(30)]
    assert len(choose(far, KNOBS, wave_size=3, min_rating=None, round_declines=0)) == KNOBS.max_size
    # A job that others already turned down in this round widens the wave.
    near = [Candidate(f"new-{n}", 800 + 10 * n) for n in range(30)]
    calm = choose(near, KNOBS, wave_size=3, min_rating=None, round_declines=0)
    spurned = choose(near, KNOBS, wave_size=3, min_rating=None, round_declines=4)
    assert len(spurned) > len(calm)


def test_a_record_of_declines_and_vanishing_ranks_below_a_fresh_worker() -> None:
    fresh = Candidate("fresh", 1200)
    says_no = Candidate("says-no", 300, offers=6, declines=6, expected=5.9, answer_s=3)
    vanishes = Candidate("vanishes", 300, offers=4, accepts=4, expected=3.9, answer_s=5,
                         leases_run_out=3)  # fmt: skip
    slow = Candidate("slow", 300, offers=4, silences=4, expected=3.9)
    order = [c.worker_id for c in choose([says_no, vanishes, slow, fresh], KNOBS, wave_size=4,
                                         min_rating=None, round_declines=0)]  # fmt: skip
    assert order[0] == "fresh", order
    # A rating well above what the job asks counts a little, and idle time spreads work.
    high = judge(Candidate("a", 500, rating=4.9), KNOBS, 4.0, 0)
    low = judge(Candidate("b", 500, rating=4.0), KNOBS, 4.0, 0)
    assert high["score"] > low["score"] and high["chance"] == low["chance"]
    busy = judge(Candidate("c", 500, offers=1, accepts=1, expected=1, since_accept_s=60),
                 KNOBS, None, 0)  # fmt: skip
    idle = judge(Candidate("d", 500, offers=1, accepts=1, expected=1, since_accept_s=7000),
                 KNOBS, None, 0)  # fmt: skip
    assert idle["score"] > busy["score"]


def test_a_lost_race_is_a_yes_but_neither_a_hold_nor_a_failure_to_hold() -> None:
    """A lost accept race (migration 0057) counts in `accepts` (their door, their pace) and in
    `lost_races`, which holds leaves out: it reads the jobs they took."""

    def holds(c: Candidate) -> float:
        # Never took a job: idle the whole history (x 1.2); the floor's weight aside.
        why = judge(c, replace(KNOBS, floor_weight=0.0), None, 0)
        return float(why["score"]) / (float(why["soon"]) * (1 + KNOBS.idle_weight))

    took_two = Candidate("took", 500, offers=2, accepts=2, releases=1, expected=1.8, answer_s=10)
    also_lost_two = replace(took_two, worker_id="raced", offers=4, accepts=4, lost_races=2,
                            expected=3.6)  # fmt: skip
    assert holds(took_two) == pytest.approx(2 / 3, rel=1e-2)
    assert holds(also_lost_two) == pytest.approx(2 / 3, rel=1e-2)
    silent_twice = replace(also_lost_two, accepts=2, lost_races=0, silences=2)
    assert (
        judge(also_lost_two, KNOBS, None, 0)["chance"]
        > judge(silent_twice, KNOBS, None, 0)["chance"]
    )


candidates = st.lists(
    st.builds(
        Candidate,
        worker_id=st.uuids().map(str),
        distance_m=st.floats(0, 8000),
        rating=st.none() | st.floats(1, 5),
        offers=st.integers(0, 20),
        accepts=st.integers(0, 20),
        declines=st.integers(0, 20),
        silences=st.integers(0, 20),
        releases=st.integers(0, 5),
        leases_run_out=st.integers(0, 5),
        lost_races=st.integers(0, 5),
        expected=st.floats(0, 20),
        answer_s=st.none() | st.floats(0, 600),
        since_accept_s=st.none() | st.floats(0, 20000),
        since_offer_s=st.none() | st.floats(0, 20000),
    ),
    max_size=40,
    unique_by=lambda c: c.worker_id,
)


@given(candidates, st.integers(1, 30), st.integers(0, 10), st.booleans(), st.integers(0, 2))
def test_a_wave_is_within_its_bounds_and_best_first(
    pool: list[Candidate], wave_size: int, round_declines: int, stands: bool, seats: int
) -> None:
    knobs = replace(KNOBS, market_stands=stands, floor_seats=seats)
    chosen = choose(pool, knobs, wave_size=wave_size, min_rating=None,
                    round_declines=round_declines)  # fmt: skip
    if pool:
        assert 1 <= len(chosen) <= (max(KNOBS.max_size, wave_size) if stands else wave_size)
    else:
        assert chosen == []
    assert len({c.worker_id for c in chosen}) == len(chosen)
    # The floor's seats come last: left out, at most `seats`; the rest best first.
    seated = [c for c in chosen if c.why["seat"]]
    assert chosen[len(chosen) - len(seated) :] == seated and len(seated) <= seats
    assert all(c.why["left_out"] for c in seated)
    chosen = chosen[: len(chosen) - len(seated)]
    scores = [c.why["score"] for c in chosen]
    assert scores == sorted(scores, reverse=True)
    assert [c.why["rank"] for c in chosen] == list(range(1, len(chosen) + 1))
    best = max((judge(c, KNOBS, None, round_declines)["score"] for c in pool), default=None)
    assert best is None or scores[0] == best
    assert all(0 <= c.why["chance"] <= 1 for c in chosen)


def test_a_wave_looks_as_far_as_a_later_wave() -> None:
    seed = [Wave(3, 3000), Wave(10, 5000), Wave(25, 8000)]
    assert policy.reach_m(seed, 1, 0) == 3000
    assert policy.reach_m(seed, 1, 1) == 5000
    assert policy.reach_m(seed, 2, 1) == 8000
    assert policy.reach_m(seed, 3, 1) == 8000  # the last wave's radius at most
    assert policy.reach_m(seed, 1, 9) == 8000


def test_a_worker_left_out_for_the_floor_outranks_one_just_offered() -> None:
    """Fairness with a floor: of two workers alike but for their last offer, the one offered
    nothing for `floor_s` (or ever) ranks first, by the floor's weight; once offered, they
    count as everyone does. With no weight, the floor changes nothing."""
    just = Candidate("just", 900, since_offer_s=60)
    left = Candidate("left", 900, since_offer_s=KNOBS.floor_s)
    never = Candidate("never", 900)
    scores = {c.worker_id: judge(c, KNOBS, None, 0)["score"] for c in (just, left, never)}
    assert scores["left"] == scores["never"] == pytest.approx(1.5 * scores["just"], abs=1e-4)
    # A worker a little nearer and keener, but offered a minute ago, gives way to the left out.
    nearer = keen(0, 600)
    offered = replace(nearer, since_offer_s=60)
    waiting = replace(keen(1, 900), accepts=8, since_offer_s=7200)
    ranked = choose([offered, waiting], KNOBS, wave_size=3, min_rating=None, round_declines=0)
    assert ranked[0].worker_id == waiting.worker_id and ranked[0].why["left_out"] is True
    flat = replace(KNOBS, floor_weight=0.0)
    assert judge(left, flat, None, 0)["score"] == judge(just, flat, None, 0)["score"]


def test_until_the_markets_curve_stands_a_wave_is_no_wider_than_the_seeds() -> None:
    """A cold market (no curve on enough answers yet): the wave ranks as ever (distance,
    rating, what each worker's own record says) but offers no more workers than the seed's
    wave would; once the curve stands, up to `max_size`."""
    far = [Candidate(f"far-{n}", 4500 + 10 * n) for n in range(30)]
    cold = replace(KNOBS, market_stands=False)
    warm_wave = choose(far, KNOBS, wave_size=3, min_rating=None, round_declines=0)
    cold_wave = choose(far, cold, wave_size=3, min_rating=None, round_declines=0)
    assert len(warm_wave) == KNOBS.max_size > 3 == len(cold_wave)
    assert [c.worker_id for c in cold_wave] == [c.worker_id for c in warm_wave[:3]]
    rated = [Candidate("low", 1000, rating=4.0), Candidate("high", 1000, rating=4.9)]
    assert choose(rated, cold, wave_size=1, min_rating=4.0, round_declines=0)[0].worker_id == (
        "high"
    )


def test_the_floors_seat_offers_the_worker_left_out_longest_beside_the_likeliest() -> None:
    """The floor's seat: beside the wave's likeliest (chosen as without it), the candidate left
    out longest (never offered first, then the longest since their last offer), once left out
    for `floor_s`: an offer added, never one taken away, and never beyond the wave's size."""
    keen_and_busy = [replace(keen(n, 300 + 10 * n), since_offer_s=60) for n in range(5)]
    waiting = [
        Candidate("an-hour", 2500, since_offer_s=3600),
        Candidate("never", 3500),
        Candidate("two-hours", 3000, since_offer_s=7200),
        Candidate("just-now", 2000, since_offer_s=KNOBS.floor_s - 1),
    ]
    seated = replace(KNOBS, floor_weight=0.0, floor_seats=1)
    pool = keen_and_busy + waiting
    without = choose(pool, replace(seated, floor_seats=0), wave_size=3, min_rating=None,
                     round_declines=0)  # fmt: skip
    with_seat = choose(pool, seated, wave_size=3, min_rating=None, round_declines=0)
    assert [c.worker_id for c in with_seat] == [c.worker_id for c in without] + ["never"]
    assert [c.why["seat"] for c in with_seat] == [False] * len(without) + [True]
    assert with_seat[-1].why["rank"] == len(with_seat)
    two = choose(pool, replace(seated, floor_seats=2), wave_size=3, min_rating=None,
                 round_declines=0)  # fmt: skip
    assert [c.worker_id for c in two][len(without) :] == ["never", "two-hours"]
    # A full wave has no seat to give; one left out longest already chosen takes none.
    full = choose(pool, replace(seated, max_size=1), wave_size=1, min_rating=None,
                  round_declines=0)  # fmt: skip
    assert [c.worker_id for c in full] == ["keen-0"]
    first = [replace(keen(9, 250), worker_id="never-keen"), *pool]  # never offered, the best
    ranked = choose(first, seated, wave_size=3, min_rating=None, round_declines=0)
    assert ranked[0].worker_id == "never-keen" and not any(c.why["seat"] for c in ranked)
