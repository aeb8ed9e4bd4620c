"""`dispatch simulate SCENARIO [--speed X] [--out DIR]`: validate, run every configuration,
write the report, the plots and the replay files."""

import argparse
import sys
import time
from pathlib import Path

from sim.scenario import ScenarioError, load

RUNS = Path(__file__).parent / "runs"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dispatch simulate", description=__doc__)
    parser.add_argument("scenario", help="a scenario file (sim/scenarios/district.toml)")
    parser.add_argument("--speed", type=float, help="times faster than real time (overrides)")
    parser.add_argument("--out", type=Path, help="where the report goes (sim/runs/NAME)")
    args = parser.parse_args(argv)
    try:
        scenario = load(args.scenario)
        if args.speed is not None:
            scenario = scenario.model_validate({**scenario.model_dump(), "speed": args.speed})
    except (ScenarioError, ValueError) as error:
        sys.exit(f"scenario error: {error}".splitlines()[0])
    from sim.run import quiet_environment

    quiet_environment()
    from dispatch_local import home
    from sim import report, run

    out = args.out or RUNS / scenario.name
    began = time.monotonic()
    outcomes = run.run(scenario, home() / "sim")
    written = report.write(scenario, outcomes, out)
    for outcome in outcomes:
        k = outcome.kpis
        print(
            f"{outcome.dispatch.name}: {k['jobs']} jobs, fill {k['fill_rate'] or 0:.1%}, "
            f"accept p50 {k['time_to_accept_s']['p50'] or 0:.0f} s, 5xx {k['errors_5xx']}, "
            f"{len(outcome.violations)} violations, {k['speed']:.1f}x real time",
            flush=True,
        )
    print(f"report: {written} ({time.monotonic() - began:.0f} s)")
