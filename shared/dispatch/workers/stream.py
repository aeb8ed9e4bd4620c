"""The position stream (docs/architecture.md, "Positions off the HTTP path"): what a record
the socket's `position` route put on it means. API Gateway writes each one itself (a service
integration, no Lambda): its data is the message as the device sent it, already held to the
route's model; its partition key is who sent it, `<roles>|<principalId>` (roles never hold
a "|"; a sub may hold anything, spaces included), from the connection's authorizer."""

from pydantic import ValidationError

from dispatch.auth import Role
from dispatch.workers.locations import Report
from dispatch.workers.models import PositionMessage


def report_of(partition_key: str, data: bytes, arrived: float) -> Report | None:
    """The report a record carries, seen when the stream took it in; None when it is not a
    worker's, or not a position (the route's model lets nothing else through; a record put on
    the stream by other means is dropped, not retried)."""
    roles, _, worker_id = partition_key.partition("|")
    if not worker_id or Role.WORKER.value not in roles.split():
        return None
    try:
        where = PositionMessage.model_validate_json(data)
    except ValidationError:
        return None
    return Report(worker_id, where.lat, where.lng, arrived)
