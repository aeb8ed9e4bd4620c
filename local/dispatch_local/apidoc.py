"""What the merged OpenAPI document tells a person reading it in Swagger UI (/docs): routes
grouped by tag, who may call each, how to sign in, and request examples the API accepts (a
job's window starts in ten minutes, so "Try it out" works as it stands).

The routes' summaries are declared with the routes (`summary=` in each function's
`app.endpoint`); the roles come from the same declarations."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from dispatch_local import samples

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


def describe(
    document: dict[str, Any], roles_by_route: dict[str, Any], tag_of: dict[str, str]
) -> None:
    """Tags, who may call, sign-in and the introduction, into the merged `document`."""
    document["info"]["description"] = INTRODUCTION
    document["components"]["securitySchemes"]["bearer"]["description"] = SIGN_IN
    document["tags"] = [{"name": t, "description": d} for t, d in TAG_DESCRIPTIONS.items()]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            key = f"{method.upper()} {path}"
            operation["tags"] = [tag_of[key]]
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
    """The document with request examples valid now and a new Idempotency-Key: served anew on
    every fetch of /openapi.json (a cached window would have ended by tomorrow)."""
    examples = request_examples(now or datetime.now(UTC))
    key = str(uuid.uuid4())
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
                {**p, "example": key} if p["name"] == "Idempotency-Key" else p
                for p in operation.get("parameters", [])
            ]
            if not operation["parameters"]:
                del operation["parameters"]
            fresh["paths"][path][method] = operation
    return fresh
