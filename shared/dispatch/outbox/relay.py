"""Moving committed event rows to the SQS FIFO queue: right after a writer commits, and as a
catch-up on its own schedule for whatever a crash or an SQS outage left behind. The rows of
both tables of the outbox (`job_events`, `offer_events`: dispatch.outbox.sql) go the same way,
one message group per job.

The queue is trusted with nothing: a send is recorded as `relayed_at`, and only the publisher's
put on the bus marks an event published. What is still unpublished `relay_resend_seconds`
after its send (and at least as long as it had waited before it: a backlog's resends back
off) goes again (SQS FIFO drops repeats within five minutes by their deduplication
id; past that the publisher finds them published and skips them). So a queue that loses its
messages (the local stand-in under a `kill -9`) costs a delay, never an event.

Each pass is bounded: one claim of at most `relay_batch_size` events, sent only while the
claim has time left, then marked on whatever connection still works; what was not sent is let
go for the next pass.
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from dispatch import aws, db
from dispatch.config.outbox import outbox_settings
from dispatch.db import Connection
from dispatch.observability import count, logger
from dispatch.outbox import sql


@dataclass(frozen=True)
class Message:
    """An event on its way out: its body is the event's JSON, as the contract shows it; `offer`
    (an offer_events row) and `occurred_at` place it among its job's events (`order`)."""

    id: UUID
    job_id: UUID
    version: int
    offer: bool
    occurred_at: datetime
    body: str

    @property
    def order(self) -> tuple[UUID, int, bool, datetime, UUID]:
        """Where it goes among every job's events: the job's, then the publisher's order."""
        return (self.job_id, self.version, self.offer, self.occurred_at, self.id)


# Sends messages until the deadline (time.monotonic()), returns the ids the queue accepted.
Send = Callable[[list[Message], float], set[UUID]]

# A pass sends for at most this share of its claim, so that it never outlives the claim (another
# relay would then take the same events) and the marking statement has time left too.
SENDING_SHARE_OF_CLAIM = 0.5


@dataclass(frozen=True)
class RelayReport:
    claimed: int
    sent: int


def relay_once(
    conn: Connection, send: Send, job_id: UUID | None = None, send_by: float | None = None
) -> RelayReport:
    """One pass: claim a batch, send it, mark what went out. With `job_id`, that job's events
    only (a writer right after its commit: its answer must not wait for anyone else's
    backlog); without, the oldest events of any job (the catch-up). `send_by` (monotonic
    time) ends the sending sooner than the claim would: the caller's own time running out
    (a Lambda's timeout would cut a pass between its sends and its marks)."""
    s = outbox_settings()
    params: sql.ClaimParams = {
        "batch_size": s.relay_batch_size,
        "claim_seconds": s.relay_claim_seconds,
        "resend_seconds": s.relay_resend_seconds,
    }
    rows = (
        sql.CLAIM_UNPUBLISHED.all(conn, params)
        if job_id is None
        else sql.CLAIM_UNPUBLISHED_OF_JOB.all(conn, {**params, "job_id": job_id})
    )
    if not rows:
        return RelayReport(0, 0)
    deadline = time.monotonic() + s.relay_claim_seconds * SENDING_SHARE_OF_CLAIM
    if send_by is not None:
        deadline = min(deadline, send_by)
    messages = sorted((Message(**r) for r in rows), key=lambda m: m.order)
    sent: set[UUID] = set()
    try:
        sent = send(messages, deadline)
    finally:
        _mark(conn, {"sent": list(sent), "claimed": [m.id for m in messages]})
    return RelayReport(len(messages), len(sent))


def _mark(conn: Connection, marks: sql.MarkRelayedParams) -> None:
    """Record the pass on its own connection, or on a fresh one when that one died meanwhile
    (a pass is never done again because its last statement lost its connection)."""
    try:
        sql.MARK_RELAYED.run(conn, marks)
    except psycopg.OperationalError:
        if not (conn.closed or conn.broken):
            raise
        with db.connect() as fresh:
            sql.MARK_RELAYED.run(fresh, marks)


def catch_up(
    conn: Connection,
    send: Send,
    keep_going: Callable[[], bool] = lambda: True,
    send_by: Callable[[], float | None] = lambda: None,
) -> int:
    """Relay until nothing is left to claim (or time runs out); returns events sent. Each
    pass stops sending by `send_by()` (monotonic time, or None: the claim alone bounds it)."""
    total = 0
    while keep_going():
        report = relay_once(conn, send, send_by=send_by())
        total += report.sent
        if report.claimed < outbox_settings().relay_batch_size or report.sent == 0:
            break
    if total:
        logger.info("outbox caught up", extra={"sent": total})
    return total


def after_commit(conn: Connection, job_id: UUID) -> None:
    """Best effort, right after a writer committed: a failure here never fails the request."""
    if not outbox_settings().outbox_queue_url:
        return
    try:
        report = relay_once(conn, sqs_send, job_id)
        count("EventsRelayed", report.sent)
    except Exception:
        logger.warning("relay after commit failed; the catch-up relay will send", exc_info=True)


def batches(messages: list[Message], size: int = 10) -> Iterable[list[Message]]:
    """SendMessageBatch takes ten; one version per job per call keeps a job's order on
    failure (a version's events, a wave's offers, go together: the publisher puts every
    event of a version the first message of it names, so their order among themselves on the
    queue changes nothing). `messages` in their order (Message.order)."""
    pending = list(messages)
    while pending:
        batch: list[Message] = []
        versions: dict[UUID, int] = {}
        waiting: set[UUID] = set()  # jobs with an event left for a later call: the rest wait too
        rest: list[Message] = []
        for event in pending:
            if (
                event.job_id not in waiting
                and len(batch) < size
                and versions.setdefault(event.job_id, event.version) == event.version
            ):
                batch.append(event)
            else:
                rest.append(event)
                waiting.add(event.job_id)
        yield batch
        pending = rest


def sqs_send(messages: list[Message], deadline: float = float("inf")) -> set[UUID]:
    queue_url = outbox_settings().outbox_queue_url
    sent: set[UUID] = set()
    stopped: set[UUID] = set()  # jobs with a failed event: their later events wait
    for batch in batches(messages):
        if time.monotonic() > deadline:
            break  # the rest is let go with the claim, for the next pass
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
