"""Hundreds of phones in the same instant against the local stack: every one gets an answer.

Found from outside: the stdlib server listened with a backlog of 5, and a burst of 200
clients met `Connection reset by peer`. Each client here is its own person (token) on its own
connection, all released at once by a barrier.
"""

from collections import Counter
from functools import partial
from typing import Any

import requests

from tests.e2e.client import Client
from tests.support import in_parallel, job_body

CLIENTS = 500
JOBS = 50  # ten workers race for each


def accept(client: Client, job_id: str) -> tuple[int, str | None]:
    reply = client.send("POST", f"/jobs/{job_id}/accept", {})
    return reply.status_code, reply.json().get("error", {}).get("code")


def test_five_hundred_clients_at_once_all_get_the_contract_answer(stack: str) -> None:
    business = Client(stack, "biz-burst", "business")
    for round_ in range(2):
        jobs = [
            business.send("POST", "/jobs", {**job_body(), "skills": []}).json()["id"]
            for _ in range(JOBS)
        ]
        workers = [Client(stack, f"burst-{round_}-{n}", "worker") for n in range(CLIENTS)]
        outcomes: list[Any] = in_parallel(
            [partial(accept, w, jobs[n % JOBS]) for n, w in enumerate(workers)]
        )
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        assert not failures, f"{len(failures)} clients got no answer: {failures[:3]}"
        assert Counter(outcomes) == {(200, None): JOBS, (409, "JOB_TAKEN"): CLIENTS - JOBS}
        for job_id in jobs:
            held = business.send("GET", f"/jobs/{job_id}").json()
            assert (held["status"], held["version"]) == ("assigned", 2)
        for w in workers:
            w.session.close()


def test_the_local_pages_need_no_other_host(stack: str) -> None:
    page = requests.get(f"{stack}/docs", timeout=10)
    assert page.status_code == 200 and "http" not in page.text.replace("http-equiv", "")
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert requests.get(f"{stack}/docs/assets/{asset}", timeout=10).status_code == 200
