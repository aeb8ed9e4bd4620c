"""`/`, a newcomer's first click, in a real browser: a small page of the stack itself (nothing
from another host, no console error, a favicon that loads) whose links all lead somewhere."""

from playwright.sync_api import Page, expect

from tests.browser.conftest import Visit

LINKS = {
    "/docs": "API documentation",
    "/openapi.json": "OpenAPI document",
    "/asyncapi.json": "AsyncAPI document",
    "/console": "Operations console",
}


def test_the_home_page_links_the_docs_the_console_and_the_event_contract(
    visit: Visit, stack: str
) -> None:
    page = visit.page
    answer = page.goto(f"{stack}/")
    assert answer is not None and answer.status == 200
    assert answer.headers["content-type"].startswith("text/html")
    expect(page.locator("h1")).to_contain_text("Dispatch")
    for path, text in LINKS.items():
        link = page.get_by_role("link", name=text)
        expect(link).to_have_attribute("href", path)
    assert_icon_loads(page, stack)
    visit.assert_clean()

    for path in LINKS:
        page.goto(f"{stack}/")
        with page.expect_navigation():
            page.locator(f'a[href="{path}"]').click()
        assert page.url == f"{stack}{path}"
    visit.assert_clean()


def assert_icon_loads(page: Page, stack: str) -> None:
    """The page's icon is one the stack serves (a headed browser asks for it by itself; a
    missing one was a console error there), and so is the /favicon.ico browsers assume."""
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href is not None
    for path in {href, "/favicon.ico"}:
        icon = page.request.get(f"{stack}{path}")
        assert icon.status == 200, (path, icon.status)
        assert icon.headers["content-type"] == "image/svg+xml"
        assert icon.body().startswith(b"<svg")


def test_the_api_docs_have_an_icon_too(visit: Visit, stack: str) -> None:
    visit.page.goto(f"{stack}/docs")
    assert_icon_loads(visit.page, stack)


def test_the_console_brings_its_own_icon(visit: Visit, stack: str) -> None:
    """The console is served by a function, in AWS too, where the API has no /favicon.ico:
    its icon is inline, so the browser asks the API for none."""
    page = visit.page
    page.goto(f"{stack}/console")
    page.wait_for_selector("#summary div", timeout=10_000)
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href is not None and href.startswith("data:image/svg+xml,")
    visit.assert_clean()
