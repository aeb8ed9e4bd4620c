"""Base classes of what crosses the API.

Input models (`Strict`) refuse anything unexpected. Output models (`Resource`) describe what
the service writes; they never re-check input rules. A `Document` is an output whose values
Postgres wrote once (`dispatch_job`, `dispatch_event` in the migrations): the API sends those
values and the bus carries the very same, so the two can never disagree.
"""

import json
import types
from typing import Any, Self, Union, get_args, get_origin
from uuid import UUID

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Strict(BaseModel):
    """Input models refuse unknown fields and NaN/infinity."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Resource(BaseModel):
    """An answer body; `to_json` is what the API sends and an idempotent replay stores."""

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def changed_job(self) -> UUID | None:
        """The job whose events a successful write of this answer left to relay, if any."""
        return None

    def to_json(self) -> str:
        return json.dumps(self.document(), separators=(",", ":"), ensure_ascii=False)


class Document(Resource):
    """An output written by Postgres: parsed for its types, sent with its own values."""

    _document: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> Self:
        parsed = cls.model_validate(document)
        parsed._document = document
        return parsed

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.from_document(json.loads(text))

    def document(self) -> dict[str, Any]:
        # The database's values in the model's field order (jsonb keeps an order of its own).
        ordered: dict[str, Any] = _in_field_order(type(self), self._document)
        return ordered


def _in_field_order(kind: Any, value: Any) -> Any:
    """`value` with every object's keys in the order the model `kind` declares them."""
    if get_origin(kind) in (Union, types.UnionType):
        models = [k for k in get_args(kind) if k is not type(None)]
        return _in_field_order(models[0], value) if len(models) == 1 else value
    if get_origin(kind) is list and isinstance(value, list):
        (item,) = get_args(kind)
        return [_in_field_order(item, v) for v in value]
    if isinstance(kind, type) and issubclass(kind, BaseModel) and isinstance(value, dict):
        fields = kind.model_fields
        ordered = {
            name: _in_field_order(fields[name].annotation, value[name])
            for name in fields
            if name in value
        }
        return ordered | {name: v for name, v in value.items() if name not in ordered}
    return value
