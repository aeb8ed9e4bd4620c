"""Configuration from the environment, parsed once per execution environment, at cold start:
every function calls `settings()` when it is imported, so a missing or invalid variable fails
the init with one log line naming it, not the first request. Nothing deployed has a localhost
default; the local stack and the tests set their own (`dispatch_local.LOCAL_DEFAULTS`).

A plain pydantic model validated from `os.environ`, each field under its variable's name (its
`validation_alias`): pydantic-settings would do the same and cost every function's cold start
its import (its sources: dotenv, argparse, the clouds' secret stores) and a slower parse."""

import json
import os
import sys
from functools import cache
from typing import Annotated, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
)


class Wave(NamedTuple):
    """One wave of offers: up to `size` workers within `radius_m` of the job."""

    size: int
    radius_m: int


def _waves(value: object) -> object:
    """`DISPATCH_OFFER_WAVES=3@3000,10@5000,25@8000`: size@radius_m, in order."""
    if not isinstance(value, str):
        return value
    waves = []
    for item in value.split(","):
        size, _, radius = item.strip().partition("@")
        waves.append(Wave(int(size), int(radius)))
    return waves


def _positive_waves(waves: list[Wave]) -> list[Wave]:
    if not waves or any(w.size <= 0 or w.radius_m <= 0 for w in waves):
        raise ValueError("offer waves need a positive size and radius each, and at least one")
    return waves


def _names(value: object) -> object:
    """`a,b`: a comma-separated list; empty items dropped."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


Waves = Annotated[list[Wave], BeforeValidator(_waves), AfterValidator(_positive_waves)]


class Settings(BaseModel):
    """Read with `Settings.from_environment()` (what `settings()` caches)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

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
    # The application role's password, set by the migrator: from Secrets Manager in AWS (the
    # secret RDS Proxy signs in with), given directly on a local machine. Neither: unchanged.
    database_app_password: SecretStr | None = Field(None, validation_alias="DATABASE_APP_PASSWORD")
    database_app_secret_arn: str | None = Field(None, validation_alias="DATABASE_APP_SECRET_ARN")
    # The archivist's (dispatch_archivist: the retention duty's role), likewise.
    database_archivist_password: SecretStr | None = Field(
        None, validation_alias="DATABASE_ARCHIVIST_PASSWORD"
    )
    database_archivist_secret_arn: str | None = Field(
        None, validation_alias="DATABASE_ARCHIVIST_SECRET_ARN"
    )
    # The retention duty (dispatch.retention, docs/retention.md): a finished job leaves the hot
    # tables this many days after its last change, in batches of this many jobs, each batch
    # exported to the archive bucket before it is deleted.
    retention_hot_days: int = Field(30, gt=0, validation_alias="DISPATCH_RETENTION_HOT_DAYS")
    retention_batch_size: int = Field(
        500, gt=0, le=5000, validation_alias="DISPATCH_RETENTION_BATCH_SIZE"
    )
    archive_bucket: str | None = Field(None, validation_alias="ARCHIVE_BUCKET")
    max_body_bytes: int = Field(16_384, gt=0, validation_alias="DISPATCH_MAX_BODY_BYTES")
    idempotency_ttl_hours: int = Field(24, gt=0, validation_alias="DISPATCH_IDEMPOTENCY_TTL_HOURS")
    # Expired leases reopened per sweeper transaction (see bench/sweeper.py for the choice).
    sweep_batch_size: int = Field(100, gt=0, validation_alias="DISPATCH_SWEEP_BATCH_SIZE")
    # Share of wall time the sweeper works through a backlog; it rests the remainder.
    sweep_duty: float = Field(0.25, gt=0, le=1, validation_alias="DISPATCH_SWEEP_DUTY")
    # How often the sweeper runs (the template's schedule; the local stack's own period). Each
    # duty besides the leases' has a share of it as its time budget (dispatch.sweeper.DUTIES).
    sweep_interval_seconds: int = Field(
        60, gt=0, validation_alias="DISPATCH_SWEEP_INTERVAL_SECONDS"
    )
    # Outbox delivery. No queue URL: events stay in the table until a relay with one runs.
    outbox_queue_url: str | None = Field(None, validation_alias="OUTBOX_QUEUE_URL")
    event_bus_name: str = Field("dispatch", validation_alias="EVENT_BUS_NAME")
    relay_batch_size: int = Field(1000, gt=0, validation_alias="DISPATCH_RELAY_BATCH_SIZE")
    relay_claim_seconds: int = Field(30, gt=0, validation_alias="DISPATCH_RELAY_CLAIM_SECONDS")
    # An event sent to the queue and still not on the bus this long after is sent again: the
    # queue may have lost it (SQS drops a repeat within five minutes; the publisher skips what
    # is already on the bus). Never sooner than it had waited before that send (migration
    # 0056): a backlog is not sent again on every pass.
    relay_resend_seconds: int = Field(20, gt=0, validation_alias="DISPATCH_RELAY_RESEND_SECONDS")
    # How long one run of the scheduled relay keeps looking for stragglers (a pass a second):
    # in AWS nearly its one-minute period, so that a straggler waits seconds, not a minute;
    # locally the scheduler runs it every second instead.
    relay_poll_seconds: int = Field(0, ge=0, validation_alias="DISPATCH_RELAY_POLL_SECONDS")
    # Locations (Redis GEO): positions older than this are ignored by offers; the sweeper
    # prunes positions older than the keep period.
    location_fresh_seconds: int = Field(
        120, gt=0, validation_alias="DISPATCH_LOCATION_FRESH_SECONDS"
    )
    location_keep_seconds: int = Field(
        3600, gt=0, validation_alias="DISPATCH_LOCATION_KEEP_SECONDS"
    )
    # Offers in waves. No queue URL: no offers are made (publishing is unaffected).
    offer_queue_url: str | None = Field(None, validation_alias="OFFER_QUEUE_URL")
    offer_waves: Waves = Field(
        [Wave(3, 3000), Wave(10, 5000), Wave(25, 8000)], validation_alias="DISPATCH_OFFER_WAVES"
    )
    # The gap between waves (an SQS message delay, so at most 900 s).
    offer_wave_interval_seconds: int = Field(
        60, ge=0, le=900, validation_alias="DISPATCH_OFFER_WAVE_INTERVAL_SECONDS"
    )
    # When everyone offered in a wave has declined, send the next wave at once.
    offer_next_wave_on_declines: bool = Field(
        True, validation_alias="DISPATCH_OFFER_NEXT_WAVE_ON_DECLINES"
    )
    # Nearest positions read per wave before the database filters (skills, busy, offered).
    offer_candidate_limit: int = Field(500, gt=0, validation_alias="DISPATCH_OFFER_CANDIDATE_LIMIT")
    # Who a wave offers to (dispatch.offers.policy): `nearest` (the seed's: nearest first,
    # rating breaking ties, the wave's size) or `likely` (the workers most likely to take the
    # job within one interval, from what they did with their recent offers; the round sized
    # to the supply). The `likely` policy's knobs follow (docs/simulation.md, "Offer policy").
    offer_policy: Literal["nearest", "likely"] = Field(
        "nearest", validation_alias="DISPATCH_OFFER_POLICY"
    )
    # How long a worker's and the market's answers count: the time constant of their decay (an
    # answer a day old weighs 0.37), so that a worker's habits survive the night (two hours
    # held about one answer a worker in the simulated district); and how many offers a worker's
    # record weighs at most against the prior (more answers are scaled down to 12). The answers
    # are folded once by the sweeper (dispatch.offers.market.fold), not recounted.
    offer_history_seconds: int = Field(
        86400, gt=0, validation_alias="DISPATCH_OFFER_HISTORY_SECONDS"
    )
    offer_history_offers: int = Field(12, gt=0, validation_alias="DISPATCH_OFFER_HISTORY_OFFERS")
    # The nearest qualified workers the policy ranks (the rest are too far to matter).
    offer_pool: int = Field(24, gt=0, validation_alias="DISPATCH_OFFER_POOL")
    # The chance that someone says yes within the horizon that a wave aims for; the horizon
    # is how soon a business should hear (shorter than the interval: fast answerers count).
    offer_target: float = Field(0.9, gt=0, lt=1, validation_alias="DISPATCH_OFFER_TARGET")
    offer_horizon_seconds: int = Field(20, gt=0, validation_alias="DISPATCH_OFFER_HORIZON_SECONDS")
    # A worker with no history: this chance of accepting a job at their door (until the
    # market's curve stands: then the market's own).
    offer_prior_accept: float = Field(
        0.6, gt=0, le=1, validation_alias="DISPATCH_OFFER_PRIOR_ACCEPT"
    )
    # How many offers' worth of that prior a worker's own record must outweigh.
    offer_prior_weight: float = Field(3.0, gt=0, validation_alias="DISPATCH_OFFER_PRIOR_WEIGHT")
    # The distance at which the policy expects half as many yeses as at the door (until the
    # market's curve stands: then the market's own).
    offer_half_distance_m: int = Field(
        2500, gt=0, validation_alias="DISPATCH_OFFER_HALF_DISTANCE_M"
    )
    # Each decline the job already had in this round lowers everyone's chance by this factor
    # (a job others turned down is harder to place: the wave widens).
    offer_decline_discount: float = Field(
        0.85, gt=0, le=1, validation_alias="DISPATCH_OFFER_DECLINE_DISCOUNT"
    )
    # Spread work: a worker idle for the whole history window counts this much more.
    offer_idle_weight: float = Field(0.2, ge=0, validation_alias="DISPATCH_OFFER_IDLE_WEIGHT")
    # A wave offers at least this many and at most the larger of this and the wave's size.
    offer_min_size: int = Field(1, gt=0, validation_alias="DISPATCH_OFFER_MIN_SIZE")
    offer_max_size: int = Field(4, gt=0, validation_alias="DISPATCH_OFFER_MAX_SIZE")
    # The market's curve (dispatch.offers.market): the sweeper fits it to the market's folded
    # answers (decayed with the history above) every `refit` seconds; the policy reads it once
    # it stands on `min_answers` answers (fewer: the prior and the half distance above stand).
    offer_market_refit_seconds: int = Field(
        600, gt=0, validation_alias="DISPATCH_OFFER_MARKET_REFIT_SECONDS"
    )
    offer_market_min_answers: int = Field(
        200, gt=0, validation_alias="DISPATCH_OFFER_MARKET_MIN_ANSWERS"
    )
    # How many waves ahead a `likely` wave may reach: its workers are found within that later
    # wave's radius (0: the wave's own), so a job with nobody near is offered at once to whoever
    # is farther instead of waiting an interval for the next wave; the score still ranks the
    # near ones first.
    offer_reach_waves: int = Field(1, ge=0, validation_alias="DISPATCH_OFFER_REACH_WAVES")
    # A rating one star above what the job asks (or above 4.0, a new worker's) counts this much
    # more.
    offer_rating_weight: float = Field(0.05, ge=0, validation_alias="DISPATCH_OFFER_RATING_WEIGHT")
    photo_bucket: str = Field(min_length=1, validation_alias="PHOTO_BUCKET")
    # The operations console: the map's first view (minLng,minLat,maxLng,maxLat), an optional
    # tile server for a base map ({z}/{x}/{y}), and where ops sign in (Cognito's hosted page).
    console_bbox: str = Field("77.41,12.79,77.78,13.15", validation_alias="DISPATCH_CONSOLE_BBOX")
    console_tiles: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_TILES")
    console_signin_url: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_SIGNIN_URL")
    # Where the console listens for events (the WebSocket API's wss:// URL); none: this origin's
    # /ws (the local stack).
    console_push_url: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_PUSH_URL")
    # Migrations run with their own timeouts, not the API's: a lock wait short and retried (a
    # DDL queued behind a long query would block every query queued behind it), a statement
    # long (an index build, a backfill), both cut to the time the deploy has left.
    migration_lock_timeout_ms: int = Field(
        3000, gt=0, validation_alias="DISPATCH_MIGRATION_LOCK_TIMEOUT_MS"
    )
    migration_attempts: int = Field(10, gt=0, validation_alias="DISPATCH_MIGRATION_ATTEMPTS")
    migration_statement_timeout_ms: int = Field(
        600_000, gt=0, validation_alias="DISPATCH_MIGRATION_STATEMENT_TIMEOUT_MS"
    )
    photo_upload_seconds: int = Field(900, gt=0, validation_alias="DISPATCH_PHOTO_UPLOAD_SECONDS")
    # -- push (the WebSocket API) --
    # Who signs the tokens the $connect authorizer accepts (Cognito's issuer URL in AWS), and
    # the client ids they may name (`aud` or `client_id`), comma-separated; none: any.
    jwt_issuer: str | None = Field(None, validation_alias="JWT_ISSUER")
    jwt_audience: Annotated[list[str], BeforeValidator(_names)] = Field(
        [], validation_alias="JWT_AUDIENCE"
    )
    # The local stack's own signing secret (HS256): set only there; in AWS the issuer's
    # published keys (RS256) verify.
    jwt_local_secret: SecretStr | None = Field(None, validation_alias="DISPATCH_JWT_SECRET")
    # The WebSocket API's management endpoint (https://{api}.execute-api.{region}.amazonaws.com
    # /{stage}; locally the stack's own address): where the poster posts to connections.
    push_endpoint: str | None = Field(None, validation_alias="PUSH_ENDPOINT")
    # The sender (in the VPC) puts deliveries on the first; the poster (outside it, where the
    # management API is reachable) puts the connections it found gone on the second.
    push_delivery_queue_url: str | None = Field(None, validation_alias="PUSH_DELIVERY_QUEUE_URL")
    push_gone_queue_url: str | None = Field(None, validation_alias="PUSH_GONE_QUEUE_URL")

    @classmethod
    def from_environment(cls) -> "Settings":
        """The settings this process's environment gives; ValidationError names each variable."""
        return cls.model_validate(os.environ)


class SettingsError(RuntimeError):
    """The environment does not configure this function; the message names each variable."""


@cache
def settings() -> Settings:
    try:
        return Settings.from_environment()
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        message = f"invalid settings: {problems}"
        # One line in the function's log (JSON, as the rest), then the init fails.
        print(json.dumps({"level": "ERROR", "message": message}), file=sys.stderr, flush=True)
        raise SettingsError(message) from None
