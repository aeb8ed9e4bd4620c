"""The local API Gateway: real HTTP in, the Lambda handlers out, no Docker.

Each request is matched against the routes of template.yaml, its token checked the way the
JWT authorizer would, turned into a payload-2.0 event, and run in a pool of processes that
stand for Lambda execution environments (one request at a time each, own connection, own
module state, as in Lambda: Powertools keeps the current event in class state, so handlers
must never share a process between concurrent requests).
"""

import asyncio
import base64
import contextlib
import html
import json
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import flask_swagger_ui  # type: ignore[import-untyped]  # ships no type hints
from starlette import routing
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from dispatch.errors import Code, DispatchError, error_body
from dispatch.http.resolver import IDEMPOTENCY_KEY, STATE_CHANGING
from dispatch.models import to_json
from dispatch_local import apidoc, logs, settings_not_needed, tokens
from dispatch_local import asyncapi as bus_contract
from dispatch_local.events import LambdaContext, http_api_event, new_request_id
from dispatch_local.streams import StreamStandIn, stand_ins
from dispatch_local.template import (
    Function,
    QueueConsumer,
    Route,
    Schedule,
    default_route,
    find,
    handler_of,
    load_module,
    queue_consumers,
    routes,
    schedules,
    stream_consumers,
    websocket_api,
)
from dispatch_local.websocket import LocalWebSocketApi

# API Gateway refuses payloads over 10 MB itself; the handlers' own limit is far lower.
MAX_REQUEST_BYTES = 1024 * 1024

# Swagger UI's own files, served from the installed package: /docs works with no internet.
SWAGGER_UI_FILES = Path(flask_swagger_ui.__file__).parent / "dist"
SWAGGER_UI = """<!doctype html>
<html lang="en"><head><title>Dispatch API</title><meta charset="utf-8">
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({url: "/openapi.json", dom_id: "#ui"});</script>
</body></html>"""


# The icon every local page shows (browsers ask for /favicon.ico by themselves): a dispatch pin.
FAVICON = b"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<path d="M16 2a10 10 0 0 0-10 10c0 7.5 10 18 10 18s10-10.5 10-18A10 10 0 0 0 16 2z" fill="#1f6feb"/>
<circle cx="16" cy="12" r="4" fill="#fff"/></svg>"""

# `/`: where a newcomer's first click lands. Nothing from another host, no script.
HOME = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dispatch (local stack)</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<style>
body {{ font-family: system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem;
  color: #111827; line-height: 1.5; }}
h1 {{ font-size: 1.4rem; }} code {{ background: #f6f8fa; padding: 0 0.25rem; border-radius: 3px; }}
li {{ margin: 0.4rem 0; }} a {{ color: #0969da; }} code {{ white-space: nowrap; }}
</style></head>
<body><main>
<h1>Dispatch: the local stack</h1>
<p>The job-dispatch API is served here, at <code>{base}</code>, by the real Lambda handlers.
Every route but /health needs a bearer token: <code>.venv/bin/dispatch token --sub biz-1 --role
business</code> prints one.</p>
<ul>
<li><a href="/docs">API documentation</a> (Swagger UI: try every route; Authorize with a
token)</li>
<li><a href="/openapi.json">OpenAPI document</a> (the HTTP contract, machine-readable)</li>
<li><a href="/asyncapi.json">AsyncAPI document</a> (the events on the bus)</li>
<li><a href="/console">Operations console</a> (needs an ops sign-in:
<code>.venv/bin/dispatch console</code> prints a link that signs you in)</li>
<li><a href="/health">Health</a></li>
</ul>
<p>The README's tour walks through a job from posting to completion with curl.</p>
</main></body></html>"""


def _environment_started(stack: int, readable_logs: bool = False) -> None:
    # Ctrl-C reaches the whole process group; the gateway, not each environment, handles it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The stack's pid as it was when it asked for this environment: one still starting when a
    # kill -9 took the stack has a new parent already, and would watch that one.
    threading.Thread(target=_die_with_the_stack, args=(stack,), daemon=True).start()
    if readable_logs:
        from dispatch_local.logs import readable_function_logs

        readable_function_logs()


def _die_with_the_stack(stack: int) -> None:
    """An environment outlives a stack killed with -9 (nothing tells it), and would go on
    holding its connections and its share of the machine: it watches for its parent to go."""
    while os.getppid() == stack:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


PARENT_CHECK_SECONDS = 0.5


def invoke(function: Function, event: dict[str, Any], timeout_seconds: int = 29) -> Any:
    """Runs inside an execution environment (a pool process)."""
    context = LambdaContext(function_name=function.function, timeout_seconds=timeout_seconds)
    with _signed_in_as_its_role(function):
        return handler_of(function)(event, context)


@contextlib.contextmanager
def _signed_in_as_its_role(function: Function) -> Iterator[None]:
    """The retention duty signs in as the archivist, as its own DATABASE_URL in the template
    says. The environments here serve every function, so it gets that URL for its run only."""
    import os

    from dispatch_local.invoke import signs_in_as_archivist
    from dispatch_local.services import archivist_url

    owner = os.environ.get("DATABASE_OWNER_URL")
    if owner is None or not signs_in_as_archivist(function):
        yield
        return
    from dispatch import db
    from dispatch.config import settings

    before = os.environ["DATABASE_URL"]
    db.close()
    os.environ["DATABASE_URL"] = archivist_url(owner)
    settings.cache_clear()
    try:
        yield
    finally:
        db.close()
        os.environ["DATABASE_URL"] = before
        settings.cache_clear()


def scheduled_event(schedule: Schedule) -> dict[str, Any]:
    """What EventBridge Scheduler hands a function with no Input of its own."""
    return {
        "source": "dispatch.local.scheduler",
        "detail-type": "Scheduled Event",
        "time": datetime.now(UTC).isoformat(),
        "resources": [f"local-schedule/{schedule.function}"],
        "detail": {},
    }


def openapi_document(all_routes: list[Route]) -> dict[str, Any]:
    """One OpenAPI document for the whole API, merged from every function's resolver. It is
    made from the handlers' code alone: importing a handler validates its settings (cold
    start), which a document does not need, so none are asked for (a fresh clone's test
    collection, `dispatch openapi` with no database anywhere)."""
    with settings_not_needed():
        return _merged_document(all_routes)


def _merged_document(all_routes: list[Route]) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "Dispatch API", "version": "1"},
        "paths": {},
        "components": {
            "schemas": {},
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
    seen: set[tuple[str, str]] = set()
    roles: dict[str, Any] = {}
    tags: dict[str, str] = {}
    for route in all_routes:
        module = load_module(route.code_uri, route.handler.rsplit(".", 1)[0])
        if route.path in ("/console", "/console/{asset}"):
            continue  # pages, not operations
        roles[f"{route.method.upper()} {route.path}"] = module.app.roles_of(route.route_key)
        tags[f"{route.method.upper()} {route.path}"] = apidoc.TAGS[route.code_uri.name]
        if (str(route.code_uri), route.handler) in seen:
            continue
        seen.add((str(route.code_uri), route.handler))
        document = json.loads(module.app.get_openapi_json_schema(title="Dispatch API"))
        for path, operations in document.get("paths", {}).items():
            merged["paths"].setdefault(path, {}).update(operations)
        merged["components"]["schemas"].update(document.get("components", {}).get("schemas", {}))
    for route in all_routes:
        operation = merged["paths"].get(route.path, {}).get(route.method.lower())
        if operation is None:
            continue
        if route.authorized:
            operation["security"] = [{"bearer": []}]
        if route.method.upper() in STATE_CHANGING:
            operation.setdefault("parameters", []).append(IDEMPOTENCY_KEY_HEADER)
    _drop_framework_validation_answers(merged)
    apidoc.describe(merged, roles, tags)
    return merged


# The gate reads it before validation (dispatch.http), so the resolvers do not declare it.
IDEMPOTENCY_KEY_HEADER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "description": "1 to 255 visible ASCII characters; a UUID is best. See the contract.",
    "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY.pattern},
}
FRAMEWORK_VALIDATION_ERROR = "#/components/schemas/HTTPValidationError"


def _drop_framework_validation_answers(document: dict[str, Any]) -> None:
    """Powertools documents a 422 of its own shape on every validated route; ours answer
    invalid input with 400 VALIDATION_FAILED (the contract), so that 422 never happens.
    Where a route does answer 422, it is IDEMPOTENCY_KEY_REUSED in the error body."""
    for operations in document["paths"].values():
        for operation in operations.values():
            unprocessable = operation.get("responses", {}).get("422", {})
            schema = unprocessable.get("content", {}).get("application/json", {}).get("schema")
            if schema == {"$ref": FRAMEWORK_VALIDATION_ERROR}:
                del operation["responses"]["422"]
            # Powertools gives every answer the handler's return type; a 204 has no body.
            operation.get("responses", {}).get("204", {}).pop("content", None)
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        document["components"]["schemas"].pop(unused, None)


class Gateway:
    def __init__(self, environments: int = 8, readable_logs: bool = False) -> None:
        self.routes = routes()
        self.default = default_route()
        self.schedules = schedules()
        self.consumers = queue_consumers()
        # Push (issue 23): the template's WebSocket API, its functions run in the same pool;
        # its stream routes put on stand-ins that run_stream_consumers reads (issue 37).
        found = websocket_api()
        self.streams = stand_ins(found, stream_consumers())
        self._stop = threading.Event()
        spawn = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(
            max_workers=environments,
            mp_context=spawn,
            initializer=_environment_started,
            initargs=(os.getpid(), readable_logs),
        )
        # The queue and stream consumers and the schedules have environments of their own, one
        # per poller, stream and schedule, as each Lambda function has its own: a burst of HTTP
        # requests never holds up a sweep or a publish (a shared pool made a 1 s sweep wait
        # behind requests).
        self.background = ProcessPoolExecutor(
            max_workers=len(self.schedules)
            + sum(pollers(c) for c in self.consumers)
            + len(self.streams),
            mp_context=spawn,
            initializer=_environment_started,
            initargs=(os.getpid(), readable_logs),
        )
        self._openapi: dict[str, Any] | None = None
        self._asyncapi: bytes | None = None
        self.websocket = (
            None if found is None else LocalWebSocketApi(found, self._invoke, self.streams)
        )

    async def _invoke(self, function: Function, event: dict[str, Any]) -> Any:
        return await asyncio.wrap_future(self.pool.submit(invoke, function, event))

    def openapi(self) -> bytes:
        """The merged document (made once), with request examples valid now."""
        if self._openapi is None:
            self._openapi = openapi_document(self.routes)
        return json.dumps(apidoc.with_fresh_examples(self._openapi)).encode()

    def asyncapi(self) -> bytes:
        if self._asyncapi is None:
            self._asyncapi = json.dumps(bus_contract.document()).encode()
        return self._asyncapi

    def close(self) -> None:
        self._stop.set()
        self.pool.shutdown(cancel_futures=True)
        self.background.shutdown(cancel_futures=True)

    def run_schedules(self, every: Callable[[Schedule], int]) -> None:
        """Invoke each scheduled function on its period, one run at a time, until close().

        As EventBridge's rate(...) does, a run starts a period after the last one started, not
        after it ended: a 1 s sweep whose passes take half a second runs every second, not
        every 1.5 s plus the machine's delays (they made leases outlive their end by 2.5 s
        with no fault at all in `make bench-outage`). A run that outlasts its period is
        followed at once, never overlapped."""

        def loop(schedule: Schedule) -> None:
            period = every(schedule)
            due = time.monotonic() + period
            while not self._stop.wait(max(0.0, due - time.monotonic())):
                try:  # what a run did, its function logs itself
                    self.background.submit(invoke, schedule, scheduled_event(schedule), 60).result()
                except Exception as error:  # a failed run is retried by the next one
                    print(f"{schedule.function} failed: {error!r}", flush=True)
                due = max(due + period, time.monotonic())

        for schedule in self.schedules:
            threading.Thread(target=loop, args=(schedule,), daemon=True).start()

    def run_queue_consumers(self, queue_urls: dict[str, str]) -> None:
        """Feed each SQS-triggered function the way the event source mapping would: long
        polls, batches, the visibility timeout, failed items left for a later receive, and as
        many batches at once as the mapping's MaximumConcurrency (a FIFO queue hands one
        batch per message group at a time, so a job's events still go one batch after the
        other)."""
        import boto3

        sqs = boto3.client("sqs")

        def loop(
            consumer: QueueConsumer, url: str, receiving: contextlib.AbstractContextManager[Any]
        ) -> None:
            def handle(event: dict[str, Any]) -> Any:
                return self.background.submit(invoke, consumer, event, 60).result()

            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            while not self._stop.is_set():
                try:
                    if not poll(sqs, url, consumer.batch_size, handle, arn, receiving):
                        self._stop.wait(idle_pause(url))
                except Exception as error:  # the next poll retries, as the mapping would
                    print(f"{consumer.function} poll failed: {error!r}", flush=True)
                    self._stop.wait(1)

        for consumer in self.consumers:
            url, receiving = queue_urls[consumer.queue], threading.Lock()
            for _ in range(pollers(consumer)):
                threading.Thread(target=loop, args=(consumer, url, receiving), daemon=True).start()

    def run_stream_consumers(self) -> None:
        """Feed each stream-triggered function what its stream route puts on the stand-in,
        the way the Kinesis event source mapping would (consume_stream): one batch at a time
        per stream, as from its one shard, until close()."""

        def loop(stand_in: StreamStandIn) -> None:
            def handle(event: dict[str, Any]) -> Any:
                return self.background.submit(invoke, stand_in.consumer, event, 60).result()

            while not self._stop.is_set():
                if not consume_stream(stand_in, handle):
                    self._stop.wait(STREAM_IDLE_SECONDS)

        for stand_in in self.streams.values():
            threading.Thread(target=loop, args=(stand_in,), daemon=True).start()

    async def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        body: bytes,
        request_id: str | None = None,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request through the route's function, as API Gateway would hand it over."""
        request_id = request_id or new_request_id()
        # API Gateway's HTTP APIs route on the path percent-decoded and hand it on decoded (rawPath
        # and the path parameters alike): `w%C3%B6rker` is the worker `wörker` there, so here
        # too. Decoded before routing, so that the route whose roles are checked is the one the
        # function serves (`/jobs/%6Eearby` is the workers' nearby, never a job's id).
        path = unquote(path)
        found = find(self.routes, method, path, self.default)
        if found is None:  # a template with no $default route: API Gateway's own 404
            return _error(Code.NOT_FOUND, request_id)
        route, path_parameters = found
        claims = None
        if route.authorized:
            authorization = next((v for k, v in headers if k.lower() == "authorization"), None)
            try:
                claims = tokens.as_api_gateway_claims(tokens.verify(authorization))
            except tokens.TokenRefused:
                return _error(Code.UNAUTHORIZED, request_id)
        event = http_api_event(
            route, path_parameters, method, path, query, headers, body, claims,
            request_id=request_id,
        )  # fmt: skip
        result = await asyncio.wrap_future(self.pool.submit(invoke, route, event))
        return _http_answer(result)


# Batches of one queue at once on this machine: the mapping's MaximumConcurrency, at most this
# many (two cores shared with every other part of the stack gain nothing from more processes;
# two still hand out batches at once, as the mapping does).
LOCAL_POLLERS = 2


def pollers(consumer: QueueConsumer) -> int:
    return min(consumer.concurrency, LOCAL_POLLERS)


# moto's FIFO receive, long-polling while every visible message is of a message group already
# in flight (a job whose batch another poller holds), spins for the whole wait: it re-reads the
# queue over and over with the groups in flight as they were when the call began, so even that
# batch's deletion does not end it. A second of the stand-in's processor per such poll, and the
# receive lock held all along (the other poller waited behind it): with 48 clients the
# publisher fell behind from the first seconds, and every SQS call of moto costs more the
# deeper its queue (issue 36, docs/benchmarks.md). FIFO queues are polled without waiting,
# with a pause outside the lock when nothing came; standard queues long-poll, as the mapping.
FIFO_IDLE_SECONDS = 0.1


def is_fifo(url: str) -> bool:
    return url.endswith(".fifo")


def idle_pause(url: str) -> float:
    """How long a poller waits after a receive that brought nothing."""
    return FIFO_IDLE_SECONDS if is_fifo(url) else 0.0


def poll(
    sqs: Any,
    url: str,
    batch_size: int,
    handle: Callable[[dict[str, Any]], Any],
    queue_arn: str | None = None,
    receiving: contextlib.AbstractContextManager[Any] | None = None,
) -> int:
    """One poll of a local event source mapping: a long poll of a standard queue, a short one
    of a FIFO queue (FIFO_IDLE_SECONDS); returns messages delivered."""
    return deliver_batch(
        sqs,
        url,
        batch_size,
        handle,
        wait_seconds=0 if is_fifo(url) else 1,
        queue_arn=queue_arn,
        receiving=receiving,
    )


def deliver_batch(
    sqs: Any,
    url: str,
    batch_size: int,
    handle: Callable[[dict[str, Any]], Any],
    wait_seconds: int = 1,
    retry_failed_now: bool = False,
    queue_arn: str | None = None,
    receiving: contextlib.AbstractContextManager[Any] | None = None,
) -> int:
    """One receive, one invocation, then delete what succeeded; returns messages received.

    Failed items stay on the queue until their visibility timeout ends (`retry_failed_now`
    ends it at once, standing for time passing in tests); after `maxReceiveCount` receives
    SQS moves them to the dead-letter queue. Pollers of one queue receive one at a time
    (`receiving`): moto's FIFO queue decides which message groups are in flight at the start
    of a receive, so two receives at once could hand out the same job's messages together,
    which SQS never does.
    """
    with receiving or contextlib.nullcontext():
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=batch_size,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=["All"],
        ).get("Messages", [])
    if not messages:
        return 0
    arn = (
        queue_arn
        or sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
    )
    try:
        answer = handle({"Records": [sqs_record(m, arn) for m in messages]}) or {}
        failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
    except Exception:  # an invocation that fails fails its whole batch, as in Lambda
        failed = {m["MessageId"] for m in messages}
    done = [
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
        for i, m in enumerate(messages)
        if m["MessageId"] not in failed
    ]
    if done:
        sqs.delete_message_batch(QueueUrl=url, Entries=done)
    if retry_failed_now:
        for m in messages:
            if m["MessageId"] in failed:
                sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                )
    return len(messages)


def sqs_record(message: Mapping[str, Any], queue_arn: str) -> dict[str, Any]:
    """An SQS message as the Lambda event source mapping hands it over."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


# How often a stream's loop looks for a due batch when none was: a position waits the batching
# window (a second), and about this much more.
STREAM_IDLE_SECONDS = 0.1


def consume_stream(
    stand_in: StreamStandIn, handle: Callable[[dict[str, Any]], Any], now: float | None = None
) -> int:
    """One turn of a local Kinesis event source mapping at `now` (a Unix time; the clock's
    when not given): the batch that is due, if one is (StreamStandIn.ready), handed to the
    function; a batch whose invocation fails is tried again up to the mapping's
    MaximumRetryAttempts, then skipped with a line in the log (what the stream carries is
    disposable: a worker's next position replaces the lost one). Returns the records taken."""
    if not stand_in.ready(now):
        return 0
    batch = stand_in.take(now)
    if not batch:  # every record past the mapping's maximum age
        return 0
    event, consumer = stand_in.event(batch), stand_in.consumer
    tries = 1 + consumer.retries
    for tried in range(1, tries + 1):
        try:
            handle(event)
            break
        except Exception as error:  # an invocation that fails fails its whole batch
            if tried == tries:
                print(
                    f"{consumer.function}: a batch of {len(batch)} records skipped after"
                    f" {tries} tries: {error!r}",
                    flush=True,
                )
    return len(batch)


def _error(
    code: Code, request_id: str, details: list[dict[str, Any]] | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """An answer the gateway gives itself (API Gateway's own 401, 404, 413), in the contract's
    error body with the request's own id."""
    body = to_json(error_body(code, request_id, details)).encode()
    return DispatchError(code).status, [("Content-Type", "application/json")], body


def _http_answer(result: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
    headers += [("Set-Cookie", cookie) for cookie in result.get("cookies") or []]
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return int(result.get("statusCode", 200)), headers, body


PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
}
REQUEST_ID = "dispatch.request_id"  # where a request's id waits in its ASGI scope
REQUEST_ID_HEADER = "apigw-requestid"  # API Gateway's name for it


def request_id_of(request: Request) -> str:
    return str(request.scope.get(REQUEST_ID) or new_request_id())


def app(gateway: Gateway, log_requests: bool = False) -> Any:
    """The local API Gateway as an ASGI app (served by uvicorn): a few local pages, and every
    other request to its function. Every answer carries its request's own id (in the error
    body too); with `log_requests`, each request prints one line."""

    async def function(request: Request) -> Response:
        request_id = request_id_of(request)
        declared = int(request.headers.get("content-length") or 0)
        body = b""
        if declared <= MAX_REQUEST_BYTES:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_REQUEST_BYTES:
                    break
        if declared > MAX_REQUEST_BYTES or len(body) > MAX_REQUEST_BYTES:
            status, headers, answer = _error(Code.PAYLOAD_TOO_LARGE, request_id)
        else:
            try:
                status, headers, answer = await gateway.handle(
                    request.method,
                    request.scope["raw_path"].decode("latin-1"),
                    request.scope["query_string"].decode("latin-1"),
                    [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
                    body,
                    request_id,
                )
            except Exception:  # the environment itself died: what API Gateway calls a 502/500
                traceback.print_exc()
                status, headers, answer = _error(Code.INTERNAL, request_id)
        response = Response(b"" if request.method == "HEAD" else answer, status_code=status)
        response.raw_headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in headers
            if name.lower() not in ("content-length", "connection", "transfer-encoding")
        ] + [(b"content-length", str(len(answer)).encode())]
        return response

    async def openapi(_: Request) -> Response:
        return Response(gateway.openapi(), media_type="application/json")

    async def asyncapi(_: Request) -> Response:
        return Response(gateway.asyncapi(), media_type="application/json")

    async def docs(_: Request) -> Response:
        return HTMLResponse(SWAGGER_UI)

    async def home(request: Request) -> Response:
        base = f"{request.url.scheme}://{request.url.netloc}"
        return HTMLResponse(HOME.format(base=html.escape(base)), headers=PAGE_HEADERS)

    async def favicon(_: Request) -> Response:
        return Response(
            FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
        )

    # Push (issue 23): the WebSocket API on the same port, and its management API.
    push = [] if gateway.websocket is None else gateway.websocket.routes()

    async def unmatched(request: Request, _: Exception) -> Response:
        # What no page or pattern takes (a newline in a path: `{path:path}` is `.*`, which
        # stops at one; a method a page has not got) goes where API Gateway sends it: to the
        # $default route, in the contract's body, never Starlette's 404 or 405 in plain text.
        return await function(request)

    pages = Starlette(
        exception_handlers={404: unmatched, 405: unmatched},
        routes=[
            *push,
            page("/", home),
            page("/favicon.ico", favicon),
            page("/openapi.json", openapi),
            page("/asyncapi.json", asyncapi),
            page("/docs", docs),
            page("/docs/", docs),
            routing.Mount("/docs/assets", GetOnlyFiles(directory=SWAGGER_UI_FILES)),
            routing.Route("/{path:path}", function),  # every method
        ],
    )
    return RequestIds(pages, log_requests)


def page(path: str, endpoint: Callable[[Request], Any]) -> routing.Route:
    """A local page, for GET alone, as the console's page is in AWS (a GET route of the HTTP
    API, which answers no HEAD for it): Starlette would answer HEAD too."""
    route = routing.Route(path, endpoint, methods=["GET"])
    route.methods = {"GET"}
    return route


class GetOnlyFiles(StaticFiles):
    """Swagger UI's files, for GET alone, like the pages: any other method goes on to the
    gateway's $default answer (a 405 here is handed to it), not StaticFiles' plain-text 405."""

    async def get_response(self, path: str, scope: Any) -> Response:
        if scope["method"] != "GET":
            raise HTTPException(status_code=405)
        return await super().get_response(path, scope)


class RequestIds:
    """ASGI middleware: each request gets its own id (the event's requestId, the error body's
    request_id, the `apigw-requestid` answer header), and, when asked, one log line."""

    def __init__(self, inner: Any, log_requests: bool) -> None:
        self.inner, self.log_requests = inner, log_requests

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request_id = new_request_id()
        scope[REQUEST_ID] = request_id
        began = time.perf_counter()
        status = 500

        async def send_with_id(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (REQUEST_ID_HEADER.encode(), request_id.encode()),
                    ],
                }
            await send(message)

        try:
            await self.inner(scope, receive, send_with_id)
        finally:
            if self.log_requests:
                path = scope.get("raw_path", b"").decode("latin-1") or scope["path"]
                ms = (time.perf_counter() - began) * 1000
                logs.print_request(scope["method"], path, status, ms, request_id)


PROTOCOL_LOGGER = logging.getLogger("dispatch_local.gateway.http")
PROTOCOL_LOGGER.setLevel(logging.ERROR)


class NotHttpAnswered:
    """uvicorn's protocol mixin: bytes that are not an HTTP request (a garbage request line,
    a broken header) get the contract's 400 in JSON with an id of its own, not uvicorn's plain
    text, and a log line like any request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn warns of a bad request on a line of its own; ours says it, with its id.
        self.logger = PROTOCOL_LOGGER

    def send_400_response(self, msg: str) -> None:
        request_id = new_request_id()
        details = [{"field": "request", "problem": "not a valid HTTP/1.1 request"}]
        status, _, body = _error(Code.VALIDATION_FAILED, request_id, details)
        head = (
            f"HTTP/1.1 {status} Bad Request\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            f"{REQUEST_ID_HEADER}: {request_id}\r\n"
            "connection: close\r\n\r\n"
        )
        transport = self.transport  # type: ignore[attr-defined]
        transport.write(head.encode("latin-1") + body)
        transport.close()
        if getattr(self, "log_requests", False):
            logs.print_request("-", "-", status, 0, request_id)


def http_protocol(log_requests: bool) -> type:
    """The HTTP protocol uvicorn would pick (httptools when installed, else h11), answering
    what is not HTTP in the contract's error body."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]
    return type("DispatchHttpProtocol", (NotHttpAnswered, Base), {"log_requests": log_requests})
