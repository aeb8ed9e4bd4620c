"""`dispatch simulate` as a newcomer runs it: no DATABASE_URL, REDIS_URL or AWS stand-in set,
so it starts embedded ones itself (a fresh clone once failed here: no .dispatch/sim folder,
and settings that asked for a database before any run had named one)."""

import os
import subprocess
import sys
from pathlib import Path

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
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = [line for line in done.stdout.splitlines() if " jobs, fill " in line]
    assert len(summary) == 1 and "5xx 0, 0 violations" in summary[0], done.stdout
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| fill rate (assigned at least once) |" in report
    assert (tmp_path / "out" / "time-to-accept.png").read_bytes().startswith(b"\x89PNG")
