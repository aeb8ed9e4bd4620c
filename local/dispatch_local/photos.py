"""A photo's upload as the apps make it: the slot POST /photos answered is an S3 presigned
POST, a form of the slot's fields and then the file (the last field). Used by the tests, the
simulator and the benchmarks alike; the README's tour does the same with curl."""

from collections.abc import Mapping
from typing import Any

import requests


def upload(slot: Mapping[str, Any], content: bytes, timeout: float = 10) -> requests.Response:
    fields = dict(slot["upload_fields"])
    return requests.post(
        slot["upload_url"],
        data=fields,
        files={"file": ("photo", content, fields.get("Content-Type", "image/jpeg"))},
        timeout=timeout,
    )
