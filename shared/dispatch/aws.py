"""AWS clients, one per service per execution environment, made on first use.

boto3 is imported then too, not at cold start: it is the heaviest import of the layer (about
160 ms) and most requests (every read, and a write whose events are relayed later) never
call AWS. Under SnapStart the snapshot carries it already (dispatch.snapshots).

`AWS_ENDPOINT_URL` points them all at a stand-in (moto) locally and in tests.
"""

from functools import cache
from typing import Any, Literal


@cache
def client(service: Literal["sqs", "events", "s3", "secretsmanager"]) -> Any:
    import boto3

    return boto3.client(service)
