"""Proof that the simulator is right, on the real dispatch: a city nobody works in leaves every
job unfilled after exactly its waves; one worker who always says yes fills every job in the
first wave, as fast as they answer; the same seed runs the same city again."""

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dispatch import db
from dispatch.config import settings
from dispatch.workers import locations
from sim import run
from sim.scenario import Scenario, load
from sim.world import offset, plan_workers

TINY = Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml"


def scenario(**changes: Any) -> Scenario:
    raw = load(TINY).model_dump()
    for dotted, value in changes.items():
        node = raw
        *path, last = dotted.split("__")
        for part in path:
            node = node[part]
        node[last] = value
    return Scenario.model_validate(raw)


@pytest.fixture
def simulate(
    database_url: str, tmp_path: Path, aws_stand_in: str, redis_url: str
) -> Iterator[Callable[[Scenario], run.Outcome]]:
    """Runs one configuration of a scenario; the test session's settings come back after."""
    saved = dict(os.environ)

    def simulate(city: Scenario) -> run.Outcome:
        (outcome,) = run.run(city, tmp_path)
        return outcome

    yield simulate
    os.environ.clear()
    os.environ.update(saved)
    settings.cache_clear()
    db.close()
    locations.client.cache_clear()


def clean(outcome: run.Outcome) -> None:
    """What every run must show: no 5xx, nothing dead-lettered, a clean history."""
    assert outcome.kpis["errors_5xx"] == 0, outcome.requests
    assert outcome.kpis["dead_letters"] == 0
    assert outcome.violations == []


def nobody_works(**changes: Any) -> Scenario:
    """Six minutes of the tiny town with no workers: each job goes unfilled after two waves a
    minute apart."""
    return scenario(
        speed=20,
        hours=0.1,
        workers__count=0,
        jobs__per_hour=240.0,
        dispatch__offer_waves="1@1000,1@2000",
        dispatch__wave_interval_seconds=60,
        **changes,
    )


def test_nobody_works_so_every_job_goes_unfilled_after_exactly_its_waves(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    city = nobody_works()
    outcome = simulate(city)
    clean(outcome)
    assert outcome.kpis["fill_rate"] == 0
    settled = [j for j in outcome.extra["jobs"] if j.created < city.seconds - 150]
    assert settled, "no job old enough to have seen every wave"
    for job in settled:
        # Two waves a minute apart, then the final check one interval after the last.
        assert job.unfilled and job.unfilled_at is not None
        assert abs(job.unfilled_at - job.created - 2 * 60) < 3, job


@pytest.mark.parametrize("drain_minutes", [0, 4])
def test_a_drain_gives_every_job_posted_an_outcome(
    simulate: Callable[[Scenario], run.Outcome], drain_minutes: int
) -> None:
    """Nobody works, so each job ends unfilled two minutes after it is posted. Stopped at the
    hour, the jobs of its last two minutes are still waiting; with a drain the city goes on,
    posting nothing more, until every one has its outcome, and stops then."""
    city = nobody_works(drain_minutes=drain_minutes)
    outcome = simulate(city)
    clean(outcome)
    jobs = outcome.extra["jobs"]
    assert max(j.created for j in jobs) > city.seconds - 120
    waiting = outcome.kpis["not_filled"]["waiting"]
    if drain_minutes:
        assert waiting == 0 and all(j.unfilled for j in jobs)
        # Stopped when the last job's round ended, not at the drain's end.
        assert city.seconds < outcome.kpis["city_seconds"] < city.seconds + 150
    else:
        assert waiting > 0 and outcome.kpis["city_seconds"] == city.seconds


def test_one_worker_who_always_says_yes_fills_every_job_in_the_first_wave(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    here, home = [12.9716, 77.5946], [12.9806, 77.5946]  # 1 km north
    city = scenario(
        speed=30,
        hours=0.5,
        area__zones=[
            {"name": "jobs", "center": here, "radius_km": 0.001, "jobs": 1, "workers": 0},
            {"name": "home", "center": home, "radius_km": 0.001, "jobs": 0, "workers": 1},
        ],
        workers__count=1,
        workers__skills=[{"skills": ["wash", "iron"], "share": 1}],
        workers__online_at_start=1.0,
        workers__idle_speed_mps=0.0,
        workers__shift_hours={"low": 10, "high": 10},
        workers__accept={"top": 1.0, "midpoint_m": 1e6, "width_m": 1},
        workers__no_show=0.0,
        workers__release=0.0,
        workers__push_lost=0.0,
        workers__pull_minutes=1000.0,
        workers__notify_seconds={"low": 2, "high": 2},
        workers__response_seconds={"low": 5, "high": 5},
        workers__work_minutes={"low": 1, "high": 1},
        workers__return_home=True,
        workers__habits={"acceptance_sd": 0, "answer_pace_sigma": 0, "no_show_sd": 0},
        jobs__per_hour=8.0,
        jobs__patience_minutes=120.0,
        dispatch__offer_waves="1@3000",
    )
    outcome = simulate(city)
    clean(outcome)
    waiting = [j for j in outcome.extra["jobs"] if j.nearest_idle_m is not None]
    assert any(abs(j.nearest_idle_m - 1000) < 50 for j in waiting), "never at home"
    for job in waiting:  # free when the job came (at home, or walking back there)
        assert job.nearest_idle_m < 1050
        assert job.filled and job.offers == 1
        # Offered within two seconds of the posting (the relay, the publisher, wave 1); notified
        # 2 s later, answered 5 s after that. Whatever more it took is the city's own pace
        # (a run that fell behind its schedule sends the answer late), which it measured.
        assert job.first_offer is not None and job.first_offer - job.created < 2, job
        late = outcome.kpis["lag_s"]["max"]
        assert 7 <= job.first_assigned - job.first_offer <= 7 + late, (job, late)


def test_the_same_seed_runs_the_same_city_again(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    """Same arrivals; the figures within 15 points of fill rate and 50% of the time to accept
    (races, which the real dispatch decides, may pick other winners), give or take one real
    second: at 60 times real time a second's wait for the processor (the suite runs a process
    per core, each with its stacks) is a minute of the city's time (36 s against 81 s once)."""
    city = scenario(speed=60)
    first, second = simulate(city), simulate(city)
    for outcome in (first, second):
        clean(outcome)
    assert [j.arrival for j in first.extra["jobs"]] == [j.arrival for j in second.extra["jobs"]]
    assert abs(first.kpis["fill_rate"] - second.kpis["fill_rate"]) <= 0.15
    p50 = first.kpis["time_to_accept_s"]["p50"], second.kpis["time_to_accept_s"]["p50"]
    assert abs(p50[0] - p50[1]) <= 0.5 * max(p50) + city.speed * 1.0


@pytest.mark.parametrize("auto_pick", [False, True])
def test_businesses_that_choose(
    simulate: Callable[[Scenario], run.Outcome], auto_pick: bool
) -> None:
    """Workers apply, the businesses (or the auto-pick) assign: jobs get filled through the
    choice alone, the history checker finds the choice kept, and favourites are named."""
    city = scenario(
        dispatch__choosing={
            "assignment": "business_choice",
            "auto_pick": auto_pick,
            "choose_within_minutes": 1.0,
            "look_after_minutes": (3.0, 4.0) if auto_pick else (0.5, 1.0),
            "favourites": 3,
            "favourites_first": True,
        }
    )
    outcome = simulate(city)
    clean(outcome)  # the history checker: every assign by the business or the auto-pick
    k = outcome.kpis
    assert k["applications"] > 0 and k["fill_rate"] > 0.3, k
    assert k["assigned_by"]["worker (first come)"] == 0, k
    chooser = "auto-pick" if auto_pick else "business"
    assert k["assigned_by"][chooser] > 0, k
    assert k["favourites_share"] is not None
    assert outcome.requests.get("POST /jobs/{job_id}/accept", {}) == {}, outcome.requests


def test_workers_arrive_with_the_ratings_of_the_worlds_past(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    """`workers.prior_ratings`: the run writes the past before the first request and the
    product reads it as its own: every job asks for 4 stars, only workers the past rated that
    well are assigned, each at the damped rating the product computes from the past (no rating
    comes during this run: they come 100 minutes after the work)."""
    city = scenario(
        speed=60,  # what it proves is the records read, not the pace: the tiny town in 15 s
        workers__prior_ratings={"low": 0, "high": 20},
        jobs__min_rating_share=1.0,
        jobs__min_rating=4.0,
        jobs__rating_minutes={"low": 100, "high": 100},
    )
    outcome = simulate(city)
    clean(outcome)
    past = {plan.id: plan.past for plan in plan_workers(city)}

    def damped(worker_id: str) -> float | None:  # migrations/0010: workers.rating
        ratings, stars = past[worker_id].ratings, past[worker_id].stars
        return None if ratings == 0 else round((5 * 4.0 + stars) / (5 + ratings), 2)

    filled = [job for job in outcome.extra["jobs"] if job.filled]
    assert filled and outcome.kpis["assignee_rated_share"] == 1.0, outcome.kpis
    for job in filled:
        assert job.assignee_rating == damped(job.assignee), job
        assert job.assignee_rating >= 4.0, job
    assert any(r is None or r < 4.0 for r in map(damped, past))  # the bar excluded some


def test_workers_arrive_with_a_record_of_answered_offers(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    """`workers.prior_offers`: the run writes each worker's answered offers (past jobs, their
    offers, declines and events) before the first request, through the database's own guards
    (job_offers_only_while_open, contiguous versions); the `likely` policy reads them, the
    relay never sends them again, and the history checker holds the run clean. The sweeper's
    first pass folds them (each offer's id of its own time, the product's sweep period the
    city's), so that every wave reads the market's own curve, as a running market's would."""
    city = scenario(
        speed=60,  # as above: the records read, not the pace
        workers__prior_offers={"low": 4, "high": 8},
        dispatch__offer_policy="likely",
        dispatch__offer_market_min_answers=50,  # forty workers' past: about 150 decayed
    )
    outcome = simulate(city)
    clean(outcome)
    assert outcome.kpis["fill_rate"] > 0.5, outcome.kpis
    assert outcome.extra["past_jobs"] == len(run.past_offers(city)["job_ids"]) > 0
    why = [e["data"]["why"] for e in outcome.replay if e.get("type") == "offer.created"]
    assert why and all(w["market_stands"] for w in why), why


def test_a_sample_of_phones_hears_its_offers_over_real_sockets(
    simulate: Callable[[Scenario], run.Outcome],
) -> None:
    """Every worker's phone holds a socket to the product's push path (the template's push
    rule, sender, poster and management API) and nobody opens the app to pull: every job
    filled was heard of over a socket."""
    city = scenario(hours=0.1, workers__push_sample=40, workers__pull_minutes=1000.0)
    outcome = simulate(city)
    clean(outcome)
    push = outcome.kpis["push"]
    assert push["sample"] == push["connected"] == 40, push
    assert push["offers"] > 0 and 0 < push["heard"] <= push["offers"], push
    assert push["lost"] == push["offers"] - push["heard"]
    assert push["delay_ms"]["p50"] is not None and push["first_offer_seen_s"]["p50"] is not None
    assert push["rest"]["from_measured"] + push["rest"]["from_model"] == 0, push  # all sampled
    assert outcome.kpis["fill_rate"] > 0, outcome.kpis
    invocations = outcome.kpis["aws"]["invocations"]
    assert invocations["PushDeliveryQueue"] > 0, invocations


def test_a_workers_app_reports_by_the_rule_on_the_position_path(
    conn: db.Connection, cache: Any
) -> None:
    """The city's worker, one look at a time, on the real route, stream stand-in and
    PositionsFunction: a message when 5 minutes have passed or 250 m been covered since the last
    report, none otherwise; the offers pull carries the position, is a report (it lands in
    Redis) and restarts both; a quicker pace plans the next look sooner."""
    from sim.city import City
    from sim.transport import Transport

    town = scenario(workers__count=1, workers__idle_speed_mps=0.0)
    city = City(town, town.dispatch, Transport(visibility_seconds=60))
    (worker,) = city.workers.values()
    worker.status = "idle"

    def look_at(moment: float) -> int:
        city.present = moment
        city.look(worker, worker.look)
        return city.socket_messages

    def next_look() -> float:
        (when,) = [
            w for w, _, act, args in city._heap if act == city.look and args[1] == worker.look
        ]
        return when

    def in_redis() -> tuple[float, float]:
        lat, lng = locations.fresh_positions([worker.id])[worker.id]
        return round(lat, 5), round(lng, 5)

    city.plan_look(worker, 10.0)
    assert look_at(10.0) == city.transport.positions.put_count == 1  # never reported: due
    assert city.write_positions() == 1 and city.invocations["PositionStream"] == 1
    assert in_redis() == (round(worker.position[0], 5), round(worker.position[1], 5))
    assert next_look() == 310.0  # standing still: the heartbeat
    assert look_at(309.0) == 1 and look_at(310.0) == 2

    worker.position = offset(worker.position, 100, 0)
    void = worker.look
    city.present = 360.0
    city.pull(worker)  # GET /workers/me/offers?lat&lng: a report
    assert city.requests[("GET /workers/me/offers", 200)] == city.reads_with_position == 1
    assert in_redis() == (round(worker.position[0], 5), round(worker.position[1], 5))
    city.look(worker, void)  # the look planned before the pull is void
    assert city.socket_messages == 2 and next_look() == 660.0
    assert look_at(659.0) == 2 and look_at(660.0) == 3

    worker.position = offset(worker.reported_where or worker.position, 249, 0)
    assert look_at(661.0) == 3
    worker.position = offset(worker.position, 2, 0)
    assert look_at(662.0) == 4  # 251 m: due before the heartbeat

    worker.target = offset(worker.position, 5000, 0)  # on the way somewhere at 8 m/s
    city.plan_look(worker)
    assert next_look() == pytest.approx(662.0 + 250 / 8)
    assert city.write_positions() == 3 and city.transport.positions.refused == 0
    assert not any(route == "PUT /workers/me/location" for route, _ in city.requests)


def test_a_city_reporting_by_the_rule_puts_no_location_and_fills(
    simulate: Callable[[Scenario], run.Outcome], redis_url: str
) -> None:
    """The tiny town by the rule (the default): no PUT /workers/me/location; every position
    message went on the stream and PositionsFunction wrote it (none skipped), every worker's
    last position is in Redis, the offers pulls carried positions, and jobs are filled. By
    interval, the same town PUTs and puts nothing on the stream."""
    city = scenario(hours=0.1)
    outcome = simulate(city)
    clean(outcome)
    assert "PUT /workers/me/location" not in outcome.requests, outcome.requests
    positions = outcome.kpis["aws"]["positions"]
    assert positions["socket_messages"] == positions["stream_puts"] > 0, positions
    assert positions["stream_skipped"] == positions["stream_refused"] == 0, positions
    assert positions["reads_with_position"] > 0, positions
    assert outcome.kpis["aws"]["invocations"]["PositionStream"] > 0
    assert outcome.kpis["fill_rate"] > 0.5, outcome.kpis
    client = locations.connect(redis_url, cluster=settings().redis_cluster)
    ids = [plan.id for plan in plan_workers(city)]
    assert all(client.get(locations.record_key(i)) is not None for i in ids)

    before = simulate(scenario(hours=0.1, workers__reporting="interval"))
    clean(before)
    assert before.requests["PUT /workers/me/location"].get(204, 0) > 0, before.requests
    assert before.kpis["aws"]["positions"]["stream_puts"] == 0
    assert "PositionStream" not in before.kpis["aws"]["invocations"]
