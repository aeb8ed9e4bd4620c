"""What a run writes: report.md (the figures of every configuration side by side), PNG plots,
and a replay file per configuration (every event and position frame with its city time) that
the operations console plays back."""

import json
from pathlib import Path
from typing import Any

from sim.run import Outcome
from sim.scenario import Scenario
from sim.state import FATES, fate


def reporting(scenario: Scenario) -> str:
    """How the run's workers report where they are, in a few words."""
    workers = scenario.workers
    if workers.reporting == "interval":
        return f"reporting every {workers.report_seconds:g} s"
    return f"reporting by the rule ({workers.rule.metres:g} m or {workers.rule.seconds:g} s)"


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "run"


def write(scenario: Scenario, outcomes: list[Outcome], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for outcome in outcomes:
        name = slug(outcome.dispatch.name)
        with (out / f"replay-{name}.jsonl").open("w") as replay:
            replay.write(json.dumps(header(scenario, outcome)) + "\n")
            for line in sorted(outcome.replay, key=lambda e: e["t"]):
                replay.write(json.dumps(line) + "\n")
        (out / f"kpis-{name}.json").write_text(json.dumps(outcome.kpis, indent=2))
    plots = draw(scenario, outcomes, out)
    report = out / "report.md"
    report.write_text(markdown(scenario, outcomes, plots))
    return report


def header(scenario: Scenario, outcome: Outcome) -> dict[str, Any]:
    """The replay's first line: what the console needs to draw the city."""
    return {
        "type": "replay",
        "scenario": scenario.name,
        "dispatch": outcome.dispatch.name,
        "seconds": scenario.seconds,
        "speed": scenario.speed,
        "epoch0": outcome.extra.get("epoch0"),  # the wall clock (Unix time) at the city's 0
        "border": [list(p) for p in scenario.area.border],
        "zones": [z.model_dump() for z in scenario.area.zones],
    }


def fmt(value: Any, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return f"{value:,}{unit}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


ROWS: list[tuple[str, Any]] = [
    ("jobs posted", lambda k: fmt(k["jobs"])),
    ("fill rate (assigned at least once)", lambda k: pct(k["fill_rate"])),
    ("unfilled (every wave passed, nobody took it)", lambda k: pct(k["unfilled_rate"])),
    ("not filled otherwise: cancelled first / window ended first / still waiting at the end",
     lambda k: f"{k['not_filled']['cancelled']} / {k['not_filled']['expired']} / "
               f"{k['not_filled']['waiting']}"),
    ("completed / cancelled by the business / expired", lambda k: (
        f"{k['completed']} / {k['cancelled']} / {k['expired']}"
    )),
    ("time to first offer p50 / p90 / p99 (s)", lambda k: trio(k["time_to_first_offer_s"])),
    ("time to accept p50 / p90 / p99 (s)", lambda k: trio(k["time_to_accept_s"])),
    ("offers per filled job", lambda k: fmt(k["offers_per_filled_job"], digits=2)),
    ("lost accept races per filled job", lambda k: fmt(k["lost_races_per_filled_job"], digits=2)),
    ("declines", lambda k: fmt(k["declines"])),
    ("leases that ran out", lambda k: fmt(k["leases_run_out"])),
    ("time to fill again after a lease ran out p50 (s)", lambda k: fmt(
        k["time_to_fill_again_s"]["p50"]
    )),
    ("winner's distance p50 / p90 (m)", lambda k: (
        f"{fmt(k['winner_distance_m']['p50'], digits=0)} / "
        f"{fmt(k['winner_distance_m']['p90'], digits=0)}"
    )),
    ("nearest idle qualified worker at creation p50 (m)", lambda k: fmt(
        k["nearest_idle_at_creation_m"]["p50"], digits=0
    )),
    ("winner / nearest idle p50 / p90", lambda k: (
        f"{fmt(k['winner_over_nearest']['p50'], digits=2)} / "
        f"{fmt(k['winner_over_nearest']['p90'], digits=2)}"
    )),
    ("assigned worker's rating at assignment mean / p50 (rated share)", lambda k: (
        f"{fmt(k.get('assignee_rating_mean'), digits=2)} / "
        f"{fmt(k.get('assignee_rating_p50'), digits=2)} ({pct(k.get('assignee_rated_share'))})"
    )),
    ("worker utilisation", lambda k: pct(k["utilisation"])),
    ("online workers never offered a job", lambda k: pct(k.get("never_offered_share"))),
    ("Gini of jobs per online worker / of offers", lambda k: (
        f"{fmt(k.get('gini_jobs_per_worker'), digits=2)} / "
        f"{fmt(k.get('gini_offers_per_worker'), digits=2)}"
    )),
    ("position messages on sockets / offers pulls with the position / stream batches",
     lambda k: (
        f"{k['aws']['positions']['socket_messages']:,} /"
        f" {k['aws']['positions']['reads_with_position']:,} /"
        f" {k['aws']['invocations'].get('PositionStream', 0):,}"
    )),
    ("requests / 5xx / dead letters", lambda k: (
        f"{k['requests']:,} / {k['errors_5xx']} / {k['dead_letters']}"
    )),
    ("speed (x real time) / wall seconds", lambda k: (
        f"{fmt(k['speed'])} / {fmt(k['wall_seconds'], digits=0)}"
    )),
    ("requests per second (wall)", lambda k: fmt(k["requests_per_second"], digits=0)),
    ("behind schedule p99 / max (city s)", lambda k: (
        f"{fmt(k['lag_s']['p99'])} / {fmt(k['lag_s']['max'])}"
    )),
]  # fmt: skip


def trio(p: dict[str, float | None]) -> str:
    return " / ".join(fmt(p[q], digits=0) for q in ("p50", "p90", "p99"))


def pair(p: dict[str, float | None], digits: int = 1) -> str:
    return f"{fmt(p['p50'], digits=digits)} / {fmt(p['p90'], digits=digits)}"


PUSH_ROWS: list[tuple[str, Any]] = [
    ("phones with a socket: sampled / connected", lambda p: f"{p['sample']} / {p['connected']}"),
    ("offers to them: made / received on the phone / lost", lambda p: (
        f"{p['offers']:,} / {p['heard']:,} / {p['lost']:,}"
    )),
    ("push delay measured, commit to device, p50 / p90 / p99 / max (ms)", lambda p: (
        f"{fmt(p['delay_ms']['p50'], digits=0)} / {fmt(p['delay_ms']['p90'], digits=0)} / "
        f"{fmt(p['delay_ms']['p99'], digits=0)} / {fmt(p['delay_ms']['max'], digits=0)}"
    )),
    ("time to first offer seen on a device p50 / p90 (s; jobs)", lambda p: (
        f"{pair(p['first_offer_seen_s'])} ({p['jobs_seen']})"
    )),
    ("the rest: delay p50 / p90 (s); drawn from the measured / the model", lambda p: (
        f"{pair(p['rest']['delay_s'], digits=2)}; {p['rest']['from_measured']:,} /"
        f" {p['rest']['from_model']:,}"
    )),
    ("the rest: time to first offer heard p50 / p90 (s); lost (modelled)", lambda p: (
        f"{pair(p['rest']['first_offer_heard_s'])}; {p['rest']['lost']:,}"
    )),
    ("the model: notify_seconds / push_lost", lambda p: (
        f"{p['model']['notify_seconds'][0]:g}-{p['model']['notify_seconds'][1]:g} s /"
        f" {pct(p['model']['push_lost'])}"
    )),
]  # fmt: skip


def push_section(outcomes: list[Outcome]) -> list[str]:
    """The push sample (sim/push.py): what its sockets measured, beside the model."""
    if not outcomes:
        return []
    lines = [
        "",
        "## Push over real sockets",
        "",
        "A seeded sample of the workers held a WebSocket to the product's push path (the bus's"
        " push rule, the sender, the poster, the management API, the local WebSocket API) and"
        " heard each offer when their socket received it: its commit plus the delay measured"
        " (wall seconds, counted as the city's: the path is not slowed by the speed). The"
        " rest heard after a delay drawn from the sample's (the model's `notify_seconds`"
        " until the sample had measured enough) and lost the model's share.",
        "",
        "| | " + " | ".join(o.dispatch.name for o in outcomes) + " |",
        "| --- |" + " ---: |" * len(outcomes),
    ]
    for label, cell in PUSH_ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(o.kpis["push"]) for o in outcomes) + " |")
    return lines


def markdown(scenario: Scenario, outcomes: list[Outcome], plots: list[str]) -> str:
    names = [o.dispatch.name for o in outcomes]
    lines = [
        f"# Simulation: {scenario.name}",
        "",
        f"Seed {scenario.seed}; {scenario.hours:g} h of the city at {scenario.speed:g}x real "
        f"time; {scenario.workers.count:,} workers {reporting(scenario)};"
        f" {scenario.jobs.per_hour:g} jobs an hour "
        f"(profile {scenario.jobs.hourly_profile}). The same world (arrivals, workers, their "
        "habits) for every configuration; only the dispatch differs.",
        "",
        "| | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
        "| offer policy | " + " | ".join(o.dispatch.offer_policy for o in outcomes) + " |",
        "| offer waves (size@radius m) | "
        + " | ".join(o.dispatch.offer_waves for o in outcomes)
        + " |",
    ]
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(o.kpis) for o in outcomes) + " |")
    lines += push_section([o for o in outcomes if "push" in o.kpis])
    lines += ["", "## The history checker", ""]
    for outcome in outcomes:
        found = outcome.violations
        verdict = "0 violations" if not found else f"{len(found)} violations: {found[:5]}"
        lines.append(f"- {outcome.dispatch.name}: {verdict}")
    lines += ["", "## Requests by route and status", ""]
    for outcome in outcomes:
        lines.append(f"**{outcome.dispatch.name}**: " + "; ".join(
            f"`{route}` " + ", ".join(f"{status}: {n:,}" for status, n in statuses.items())
            for route, statuses in outcome.requests.items()
        ))  # fmt: skip
        lines.append("")
    lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines)


# -- the plots, and the data behind them (written beside them as plots.json) ---------------

# Jobs over the run: 10-minute bins, but never fewer than 6 nor more than 48 (a short run
# once drew a single point, its axis 0.080 to 0.086 h), each the same width.
LEAST_BINS, MOST_BINS = 6, 48


def bin_count(seconds: float) -> int:
    return min(MOST_BINS, max(LEAST_BINS, round(seconds / 600)))


def plot_data(scenario: Scenario, outcomes: list[Outcome]) -> dict[str, Any]:
    """Every number the plots draw, by configuration: the report's own figures (the fates of
    the jobs add up to the jobs posted; fill and unfilled rates are the table's)."""
    bins = bin_count(scenario.seconds)
    width = scenario.seconds / bins
    data: dict[str, Any] = {"hours": scenario.hours, "bin_minutes": width / 60, "runs": {}}
    for o in outcomes:
        per_bin = {f: [0] * bins for f in FATES}
        points: dict[str, list[list[float]]] = {f: [] for f in FATES}
        for j in o.jobs:
            b = min(bins - 1, max(0, int(j["created"] // width)))
            per_bin[fate(j)][b] += 1
            points[fate(j)].append([j["lat"], j["lng"]])
        data["runs"][o.dispatch.name] = {
            "bin_start_hours": [b * width / 3600 for b in range(bins)],
            "posted_per_bin": per_bin,
            "where": points,
            "time_to_accept_s": sorted(
                j["time_to_accept"] for j in o.jobs if j["time_to_accept"] is not None
            ),
            "jobs": len(o.jobs),
        }
    return data


def draw(scenario: Scenario, outcomes: list[Outcome], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = plot_data(scenario, outcomes)
    (out / "plots.json").write_text(json.dumps(data))
    drawn = []
    # Time to accept, per configuration (cumulative share of all jobs posted).
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, run in data["runs"].items():
        times = run["time_to_accept_s"]
        if times:
            ax.step(times, [(i + 1) / run["jobs"] for i in range(len(times))], label=name)
    ax.set_xlabel("seconds from posting to accept")
    ax.set_ylabel("share of all jobs filled by then")
    ax.set_xscale("symlog", linthresh=10)
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("Time to accept")
    fig.tight_layout()
    fig.savefig(out / "time-to-accept.png", dpi=110)
    plt.close(fig)
    drawn.append("time-to-accept.png")

    # Jobs posted over the run and what became of them, per configuration.
    fig, ax = plt.subplots(figsize=(7, 4))
    width_h = data["bin_minutes"] / 60
    for n, (name, run) in enumerate(data["runs"].items()):
        centres = [start + width_h / 2 for start in run["bin_start_hours"]]
        filled = run["posted_per_bin"]["filled"]
        rest = [run["posted_per_bin"][f] for f in FATES if f != "filled"]
        others = [sum(column) for column in zip(*rest, strict=True)]
        colour = f"C{n}"
        ax.plot(centres, filled, marker="o", color=colour, label=f"{name}: filled")
        ax.plot(centres, others, marker="x", linestyle="--", color=colour,
                label=f"{name}: not filled")  # fmt: skip
    ax.set_xlim(0, data["hours"])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("hours into the run (city time)")
    ax.set_ylabel(f"jobs posted per {data['bin_minutes']:g} minutes")
    ax.legend(fontsize=7)
    ax.set_title("Jobs posted over the run, filled or not")
    fig.tight_layout()
    fig.savefig(out / "filled-over-time.png", dpi=110)
    plt.close(fig)
    drawn.append("filled-over-time.png")

    # Where jobs were and were not filled (the first configuration), inside the city's border.
    name, run = next(iter(data["runs"].items()))
    fig, ax = plt.subplots(figsize=(6, 6))
    border = [*scenario.area.border, scenario.area.border[0]]
    ax.plot([p[1] for p in border], [p[0] for p in border], color="grey", linewidth=1)
    styles: dict[str, dict[str, Any]] = {
        "filled": {"s": 6, "alpha": 0.4},
        "unfilled": {"s": 18, "marker": "x", "color": "crimson"},
        "cancelled": {"s": 18, "marker": "^", "color": "darkorange"},
        "expired": {"s": 18, "marker": "v", "color": "purple"},
        "waiting": {"s": 18, "marker": "o", "facecolors": "none", "edgecolors": "dimgrey"},
    }
    for kind, points in run["where"].items():
        ax.scatter([p[1] for p in points], [p[0] for p in points],
                   label=f"{FATES[kind]}: {len(points)}", **styles[kind])  # fmt: skip
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("longitude (degrees)")
    ax.set_ylabel("latitude (degrees)")
    ax.set_title(f"Where jobs were filled or not ({name})")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "unfilled-map.png", dpi=110)
    plt.close(fig)
    drawn.append("unfilled-map.png")

    if len(outcomes) > 1:
        fig, ax = plt.subplots(figsize=(6, 4))
        for o in outcomes:
            p50 = o.kpis["time_to_accept_s"]["p50"]
            if p50 is not None and o.kpis["fill_rate"] is not None:
                ax.scatter([p50], [100 * o.kpis["fill_rate"]], s=40)
                ax.annotate(o.dispatch.name, (p50, 100 * o.kpis["fill_rate"]), fontsize=8)
        ax.set_xlabel("time to accept p50 (s)")
        ax.set_ylabel("fill rate (%)")
        ax.set_title("Fill rate against time to accept, per configuration")
        fig.tight_layout()
        fig.savefig(out / "fill-vs-time.png", dpi=110)
        plt.close(fig)
        drawn.append("fill-vs-time.png")
    return drawn
