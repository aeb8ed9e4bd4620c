"""The push sample's parts that need no sockets: who is sampled, and the bus's push rule."""

from pathlib import Path

from sim.push import sampled
from sim.scenario import Scenario, load

TINY = Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml"


def with_sample(n: int, seed: int = 3) -> Scenario:
    raw = load(TINY).model_dump()
    raw["workers"]["push_sample"], raw["seed"] = n, seed
    return Scenario.model_validate(raw)


def test_the_sample_is_the_seeds_and_its_size_the_scenarios() -> None:
    ids = [f"w-{n}" for n in range(40)]
    first = sampled(with_sample(10), ids)
    assert len(first) == 10 and first <= set(ids)
    assert sampled(with_sample(10), list(reversed(ids))) == first
    assert sampled(with_sample(10, seed=4), ids) != first
