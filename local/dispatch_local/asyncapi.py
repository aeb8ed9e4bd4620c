"""The bus contract as an AsyncAPI 3.0 document, generated from the models that shape the
events (the envelope in `dispatch.events`, each concept's events beside its models), as the
OpenAPI document is generated from the routes' models: the two cannot drift from the code.
Served at /asyncapi.json; printed by `dispatch asyncapi`."""

from typing import Any

from pydantic.json_schema import models_json_schema

from dispatch.choice.models import APPLICATION_EVENT_MODELS, ApplicationChanged, BackToChoice
from dispatch.events import Event
from dispatch.jobs.models import JOB_EVENT_MODELS, JobChanged
from dispatch.offers.models import OFFER_EVENT_MODELS, JobUnfilled, OfferCreated
from dispatch.outbox.publisher import SOURCE
from dispatch.workers.models import PositionMessage

VERSION = "1.3.0"  # 1.3: the position message a worker sends

# Every event type on the bus and the model that describes it.
EVENT_MODELS: dict[str, type[Event]] = {
    **JOB_EVENT_MODELS,
    **OFFER_EVENT_MODELS,
    **APPLICATION_EVENT_MODELS,
}

DELIVERY = (
    "Every committed event is put on the EventBridge bus at least once (source "
    f"`{SOURCE}`, detail-type = the event type, detail = the event below). Consumers dedupe by "
    "the event `id`. A job's own events (`job.*` changes) arrive in version order for that "
    "job; offer events (`offer.created`, `job.unfilled`) and application events "
    "(`application.created`, `application.withdrawn`) carry the job's version when they "
    "happened and have no order relative to the job's events. Nothing is promised across "
    "jobs."
)

EVOLUTION = (
    "The contract grows by addition only: new event types and new optional fields may appear "
    "at any time, so consumers ignore what they do not know. A change that would break a "
    "consumer (a field removed, renamed or retyped) is published as a new detail-type (for "
    "example `job.created.v2`) beside the old one, never in place."
)

PUSH = (
    "The same events, one per WebSocket message (the envelope exactly), to the devices allowed "
    "to hear them: ops every event; a business every event of its own jobs; a worker its own "
    "`offer.created` and every event of a job it holds, and the one that ends its hold: the "
    "change right after its hold that leaves the job with no holder (`job.released`, "
    "`job.reopened`, `job.cancelled`). A takeover of its lapsed lease names the next holder, "
    "which it never hears. Push is a hint: after any reconnect pull `GET /jobs/{id}/events`, "
    'which a past holder may read up to the end of its hold (docs/api.md, "Past holders").'
)

POSITION = (
    "A worker's app reports where it is on its socket, not over HTTP: when it has moved 250 m "
    "since its last report, or 5 minutes have passed since it, whichever comes first, and "
    "after every (re)connect (a "
    "`GET /workers/me/offers?lat&lng` or `GET /jobs/nearby` carrying its position counts as a "
    "report). Nothing comes back when it is taken; a message the model refuses gets API "
    'Gateway\'s own `{"message": "Bad request body", ...}`. Positions are fresh for 360 s; '
    "a worker's last socket closing takes its position off the map (docs/api.md, "
    '"Version 1.3: reporting positions").'
)

SUMMARIES = {
    "job.created": "A business posted a job (version 1).",
    "job.assigned": (
        "A worker won the job; `data.lease_expires_at` is the check-in deadline (never past "
        "the window's end). `actor` is who chose: the worker itself (an accept, first come), "
        "the business (an assign) or `system:auto-pick` (the deadline passed)."
    ),
    "job.checked_in": "The assignee checked in; the lease was renewed.",
    "job.released": "The assignee gave the job back; it is open again.",
    "job.reopened": "The lease ran out; the sweeper opened the job again.",
    "job.started": "Work began (a before photo is attached).",
    "job.completed": "Work finished (an after photo is attached).",
    "job.cancelled": "The business cancelled the job.",
    "job.photo_attached": "The assignee attached a before or after photo.",
    "job.expired": (
        "The window ended before the work started (nobody held the job, or its holder had not "
        "started: a lease never outlives the window); it can no longer be taken."
    ),
    "job.rated": "The business rated the completed work (`data.rating`, 1 to 5 stars).",
    "offer.created": "A worker was offered the job in a wave of the round.",
    "job.unfilled": "Every wave of the round passed and nobody took the job.",
    "application.created": (
        "A worker applied for a business_choice job (`data` is the application); the "
        "business may assign them."
    ),
    "application.withdrawn": "A worker withdrew an application (`data` is the application).",
    "job.back_to_choice": (
        "The worker the business chose gave the job back or vanished (a lease that ran out): "
        "the job is open to the business's choice again among the remaining applicants "
        "(`data`: who left and how, how many remain, the deadline now)."
    ),
}


def document() -> dict[str, Any]:
    models = (
        JobChanged, OfferCreated, JobUnfilled, ApplicationChanged, BackToChoice, PositionMessage
    )  # fmt: skip
    _, schemas = models_json_schema(
        [(model, "serialization") for model in models],
        ref_template="#/components/schemas/{model}",
    )
    messages = {
        event_type: {
            "name": event_type,
            "title": event_type,
            "summary": SUMMARIES[event_type],
            "contentType": "application/json",
            "payload": {
                "allOf": [
                    {"$ref": f"#/components/schemas/{model.__name__}"},
                    {"properties": {"type": {"const": event_type}}},
                ]
            },
            "x-eventbridge": {"source": SOURCE, "detail-type": event_type},
        }
        for event_type, model in EVENT_MODELS.items()
    }
    position = {
        "name": "position",
        "title": "position",
        "summary": POSITION,
        "contentType": "application/json",
        "payload": {"$ref": "#/components/schemas/PositionMessage"},
    }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Dispatch events",
            "version": VERSION,
            "description": f"{DELIVERY}\n\n{EVOLUTION}",
        },
        "defaultContentType": "application/json",
        "servers": {
            "eventbridge": {
                "host": "events.{region}.amazonaws.com",
                "protocol": "https",
                "description": "The stack's EventBridge bus (EVENT_BUS_NAME); rules match on "
                f"source `{SOURCE}` and the detail-type.",
                "variables": {"region": {"default": "us-east-1"}},
            },
            "push": {
                "host": "{api}.execute-api.{region}.amazonaws.com",
                "pathname": "/{stage}",
                "protocol": "wss",
                "description": "The stack's WebSocket API (the `PushUrl` output; "
                "`ws://127.0.0.1:3000/ws` on the local stack); `?token=` the API's JWT.",
                "variables": {
                    "api": {"default": "example"},
                    "region": {"default": "us-east-1"},
                    "stage": {"default": "dev"},
                },
            },
        },
        "channels": {
            "jobs": {
                "address": SOURCE,
                "title": "Job and offer events",
                "description": DELIVERY,
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in messages},
                "servers": [{"$ref": "#/servers/eventbridge"}],
            },
            "push": {
                "address": "/",
                "title": "Push to devices",
                "description": PUSH,
                "messages": {
                    **{name: {"$ref": f"#/components/messages/{name}"} for name in messages},
                    "position": {"$ref": "#/components/messages/position"},
                },
                "servers": [{"$ref": "#/servers/push"}],
            },
        },
        "operations": {
            "receiveJobEvents": {
                "action": "receive",
                "title": "React to jobs and offers",
                "summary": "What a consumer of the bus receives (an EventBridge rule's target).",
                "channel": {"$ref": "#/channels/jobs"},
                "messages": [{"$ref": f"#/channels/jobs/messages/{name}"} for name in messages],
            },
            "receivePush": {
                "action": "receive",
                "title": "Hear a job's events on a device",
                "summary": "What a connected app receives (who hears what: the channel).",
                "channel": {"$ref": "#/channels/push"},
                "messages": [{"$ref": f"#/channels/push/messages/{name}"} for name in messages],
            },
            "sendPosition": {
                "action": "send",
                "title": "Report where I am (a worker)",
                "summary": POSITION,
                "channel": {"$ref": "#/channels/push"},
                "messages": [{"$ref": "#/channels/push/messages/position"}],
            },
        },
        "components": {
            "schemas": schemas["$defs"],
            "messages": {**messages, "position": position},
        },
    }
