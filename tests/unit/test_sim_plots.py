"""The data behind the simulator's plots agrees with its report: every job has one fate, the
jobs over the run cover the whole run (a 15-minute town once drew one point, its axis 0.080 to
0.086 h), and the map's markers are the table's counts."""

from pathlib import Path
from typing import Any

from sim.report import plot_data
from sim.run import Outcome
from sim.scenario import Dispatch, load
from sim.state import fate

TINY = load(Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml")  # 0.25 h


def job(n: int, created: float, **fields: Any) -> dict[str, Any]:
    row = {"id": f"job-{n}", "created": created, "lat": 12.97, "lng": 77.59, "filled": False,
           "unfilled": False, "time_to_accept": None, "end": None}  # fmt: skip
    return {**row, **fields}


JOBS = [
    job(1, 10, filled=True, time_to_accept=12.0, end="completed"),
    job(2, 200, filled=True, unfilled=True, time_to_accept=300.0),  # taken after its waves
    job(3, 400, unfilled=True),
    job(4, 500, end="cancelled"),
    job(5, 600, end="expired"),
    job(6, 899),  # posted in the last second: still waiting
]


def outcome(jobs: list[dict[str, Any]]) -> Outcome:
    from collections import Counter

    fates = Counter(fate(j) for j in jobs)
    kpis = {
        "jobs": len(jobs),
        "fill_rate": fates["filled"] / len(jobs),
        "unfilled_rate": fates["unfilled"] / len(jobs),
        "not_filled": {k: fates[k] for k in ("cancelled", "expired", "waiting")},
    }
    return Outcome(Dispatch(), kpis, {}, [], [], jobs)


def test_every_job_has_one_fate_and_the_plots_count_them_as_the_report_does() -> None:
    data = plot_data(TINY, [outcome(JOBS)])
    run = data["runs"]["as configured"]
    per_bin = run["posted_per_bin"]
    assert {k: sum(v) for k, v in per_bin.items()} == {
        "filled": 2, "unfilled": 1, "cancelled": 1, "expired": 1, "waiting": 1,
    }  # fmt: skip
    assert {k: len(v) for k, v in run["where"].items()} == {k: sum(v) for k, v in per_bin.items()}
    assert sum(map(sum, per_bin.values())) == len(JOBS)
    assert run["time_to_accept_s"] == [12.0, 300.0]


def test_the_jobs_over_a_short_run_cover_the_whole_run_in_equal_bins() -> None:
    data = plot_data(TINY, [outcome(JOBS)])
    starts = data["runs"]["as configured"]["bin_start_hours"]
    width = data["bin_minutes"] / 60
    assert len(starts) >= 6
    assert starts[0] == 0
    assert abs(starts[-1] + width - TINY.hours) < 1e-9  # the last bin ends with the run
    assert data["runs"]["as configured"]["posted_per_bin"]["waiting"][-1] == 1  # 899 s: last bin
