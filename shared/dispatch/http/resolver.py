"""HTTP glue shared by every API function: access rules, the error body, idempotent commands.

A handler module creates one `DispatchResolver` (a `dispatch.http.keyed.KeyedResolver` when a
route changes state under an Idempotency-Key and keeps its answer), declares its routes with
`endpoint(...)` (method, path and the roles allowed), and exports
`lambda_handler = entrypoint(app)`.
Before any route code or body validation runs, the gate answers, in this order:
401 (no identity), 403 (wrong role), 413 (body too large), 400 (state change without an
Idempotency-Key). Every error, whoever raises it, leaves in the contract's error body.
"""

import base64
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import psycopg
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch.auth import Caller, Role, caller_from_event
from dispatch.config import settings
from dispatch.entrypoints import lambda_entrypoint
from dispatch.errors import CacheUnavailable, Code, DispatchError, error_body, error_headers
from dispatch.http import body
from dispatch.models import Resource, to_json
from dispatch.observability import logger

JSON = "application/json"
IDEMPOTENCY_KEY = re.compile(r"^[!-~]{1,255}$")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OPERATION_ID = re.compile(r"[a-z][a-zA-Z0-9]*")  # camelCase: what a generated client calls


def error_response(
    code: Code, request_id: str, details: list[dict[str, Any]] | None = None
) -> Response[Any]:
    return Response(
        status_code=DispatchError(code).status,
        content_type=JSON,
        body=to_json(error_body(code, request_id, details)),
        headers=error_headers(code),
    )


def route_key(method: str, rule: str) -> str:
    """Powertools writes /jobs/<job_id>; API Gateway's routeKey says POST /jobs/{job_id}."""
    return method.upper() + " " + re.sub(r"<(\w+)>", r"{\1}", rule)


class DispatchResolver(APIGatewayHttpResolver):
    keeps_answers = False  # a KeyedResolver keeps state changes' answers under their keys

    def __init__(self) -> None:
        # Bodies are read within limits a hostile body cannot break (dispatch.http.body).
        # Answers are written in the one form (dispatch.models.to_json).
        super().__init__(
            enable_validation=True, json_body_deserializer=body.parse, serializer=to_json
        )
        self._access: dict[str, frozenset[Role] | None] = {}
        self._unstored: set[str] = set()  # state changes whose answers are never stored
        self._locations: dict[str, str] = {}  # a 201's Location, by route key
        self.exception_handler(DispatchError)(self._on_dispatch_error)
        self.exception_handler(RequestValidationError)(self._on_invalid_request)
        self.exception_handler(psycopg.OperationalError)(self._on_database_unavailable)
        self.exception_handler(CacheUnavailable)(self._on_cache_unavailable)
        self.exception_handler(Exception)(self._on_unexpected)
        self.not_found()(self._on_no_route)

    # -- declaring routes ---------------------------------------------------------------
    def endpoint(
        self,
        method: str,
        rule: str,
        *,
        roles: Collection[Role] | None,
        operation_id: str,
        stores_answers: bool = True,
        location: str | None = None,
        **kwargs: Any,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A route, who may call it (`roles=None`: anyone, no token needed) and the name a
        generated client calls it by (`acceptJob`). A state change whose answer is not kept
        under its key (latest wins) says `stores_answers=False`. A route answering 201 says
        where the new thing is: `location`, filled from the answer's fields (`/jobs/{id}`)."""
        if not OPERATION_ID.fullmatch(operation_id):
            raise ValueError(f"operation_id {operation_id!r} is not camelCase")
        key = route_key(method, rule)
        if 201 in kwargs.get("responses", {}):
            if location is None:
                raise ValueError(f"{key} answers 201 and needs a location")
            self._locations[key] = location
        if method.upper() in STATE_CHANGING and stores_answers and not self.keeps_answers:
            raise ValueError(
                f"{key} keeps its answer under the Idempotency-Key: declare it on a"
                " KeyedResolver (dispatch.http.keyed), or say stores_answers=False"
            )
        self._access[key] = None if roles is None else frozenset(roles)
        if not stores_answers:
            self._unstored.add(key)
        return self.route(rule, method, operation_id=operation_id, **kwargs)

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "") -> re.Pattern[str]:
        """A path parameter is any one segment: Powertools' own pattern (word characters and
        some punctuation) would answer 404 for a control byte, U+FFFD or a no-break space,
        which are the parameter's validation to refuse (400 naming it) or accept."""
        segments = re.sub(r"<(\w+)>", r"(?P<\1>[^/]+)", rule)
        return re.compile(rf"^{segments}\Z", re.DOTALL)

    def roles_of(self, route_key: str) -> frozenset[Role] | None:
        """Who may call a declared route (`POST /jobs/{job_id}/accept`); None: anyone."""
        return self._access[route_key]

    @property
    def caller(self) -> Caller:
        caller: Caller = self.context["caller"]
        return caller

    @property
    def request_id(self) -> str:
        return request_id_of(self.current_event.raw_event, self.lambda_context)

    # -- the gate -----------------------------------------------------------------------
    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        access_key = event.get("routeKey", "")
        if access_key in self._access:
            caller = caller_from_event(event)
            refused = self._gate(event, self._access[access_key], caller)
            if refused is not None:
                code, details = refused
                return _lambda_error(code, request_id_of(event, context), details)
            self.context["caller"] = caller
        if event.get("body"):
            # The API speaks JSON only: a body is read as JSON whatever Content-Type says
            # (curl's default form type included), never as a form or a 500.
            event = {**event, "headers": {**(event.get("headers") or {}), "content-type": JSON}}
        return super().resolve(event, context)

    def _gate(
        self, event: Mapping[str, Any], roles: frozenset[Role] | None, caller: Caller | None
    ) -> tuple[Code, list[dict[str, Any]] | None] | None:
        if roles is None:
            return None
        if caller is None:
            return Code.UNAUTHORIZED, None
        if not caller.roles & roles:
            return Code.FORBIDDEN, None
        try:
            body = raw_body(event)
        except ValueError:
            return Code.VALIDATION_FAILED, [{"field": "body", "problem": "must be UTF-8 JSON"}]
        if len(body) > settings().max_body_bytes:
            return Code.PAYLOAD_TOO_LARGE, None
        method = ((event.get("requestContext") or {}).get("http") or {}).get("method", "")
        if method.upper() in STATE_CHANGING:
            key = (event.get("headers") or {}).get("idempotency-key")
            if key is None:
                return Code.IDEMPOTENCY_KEY_REQUIRED, None
            if not IDEMPOTENCY_KEY.match(key):
                problem = "must be 1 to 255 visible ASCII characters"
                return Code.VALIDATION_FAILED, [{"field": "Idempotency-Key", "problem": problem}]
        return None

    def _replay(self) -> Response[Any] | None:
        """The stored answer of this request, were it a retry: none here (KeyedResolver keeps
        answers)."""
        return None

    @staticmethod
    def answer(resource: Resource, status: int = 200) -> Response[Any]:
        """A read's answer: the resource's own JSON (for documents, the database's values)."""
        return Response(status, JSON, resource.to_json())

    # -- errors -------------------------------------------------------------------------
    def _on_dispatch_error(self, error: DispatchError) -> Response[Any]:
        return error_response(error.code, self.request_id, error.details or None)

    def _on_invalid_request(self, error: RequestValidationError) -> Response[Any]:
        replayed = self._replay()
        if replayed is not None:
            return replayed
        details = [_detail(item) for item in error.errors()]
        return error_response(Code.VALIDATION_FAILED, self.request_id, details)

    def _on_database_unavailable(self, error: psycopg.OperationalError) -> Response[Any]:
        logger.warning("database unavailable", exc_info=error)
        return error_response(Code.UNAVAILABLE, self.request_id)

    def _on_cache_unavailable(self, error: Exception) -> Response[Any]:
        logger.warning("redis unavailable", exc_info=error)
        return error_response(Code.UNAVAILABLE, self.request_id)

    def _on_unexpected(self, error: Exception) -> Response[Any]:
        logger.exception("unexpected error", exc_info=error)
        return error_response(Code.INTERNAL, self.request_id)

    def _on_no_route(self, _: Exception) -> Response[Any]:
        return error_response(Code.NOT_FOUND, self.request_id)


def _detail(item: Mapping[str, Any]) -> dict[str, Any]:
    """One validation error as the contract's details name it: the field, the problem."""
    loc = item.get("loc", ())
    if item.get("type") == "json_invalid":  # loc is ("body", the character it failed at)
        where = f", at character {loc[-1]}" if len(loc) > 1 else ""
        reason = (item.get("ctx") or {}).get("error", "does not parse")
        return {"field": "body", "problem": f"is not JSON: {reason}{where}"}
    field = ".".join(str(part) for part in loc if part != "body")
    return {"field": field or "body", "problem": item.get("msg", "is not valid")}


def raw_body(event: Mapping[str, Any]) -> str:
    """The body as text; ValueError when it is not base64 of UTF-8 as announced."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return base64.b64decode(body, validate=True).decode("utf-8")
    return str(body)


def request_id_of(event: Mapping[str, Any], context: Any) -> str:
    request_id = (event.get("requestContext") or {}).get("requestId")
    return str(request_id or getattr(context, "aws_request_id", "") or "unknown")


def _lambda_error(
    code: Code, request_id: str, details: list[dict[str, Any]] | None
) -> dict[str, Any]:
    return {
        "statusCode": DispatchError(code).status,
        "headers": {"Content-Type": JSON, **error_headers(code)},
        "body": to_json(error_body(code, request_id, details)),
        "isBase64Encoded": False,
    }


def entrypoint(app: DispatchResolver) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """The Lambda handler of an API function (`dispatch.entrypoints`: settings at cold start,
    metrics flushed), its logs correlated by the API Gateway request id."""
    return lambda_entrypoint(app.resolve, correlation_paths.API_GATEWAY_HTTP)
