"""`dispatch simulate SCENARIO [--speed X] [--out DIR]`: validate, run every configuration,
write the report, the plots and the replay files. Progress is printed as it goes."""

import argparse
import sys
import time
from pathlib import Path

from sim.scenario import Scenario, ScenarioError, load

RUNS = Path(__file__).parent / "runs"
SUMMARY = "Run a simulated city against the real dispatch and write what it did."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "scenario",
        help="a scenario file: sim/scenarios/tiny.toml (a small town, seconds) or"
        " sim/scenarios/district.toml (the district, about 40 minutes)",
    )
    parser.add_argument(
        "--speed",
        type=float,
        help="times faster than real time (default: the scenario's own `speed`)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="another seed for the same city (default: the scenario's own `seed`)",
    )
    parser.add_argument(
        "--hours",
        type=float,
        help="city hours to run (default: the scenario's own `hours`)",
    )
    parser.add_argument(
        "--push-sample",
        type=int,
        help="workers whose phones hear offers over real sockets (default: the scenario's"
        " own `[workers] push_sample`; sim/push.py)",
    )
    parser.add_argument(
        "--reporting",
        choices=("rule", "interval"),
        help="how the workers' apps report where they are (default: the scenario's own"
        " `[workers] reporting`: the rule, on their sockets, or a PUT every report_seconds)",
    )
    parser.add_argument(
        "--clocks",
        metavar="NAME",
        help="another draw of the phones' report clocks (default: the scenario's own"
        " `[workers] clocks`)",
    )
    parser.add_argument(
        "--no-past",
        action="store_true",
        help="a market on its first day: no offers answered before the run (the scenario's"
        " `[workers] prior_offers` dropped; ratings stay)",
    )
    parser.add_argument(
        "--only",
        metavar="NAME",
        help="run only the configuration of this name (one of the scenario's [[sweep]])",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where the report, plots and replays go (default: sim/runs/NAME)",
    )
    parser.add_argument(
        "--progress-seconds",
        type=float,
        default=10.0,
        help="wall seconds between progress lines (default: %(default)s; 0: none)",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dispatch simulate", description=SUMMARY)
    add_arguments(parser)
    simulate(parser.parse_args(argv))


def scenario_of(args: argparse.Namespace) -> Scenario:
    """The scenario file with the command line's changes (a seed, the reporting, no past, one
    configuration, ...)."""
    scenario = load(args.scenario)
    given = {k: getattr(args, k) for k in ("speed", "seed", "hours")}
    changes = {k: v for k, v in given.items() if v is not None}
    raw = scenario.model_dump()
    workers = {
        k: v
        for k in ("push_sample", "reporting", "clocks")
        if (v := getattr(args, k, None)) is not None
    }
    if getattr(args, "no_past", False):
        workers["prior_offers"] = None
    if workers:
        changes["workers"] = {**raw["workers"], **workers}
    if (only := getattr(args, "only", None)) is not None:
        names = [c.name for c in scenario.configurations()]
        if only not in names:
            raise ScenarioError(f"--only: no configuration {only!r} (there are: {names})")
        changes["sweep"] = [c for c in raw["sweep"] if c["name"] == only]
    return scenario.model_validate({**raw, **changes}) if changes else scenario


def simulate(args: argparse.Namespace) -> None:
    try:
        scenario = scenario_of(args)
    except (ScenarioError, ValueError) as error:
        sys.exit(f"scenario error: {error}".splitlines()[0])
    try:  # the plots need it; better said now than after the whole run
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit(
            "dispatch simulate draws its plots with matplotlib, which `make dev` does not"
            " install: run `make simulate` or `make install` (everything) first"
        )
    from sim.run import quiet_environment

    quiet_environment()
    from dispatch_local import home
    from sim import report, run

    out = args.out or RUNS / scenario.name
    began = time.monotonic()
    configurations = scenario.configurations()
    print(
        f"{scenario.name}: {len(configurations)} configuration(s), {scenario.hours:g} h of the"
        f" city each at {scenario.speed:g}x (about"
        f" {len(configurations) * scenario.seconds / scenario.speed / 60:.1f} min of wall time)",
        flush=True,
    )
    outcomes = run.run(scenario, home() / "sim", progress_seconds=args.progress_seconds)
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
