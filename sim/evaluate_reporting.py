"""The reporting rule against today's reporting (issue 37 point 1), from the runs' own files:
does dispatch quality hold when the workers report by the contract's rule instead of a PUT
every `report_seconds`?

    python -m sim.evaluate_reporting sim/runs/reporting     (after the runs: make
                                                             evaluate-reporting)

Each run is `sim/runs/reporting/CITY-SEED-WAY.CLOCKS/` as `python -m sim
sim/scenarios/eval/CITY.toml --only nearest --seed SEED --reporting WAY --clocks CLOCKS`
writes it: WAY `interval` (today's) or `rule`, CLOCKS one draw of the phones' report clocks
(`phase`, `again`, `third`, `fourth`). The same city on other clocks is a change of nothing
that matters, and where it takes the city is the run-to-run spread: the simulator is close to
deterministic, so runs alike, clocks and all, would measure none. Every seed's jobs of a city
are pooled per run (WAY.CLOCKS); each way is run on every draw; the rule holds quality on a
city when its runs stay within today's runs' own spread (`verdict`).
"""

import itertools
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from sim.costs import bill
from sim.evaluate import accepts_in_order, mcnemar_exact, violations, waits
from sim.state import percentiles

POLICY = "nearest"
WAYS = ("interval", "rule")
TODAY, RULE = WAYS
CLOCKS = ("phase", "again", "third", "fourth")  # the draws `make evaluate-reporting` runs

Runs = dict[str, dict[str, dict[int, Path]]]  # city -> label -> seed -> the run's folder


def runs(folder: Path) -> Runs:
    """Every finished run under `folder`, by city, label and seed."""
    found: Runs = defaultdict(lambda: defaultdict(dict))
    for run in sorted(folder.glob("*-*-*")):
        if (run / "report.md").exists():
            city, seed, label = run.name.rsplit("-", 2)
            found[city][label][int(seed)] = run
    return found


def pooled(seeds: dict[int, Path]) -> dict[str, Any]:
    """One label's runs of a city as one sample: fill and time to accept over every seed's
    jobs, the requests by kind summed, the bill per 1,000 filled jobs over the whole."""
    jobs = filled = 0.0
    times: list[float] = []
    kinds: dict[str, float] = defaultdict(float)
    dollars: dict[str, float] = defaultdict(float)
    lag = 0.0
    for run in seeds.values():
        k = json.loads((run / f"kpis-{POLICY}.json").read_text())
        jobs += k["jobs"]
        filled += k["jobs"] * (k["fill_rate"] or 0)
        times += waits(run / f"replay-{POLICY}.jsonl")
        invocations, positions = k["aws"]["invocations"], k["aws"]["positions"]
        kinds["HTTP requests"] += k["requests"]
        kinds["PUT /workers/me/location"] += invocations.get("PUT /workers/me/location", 0)
        kinds["GET /workers/me/offers"] += invocations.get("GET /workers/me/offers", 0)
        kinds["of which with a position"] += positions["reads_with_position"]
        kinds["socket position messages"] += positions["socket_messages"]
        kinds["stream batches"] += invocations.get("PositionStream", 0)
        kinds["records skipped"] += positions["stream_skipped"]
        kinds["5xx"] += k["errors_5xx"]
        kinds["violations"] += violations(run / "report.md").get(POLICY, 0)
        for item, run_dollars in bill(k, k["city_seconds"] / 3600).items():
            dollars[item] += run_dollars  # the pool's filled jobs divide the pool's bill
        lag = max(lag, k["lag_s"]["p99"] or 0.0)
    accept = percentiles(times)
    return {
        "seeds": sorted(seeds),
        "jobs": int(jobs),
        "fill_rate": filled / jobs if jobs else None,
        "p50": accept["p50"],
        "p90": accept["p90"],
        "kinds": dict(kinds),
        "bill": {item: total * 1000 / filled for item, total in dollars.items()}
        | {"total": sum(dollars.values()) * 1000 / filled}
        if filled
        else {},
        "lag_p99": lag,
    }


def jobs_filled(pool: dict[str, Any]) -> int:
    """A pooled run's filled jobs, counted (the pool keeps their share)."""
    return round(float(pool["jobs"]) * float(pool["fill_rate"]))


def way_of(label: str) -> str:
    """A run's way of reporting: `interval` of `interval.again`."""
    return label.partition(".")[0]


def order(label: str) -> tuple[int, int, str]:
    """Runs in a stable order: by way, then the draws of the clocks as the Makefile names them."""
    way, _, clocks = label.partition(".")
    rank = CLOCKS.index(clocks) if clocks in CLOCKS else len(CLOCKS)
    return WAYS.index(way) if way in WAYS else len(WAYS), rank, clocks


def by_way(pools: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A city's pooled runs by way, on the draws of the clocks that every way ran (the same
    worlds both ways), in the order of the draws' names."""
    draws = [{label.partition(".")[2] for label in pools if way_of(label) == w} for w in WAYS]
    common = sorted(set.intersection(*draws))
    return {w: [pools[f"{w}.{clocks}"] for clocks in common] for w in WAYS}


def spread(values: list[float]) -> tuple[float, float]:
    """Runs' mean and their run-to-run spread: the standard deviation of one run."""
    return statistics.fmean(values), statistics.stdev(values)


def verdict(today: list[dict[str, Any]], rule: list[dict[str, Any]]) -> dict[str, bool]:
    """Whether quality held under the rule: within today's own run-to-run spread, as the
    issue asks. Today's runs on other clocks of the same city differ by some jobs filled and
    some seconds of p90; the standard deviation of one run is the spread. The rule's runs, on
    the same draws, hold when their mean fill is no lower than today's mean less one spread,
    and their mean p90 no longer than today's mean plus one; better is holding too.

    Why several runs a way (decided 2026-12-07, before the runs of seeds 116 to 119): a
    spread read from two runs is one draw of it, and a poor one. On seeds 108 to 115 two of
    today's runs were the same to the job (their clocks alike) or 0.6 s of p90 apart (other
    clocks), while a setting that should change nothing moved the pooled p90 by 1.7 s; the
    rule's single run missed the bar by 0.1 s on one set of seeds and by 5 s on another.
    Were the ways alike, the rule's mean of four runs would miss by chance about one time in
    ten (docs/simulation.md, "Reporting rule")."""
    filled = [[float(jobs_filled(k)) for k in runs] for runs in (today, rule)]
    p90s = [[float(k["p90"]) for k in runs] for runs in (today, rule)]
    fill_mean, fill_spread = spread(filled[0])
    p90_mean, p90_spread = spread(p90s[0])
    return {
        "fill_rate": statistics.fmean(filled[1]) >= fill_mean - fill_spread,
        "p90": statistics.fmean(p90s[1]) <= p90_mean + p90_spread,
    }


def longer_by_chance(today: list[float], rule: list[float]) -> float:
    """How often the rule's mean would come out at least this much above today's were the
    ways alike: of every split of all the runs into two groups of these sizes, the share
    whose difference of means is as large (an exact permutation test, one-sided)."""
    values = today + rule
    seen = statistics.fmean(rule) - statistics.fmean(today)
    splits = as_large = 0
    for picked in itertools.combinations(range(len(values)), len(rule)):
        chosen = [values[i] for i in picked]
        others = [v for i, v in enumerate(values) if i not in picked]
        splits += 1
        as_large += statistics.fmean(chosen) - statistics.fmean(others) >= seen - 1e-9
    return as_large / splits


def paired(found: Runs, city: str, first: str, second: str) -> dict[str, Any]:
    """Two runs job by job, every seed both have (the same jobs in the same order: the same
    world): the jobs one filled and the other did not, McNemar's exact p of that split, and
    each run's time to accept over the jobs both filled (what the other's extra jobs, often
    the slow ones, leave out)."""
    only_first = only_second = 0
    both: tuple[list[float], list[float]] = ([], [])
    for seed in sorted(set(found[city][first]) & set(found[city][second])):
        replays = (found[city][label][seed] / f"replay-{POLICY}.jsonl" for label in (first, second))
        for a, b in zip(*(accepts_in_order(replay) for replay in replays), strict=True):
            only_first += a is not None and b is None
            only_second += b is not None and a is None
            if a is not None and b is not None:
                both[0].append(a)
                both[1].append(b)
    return {
        "only_first": only_first,
        "only_second": only_second,
        "p": mcnemar_exact(only_first, only_second),
        "both": len(both[0]),
        "accept": [percentiles(times) for times in both],
    }


def one_seed(run: Path) -> str:
    k = json.loads((run / f"kpis-{POLICY}.json").read_text())
    return f"{100 * (k['fill_rate'] or 0):.1f}% / {k['time_to_accept_s']['p90'] or 0:.0f}"


KINDS = (
    "HTTP requests",
    "PUT /workers/me/location",
    "GET /workers/me/offers",
    "of which with a position",
    "socket position messages",
    "stream batches",
    "records skipped",
)


# Job by job: today against itself on other clocks, and each way against the other on the
# same clocks.
PAIRS = (("interval.phase", "interval.again"), ("interval.phase", "rule.phase"),
         ("interval.again", "rule.again"))  # fmt: skip


def markdown(found: Runs) -> str:
    pools = {
        city: {label: pooled(labels[label]) for label in sorted(labels, key=order)}
        for city, labels in found.items()
    }
    quality = [
        "Every seed's jobs together, per city and run (`nearest`; WAY.CLOCKS):",
        "",
        "| city | run | seeds | jobs | fill | accept p50 / p90 (s) | 5xx / violations |"
        " behind p99 (s) | AWS per 1,000 filled |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    held = ["", "Within today's run-to-run spread (`verdict`): each way's runs on the same"
            " draws of the clocks, their mean and (today's) the spread of one run; how often"
            " the rule's p90 would come out this much longer were the ways alike:", "",
            "| city | runs a way | jobs filled: rule / today's | fill held |"
            " p90 (s): rule / today's | p90 held | by chance |",
            "| --- | ---: | --- | --- | --- | --- | ---: |"]  # fmt: skip
    for city, by_label in pools.items():
        for label, k in by_label.items():
            which = ",".join(str(s) for s in k["seeds"])
            quality.append(
                f"| {city} | {label} | {which} | {k['jobs']} | {100 * (k['fill_rate'] or 0):.1f}%"
                f" | {k['p50'] or 0:.0f} / {k['p90'] or 0:.0f} |"
                f" {k['kinds']['5xx']:.0f} / {k['kinds']['violations']:.0f} |"
                f" {k['lag_p99']:.1f} | ${k['bill'].get('total', 0):.3f} |"
            )
        ways = by_way(by_label)
        if len(ways[TODAY]) < 2:
            continue
        v = verdict(ways[TODAY], ways[RULE])
        filled = [[float(jobs_filled(k)) for k in ways[w]] for w in WAYS]
        p90s = [[float(k["p90"]) for k in ways[w]] for w in WAYS]
        held.append(
            f"| {city} | {len(ways[TODAY])} | {statistics.fmean(filled[1]):.1f} /"
            " {:.1f} ± {:.1f} | ".format(*spread(filled[0]))
            + f"{'yes' if v['fill_rate'] else 'no'} | {statistics.fmean(p90s[1]):.1f} /"
            " {:.1f} ± {:.1f} | ".format(*spread(p90s[0]))
            + f"{'yes' if v['p90'] else 'no'} | {longer_by_chance(*p90s):.2f} |"
        )
    pairs = ["", "Job by job (the same jobs in both runs), every seed together: the jobs only one"
             " of the two filled (McNemar's exact p), and the time to accept of the jobs both"
             " filled:", "",
             "| city | runs | filled by the first only | by the second only | p | both filled |"
             " accept p50 / p90, first (s) | second (s) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for city, seeds_by_label in found.items():
        for first, second in PAIRS:
            if first in seeds_by_label and second in seeds_by_label:
                k = paired(found, city, first, second)
                accept = [f"{t['p50'] or 0:.0f} / {t['p90'] or 0:.0f}" for t in k["accept"]]
                pairs.append(
                    f"| {city} | {first} / {second} | {k['only_first']} | {k['only_second']} |"
                    f" {k['p']:.2f} | {k['both']} | {accept[0]} | {accept[1]} |"
                )
    labels = sorted({label for seeds in found.values() for label in seeds}, key=order)
    per_seed = [
        "",
        "Each seed on its own, fill / accept p90 (s):",
        "",
        "| city, seed | " + " | ".join(labels) + " |",
        "| --- |" + " ---: |" * len(labels),
    ]
    for city, seeds_by_label in found.items():
        for seed in sorted({s for runs in seeds_by_label.values() for s in runs}):
            cells = [
                one_seed(seeds_by_label[label][seed])
                if seed in seeds_by_label.get(label, {})
                else "-"
                for label in labels
            ]
            per_seed.append(f"| {city} {seed} | " + " | ".join(cells) + " |")
    kinds = ["", "Requests by kind, every seed together:", "",
             "| city | run | " + " | ".join(KINDS) + " |",
             "| --- | --- |" + " ---: |" * len(KINDS)]  # fmt: skip
    for city, by_label in pools.items():
        for label, k in by_label.items():
            kinds.append(
                f"| {city} | {label} | "
                + " | ".join(f"{k['kinds'].get(kind, 0):,.0f}" for kind in KINDS)
                + " |"
            )
    items = [i for i in next(iter(next(iter(pools.values())).values()))["bill"]] if pools else []
    bill = ["", "AWS per 1,000 filled jobs, every seed together (sim/prices.toml):", "",
            "| city | run | " + " | ".join(items) + " |",
            "| --- | --- |" + " ---: |" * len(items)]  # fmt: skip
    for city, by_label in pools.items():
        for label, k in by_label.items():
            bill.append(
                f"| {city} | {label} | "
                + " | ".join(f"${k['bill'].get(i, 0):.3f}" for i in items)
                + " |"
            )
    return "\n".join(quality + held + pairs + per_seed + kinds + bill) + "\n"


def main(argv: list[str] | None = None) -> None:
    folder = Path((argv or sys.argv[1:] or ["sim/runs/reporting"])[0])
    text = markdown(runs(folder))
    (folder / "reporting.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
