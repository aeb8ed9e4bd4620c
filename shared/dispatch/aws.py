"""AWS clients, one per service per execution environment (created on first use: cold start).

`AWS_ENDPOINT_URL` points them all at a stand-in (moto) locally and in tests.
"""

from functools import cache
from typing import Any, Literal

import boto3


@cache
def client(service: Literal["sqs", "events", "s3"]) -> Any:
    return boto3.client(service)
