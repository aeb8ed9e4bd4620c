"""A simulated city, described in a small TOML file and validated before anything runs.

Every field is checked (an unknown key, a negative rate, a probability outside [0, 1], an area
whose border crosses itself are refused) and the first problem is reported on one line that
names the field; nothing is written anywhere before the scenario is valid.

Times in the scenario are the city's own (real) seconds, minutes and hours; `speed` says how
much faster than real time the run goes, and the product's durations (lease, wave interval,
freshness, sweep period) are scaled through their own settings by that factor.
"""

import math
import tomllib
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Probability = Annotated[float, Field(ge=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
LatLng = tuple[Annotated[float, Field(ge=-85, le=85)], Annotated[float, Field(ge=-180, le=180)]]


class ScenarioError(ValueError):
    """One line naming the field and the problem."""


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Between(Model):
    """A value drawn uniformly between low and high."""

    low: NonNegative
    high: NonNegative

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.low > self.high:
            raise ValueError("low must not be above high")
        return self


class Zone(Model):
    """Where people are: a Gaussian blob around a centre, with a share of jobs and workers."""

    name: str
    center: LatLng
    radius_km: Positive
    jobs: NonNegative = 1.0  # weights, relative to the other zones
    workers: NonNegative = 1.0


class Area(Model):
    """The city's border (a polygon that must not cross itself) and its zones."""

    border: list[LatLng] = Field(min_length=3)
    zones: list[Zone] = Field(min_length=1)

    @model_validator(mode="after")
    def _simple_border(self) -> Self:
        if crosses_itself(self.border):
            raise ValueError("the border crosses itself")
        for zone in self.zones:
            if not inside(zone.center, self.border):
                raise ValueError(f"zone {zone.name!r} has its centre outside the border")
        if not sum(z.jobs for z in self.zones) > 0 or not sum(z.workers for z in self.zones) > 0:
            raise ValueError("the zones' job and worker weights must not all be zero")
        return self


class SkillShare(Model):
    skills: list[Annotated[str, Field(min_length=1, max_length=64)]]
    share: NonNegative


class AcceptCurve(Model):
    """Chance of accepting an offer at distance d: top / (1 + exp((d - midpoint) / width))."""

    top: Probability = 0.9
    midpoint_m: Positive = 3000
    width_m: Positive = 800

    def chance(self, distance_m: float, top: float | None = None) -> float:
        """With `top`, a worker's own (their habit) instead of everyone's."""
        exponent = min(50.0, (distance_m - self.midpoint_m) / self.width_m)
        return (self.top if top is None else top) / (1 + math.exp(exponent))


CHECK_SECONDS = 1.0  # the finest a worker's app looks at where it is (ReportingRule.wait)


class ReportingRule(Model):
    """The contract's rule for a worker's app: report the position on the socket once it has
    moved `metres` since the last report, or `seconds` have passed, whichever comes first. A
    read that carries the position (the offers pull) is a report too, and restarts both."""

    metres: Positive = 250
    seconds: Positive = 300

    def due(self, since_s: float, moved_m: float) -> bool:
        """Whether a report is due `since_s` after the last one, `moved_m` from where it was."""
        return since_s >= self.seconds or moved_m >= self.metres

    def wait(self, since_s: float, moved_m: float, speed_mps: float) -> float:
        """How long the app may sleep before it looks again: until the heartbeat, or sooner
        when at `speed_mps` (at most the worker's) it could have covered the rest of the metres.
        At least CHECK_SECONDS: a phone's location callback is no finer."""
        wait = self.seconds - since_s
        if speed_mps > 0:
            wait = min(wait, (self.metres - moved_m) / speed_mps)
        return max(wait, CHECK_SECONDS)


class Habits(Model):
    """How workers differ (sim/world.py, `draw_habit`): each worker's habits are drawn once,
    from the worker's own seed, and kept for the run. The product never sees them; it sees
    only what the workers do. Every spread 0: every worker alike (the world before habits)."""

    # Each worker's accept curve `top` ~ Beta with mean `accept.top` and this standard
    # deviation: some take most offers, some few. (A mean of 0 or 1 has no spread.)
    acceptance_sd: NonNegative = 0.2
    # Each worker's answer delay is `response_seconds` times their pace, pace ~ lognormal with
    # median 1 and this sigma: some answer in seconds, some in minutes.
    answer_pace_sigma: NonNegative = 0.7
    # Each worker's chance to vanish after accepting ~ Beta with mean `no_show` and this
    # standard deviation: a few workers do most of the vanishing.
    no_show_sd: NonNegative = 0.08


class Workers(Model):
    count: Annotated[int, Field(ge=0)]
    skills: list[SkillShare] = Field(min_length=1)
    online_at_start: Probability = 0.8  # the rest come online during the run
    shift_hours: Between = Between(low=4, high=8)
    # How the apps report where they are: "rule" (the contract's, `rule` below: on the socket,
    # into the position stream) or "interval" (before it: PUT /workers/me/location every
    # `report_seconds`, the offers pull without the position).
    reporting: Literal["rule", "interval"] = "rule"
    rule: ReportingRule = ReportingRule()
    report_seconds: Positive = 30
    # The draw of each phone's own clock (when it first reports, within the period): another
    # name, another set of clocks no likelier than these. `make evaluate-reporting` runs
    # today's reporting again on other clocks: the world a change of nothing that matters makes.
    clocks: str = "phase"
    idle_speed_mps: NonNegative = 0.6
    travel_speed_mps: Positive = 8
    notify_seconds: Between = Between(low=1, high=5)  # push delivery to the phone
    response_seconds: Between = Between(low=5, high=40)  # a person deciding
    accept: AcceptCurve = AcceptCurve()
    no_show: Probability = 0.04  # wins, then vanishes: the lease runs out
    release: Probability = 0.03  # wins, then gives the job back on the way
    push_lost: Probability = 0.05  # the notification never arrives; a pull finds the offer
    # A seeded sample of this many workers hold a real WebSocket to the product's push path
    # and hear an offer when their socket receives it; the rest hear after a delay drawn from
    # what the sample measured (sim/push.py). 0: every worker the model above.
    push_sample: Annotated[int, Field(ge=0)] = 0
    pull_minutes: Positive = 5  # an idle worker opens the app now and then
    work_minutes: Between = Between(low=20, high=60)
    return_home: bool = False  # after a job: back home, or stay where the job was
    habits: Habits = Habits()
    # The marketplace before the run (sim/world.py, `draw_past`): how many ratings each worker
    # had already received, drawn per worker between low and high (unset: nobody was ever
    # rated, the marketplace opens with the run). The past stars follow `jobs.stars`, each
    # worker with a mix of their own around it: Dirichlet with `prior_stars_alike` times those
    # weights (the larger, the more alike the workers: with 10 and the default stars, 95 of 100
    # workers rated 50 times have a damped rating of 3.6 to 4.7). The run writes this past into
    # its fresh database before the first request (sim/run.py, `write_past`).
    prior_ratings: Between | None = None
    prior_stars_alike: Positive = 10
    # The offers each worker answered in the two hours before the run (the product's history
    # window), drawn per worker between low and high (unset: none, the marketplace's record of
    # answers opens with the run). Each is answered by the worker's own habits, as in the run:
    # the accept curve at a distance within the first wave's reach, notify then response times
    # their pace, lost pushes left silent, no-shows and releases after a yes (sim/run.py,
    # `write_past`). Only the `likely` policy reads them; `nearest` sees the same world.
    prior_offers: Between | None = None

    @model_validator(mode="after")
    def _push_sample_of_the_workers(self) -> Self:
        if self.push_sample > self.count:
            raise ValueError(
                f"push_sample: {self.push_sample} is more than the {self.count} workers"
            )
        return self

    @model_validator(mode="after")
    def _habits_drawable(self) -> Self:
        for name, mean, sd in (
            ("acceptance_sd", self.accept.top, self.habits.acceptance_sd),
            ("no_show_sd", self.no_show, self.habits.no_show_sd),
        ):
            if sd > 0 and 0 < mean < 1 and not sd**2 < mean * (1 - mean):
                raise ValueError(
                    f"habits.{name}: {sd} is too wide for a mean of {mean} (a Beta needs"
                    f" sd^2 < mean * (1 - mean); 0 makes everyone alike)"
                )
        return self


class Jobs(Model):
    per_hour: NonNegative
    hourly_profile: list[NonNegative] = Field(default_factory=lambda: [1.0], min_length=1)
    skills: list[SkillShare] = Field(min_length=1)
    lead_minutes: Between = Between(low=0, high=30)  # from posting to the window's start
    window_hours: Between = Between(low=1, high=3)
    min_rating_share: Probability = 0.0
    min_rating: Annotated[float, Field(ge=1, le=5)] = 4.2
    patience_minutes: Positive = 30  # the business cancels a job nobody took by then
    # How likely each of 1 to 5 stars is, in that order.
    stars: list[NonNegative] = Field(
        default=[0.02, 0.03, 0.1, 0.35, 0.5], min_length=5, max_length=5
    )
    rating_minutes: Between = Between(low=1, high=30)  # from completion to the rating


class Choosing(BaseModel):
    """How the businesses of a configuration assign (sim/choosing.py plays it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    assignment: Literal["first_come", "business_choice"] = "first_come"
    auto_pick: bool = False
    choose_within_minutes: float | None = Field(None, gt=0)
    look_after_minutes: tuple[float, float] = (2.0, 5.0)  # low, high: when the business looks
    favourites: int = Field(0, ge=0)  # per business
    favourites_first: bool = False


class Dispatch(Model):
    """The product's settings, in real seconds (the run divides them by `speed`)."""

    name: str = "as configured"
    offer_waves: str = "3@3000,10@5000,25@8000"
    wave_interval_seconds: NonNegative = 60
    next_wave_on_declines: bool = True
    lease_seconds: Positive = 600
    # None: the product's for the run's reporting (360 by the rule; 120, today's, by interval).
    location_fresh_seconds: Positive | None = None
    sweep_seconds: Positive = 60
    # Who a wave offers to (DISPATCH_OFFER_POLICY): the seed's `nearest`, or `likely`.
    offer_policy: Literal["nearest", "likely"] = "nearest"
    # The `likely` policy's knobs (DISPATCH_OFFER_*; unset: the product's defaults). Durations
    # in real seconds, scaled like the others.
    offer_history_seconds: Positive | None = None
    offer_horizon_seconds: Positive | None = None
    offer_target: Annotated[float, Field(gt=0, lt=1)] | None = None
    offer_prior_accept: Annotated[float, Field(gt=0, le=1)] | None = None
    offer_half_distance_m: Positive | None = None
    offer_decline_discount: Annotated[float, Field(gt=0, le=1)] | None = None
    offer_idle_weight: NonNegative | None = None
    offer_floor_seconds: Positive | None = None
    offer_floor_weight: NonNegative | None = None
    offer_min_size: Annotated[int, Field(gt=0)] | None = None
    offer_max_size: Annotated[int, Field(gt=0)] | None = None
    offer_reach_waves: Annotated[int, Field(ge=0)] | None = None
    offer_market_min_answers: Annotated[int, Field(gt=0)] | None = None
    choosing: Choosing = Choosing()  # how businesses assign (sim/choosing.py)

    @model_validator(mode="after")
    def _waves_parse(self) -> Self:
        for item in self.offer_waves.split(","):
            size, at, radius = item.strip().partition("@")
            if not (at and size.isdigit() and radius.isdigit() and int(size) and int(radius)):
                raise ValueError(f"offer_waves: {item.strip()!r} is not size@radius_m")
        return self


class Scenario(Model):
    name: str
    seed: int = 1
    speed: Annotated[float, Field(ge=1, le=600)] = 12
    hours: Positive
    # After the last hour no job is posted, but the city goes on (at most this long) until every
    # job posted has an outcome: filled, unfilled, cancelled or expired. Without it, the jobs
    # of the last minutes are counted as not filled because the run stopped, not because no one
    # took them. 0: the run stops at the hour.
    drain_minutes: NonNegative = 0
    area: Area
    workers: Workers
    jobs: Jobs
    dispatch: Dispatch = Dispatch()
    sweep: list[Dispatch] = Field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.hours * 3600

    def configurations(self) -> list[Dispatch]:
        """What one run compares: the sweep when there is one, else the dispatch alone."""
        return list(self.sweep) or [self.dispatch]


def load(path: Path | str) -> Scenario:
    """The scenario in `path`, or ScenarioError with one line naming the first problem."""
    try:
        raw = tomllib.loads(Path(path).read_text())
    except OSError as error:
        raise ScenarioError(f"{path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: not TOML: {error}") from None
    try:
        return Scenario.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        message = first["msg"].removeprefix("Value error, ")
        raise ScenarioError(f"{Path(path).name}: {where}: {message}") from None


# -- plane geometry on small areas (degrees as a local flat map) --------------------------------


def _orientation(a: LatLng, b: LatLng, c: LatLng) -> float:
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def _segments_cross(a: LatLng, b: LatLng, c: LatLng, d: LatLng) -> bool:
    o1, o2 = _orientation(a, b, c), _orientation(a, b, d)
    o3, o4 = _orientation(c, d, a), _orientation(c, d, b)
    return (o1 * o2 < 0) and (o3 * o4 < 0)


def crosses_itself(border: list[LatLng]) -> bool:
    """Whether two edges of the closed polygon that share no corner cross."""
    n = len(border)
    edges = [(border[i], border[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue  # neighbours share a corner
            if _segments_cross(*edges[i], *edges[j]):
                return True
    return False


def inside(point: LatLng, border: list[LatLng]) -> bool:
    """Ray casting: whether the point lies within the polygon."""
    lat, lng = point
    found = False
    n = len(border)
    for i in range(n):
        (lat1, lng1), (lat2, lng2) = border[i], border[(i + 1) % n]
        if (lng1 > lng) != (lng2 > lng):
            crossing = lat1 + (lng - lng1) * (lat2 - lat1) / (lng2 - lng1)
            if lat < crossing:
                found = not found
    return found
