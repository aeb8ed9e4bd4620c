"""OpenAPI descriptions shared by the functions: the error body and the answers of a route."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from dispatch.errors import CATALOGUE, RETRY_AFTER_S, Code
from dispatch.models import Model


class ErrorDetail(Model):
    field: str
    problem: str


class ErrorInfo(Model):
    # The known codes are listed (Code), the set is not closed: a code added later must not
    # break a client generated today, which reads an unknown code by its status.
    code: Code | str = Field(
        description="One of the known codes (`Code`), or one added later: act on the status."
    )
    message: str
    request_id: str
    details: list[ErrorDetail] | None = None


class ErrorBody(Model):
    error: ErrorInfo


class Health(Model):
    status: Literal["ok"]


# Codes every route of a kind can answer; a route adds its own business codes.
SERVER = (Code.INTERNAL, Code.UNAVAILABLE)
SIGNED_IN = (Code.UNAUTHORIZED, Code.FORBIDDEN, *SERVER)
READ = (Code.VALIDATION_FAILED, *SIGNED_IN)
# A state change: the gate (413, the key), validation, and the idempotency key's own answers.
KEYED_WRITE = (
    Code.VALIDATION_FAILED,
    Code.IDEMPOTENCY_KEY_REQUIRED,
    Code.PAYLOAD_TOO_LARGE,
    Code.REQUEST_IN_PROGRESS,
    Code.IDEMPOTENCY_KEY_REUSED,
    *SIGNED_IN,
)


def answers(status: int, model: type[BaseModel] | None, *codes: Code) -> dict[int, Any]:
    """The success answer and exactly the error statuses this route can give, each listing its
    codes (tests/fuzz proves every one of them reachable)."""
    documented: dict[int, Any] = {status: {"description": "Success"}}
    if model is not None:
        documented[status]["content"] = {"application/json": {"model": model}}
    if status == 201:
        documented[status]["headers"] = {"Location": LOCATION}
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(CATALOGUE[code].status, []).append(code.value)
    for error_status, names in sorted(by_status.items()):
        documented[error_status] = {
            "description": ", ".join(dict.fromkeys(names)),
            "content": {"application/json": {"model": ErrorBody}},
        }
        if error_status == 503:
            documented[error_status]["headers"] = {"Retry-After": RETRY_AFTER}
    return documented


LOCATION = {
    "description": "Where the new thing is (the job, the application, the upload URL).",
    "required": True,
    "schema": {"type": "string"},
}
RETRY_AFTER = {
    "description": f"Seconds to wait before retrying ({RETRY_AFTER_S}).",
    "required": True,
    "schema": {"type": "integer"},
}
