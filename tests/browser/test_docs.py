"""/docs in a real browser: Swagger UI from the stack itself (no CDN), every operation of the
served OpenAPI document listed, and one of them tried for real."""

import requests

from tests.browser.conftest import Visit


def test_the_api_docs_work_offline_and_try_a_route(visit: Visit, stack: str) -> None:
    document = requests.get(f"{stack}/openapi.json", timeout=10).json()
    operations = sum(len(methods) for methods in document["paths"].values())

    page = visit.page
    page.goto(f"{stack}/docs")
    page.wait_for_selector(".opblock", timeout=15_000)
    visit.assert_clean()
    assert page.locator(".opblock").count() == operations

    health = page.locator(".opblock-get", has_text="/health")
    health.locator(".opblock-summary").click()
    health.get_by_role("button", name="Try it out").click()
    health.get_by_role("button", name="Execute").click()
    status = health.locator(".live-responses-table .response .response-col_status")
    status.first.wait_for(timeout=15_000)
    assert status.first.inner_text().strip() == "200"
    assert (
        '"status": "ok"' in health.locator(".live-responses-table .microlight").first.inner_text()
    )
    visit.assert_clean()
