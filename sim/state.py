"""What the city, the run and the report all read (here, so that none of them imports another
for it): the workers and jobs as the city tracks them, what became of each job (its fate and its
row in the report), and the percentiles every figure is given in."""

import math
import random
import statistics
from dataclasses import dataclass, field
from typing import Any

from sim.scenario import LatLng
from sim.world import Arrival, WorkerPlan


@dataclass
class Worker:
    plan: WorkerPlan
    rng: random.Random
    # The idle walk's own stream (sim.city's `move`): its turns come on a fixed clock, so the
    # walk is the same whenever, and however often, the city asks where the worker is.
    walk: random.Random
    position: LatLng
    status: str = "offline"  # offline | idle | assigned | working | gone
    heading: float = 0.0
    moved_at: float = 0.0
    target: LatLng | None = None
    job: "Job | None" = None
    version: int = 0
    rating: float | None = None
    profiled: bool = False
    online_since: float = 0.0
    online_total: float = 0.0
    busy_since: float = 0.0
    busy_total: float = 0.0
    seen_offers: set[str] = field(default_factory=set)
    # The reporting rule (scenario `workers.rule`): the last report, when and where, and which
    # of the app's planned looks is the live one (a change of pace plans a new one).
    reported_at: float = -math.inf
    reported_where: LatLng | None = None
    look: int = 0
    offered: int = 0  # offers the product made them (how work spreads)
    taken: int = 0  # jobs they won

    @property
    def id(self) -> str:
        return self.plan.id

    @property
    def who(self) -> tuple[str, str]:
        return (self.plan.id, "worker")


@dataclass
class Job:
    id: str
    arrival: Arrival
    created: float  # city seconds, from the job.created event
    version: int = 1
    status: str = "open"
    first_offer: float | None = None
    first_assigned: float | None = None
    filled: bool = False
    unfilled: bool = False
    unfilled_at: float | None = None
    offers: int = 0
    declines: int = 0
    lost_races: int = 0
    reopened_at: float | None = None
    refill_seconds: list[float] = field(default_factory=list)
    leases_lost: int = 0
    nearest_idle_m: float | None = None
    winner_m: float | None = None
    end: str | None = None  # completed | cancelled | expired
    # The business's choice (sim/choosing.py): whether it chooses, how many applied, who chose
    # (None: the worker, first come), who got it and their rating then.
    choice: bool = False
    applicants: int = 0
    chosen_by: str | None = None
    assignee: str | None = None
    assignee_rating: float | None = None


def waiting(job: Job) -> bool:
    """Whether the job has no outcome yet (its fate, `fate`, would be "waiting")."""
    return fate(job_row(job)) == "waiting"


# What became of a job by the end of the run: every job has exactly one fate.
FATES = {
    "filled": "filled (assigned at least once)",
    "unfilled": "unfilled (every wave passed, nobody took it)",
    "cancelled": "cancelled before anyone took it",
    "expired": "its window ended before anyone took it",
    "waiting": "still waiting when the run ended (after its drain, if it had one)",
}


def fate(job: dict[str, Any]) -> str:
    """The fate of a job row (`job_row`)."""
    if job["filled"]:
        return "filled"
    if job["unfilled"]:
        return "unfilled"
    if job["end"] in ("cancelled", "expired"):
        return str(job["end"])
    return "waiting"


def job_row(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "created": job.created,
        "lat": job.arrival.location[0],
        "lng": job.arrival.location[1],
        "filled": job.filled,
        "unfilled": job.unfilled,
        "time_to_accept": (
            job.first_assigned - job.created
            if job.filled and job.first_assigned is not None
            else None
        ),
        "end": job.end,
    }


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None}
    if len(values) == 1:
        return {"p50": values[0], "p90": values[0], "p99": values[0]}
    cuts = statistics.quantiles(sorted(values), n=100, method="inclusive")
    return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98]}
