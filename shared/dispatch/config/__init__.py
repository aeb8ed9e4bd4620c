"""Configuration from the environment, parsed once per execution environment, at cold start:
every function calls `settings()` when it is imported, so a missing or invalid variable fails
the init with one log line naming it, not the first request. Nothing deployed has a localhost
default; the local stack and the tests set their own (`dispatch_local.LOCAL_DEFAULTS`).

Plain pydantic models validated from `os.environ`, each field under its variable's name (its
`validation_alias`): pydantic-settings would do the same and cost every function's cold start
its import (its sources: dotenv, argparse, the clouds' secret stores) and a slower parse.

A function validates only the settings it reads (issue 36: each field's schema costs a cold
start some 0.2 ms; the one model of sixty fields was 15 ms of CPU). `Settings` here holds what most
functions read (the database, Redis, the lease, the timeouts); each other group is a `Group` in
its own module of this package (`dispatch.config.offers`, ...), with its getter, imported by the
code that reads it. `settings()` validates the core and every group imported so far, together,
so a function's init fails on any variable its code reads, in one line naming each;
`settings.cache_clear()` forgets them all (the tests, after changing the environment)."""

import json
import os
import sys
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Group(BaseModel):
    """Settings one part of the code reads, read with `settings.of(TheGroup)` (its module's
    getter): defining a subclass registers it, to be validated at the next `settings()`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)
    defined: ClassVar[list[type["Group"]]] = []

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        Group.defined.append(cls)

    @classmethod
    def from_environment(cls) -> Self:
        """The settings this process's environment gives; ValidationError names each variable."""
        return cls.model_validate(os.environ)


class Settings(Group):
    """What most functions read: read with `settings()`."""

    # Who this function signs in as: the application role (dispatch_app) for every function
    # but the migrator, which signs in as the schema's owner (docs/deploy.md, "Roles").
    database_url: str = Field(min_length=1, validation_alias="DATABASE_URL")
    # Through RDS Proxy in AWS: sign in with a short-lived IAM token instead of a password.
    database_iam_auth: bool = Field(False, validation_alias="DATABASE_IAM_AUTH")
    redis_url: str | None = Field(None, validation_alias="REDIS_URL")
    # A sharded keyspace (Redis Cluster, ElastiCache Serverless): a cluster-aware client.
    redis_cluster: bool = Field(False, validation_alias="REDIS_CLUSTER")
    # Every key this deployment writes starts with it (two stages may share one cache).
    redis_namespace: str = Field(
        "dispatch", pattern=r"^[A-Za-z0-9_.:-]{1,64}$", validation_alias="DISPATCH_REDIS_NAMESPACE"
    )
    # Check-in deadline given to the winner of an accept.
    lease_seconds: int = Field(600, gt=0, validation_alias="DISPATCH_LEASE_SECONDS")
    # The application role's statement and lock timeouts. They are the role's own settings
    # (ALTER ROLE ... IN DATABASE ... SET), written by the migrator at every deploy, never
    # startup options: RDS Proxy and PgBouncer refuse those, and a SET on a pooled connection
    # would follow it to another client. Read by the migrator only.
    statement_timeout_ms: int = Field(5000, gt=0, validation_alias="DISPATCH_STATEMENT_TIMEOUT_MS")
    # Also the "short wait" of a duplicate request behind its still-running twin.
    lock_timeout_ms: int = Field(2000, gt=0, validation_alias="DISPATCH_LOCK_TIMEOUT_MS")
    max_body_bytes: int = Field(16_384, gt=0, validation_alias="DISPATCH_MAX_BODY_BYTES")
    idempotency_ttl_hours: int = Field(24, gt=0, validation_alias="DISPATCH_IDEMPOTENCY_TTL_HOURS")
    # Locations (Redis GEO): positions older than this are ignored by offers; the sweeper
    # prunes positions older than the keep period.
    # 360: the contract's reporting rule sends a still worker's position every 5 minutes
    # (docs/api.md, "Version 1.3"); a closed socket takes the worker off the map at once.
    location_fresh_seconds: int = Field(
        360, gt=0, validation_alias="DISPATCH_LOCATION_FRESH_SECONDS"
    )
    location_keep_seconds: int = Field(
        3600, gt=0, validation_alias="DISPATCH_LOCATION_KEEP_SECONDS"
    )


class SettingsError(RuntimeError):
    """The environment does not configure this function; the message names each variable."""


G = TypeVar("G", bound=Group)


class Read:
    """The one reader of settings: `settings()` the core, `settings.of(Group)` a group (each
    group's module has a getter for it), each validated once and kept; `settings.cache_clear()`
    forgets them all (the name `functools.cache` gave it when there was one model)."""

    def __init__(self) -> None:
        self.read: dict[type[Group], Group] = {}

    def __call__(self) -> Settings:
        return self.of(Settings)

    def of(self, group: type[G]) -> G:
        if len(self.read) < len(Group.defined):
            self.validate([g for g in Group.defined if g not in self.read])
        found = self.read[group]
        assert isinstance(found, group)
        return found

    def validate(self, groups: list[type[Group]]) -> None:
        """Every group at once, so that one log line names every invalid variable."""
        problems: list[str] = []
        read: dict[type[Group], Group] = {}
        for group in groups:
            try:
                read[group] = group.from_environment()
            except ValidationError as error:
                problems.extend(
                    f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
                    for item in error.errors()
                )
        if problems:
            message = f"invalid settings: {'; '.join(problems)}"
            # One line in the function's log (JSON, as the rest), then the init fails.
            print(json.dumps({"level": "ERROR", "message": message}), file=sys.stderr, flush=True)
            raise SettingsError(message) from None
        self.read.update(read)

    def cache_clear(self) -> None:
        self.read.clear()


settings = Read()
