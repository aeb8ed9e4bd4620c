"""The simulated city's plan, without any service: a scenario is checked before anything runs;
arrivals are the Poisson process the scenario describes; the same seed plans the same world."""

import itertools
import math
from pathlib import Path
from typing import Any

import pytest

from sim.scenario import Scenario, ScenarioError, crosses_itself, load
from sim.world import distance_m, plan_arrivals, plan_workers

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
