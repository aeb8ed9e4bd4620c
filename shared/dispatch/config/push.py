"""Push (the WebSocket API, dispatch.push): the $connect authorizer's tokens, the sender's and
the poster's queues and endpoint."""

from typing import Annotated

from pydantic import BeforeValidator, Field, SecretStr

from dispatch.config import Group, settings


def _names(value: object) -> object:
    """`a,b`: a comma-separated list; empty items dropped."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class PushSettings(Group):
    """Read with `push_settings()`."""

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


def push_settings() -> PushSettings:
    return settings.of(PushSettings)
