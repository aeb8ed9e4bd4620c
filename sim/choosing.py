"""Businesses that choose: the simulated city's side of `business_choice` jobs and rosters.

A configuration's `choosing` says how its businesses assign. First come (the default) changes
nothing. With `business_choice`, workers who would have accepted an offer apply instead; the
business looks at its applicants after a delay (`look_after_minutes`) and assigns the best one
it can (the highest rating, then the nearest), looking again a minute later while nobody
suitable applied; with `auto_pick` the product picks when `choose_within_minutes` passes if the
business has not. The assigned worker hears it on the bus (`job.assigned`) and goes. With
`favourites`, each business names that many workers its favourites when it first posts (the
same ones in every configuration of a seed); `favourites_first` posts with
`offer_first_to: "favourites"`.

The city calls in at a few points only (city.py): the job's body, a worker's yes, the bus.
"""

import random
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from sim.scenario import Choosing, Dispatch, Scenario
from sim.state import Job, Worker

if TYPE_CHECKING:
    from dispatch_local.invoke import Reply

LOOK_AGAIN_S = 60.0


class City(Protocol):
    """What this module reads and calls of the city (sim/city.py's `City`, which calls in
    here: so it is described, not imported)."""

    @property
    def scenario(self) -> Scenario: ...
    @property
    def dispatch(self) -> Dispatch: ...
    @property
    def present(self) -> float: ...
    @property
    def workers(self) -> dict[str, Worker]: ...
    @property
    def jobs(self) -> dict[str, Job]: ...
    @property
    def favourites(self) -> dict[str, set[str]]: ...

    def at(self, when: float, action: Callable[..., None], *args: Any) -> None: ...

    def call(
        self, route: str, method: str, path: str, who: tuple[str, str] | None, body: Any = None
    ) -> "Reply": ...

    def take(self, worker: Worker, job: Job, held: dict[str, Any], now: float) -> None: ...


def job_fields(choosing: Choosing, speed: float) -> dict[str, Any]:
    """What POST /jobs says beyond the job itself (the deadline in the product's seconds: the
    city's minutes run `speed` times faster)."""
    body: dict[str, Any] = {}
    if choosing.assignment == "business_choice":
        body["assignment"] = "business_choice"
        body["auto_pick"] = choosing.auto_pick
        if choosing.choose_within_minutes is not None:
            body["choose_within_s"] = max(1, round(choosing.choose_within_minutes * 60 / speed))
    if choosing.favourites_first:
        body["offer_first_to"] = "favourites"
    return body


def before_posting(city: City, business: str) -> None:
    """A business names its favourites the first time it posts."""
    choosing = city.dispatch.choosing
    if not choosing.favourites or business in city.favourites:
        return
    rng = random.Random(f"{city.scenario.seed}:favourites:{business}")
    chosen = rng.sample(sorted(city.workers), min(choosing.favourites, len(city.workers)))
    city.favourites[business] = set(chosen)
    for worker_id in chosen:
        city.call(
            "favourite", "PUT", f"/businesses/me/favourites/{worker_id}", (business, "business")
        )


def posted(city: City, job: Job) -> None:
    if city.dispatch.choosing.assignment != "business_choice":
        return
    job.choice = True
    low, high = city.dispatch.choosing.look_after_minutes
    rng = random.Random(f"{city.scenario.seed}:look:{job.id}")
    city.at(city.present + rng.uniform(low, high) * 60, look, city, job)


def apply(city: City, worker: Worker, job: Job) -> None:
    """The worker's yes to a choice job: an application."""
    reply = city.call("apply", "POST", f"/jobs/{job.id}/applications", worker.who, {})
    if reply.status == 201:
        job.applicants += 1


def look(city: City, job: Job) -> None:
    """The business opens its applicants and assigns the best it can."""
    if job.status != "open" or job.end is not None:
        return
    who = (job.arrival.business, "business")
    listed = city.call("applicants", "GET", f"/jobs/{job.id}/applications", who)
    if listed.status != 200:
        return
    choices = [a for a in listed.body["applications"] if a["qualified"] and not a["busy"]]
    choices.sort(key=lambda a: (-(a["rating"] or 4.0), a["distance_m"] or float("inf")))
    for applicant in choices[:3]:
        body = {"worker_id": applicant["worker_id"], "version": job.version}
        reply = city.call("assign", "POST", f"/jobs/{job.id}/assign", who, body)
        if reply.status == 200:
            return
        if reply.code in ("JOB_ALREADY_ASSIGNED", "JOB_UNAVAILABLE"):
            return
        if reply.code == "VERSION_CONFLICT":
            break
    city.at(city.present + LOOK_AGAIN_S, look, city, job)


def assigned(city: City, job: Job, event: dict[str, Any], when: float) -> None:
    """On the bus: a choice job was assigned (by its business or the auto-pick); the worker
    goes, as a worker who won an accept would."""
    data = event["data"]
    job.chosen_by = "auto-pick" if event["actor"] == "system:auto-pick" else "business"
    worker = city.workers.get(data["assignee_id"])
    if worker is not None and worker.status == "idle":
        city.take(worker, job, data, when)
    # Otherwise the worker is out of reach (gone, or already on the way elsewhere in the
    # city's view): the lease runs out and the job goes back to the business's choice.


def kpis(city: City) -> dict[str, Any]:
    """What the trade-off table reads beyond the common figures."""
    jobs = list(city.jobs.values())
    filled = [j for j in jobs if j.filled]
    ratings = sorted(j.assignee_rating for j in filled if j.assignee_rating is not None)
    with_favourites = [j for j in filled if j.arrival.business in city.favourites]
    to_favourite = [j for j in with_favourites if j.assignee in city.favourites[j.arrival.business]]
    return {
        "assigned_by": {
            "worker (first come)": sum(j.chosen_by is None for j in filled),
            "business": sum(j.chosen_by == "business" for j in filled),
            "auto-pick": sum(j.chosen_by == "auto-pick" for j in filled),
        },
        "applications": sum(j.applicants for j in jobs),
        "assignee_rating_mean": sum(ratings) / len(ratings) if ratings else None,
        "assignee_rating_p50": statistics.median(ratings) if ratings else None,
        "assignee_rated_share": len(ratings) / len(filled) if filled else None,
        "favourites_share": (len(to_favourite) / len(with_favourites) if with_favourites else None),
    }
