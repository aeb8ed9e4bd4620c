"""The docker-free local stack and the `dispatch` CLI. Never deployed."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def home() -> Path:
    """Where the local stack keeps its embedded data and signing key."""
    path = Path(os.environ.get("DISPATCH_HOME", REPO_ROOT / ".dispatch"))
    path.mkdir(parents=True, exist_ok=True)
    return path
