"""The reporting rule against today's reporting (issue 37 point 1), from the runs' own files:
does dispatch quality hold when the workers report by the contract's rule instead of a PUT
every `report_seconds`?

    python -m sim.evaluate_reporting sim/runs/reporting     (after the runs: make
                                                             evaluate-reporting)

Each run is `sim/runs/reporting/CITY-SEED-LABEL/` as `python -m sim
sim/scenarios/eval/CITY.toml --only nearest --seed SEED --reporting MODE` writes it: LABEL
`interval1` and `interval2` are today's reporting run twice on the same world, the second
with the phones' report clocks drawn again (`--clocks again`): their difference is the
run-to-run spread, what a change of nothing that matters does to the city, `rule` the rule
once. (Two runs alike, clocks and all, came to differ by a job or none: the simulator is close
to deterministic, and that was no spread to hold a change of the world to.) Every seed's jobs
of a city are pooled per label; the rule holds quality on a city when it stays within today's
own run-to-run spread (`verdict`).
"""

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from sim.costs import bill
from sim.evaluate import accepts_in_order, mcnemar_exact, violations, waits
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


def jobs_filled(pool: dict[str, Any]) -> int:
    """A pooled run's filled jobs, counted (the pool keeps their share)."""
    return round(float(pool["jobs"]) * float(pool["fill_rate"]))


def verdict(by_label: dict[str, dict[str, Any]], flips: int) -> dict[str, bool]:
    """Whether quality held under the rule: within today's own run-to-run spread, as the
    issue asks. Today's two runs of the same world disagree on `flips` jobs (filled by one of
    them only) and their p90s differ by some seconds: that is the spread. The rule's pooled
    fill may fall below today's lower run by at most those jobs, its p90 exceed today's longer
    by at most that difference; better than both is holding too.

    Why not "no lower than today's lower run": when the two ways are truly equal, a third run
    falls below the lower of two about one time in three by chance alone (docs/simulation.md,
    "Reporting rule": decided before the runs of seeds 108 to 111, and today's second run on
    other clocks before those of seeds 112 to 115)."""
    rule = by_label["rule"]
    today = [by_label[label] for label in SPREAD]
    filled = [jobs_filled(k) for k in (rule, *today)]
    p90s = [k["p90"] for k in today]
    return {
        "fill_rate": filled[0] >= min(filled[1:]) - flips,
        "p90": rule["p90"] <= max(p90s) + abs(p90s[0] - p90s[1]),
    }


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
    held = ["", "Within today's run-to-run spread (`verdict`): the jobs filled, the rule's against"
            " today's two runs' and the jobs those two disagree on; the p90s:", "",
            "| city | jobs filled: rule / today's / flips | fill held | p90 (s): rule / today's"
            " | p90 held |", "| --- | --- | --- | --- | --- |"]  # fmt: skip
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
            today = paired(found, city, *SPREAD)
            flips = today["only_first"] + today["only_second"]
            v = verdict(by_label, flips)
            filled = [jobs_filled(by_label[x]) for x in LABELS]
            p90s = [f"{by_label[x]['p90']:.0f}" for x in LABELS]
            held.append(
                f"| {city} | {filled[2]} / {filled[0]}, {filled[1]} / {flips} |"
                f" {'yes' if v['fill_rate'] else 'no'} | {p90s[2]} / {p90s[0]}, {p90s[1]} |"
                f" {'yes' if v['p90'] else 'no'} |"
            )
    pairs = ["", "Job by job (the same jobs in both runs), every seed together: the jobs only one"
             " of the two filled (McNemar's exact p), and the time to accept of the jobs both"
             " filled:", "",
             "| city | runs | filled by the first only | by the second only | p | both filled |"
             " accept p50 / p90, first (s) | second (s) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for city, labels in found.items():
        for first, second in (("interval1", "interval2"), ("interval1", "rule"),
                              ("interval2", "rule")):  # fmt: skip
            if first in labels and second in labels:
                k = paired(found, city, first, second)
                accept = [f"{t['p50'] or 0:.0f} / {t['p90'] or 0:.0f}" for t in k["accept"]]
                pairs.append(
                    f"| {city} | {first} / {second} | {k['only_first']} | {k['only_second']} |"
                    f" {k['p']:.2f} | {k['both']} | {accept[0]} | {accept[1]} |"
                )
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
