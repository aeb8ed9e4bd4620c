"""Pages in a real browser: Debian's headless Chromium driven by Playwright (its own driver,
never a downloaded browser), against the local stack. `make browser` installs Chromium when it
is missing; `make test` runs it first.

Every page records what it printed to the console and every request it made: a request to
any host but the stack's is refused and fails the test (no page loads anything from another
host), and so does a console error.
"""

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, Route, sync_playwright

CHROMIUM = os.environ.get("DISPATCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# As a probe of this machine found: without the background-networking flags Chromium keeps
# reaching for Google's hosts, which the closed network refuses.
FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# ms: how long a page may take to show a change. The suite checks what a page shows and by
# which path (socket or poll), never how fast: on a loaded machine a bound of a second or two
# failed CI and proved nothing (`make bench-push` measures the push path's delay).
WAIT = 15_000


@pytest.fixture(scope="session")
def database_url(stack_database_url: str) -> str:
    return stack_database_url


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    assert os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}: run `make browser`"
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    yield chromium
    chromium.close()


LOOPBACK = {"127.0.0.1", "localhost"}  # this machine: the local stacks, whatever their port


@dataclass
class Visit:
    """What a page did: console errors, and requests that would leave the machine."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert not self.elsewhere, f"requests to other hosts: {self.elsewhere}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


@pytest.fixture
def visit(browser: Browser, stack: str) -> Iterator[Visit]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    seen = Visit(page)

    def only_the_stack(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname in LOOPBACK:
            route.continue_()
        else:
            seen.elsewhere.append(url)
            route.abort()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            seen.console_errors.append(message.text)

    page.route("**/*", only_the_stack)
    page.on("console", on_console)
    page.on("pageerror", lambda error: seen.console_errors.append(str(error)))
    yield seen
    context.close()
