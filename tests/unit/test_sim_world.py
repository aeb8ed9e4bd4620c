"""The simulated city's plan, without any service: a scenario is checked before anything runs;
arrivals are the Poisson process the scenario describes; the same seed plans the same world."""

import itertools
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sim.scenario import Scenario, ScenarioError, crosses_itself, load
from sim.world import Past, WorkerPlan, distance_m, plan_arrivals, plan_workers

TINY = Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml"


def tiny(**changes: Any) -> Scenario:
    raw = load(TINY).model_dump()
    for dotted, value in changes.items():
        node = raw
        *path, last = dotted.split("__")
        for part in path:
            node = node[part]
        node[last] = value
    return Scenario.model_validate(raw)


BOW_TIE = "border = [[12.9, 77.5], [13.0, 77.6], [12.9, 77.6], [13.0, 77.5]]"
TINY_BORDER = "border = [[12.90, 77.52], [12.90, 77.67], [13.04, 77.67], [13.04, 77.52]]"
BAD_WAVES = "[dispatch]\noffer_waves = '3@3000,ten@5000'\n\n[workers]"
BAD = {
    "colour: Extra inputs are not permitted": ("name = ", "colour = 'blue'\nname = "),
    "jobs.per_hour: Input should be greater than or equal to 0": (
        "per_hour = 120",
        "per_hour = -3",
    ),
    "workers.online_at_start: Input should be less than or equal to 1": (
        "online_at_start = 1.0",
        "online_at_start = 1.5",
    ),
    "area: the border crosses itself": (TINY_BORDER, BOW_TIE),
    "dispatch: offer_waves: 'ten@5000'": ("[workers]", BAD_WAVES),
    "workers: push_sample: 41 is more than the 40 workers": (
        "count = 40",
        "count = 40\npush_sample = 41",
    ),
}


@pytest.mark.parametrize("names", list(BAD))
def test_a_bad_scenario_is_refused_in_one_line_naming_the_field(tmp_path: Path, names: str) -> None:
    old, new = BAD[names]
    text = TINY.read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ScenarioError) as refused:
        load(path)
    message = str(refused.value)
    assert "\n" not in message and names in message, message


def test_a_border_that_crosses_itself() -> None:
    square = [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 0.0)]
    bow_tie = [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)]
    assert not crosses_itself(square) and crosses_itself(bow_tie)


def test_arrivals_are_the_poisson_process_the_scenario_describes() -> None:
    hours = 200
    scenario = tiny(hours=hours, jobs__per_hour=60.0, jobs__hourly_profile=[1.0])
    arrivals = plan_arrivals(scenario)
    mean = 60 * hours
    assert abs(len(arrivals) - mean) < 4 * math.sqrt(mean)  # four standard deviations
    per_hour = [0] * hours
    for arrival in arrivals:
        per_hour[int(arrival.at // 3600)] += 1
    # Poisson counts: the dispersion statistic follows chi-square with hours - 1 degrees.
    dispersion = sum((n - 60) ** 2 / 60 for n in per_hour)
    assert abs(dispersion - (hours - 1)) < 4 * math.sqrt(2 * (hours - 1))
    gaps = [b.at - a.at for a, b in itertools.pairwise(arrivals)]
    assert abs(sum(gaps) / len(gaps) - 60.0) < 4 * 60 / math.sqrt(len(gaps))  # 1 a minute


def test_the_hourly_profile_shapes_the_rate() -> None:
    scenario = tiny(hours=200, jobs__per_hour=30.0, jobs__hourly_profile=[1.0, 3.0])
    quiet = sum(1 for a in plan_arrivals(scenario) if int(a.at // 3600) % 2 == 0)
    busy = sum(1 for a in plan_arrivals(scenario) if int(a.at // 3600) % 2 == 1)
    assert abs(quiet - 3000) < 4 * math.sqrt(3000) and abs(busy - 9000) < 4 * math.sqrt(9000)


def test_the_same_seed_plans_the_same_world_and_another_seed_another() -> None:
    assert plan_arrivals(tiny()) == plan_arrivals(tiny())
    assert plan_workers(tiny()) == plan_workers(tiny())
    assert plan_arrivals(tiny(seed=4)) != plan_arrivals(tiny())


def test_places_lie_within_the_border_around_their_zone() -> None:
    scenario = tiny(hours=5)
    centre = scenario.area.zones[0].center
    for place in [a.location for a in plan_arrivals(scenario)] + [
        w.home for w in plan_workers(scenario)
    ]:
        assert 12.90 <= place[0] <= 13.04 and 77.52 <= place[1] <= 77.67
        assert distance_m(place, centre) < 5 * 2_000  # within five standard deviations


def test_habits_follow_the_scenario_distributions() -> None:
    """Each worker's habits are drawn once from the `[workers.habits]` spreads: the sample
    mean and standard deviation of 4,000 draws match the Beta and lognormal asked for."""
    city = tiny(workers__count=4000, workers__accept={"top": 0.8, "midpoint_m": 3000,
                                                      "width_m": 800})  # fmt: skip
    habits = [plan.habit for plan in plan_workers(city)]
    tops = [h.accept_top for h in habits]
    mean = sum(tops) / len(tops)
    sd = math.sqrt(sum((t - mean) ** 2 for t in tops) / (len(tops) - 1))
    # Standard error of the mean: 0.2 / sqrt(4000) = 0.003; five of them.
    assert abs(mean - 0.8) < 0.016 and abs(sd - 0.2) < 0.015, (mean, sd)
    assert all(0 <= t <= 1 for t in tops)
    paces = sorted(h.pace for h in habits)
    median = paces[len(paces) // 2]
    logs = [math.log(p) for p in paces]
    sigma = math.sqrt(sum(x * x for x in logs) / len(logs) - (sum(logs) / len(logs)) ** 2)
    assert abs(median - 1) < 0.06 and abs(sigma - 0.7) < 0.04, (median, sigma)
    no_shows = [h.no_show for h in habits]
    assert abs(sum(no_shows) / len(no_shows) - 0.04) < 0.006
    # A few vanish a lot: the tenth who vanish most hold over a third of the chance.
    top_tenth = sorted(no_shows)[-len(no_shows) // 10 :]
    assert sum(top_tenth) > sum(no_shows) / 3


def test_spreads_of_zero_are_the_world_where_everyone_is_alike() -> None:
    alike = {"acceptance_sd": 0, "answer_pace_sigma": 0, "no_show_sd": 0}
    city = tiny(workers__habits=alike)
    for plan in plan_workers(city):
        assert (plan.habit.accept_top, plan.habit.pace, plan.habit.no_show) == (
            city.workers.accept.top,
            1.0,
            city.workers.no_show,
        )
    # Habits come from their own seed: the rest of the plan does not move with them.
    differ = plan_workers(tiny())
    assert [(p.home, p.skills, p.online_from) for p in plan_workers(city)] == [
        (p.home, p.skills, p.online_from) for p in differ
    ]
    assert plan_workers(tiny()) == differ


def test_a_habit_spread_wider_than_a_beta_allows_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.toml"
    text = TINY.read_text().replace("[jobs]", "[workers.habits]\nacceptance_sd = 0.5\n\n[jobs]")
    path.write_text(text)
    with pytest.raises(ScenarioError) as refused:
        load(path)
    assert "workers: habits.acceptance_sd: 0.5 is too wide" in str(refused.value)


def test_a_past_of_ratings_follows_the_scenario_and_moves_nothing_else() -> None:
    """`workers.prior_ratings`: each worker's count of past ratings lies between low and high,
    their stars are what the database accepts (1 to 5 each) and average the scenario's
    `jobs.stars`; workers differ (their own mixes), and less when `prior_stars_alike` says
    they are more alike. Unset, nobody has a past; set, the rest of the plan is the same."""
    assert {plan.past for plan in plan_workers(tiny(workers__count=500))} == {Past()}
    past = {"low": 10, "high": 40}
    city = tiny(workers__count=4000, workers__prior_ratings=past)
    plans = plan_workers(city)
    assert all(10 <= p.past.ratings <= 40 for p in plans)
    assert all(p.past.ratings <= p.past.stars <= 5 * p.past.ratings for p in plans)
    assert {p.past.ratings for p in plans} == set(range(10, 41))
    weights = city.jobs.stars
    expected = sum(s * w for s, w in zip(range(1, 6), weights, strict=True)) / sum(weights)
    mean = sum(p.past.stars for p in plans) / sum(p.past.ratings for p in plans)
    # About 100,000 stars of sd about 1: the sample mean is within 0.02 of the scenario's.
    assert abs(mean - expected) < 0.02, (mean, expected)

    def spread(plans: list[WorkerPlan]) -> float:
        means = [p.past.stars / p.past.ratings for p in plans]
        centre = sum(means) / len(means)
        return math.sqrt(sum((m - centre) ** 2 for m in means) / len(means))

    alike = plan_workers(
        tiny(workers__count=4000, workers__prior_ratings=past, workers__prior_stars_alike=1000)
    )
    assert spread(plans) > 1.5 * spread(alike), (spread(plans), spread(alike))
    assert plan_workers(city) == plans  # the same seed, the same past
    without = plan_workers(tiny(workers__count=4000))
    assert [(p.id, p.home, p.skills, p.online_from, p.habit) for p in plans] == [
        (p.id, p.home, p.skills, p.online_from, p.habit) for p in without
    ]


def test_a_past_of_offers_is_answered_by_each_workers_own_habits() -> None:
    """`workers.prior_offers`: each worker answered between low and high offers before the run,
    within the product's history window and the first wave's reach, each by their own habits:
    a worker who takes nothing declines all, lost pushes are silent, and the same seed draws
    the same past."""
    from sim.run import history_seconds, past_offers

    city = tiny(workers__count=300, workers__prior_offers={"low": 3, "high": 9})
    past = past_offers(city)
    per_worker = Counter(past["worker_ids"])
    assert set(per_worker) == {p.id for p in plan_workers(city)}
    assert all(3 <= n <= 9 for n in per_worker.values())
    assert all(0 < ago * city.speed < history_seconds(city.dispatch) for ago in past["ago_s"])
    assert all(0 <= d <= 3000 for d in past["distances"])
    assert {"accept", "decline", "silence"} == set(past["answers"])
    assert past == past_offers(city)
    nobody_takes = tiny(
        workers__count=50,
        workers__prior_offers={"low": 5, "high": 5},
        workers__accept={"top": 0.0, "midpoint_m": 2500, "width_m": 700},
    )
    assert "accept" not in past_offers(nobody_takes)["answers"]
    lost = tiny(
        workers__count=50, workers__prior_offers={"low": 5, "high": 5}, workers__push_lost=1.0
    )
    assert set(past_offers(lost)["answers"]) == {"silence"}


def test_no_past_is_the_same_city_on_its_first_day() -> None:
    """`--no-past` (the evaluation's cold cities): the same scenario, seed and workers, with no
    offers answered before the run; their ratings stay."""
    import argparse

    from sim.cli import add_arguments, scenario_of

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    district = Path(__file__).parents[2] / "sim" / "scenarios" / "eval" / "district.toml"
    known = scenario_of(parser.parse_args([str(district), "--seed", "105"]))
    cold = scenario_of(parser.parse_args([str(district), "--seed", "105", "--no-past"]))
    assert known.workers.prior_offers is not None and cold.workers.prior_offers is None
    assert cold.workers.prior_ratings == known.workers.prior_ratings
    assert {**cold.workers.model_dump(), "prior_offers": None} == {
        **known.workers.model_dump(),
        "prior_offers": None,
    }
    assert {**cold.model_dump(), "workers": None} == {**known.model_dump(), "workers": None}
    assert plan_workers(cold) == plan_workers(known)


def test_the_products_sweep_period_is_the_citys() -> None:
    """The product reads the sweeper's period (the market's fold waits two of them for an offer
    to settle): at 16x, the city's minute is the product's four seconds."""
    from sim.run import scaled_environment

    city = tiny(speed=16, dispatch__sweep_seconds=60)
    assert scaled_environment(city, city.dispatch)["DISPATCH_SWEEP_INTERVAL_SECONDS"] == "4"


def test_other_clocks_are_the_same_city_reporting_at_other_moments() -> None:
    """`--clocks` (evaluate-reporting's second run of today's reporting): the same city, seed
    and workers; only when each phone first reports, within its period, is drawn again."""
    import argparse

    from sim.cli import add_arguments, scenario_of
    from sim.world import report_clock

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    district = Path(__file__).parents[2] / "sim" / "scenarios" / "eval" / "district.toml"
    ours = scenario_of(parser.parse_args([str(district), "--seed", "105"]))
    other = scenario_of(parser.parse_args([str(district), "--seed", "105", "--clocks", "again"]))
    assert {**other.model_dump(), "workers": None} == {**ours.model_dump(), "workers": None}
    assert plan_workers(other) == plan_workers(ours)
    ids = [plan.id for plan in plan_workers(ours)][:200]
    mine = [report_clock(ours, worker, 60) for worker in ids]
    theirs = [report_clock(other, worker, 60) for worker in ids]
    assert mine == [report_clock(ours, worker, 60) for worker in ids]  # a clock is the phone's
    assert all(0 <= t <= 60 for t in mine + theirs)
    assert sum(a != b for a, b in zip(mine, theirs, strict=True)) == len(ids)
