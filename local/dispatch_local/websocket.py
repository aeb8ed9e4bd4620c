"""The local WebSocket API (push, issue 23): what API Gateway does for the template's
WebSocket API, on the same port as the HTTP API, through the very functions the template
routes ($connect behind its Lambda authorizer, $disconnect, $default).

- `GET /ws?token=...` upgraded: the authorizer function runs first (a refusal is an HTTP 401
  in the contract's error body, before any socket opens), then $connect; each message a device
  sends goes to the route its `action` names (the API's RouteSelectionExpression), else to
  $default; a close (either side) runs $disconnect.
- A route into a stream (`position`, issue 37) runs no function: its stand-in
  (dispatch_local.streams) holds the message to the route's model and puts it on the stream.
  Nothing is sent back, unless the model refuses it: then API Gateway's own "Bad request body"
  (not the contract's error body), and the message goes no further.
- The management API the sender calls (boto3 `apigatewaymanagementapi`, its endpoint this
  stack's address): `POST /@connections/{id}` queues the data for that socket,
  `DELETE /@connections/{id}` closes it, `GET /@connections/{id}` describes it; an unknown id
  is 410 Gone, as in AWS.
- Each socket has a bounded buffer (`DISPATCH_PUSH_BUFFER` messages). A reader that cannot
  keep up fills it and is closed with 1013 (try again later) instead of holding anything up;
  it reconnects and pulls. API Gateway buffers on its side and never tells; this is the local
  stand-in's rule, documented in docs/architecture.md ("Push").
"""

import asyncio
import contextlib
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette import routing
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from dispatch.errors import Code, error_body
from dispatch_local.events import new_request_id
from dispatch_local.streams import StreamStandIn
from dispatch_local.template import Function, WebSocketApi

# The contract's close codes: 1008 for a token that is refused or has expired (DeleteConnection
# by the sender ends only expired connections), 1013 for a reader that fell behind.
CLOSE_POLICY = 1008
CLOSE_TOO_SLOW = 1013
CLOSE_UNSUPPORTED = 1003  # what API Gateway closes with on a binary frame
# API Gateway's own limit on one message it sends (PostToConnection).
MAX_MESSAGE_BYTES = 128 * 1024
DEFAULT_BUFFER = 256
API_ID = "local"
STAGE = "local"

Invoke = Callable[[Function, dict[str, Any]], Awaitable[Any]]


class Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def new_connection_id() -> str:
    """Like API Gateway's (short, opaque); URL-safe, so it travels in /@connections/{id}."""
    return secrets.token_urlsafe(12)


@dataclass
class LocalSocket:
    websocket: WebSocket
    buffer: int
    connected_at: float = field(default_factory=time.time)
    last_active_at: float = field(default_factory=time.time)
    source_ip: str = "127.0.0.1"
    queue: "asyncio.Queue[bytes | None]" = field(init=False)
    closing: tuple[int, str] | None = None
    writer: "asyncio.Task[None] | None" = None

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(maxsize=self.buffer)

    def send(self, data: bytes) -> bool:
        """Queue a message; False when it cannot go: the socket is closing, or its buffer is
        full (the reader fell behind, and is closed: it reconnects and pulls)."""
        if self.closing is not None:
            return False
        try:
            self.queue.put_nowait(data)
        except asyncio.QueueFull:
            self.end(CLOSE_TOO_SLOW, "too slow: reconnect and pull")
            return False
        return True

    def end(self, code: int, reason: str) -> None:
        """Close after what is queued; a reader that fell behind is closed at once (what it
        did not read is dropped: it pulls)."""
        if self.closing is not None:
            return
        self.closing = (code, reason)
        if code == CLOSE_TOO_SLOW and self.writer is not None:
            self.writer.cancel()  # it may be waiting on the reader; the close goes out now
            self.writer = asyncio.create_task(self._close())
            return
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)

    def start(self) -> None:
        self.writer = asyncio.create_task(self._write())

    def stop(self) -> None:
        if self.writer is not None and self.closing is None:
            self.writer.cancel()

    async def _write(self) -> None:
        """Send what is queued, in order, until told to close."""
        while True:
            data = await self.queue.get()
            if data is None:
                break
            await self.websocket.send_text(data.decode())
        await self._close()

    async def _close(self) -> None:
        code, reason = self.closing or (1000, "")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.websocket.close(code, reason), timeout=10)


class LocalWebSocketApi:
    def __init__(
        self,
        api: WebSocketApi,
        invoke: Invoke,
        streams: Mapping[str, StreamStandIn] | None = None,
    ) -> None:
        """`streams`: the stand-in of each stream route (dispatch_local.streams.stand_ins),
        shared with whatever consumes them; without them, every message goes to $default."""
        self.api, self.invoke = api, invoke
        self.streams = dict(streams or {})
        self.sockets: dict[str, LocalSocket] = {}
        self.buffer = int(os.environ.get("DISPATCH_PUSH_BUFFER", str(DEFAULT_BUFFER)))

    def routes(self) -> list[routing.BaseRoute]:
        """The socket (`/ws`) and the management API, as a server mounts them (the local
        gateway beside its HTTP API; the simulator's push sample, sim/push.py)."""
        return [
            routing.WebSocketRoute("/ws", self.serve),
            routing.Route(
                "/@connections/{connection_id}", self.manage, methods=["POST", "DELETE", "GET"]
            ),
        ]

    # -- the socket's life ---------------------------------------------------------------------

    async def serve(self, websocket: WebSocket) -> None:
        connection_id = new_connection_id()
        query = dict(websocket.query_params)
        headers = {k: v for k, v in websocket.headers.items()}
        try:
            authorizer = await self._authorize(connection_id, query, headers)
            answer = await self._route("$connect", connection_id, headers, query, authorizer)
            if int((answer or {}).get("statusCode", 500)) != 200:
                raise Refused(500)
        except Refused as refused:
            await self._deny(websocket, refused.status)
            return
        await websocket.accept()
        client = websocket.client
        socket = LocalSocket(websocket, self.buffer, source_ip=client.host if client else "")
        self.sockets[connection_id] = socket
        socket.start()
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                socket.last_active_at = time.time()
                if message.get("text") is None:  # API Gateway takes text frames only
                    socket.end(CLOSE_UNSUPPORTED, "binary frames are not supported")
                    continue
                await self._message(socket, connection_id, headers, authorizer, message["text"])
        except WebSocketDisconnect:
            pass
        finally:
            self.sockets.pop(connection_id, None)
            socket.stop()
            with contextlib.suppress(Exception):
                await self._route("$disconnect", connection_id, headers, None, authorizer)

    async def _message(
        self,
        socket: LocalSocket,
        connection_id: str,
        headers: dict[str, str],
        authorizer: dict[str, Any],
        body: str,
    ) -> None:
        """A device's message where API Gateway sends it: the stream route its action names,
        else $default."""
        stream = self.streams.get(action_of(body) or "")
        if stream is None:
            with contextlib.suppress(Exception):  # a failing $default answers nothing
                await self._route("$default", connection_id, headers, None, authorizer, body)
            return
        refused = stream.put(body, authorizer)
        if refused is not None:  # API Gateway's own answer, in its own shape
            answer = {
                "message": refused,
                "connectionId": connection_id,
                "requestId": new_request_id(),
            }
            socket.send(json.dumps(answer).encode())

    async def _authorize(
        self, connection_id: str, query: dict[str, str], headers: dict[str, str]
    ) -> dict[str, Any]:
        if self.api.authorizer is None:
            return {}
        if not query.get("token"):  # the identity source is missing: API Gateway's own 401
            raise Refused(401)
        event = {
            "type": "REQUEST",
            "methodArn": f"arn:aws:execute-api:local:000000000000:{API_ID}/{STAGE}/$connect",
            "headers": headers,
            "queryStringParameters": query,
            "requestContext": self._context("$connect", "CONNECT", connection_id),
        }
        try:
            policy = await self.invoke(self.api.authorizer, event)
        except Exception as error:  # "Unauthorized" is the authorizer's 401
            raise Refused(401 if "Unauthorized" in str(error) else 500) from error
        statements = (policy or {}).get("policyDocument", {}).get("Statement", [])
        if not statements or any(s.get("Effect") != "Allow" for s in statements):
            raise Refused(403)
        return {"principalId": policy.get("principalId"), **(policy.get("context") or {})}

    async def _route(
        self,
        route_key: str,
        connection_id: str,
        headers: dict[str, str],
        query: dict[str, str] | None,
        authorizer: dict[str, Any],
        body: str | None = None,
    ) -> Any:
        function = self.api.routes.get(route_key)
        if function is None:
            return {"statusCode": 200}
        event_type = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route_key, "MESSAGE")
        event: dict[str, Any] = {
            "requestContext": {
                **self._context(route_key, event_type, connection_id),
                "authorizer": authorizer,
            },
            "isBase64Encoded": False,
        }
        if route_key == "$connect":
            event["headers"] = headers
            event["queryStringParameters"] = query
        if body is not None:
            event["body"] = body
        return await self.invoke(function, event)

    @staticmethod
    def _context(route_key: str, event_type: str, connection_id: str) -> dict[str, Any]:
        now = time.time()
        return {
            "routeKey": route_key,
            "eventType": event_type,
            "messageDirection": "IN",
            "connectionId": connection_id,
            "requestId": new_request_id(),
            "requestTimeEpoch": int(now * 1000),
            "connectedAt": int(now * 1000),
            "domainName": "127.0.0.1",
            "stage": STAGE,
            "apiId": API_ID,
        }

    @staticmethod
    async def _deny(websocket: WebSocket, status: int) -> None:
        code = {401: Code.UNAUTHORIZED, 403: Code.FORBIDDEN}.get(status, Code.INTERNAL)
        if "websocket.http.response" in websocket.scope.get("extensions", {}):
            body = error_body(code, new_request_id())
            await websocket.send_denial_response(JSONResponse(body, status_code=status))
        else:  # a server without denial responses: the contract's other refusal
            await websocket.close(CLOSE_POLICY, "token refused")

    # -- the management API (what boto3's apigatewaymanagementapi calls) ----------------------

    async def manage(self, request: Request) -> Response:
        connection_id = request.path_params["connection_id"]
        socket = self.sockets.get(connection_id)
        if socket is None or socket.closing is not None:
            return _aws_error(410, "GoneException", f"{connection_id} is gone")
        if request.method == "DELETE":
            socket.end(CLOSE_POLICY, "connection ended by the server (token expired)")
            return Response(status_code=204)
        if request.method == "GET":
            return JSONResponse(
                {
                    "connectedAt": _iso(socket.connected_at),
                    "lastActiveAt": _iso(socket.last_active_at),
                    "identity": {"sourceIp": socket.source_ip, "userAgent": ""},
                }
            )
        data = await request.body()
        if len(data) > MAX_MESSAGE_BYTES:
            return _aws_error(413, "PayloadTooLargeException", "message over 128 KB")
        if not socket.send(data):
            return _aws_error(410, "GoneException", f"{connection_id} fell behind and was closed")
        return Response(status_code=200)


def action_of(body: str) -> str | None:
    """`$request.body.action`, the template's RouteSelectionExpression: the route a message
    names, when it is a JSON object with a string `action`."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past what the parser takes
        return None
    action = message.get("action") if isinstance(message, dict) else None
    return action if isinstance(action, str) else None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _aws_error(status: int, code: str, message: str) -> Response:
    return JSONResponse(
        {"message": message}, status_code=status, headers={"x-amzn-ErrorType": code}
    )
