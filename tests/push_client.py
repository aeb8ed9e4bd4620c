"""A phone listening on the push socket (tests and benchmarks): its own token, its own
WebSocket, every message it hears kept with the moment it arrived."""

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import websockets

from dispatch_local import tokens


def socket_url(base: str, token: str) -> str:
    return base.replace("http://", "ws://", 1) + "/ws?token=" + token


@dataclass
class Listener:
    sub: str
    role: str
    heard: list[dict[str, Any]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)
    close_code: int | None = None
    socket: Any = None
    task: "asyncio.Task[None] | None" = None

    async def open(self, base: str, ttl_seconds: int = 3600) -> "Listener":
        token = tokens.issue(self.sub, self.role, ttl_seconds=ttl_seconds)
        self.socket = await websockets.connect(socket_url(base, token), open_timeout=30)
        self.task = asyncio.create_task(self._listen())
        return self

    async def _listen(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for message in self.socket:
                self.arrived.append(time.time())
                self.heard.append(json.loads(message))
        self.close_code = self.socket.close_code

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
        if self.task is not None:
            await self.task

    def ids(self) -> list[str]:
        return [m["id"] for m in self.heard]


async def until(condition: Any, seconds: float = 30, poll: float = 0.05) -> bool:
    """Wait for `condition()` to hold, up to a deadline (a deadline, not a measurement)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(poll)
    return True
