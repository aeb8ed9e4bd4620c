"""The world's plan, drawn from the seed before the run: who works where and when, and which
jobs arrive where and when. The same seed gives the same plan, whatever dispatch runs on it.

Arrivals are a Poisson process per zone whose rate follows the hourly profile (drawn by
thinning: candidate times at the peak rate, each kept with probability rate(t) / peak).
"""

import math
import random
from dataclasses import dataclass

from sim.scenario import Between, LatLng, Scenario, SkillShare, Zone, inside

EARTH_M = 6371008.8
METRES_PER_DEGREE = math.pi * EARTH_M / 180


def distance_m(a: LatLng, b: LatLng) -> float:
    """Great-circle metres (haversine), as the product measures."""
    p1, p2 = math.radians(a[0]), math.radians(b[0])
    dp, dl = p2 - p1, math.radians(b[1] - a[1])
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_M * math.asin(min(1.0, math.sqrt(h)))


def offset(point: LatLng, north_m: float, east_m: float) -> LatLng:
    lat = point[0] + north_m / METRES_PER_DEGREE
    lng = point[1] + east_m / (METRES_PER_DEGREE * math.cos(math.radians(point[0])))
    return (max(-85.0, min(85.0, lat)), (lng + 540) % 360 - 180)


def toward(here: LatLng, there: LatLng, metres: float) -> LatLng:
    """`metres` along the way from here to there (straight, which is close enough in a city)."""
    gap = distance_m(here, there)
    if gap <= metres or gap == 0:
        return there
    share = metres / gap
    return (here[0] + (there[0] - here[0]) * share, here[1] + (there[1] - here[1]) * share)


def uniform(rng: random.Random, span: Between) -> float:
    return rng.uniform(span.low, span.high)


def pick_skills(rng: random.Random, shares: list[SkillShare]) -> list[str]:
    chosen = rng.choices(shares, weights=[s.share for s in shares])[0]
    return list(chosen.skills)


def point_in(rng: random.Random, zone: Zone, border: list[LatLng]) -> LatLng:
    """A place around the zone's centre (Gaussian, radius = one standard deviation), within
    the city's border."""
    for _ in range(1000):
        place = offset(
            zone.center, rng.gauss(0, zone.radius_km * 1000), rng.gauss(0, zone.radius_km * 1000)
        )
        if inside(place, border):
            return place
    return zone.center


@dataclass(frozen=True)
class Habit:
    """One worker's hidden habits (scenario `[workers.habits]`): only the world reads them."""

    accept_top: float  # the top of their accept curve
    pace: float  # their answer delay is the scenario's response time times this
    no_show: float  # their chance to vanish after accepting


@dataclass(frozen=True)
class Past:
    """What a worker brings from before the run (scenario `workers.prior_ratings`): the
    ratings they had received and the sum of their stars, as the product counts them."""

    ratings: int = 0
    stars: int = 0


@dataclass(frozen=True)
class WorkerPlan:
    id: str
    skills: list[str]
    home: LatLng
    online_from: float  # seconds since the run began
    online_until: float
    habit: Habit
    past: Past = Past()


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds since the run began
    zone: str
    location: LatLng
    skills: list[str]
    lead: float  # seconds from posting to the window's start
    window: float  # the window's length in seconds
    min_rating: float | None
    business: str
    patience: float
    work: float  # seconds of work once started


def beta(rng: random.Random, mean: float, sd: float) -> float:
    """A draw from the Beta distribution with this mean and standard deviation (sd 0: the
    mean itself, and nothing drawn; so too a mean of 0 or 1, which leaves no room to differ)."""
    if sd <= 0 or not 0 < mean < 1:
        return mean
    strength = mean * (1 - mean) / sd**2 - 1
    return rng.betavariate(mean * strength, (1 - mean) * strength)


def report_clock(scenario: Scenario, worker_id: str, period: float) -> float:
    """When a phone out before the run reports first: a phase within the period, from a seed
    of its own (scenario `workers.clocks`: another name, other clocks)."""
    seed = f"{scenario.seed}:{scenario.workers.clocks}:{worker_id}"
    return random.Random(seed).uniform(0, period)


def draw_habit(scenario: Scenario, worker_id: str) -> Habit:
    """A worker's habits, from their own seed: the same seed draws the same habits, and the
    rest of the plan (homes, shifts, arrivals) does not move when the spreads change."""
    rng = random.Random(f"{scenario.seed}:habits:{worker_id}")
    spec = scenario.workers
    spread = spec.habits
    sigma = spread.answer_pace_sigma
    return Habit(
        accept_top=beta(rng, spec.accept.top, spread.acceptance_sd),
        pace=rng.lognormvariate(0, sigma) if sigma > 0 else 1.0,
        no_show=beta(rng, spec.no_show, spread.no_show_sd),
    )


def draw_past(scenario: Scenario, worker_id: str) -> Past:
    """A worker's ratings before the run, from their own seed (as their habits): how many,
    then their own star mix around the scenario's `jobs.stars` (Dirichlet, drawn as Gammas),
    then each past rating's stars from that mix."""
    spec = scenario.workers
    if spec.prior_ratings is None:
        return Past()
    rng = random.Random(f"{scenario.seed}:past:{worker_id}")
    count = round(uniform(rng, spec.prior_ratings))
    alike = spec.prior_stars_alike
    mix = [rng.gammavariate(alike * w, 1) if w > 0 else 0.0 for w in scenario.jobs.stars]
    stars = rng.choices(range(1, 6), weights=mix, k=count) if count else []
    return Past(ratings=count, stars=sum(stars))


def plan_workers(scenario: Scenario) -> list[WorkerPlan]:
    rng = random.Random(f"{scenario.seed}:workers")
    spec, zones = scenario.workers, scenario.area.zones
    plans = []
    for n in range(spec.count):
        zone = rng.choices(zones, weights=[z.workers for z in zones])[0]
        shift = uniform(rng, spec.shift_hours) * 3600
        if rng.random() < spec.online_at_start:
            start = -rng.uniform(0, shift / 2)  # already out for a while
        else:
            start = rng.uniform(0, scenario.seconds)
        worker_id = f"w-{n:05d}"
        plans.append(
            WorkerPlan(
                id=worker_id,
                skills=pick_skills(rng, spec.skills),
                home=point_in(rng, zone, scenario.area.border),
                online_from=max(0.0, start),
                online_until=start + shift,
                habit=draw_habit(scenario, worker_id),
                past=draw_past(scenario, worker_id),
            )
        )
    return plans


def rate_at(scenario: Scenario, t: float) -> float:
    """Jobs per second at `t` seconds into the run."""
    profile = scenario.jobs.hourly_profile
    return scenario.jobs.per_hour / 3600 * profile[int(t // 3600) % len(profile)]


def plan_arrivals(scenario: Scenario) -> list[Arrival]:
    rng = random.Random(f"{scenario.seed}:arrivals")
    spec, zones = scenario.jobs, scenario.area.zones
    peak = spec.per_hour / 3600 * max(spec.hourly_profile)
    arrivals: list[Arrival] = []
    if peak <= 0:
        return arrivals
    t = 0.0
    while True:
        t += rng.expovariate(peak)
        if t >= scenario.seconds:
            return arrivals
        if rng.random() * peak > rate_at(scenario, t):
            continue  # thinned: the profile is below its peak now
        zone = rng.choices(zones, weights=[z.jobs for z in zones])[0]
        arrivals.append(
            Arrival(
                at=t,
                zone=zone.name,
                location=point_in(rng, zone, scenario.area.border),
                skills=pick_skills(rng, spec.skills),
                lead=uniform(rng, spec.lead_minutes) * 60,
                window=max(60.0, uniform(rng, spec.window_hours) * 3600),
                min_rating=spec.min_rating if rng.random() < spec.min_rating_share else None,
                business=f"biz-{zone.name}-{rng.randrange(20):02d}",
                patience=spec.patience_minutes * 60,
                work=uniform(rng, scenario.workers.work_minutes) * 60,
            )
        )
