"""What the API does of a round of offers (dispatch.offers.waves runs the waves themselves):
schedule a wave on the offer queue (the next one at once, when a decline emptied the latest).
Apart from the waves, so that the routes that do this import neither the policy nor the
position store (bench/coldstart.py). The round's events travel the outbox
(dispatch.outbox), as every event does."""

from collections.abc import Sequence
from uuid import UUID

from dispatch import aws, db
from dispatch.config.offers import offer_settings
from dispatch.observability import logger
from dispatch.offers import inbox
from dispatch.offers.models import WaveRequest


def send_now_if_all_declined(job_id: UUID) -> None:
    """After a decline commits: the next wave at once when everyone offered in the round's
    latest wave has declined. Best effort, like every after-commit step: the delayed wave
    message is still on its way, and a wave runs once whichever message comes first."""
    if not offer_settings().offer_queue_url:
        return
    try:
        request = db.run(lambda conn: inbox.next_wave_if_all_declined(conn, job_id))
        if request is not None:
            sqs_schedule(request, 0)
            logger.info(
                "next wave now: every offer declined", extra=request.model_dump(mode="json")
            )
    except Exception:
        logger.warning("could not hurry the next wave; it goes out on schedule", exc_info=True)


def sqs_schedule(request: WaveRequest, delay_seconds: int) -> None:
    aws.client("sqs").send_message(
        QueueUrl=offer_settings().offer_queue_url,
        MessageBody=request.model_dump_json(),
        DelaySeconds=delay_seconds,
    )


def sqs_schedule_all(requests: Sequence[WaveRequest], delay_seconds: int) -> list[WaveRequest]:
    """Schedule up to ten wave requests in one queue call; the ones the queue took (each entry
    it refused is logged: its round's next try is the caller's)."""
    reply = aws.client("sqs").send_message_batch(
        QueueUrl=offer_settings().offer_queue_url,
        Entries=[
            {"Id": str(n), "MessageBody": r.model_dump_json(), "DelaySeconds": delay_seconds}
            for n, r in enumerate(requests)
        ],
    )
    for refused in reply.get("Failed", []):
        request = requests[int(refused["Id"])]
        why = {"code": refused.get("Code"), "error": refused.get("Message")}
        logger.warning("offer queue refused a wave",
                       extra={**request.model_dump(mode="json"), **why})  # fmt: skip
    return [requests[int(taken["Id"])] for taken in reply.get("Successful", [])]
