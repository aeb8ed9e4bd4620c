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
    assert (
        text.count("(not run)") == 8
    )  # sweeper, outbox, soak, outage, coldstart, ops, push, history
    assert "## The simulated district" in text and "| fill rate | 93.0% |" in text
    for plot in ("accept-latency-by-contention.png", "nearby-latency-by-size.png"):
        assert f"](benchmarks/{plot})" in text
        assert (docs / "benchmarks" / plot).read_bytes().startswith(b"\x89PNG")


def test_one_benchmarks_section_is_written_anew_and_the_rest_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(report, "RESULTS", results)
    docs = tmp_path / "benchmarks.md"
    docs.write_text(
        "# Benchmarks\n\n## Push: offers to 2,000 connected phones\n\npush table\n\n"
        "## Load and soak with the history checker\n\nsoak table\n\n"
        "## The simulated district\n\ndistrict\n"
    )
    (results / "history.md").write_text("| path | ratio |\n\nworst path at 1 days: 1.0 x empty (x)")
    report.write_section("history", docs)
    first = docs.read_text()
    assert first.index("push table") < first.index("## History") < first.index("soak table")
    assert "worst path at 1 days" in first
    (results / "history.md").write_text("worst path at 2 days: 3.0 x empty (y)")
    report.write_section("history", docs)
    second = docs.read_text()
    assert "worst path at 1 days" not in second and second.count("## History") == 1
    assert "push table" in second and "soak table" in second and "district" in second
