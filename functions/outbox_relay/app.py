"""Scheduled: relay to the queue whatever events the writers' own relay did not (a crash after
commit, a dropped connection, an SQS outage), and send again what was sent but never reached
the bus (a queue that lost it). Its own function and schedule, apart from the lease sweeper:
reopening leases never waits on relaying, nor relaying on a sweep.

EventBridge schedules run at most once a minute, so one run keeps looking for
`DISPATCH_RELAY_POLL_SECONDS` (nearly the minute in AWS), a pass a second, and a straggler
waits seconds, not a minute. Each pass is bounded (dispatch.outbox.relay), and overlapping
runs are safe (claims with SKIP LOCKED).
"""

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.config.outbox import outbox_settings
from dispatch.entrypoints import scheduled
from dispatch.observability import count, logger, record
from dispatch.outbox import relay
from dispatch.outbox.lag import lag_seconds

SAFETY_MARGIN_MS = 5_000  # no pass starts, and no pass sends, this close to the timeout
PAUSE_SECONDS = 1.0  # between passes while polling


def relay_for_a_while(context: LambdaContext) -> dict[str, Any]:
    """{} when there was nothing to relay; else what was relayed and the lag left."""
    polling_until = time.monotonic() + outbox_settings().relay_poll_seconds

    def time_left() -> bool:
        return context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS

    def send_by() -> float:
        # A pass may send for half its claim; one started late stops before the timeout, so
        # it always gets to mark what it sent (cut off, it would be sent again).
        return time.monotonic() + (context.get_remaining_time_in_millis() - SAFETY_MARGIN_MS) / 1000

    relayed = passes = 0
    while time_left():
        relayed += db.run(lambda conn: relay.catch_up(conn, relay.sqs_send, time_left, send_by))
        passes += 1
        if time.monotonic() + PAUSE_SECONDS >= polling_until:
            break
        time.sleep(PAUSE_SECONDS)
    count("EventsRelayed", relayed)
    lag = db.run(lag_seconds)
    record("RelayLagSeconds", MetricUnit.Seconds, lag)
    if not relayed:
        return {}  # the usual case: the writers relayed their own events
    done = {"relayed": relayed, "passes": passes, "lag_seconds": round(lag, 3)}
    logger.info("relay done", extra=done)
    return done


lambda_handler = scheduled(relay_for_a_while)
