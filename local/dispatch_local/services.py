"""The services the functions talk to, on this machine: the ones named in the environment,
or embedded ones (Postgres, Redis, moto for AWS); and the record a running local stack leaves
of them, so that `dispatch invoke` and `dispatch env-json` point at the same ones."""

import fcntl
import json
import os
from pathlib import Path
from typing import IO, Any

from dispatch_local import home

# What a function needs to reach its services; everything else comes from the template.
SERVICE_VARIABLES = (
    "DATABASE_URL",
    "DATABASE_OWNER_URL",
    "REDIS_URL",
    "REDIS_CLUSTER",  # a sharded keyspace (the AWS-path tier's cluster): the cluster client
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "PHOTO_BUCKET",
    "ARCHIVE_BUCKET",
    "EVENT_BUS_NAME",
    "OUTBOX_QUEUE_URL",
    "OFFER_QUEUE_URL",
    "PUSH_DELIVERY_QUEUE_URL",
    "PUSH_GONE_QUEUE_URL",
    # push: the $connect authorizer's issuer and audience, the poster's management endpoint
    "JWT_ISSUER",
    "JWT_AUDIENCE",
    "PUSH_ENDPOINT",
)


def start() -> dict[str, str]:
    """Services for this process and its children: those the environment names, embedded
    ones for the rest (their data in DISPATCH_HOME, stopped when this process exits)."""
    from dispatch_local import embedded

    owner = owner_url() or embedded.postgres(home() / "pg")
    # The functions sign in as the application role, as in AWS; the owner only migrates.
    os.environ["DATABASE_OWNER_URL"] = owner
    os.environ["DATABASE_URL"] = app_url(owner)
    if not os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = embedded.redis(home())
    if not os.environ.get("AWS_ENDPOINT_URL"):
        embedded.use_aws_stand_in(embedded.aws())
    from dispatch.config.outbox import outbox_settings
    from dispatch.config.photos import photo_settings

    embedded.ensure_bucket(photo_settings().photo_bucket)
    # The retention duty's archive (ArchiveBucket in AWS).
    os.environ.setdefault("ARCHIVE_BUCKET", "dispatch-archive")
    embedded.ensure_bucket(os.environ["ARCHIVE_BUCKET"])
    os.environ.setdefault("EVENT_BUS_NAME", outbox_settings().event_bus_name)
    if not os.environ.get("OUTBOX_QUEUE_URL"):
        os.environ["OUTBOX_QUEUE_URL"] = embedded.ensure_outbox(os.environ["EVENT_BUS_NAME"])
    if not os.environ.get("OFFER_QUEUE_URL"):
        os.environ["OFFER_QUEUE_URL"] = embedded.ensure_offer_queue(os.environ["EVENT_BUS_NAME"])
    if not os.environ.get("PUSH_DELIVERY_QUEUE_URL") or not os.environ.get("PUSH_GONE_QUEUE_URL"):
        delivery, gone = embedded.ensure_push_delivery_queues(os.environ["EVENT_BUS_NAME"])
        os.environ["PUSH_DELIVERY_QUEUE_URL"], os.environ["PUSH_GONE_QUEUE_URL"] = delivery, gone
    migrate(owner)
    return {name: os.environ[name] for name in SERVICE_VARIABLES if os.environ.get(name)}


def owner_url() -> str | None:
    """The database owner's URL the environment names: DATABASE_OWNER_URL where a stack or a
    test keeps it apart from the functions' DATABASE_URL, else DATABASE_URL (a user's own
    server, as the README has them set it)."""
    return os.environ.get("DATABASE_OWNER_URL") or os.environ.get("DATABASE_URL") or None


def app_url(owner_url: str) -> str:
    """The owner's server and database, signed in as the application role (with
    DATABASE_APP_PASSWORD when the server asks for passwords; the migrator set it)."""
    from dispatch.roles import APP_ROLE

    return _role_url(owner_url, APP_ROLE, "DATABASE_APP_PASSWORD")


def archivist_url(owner_url: str) -> str:
    """The same, signed in as the archivist (the retention duty's role; with
    DATABASE_ARCHIVIST_PASSWORD when the server asks for passwords)."""
    from dispatch.roles import ARCHIVIST_ROLE

    return _role_url(owner_url, ARCHIVIST_ROLE, "DATABASE_ARCHIVIST_PASSWORD")


def _role_url(owner_url: str, role: str, password_variable: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: v for k, v in conninfo_to_dict(owner_url).items() if k != "password"}
    if password := os.environ.get(password_variable):
        params["password"] = password
    params["user"] = role
    return make_conninfo("", **params)


def migrate(url: str) -> list[str]:
    from dispatch import db, migrations
    from dispatch_local import REPO_ROOT

    applied = migrations.apply_patiently(
        lambda: db.connect(url), migrations.load(REPO_ROOT / "migrations")
    )
    print(f"migrations applied: {', '.join(applied) or 'none pending'}", flush=True)
    return applied


def record_path() -> Path:
    return home() / "stack.json"


def lock_path() -> Path:
    return home() / "stack.lock"


_held: list[IO[str]] = []  # the lock, open for as long as this process serves


def hold_the_stack() -> bool:
    """One stack per DISPATCH_HOME (per clone): True when this process now holds the lock, for
    as long as it lives; False when another process does. The kernel releases it when its
    holder dies, kill -9 included, so a dead stack never keeps the next from starting."""
    lock = lock_path().open("a")  # not inherited by the processes the stack starts (PEP 446)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return False
    _held.append(lock)
    return True


def held_elsewhere() -> str:
    """What a second `dispatch dev` says: where the stack that holds the lock serves."""
    found = _record()
    if found is None:  # the holder has not recorded itself yet: it is starting
        return f"a stack is already starting in this clone (its state: {home()})"
    return f"a stack is already serving this clone at {found['url']} (pid {found['pid']})"


def record(services: dict[str, str], url: str) -> None:
    """A running stack says where its services are (removed when it stops); only the holder
    of the lock writes it."""
    if not _held:
        raise RuntimeError("only the process holding the stack's lock records it")
    record_path().write_text(json.dumps({"pid": os.getpid(), "url": url, "services": services}))


def forget() -> None:
    if _held:  # the lock's holder's record, no one else's
        record_path().unlink(missing_ok=True)


def running() -> dict[str, str] | None:
    """The services of the local stack running from this DISPATCH_HOME, if one is."""
    found = _record()
    return None if found is None else dict(found["services"])


def running_url() -> str | None:
    """Where the local stack running from this DISPATCH_HOME serves the API, if one runs."""
    found = _record()
    return None if found is None else str(found["url"])


def _record() -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(record_path().read_text())
        os.kill(int(found["pid"]), 0)
    except (FileNotFoundError, ValueError, KeyError, ProcessLookupError):
        return None
    except PermissionError:
        pass  # alive, someone else's
    return found
