"""AWS clients, one per service per execution environment, made on first use.

boto3 is imported then too, not at cold start: it is the heaviest import of the layer (about
160 ms) and most requests (every read, and a write whose events are relayed later) never
call AWS. Under SnapStart the snapshot carries it already (`before_snapshot` below).

`AWS_ENDPOINT_URL` points them all at a stand-in (moto) locally and in tests.
"""

import importlib
from functools import cache
from typing import Any, Literal

from dispatch.snapshots import before_snapshot

Service = Literal[
    "sqs", "events", "s3", "secretsmanager", "apigateway", "iam", "lambda", "ec2", "rds"
]  # the last five: the deploy-time custom resources and `dispatch preflight`


@cache
def client(service: Service) -> Any:
    return connect(service)


def connect(service: Service) -> Any:
    """A new client. S3's signs with SigV4 at the bucket's regional address: botocore would
    presign with SigV2 at s3.amazonaws.com, which buckets made since June 2020 refuse and
    which redirects (breaking the signature) outside us-east-1."""
    import boto3
    from botocore.config import Config

    if service == "s3":
        config = Config(signature_version="s3v4", s3={"addressing_style": "virtual"})
        return boto3.client(service, config=config)
    return boto3.client(service)


@before_snapshot
def _into_the_snapshot() -> None:
    """boto3 imported, so a restored environment has it; no client (its credentials age)."""
    importlib.import_module("boto3")
    client.cache_clear()
