"""Moving committed event rows to the SQS FIFO queue: right after a writer commits, and as a
catch-up on the sweeper's schedule for whatever a crash or an SQS outage left behind.

Delivery is at least once (a relay that dies after sending and before marking lets its claim
expire, and the events go again; SQS FIFO drops repeats within five minutes by their
deduplication id, and consumers dedupe by event id anyway).
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from uuid import UUID

from dispatch import aws
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.observability import count, logger
from dispatch.outbox import sql


@dataclass(frozen=True)
class Message:
    """An event on its way out: its body is the event's JSON, as the contract shows it."""

    id: UUID
    job_id: UUID
    version: int
    body: str


# Sends messages, returns the ids that the queue accepted.
Send = Callable[[list[Message]], set[UUID]]


@dataclass(frozen=True)
class RelayReport:
    claimed: int
    sent: int


def relay_once(conn: Connection, send: Send, job_id: UUID | None = None) -> RelayReport:
    """One pass: claim a batch, send it, mark what went out. With `job_id`, that job's events
    only (a writer right after its commit: its answer must not wait for anyone else's
    backlog); without, the oldest events of any job (the catch-up)."""
    s = settings()
    rows = conn.execute(
        sql.CLAIM_UNPUBLISHED if job_id is None else sql.CLAIM_UNPUBLISHED_OF_JOB,
        {
            "job_id": job_id,
            "batch_size": s.relay_batch_size,
            "claim_seconds": s.relay_claim_seconds,
        },
    ).fetchall()
    if not rows:
        return RelayReport(0, 0)
    messages = sorted((Message(**r) for r in rows), key=lambda m: (m.job_id, m.version))
    sent = send(messages)
    if sent:
        conn.execute(sql.MARK_PUBLISHED, {"ids": list(sent)})
    return RelayReport(len(messages), len(sent))


def catch_up(conn: Connection, send: Send, keep_going: Callable[[], bool] = lambda: True) -> int:
    """Relay until nothing is left to claim (or time runs out); returns events sent."""
    total = 0
    while keep_going():
        report = relay_once(conn, send)
        total += report.sent
        # Only an empty claim means done: a pass can leave events whose job another relay
        # holds an earlier event of; they are free on the next pass.
        if report.claimed == 0 or report.sent == 0:
            break
    logger.info("outbox caught up", extra={"sent": total, "lag_seconds": lag_seconds(conn)})
    return total


def lag_seconds(conn: Connection) -> float:
    """Age of the oldest event not yet delivered (0 when none waits): the relay lag."""
    row = conn.execute(sql.RELAY_LAG).fetchone()
    return float(row["seconds"]) if row else 0.0


def after_commit(conn: Connection, job_id: UUID) -> None:
    """Best effort, right after a writer committed: a failure here never fails the request."""
    if not settings().outbox_queue_url:
        return
    try:
        report = relay_once(conn, sqs_send, job_id)
        count("EventsRelayed", report.sent)
    except Exception:
        logger.warning("relay after commit failed; the catch-up relay will send", exc_info=True)


def batches(messages: list[Message], size: int = 10) -> Iterable[list[Message]]:
    """SendMessageBatch takes ten; one event per job per call keeps a job's order on failure."""
    pending = list(messages)
    while pending:
        batch: list[Message] = []
        jobs: set[UUID] = set()
        rest: list[Message] = []
        for event in pending:
            if len(batch) < size and event.job_id not in jobs:
                batch.append(event)
                jobs.add(event.job_id)
            else:
                rest.append(event)
        yield batch
        pending = rest


def sqs_send(messages: list[Message]) -> set[UUID]:
    queue_url = settings().outbox_queue_url
    sent: set[UUID] = set()
    stopped: set[UUID] = set()  # jobs with a failed event: their later events wait
    for batch in batches(messages):
        batch = [e for e in batch if e.job_id not in stopped]
        if not batch:
            continue
        result = aws.client("sqs").send_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {
                    "Id": str(i),
                    "MessageBody": e.body,
                    "MessageGroupId": str(e.job_id),
                    "MessageDeduplicationId": str(e.id),
                }
                for i, e in enumerate(batch)
            ],
        )
        for ok in result.get("Successful", []):
            sent.add(batch[int(ok["Id"])].id)
        for failed in result.get("Failed", []):
            stopped.add(batch[int(failed["Id"])].job_id)
    return sent
