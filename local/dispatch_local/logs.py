"""What `make dev` prints: one short line per request, and the functions' own log lines made
readable (in AWS they are JSON for CloudWatch; `dispatch dev --json-logs` keeps them so).

    06:16:29 POST /jobs 201 14 ms 6f1c0b3e-5d0e-4a57-9d8e-3c2a9a7f5e11
    06:16:30 OutboxPublisherFunction published type=job.created job_id=0193... version=1
"""

import json
import time
from typing import Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

# The Lambda context Powertools adds to every line: the same on every line of a function.
NOISE = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "xray_trace_id",
        "sampling_rate",
        "exception",
        "exception_name",
        "exception_notes",
        "stack_trace",
    }
)


def clock() -> str:
    return time.strftime("%H:%M:%S")


def request_line(method: str, path: str, status: int, ms: float, request_id: str) -> str:
    return f"{clock()} {method} {path} {status} {ms:.0f} ms {request_id}"


def print_request(method: str, path: str, status: int, ms: float, request_id: str) -> None:
    print(request_line(method, path, status, ms, request_id), flush=True)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if " " not in text else json.dumps(text)


class ReadableFormatter(LambdaPowertoolsFormatter):
    """Powertools' formatter (it keeps the Lambda context it is given), written as one line:
    the time, the function, the level when it is not INFO, the message, then `key=value`."""

    def serialize(self, log: dict[str, Any]) -> str:  # type: ignore[override]
        parts = [clock(), str(log.get("function_name") or log.get("service") or "dispatch")]
        if log.get("level") not in (None, "INFO"):
            parts.append(str(log["level"]))
        parts.append(str(log.get("message", "")))
        parts += [f"{k}={_value(v)}" for k, v in log.items() if k not in NOISE and v is not None]
        line = " ".join(parts)
        if log.get("exception"):
            line += "\n" + str(log["exception"])
        return line


def readable_function_logs() -> None:
    """In this process (an execution environment of the local stack), the layer's logger
    writes readable lines instead of JSON."""
    from dispatch.observability import logger

    logger.registered_handler.setFormatter(ReadableFormatter())
