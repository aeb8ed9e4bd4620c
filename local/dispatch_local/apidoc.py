"""What the merged OpenAPI document tells a person reading it in Swagger UI (/docs): routes
grouped by tag, who may call each, how to sign in, and request examples the API accepts (a
job's window starts in ten minutes, so "Try it out" works as it stands).

The routes' summaries are declared with the routes (`summary=` in each function's
`app.endpoint`); the roles come from the same declarations."""

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic.json_schema import models_json_schema

from dispatch_local import samples
from dispatch_local.asyncapi import EVENT_MODELS

# A tag per function, in the order Swagger UI shows them.
TAGS = {
    "create_job": "Jobs",
    "job_queries": "Jobs",
    "accept_job": "Jobs",
    "applications": "The business chooses",
    "rosters": "Rosters",
    "transition": "Working a job",
    "offers": "Offers",
    "workers": "Workers",
    "ops": "Operations",
    "health": "Health",
}
TAG_DESCRIPTIONS = {
    "Jobs": "A business posts a job; workers find it nearby and accept it (exactly one wins).",
    "The business chooses": "On a business_choice job workers apply (and may withdraw); the "
    "business lists its applicants and assigns one (exactly one assign wins).",
    "Rosters": "A business's favourites (offered its jobs first when it asks) and blocked "
    "workers (never shown, offered or given its jobs); each business reads only its own.",
    "Working a job": "The assignee checks in, attaches photos, starts and completes; the "
    "business cancels or rates.",
    "Offers": "What the offer waves offered a worker, and declining an offer.",
    "Workers": "A worker's skills and position (positions feed nearby and the offer waves).",
    "Operations": "The operations console's reads (ops only).",
    "Health": "Whether the API and its database answer (no token).",
}

SIGN_IN = (
    "A JWT bearer token; its `sub` is the caller's id and `cognito:groups` the role "
    "(`business`, `worker` or `ops`).\n\n"
    "- **Locally** (`make dev`): `.venv/bin/dispatch token --sub biz-1 --role business` prints "
    "one; paste it into Authorize (without `Bearer `).\n"
    "- **Deployed**: the ID token of a user of the stack's Cognito pool, in the group of "
    'their role (docs/deploy.md, "3. The first user").'
)

INTRODUCTION = (
    "The job-dispatch marketplace's HTTP API. Sign in with **Authorize** (see the `bearer` "
    "scheme for how to get a token), then try a route: post a job as a business, accept it "
    "as a worker. Every state change needs an `Idempotency-Key` header (a fresh UUID is "
    "filled in for you; the same key again replays the first answer). Every error has the "
    'body `{"error": {"code", "message", "request_id"}}`; the codes are in '
    "docs/api.md. The events on the bus are described by /asyncapi.json."
)

WHO = {"business": "a business", "worker": "a worker", "ops": "ops"}

SAMPLE_JOB = str(samples.OPEN_JOB)
CENTRE = {"lat": 12.9716, "lng": 77.5946}  # the examples' city (the tiny town's centre)


def request_examples(now: datetime) -> dict[str, Any]:
    """A body each state change accepts, by route key; the window is relative to `now`."""
    start = (now + timedelta(minutes=10)).replace(microsecond=0)
    window = {
        "start": start.isoformat().replace("+00:00", "Z"),
        "end": (start + timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
    }
    return {
        "POST /jobs": {"location": CENTRE, "skills": ["wash"], "window": window},
        "POST /jobs/{job_id}/accept": {},
        "POST /jobs/{job_id}/decline": {},
        "POST /jobs/{job_id}/applications": {"note": "Free all afternoon, 10 minutes away."},
        "POST /jobs/{job_id}/assign": {"worker_id": "worker-1", "version": 1},
        "POST /jobs/{job_id}/transitions": {"event": "check_in", "version": 2},
        "POST /jobs/{job_id}/rating": {"stars": 5},
        "PUT /jobs/{job_id}/photos/{slot}": {"photo_id": "01935f7e-0000-7000-8000-0000000000aa"},
        "POST /photos": {"content_type": "image/jpeg"},
        "PUT /workers/me": {"skills": ["wash", "iron"]},
        "PUT /workers/me/location": {"lat": 12.9806, "lng": 77.5946},
    }


PARAMETER_EXAMPLES = {
    "job_id": SAMPLE_JOB,
    "slot": "before",
    "lat": CENTRE["lat"],
    "lng": CENTRE["lng"],
    "radius_m": 3000,
    "bbox": "77.45,12.85,77.75,13.1",
}


# API Gateway's own answer when a route's throttle (template.yaml, RouteSettings) is full: it
# never reaches a function, so its body is the gateway's, not the contract's error body.
THROTTLED = {
    "description": "Too many requests: API Gateway's throttle for this route is full. Retry "
    "with backoff. The body is API Gateway's own, not the error body.",
    "x-answered-by": "api-gateway",
    "content": {
        "application/json": {
            "schema": {"$ref": "#/components/schemas/GatewayMessage"},
            "example": {"message": "Too Many Requests"},
        }
    },
}
GATEWAY_MESSAGE = {
    "type": "object",
    "title": "GatewayMessage",
    "description": "A body API Gateway writes itself (a throttle's 429).",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
}
EVENT = "#/components/schemas/Event"


def event_schemas(document: dict[str, Any]) -> None:
    """One schema per event type (its `data` described, `type` fixed to it) and `AnyEvent`, a
    oneOf of them discriminated by `type`, wherever events are answered. A type added later
    matches `OtherEvent` (any type not listed), so a client generated today still reads it."""
    models = list(dict.fromkeys(EVENT_MODELS.values()))
    _, schemas = models_json_schema(
        [(model, "serialization") for model in models],
        ref_template="#/components/schemas/{model}",
    )
    components = document["components"]["schemas"]
    defs = schemas["$defs"]
    for name, schema in defs.items():
        if name not in {model.__name__ for model in models}:
            components.setdefault(name, schema)
    mapping: dict[str, str] = {}
    for event_type, model in EVENT_MODELS.items():
        name = "".join(part.title() for part in event_type.replace("_", ".").split(".")) + "Event"
        schema = copy.deepcopy(defs[model.__name__])
        schema["title"] = name
        schema["properties"]["type"] = {"type": "string", "const": event_type}
        components[name] = schema
        mapping[event_type] = f"#/components/schemas/{name}"
    other = copy.deepcopy(components["Event"])
    other["title"] = "OtherEvent"
    other["description"] = (
        "An event of a type added after this document: ignore what you do not know."
    )
    other["properties"]["type"] = {"type": "string", "not": {"enum": list(mapping)}}
    components["OtherEvent"] = other
    components["AnyEvent"] = {
        "title": "AnyEvent",
        "oneOf": [{"$ref": ref} for ref in mapping.values()]
        + [{"$ref": "#/components/schemas/OtherEvent"}],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }
    for schema in components.values():
        events = schema.get("properties", {}).get("events", {})
        if events.get("items") == {"$ref": EVENT}:
            events["items"] = {"$ref": "#/components/schemas/AnyEvent"}


def describe(
    document: dict[str, Any], roles_by_route: dict[str, Any], tag_of: dict[str, str]
) -> None:
    """Tags, who may call, sign-in, the introduction, each event type's schema and the
    gateway's 429, into the merged `document`."""
    document["info"]["description"] = INTRODUCTION
    event_schemas(document)
    document["components"]["schemas"]["GatewayMessage"] = GATEWAY_MESSAGE
    document["components"]["securitySchemes"]["bearer"]["description"] = SIGN_IN
    document["tags"] = [{"name": t, "description": d} for t, d in TAG_DESCRIPTIONS.items()]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            key = f"{method.upper()} {path}"
            operation["tags"] = [tag_of[key]]
            operation["responses"]["429"] = THROTTLED
            roles = roles_by_route.get(key)
            who = (
                "Anyone, no token."
                if roles is None
                else "Signed in as " + " or ".join(sorted(WHO[str(r)] for r in roles)) + "."
            )
            operation["description"] = "\n\n".join(
                part for part in (who, operation.get("description")) if part
            )
            for parameter in operation.get("parameters", []):
                if parameter["name"] in PARAMETER_EXAMPLES:
                    parameter["example"] = PARAMETER_EXAMPLES[parameter["name"]]


def with_fresh_examples(document: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """The document with request examples valid now and a new Idempotency-Key in each (tools
    that send examples would otherwise collide on 422): served anew on every fetch of
    /openapi.json (a cached window would have ended by tomorrow)."""
    examples = request_examples(now or datetime.now(UTC))
    fresh = {**document, "paths": {}}
    for path, operations in document["paths"].items():
        fresh["paths"][path] = {}
        for method, operation in operations.items():
            operation = {**operation}
            example = examples.get(f"{method.upper()} {path}")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None and example is not None:
                operation["requestBody"] = {
                    **operation["requestBody"],
                    "content": {"application/json": {**body, "example": example}},
                }
            operation["parameters"] = [
                {**p, "example": str(uuid.uuid4())} if p["name"] == "Idempotency-Key" else p
                for p in operation.get("parameters", [])
            ]
            if not operation["parameters"]:
                del operation["parameters"]
            fresh["paths"][path][method] = operation
    return fresh
