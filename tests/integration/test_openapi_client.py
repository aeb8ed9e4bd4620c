"""What a client generated from the OpenAPI document meets (issue 34, point 6): names it can
call, every event type's data described, error codes not closed, examples that do not collide,
the headers the answers carry, and the gateway's own 429. The answers themselves are held by
tests/faults/test_documented_statuses.py (a 201's Location, a 503's Retry-After among them) and
tests/e2e/test_fuzz.py (schemathesis)."""

import re
from typing import Any

import pytest
from openapi_spec_validator import validate

from dispatch.errors import Code
from dispatch.http.resolver import DispatchResolver
from dispatch_local.apidoc import with_fresh_examples
from dispatch_local.asyncapi import EVENT_MODELS
from dispatch_local.gateway import openapi_document
from dispatch_local.template import routes
from tests.support import BUSINESS, Api, make_job, make_worker, worker


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return with_fresh_examples(openapi_document(routes()))


def operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)
    # Bounds are JSON Schema's words (a whole number's optional field once leaked pydantic's).
    assert not {"ge", "le", "gt", "lt"} & keys_of(document["components"]["schemas"])


def keys_of(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(
            *(keys_of(value) for key, value in node.items() if key != "properties"),
            *(keys_of(v) for v in node.get("properties", {}).values()),
        )
    if isinstance(node, list):
        return set().union(*(keys_of(item) for item in node))
    return set()


def test_every_operation_has_a_camel_case_name_of_its_own(document: dict[str, Any]) -> None:
    names = {route: operation["operationId"] for route, operation in operations(document)}
    assert all(re.fullmatch(r"[a-z][a-zA-Z0-9]*", name) for name in names.values()), names
    assert len(set(names.values())) == len(names)
    assert names["POST /jobs/{job_id}/accept"] == "acceptJob"


def test_a_route_cannot_be_declared_without_a_name_a_client_calls() -> None:
    app = DispatchResolver()
    with pytest.raises(ValueError, match="camelCase"):
        app.endpoint("GET", "/x", roles=None, operation_id="get_x")
    with pytest.raises(TypeError):
        app.endpoint("GET", "/x", roles=None)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="location"):
        app.endpoint("POST", "/x", roles=None, operation_id="postX", responses={201: {}})


def test_every_event_type_has_a_schema_discriminated_by_type(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    any_event = schemas["AnyEvent"]
    mapping = any_event["discriminator"]["mapping"]
    assert any_event["discriminator"]["propertyName"] == "type"
    assert set(mapping) == set(EVENT_MODELS) and "offer.created" in mapping
    for event_type, ref in mapping.items():
        schema = schemas[ref.rsplit("/", 1)[1]]
        assert schema["properties"]["type"]["const"] == event_type
        assert schema["properties"]["data"] != {"additionalProperties": True, "type": "object"}
        assert {"$ref": ref} in any_event["oneOf"]
    offer_data = schemas[mapping["offer.created"].rsplit("/", 1)[1]]["properties"]["data"]
    assert offer_data == {"$ref": "#/components/schemas/OfferCreatedData"}
    # A type added later is still an event a generated client reads (the bus grows by addition).
    assert {"$ref": "#/components/schemas/OtherEvent"} in any_event["oneOf"]
    for listing in ("JobEvents", "EventPage"):
        items = schemas[listing]["properties"]["events"]["items"]
        assert items == {"$ref": "#/components/schemas/AnyEvent"}, listing


def test_error_codes_are_documented_without_closing_the_set(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    code = schemas["ErrorInfo"]["properties"]["code"]
    assert {"$ref": "#/components/schemas/Code"} in code["anyOf"]
    assert {"type": "string"} in code["anyOf"]
    assert set(schemas["Code"]["enum"]) == {c.value for c in Code}


def test_no_two_examples_share_an_idempotency_key(document: dict[str, Any]) -> None:
    keys = [
        parameter["example"]
        for _, operation in operations(document)
        for parameter in operation.get("parameters", [])
        if parameter["name"] == "Idempotency-Key"
    ]
    assert len(keys) > 10 and len(set(keys)) == len(keys)


def test_the_answers_headers_and_the_gateways_429_are_documented(document: dict[str, Any]) -> None:
    created = 0
    for route, operation in operations(document):
        answers = operation["responses"]
        if "201" in answers:
            created += 1
            assert answers["201"]["headers"]["Location"]["required"] is True, route
        if "503" in answers:
            assert answers["503"]["headers"]["Retry-After"]["required"] is True, route
        throttled = answers["429"]
        assert throttled["x-answered-by"] == "api-gateway", route
        assert throttled["content"]["application/json"]["example"] == {
            "message": "Too Many Requests"
        }
    assert created == 4


def test_a_201_says_where_and_a_replay_says_it_again(api: Api) -> None:
    job = make_job(api)
    posted = api.call("POST", "/jobs", BUSINESS, {**job_body_of(job)}, key="k-where")
    again = api.call("POST", "/jobs", BUSINESS, {**job_body_of(job)}, key="k-where")
    assert posted.status == 201 and posted.headers["Location"] == f"/jobs/{posted.body['id']}"
    assert again.headers["Location"] == posted.headers["Location"]
    assert again.headers.get("Idempotent-Replayed") == "true"
    make_worker(api, worker(1))
    upload = api.call("POST", "/photos", worker(1), {"content_type": "image/jpeg"})
    assert upload.headers["Location"] == upload.body["upload_url"]


def job_body_of(job: dict[str, Any]) -> dict[str, Any]:
    return {"location": job["location"], "skills": job["skills"], "window": job["window"]}
