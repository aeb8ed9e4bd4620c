"""API Gateway HTTP API (payload format 2.0) events and a Lambda context, built faithfully."""

import base64
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from dispatch_local.template import Route


def http_api_event(
    route: Route,
    path_parameters: dict[str, str],
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    claims: dict[str, str] | None,
    source_ip: str = "127.0.0.1",
    request_id: str | None = None,
) -> dict[str, Any]:
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(part.strip() for part in value.split(";") if part.strip())
            continue
        merged[lower] = f"{merged[lower]},{value}" if lower in merged else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    now = datetime.now(UTC)
    request_context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": merged.get("host", "127.0.0.1"),
        "domainPrefix": merged.get("host", "127.0.0.1").split(".")[0],
        "http": {
            "method": method.upper(),
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": merged.get("user-agent", ""),
        },
        "requestId": request_id or new_request_id(),
        "routeKey": route.route_key,
        "stage": "$default",
        "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(now.timestamp() * 1000),
    }
    if claims is not None:
        request_context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": merged,
        "requestContext": request_context,
        "isBase64Encoded": encoded,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body:
        event["body"] = text
    return event


def new_request_id() -> str:
    """A request's own id, as API Gateway gives every request one (its `apigw-requestid`)."""
    return str(uuid.uuid4())


@dataclass
class LambdaContext:
    function_name: str
    memory_limit_in_mb: int = 512
    timeout_seconds: int = 29
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self.started)) * 1000))
