"""The migrator's: the roles' passwords it sets (dispatch.roles) and the migrations' own
timeouts (dispatch.migrations)."""

from pydantic import Field, SecretStr

from dispatch.config import Group, settings


class MigrationSettings(Group):
    """Read with `migration_settings()`."""

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


def migration_settings() -> MigrationSettings:
    return settings.of(MigrationSettings)
