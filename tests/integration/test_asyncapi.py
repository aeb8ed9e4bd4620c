"""The AsyncAPI document: valid AsyncAPI 3.0, one message per event type the code and the
database know, and drift fails here (a new type must be described before it can be sent)."""

import json
import re
from typing import Any

import jsonschema
import pytest

from dispatch import db
from dispatch.choice.models import BACK_TO_CHOICE, ApplicationEventType
from dispatch.jobs.models import JobEventType
from dispatch.offers.models import OfferEventType
from dispatch_local import REPO_ROOT, asyncapi
from dispatch_local.template import websocket_api
from tests.contract import assert_valid_event

SPEC = REPO_ROOT / "tests" / "vendor" / "asyncapi-specs" / "3.0.0.json"


def spec_errors(document: dict[str, Any]) -> list[str]:
    spec = json.loads(SPEC.read_text())
    validator = jsonschema.validators.validator_for(spec)(spec)
    return [error.message for error in validator.iter_errors(document)]


def test_the_document_is_valid_asyncapi_3() -> None:
    assert spec_errors(asyncapi.document()) == []
    broken = asyncapi.document()
    del broken["info"]
    assert spec_errors(broken), "the official schema must refuse a document without info"


def allowed_types(conn: db.Connection, constraint: str) -> set[str]:
    row = conn.execute(
        "SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conname = %s",
        (constraint,),
    ).fetchone()
    assert row is not None
    return set(re.findall(r"'([a-z_.]+)'", row["definition"]))


def test_every_type_the_code_and_the_database_know_is_described(conn: db.Connection) -> None:
    described = set(asyncapi.document()["components"]["messages"]) - {"position"}  # sent
    in_code = (
        {t.value for t in JobEventType}
        | {t.value for t in OfferEventType}
        | {t.value for t in ApplicationEventType}
        | {BACK_TO_CHOICE}
    )
    in_database = allowed_types(conn, "job_events_type_valid") | allowed_types(
        conn, "offer_events_type_valid"
    )
    assert described == set(asyncapi.EVENT_MODELS) == in_code == in_database


def test_an_event_of_an_unknown_type_or_shape_is_refused() -> None:
    event = {
        "id": "01930000-0000-7000-8000-000000000001",
        "job_id": "01930000-0000-7000-8000-000000000002",
        "type": "job.unfilled",
        "version": 1,
        "actor": "system",
        "occurred_at": "2026-12-01T09:00:00Z",
        "data": {"waves": 3, "offered": 0},
    }
    assert_valid_event(event)
    with pytest.raises(AssertionError, match="not in the AsyncAPI document"):
        assert_valid_event({**event, "type": "job.teleported"})
    with pytest.raises(AssertionError, match="does not match"):
        assert_valid_event({**event, "data": {"waves": 3, "offered": 0, "cell_r9": 1}})
    with pytest.raises(AssertionError, match="does not match"):
        assert_valid_event({**event, "type": "offer.created"})


def test_push_is_a_channel_that_says_who_hears_the_end_of_a_hold() -> None:
    document = asyncapi.document()
    push = document["channels"]["push"]
    assert push["servers"] == [{"$ref": "#/servers/push"}]
    assert set(push["messages"]) == set(document["channels"]["jobs"]["messages"]) | {"position"}
    assert "ends its hold" in push["description"] and "Past holders" in push["description"]


def test_a_worker_sends_positions_on_the_socket_held_to_the_templates_model() -> None:
    """The contract's position message and the model API Gateway checks it with are one: the
    same fields, required the same, the same bounds (the template cannot import the code)."""
    document = asyncapi.document()
    assert document["operations"]["sendPosition"]["action"] == "send"
    schema = document["components"]["schemas"]["PositionMessage"]
    api = websocket_api()
    assert api is not None
    model = api.streams["position"].model
    assert set(model["required"]) == set(schema["required"]) == {"action", "lat", "lng"}
    assert model["additionalProperties"] is schema["additionalProperties"] is False
    assert model["properties"]["action"]["enum"] == [schema["properties"]["action"]["const"]]
    for field in ("lat", "lng"):
        ours, theirs = schema["properties"][field], model["properties"][field]
        assert (theirs["minimum"], theirs["maximum"]) == (ours["minimum"], ours["maximum"])
