"""Push is a hint (issue 23, point 4), over real sockets against the local stack: a device cut
off in the middle of a stream reconnects, pulls, and has every event exactly once; a reader
that cannot keep up is closed with 1013 without holding up anyone else, and reconnects."""

import asyncio
import base64
import os
import socket
import struct
import uuid
from typing import Any

import boto3
import requests
from botocore.config import Config

from dispatch.db import Connection
from tests.e2e.client import Client
from tests.push_client import Listener, until
from tests.support import job_body, run_async

NOBODY_NEAR = (10.5, 76.5)  # no worker reports a position here: job.created alone per job


class Device:
    """A phone's copy of the world: events applied once each, by id, whichever way they came."""

    def __init__(self) -> None:
        self.applied: dict[str, dict[str, Any]] = {}
        self.pushed: set[str] = set()
        self.pulled: set[str] = set()

    def apply(self, event: dict[str, Any], by: str) -> None:
        (self.pushed if by == "push" else self.pulled).add(event["id"])
        self.applied.setdefault(event["id"], event)  # a repeat changes nothing


def pull_job_events(stack: str, owner: Client, job_id: str) -> list[dict[str, Any]]:
    reply = owner.session.get(f"{stack}/jobs/{job_id}/events", timeout=30)
    assert reply.status_code == 200, reply.text
    events: list[dict[str, Any]] = reply.json()["events"]
    return events


def test_cut_off_mid_stream_a_device_reconnects_pulls_and_has_every_event_once(
    stack: str,
) -> None:
    run_async(_cut_off(stack))


async def _cut_off(stack: str) -> None:
    sub = f"b-hint-{uuid.uuid4().hex[:8]}"
    owner = Client(stack, sub, "business")
    device = Device()
    jobs: list[str] = []

    def produce(count: int) -> None:
        for _ in range(count):
            reply = owner.send("POST", "/jobs", job_body(["wash"], *NOBODY_NEAR))
            assert reply.status_code == 201, reply.text
            jobs.append(reply.json()["id"])

    listener = await Listener(sub, "business").open(stack)
    # The same business's other device, connected throughout: it says when the events made
    # while the first was away have been pushed (and so missed by the first).
    witness = await Listener(sub, "business").open(stack)
    await asyncio.to_thread(produce, 10)
    assert await until(lambda: len(listener.heard) >= 5)  # the stream is flowing
    listener.socket.transport.abort()  # the phone goes into a tunnel: no close, no goodbye
    await listener.task if listener.task else None
    for event in listener.heard:
        device.apply(event, "push")
    while_away = len(jobs)
    await asyncio.to_thread(produce, 10)  # events keep coming while it is away
    away = set(jobs[while_away:])
    assert await until(lambda: away <= {m["job_id"] for m in witness.heard})
    listener = await Listener(sub, "business").open(stack)  # back: listen first, then pull
    for job_id in jobs:
        for event in pull_job_events(stack, owner, job_id):
            device.apply(event, "pull")
    await asyncio.to_thread(produce, 5)  # and the stream goes on over the new socket
    truth = {e["id"] for job_id in jobs for e in pull_job_events(stack, owner, job_id)}
    assert await until(lambda: truth <= device.applied.keys() | {m["id"] for m in listener.heard})
    for event in listener.heard:
        device.apply(event, "push")
    await listener.close()
    await witness.close()

    assert device.applied.keys() == truth  # nothing lost, nothing foreign
    assert len(truth) == len(jobs) == 25
    assert device.pushed & device.pulled, "pushed and pulled overlap: the ids kept them apart"
    missed_by_push = {e["id"] for e in device.applied.values()} - device.pushed
    assert {device.applied[i]["job_id"] for i in missed_by_push} >= away  # the pull had them


# -- a reader that cannot keep up ---------------------------------------------------------------


class StalledReader:
    """A device that opens the socket and then stops reading: a raw TCP socket with a small
    receive buffer, so the server's writes back up quickly."""

    def __init__(self, stack: str, token: str) -> None:
        host, port = stack.removeprefix("http://").split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(30)
        self.sock.connect((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET /ws?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13"
            "\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.buffer = b""

    def close_code(self) -> int:
        """Read on (at last) until the server's close frame; its code."""
        while True:
            frame = self._frame()
            if frame is None:
                raise AssertionError("the server hung up without a close frame")
            opcode, payload = frame
            if opcode == 0x8:
                code: int = struct.unpack("!H", payload[:2])[0]
                return code

    def _frame(self) -> tuple[int, bytes] | None:
        head = self._read(2)
        if head is None:
            return None
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read(2) or b"\0\0")[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read(8) or b"\0" * 8)[0]
        payload = self._read(length)
        return None if payload is None else (head[0] & 0x0F, payload)

    def _read(self, count: int) -> bytes | None:
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken


def test_a_reader_that_cannot_keep_up_is_closed_with_1013_and_holds_up_nobody(
    stack: str, conn: Connection
) -> None:
    """The poster's own calls (PostToConnection through boto3, the stack's address as the
    management endpoint), as fast as they go, to a device that stopped reading and to one
    that reads: the first is closed with 1013 and its posts answer 410 (the poster reports
    it, the sender forgets it); the second hears every message, in order; the first
    reconnects."""
    from dispatch_local import tokens

    sub = f"o-slow-{uuid.uuid4().hex[:8]}"
    stalled = StalledReader(stack, tokens.issue(sub, "ops"))

    async def run() -> None:
        reader = await Listener(f"o-fast-{uuid.uuid4().hex[:8]}", "ops").open(stack)
        ids = {
            r["caller_id"]: r["connection_id"]
            for r in conn.execute("SELECT caller_id, connection_id FROM push_connections")
        }
        management = boto3.client(
            "apigatewaymanagementapi",
            endpoint_url=stack,
            config=Config(retries={"max_attempts": 1}),
        )
        big = b'{"n":%d,"pad":"' + b"x" * 100_000 + b'"}'
        gone_at = None
        for n in range(400):  # 40 MB: far more than the buffer and the kernel's together
            await asyncio.to_thread(
                management.post_to_connection, ConnectionId=ids[reader.sub], Data=big % n
            )
            try:
                await asyncio.to_thread(
                    management.post_to_connection, ConnectionId=ids[sub], Data=big % n
                )
            except management.exceptions.GoneException:
                gone_at = n
                break
        assert gone_at is not None, "the stalled reader was never cut off"
        assert await until(lambda: len(reader.heard) == gone_at + 1)
        assert [m["n"] for m in reader.heard] == list(range(gone_at + 1))
        await reader.close()

    run_async(run())
    assert stalled.close_code() == 1013
    stalled.sock.close()

    async def reconnect() -> int | None:
        again = await Listener(sub, "ops").open(stack)
        await again.close()
        return again.close_code

    assert run_async(reconnect()) == 1000  # it came back, and left normally
    assert requests.get(f"{stack}/health", timeout=10).status_code == 200
