"""A tiny run of the cold-start benchmark, so it never rots. No timing is asserted here."""

from bench import coldstart


def test_every_function_and_the_floor_are_measured() -> None:
    medians = coldstart.measure(runs=1)
    assert set(medians) == {"floor", *coldstart.functions()}
    assert all(seconds > 0 for seconds in medians.values())
    text = coldstart.report(medians)
    assert "| floor: Powertools resolver with validation + psycopg |" in text
    for name in coldstart.api_functions():
        assert f"| {name} |" in text
    assert "| LeaseSweeperFunction |" in text and "reported |" in text
