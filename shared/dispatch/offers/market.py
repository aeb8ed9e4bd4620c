"""The market's curve: how often a worker says yes to a job at their door, and the distance at
which that halves, fit from the market's own recorded answers (`sql.MARKET_ANSWERS`).

The `likely` policy (dispatch.offers.policy) reads each worker's yes as their door times
1 / (1 + (distance / half)^2). The district's workers halve at about 2.5 km, the configured
default; in a thin evening they drive further (half at about 4 km), and a policy that kept
the district's curve there took each far worker's chance for half of what it was and sent
waves of four where two would do. So the sweeper fits the curve to what the market did, every
`DISPATCH_OFFER_MARKET_REFIT_SECONDS`, into `offer_market`, and every wave reads it.

A curve per area (migration 0058): a deployment serving several metros has a keen, compact one
beside one of far drivers, and one average would misread both. An area is a job's cell of one
degree by one (`dispatch_market_area`, in SQL, the one rule). Each area with answers has its
own curve, and the deployment has one fit on every area's answers together (`DEPLOYMENT`). A
wave reads its job's area's curve once it stands on `DISPATCH_OFFER_MARKET_MIN_ANSWERS`, else
the deployment's once that does, else the configured one (`dispatch_market_curve`).

The answers it fits to are folded once (`fold`, every sweeper pass, before the fit): each
offer's answer, once it can no longer change (`settle_seconds`), is added to the market's
tallies by its job's area and distance band and to its worker's (`sql.FOLD_ANSWERS`),
exponentially decayed with the offer history (`DISPATCH_OFFER_HISTORY_SECONDS`, a day) as their
time constant. A fit reads a few dozen band rows an area, and a wave one row per candidate,
however long history grows.

The fit: for each half distance on a grid (400 m to 16 km, 8% apart), the door that makes the
expected yeses equal the recorded ones, then the pair with the highest likelihood of the
recorded answers, with a prior that the half distance is the configured one within about a
factor of two (so that answers all at one distance, which say nothing of the shape, leave it
where it was configured).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dispatch.config import settings
from dispatch.config.offer_policy import offer_policy_settings
from dispatch.config.offers import offer_settings
from dispatch.config.sweeper import sweeper_settings
from dispatch.db import Connection
from dispatch.offers import sql

HALVES_M = tuple(400 * 1.08**k for k in range(49))  # 400 m .. 16 km
BAND_M = 250  # answers are counted in distance bands this wide
PRIOR_SPREAD = math.log(2)  # the half distance's prior: the configured one, sd a factor of 2
# Offers folded per sweeper pass at most: some 5 minutes of the seed's peak, so a pass keeps up
# with the market and a fresh deployment catches up on its last day within a few hours.
FOLD_BATCH = 5000
# offer_market's area of the deployment's curve, and offer_market_bands' of the answers folded
# before areas (migration 0058); never the area of a position (dispatch_market_area: 0 up).
DEPLOYMENT = -1


@dataclass(frozen=True)
class Band:
    distance_m: float  # the band's middle
    offers: float  # answered (or gone silent), decayed by age
    accepts: float


@dataclass(frozen=True)
class Curve:
    door: float  # the chance of a yes at the door
    half_distance_m: float  # where it halves
    answers: int  # the answered offers it was fit on (decayed, rounded)


def near(distance_m: float, half_m: float) -> float:
    """The share of the yeses at the door to expect at this distance."""
    return 1 / (1 + (distance_m / half_m) ** 2)


def fit(bands: Sequence[Band], configured_half_m: float) -> Curve | None:
    """The curve that best explains the answers (see the module); None without a yes."""
    answers = sum(b.offers for b in bands)
    accepts = sum(b.accepts for b in bands)
    if not answers or not accepts:
        return None
    best: tuple[float, float, float] | None = None  # (log likelihood, door, half)
    for half in HALVES_M:
        shapes = [near(b.distance_m, half) for b in bands]
        door = min(1.0, accepts / sum(b.offers * s for b, s in zip(bands, shapes, strict=True)))
        likelihood = -0.5 * (math.log(half / configured_half_m) / PRIOR_SPREAD) ** 2
        for b, s in zip(bands, shapes, strict=True):
            p = min(1 - 1e-9, max(1e-9, door * s))
            likelihood += b.accepts * math.log(p) + (b.offers - b.accepts) * math.log(1 - p)
        if best is None or likelihood > best[0]:
            best = (likelihood, door, half)
    assert best is not None
    return Curve(door=best[1], half_distance_m=best[2], answers=round(answers))


def settle_seconds() -> int:
    """How old an offer must be before its answer is folded: by then it can no longer change.
    Twice the silence period (an unanswered offer reads as silence after one, and the wave
    transaction that wrote it has long committed, so the ids below are all there), plus a lease
    and two sweep periods (an accept's ending, released or run out, is known once its lease has
    ended and the sweeper has reopened it). Younger offers are read live by the policy."""
    silence_s = max(1, offer_settings().offer_wave_interval_seconds)
    return 2 * silence_s + settings().lease_seconds + 2 * sweeper_settings().sweep_interval_seconds


def fold(conn: Connection, batch: int = FOLD_BATCH, settle_s: int | None = None) -> int:
    """Fold the next settled offers' answers into the market's and their workers' tallies
    (`sql.FOLD_ANSWERS`), at most `batch`; how many it folded. `settle_s`: the product's
    (`settle_seconds`) unless a loader of finished history says otherwise."""
    s = offer_policy_settings()
    row = sql.FOLD_ANSWERS.one(
        conn,
        {
            "band_m": BAND_M,
            "batch": batch,
            "settle_s": settle_seconds() if settle_s is None else settle_s,
            "history_s": s.offer_history_seconds,
            "silence_s": max(1, offer_settings().offer_wave_interval_seconds),
            "half_m": s.offer_half_distance_m,
            "door": s.offer_prior_accept,
            "min_answers": s.offer_market_min_answers,
        },
    )
    assert row is not None
    return row["folded"]


def refit(conn: Connection) -> bool:
    """Fit each area's curve to its folded answers, and the deployment's to every area's
    together (and to the bands folded before areas, kept under DEPLOYMENT), and save each;
    whether it saved any (no yes anywhere: not). An area without a yes keeps the curve it had.
    The sweeper's "market curve" duty, every `offer_market_refit_seconds`."""
    s = offer_policy_settings()
    rows = sql.MARKET_ANSWERS.all(conn, {"history_s": s.offer_history_seconds})
    areas: dict[int, list[Band]] = {}
    whole: dict[int, tuple[float, float]] = {}  # band: (offers, accepts), every area's
    for r in rows:
        if r["area"] != DEPLOYMENT:
            areas.setdefault(r["area"], []).append(
                Band((r["band"] + 0.5) * BAND_M, r["offers"], r["accepts"])
            )
        offers, accepts = whole.get(r["band"], (0.0, 0.0))
        whole[r["band"]] = (offers + r["offers"], accepts + r["accepts"])
    areas[DEPLOYMENT] = [
        Band((band + 0.5) * BAND_M, offers, accepts)
        for band, (offers, accepts) in sorted(whole.items())
    ]
    saved = False
    for area, bands in sorted(areas.items()):
        curve = fit(bands, s.offer_half_distance_m)
        if curve is None:
            continue
        sql.SAVE_MARKET.run(
            conn,
            {
                "area": area,
                "door": curve.door,
                "half_distance_m": curve.half_distance_m,
                "answers": curve.answers,
            },
        )
        saved = True
    return saved
