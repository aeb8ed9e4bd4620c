"""The event envelope: one shape for every event on the bus and in a job's history.

Each concept describes its own events beside its own models (`dispatch.jobs.models.JobChanged`,
`dispatch.offers.models.OfferCreated` and `JobUnfilled`), as subclasses of `Event`; this
module knows none of them, so the layer's imports only go one way. The AsyncAPI document
(`dispatch asyncapi`, `/asyncapi.json`) is generated from those models, as the OpenAPI
document is from the routes'.
"""

from datetime import datetime
from typing import Any
from uuid import UUID

from dispatch.models import Document


class Event(Document):
    """Any event, as `dispatch_event` writes it (the relay's message, the bus's detail)."""

    id: UUID
    job_id: UUID
    type: str
    version: int
    actor: str
    occurred_at: datetime
    data: dict[str, Any]
