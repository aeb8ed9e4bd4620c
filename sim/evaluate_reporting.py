"""The reporting rule against today's reporting (issue 37 point 1), from the runs' own files:
does dispatch quality hold when the workers report by the contract's rule instead of a PUT
every `report_seconds`?

    python -m sim.evaluate_reporting sim/runs/reporting     (after the runs: make
                                                             evaluate-reporting)

Each run is `sim/runs/reporting/CITY-SEED-LABEL/` as `python -m sim
sim/scenarios/eval/CITY.toml --only nearest --seed SEED --reporting MODE` writes it: LABEL
`interval1` and `interval2` are today's reporting run twice on the same world (the simulator
is not deterministic in wall time: their difference is the run-to-run spread), `rule` the
rule once. Every seed's jobs of a city are pooled per label; the rule holds quality on a city
when its pooled fill and p90 time to accept both lie within the two interval runs'.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from sim.costs import bill
from sim.evaluate import mcnemar_exact, paired_fill, violations, waits
from sim.state import percentiles

POLICY = "nearest"
LABELS = ("interval1", "interval2", "rule")
SPREAD = ("interval1", "interval2")

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


def within(value: float, spread: list[float]) -> bool:
    return min(spread) <= value <= max(spread)


def verdict(by_label: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """Whether the rule's pooled fill and p90 lie within today's two runs'."""
    rule = by_label["rule"]
    return {
        measure: within(rule[measure], [by_label[label][measure] for label in SPREAD])
        for measure in ("fill_rate", "p90")
    }


def discordant(found: Runs, city: str, first: str, second: str) -> tuple[int, int, float]:
    """Jobs one run filled and the other did not, summed over the seeds both have (the same
    jobs in the same order: the same world), and McNemar's exact p of that split."""
    only_first = only_second = 0
    for seed in sorted(set(found[city][first]) & set(found[city][second])):
        paired = paired_fill(
            found[city][first][seed] / f"replay-{POLICY}.jsonl",
            found[city][second][seed] / f"replay-{POLICY}.jsonl",
        )
        only_first += int(paired["only_nearest"])  # paired_fill's names: its first, its second
        only_second += int(paired["only_likely"])
    return only_first, only_second, mcnemar_exact(only_first, only_second)


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


def markdown(found: Runs) -> str:
    pools = {
        city: {label: pooled(labels[label]) for label in LABELS if label in labels}
        for city, labels in found.items()
    }
    quality = [
        "Every seed's jobs together, per city and run (`nearest`):",
        "",
        "| city | run | seeds | jobs | fill | accept p50 / p90 (s) | 5xx / violations |"
        " behind p99 (s) | AWS per 1,000 filled |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    held = ["", "| city | rule's fill within today's spread | rule's p90 within it |",
            "| --- | --- | --- |"]  # fmt: skip
    for city, by_label in pools.items():
        for label, k in by_label.items():
            which = ",".join(str(s) for s in k["seeds"])
            quality.append(
                f"| {city} | {label} | {which} | {k['jobs']} | {100 * (k['fill_rate'] or 0):.1f}%"
                f" | {k['p50'] or 0:.0f} / {k['p90'] or 0:.0f} |"
                f" {k['kinds']['5xx']:.0f} / {k['kinds']['violations']:.0f} |"
                f" {k['lag_p99']:.1f} | ${k['bill'].get('total', 0):.3f} |"
            )
        if all(label in by_label for label in LABELS):
            v = verdict(by_label)
            fills = ", ".join(f"{100 * by_label[x]['fill_rate']:.1f}%" for x in SPREAD)
            p90s = ", ".join(f"{by_label[x]['p90']:.0f} s" for x in SPREAD)
            held.append(
                f"| {city} | {'yes' if v['fill_rate'] else 'no'}"
                f" ({100 * by_label['rule']['fill_rate']:.1f}% against {fills}) |"
                f" {'yes' if v['p90'] else 'no'} ({by_label['rule']['p90']:.0f} s against {p90s}) |"
            )
    pairs = ["", "Fill job by job (the same jobs in both runs; McNemar's exact test on the jobs"
             " only one of the two filled), every seed together:", "",
             "| city | runs | filled by the first only | by the second only | p |",
             "| --- | --- | ---: | ---: | ---: |"]  # fmt: skip
    for city, labels in found.items():
        for first, second in (("interval1", "interval2"), ("interval1", "rule"),
                              ("interval2", "rule")):  # fmt: skip
            if first in labels and second in labels:
                a, b, p = discordant(found, city, first, second)
                pairs.append(f"| {city} | {first} / {second} | {a} | {b} | {p:.2f} |")
    per_seed = [
        "",
        "Each seed on its own, fill / accept p90 (s):",
        "",
        "| city, seed | " + " | ".join(LABELS) + " |",
        "| --- |" + " ---: |" * len(LABELS),
    ]
    for city, labels in found.items():
        for seed in sorted({s for runs in labels.values() for s in runs}):
            cells = [
                one_seed(labels[label][seed]) if seed in labels.get(label, {}) else "-"
                for label in LABELS
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
