"""Local bearer tokens, checked the way API Gateway's JWT authorizer checks them.

In AWS, Cognito signs and the authorizer verifies (signature, issuer, audience, expiry).
Locally we sign with a key kept in the local stack's home folder (or DISPATCH_JWT_SECRET).
"""

import os
import secrets
import time
from typing import Any

import jwt

from dispatch_local import home

ISSUER = "https://dispatch.local/issuer"
AUDIENCE = "dispatch-local"
ALGORITHM = "HS256"


class TokenRefused(Exception):
    pass


def signing_key() -> str:
    if key := os.environ.get("DISPATCH_JWT_SECRET"):
        return key
    path = home() / "jwt-signing-key"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def issue(sub: str, role: str, ttl_seconds: int = 12 * 3600, **extra: Any) -> str:
    now = int(time.time())
    claims = {
        "sub": sub,
        "cognito:groups": [role],
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + ttl_seconds,
        "token_use": "id",
        **extra,
    }
    return jwt.encode(claims, signing_key(), algorithm=ALGORITHM)


def verify(authorization: str | None) -> dict[str, Any]:
    """The verified claims of `Authorization: Bearer <jwt>`, or TokenRefused."""
    if not authorization or not authorization.lower().startswith("bearer "):
        raise TokenRefused("no bearer token")
    token = authorization[7:].strip()
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            signing_key(),
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.PyJWTError as error:
        raise TokenRefused(str(error)) from error
    return claims


def as_api_gateway_claims(claims: dict[str, Any]) -> dict[str, str]:
    """API Gateway hands claims to Lambda as strings; arrays become "[a b]"."""
    rendered: dict[str, str] = {}
    for name, value in claims.items():
        if isinstance(value, list):
            rendered[name] = "[" + " ".join(str(v) for v in value) + "]"
        else:
            rendered[name] = str(value)
    return rendered
