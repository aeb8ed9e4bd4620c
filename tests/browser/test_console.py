"""The operations console in a real browser, against `make dev`'s stack: live within two
seconds of a change made through the API, nothing from another host, nothing shown without
an ops token; usable at 1280 x 800 and at a phone's width; replays a simulation."""

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from dispatch_local import tokens
from tests.browser.conftest import WAIT, Visit
from tests.e2e.client import Client
from tests.support import job_body


def open_console(page: Page, stack: str, token: str | None) -> None:
    fragment = f"#token={token}" if token else ""
    page.goto(f"{stack}/console?bbox=77.45,12.85,77.75,13.1{fragment}")
    page.wait_for_selector("#summary div", timeout=10_000)


def ops_token() -> str:
    return tokens.issue("ops-console", "ops")


def marker(page: Page, job_id: str) -> Any:
    return page.locator(f'#jobs [data-job="{job_id}"]')


def test_the_live_marketplace_on_the_map(visit: Visit, stack: str) -> None:
    page = visit.page
    open_console(page, stack, ops_token())
    expect(page.locator("#mode")).to_have_text("Live")

    business = Client(stack, "biz-console", "business")
    washer = Client(stack, "washer-console", "worker")
    washer.send("PUT", "/workers/me", {"skills": ["wash"]})
    assert (
        washer.send("PUT", "/workers/me/location", {"lat": 12.98, "lng": 77.6}).status_code == 204
    )
    expect(page.locator('#workers [data-worker="washer-console"]')).to_have_count(1, timeout=WAIT)
    expect(page.locator('#workers [data-worker="washer-console"]')).to_have_class("worker-dot idle")

    job = business.send("POST", "/jobs", job_body(["wash"], lat=12.9716, lng=77.5946)).json()
    expect(marker(page, job["id"])).to_have_attribute("data-status", "open", timeout=WAIT)
    expect(marker(page, job["id"]).locator("title")).to_contain_text("open")
    expect(page.locator("#open-jobs")).to_contain_text(job["id"][-6:])
    # The worker standing 1 km away is offered it: the wave is drawn around the job.
    expect(page.locator(f'#waves [data-job="{job["id"]}"]')).to_have_count(1, timeout=WAIT)

    assert washer.send("POST", f"/jobs/{job['id']}/accept", {}).status_code == 200
    expect(marker(page, job["id"])).to_have_attribute("data-status", "assigned", timeout=WAIT)
    lease = page.locator("#leases li", has_text=job["id"][-6:])
    expect(lease).to_contain_text("left", timeout=WAIT)  # counting down from ten minutes
    first = lease.inner_text()
    page.wait_for_timeout(1500)
    assert lease.inner_text() != first, "the countdown moves"
    expect(page.locator("#events")).to_contain_text("job.assigned")
    visit.assert_clean()


def test_a_lease_that_runs_out_shows_the_job_open_again(
    visit: Visit, short_lease_stack: str
) -> None:
    page = visit.page
    stack = short_lease_stack
    open_console(page, stack, ops_token())
    business = Client(stack, "biz-lease-console", "business")
    silent = Client(stack, "silent-console", "worker")
    silent.send("PUT", "/workers/me", {"skills": ["wash"]})
    job = business.send("POST", "/jobs", job_body(["wash"])).json()
    assert silent.send("POST", f"/jobs/{job['id']}/accept", {}).status_code == 200
    expect(marker(page, job["id"])).to_have_attribute("data-status", "assigned", timeout=WAIT)
    lease = page.locator("#leases li", has_text=job["id"][-6:])
    expect(lease).to_have_class("late", timeout=WAIT)  # three seconds: under a minute, red
    # Three seconds of lease, a sweep every second: open again, and the business heard.
    expect(marker(page, job["id"])).to_have_attribute("data-status", "open", timeout=WAIT)
    expect(page.locator("#events")).to_contain_text("job.reopened")
    visit.assert_clean()


@pytest.mark.parametrize("who", ["nobody", "a worker"])
def test_without_an_ops_token_the_page_shows_no_data(visit: Visit, stack: str, who: str) -> None:
    page = visit.page
    business = Client(stack, "biz-hidden", "business")
    business.send("POST", "/jobs", job_body())
    token = None if who == "nobody" else tokens.issue("curious-worker", "worker")
    open_console(page, stack, token)
    expect(page.locator("#notice")).to_contain_text("needs an ops sign-in", timeout=WAIT)
    page.wait_for_timeout(2500)  # every poll had its chance
    assert page.locator("#jobs > *").count() == 0
    assert page.locator("#workers > *").count() == 0
    assert page.locator("#events li").count() == 0
    assert page.locator("#open-jobs li").count() == 0
    assert not visit.elsewhere


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_usable_on_a_desk_and_on_a_phone_and_by_keyboard(
    visit: Visit, stack: str, width: int, height: int
) -> None:
    page = visit.page
    page.set_viewport_size({"width": width, "height": height})
    open_console(page, stack, ops_token())
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{overflow} px wider than the screen"
    box = page.locator("#map").bounding_box()
    assert box is not None and box["width"] > (0.45 if width > 900 else 0.85) * width
    focused = []
    for _ in range(8):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.id || document.activeElement.tagName"))
    assert {"zoom-in", "zoom-out", "replay-file", "map"} <= set(focused), focused
    page.locator("#map").focus()
    before = page.url
    page.keyboard.press("+")
    page.keyboard.press("ArrowLeft")
    assert page.url == before  # keys move the map, not the page
    visit.assert_clean()


def test_a_simulation_replays_on_the_same_map(visit: Visit, stack: str, replay_file: Path) -> None:
    page = visit.page
    open_console(page, stack, ops_token())
    page.select_option("#replay-speed", "300")
    page.set_input_files("#replay-file", str(replay_file))
    expect(page.locator("#mode")).to_contain_text("Replay of tiny", timeout=WAIT)
    expect(page.locator("#jobs > *").first).to_be_visible(timeout=WAIT)
    expect(page.locator("#workers > *").first).to_be_visible(timeout=WAIT)
    expect(page.locator("#events li").first).to_be_visible()
    expect(page.locator("#mode")).to_contain_text("(ended)", timeout=15_000)
    page.click("#replay-pause")
    visit.assert_clean()


@pytest.fixture(scope="module")
def replay_file(
    tmp_path_factory: pytest.TempPathFactory, admin_url: str, aws_stand_in: str, redis_url: str
) -> Path:
    """A real replay: three minutes of the tiny town, run against the real dispatch."""
    import os

    from sim import report, run
    from sim.scenario import Scenario, load

    raw = load(Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml").model_dump()
    city = Scenario.model_validate({**raw, "hours": 0.05, "speed": 60})
    saved = dict(os.environ)
    os.environ["DATABASE_URL"] = admin_url
    try:
        outcomes = run.run(city, tmp_path_factory.mktemp("sim-home"))
        out = tmp_path_factory.mktemp("replay")
        report.write(city, outcomes, out)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        from dispatch import db
        from dispatch.config import settings

        settings.cache_clear()
        db.close()
    (found,) = out.glob("replay-*.jsonl")
    return found


def test_the_map_has_a_grid_a_true_scale_and_the_configured_area(visit: Visit, stack: str) -> None:
    """Not a blank square: lines of latitude and longitude with their labels, a scale bar
    whose length is what it says (measured against the grid), and the configured area's
    outline, which stays where it is on the earth when the map zooms."""
    import math

    page = visit.page
    open_console(page, stack, ops_token())
    lngs = page.locator("#grid line[data-lng]")
    lats = page.locator("#grid line[data-lat]")
    assert lngs.count() >= 3 and lats.count() >= 3
    labels = page.locator("#grid text").all_text_contents()
    assert any(t.endswith("°E") for t in labels) and any(t.endswith("°N") for t in labels)

    # Two neighbouring meridians: their gap in pixels and in metres gives the true scale.
    first, second = (float(lngs.nth(i).get_attribute("x1") or "nan") for i in (0, 1))
    gap = float(lngs.nth(1).get_attribute("data-lng") or 0) - float(
        lngs.nth(0).get_attribute("data-lng") or 0
    )
    mid_lat = (12.85 + 13.1) / 2
    metres_per_pixel = gap * 111_319.49 * math.cos(math.radians(mid_lat)) / (second - first)
    scale = page.locator("#scale")
    metres = float(scale.get_attribute("data-metres") or 0)
    pixels = float(scale.get_attribute("data-pixels") or 0)
    assert abs(pixels * metres_per_pixel - metres) / metres < 0.01
    label = scale.locator("text").text_content()
    assert label == (f"{metres / 1000:g} km" if metres >= 1000 else f"{metres:g} m")

    outline = page.locator('#area polygon[data-area="configured"]')
    before = outline.bounding_box()
    assert before is not None
    page.click("#zoom-in")
    # The area, not the view, is outlined: once the map has drawn again, it is larger.
    page.wait_for_function(
        """(width) => {
            const area = document.querySelector('#area polygon[data-area="configured"]');
            return area !== null && area.getBoundingClientRect().width > width * 1.2;
        }""",
        arg=before["width"],
        timeout=10_000,
    )
    visit.assert_clean()


def test_the_event_list_keeps_ids_whole(visit: Visit, stack: str) -> None:
    page = visit.page
    open_console(page, stack, ops_token())
    job = Client(stack, "biz-whole-ids", "business").send("POST", "/jobs", job_body()).json()
    # (an offer of the job shows its id too, when a worker stands near)
    event = page.locator("#events li", has_text=f"job.created {job['id']}")
    expect(event).to_contain_text(f"job.created {job['id']} v1", timeout=WAIT)
    expect(page.locator("#open-jobs li", has_text=job["id"])).to_have_count(1)
    visit.assert_clean()


def test_a_choice_jobs_applicants_are_shown(visit: Visit, stack: str) -> None:
    page = visit.page
    open_console(page, stack, ops_token())
    business = Client(stack, "biz-choosing", "business")
    applicant = Client(stack, "applicant-console", "worker")
    applicant.send("PUT", "/workers/me", {"skills": ["wash"]})
    applicant.send("PUT", "/workers/me/location", {"lat": 12.98, "lng": 77.6})
    body = {**job_body(["wash"], lat=12.9716, lng=77.5946), "assignment": "business_choice"}
    job = business.send("POST", "/jobs", body).json()
    assert applicant.send("POST", f"/jobs/{job['id']}/applications", {}).status_code == 201
    row = page.locator("#open-jobs li", has_text=job["id"])
    expect(row).to_contain_text("business chooses · 1 applied", timeout=WAIT)
    row.click()
    shown = page.locator("#applicants li")
    expect(shown).to_contain_text("applicant-console", timeout=WAIT)
    expect(shown).to_contain_text("rating none yet")
    expect(shown).to_contain_text("1.1 km")
    # A withdrawal updates the list the person is looking at.
    assert applicant.send("DELETE", f"/jobs/{job['id']}/applications/me").status_code == 204
    expect(row).to_contain_text("0 applied", timeout=WAIT)
    expect(shown).to_have_text("nobody yet", timeout=WAIT)
    visit.assert_clean()
