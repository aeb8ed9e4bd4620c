"""`dispatch simulate` as a newcomer runs it: no DATABASE_URL, REDIS_URL or AWS stand-in set,
so it starts embedded ones itself (a fresh clone once failed here: no .dispatch/sim folder,
and settings that asked for a database before any run had named one). It says how it goes
while it runs, leaves no server behind, and its plots draw the report's own numbers."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from dispatch_local import REPO_ROOT

SERVICES = (
    "DATABASE_URL",
    "DATABASE_OWNER_URL",
    "REDIS_URL",
    "REDIS_CLUSTER",
    "AWS_ENDPOINT_URL",
    "OUTBOX_QUEUE_URL",
    "OFFER_QUEUE_URL",
)


def servers_under(folder: Path) -> list[str]:
    """Processes still running whose working folder or command line is inside `folder`."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        text = " ".join([process.info["cwd"] or "", *(process.info["cmdline"] or [])])
        if str(folder) in text:
            found.append(text)
    return found


def test_a_small_town_simulates_on_embedded_services_alone(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in SERVICES}
    environment["DISPATCH_HOME"] = str(tmp_path / "home")  # nothing made there yet
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "dispatch"),
            "simulate",
            str(REPO_ROOT / "sim" / "scenarios" / "tiny.toml"),
            "--out",
            str(tmp_path / "out"),
            "--progress-seconds",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not servers_under(tmp_path / "home"), "the simulation left servers running"
    assert "XDG_RUNTIME_DIR" not in done.stderr
    summary = [line for line in done.stdout.splitlines() if " jobs, fill " in line]
    assert len(summary) == 1 and "5xx 0, 0 violations" in summary[0], done.stdout
    progress = [
        line for line in done.stdout.splitlines() if line.startswith("  as configured: city ")
    ]
    assert len(progress) >= 3, done.stdout  # about 30 s of wall time, a line every 5 s
    for line in progress:
        assert "x real time" in line and "requests/s" in line and " filled" in line, line

    out = tmp_path / "out"
    report = (out / "report.md").read_text()
    assert "| fill rate (assigned at least once) |" in report
    for plot in ("time-to-accept.png", "filled-over-time.png", "unfilled-map.png"):
        assert (out / plot).read_bytes().startswith(b"\x89PNG")
    kpis = json.loads((out / "kpis-as-configured.json").read_text())
    plots = json.loads((out / "plots.json").read_text())
    drawn = plots["runs"]["as configured"]
    posted = {fate: sum(counts) for fate, counts in drawn["posted_per_bin"].items()}
    assert sum(posted.values()) == kpis["jobs"]
    assert posted["filled"] == round(kpis["fill_rate"] * kpis["jobs"])
    assert posted["unfilled"] == round(kpis["unfilled_rate"] * kpis["jobs"])
    assert {k: posted[k] for k in kpis["not_filled"]} == kpis["not_filled"]
    assert {fate: len(points) for fate, points in drawn["where"].items()} == posted
    assert len(drawn["bin_start_hours"]) >= 6  # the whole quarter hour, not one point
    waiting = kpis["not_filled"]
    assert f"| {waiting['cancelled']} / {waiting['expired']} / {waiting['waiting']} |" in report


def test_simulate_explains_itself() -> None:
    for asked in (["--help"], ["-h"]):
        shown = subprocess.run(
            [sys.executable, "-m", "dispatch_local.cli", "simulate", *asked],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        assert "usage: dispatch simulate" in shown.stdout and "--speed" in shown.stdout
    bare = subprocess.run(
        [sys.executable, "-m", "dispatch_local.cli", "simulate"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bare.returncode == 2
    assert "usage: dispatch simulate" in bare.stderr and "scenario" in bare.stderr
