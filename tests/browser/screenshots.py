"""Screenshots of the console for the docs: the simulated district replayed, paused mid-rush,
at a desk's size and at a phone's. `make screenshots` (after `make simulate`).

    python -m tests.browser.screenshots sim/runs/district/replay-seed-waves.jsonl docs/
"""

import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from dispatch_local import tokens
from dispatch_local.stack import start_stack, stop_stack
from tests.browser.conftest import CHROMIUM, FLAGS

PLAY_SECONDS = 6  # at 300x: about half an hour of the city


def main(replay: Path, out: Path) -> None:
    import os

    from tests.conftest import create_database, drop_database

    admin = os.environ.get("DATABASE_URL") or ""
    home = Path(tempfile.mkdtemp(prefix="screenshots-"))
    if not admin:
        from dispatch_local import embedded

        admin = embedded.postgres(home / "pg", database="postgres")
    database = create_database(admin)
    url, process = start_stack(database, home)
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for name, size in (("console.png", (1280, 800)), ("console-phone.png", (390, 844))):
                page = browser.new_page(viewport={"width": size[0], "height": size[1]})
                page.goto(f"{url}/console#token={tokens.issue('ops-docs', 'ops')}")
                page.wait_for_selector("#summary div")
                page.select_option("#replay-speed", "300")
                page.set_input_files("#replay-file", str(replay))
                time.sleep(PLAY_SECONDS)
                page.click("#replay-pause")
                page.screenshot(path=str(out / name), full_page=name.endswith("phone.png"))
                page.close()
            browser.close()
    finally:
        stop_stack(process)
        drop_database(admin, database)
    print(f"wrote {out / 'console.png'} and {out / 'console-phone.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
