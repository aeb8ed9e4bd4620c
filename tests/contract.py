"""The bus contract, checked: every event validates against the AsyncAPI document, and is
written in the one form of every answer and event (compact JSON, keys in the model's order).

Validation is strict (no field beyond the document's), so a storage column that leaks into an
event fails here even though consumers are told to ignore unknown fields.
"""

import json
import types
import typing
from functools import cache
from typing import Any, get_args, get_origin

from jsonschema import Draft202012Validator
from pydantic import BaseModel

from dispatch import db
from dispatch.events import Event
from dispatch.models import to_json
from dispatch_local import asyncapi

STORED_EVENTS = """
SELECT dispatch_event(e)::text AS text FROM job_events e
UNION ALL
SELECT dispatch_event(o)::text AS text FROM offer_events o
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


def model_of(annotation: Any) -> Any:
    """The model (or list of models) inside an annotation such as `Job | None`; for a union of
    events (AnyEvent) the envelope, whose own model the event's type names; any other union
    (`Code | str`) as it is: no model to order."""
    if get_origin(annotation) is typing.Annotated:
        return model_of(get_args(annotation)[0])
    if get_origin(annotation) in (types.UnionType, typing.Union):
        inner = [model_of(a) for a in get_args(annotation) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
        if all(isinstance(a, type) and issubclass(a, Event) for a in inner):
            return Event
        return annotation
    return annotation


def in_model_order(value: Any, annotation: Any, where: str = "") -> None:
    """Every object's keys in its model's field order (a field may be left out, never moved)."""
    if value is None:  # a null has no order; whether the field may be null, the model says
        return
    annotation = model_of(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Event) and isinstance(value, dict):
        annotation = asyncapi.EVENT_MODELS[value["type"]]  # the event's own model, by its type
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        assert isinstance(value, dict), where
        fields = list(annotation.model_fields)
        assert list(value) == [f for f in fields if f in value], (where, list(value), fields)
        for name, field in annotation.model_fields.items():
            if name in value:
                in_model_order(value[name], field.annotation, f"{where}.{name}")
    elif get_origin(annotation) is list and isinstance(value, list):
        (item,) = get_args(annotation)
        for n, element in enumerate(value):
            in_model_order(element, item, f"{where}[{n}]")


def in_the_one_form(text: str, model: Any) -> Any:
    """`text` is exactly the one form of its own values, in `model`'s order; those values."""
    value = json.loads(text)
    assert text == to_json(value), text[:300]
    in_model_order(value, model)
    return value


def validate_stored_events(conn: db.Connection) -> int:
    """Every job and offer event in the database against the document, and in the one form;
    how many there were."""
    rows = conn.execute(STORED_EVENTS).fetchall()
    for row in rows:
        assert_valid_event(in_the_one_form(row["text"], Event))
    return len(rows)
