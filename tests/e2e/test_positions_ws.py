"""Positions over the push socket against the local stack (issue 37): a worker's app sends
{"action": "position", ...} on its socket, the position route puts it on the stream (no Lambda
per report), PositionsFunction writes it to Redis, and the ops map (which reads Redis alone)
shows it within a few seconds. In process, the stand-in and the routing: tests/integration/
test_position_stream.py."""

import json
import random
import uuid
from typing import Any

import pytest

from tests.e2e.client import Client
from tests.push_client import Listener, until
from tests.support import run_async

# A position reaches Redis after the mapping's batching window (1 s) and the consumer's poll;
# a deadline, not a measurement, for a machine busy with the suite.
LANDS_WITHIN_SECONDS = 15


def place() -> tuple[float, float]:
    """Somewhere of this test's own: the stack is shared, and the ops map lists a box."""
    return round(random.uniform(-60, 60), 4), round(random.uniform(-170, 170), 4)


def position(lat: float, lng: float) -> str:
    return json.dumps({"action": "position", "lat": lat, "lng": lng})


def on_the_map(stack: str, lat: float, lng: float) -> dict[str, tuple[float, float]]:
    """Who the ops map shows within about a kilometre of the place, and where."""
    box = f"{lng - 0.01},{lat - 0.01},{lng + 0.01},{lat + 0.01}"
    ops = Client(stack, "ops-positions", "ops")
    reply = ops.send("GET", f"/ops/workers?bbox={box}", key=None)
    assert reply.status_code == 200, reply.text
    return {w["id"]: (w["location"]["lat"], w["location"]["lng"]) for w in reply.json()["workers"]}


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def at(lat: float, lng: float) -> Any:
    """Where the map puts a position: Redis GEO keeps it to within a metre."""
    return pytest.approx((lat, lng), abs=1e-5)


# A message the position route refuses: its answer tells the sender that every message it sent
# before has been handled (a socket's messages are handled in order).
REFUSED = json.dumps({"action": "position", "lat": 86, "lng": 0})  # past what Redis GEO takes


def test_a_worker_s_position_sent_on_its_socket_reaches_redis(stack: str) -> None:
    worker = name("w-pos")
    lat, lng = place()

    async def run() -> tuple[Listener, tuple[float, float]]:
        phone = await Listener(worker, "worker").open(stack)
        await phone.socket.send(position(lat, lng))
        assert await until(lambda: worker in on_the_map(stack, lat, lng), LANDS_WITHIN_SECONDS)
        where = on_the_map(stack, lat, lng)[worker]
        await phone.close()  # its only socket: off the map (docs/api.md, "Version 1.3")
        assert await until(lambda: worker not in on_the_map(stack, lat, lng))
        return phone, where

    phone, where = run_async(run())
    assert where == at(lat, lng)
    assert phone.heard == []  # one way: an accepted position is answered with nothing


def test_a_bad_body_is_answered_bad_request_body_and_goes_no_further(stack: str) -> None:
    worker = name("w-pos-bad")
    lat, lng = place()
    extra = {"action": "position", "lat": lat, "lng": lng, "speed": 3}  # a field too many

    async def run() -> tuple[Listener, Listener]:
        phone = await Listener(worker, "worker").open(stack)
        tablet = await Listener(worker, "worker").open(stack)  # the same worker's other device
        await phone.socket.send(REFUSED)
        await phone.socket.send(json.dumps(extra))
        assert await until(lambda: len(phone.heard) == 2)
        # The socket stays open, and a good position after them lands.
        await phone.socket.send(position(lat, lng + 0.001))
        assert await until(lambda: worker in on_the_map(stack, lat, lng), LANDS_WITHIN_SECONDS)
        where.update(on_the_map(stack, lat, lng))  # while its sockets are open
        await phone.close()
        await tablet.close()
        return phone, tablet

    where: dict[str, tuple[float, float]] = {}
    phone, tablet = run_async(run())
    assert [m["message"] for m in phone.heard] == ["Bad request body"] * 2
    assert all(set(m) == {"message", "connectionId", "requestId"} for m in phone.heard)
    assert len({m["connectionId"] for m in phone.heard}) == 1
    assert len({m["requestId"] for m in phone.heard}) == 2  # a request id each
    assert tablet.heard == []  # the answer goes to the sender alone
    assert where[worker] == at(lat, lng + 0.001)  # not where `extra` said


def test_a_business_s_position_never_lands(stack: str) -> None:
    business, worker = name("b-pos"), name("w-pos-after")
    lat, lng = place()

    async def run() -> None:
        owner = await Listener(business, "business").open(stack)
        await owner.socket.send(position(lat, lng))
        await owner.socket.send(REFUSED)
        assert await until(lambda: len(owner.heard) == 1)  # its position is on the stream
        # A worker's, put after it, lands: the stream keeps their order, so the business's
        # record has been through PositionsFunction by then.
        phone = await Listener(worker, "worker").open(stack)
        await phone.socket.send(position(lat, lng))
        assert await until(lambda: worker in on_the_map(stack, lat, lng), LANDS_WITHIN_SECONDS)
        await owner.close()
        await phone.close()
        assert [m["message"] for m in owner.heard] == ["Bad request body"]

    run_async(run())
    assert business not in on_the_map(stack, lat, lng)


def test_other_messages_are_answered_with_nothing_and_never_land(stack: str) -> None:
    """What is not the position route goes to $default, which ignores it (push is one way;
    that it is $default that gets them: tests/integration/test_position_stream.py); those that
    only look like positions are among them."""
    sender, worker = name("w-pos-other"), name("w-pos-marker")
    lat, lng = place()
    others: list[Any] = [
        "hello",
        [{"action": "position", "lat": lat, "lng": lng}],
        {"action": "ping"},
        {"action": "Position", "lat": lat, "lng": lng},  # route keys are exact
        {"lat": lat, "lng": lng},
    ]

    async def run() -> Listener:
        phone = await Listener(sender, "worker").open(stack)
        for message in others:
            await phone.socket.send(message if isinstance(message, str) else json.dumps(message))
        await phone.socket.send(REFUSED)
        assert await until(lambda: len(phone.heard) == 1)  # all the others handled
        marker = await Listener(worker, "worker").open(stack)
        await marker.socket.send(position(lat, lng))
        assert await until(lambda: worker in on_the_map(stack, lat, lng), LANDS_WITHIN_SECONDS)
        await marker.close()
        await phone.close()
        return phone

    phone = run_async(run())
    assert [m["message"] for m in phone.heard] == ["Bad request body"]  # nothing for the others
    assert phone.close_code == 1000  # its own close: the others did not end the socket
    assert sender not in on_the_map(stack, lat, lng)
