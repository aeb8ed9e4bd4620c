"""Base classes of what crosses the API.

Every model of the layer is a `Model`: its validator and serializer are built on first use, not
when its module is imported, so a function's cold start builds none of the models its routes
never use (dispatch.jobs.models alone holds 18); a SnapStart snapshot carries them all built.

Input models (`Strict`) refuse anything unexpected. Output models (`Resource`) describe what
the service writes; they never re-check input rules. A `Document` is an output whose values
Postgres wrote once (`dispatch_job`, `dispatch_event` in the migrations): the API sends those
values and the bus carries the very same, so the two can never disagree.
"""

import json
import re
from typing import Annotated, Any, Self
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr, WithJsonSchema
from pydantic_core import PydanticCustomError

from dispatch.snapshots import before_snapshot

# An id in the path or a body: a UUID written 8-4-4-4-12 in hex, either case (RFC 9562 reads
# them case-insensitively); lower-cased before anything reads it, the idempotency fingerprint
# included, so one id has one spelling. Braces, urn:uuid:, 32 bare digits are refused: taken
# silently, a retry under another spelling would be a different request.
API_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
ID_FIELDS = frozenset({"job_id", "photo_id"})  # where ApiId is read (path and body)


def _canonical_id(value: Any) -> Any:
    if isinstance(value, str) and API_ID.fullmatch(value):
        return value.lower()
    if isinstance(value, UUID):
        return value
    raise PydanticCustomError(
        "uuid_form", "must be a UUID written 8-4-4-4-12 in hex (either case), nothing around it"
    )


ApiId = Annotated[
    UUID,
    BeforeValidator(_canonical_id),
    WithJsonSchema({"type": "string", "format": "uuid", "pattern": f"^{API_ID.pattern}$"}),
]


def _whole(value: Any) -> Any:
    # JSON Schema counts 1.0 and 1e0 as the integer 1; 1.5 stays a float, which the strict
    # int after this refuses.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field: a whole number in any JSON spelling (1, 1.0, 1e0); never a string or bool.
# An optional one puts its bounds before it, `Annotated[int, Field(ge=1), WHOLE] | None`: bounds
# on the union would not reach the JSON Schema as minimum/maximum.
WHOLE = BeforeValidator(_whole)
WholeNumber = Annotated[int, WHOLE]


def to_json(value: Any) -> str:
    """The one form of every answer and every event: compact JSON (no space after a colon or a
    comma) with the keys in the order given, which is the model's field order (Postgres writes
    its documents with row_to_json of a declared type, pydantic dumps in field order), and text
    as it is (no \\u escapes but those JSON needs), as row_to_json writes it. So an answer made
    by the database and one made here read alike, byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Model(BaseModel):
    """The base of every model of the layer: built on its first use (defer_build)."""

    model_config = ConfigDict(defer_build=True)


@before_snapshot
def _build_every_model() -> None:
    """A restored environment builds no model on its first request: the snapshot has them."""
    todo: list[type[BaseModel]] = [Model]
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)


class Strict(Model):
    """Input models refuse unknown fields and NaN/infinity."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Resource(Model):
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
