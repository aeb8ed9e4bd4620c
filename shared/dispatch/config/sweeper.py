"""The sweeper's pace (dispatch.sweeper) and its period, which the market's refit also reads."""

from pydantic import Field

from dispatch.config import Group, settings


class SweeperSettings(Group):
    """Read with `sweeper_settings()`."""

    # Expired leases reopened per sweeper transaction (see bench/sweeper.py for the choice).
    sweep_batch_size: int = Field(100, gt=0, validation_alias="DISPATCH_SWEEP_BATCH_SIZE")
    # Share of wall time the sweeper works through a backlog; it rests the remainder.
    sweep_duty: float = Field(0.25, gt=0, le=1, validation_alias="DISPATCH_SWEEP_DUTY")
    # How often the sweeper runs (the template's schedule; the local stack's own period). Each
    # duty besides the leases' has a share of it as its time budget (dispatch.sweeper.DUTIES).
    sweep_interval_seconds: int = Field(
        60, gt=0, validation_alias="DISPATCH_SWEEP_INTERVAL_SECONDS"
    )


def sweeper_settings() -> SweeperSettings:
    return settings.of(SweeperSettings)
