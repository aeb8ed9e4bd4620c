"""A quick model of one round of offers, to ask what a policy could win before spending an hour
of city simulation on it (docs/simulation.md, "Why `likely` loses, in a model").

Not the city: no map, no busy workers, no API. One job, the 24 nearest qualified idle workers
at distances spread as in a uniform crowd within `reach_m`, each with habits drawn as
`sim.world.draw_habit` draws them and a record of `history` earlier offers that the world's own
rules answered (the accept curve with their own top, notify then response times their pace,
lost pushes read as silence). The waves and their interval are the seed's; `nearest` offers by
distance, `likely` is the product's own `dispatch.offers.policy.choose` on that record. The
job goes to the first yes; every later yes is a lost race; a wave that gets no yes before the
interval (or whose offers all declined) is followed by the next.

    python -m sim.wave_model --history 0,4,12 --target 0.8,0.9 --jobs 4000
"""

import argparse
import math
import random
import statistics
from dataclasses import dataclass

from dispatch.offers.market import near
from dispatch.offers.policy import Candidate, Knobs, choose
from sim.scenario import AcceptCurve, Habits
from sim.world import beta

WAVES = (3, 10, 25)
INTERVAL_S = 60.0
POOL = 24
PUSH_LOST = 0.05
NOTIFY_S = (1.0, 6.0)
RESPONSE_S = (5.0, 45.0)


@dataclass
class Worker:
    distance_m: float
    top: float
    pace: float
    record: Candidate


@dataclass(frozen=True)
class Result:
    fill: float
    p50: float
    p90: float
    offers: float  # per filled job
    lost_races: float  # per filled job


def answer(
    rng: random.Random, w: Worker, distance_m: float, curve: AcceptCurve
) -> tuple[float, bool]:
    """Seconds from offer to answer (inf: never heard) and whether it is a yes."""
    if rng.random() < PUSH_LOST:
        return math.inf, False
    seconds = rng.uniform(*NOTIFY_S) + rng.uniform(*RESPONSE_S) * w.pace
    return seconds, rng.random() < curve.chance(distance_m, w.top)


def crowd(rng: random.Random, reach_m: float, history: int, curve: AcceptCurve) -> list[Worker]:
    habits = Habits()
    workers = []
    for k in range(POOL):
        top = beta(rng, curve.top, habits.acceptance_sd)
        pace = rng.lognormvariate(0, habits.answer_pace_sigma)
        w = Worker(reach_m * math.sqrt((k + rng.random()) / POOL), top, pace, Candidate("", 0.0))
        accepts = declines = silences = 0
        expected, seconds = 0.0, []
        for _ in range(history):
            d = rng.uniform(300, 3500)
            expected += near(d, 2500)
            t, yes = answer(rng, w, d, curve)
            if math.isinf(t):
                silences += 1
                continue
            accepts, declines = accepts + yes, declines + (not yes)
            seconds.append(t)
        w.record = Candidate(
            worker_id=f"w{k}",
            distance_m=w.distance_m,
            offers=history,
            accepts=accepts,
            declines=declines,
            silences=silences,
            expected=expected,
            answer_s=statistics.fmean(seconds) if seconds else None,
        )
        workers.append(w)
    return workers


def one_round(
    rng: random.Random, policy: str, knobs: Knobs, reach_m: float, history: int, curve: AcceptCurve
) -> tuple[float | None, int, int]:
    """(seconds to the first yes or None, offers made, lost races)."""
    left = crowd(rng, reach_m, history, curve)
    yes_at: list[float] = []
    declined_at: list[float] = []
    offered = 0
    start = 0.0
    for size in WAVES:
        if policy == "nearest":
            wave = left[:size]
        else:
            declines = sum(1 for t in declined_at if t <= start)
            picked = choose(
                [w.record for w in left],
                knobs,
                wave_size=size,
                min_rating=None,
                round_declines=declines,
            )
            ids = {c.worker_id for c in picked}
            wave = [w for w in left if w.record.worker_id in ids]
        left = [w for w in left if w not in wave]
        offered += len(wave)
        wave_declines: list[float] = []
        for w in wave:
            t, yes = answer(rng, w, w.distance_m, curve)
            (yes_at if yes else wave_declines).append(start + t)
        declined_at += wave_declines
        next_wave = start + INTERVAL_S
        if wave and len(wave_declines) == len(wave) and not math.isinf(max(wave_declines)):
            next_wave = min(next_wave, max(wave_declines))  # the early wave on declines
        if yes_at and min(yes_at) < next_wave:
            break
        start = next_wave
    if not yes_at or math.isinf(first := min(yes_at)):
        return None, offered, 0
    return first, offered, sum(1 for t in yes_at if t > first and not math.isinf(t))


def measure(
    policy: str,
    *,
    jobs: int,
    history: int,
    target: float,
    reach_m: float = 2500,
    seed: int = 1,
) -> Result:
    rng = random.Random(seed)
    curve = AcceptCurve(top=0.85, midpoint_m=2500, width_m=700)  # the district's
    knobs = Knobs(interval_s=INTERVAL_S, history_s=86400, target=target)
    times, offers, races = [], 0, 0
    for _ in range(jobs):
        seconds, offered, lost = one_round(rng, policy, knobs, reach_m, history, curve)
        if seconds is not None:
            times.append(seconds)
            offers += offered
            races += lost
    deciles = statistics.quantiles(times, n=10)
    filled = len(times)
    return Result(filled / jobs, deciles[4], deciles[8], offers / filled, races / filled)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sim.wave_model", description=__doc__)
    parser.add_argument("--history", default="0,4,12", help="earlier offers in each record")
    parser.add_argument("--target", default="0.8,0.9,0.95", help="likely's DISPATCH_OFFER_TARGET")
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--reach-m", type=float, default=2500)
    args = parser.parse_args(argv)
    base = measure("nearest", jobs=args.jobs, history=0, target=0.8, reach_m=args.reach_m)
    print("| policy | record | target | fill | p50 / p90 (s) | p90 ratio | offers | lost races |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| nearest | - | - | {base.fill:.1%} | {base.p50:.0f} / {base.p90:.0f} | 1.00 |"
        f" {base.offers:.2f} | {base.lost_races:.2f} |"
    )
    for history in (int(h) for h in args.history.split(",")):
        for target in (float(t) for t in args.target.split(",")):
            r = measure(
                "likely", jobs=args.jobs, history=history, target=target, reach_m=args.reach_m
            )
            print(
                f"| likely | {history} | {target} | {r.fill:.1%} | {r.p50:.0f} / {r.p90:.0f} |"
                f" {r.p90 / base.p90:.2f} | {r.offers:.2f} | {r.lost_races:.2f} |"
            )


if __name__ == "__main__":
    main()
