"""The docker-free local stack and the `dispatch` CLI. Never deployed."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Settings the deployed functions get from the template and local runs must give themselves
# (the layer has no localhost defaults): the local stack, the CLI, the tests, the benchmarks.
LOCAL_DEFAULTS = {"PHOTO_BUCKET": "dispatch-photos-local"}
for _name, _value in LOCAL_DEFAULTS.items():
    os.environ.setdefault(_name, _value)


def home() -> Path:
    """Where the local stack keeps its embedded data and signing key."""
    path = Path(os.environ.get("DISPATCH_HOME", REPO_ROOT / ".dispatch"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def environment_restored(*names: str) -> Iterator[None]:
    """Whatever is done to these variables inside, the caller has its own back afterwards (a
    test suite running a benchmark or a simulation goes on with its own queue, Redis and
    metrics), and the settings are read again."""
    before = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        from dispatch.config import settings

        settings.cache_clear()


# What a handler's settings need before its module can be imported; a placeholder that no
# request ever uses (nothing connects at import).
UNUSED_DATABASE_URL = "postgresql://documentation-only.invalid/none"


@contextmanager
def settings_not_needed() -> Iterator[None]:
    """Import handler modules for what they declare (routes, models), not to run them: the
    settings their cold start validates get a placeholder where the environment has none."""
    with environment_restored("DATABASE_URL"):
        os.environ.setdefault("DATABASE_URL", UNUSED_DATABASE_URL)
        yield
