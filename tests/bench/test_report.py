"""The report renders every benchmark's table, its plots and the machine, from what the
benchmarks leave in bench/results/ (here a small set written by the test)."""

import json
from pathlib import Path

import pytest

from bench import report


def timing(p50: float, p99: float) -> dict[str, float]:
    return {"count": 10, "seconds": 1.0, "p50_ms": p50, "p99_ms": p99}


def test_the_report_has_tables_plots_and_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, docs = tmp_path / "results", tmp_path / "docs"
    results.mkdir()
    monkeypatch.setattr(report, "RESULTS", results)
    monkeypatch.setattr(report, "PLOTS", docs / "benchmarks")
    simulated = tmp_path / "sim"
    simulated.mkdir()
    monkeypatch.setattr(report, "SIMULATION", simulated)
    (simulated / "report.md").write_text(
        "# Simulation\n\nSeed 11; the same world.\n\n| | seed waves |\n| --- | ---: |\n"
        "| fill rate | 93.0% |\n\n## The history checker\n"
    )
    accept = [
        {"claimers": n, "mode": mode, "attempts": timing(n * k, n * k * 2), "wins": 1}
        for n in (1, 3, 10)
        for mode, k in (("floor", 1.0), ("classic", 1.5))
    ]
    (results / "accept.json").write_text(json.dumps(accept))
    (results / "accept.md").write_text("| claimers | design | x classic |\n| 1 | floor | 1.50 |")
    sizes = [
        {
            "jobs": n,
            "sides": [
                {"name": name, "by_place": {"dense": timing(1, p99), "sparse": timing(1, p99)}}
                for name, p99 in (("ours: ...", 2), ("PostGIS KNN + DWithin", 4))
            ],
        }
        for n in (1_000, 10_000)
    ]
    (results / "geo.json").write_text(json.dumps({"nearby_by_size": sizes}))
    (results / "geo.md").write_text("| nearby | x PostGIS p99 |")

    text = report.render()

    assert "## The machine" in text and "cores" in text
    assert "| 1 | floor | 1.50 |" in text and "| nearby | x PostGIS p99 |" in text
    assert text.count("(not run)") == 7  # sweeper, outbox, soak, outage, coldstart, ops, push
    assert "## The simulated district" in text and "| fill rate | 93.0% |" in text
    for plot in ("accept-latency-by-contention.png", "nearby-latency-by-size.png"):
        assert f"](benchmarks/{plot})" in text
        assert (docs / "benchmarks" / plot).read_bytes().startswith(b"\x89PNG")
