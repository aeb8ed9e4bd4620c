"""An HTTP client standing for one person on one phone."""

import uuid
from typing import Any

import requests

from dispatch_local import tokens


class Client:
    """One person on one phone: their own token and their own HTTP connection."""

    def __init__(self, base: str, sub: str, role: str) -> None:
        self.base, self.sub = base, sub
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {tokens.issue(sub, role)}"

    def send(
        self, method: str, path: str, body: Any = None, key: str | None = "auto"
    ) -> requests.Response:
        headers = {}
        if key is not None:
            headers["Idempotency-Key"] = str(uuid.uuid4()) if key == "auto" else key
        return self.session.request(
            method, self.base + path, json=body, headers=headers, timeout=30
        )
