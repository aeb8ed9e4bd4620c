"""Commands of the business's choice: apply, withdraw, assign, and the applicants listed.

Each change is one statement with its event; a change that matched nothing reads why, once
(`rules`). Application events change nothing on the job: they are stored with the offer
round's events (`offer_events`) and travel the outbox as every event does (dispatch.outbox:
relayed right after the change commits, and by the relay's catch-up)."""

from uuid import UUID

from psycopg import errors

from dispatch.auth import Caller, Role
from dispatch.choice import rules, sql
from dispatch.choice.models import Applicant, Applicants, Application
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.errors import CacheUnavailable, Code, DispatchError
from dispatch.idempotency import KeyedRequest, answering
from dispatch.jobs.models import Job, JobEventType
from dispatch.workers import locations


def apply(
    conn: Connection,
    job_id: UUID,
    worker_id: str,
    note: str | None,
    key: KeyedRequest | None = None,
) -> Application:
    """The worker's standing application (a repeat answers the same one, no second event)."""
    params: sql.ApplyParams = {
        "job_id": job_id,
        "worker_id": worker_id,
        "note": note,
        **answering(key, 201),
    }
    row = _apply(conn, params)
    if row is not None and row["allowed"] and row["answer"] is None:
        # A repeat racing its own first, which committed after this statement began: once more,
        # it answers the standing application (and records the key with it).
        row = _apply(conn, params)
    if row is None or row["answer"] is None:
        facts = sql.APPLY_FAILURE_FACTS.one(conn, params)
        raise DispatchError(rules.apply_refusal(facts))
    return Application.from_json(row["answer"])


def _apply(conn: Connection, params: sql.ApplyParams) -> sql.Applied | None:
    try:
        return sql.APPLY.one(conn, params)
    except errors.CheckViolation as error:
        # Assigned or closed between our read of the job and the insert: the trigger decided.
        if error.diag.constraint_name not in (
            "job_applications_only_while_choosing",
            "job_applications_not_from_blocked",
        ):
            raise
        return None


def withdraw(conn: Connection, job_id: UUID, worker_id: str) -> None:
    """End the worker's application (again: nothing more to do). Never one's own held job."""
    with conn.transaction():
        row = sql.WITHDRAW.one(conn, {"job_id": job_id, "worker_id": worker_id})
    if row is None or row["holds"] is None or not row["applied"]:
        raise DispatchError(Code.NOT_FOUND)  # no such job, or never applied for it
    if row["holds"]:
        raise DispatchError(Code.ILLEGAL_TRANSITION)  # release the job instead


AUTO_PICK = "system:auto-pick"


def assign(
    conn: Connection,
    job_id: UUID,
    chooser: str,
    worker_id: str,
    version: int | None,
    business_id: str | None = None,
    key: KeyedRequest | None = None,
) -> Job:
    """Assign an applicant: the business (`chooser` is its id) or the auto-pick (`chooser` is
    AUTO_PICK, acting for `business_id`, with no version: it chooses on the row as it is)."""
    params: sql.AssignParams = {
        "job_id": job_id,
        "worker_id": worker_id,
        "business_id": business_id or chooser,
        "version": version,
        "lease_seconds": settings().lease_seconds,
        "event_type": JobEventType.ASSIGNED,
        "actor": chooser,
    }
    try:
        row = sql.ASSIGN_JOB.one(conn, {**params, **answering(key, 200)})
    except errors.UniqueViolation as error:
        # The applicant took another job at the same instant: the one-live-job index decided.
        if error.diag.constraint_name == "jobs_one_live_job_per_worker":
            raise DispatchError(Code.APPLICANT_BUSY) from error
        raise
    except errors.CheckViolation as error:
        # The applicant withdrew at the same instant: the database's own guard decided.
        if error.diag.constraint_name == "jobs_choice_goes_to_an_applicant":
            raise DispatchError(Code.NOT_AN_APPLICANT) from error
        if error.diag.constraint_name == "jobs_never_to_a_blocked_worker":
            raise DispatchError(Code.APPLICANT_BLOCKED) from error  # blocked at that instant
        raise
    if row is None:
        facts = sql.ASSIGN_FAILURE_FACTS.one(conn, params)
        raise DispatchError(*rules.assign_refusal(facts))
    return Job.from_document(row["document"], row["answer"])


def applicants(conn: Connection, caller: Caller, job_id: UUID) -> Applicants:
    """The job's current applicants, for its owner and ops (anyone else: NOT_FOUND)."""
    params: sql.ApplicantsOfParams = {
        "job_id": job_id,
        "business_id": caller.id,
        "ops": caller.has(Role.OPS),
    }
    if sql.JOB_FOR_APPLICANTS.one(conn, params) is None:
        raise DispatchError(Code.NOT_FOUND)
    ids = [r["worker_id"] for r in sql.APPLICANT_IDS.all(conn, {"job_id": job_id})]
    try:
        positions = locations.fresh_positions(ids) if ids else {}
    except CacheUnavailable:
        positions = {}  # distances are "when known": the list does not wait for Redis
    rows = sql.APPLICANTS.all(
        conn,
        {
            "job_id": job_id,
            "position_ids": list(positions),
            "lats": [lat for lat, _ in positions.values()],
            "lngs": [lng for _, lng in positions.values()],
        },
    )
    return Applicants(applications=[Applicant.from_document(row["document"]) for row in rows])
