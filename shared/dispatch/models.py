"""Base classes of what crosses the API.

Input models (`Strict`) refuse anything unexpected. Output models (`Resource`) describe what
the service writes; they never re-check input rules. A `Document` is an output whose values
Postgres wrote once (`dispatch_job`, `dispatch_event` in the migrations): the API sends those
values and the bus carries the very same, so the two can never disagree.
"""

import json
from typing import Any, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, PrivateAttr


def to_json(value: Any) -> str:
    """The one form of every answer and every event: compact JSON (no space after a colon or a
    comma) with the keys in the order given, which is the model's field order (Postgres writes
    its documents with row_to_json of a declared type, pydantic dumps in field order), and text
    as it is (no \\u escapes but those JSON needs), as row_to_json writes it. So an answer made
    by the database and one made here read alike, byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
        return to_json(self.document())


class Document(Resource):
    """An output written by Postgres: parsed for its types, sent with its own values (and, when
    the statement gave it, its own text: what an idempotent replay will send again)."""

    _document: dict[str, Any] = PrivateAttr(default_factory=dict)
    _text: str | None = PrivateAttr(None)

    @classmethod
    def from_document(cls, document: dict[str, Any], text: str | None = None) -> Self:
        parsed = cls.model_validate(document)
        parsed._document, parsed._text = document, text
        return parsed

    @classmethod
    def from_json(cls, text: str) -> Self:
        """A document as Postgres wrote it, sent on as it came (the relay's message is the
        event as `dispatch_event` wrote it)."""
        return cls.from_document(json.loads(text), text)

    def document(self) -> dict[str, Any]:
        return self._document

    def to_json(self) -> str:
        return self._text if self._text is not None else super().to_json()
