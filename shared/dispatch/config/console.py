"""The operations console's page (functions/console)."""

from pydantic import Field

from dispatch.config import Group, settings


class ConsoleSettings(Group):
    """Read with `console_settings()`."""

    # The operations console: the map's first view (minLng,minLat,maxLng,maxLat), an optional
    # tile server for a base map ({z}/{x}/{y}), and where ops sign in (Cognito's hosted page).
    console_bbox: str = Field("77.41,12.79,77.78,13.15", validation_alias="DISPATCH_CONSOLE_BBOX")
    console_tiles: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_TILES")
    console_signin_url: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_SIGNIN_URL")
    # Where the console listens for events (the WebSocket API's wss:// URL); none: this origin's
    # /ws (the local stack).
    console_push_url: str | None = Field(None, validation_alias="DISPATCH_CONSOLE_PUSH_URL")


def console_settings() -> ConsoleSettings:
    return settings.of(ConsoleSettings)
