"""A tiny run of the cold-start benchmark, so it never rots. No timing is asserted here."""

import importlib.util
from pathlib import Path

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


def test_the_layer_is_measured_with_the_bytecode_its_build_ships(tmp_path: Path) -> None:
    """The bench compiles its copy of the layer with the build's own target (shared/Makefile)."""
    layer = coldstart.built_layer(tmp_path / "python")
    sources = sorted((layer / "dispatch").rglob("*.py"))
    assert len(sources) > 50
    for source in sources:
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:8]
        assert header[:4] == importlib.util.MAGIC_NUMBER, source
        assert int.from_bytes(header[4:8], "little") == 0b01, source  # hash-based, unchecked
