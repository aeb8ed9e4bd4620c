"""Who is calling: identity and role from the JWT claims API Gateway's authorizer verified."""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    BUSINESS = "business"
    WORKER = "worker"
    OPS = "ops"


@dataclass(frozen=True)
class Caller:
    id: str
    roles: frozenset[Role]

    def has(self, role: Role) -> bool:
        return role in self.roles


def parse_groups(value: Any) -> frozenset[str]:
    """`cognito:groups` arrives as a JSON array, or rendered by API Gateway as "[a b]" / "[a,b]"."""
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
    elif isinstance(value, str):
        items = value.strip().removeprefix("[").removesuffix("]").replace(",", " ").split()
    else:
        items = []
    return frozenset(item.strip().strip('"') for item in items if item.strip())


def caller_from_event(event: Mapping[str, Any]) -> Caller | None:
    """The verified caller, or None when the request carries no usable identity."""
    claims = (((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}).get(
        "claims"
    ) or {}
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip():
        return None
    known = {role.value for role in Role}
    roles = frozenset(Role(g) for g in parse_groups(claims.get("cognito:groups")) if g in known)
    return Caller(id=sub, roles=roles)
