"""The WebSocket handshake's token: the same JWT as the HTTP API's, verified the way its JWT
authorizer verifies it (signature, issuer, audience or client id, expiry), by the $connect
Lambda authorizer (API Gateway's WebSocket APIs have no JWT authorizer of their own).

In AWS the keys are the issuer's published ones (Cognito's JWKS, RS256). The local stack
signs its tokens with a secret of its own (HS256, `DISPATCH_JWT_SECRET`), which it gives its
functions; the template never sets it.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from dispatch.auth import Role, parse_groups
from dispatch.config.push import push_settings


class TokenRefused(Exception):
    pass


@dataclass(frozen=True)
class Verified:
    caller_id: str
    roles: frozenset[Role]
    expires_at: datetime


@cache
def _jwks(url: str) -> Any:
    import jwt

    return jwt.PyJWKClient(url, cache_keys=True)


def verify(token: str | None) -> Verified:
    """The caller a token proves, or TokenRefused (missing, malformed, badly signed, another
    issuer or audience, expired, or with no role the API knows)."""
    import jwt

    s = push_settings()
    if not token or s.jwt_issuer is None:
        raise TokenRefused("no token" if not token else "no issuer configured")
    try:
        if s.jwt_local_secret is not None:
            key: Any = s.jwt_local_secret.get_secret_value()
            algorithms = ["HS256"]
        else:
            key = _jwks(f"{s.jwt_issuer}/.well-known/jwks.json").get_signing_key_from_jwt(token)
            algorithms = ["RS256"]
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=algorithms,
            issuer=s.jwt_issuer,
            options={"require": ["exp", "iss", "sub"], "verify_aud": False},
        )
    except jwt.PyJWTError as error:
        raise TokenRefused(str(error)) from error
    # Cognito's id tokens name the client in `aud`, its access tokens in `client_id`; the HTTP
    # API's authorizer accepts either, and so does this.
    audience = claims.get("aud", claims.get("client_id"))
    audiences = set(audience) if isinstance(audience, list) else {audience}
    if s.jwt_audience and not audiences & set(s.jwt_audience):
        raise TokenRefused("another audience")
    known = {role.value for role in Role}
    roles = frozenset(Role(g) for g in parse_groups(claims.get("cognito:groups")) if g in known)
    sub = claims.get("sub")
    if not roles or not isinstance(sub, str) or not sub.strip():
        raise TokenRefused("no caller or no role")
    return Verified(sub, roles, datetime.fromtimestamp(int(claims["exp"]), UTC))


def from_timestamp(value: Any) -> datetime:
    """The authorizer's `expires_at` (seconds since the epoch, a number or its text)."""
    return datetime.fromtimestamp(int(value), UTC)
