"""OpenAPI descriptions shared by the functions: the error body and the answers of a route."""

from typing import Any, Literal

from pydantic import BaseModel

from dispatch.errors import CATALOGUE, Code


class ErrorDetail(BaseModel):
    field: str
    problem: str


class ErrorInfo(BaseModel):
    code: Code
    message: str
    request_id: str
    details: list[ErrorDetail] | None = None


class ErrorBody(BaseModel):
    error: ErrorInfo


class Health(BaseModel):
    status: Literal["ok"]


def answers(status: int, model: type[BaseModel]) -> dict[int, Any]:
    """The success answer and every error status the contract may give."""
    documented: dict[int, Any] = {
        status: {"description": "Success", "content": {"application/json": {"model": model}}}
    }
    for spec in CATALOGUE.values():
        documented.setdefault(
            spec.status,
            {"description": "Error", "content": {"application/json": {"model": ErrorBody}}},
        )
    return documented
