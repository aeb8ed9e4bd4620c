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


def test_the_docs_group_routes_explain_sign_in_and_post_a_job_from_the_example(
    visit: Visit, stack: str
) -> None:
    """A newcomer's way through /docs: routes grouped by tag, the Authorize dialog says where
    a token comes from, and POST /jobs tried as it stands (its example) answers 201."""
    from dispatch_local import tokens

    document = requests.get(f"{stack}/openapi.json", timeout=10).json()
    page = visit.page
    page.goto(f"{stack}/docs")
    page.wait_for_selector(".opblock", timeout=15_000)
    shown = [
        t.strip() for t in page.locator(".opblock-tag-section h3 .nostyle span").all_inner_texts()
    ]
    assert shown == [tag["name"] for tag in document["tags"]]
    assert page.locator(".opblock-tag", has_text="default").count() == 0

    page.locator(".btn.authorize").first.click()
    dialog = page.locator(".dialog-ux")
    assert "dispatch token --sub" in dialog.inner_text()
    dialog.locator("input").first.fill(tokens.issue("biz-docs", "business"))
    dialog.locator("button.modal-btn.authorize").click()
    dialog.locator("button.btn-done").click()

    post = page.locator(".opblock-post", has_text="/jobs").filter(has_text="Post a job")
    post.locator(".opblock-summary").click()
    post.get_by_role("button", name="Try it out").click()
    post.get_by_role("button", name="Execute").click()
    status = post.locator(".live-responses-table .response .response-col_status")
    status.first.wait_for(timeout=15_000)
    assert status.first.inner_text().strip() == "201"
    visit.assert_clean()
