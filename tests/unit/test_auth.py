import pytest

from dispatch.auth import Caller, Role, caller_from_event, parse_groups


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (["worker"], {"worker"}),
        (["business", "ops"], {"business", "ops"}),
        ("[worker]", {"worker"}),
        ("[business ops]", {"business", "ops"}),
        ("[business,ops]", {"business", "ops"}),
        ('["worker"]', {"worker"}),
        ("worker", {"worker"}),
        ("[]", set()),
        (None, set()),
        (42, set()),
    ],
)
def test_groups_claim_in_every_form_api_gateway_sends(claim: object, expected: set[str]) -> None:
    assert parse_groups(claim) == expected


def event_with(claims: dict[str, object] | None) -> dict[str, object]:
    context: dict[str, object] = {"requestId": "r-1"}
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    return {"requestContext": context}


def test_caller_is_sub_and_known_roles_only() -> None:
    caller = caller_from_event(event_with({"sub": "w-1", "cognito:groups": "[worker admin]"}))
    assert caller == Caller(id="w-1", roles=frozenset({Role.WORKER}))


@pytest.mark.parametrize(
    "claims", [None, {}, {"sub": ""}, {"sub": "   "}, {"cognito:groups": "[worker]"}]
)
def test_no_identity_without_a_sub(claims: dict[str, object] | None) -> None:
    assert caller_from_event(event_with(claims)) is None


def test_identity_never_comes_from_body_or_headers() -> None:
    event = {
        "headers": {"x-user-id": "w-9", "authorization": "Bearer x"},
        "body": '{"sub": "w-9"}',
        "requestContext": {},
    }
    assert caller_from_event(event) is None
