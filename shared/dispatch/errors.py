"""The error catalogue of the contract: one place, each code with its status and its sentence."""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Code(StrEnum):
    VALIDATION_FAILED = "VALIDATION_FAILED"
    IDEMPOTENCY_KEY_REQUIRED = "IDEMPOTENCY_KEY_REQUIRED"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    JOB_TAKEN = "JOB_TAKEN"
    JOB_UNAVAILABLE = "JOB_UNAVAILABLE"
    VERSION_CONFLICT = "VERSION_CONFLICT"
    ILLEGAL_TRANSITION = "ILLEGAL_TRANSITION"
    WORKER_BUSY = "WORKER_BUSY"
    PHOTO_SLOT_CLOSED = "PHOTO_SLOT_CLOSED"
    PHOTO_NOT_UPLOADED = "PHOTO_NOT_UPLOADED"
    SKILLS_MISSING = "SKILLS_MISSING"
    RATING_TOO_LOW = "RATING_TOO_LOW"
    ALREADY_RATED = "ALREADY_RATED"
    BEFORE_PHOTO_REQUIRED = "BEFORE_PHOTO_REQUIRED"
    AFTER_PHOTO_REQUIRED = "AFTER_PHOTO_REQUIRED"
    REQUEST_IN_PROGRESS = "REQUEST_IN_PROGRESS"
    BUSINESS_CHOOSES = "BUSINESS_CHOOSES"
    JOB_IS_FIRST_COME = "JOB_IS_FIRST_COME"
    JOB_ALREADY_ASSIGNED = "JOB_ALREADY_ASSIGNED"
    NOT_AN_APPLICANT = "NOT_AN_APPLICANT"
    APPLICANT_BUSY = "APPLICANT_BUSY"
    APPLICANT_NOT_QUALIFIED = "APPLICANT_NOT_QUALIFIED"
    BLOCKED_BY_BUSINESS = "BLOCKED_BY_BUSINESS"
    APPLICANT_BLOCKED = "APPLICANT_BLOCKED"
    WORKER_BLOCKED = "WORKER_BLOCKED"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"


@dataclass(frozen=True)
class Spec:
    status: int
    message: str


CATALOGUE: dict[Code, Spec] = {
    Code.VALIDATION_FAILED: Spec(400, "The request is not valid. Check the details and try again."),
    Code.IDEMPOTENCY_KEY_REQUIRED: Spec(
        400, "Add an Idempotency-Key header (a UUID is best) so the request can be retried safely."
    ),
    Code.UNAUTHORIZED: Spec(401, "Sign in again: the access token is missing or not valid."),
    Code.FORBIDDEN: Spec(403, "Your account's role is not allowed to do this."),
    Code.NOT_FOUND: Spec(404, "We could not find that. It may not exist or may not be yours."),
    Code.PAYLOAD_TOO_LARGE: Spec(413, "The request body is too large. Send a smaller request."),
    Code.JOB_TAKEN: Spec(409, "This job was taken by another worker. More jobs coming!"),
    Code.JOB_UNAVAILABLE: Spec(
        409, "This job is no longer available: it was cancelled, completed, or its time is over."
    ),
    Code.VERSION_CONFLICT: Spec(
        409, "This job changed since you last looked. Refresh it and try again."
    ),
    Code.ILLEGAL_TRANSITION: Spec(409, "That step is not possible from the job's current state."),
    Code.WORKER_BUSY: Spec(
        409, "You already hold a job. Finish or release it before taking another."
    ),
    Code.PHOTO_SLOT_CLOSED: Spec(409, "This photo slot is not open at this stage of the job."),
    Code.PHOTO_NOT_UPLOADED: Spec(
        409, "This photo has not been uploaded yet. Upload it first, then attach it."
    ),
    Code.SKILLS_MISSING: Spec(403, "This job needs skills your profile does not list yet."),
    Code.RATING_TOO_LOW: Spec(
        403, "This job asks for a higher rating than yours. Other jobs are open to you."
    ),
    Code.ALREADY_RATED: Spec(409, "This job is already rated. A job is rated once."),
    Code.BEFORE_PHOTO_REQUIRED: Spec(409, "Add a 'before' photo before you start the job."),
    Code.AFTER_PHOTO_REQUIRED: Spec(409, "Add an 'after' photo before you complete the job."),
    Code.REQUEST_IN_PROGRESS: Spec(
        409, "The same request is still being processed. Retry in a moment with the same key."
    ),
    Code.BUSINESS_CHOOSES: Spec(
        409, "The business chooses who gets this job. Apply for it instead of accepting."
    ),
    Code.JOB_IS_FIRST_COME: Spec(
        409, "This job goes to the first worker who accepts it: nobody applies or assigns."
    ),
    Code.JOB_ALREADY_ASSIGNED: Spec(
        409, "This job already has its worker. Refresh it to see who was assigned."
    ),
    Code.NOT_AN_APPLICANT: Spec(
        409, "That worker has not applied for this job, or withdrew. Choose another applicant."
    ),
    Code.APPLICANT_BUSY: Spec(
        409, "That worker now holds another job. Choose another applicant or try later."
    ),
    Code.APPLICANT_NOT_QUALIFIED: Spec(
        403, "That worker no longer has the skills or rating this job asks for."
    ),
    Code.BLOCKED_BY_BUSINESS: Spec(403, "This business does not offer its jobs to you."),
    Code.APPLICANT_BLOCKED: Spec(
        403, "You blocked this worker. Unblock them first if you want to assign them."
    ),
    Code.WORKER_BLOCKED: Spec(
        409, "You blocked this worker. Unblock them first to make them a favourite."
    ),
    Code.IDEMPOTENCY_KEY_REUSED: Spec(
        422, "This Idempotency-Key was already used for a different request. Use a new key."
    ),
    Code.UNAVAILABLE: Spec(503, "The service is briefly unavailable. Please retry in a moment."),
    Code.INTERNAL: Spec(500, "Something went wrong on our side. Please retry in a moment."),
}


@dataclass
class DispatchError(Exception):
    """A failure the caller can act on; its code decides status and sentence."""

    code: Code
    details: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.code.value)

    @property
    def status(self) -> int:
        return CATALOGUE[self.code].status


class CacheUnavailable(Exception):
    """Redis (worker positions) is out of reach: refused, dropped or too slow."""


# A 503 is a database failover or a Redis blip: seconds, not minutes. Every 503 says so.
RETRY_AFTER_S = 2


def error_headers(code: Code) -> dict[str, str]:
    """The headers an error answer carries besides its body: `Retry-After` on a 503."""
    return {"Retry-After": str(RETRY_AFTER_S)} if CATALOGUE[code].status == 503 else {}


def error_body(
    code: Code, request_id: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": code.value,
        "message": CATALOGUE[code].message,
        "request_id": request_id,
    }
    if details:
        error["details"] = details
    return {"error": error}
