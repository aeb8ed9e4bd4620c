"""Two processes that start the same folder's embedded Postgres at once (`make -j2
evaluate-reporting` on a fresh clone, each run starting the simulator's server) both get it:
one inits and starts it, the other finds it running. Before the lock, one of them read the
other's half-written postmaster.pid and died."""

import subprocess
import sys
import time
from pathlib import Path

import psutil

STARTER = """
import sys, time
from pathlib import Path
import psycopg
from dispatch_local import embedded

go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
url = embedded.postgres(Path(sys.argv[1]), database="race")
with psycopg.connect(url) as conn:
    print(conn.execute("SELECT current_database()").fetchone()[0])
"""


def test_two_processes_starting_one_folders_server_at_once_both_get_it(tmp_path: Path) -> None:
    folder, go = tmp_path / "home" / "pg", tmp_path / "go"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER, str(folder), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    time.sleep(1.0)  # all three importing, then waiting for the file (released at once)
    go.touch()
    results = [starter.communicate(timeout=120) for starter in starters]
    for starter, (out, err) in zip(starters, results, strict=True):
        assert starter.returncode == 0, err[-2000:]
        assert out.strip() == "race"
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(folder) in " ".join(p.info["cmdline"] or [])
    ]
    assert not leftovers, "the last user's exit stops the server"
