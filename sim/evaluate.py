"""The offer policy evaluation (issues 24 and 38): `nearest` against `likely` on three cities,
each with a record of answers and on its first day (`CITY_cold`), several seeds, from the
runs' own files, with the bill per 1,000 filled jobs and the default decided by the rule fixed
before the runs (`decide`).

    python -m sim.evaluate sim/runs/eval [--docs docs/simulation.md]   (after the runs)

Each run is `sim/runs/eval/CITY-SEED/` as `dispatch simulate sim/scenarios/eval/CITY.toml
--seed SEED --out ...` writes it. A city is won on a seed when `likely` has a fill rate not
lower, a time to accept p90 at most 0.8x, offers and lost races per filled job not higher,
and both runs 0 5xx and 0 invariant violations.
"""

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from sim.costs import busy_environments, per_thousand_filled, prices, without_proxy
from sim.state import percentiles

POLICIES = ("nearest", "likely")


def violations(report: Path) -> dict[str, int]:
    """Each configuration's count from the report's history checker section."""
    found = {}
    for line in report.read_text().splitlines():
        if m := re.match(r"- (\w+): (\d+) violations", line):
            found[m.group(1)] = int(m.group(2))
    return found


def runs(folder: Path) -> dict[str, dict[int, dict[str, dict[str, Any]]]]:
    """city -> seed -> policy -> kpis (with `violations` and `bill`)."""
    found: dict[str, dict[int, dict[str, dict[str, Any]]]] = defaultdict(dict)
    for run in sorted(folder.glob("*-*")):
        if not (run / "report.md").exists():
            continue
        city, seed = run.name.rsplit("-", 1)
        counted = violations(run / "report.md")
        found[city][int(seed)] = {}
        for policy in POLICIES:
            kpis = json.loads((run / f"kpis-{policy}.json").read_text())
            kpis["violations"] = counted.get(policy)
            hours = kpis["city_seconds"] / 3600  # the run's own, its drain included
            kpis["bill"] = per_thousand_filled(kpis, hours)
            kpis["bill_without_proxy"] = per_thousand_filled(kpis, hours, without_proxy(prices()))
            kpis["busy_environments"] = busy_environments(kpis, hours)
            kpis["later"] = after_warm_up(run / f"replay-{policy}.jsonl")
            found[city][int(seed)][policy] = kpis
        found[city][int(seed)]["paired"] = paired_fill(
            *(run / f"replay-{policy}.jsonl" for policy in POLICIES)
        )
    return found


def accepts_in_order(replay: Path) -> list[float | None]:
    """Each job's time to its first accept (city seconds; None: never assigned), in the order
    the jobs were posted, from the replay."""
    created: dict[str, float] = {}
    first: dict[str, float] = {}
    for line in replay.read_text().splitlines()[1:]:
        event = json.loads(line)
        if event.get("type") == "job.created":
            created[event["job_id"]] = event["t"]
        elif event.get("type") == "job.assigned":
            first.setdefault(event["job_id"], event["t"])
    return [first[job] - t if job in first else None for job, t in created.items()]


def waits(replay: Path) -> list[float]:
    """Each filled job's time to its first accept (city seconds), from the replay."""
    return [t for t in accepts_in_order(replay) if t is not None]


def pooled(
    folder: Path, city: str, seeds: dict[int, dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """Every seed's jobs of one city taken as one sample, per policy: the fill, the p90 time to
    accept, offers and lost races per filled job (from each run's own counts). A seed's run is
    a few hundred jobs (the evening's a few dozen), and one run's figures move between two runs
    of the same policy on the same seed; six seeds together are the larger sample."""
    found = {}
    for policy in POLICIES:
        jobs = sum(k[policy]["jobs"] for k in seeds.values())
        filled = [k[policy]["jobs"] * k[policy]["fill_rate"] for k in seeds.values()]
        times = [
            t for seed in seeds for t in waits(folder / f"{city}-{seed}" / f"replay-{policy}.jsonl")
        ]
        found[policy] = {
            "jobs": jobs,
            "fill_rate": sum(filled) / jobs,
            "p90": percentiles(times)["p90"],
            "offers_per_filled_job": sum(
                n * k[policy]["offers_per_filled_job"]
                for n, k in zip(filled, seeds.values(), strict=True)
            )
            / sum(filled),
            "lost_races_per_filled_job": sum(
                n * k[policy]["lost_races_per_filled_job"]
                for n, k in zip(filled, seeds.values(), strict=True)
            )
            / sum(filled),
            "never_offered_share": sum(
                k[policy]["never_offered_share"] * k[policy]["workers_online"]
                for k in seeds.values()
            )
            / sum(k[policy]["workers_online"] for k in seeds.values()),
        }
    return found


# Fairness with a floor (issue 38 point 3): `likely` leaves at most this much larger a share
# of the online workers without a single offer than `nearest` does (pooled over the seeds).
NEVER_OFFERED_MARGIN = 0.05


def floor_held(nearest: dict[str, float], likely: dict[str, float]) -> bool:
    return likely["never_offered_share"] <= nearest["never_offered_share"] + NEVER_OFFERED_MARGIN


def filled_in_order(replay: Path) -> list[bool]:
    """Whether each job was ever assigned, in the order the jobs were posted."""
    return [t is not None for t in accepts_in_order(replay)]


def paired_fill(nearest: Path, likely: Path) -> dict[str, float]:
    """The fill compared job by job: both runs post the same jobs in the same order (same
    world, same seed), so each job is filled by both, neither, or one policy only. Only the
    last kind can tell the policies apart; McNemar's exact test says how likely a split at
    least as uneven would be if each of those jobs had gone either way at even odds (a
    two-sided p: near 1, the difference is what chance alone gives)."""
    pairs = list(zip(filled_in_order(nearest), filled_in_order(likely), strict=True))
    only_nearest = sum(n and not lk for n, lk in pairs)
    only_likely = sum(lk and not n for n, lk in pairs)
    return {
        "jobs": len(pairs),
        "only_nearest": only_nearest,
        "only_likely": only_likely,
        "p": mcnemar_exact(only_nearest, only_likely),
    }


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p for b and c discordant pairs (a binomial test at 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


WARM_UP_S = 1200.0  # the later view: jobs posted after the first twenty minutes


def after_warm_up(replay: Path, since: float = WARM_UP_S) -> dict[str, Any]:
    """Fill, time to accept and offers per filled job of the jobs posted after `since` city
    seconds, from the replay's events: what a policy that learns does once the city has had
    time to record something of each worker (lost races are not in the events)."""
    created: dict[str, float] = {}
    assigned: dict[str, float] = {}
    offers: dict[str, int] = defaultdict(int)
    for line in replay.read_text().splitlines()[1:]:
        event = json.loads(line)
        kind, job = event.get("type"), event.get("job_id")
        if kind == "job.created":
            created[job] = event["t"]
        elif kind == "job.assigned" and job not in assigned:
            assigned[job] = event["t"]
        elif kind == "offer.created":
            offers[job] += 1
    late = [j for j, t in created.items() if t >= since]
    filled = [j for j in late if j in assigned]
    waits = sorted(assigned[j] - created[j] for j in filled)
    p90 = waits[min(len(waits) - 1, int(0.9 * len(waits)))] if waits else None
    return {
        "jobs": len(late),
        "fill_rate": len(filled) / len(late) if late else None,
        "p90": p90,
        "offers_per_filled_job": sum(offers[j] for j in filled) / len(filled) if filled else None,
    }


def verdict(nearest: dict[str, Any], likely: dict[str, Any]) -> dict[str, bool]:
    return {
        "fill": likely["fill_rate"] >= nearest["fill_rate"],
        "p90": likely["time_to_accept_s"]["p90"] <= 0.8 * nearest["time_to_accept_s"]["p90"],
        "offers": likely["offers_per_filled_job"] <= nearest["offers_per_filled_job"],
        "races": likely["lost_races_per_filled_job"] <= nearest["lost_races_per_filled_job"],
        "clean": all(
            k["errors_5xx"] == 0 and k["violations"] == 0 and k["dead_letters"] == 0
            for k in (nearest, likely)
        ),
    }


# The rule that decides the default (issue 38), fixed before the runs: on every city, with a
# record and without (`_cold`: `--no-past`), every seed's jobs pooled, `likely` must have
# - a fill not lower than `nearest`'s by more than half a point, and McNemar's test on the jobs
#   only one policy filled not against it (not: `nearest` filled more of them at p < 0.05);
# - a p90 time to accept at most 0.8x `nearest`'s;
# - offers per filled job not higher.
# When it meets all three in every city, `likely` becomes the default; else `nearest` stays.
FILL_MARGIN = 0.005
P90_RATIO = 0.8
AGAINST_P = 0.05


def decide(
    nearest: dict[str, float], likely: dict[str, float], only: dict[str, int]
) -> dict[str, bool]:
    """The rule above on one city's pooled figures (`pooled`) and its jobs filled by one
    policy only (`only`, summed over the seeds' `paired_fill`)."""
    against = (
        only["nearest"] > only["likely"]
        and mcnemar_exact(only["nearest"], only["likely"]) < AGAINST_P
    )
    return {
        "fill": likely["fill_rate"] >= nearest["fill_rate"] - FILL_MARGIN and not against,
        "p90": likely["p90"] <= P90_RATIO * nearest["p90"],
        "offers": likely["offers_per_filled_job"] <= nearest["offers_per_filled_job"],
    }


def decision(verdicts: dict[str, dict[str, bool]]) -> str:
    """The evaluation's last line: which policy the rule makes the default, and if `nearest`,
    which city and measure kept it."""
    missed = [
        f"{city} {measure}"
        for city, measures in verdicts.items()
        for measure, met in measures.items()
        if not met
    ]
    if verdicts and not missed:
        cities = len(verdicts)
        return f"decision: likely becomes the default (it meets the rule in all {cities} cities)"
    return (
        "decision: nearest stays the default (likely misses: "
        + (", ".join(missed) or "no city evaluated")
        + ")"
    )


def row(k: dict[str, Any]) -> list[str]:
    t = k["time_to_accept_s"]
    return [
        f"{100 * k['fill_rate']:.1f}%",
        f"{t['p50']:.0f} / {t['p90']:.0f} / {t['p99']:.0f}",
        f"{k['offers_per_filled_job']:.2f}",
        f"{k['lost_races_per_filled_job']:.2f}",
        f"{k['errors_5xx']} / {k['violations']}",
        f"{100 * k['never_offered_share']:.0f}%",
        f"{k['gini_jobs_per_worker']:.2f}",
        f"${k['bill']['total']:.2f}",
        f"{k['lag_s']['p99']:.1f}",
    ]


HEADER = [
    "city, seed",
    "policy",
    "fill",
    "accept p50 / p90 / p99 (s)",
    "offers / filled",
    "lost races / filled",
    "5xx / violations",
    "online never offered",
    "Gini jobs/worker",
    "AWS per 1,000 filled",
    "behind p99 (s)",
]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def markdown(
    found: dict[str, dict[int, dict[str, dict[str, Any]]]],
    pools: dict[str, dict[str, dict[str, float]]] | None = None,
) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * 2 + " ---: |" * 9]
    summary = ["", "| city | seeds won | fill | p90 ratio | offers | lost races | clean |",
               "| --- | ---: | --- | ---: | --- | --- | --- |"]  # fmt: skip
    costs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for city, seeds in found.items():
        wins: list[dict[str, bool]] = []
        ratios = []
        for seed, by_policy in sorted(seeds.items()):
            for policy in POLICIES:
                lines.append(f"| {city} {seed} | {policy} | " + " | ".join(row(by_policy[policy]))
                             + " |")  # fmt: skip
                for item, dollars in by_policy[policy]["bill"].items():
                    costs[f"{city} {policy}"][item].append(dollars)
                k = by_policy[policy]
                costs[f"{city} {policy}"]["total without RDS Proxy"].append(
                    k["bill_without_proxy"]["total"]
                )
                costs[f"{city} {policy}"]["busy environments (mean)"].append(k["busy_environments"])
            wins.append(verdict(by_policy["nearest"], by_policy["likely"]))
            ratios.append(
                by_policy["likely"]["time_to_accept_s"]["p90"]
                / by_policy["nearest"]["time_to_accept_s"]["p90"]
            )
        won = sum(all(w.values()) for w in wins)

        def tally(key: str, wins: list[dict[str, bool]] = wins) -> str:
            return f"{sum(w[key] for w in wins)}/{len(wins)}"

        summary.append(
            f"| {city} | {won}/{len(wins)} | {tally('fill')} | {mean(ratios):.2f}"
            f" ({tally('p90')} at most 0.8) | {tally('offers')} | {tally('races')} |"
            f" {tally('clean')} |"
        )
    title = f"Jobs posted after the first {WARM_UP_S / 60:.0f} minutes only (from the replays):"
    later = ["", title,
             "", "| city, seed | policy | jobs | fill | accept p90 (s) | offers / filled |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for city, seeds in found.items():
        for seed, by_policy in sorted(seeds.items()):
            for policy in POLICIES:
                k = by_policy[policy]["later"]
                later.append(
                    f"| {city} {seed} | {policy} | {k['jobs']} | {100 * (k['fill_rate'] or 0):.1f}%"
                    f" | {k['p90'] or 0:.0f} | {k['offers_per_filled_job'] or 0:.2f} |"
                )
    paired = ["", "Fill job by job (the same jobs in both runs; McNemar's exact test on the jobs"
              " only one policy filled):", "",
              "| city, seed | jobs | filled by nearest only | filled by likely only | p |",
              "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for city, seeds in found.items():
        for seed, by_policy in sorted(seeds.items()):
            k = by_policy["paired"]
            paired.append(
                f"| {city} {seed} | {k['jobs']} | {k['only_nearest']} | {k['only_likely']} |"
                f" {k['p']:.2f} |"
            )
    floors = [
        f"{city}: {'held' if floor_held(by['nearest'], by['likely']) else 'missed'}"
        for city, by in (pools or {}).items()
    ]
    together = ["", "Every seed's jobs together, per city (one sample of all its runs' jobs), and"
                " the rule that decides the default (`decide`):", "",
                "| city | policy | jobs | fill | filled by this one only | accept p90 (s) |"
                " offers / filled | lost races / filled | online never offered |"
                " meets the rule |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    verdicts = {}
    for city, by_policy in (pools or {}).items():
        only = {p: sum(k["paired"][f"only_{p}"] for k in found[city].values()) for p in POLICIES}
        chance = mcnemar_exact(only["nearest"], only["likely"])
        verdicts[city] = decide(by_policy["nearest"], by_policy["likely"], only)
        missed = [measure for measure, met in verdicts[city].items() if not met]
        for policy in POLICIES:
            k = by_policy[policy]
            met = "yes" if not missed else "no: " + ", ".join(missed)
            together.append(
                f"| {city} | {policy} | {k['jobs']} | {100 * k['fill_rate']:.1f}% |"
                f" {only[policy]} | {k['p90']:.0f} | {k['offers_per_filled_job']:.2f} |"
                f" {k['lost_races_per_filled_job']:.2f} |"
                f" {100 * k['never_offered_share']:.1f}% |"
                + (f" {met} (fill: p {chance:.2f}) |" if policy == "likely" else " |")
            )
    items = list(next(iter(costs.values())).keys()) if costs else []
    bill = ["", "AWS per 1,000 filled jobs (mean over the seeds; sim/prices.toml):", "",
            "| city, policy | " + " | ".join(items) + " |",
            "| --- |" + " ---: |" * len(items)]  # fmt: skip
    for name, per_item in costs.items():
        cells = [f"{mean(v):.2f}" if item.startswith("busy") else f"${mean(v):.3f}"
                 for item, v in per_item.items()]  # fmt: skip
        bill.append(f"| {name} | " + " | ".join(cells) + " |")
    ending = [
        "",
        f"Fairness floor (online never offered at most {100 * NEVER_OFFERED_MARGIN:.0f} points"
        " above nearest's): " + ("; ".join(floors) or "no city"),
        "",
        decision(verdicts),
    ]
    return "\n".join(lines + summary + together + paired + later + bill + ending) + "\n"


DOCS_HEADING = "#### The latest evaluation (written by `make evaluate-policy`)"


def write_docs(text: str, seeds: list[int], docs: Path) -> None:
    """The evaluation's tables into `docs` (docs/simulation.md) under DOCS_HEADING, in place of
    what was there (up to the next heading of any level), or at the end when it is not there
    yet: the table in the docs is the one the last `make evaluate-policy` wrote."""
    body = [
        DOCS_HEADING,
        "",
        f"Seeds {', '.join(str(seed) for seed in seeds)}; from `sim/runs/eval/evaluation.md`.",
        "",
        *text.rstrip("\n").splitlines(),
        "",
    ]
    lines = docs.read_text().splitlines()
    if DOCS_HEADING in lines:
        start = lines.index(DOCS_HEADING)
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines)
        )
    else:
        start = end = len(lines)
    docs.write_text("\n".join([*lines[:start], *body, *lines[end:]]) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sim.evaluate", description=__doc__)
    parser.add_argument("folder", type=Path, nargs="?", default=Path("sim/runs/eval"))
    parser.add_argument("--docs", type=Path, help="also write the tables into this file")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    found = runs(args.folder)
    pools = {city: pooled(args.folder, city, seeds) for city, seeds in found.items()}
    text = markdown(found, pools)
    (args.folder / "evaluation.md").write_text(text)
    if args.docs is not None:
        seeds = sorted({seed for by_seed in found.values() for seed in by_seed})
        write_docs(text, seeds, args.docs)
    print(text)


if __name__ == "__main__":
    main()
