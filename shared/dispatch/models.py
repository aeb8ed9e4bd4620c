"""Base classes of what crosses the API.

Input models (`Strict`) refuse anything unexpected. Output models (`Resource`) describe what
the service writes; they never re-check input rules. A `Document` is an output whose values
Postgres wrote once (`dispatch_job`, `dispatch_event` in the migrations): the API sends those
values and the bus carries the very same, so the two can never disagree.
"""

import json
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Strict(BaseModel):
    """Input models refuse unknown fields and NaN/infinity."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Resource(BaseModel):
    """An answer body; `to_json` is what the API sends and an idempotent replay stores."""

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

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
        # The model's field order (jsonb keeps its own), the database's values.
        fields = type(self).model_fields
        ordered = {name: self._document[name] for name in fields if name in self._document}
        return {**ordered, **self._document}
