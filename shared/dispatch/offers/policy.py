"""Who a wave offers the job to: the `likely` policy (`DISPATCH_OFFER_POLICY=likely`).

The seed's policy (`nearest`, in `waves.run_wave`) offers to the nearest qualified workers, a
fixed number per wave. This one offers to the workers most likely to take the job soon, and
sizes each wave to the supply around the job, from what the product itself records and
nothing else (`sql.LIKELY_CANDIDATES`): how far each qualified worker is, their rating against
the job's `min_rating`, what they did with their offers (accepts, declines, silence, releases,
leases that ran out) and how fast they answered, how long since they last took a job, and how
many workers already declined this job in this round. A lost accept race (migration 0057) is a
yes: in `accepts` and the answer pace, but not a job taken (not in the idle time, nor in holds,
which reads the jobs they took: neither held nor given back).

A worker's answers are not recounted on every wave: the sweeper folds each offer's answer once,
when it can no longer change (`market.settle_seconds`: a lease and a few minutes), into their
row of `worker_answers` (`sql.FOLD_ANSWERS`, every pass), each answer weighted by its age
(exp(-age / `offer_history_seconds`): a day-old answer counts 0.37); the wave reads that row
decayed to now plus the worker's offers since the fold, live, so that a "no" counts at once.
When the answers add up to more than `offer_history_offers` (12), the counts are scaled down to
12, so that a busy worker's record weighs against the prior like their latest 12 offers.

It reads them with the market's curve (dispatch.offers.market: a yes at the door, `prior`
below, and the distance `half` at which it halves, fit by the sweeper from the market's own
answers), or with the configured `offer_prior_accept` and `offer_half_distance_m` until that
curve stands on enough answers. For each of the nearest `offer_pool` qualified workers:

    door     = (accepts + w * prior) / (expected + w)       their yes at the door; `expected`
                                                             is the yeses their offers'
                                                             distances alone would predict
    accept   = door * 1 / (1 + (distance / half)^2)          at this job's distance
    pace     = their mean answer time (one prior answer at the horizon)
    chance   = accept * (1 - exp(-interval / pace)) * discount^round_declines
                                                             a yes before the next wave
    soon     = accept * (1 - exp(-horizon / pace)) * discount^round_declines
                                                             a yes within the horizon
    holds    = (taken - releases - leases run out + 1) / (taken + 1)
                                                             taken: accepts less lost races
    score    = soon * holds * (1 + idle_weight * idle share) * (1 + rating_weight * margin)
               * (1 + floor_weight if offered nothing for `floor_s`, or ever)
                                                             the floor: no one left out a shift

The wave offers to the best scores (the likeliest to say yes soon first), as few as make
"someone says yes before the next wave" at least `offer_target` likely (1 - prod(1 - chance)),
at least `offer_min_size`, at most the larger of `offer_max_size` and the wave's own size
(the wave's own size alone while the market's curve does not stand: a cold market's wave is
no wider than the seed's): wide where supply is thin or far, narrow where a few near, keen
workers would only race each other. Beside them, the floor's seats (`offer_floor_seats`, 1):
the candidates left out longest (never offered first, then the longest since their last
offer), once left out for `floor_s`, are offered too, within the wave's size. An offer
added, never one taken away: the weight alone bought fairness with the p90 gain, the seat
buys it with offers, which `likely` sends fewer of (docs/simulation.md, issue 38). It looks
as far as the wave `offer_reach_waves` later reaches (`reach_m`), so that a job with nobody
near is offered at once to whoever is farther rather than an interval later. Every chosen
worker's offer event records the inputs that ranked them (`why`, `seat` true for a seat), so
that "why him and not me?" has an answer.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from dispatch.config.offer_policy import OfferPolicySettings, offer_policy_settings
from dispatch.config.offers import OfferSettings, Wave, offer_settings
from dispatch.db import Connection
from dispatch.models import to_json
from dispatch.offers import sql
from dispatch.offers.market import near, settle_seconds

# A new worker's rating (workers.rating's prior: five ratings of 4.0) when the job asks none.
NEUTRAL_RATING = 4.0


@dataclass(frozen=True)
class Candidate:
    """A qualified worker near the job and their recent record (`sql.LIKELY_CANDIDATES`)."""

    worker_id: str
    distance_m: float
    rating: float | None = None
    # Their answers, each weighted by its age (exp(-age / history)), scaled to their latest
    # `offer_history_offers` when there are more: answered or gone silent (pending offers are
    # not counted yet), and of what kind.
    offers: float = 0
    accepts: float = 0
    declines: float = 0
    silences: float = 0
    releases: float = 0
    leases_run_out: float = 0
    lost_races: float = 0  # of the accepts: yeses that lost the race (no job taken, no hold)
    expected: float = 0.0  # yeses their offers' distances alone predict
    answer_s: float | None = None  # mean seconds from offer to answer
    since_accept_s: float | None = None
    since_offer_s: float | None = None  # since their last offer of any job (None: none ever)


@dataclass(frozen=True)
class Chosen:
    worker_id: str
    distance_m: float
    why: dict[str, Any]


@dataclass(frozen=True)
class Knobs:
    """The policy's parameters (settings `DISPATCH_OFFER_*`, documented in
    dispatch.config.offers and dispatch.config.offer_policy)."""

    interval_s: float  # the wave interval: an unanswered offer this old counts as silence
    history_s: float
    horizon_s: float = 20
    target: float = 0.8
    prior_accept: float = 0.6
    prior_weight: float = 3.0
    half_distance_m: float = 2500
    decline_discount: float = 0.85
    idle_weight: float = 0.2
    rating_weight: float = 0.05
    min_size: int = 1
    max_size: int = 4
    floor_s: float = 1800
    floor_weight: float = 0.5
    floor_seats: int = 1
    # Whether the market's curve stands on enough answers (dispatch_market_curve's `stands`,
    # read per wave); until it does, a wave offers no more workers than the seed's would.
    market_stands: bool = True

    @classmethod
    def of(cls, offers: OfferSettings, s: OfferPolicySettings) -> "Knobs":
        return cls(
            interval_s=max(1, offers.offer_wave_interval_seconds),
            history_s=s.offer_history_seconds,
            horizon_s=s.offer_horizon_seconds,
            target=s.offer_target,
            prior_accept=s.offer_prior_accept,
            prior_weight=s.offer_prior_weight,
            half_distance_m=s.offer_half_distance_m,
            decline_discount=s.offer_decline_discount,
            idle_weight=s.offer_idle_weight,
            rating_weight=s.offer_rating_weight,
            min_size=s.offer_min_size,
            max_size=s.offer_max_size,
            floor_s=s.offer_floor_seconds,
            floor_weight=s.offer_floor_weight,
            floor_seats=s.offer_floor_seats,
        )


def reach_m(waves: Sequence[Wave], number: int, ahead: int) -> int:
    """How far wave `number` (from 1) looks under this policy: as far as the wave `ahead`
    later (the last wave at most), so that a job with no one near is offered at once to whoever
    is farther rather than after an interval. The score ranks the near first."""
    return waves[min(len(waves), number + ahead) - 1].radius_m


def judge(
    c: Candidate, knobs: Knobs, min_rating: float | None, round_declines: int
) -> dict[str, Any]:
    """One candidate's inputs and what the policy makes of them (the offer event's `why`)."""
    door = (c.accepts + knobs.prior_weight * knobs.prior_accept) / (c.expected + knobs.prior_weight)
    accept = min(1.0, door) * near(c.distance_m, knobs.half_distance_m)
    answered = c.accepts + c.declines
    pace = max(1e-3, ((c.answer_s or 0.0) * answered + knobs.horizon_s) / (answered + 1))
    spurned = knobs.decline_discount**round_declines
    chance = accept * (1 - math.exp(-knobs.interval_s / pace)) * spurned
    soon = accept * (1 - math.exp(-knobs.horizon_s / pace)) * spurned
    taken = max(0.0, c.accepts - c.lost_races)  # a lost race is a yes, neither held nor not
    holds = (max(0, taken - c.releases - c.leases_run_out) + 1) / (taken + 1)
    idle_s = knobs.history_s if c.since_accept_s is None else min(c.since_accept_s,
                                                                   knobs.history_s)  # fmt: skip
    margin = (c.rating if c.rating is not None else NEUTRAL_RATING) - (
        min_rating if min_rating is not None else NEUTRAL_RATING
    )
    left_out = c.since_offer_s is None or c.since_offer_s >= knobs.floor_s
    score = (
        soon
        * holds
        * (1 + knobs.idle_weight * idle_s / knobs.history_s)
        * max(0.0, 1 + knobs.rating_weight * margin)
        * (1 + knobs.floor_weight * left_out)
    )
    return {
        "policy": "likely",
        "distance_m": round(c.distance_m, 1),
        "rating": c.rating,
        "min_rating": min_rating,
        "offers": round(c.offers),  # the event's record keeps whole counts
        "accepts": round(c.accepts),
        "declines": round(c.declines),
        "silences": round(c.silences),
        "releases": round(c.releases),
        "leases_run_out": round(c.leases_run_out),
        "answer_s": None if c.answer_s is None else round(c.answer_s, 1),
        "idle_s": round(idle_s),
        "since_offer_s": None if c.since_offer_s is None else round(c.since_offer_s),
        "left_out": left_out,
        "round_declines": round_declines,
        "chance": round(chance, 4),
        "soon": round(soon, 4),
        "score": round(score, 4),
        "market_door": round(knobs.prior_accept, 4),
        "half_distance_m": round(knobs.half_distance_m, 1),
        "lost_races": round(c.lost_races),
        "market_stands": knobs.market_stands,
    }


def choose(
    candidates: list[Candidate],
    knobs: Knobs,
    *,
    wave_size: int,
    min_rating: float | None,
    round_declines: int,
) -> list[Chosen]:
    """The workers to offer, best first, as few as the target asks (see the module)."""
    judged = sorted(
        ((c, judge(c, knobs, min_rating, round_declines)) for c in candidates),
        key=lambda pair: (-pair[1]["score"], pair[0].distance_m, pair[0].worker_id),
    )
    most = max(knobs.max_size, wave_size) if knobs.market_stands else wave_size
    chosen: list[Chosen] = []
    nobody = 1.0  # the chance that none of the chosen says yes within the interval
    for c, why in judged[:most]:
        if len(chosen) >= knobs.min_size and 1 - nobody >= knobs.target:
            break
        nobody *= 1 - why["chance"]
        why = {**why, "rank": len(chosen) + 1, "supply": len(candidates), "seat": False}
        chosen.append(Chosen(c.worker_id, c.distance_m, why))
    # The floor's seats: beside the likeliest, the candidates left out longest (never offered
    # first, then the longest since their last offer; the likelier first among equals), once
    # left out for `floor_s`. An offer added, never one taken away; within the wave's size.
    offered = {c.worker_id for c in chosen}
    waiting = sorted(
        (pair for pair in judged if pair[1]["left_out"]),
        key=lambda pair: -math.inf if pair[0].since_offer_s is None else -pair[0].since_offer_s,
    )
    for c, why in waiting[: knobs.floor_seats]:
        if len(chosen) < most and c.worker_id not in offered:
            why = {**why, "rank": len(chosen) + 1, "supply": len(candidates), "seat": True}
            chosen.append(Chosen(c.worker_id, c.distance_m, why))
    return chosen


def make_offers(conn: Connection, params: sql.MakeOffersParams) -> int:
    """The wave's offers under this policy, inside the wave's transaction (`params`: the
    seed's MAKE_OFFERS parameters). Returns how many were made."""
    s = offer_policy_settings()
    knobs = Knobs.of(offer_settings(), s)
    rows = sql.LIKELY_CANDIDATES.all(
        conn,
        {
            "job_id": params["job_id"],
            "version": params["version"],
            "worker_ids": params["worker_ids"],
            "distances": params["distances"],
            "pool": s.offer_pool,
            "recent": s.offer_history_offers,
            "history_s": s.offer_history_seconds,
            "silence_s": knobs.interval_s,
            "settle_s": settle_seconds(),
            "half_m": knobs.half_distance_m,
            "door": knobs.prior_accept,
            "min_answers": s.offer_market_min_answers,
        },
    )
    if not rows:
        return 0
    # The market's curve as the statement read it (dispatch.offers.market), or the configured.
    knobs = replace(
        knobs,
        half_distance_m=rows[0]["market_half_m"],
        prior_accept=rows[0]["market_door"],
        market_stands=rows[0]["market_stands"],
    )
    candidates = [candidate(row) for row in rows]
    min_rating = params["min_rating"]
    chosen = choose(
        candidates,
        knobs,
        wave_size=params["size"],
        min_rating=None if min_rating is None else float(min_rating),
        round_declines=int(rows[0]["round_declines"]),
    )
    made = sql.MAKE_CHOSEN_OFFERS.all(
        conn,
        {
            "job_id": params["job_id"],
            "version": params["version"],
            "wave": params["wave"],
            "radius_m": params["radius_m"],
            "worker_ids": [c.worker_id for c in chosen],
            "distances": [c.distance_m for c in chosen],
            "why": [to_json(c.why) for c in chosen],
        },
    )
    return len(made)


def candidate(row: sql.LikelyCandidate) -> Candidate:
    """A candidate as sql.LIKELY_CANDIDATES read them."""
    return Candidate(
        worker_id=row["worker_id"],
        distance_m=row["distance_m"],
        rating=row["rating"],
        offers=row["offers"],
        accepts=row["accepts"],
        declines=row["declines"],
        silences=row["silences"],
        releases=row["releases"],
        leases_run_out=row["leases_run_out"],
        lost_races=row["lost_races"],
        expected=row["expected"],
        answer_s=row["answer_s"],
        since_accept_s=row["since_accept_s"],
        since_offer_s=row["since_offer_s"],
    )
