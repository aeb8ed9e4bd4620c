"""CloudFormation custom resources: the one answer CloudFormation waits for.

CloudFormation sends the function an event and waits for a PUT of the outcome to the event's
ResponseURL (a presigned S3 address). No answer leaves the stack waiting for the resource's
ServiceTimeout (an hour by default), so every path answers: the work's own outcome, any
exception as FAILED, and a timer that answers FAILED shortly before the function's deadline.
"""

import json
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch.observability import logger

ANSWER_MARGIN_SECONDS = 10.0  # the timer answers FAILED this long before the deadline

Work = Callable[[], dict[str, str]]  # the resource's Data (attributes for !GetAtt)


class CloudFormationAnswer:
    """The first answer sent wins, whether the work or the deadline timer sends it."""

    def __init__(self, event: dict[str, Any], context: LambdaContext, physical_id: str) -> None:
        self.event, self.context, self.physical_id = event, context, physical_id
        self.sent: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def send(self, status: str, reason: str = "", data: dict[str, str] | None = None) -> None:
        with self._lock:
            if self.sent is not None:
                return
            self.sent = {
                "Status": status,
                "Reason": (reason or f"see {self.context.log_group_name}")[:500],
                "PhysicalResourceId": self.physical_id,
                "StackId": self.event["StackId"],
                "RequestId": self.event["RequestId"],
                "LogicalResourceId": self.event["LogicalResourceId"],
                "Data": data or {},
            }
            request = urllib.request.Request(
                self.event["ResponseURL"],
                data=json.dumps(self.sent).encode(),
                method="PUT",
                headers={"Content-Type": ""},  # the presigned URL was signed without one
            )
            try:
                with urllib.request.urlopen(request, timeout=ANSWER_MARGIN_SECONDS / 2):
                    pass
            except OSError:  # nothing more to do: CloudFormation will time the resource out
                logger.exception("could not answer CloudFormation", extra=self.sent)


def answer(
    event: dict[str, Any],
    context: LambdaContext,
    work: Work,
    physical_id: str,
    on_deadline: Callable[[], None] | None = None,
    margin: float = ANSWER_MARGIN_SECONDS,
) -> dict[str, Any]:
    """Run the work and answer CloudFormation SUCCESS with its data, or FAILED with the
    error; `margin` seconds before the deadline the timer answers FAILED (then calls
    on_deadline, which may interrupt the work). Returns what was sent."""
    cloudformation = CloudFormationAnswer(event, context, physical_id)
    left = context.get_remaining_time_in_millis() / 1000

    def out_of_time() -> None:
        logger.error("still working near the deadline; answering FAILED")
        cloudformation.send("FAILED", "The work did not finish before the function's deadline.")
        if on_deadline is not None:
            on_deadline()

    timer = threading.Timer(max(0.0, left - margin), out_of_time)
    timer.daemon = True
    timer.start()
    try:
        data = work()
        cloudformation.send("SUCCESS", data=data)
    except Exception as error:  # report it: CloudFormation waits for an answer otherwise
        logger.exception("custom resource failed", extra={"type": event.get("ResourceType")})
        cloudformation.send("FAILED", f"{type(error).__name__}: {error}")
    finally:
        timer.cancel()
    return cloudformation.sent or {}
