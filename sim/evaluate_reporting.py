"""The reporting rule against today's reporting (issue 37 point 1), from the runs' own files:
does dispatch quality hold when the workers report by the contract's rule instead of a PUT
every `report_seconds`?

    python -m sim.evaluate_reporting sim/runs/reporting     (after the runs: make
                                                             evaluate-reporting)

Each run is `sim/runs/reporting/CITY-SEED-WAY.CLOCKS/` as `python -m sim
sim/scenarios/eval/CITY.toml --only nearest --seed SEED --reporting WAY --clocks CLOCKS`
writes it: WAY `interval` (today's) or `rule`, CLOCKS a draw of the phones' report clocks
(`phase`, the scenario's own; others show what a change of nothing that matters does). Every
seed's jobs of a city are pooled per run; the rule holds quality on a city when, on the same
jobs, it stays within today's run-to-run spread: how far today's fill and p90 move between
runs of other jobs of the same city (`verdict`).
"""

import json
import random
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


def order(label: str) -> tuple[int, int, str]:
    """Runs in a stable order: by way, then the draws of the clocks as the Makefile names them."""
    way, _, clocks = label.partition(".")
    rank = CLOCKS.index(clocks) if clocks in CLOCKS else len(CLOCKS)
    return WAYS.index(way) if way in WAYS else len(WAYS), rank, clocks


def jobs_in_order(seeds: dict[int, Path]) -> list[float | None]:
    """Every seed's jobs of a run, seed by seed in the order posted: each one's time to its
    first accept, None when nobody took it."""
    return [
        t
        for seed in sorted(seeds)
        for t in accepts_in_order(seeds[seed] / f"replay-{POLICY}.jsonl")
    ]


def p90_filled(jobs: list[float | None]) -> float:
    """The p90 time to accept of the jobs filled, as `pooled` reads it."""
    return float(percentiles([t for t in jobs if t is not None])["p90"] or 0.0)


RESAMPLES = 2000


def spread(jobs: list[float | None], resamples: int = RESAMPLES) -> dict[str, float]:
    """Today's run-to-run spread: how far its jobs filled and its p90 move from one run to
    another of the same city with other jobs (the same number, drawn from the same city): the
    standard deviation of each over resamplings of its jobs (a bootstrap, seeded)."""
    rng = random.Random(f"spread:{len(jobs)}")
    filled: list[float] = []
    p90s: list[float] = []
    for _ in range(resamples):
        sample = rng.choices(jobs, k=len(jobs))
        filled.append(float(sum(t is not None for t in sample)))
        p90s.append(p90_filled(sample))
    return {"filled": statistics.stdev(filled), "p90": statistics.stdev(p90s)}


def verdict(
    today: list[float | None], rule: list[float | None], room: dict[str, float]
) -> dict[str, bool]:
    """Whether quality held under the rule: within today's run-to-run spread, as the issue
    asks. The same jobs both ways (the same world), every seed pooled; the rule holds when it
    filled no fewer than today's jobs filled less one spread of them, and its p90 is no longer
    than today's plus one spread of it (`room`, today's `spread`); better is holding too.

    Why this spread (decided 2026-12-07, before the runs of seeds 120 to 127): the simulator
    is close to deterministic, so today's run again is today's run; on four draws of the
    phones' clocks (`--clocks`) its runs of seeds 116 to 119 spread by 0.5 s of pooled p90 in
    the district and 0.1 s in the evening, a job and none filled, while runs of other jobs of
    the same city spread by seconds and jobs (today's pooled district p90 was 44 s, 48 s and
    51 s on three sets of four seeds; the bootstrap of seeds 116 to 119 says 2.8 s). A spread
    of nothing holds a change of the world to no difference at all, which a change as small
    as a report's phase fails half the time (docs/simulation.md, "Reporting rule")."""
    filled = [sum(t is not None for t in jobs) for jobs in (today, rule)]
    return {
        "fill_rate": filled[1] >= filled[0] - room["filled"],
        "p90": p90_filled(rule) <= p90_filled(today) + room["p90"],
    }


def difference_interval(
    today: list[float | None], rule: list[float | None], resamples: int = RESAMPLES
) -> tuple[float, float]:
    """The rule's p90 less today's, 95% interval: the same jobs resampled for both (paired:
    what the rule changes, the world's own variety aside)."""
    rng = random.Random(f"difference:{len(today)}")
    pairs = list(zip(today, rule, strict=True))
    differences = []
    for _ in range(resamples):
        sample = rng.choices(pairs, k=len(pairs))
        differences.append(p90_filled([r for _, r in sample]) - p90_filled([t for t, _ in sample]))
    cuts = statistics.quantiles(differences, n=40, method="inclusive")
    return cuts[0], cuts[-1]


def wave_one(seeds: dict[int, Path]) -> dict[str, int]:
    """How the first waves did, every seed together: jobs filled, those taken by a worker of
    the first wave, and the first waves' offers (what a stale position would cost first)."""
    filled = won = offered = 0
    for seed in sorted(seeds):
        offers: dict[str, dict[str, int]] = defaultdict(dict)
        taken: set[str] = set()
        for line in (seeds[seed] / f"replay-{POLICY}.jsonl").read_text().splitlines()[1:]:
            event = json.loads(line)
            if event.get("type") == "offer.created":
                wave = event["data"]["wave"]
                offers[event["job_id"]][event["data"]["worker_id"]] = wave
                offered += wave == 1
            elif event.get("type") == "job.assigned" and event["job_id"] not in taken:
                taken.add(event["job_id"])
                filled += 1
                won += offers[event["job_id"]].get(event["actor"]) == 1
    return {"filled": filled, "won": won, "offered": offered}


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
    held = ["", "Within today's run-to-run spread (`verdict`), each way on the clocks `phase`,"
            " every seed's jobs: the jobs filled and the p90, the rule's against today's and"
            " today's spread (`spread`); the rule's p90 less today's, 95% interval (the same"
            " jobs resampled both ways); the first waves' offers, and the jobs filled that a"
            " first-wave worker took:", "",
            "| city | jobs filled: rule / today's ± spread | fill held |"
            " p90 (s): rule / today's ± spread | p90 held | p90 difference (s) |"
            " first waves' offers: rule / today's | filled by the first wave: rule / today's |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for city, by_label in pools.items():
        for label, k in by_label.items():
            which = ",".join(str(s) for s in k["seeds"])
            quality.append(
                f"| {city} | {label} | {which} | {k['jobs']} | {100 * (k['fill_rate'] or 0):.1f}%"
                f" | {k['p50'] or 0:.0f} / {k['p90'] or 0:.0f} |"
                f" {k['kinds']['5xx']:.0f} / {k['kinds']['violations']:.0f} |"
                f" {k['lag_p99']:.1f} | ${k['bill'].get('total', 0):.3f} |"
            )
        runs_of = found[city]
        if not all(f"{way}.phase" in runs_of for way in WAYS):
            continue
        today, rule = (jobs_in_order(runs_of[f"{way}.phase"]) for way in WAYS)
        room = spread(today)
        v = verdict(today, rule, room)
        low, high = difference_interval(today, rule)
        filled = [sum(t is not None for t in jobs) for jobs in (rule, today)]
        firsts = [wave_one(runs_of[f"{way}.phase"]) for way in (RULE, TODAY)]
        held.append(
            f"| {city} | {filled[0]} / {filled[1]} ± {room['filled']:.1f} |"
            f" {'yes' if v['fill_rate'] else 'no'} |"
            f" {p90_filled(rule):.1f} / {p90_filled(today):.1f} ± {room['p90']:.1f} |"
            f" {'yes' if v['p90'] else 'no'} | {low:+.1f} to {high:+.1f} |"
            f" {firsts[0]['offered']} / {firsts[1]['offered']} |"
            f" {firsts[0]['won']} of {firsts[0]['filled']} / {firsts[1]['won']} of"
            f" {firsts[1]['filled']} |"
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
