"""Push over real WebSockets against the local stack (issue 23): many identities at once,
each hearing exactly its own; bad tokens refused at the handshake; a token that expires while
connected ends the connection."""

import asyncio
import json
import subprocess
import sys
import uuid
from typing import Any

import pytest
import requests
import websockets

from dispatch.db import Connection
from dispatch_local import tokens
from tests.contract import assert_valid_event
from tests.e2e.client import Client
from tests.push_client import Listener, socket_url, until
from tests.support import job_body, run_async

HERE = (12.9716, 77.5946)
FAR = (13.9716, 77.5946)  # about 110 km away: the far workers, never offered
ELSEWHERE = (11.9716, 77.5946)  # the other businesses' jobs, far from everyone


def test_many_identities_at_once_each_hear_their_own_and_nobody_another_s(stack: str) -> None:
    run_async(_many_identities(stack))


async def _many_identities(stack: str) -> None:
    suffix = tokens.signing_key()[:6]  # the stack is shared: names of this test's own
    near = [f"w-near-{n}-{suffix}" for n in range(2)]
    far = [f"w-far-{n}-{suffix}" for n in range(10)]
    owners = [f"b-{n}-{suffix}" for n in range(3)]
    for sub in near + far:
        phone = Client(stack, sub, "worker")
        assert phone.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
        lat, lng = HERE if sub in near else FAR
        reply = phone.send("PUT", "/workers/me/location", {"lat": lat, "lng": lng})
        assert reply.status_code in (200, 204), reply.text

    listeners = {sub: Listener(sub, "worker") for sub in near + far}
    listeners |= {sub: Listener(sub, "business") for sub in owners}
    listeners["ops-a"] = Listener(f"ops-{suffix}", "ops")
    listeners["ops-b"] = Listener(f"ops-{suffix}", "ops")  # the same person's second device
    await asyncio.gather(*(listener.open(stack) for listener in listeners.values()))

    jobs = []
    for n, owner in enumerate(owners):
        lat, lng = HERE if n == 0 else ELSEWHERE
        reply = Client(stack, owner, "business").send("POST", "/jobs", job_body(["wash"], lat, lng))
        assert reply.status_code == 201, reply.text
        jobs.append(reply.json())
    near_job = jobs[0]
    offered = {sub: listeners[sub] for sub in near}
    # Both near workers are offered the near job (wave 1: the three nearest, fresh, qualified).
    assert await until(lambda: all(any_type(phone, "offer.created") for phone in offered.values()))
    taker = Client(stack, near[0], "worker")
    accepted = taker.send("POST", f"/jobs/{near_job['id']}/accept", {"version": 1})
    assert accepted.status_code == 200, accepted.text

    expected: dict[str, set[tuple[str, str, str | None]]] = {sub: set() for sub in listeners}
    for job, owner in zip(jobs, owners, strict=True):
        expected[owner].add((job["id"], "job.created", None))
    expected[owners[0]] |= {(near_job["id"], "offer.created", w) for w in near}
    expected[owners[0]].add((near_job["id"], "job.assigned", None))
    expected[near[0]] = {(near_job["id"], "offer.created", near[0])}
    expected[near[0]].add((near_job["id"], "job.assigned", None))
    expected[near[1]] = {(near_job["id"], "offer.created", near[1])}
    ours = set().union(*expected.values())
    expected["ops-a"] = expected["ops-b"] = ours

    def heard(key: str) -> set[tuple[str, str, str | None]]:
        return {
            (
                m["job_id"],
                m["type"],
                m["data"].get("worker_id") if m["type"] == "offer.created" else None,
            )
            for m in listeners[key].heard
            if key.startswith("ops") is False or m["job_id"] in {j["id"] for j in jobs}
        }

    assert await until(lambda: all(heard(k) >= v for k, v in expected.items()))
    await asyncio.sleep(1)  # anything sent to the wrong phone would have come by now
    for key in listeners:
        assert heard(key) == expected[key], key
    for listener in listeners.values():
        assert len(listener.ids()) == len(set(listener.ids()))  # each event heard once
        for message in listener.heard:
            assert_valid_event(message)
    await asyncio.gather(*(listener.close() for listener in listeners.values()))


def any_type(listener: Listener, event_type: str) -> bool:
    return any(m["type"] == event_type for m in listener.heard)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?token=",
        "?token=not-a-jwt",
        "?token=" + tokens.issue("worker-1", "worker", ttl_seconds=-5),
        "?token=" + tokens.issue("worker-1", "admin"),
    ],
)
def test_a_bad_token_is_refused_at_the_handshake(stack: str, query: str) -> None:
    async def connect() -> Any:
        url = socket_url(stack, "").removesuffix("?token=") + query
        async with websockets.connect(url, open_timeout=30):
            pytest.fail("a bad token opened a socket")

    with pytest.raises(websockets.InvalidStatus) as refused:
        run_async(connect())
    assert refused.value.response.status_code == 401
    assert b'"code":"UNAUTHORIZED"' in refused.value.response.body


def test_a_token_that_expires_while_connected_ends_the_connection(stack: str) -> None:
    async def run() -> Listener:
        listener = await Listener("worker-expiring", "worker").open(stack, ttl_seconds=3)
        assert await until(lambda: listener.close_code is not None, seconds=30)
        return listener

    assert run_async(run()).close_code == 1008


def test_a_plain_get_of_the_socket_path_is_not_found(stack: str) -> None:
    assert requests.get(f"{stack}/ws", timeout=10).status_code == 404


def listen(stack: str, sub: str, role: str) -> "subprocess.Popen[str]":
    """`dispatch listen` as the README's tour runs it, once it says it is listening."""
    listener = subprocess.Popen(
        [sys.executable, "-m", "dispatch_local.cli", "listen", "--url", stack, "--sub", sub,
         "--role", role, "--count", "1", "--seconds", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert listener.stderr is not None
    assert "listening as" in listener.stderr.readline()
    return listener


def heard_line(listener: "subprocess.Popen[str]") -> dict[str, Any]:
    out, _ = listener.communicate(timeout=90)
    (line,) = out.splitlines()
    assert listener.returncode == 0
    heard: dict[str, Any] = json.loads(line)
    return heard


def test_the_readme_s_listen_command_prints_what_the_phone_hears(stack: str) -> None:
    """`dispatch listen` (the README's tour): a business's terminal hears its job posted."""
    sub = f"b-listen-{tokens.signing_key()[:6]}"
    listener = listen(stack, sub, "business")
    job = Client(stack, sub, "business").send("POST", "/jobs", job_body(["wash"], *ELSEWHERE))
    heard = heard_line(listener)
    assert (heard["type"], heard["job_id"]) == ("job.created", job.json()["id"])


def test_the_readme_s_worker_terminal_prints_its_offer(stack: str) -> None:
    """The README's tour, its worker: w-4 sets skills and a place 1 km from where the job will
    be, listens, and its terminal prints the offer it is made (a skill of this test's own, so
    no other worker of the shared stack is nearer)."""
    suffix = tokens.signing_key()[:6]
    sub, skill = f"w-listen-{suffix}", f"listen-{suffix}"
    phone = Client(stack, sub, "worker")
    assert phone.send("PUT", "/workers/me", {"skills": [skill]}).status_code == 200
    placed = phone.send("PUT", "/workers/me/location", {"lat": 12.9806, "lng": 77.5946})
    assert placed.status_code == 204, placed.text
    listener = listen(stack, sub, "worker")
    business = Client(stack, f"b-listen-{suffix}", "business")
    job = business.send("POST", "/jobs", job_body([skill], 12.9716, 77.5946))
    assert job.status_code == 201, job.text
    heard = heard_line(listener)
    assert (heard["type"], heard["job_id"]) == ("offer.created", job.json()["id"])
    assert heard["data"]["worker_id"] == sub
    assert_valid_event(heard)
    # What push said, pulled: push is a hint, the offers list the source of truth.
    offers = phone.send("GET", "/workers/me/offers", key=None).json()["offers"]
    assert [offer["job"]["id"] for offer in offers] == [job.json()["id"]]


def test_a_connection_gone_without_its_disconnect_is_forgotten_through_the_gone_queue(
    stack: str, conn: Connection
) -> None:
    """API Gateway's $disconnect is best effort: a phone that vanished can leave its row. The
    sender (in the VPC) queues the delivery, the poster (outside it) gets 410 for that
    connection and reports it on the gone queue, and the sender deletes the row; the live
    device of the same person hears the event all the while."""
    suffix = tokens.signing_key()[:6]
    ops = f"ops-gone-{suffix}"

    async def run() -> None:
        live = await Listener(ops, "ops").open(stack)
        vanished = await Listener(ops, "ops").open(stack)
        rows = {
            r["connection_id"]: r
            for r in conn.execute(
                "SELECT connection_id, caller_id, roles, expires_at FROM push_connections"
                " WHERE caller_id = %s",
                [ops],
            )
        }
        assert len(rows) == 2
        await vanished.close()  # its $disconnect forgets it...
        assert await until(lambda: len(connection_ids(conn, ops)) == 1)
        (live_id,) = connection_ids(conn, ops)
        (gone_id,) = set(rows) - {live_id}
        row = rows[gone_id]
        conn.execute(  # ...as if that invocation had been lost: the row is back
            "INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)"
            " VALUES (%s, %s, %s, %s)",
            [gone_id, row["caller_id"], row["roles"], row["expires_at"]],
        )
        reply = Client(stack, f"b-gone-{suffix}", "business").send(
            "POST", "/jobs", job_body(["wash"], *ELSEWHERE)
        )
        assert reply.status_code == 201, reply.text
        job_id = reply.json()["id"]
        assert await until(lambda: any(m["job_id"] == job_id for m in live.heard))
        assert await until(lambda: connection_ids(conn, ops) == {live_id}), "never forgotten"
        await live.close()

    run_async(run())


def connection_ids(conn: Connection, caller_id: str) -> set[str]:
    return {
        r["connection_id"]
        for r in conn.execute(
            "SELECT connection_id FROM push_connections WHERE caller_id = %s", [caller_id]
        )
    }


def test_a_worker_away_when_its_hold_ended_learns_it_after_reconnecting(stack: str) -> None:
    """Accept, close the socket, the business cancels, reconnect: the pull the contract asks
    for after any reconnect answers the past holder up to the end of its hold."""
    suffix = uuid.uuid4().hex[:6]  # the stack is shared: this test's own people
    business = Client(stack, f"biz-away-{suffix}", "business")
    washer = Client(stack, f"washer-away-{suffix}", "worker")
    assert washer.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    job = business.send("POST", "/jobs", job_body(["wash"])).json()

    async def away() -> dict[str, Any]:
        listener = await Listener(washer.sub, "worker").open(stack)
        held = washer.send("POST", f"/jobs/{job['id']}/accept", {}).json()
        assert await until(lambda: any_type(listener, "job.assigned"))
        await listener.close()
        return dict(held)

    held = run_async(away())
    cancelled = business.send(
        "POST", f"/jobs/{job['id']}/transitions", {"event": "cancel", "version": held["version"]}
    )
    assert cancelled.status_code == 200, cancelled.text

    seen = washer.send("GET", f"/jobs/{job['id']}")
    events = washer.send("GET", f"/jobs/{job['id']}/events")
    assert (seen.status_code, events.status_code) == (200, 200), (seen.text, events.text)
    assert (seen.json()["status"], seen.json()["assignee_id"]) == ("cancelled", None)
    assert [e["type"] for e in events.json()["events"]][-1] == "job.cancelled"
    for event in events.json()["events"]:
        assert_valid_event(event)
