"""The bus contract, checked: every event validates against the AsyncAPI document.

Validation is strict (no field beyond the document's), so a storage column that leaks into an
event fails here even though consumers are told to ignore unknown fields.
"""

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from dispatch import db
from dispatch_local import asyncapi

STORED_EVENTS = """
SELECT dispatch_event(e) AS document FROM job_events e
UNION ALL
SELECT dispatch_event(o) AS document FROM offer_events o
"""


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        closed = {key: _strict(value) for key, value in schema.items()}
        if "properties" in closed and closed.get("type") == "object":
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def validator_for(document: dict[str, Any], event_type: str) -> Draft202012Validator | None:
    message = document["components"]["messages"].get(event_type)
    if message is None:
        return None
    schema = {**message["payload"], "components": _strict(document["components"])}
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@cache
def _generated(event_type: str) -> Draft202012Validator | None:
    return validator_for(asyncapi.document(), event_type)


def assert_valid_event(event: dict[str, Any], document: dict[str, Any] | None = None) -> None:
    """`event` (the bus's detail) is one of the document's messages and matches its payload;
    the document generated from the code unless one (say, a served one) is given."""
    kind = event.get("type", "")
    validator = _generated(kind) if document is None else validator_for(document, kind)
    assert validator is not None, f"event type {kind!r} is not in the AsyncAPI document"
    errors = sorted(validator.iter_errors(event), key=str)
    assert not errors, f"{kind} does not match the AsyncAPI document: {errors[0]}"


def validate_stored_events(conn: db.Connection) -> int:
    """Every job and offer event in the database against the document; how many there were."""
    rows = conn.execute(STORED_EVENTS).fetchall()
    for row in rows:
        assert_valid_event(row["document"])
    return len(rows)
