"""Tokens the authorizer (and the local stack, which stands in for it) must refuse; idempotency
keys that never cross callers; errors that never show SQL or a stack trace."""

import base64
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from dispatch.db import Connection
from dispatch.errors import CATALOGUE, Code
from dispatch_local import tokens
from tests.support import BUSINESS, Api, job_body

OTHER_BUSINESS = ("business-2", "business")


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "sub": "w-x",
        "cognito:groups": ["worker"],
        "iss": tokens.ISSUER,
        "aud": tokens.AUDIENCE,
        "iat": now,
        "exp": now + 600,
    }
    return {**base, **changes}


def signed(payload: dict[str, Any], algorithm: str = tokens.ALGORITHM, key: Any = None) -> str:
    return jwt.encode(payload, key or tokens.signing_key(), algorithm=algorithm)


def unsigned(payload: dict[str, Any]) -> str:
    """`alg: none`, built by hand (libraries rightly refuse to make one)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(payload)}."


def bad_tokens() -> dict[str, str | None]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    return {
        "none": None,
        "not bearer": "Basic dXNlcjpwYXNz",
        "empty bearer": "Bearer ",
        "not a jwt": "Bearer not-a-jwt",
        "expired": "Bearer " + signed(claims(exp=now - 10)),
        "not yet valid": "Bearer " + signed(claims(nbf=now + 3600)),
        "issued in the future": "Bearer " + signed(claims(iat=now + 3600)),
        "wrong issuer": "Bearer " + signed(claims(iss="https://evil.example")),
        "wrong audience": "Bearer " + signed(claims(aud="someone-else")),
        "no expiry": "Bearer " + signed({k: v for k, v in claims().items() if k != "exp"}),
        "no subject": "Bearer " + signed({k: v for k, v in claims().items() if k != "sub"}),
        "wrong key": "Bearer " + signed(claims(), key="another-key-" + "x" * 32),
        "wrong algorithm (HS512)": "Bearer " + signed(claims(), algorithm="HS512"),
        "wrong algorithm (RS256)": "Bearer " + signed(claims(), "RS256", rsa_key),
        "alg none": "Bearer " + unsigned(claims()),
        "tampered payload": "Bearer " + tamper(signed(claims())),
    }


def tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=="))
    body["cognito:groups"] = ["ops"]
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize("name", list(bad_tokens()))
def test_bad_tokens_are_refused(name: str) -> None:
    with pytest.raises(tokens.TokenRefused):
        tokens.verify(bad_tokens()[name])


def test_a_good_token_passes() -> None:
    assert tokens.verify("Bearer " + signed(claims()))["sub"] == "w-x"


def test_a_key_never_crosses_callers(api: Api, conn: Connection) -> None:
    """Another caller using the same key neither replays the first answer nor learns that the
    key exists (a different body would be 422 for its owner, not for anyone else)."""
    first = api.call("POST", "/jobs", BUSINESS, job_body(["wash"]), key="shared-key")
    same = api.call("POST", "/jobs", OTHER_BUSINESS, job_body(["wash"]), key="shared-key")
    other = api.call("POST", "/jobs", OTHER_BUSINESS, job_body(["iron"]), key="shared-key-2")
    probe = api.call("POST", "/jobs", OTHER_BUSINESS, job_body(["iron"]), key="shared-key")
    assert first.status == same.status == other.status == 201
    assert same.body["id"] != first.body["id"] and same.body["business_id"] == "business-2"
    assert "idempotent-replayed" not in {k.lower() for k in same.headers}
    # For the second business, "shared-key" is its own key now: reuse with a new body is 422,
    # exactly as for any of its own keys; the first business's use of it shows nowhere.
    assert (probe.status, probe.code) == (422, "IDEMPOTENCY_KEY_REUSED")
    owners = conn.execute("SELECT principal FROM idempotency_keys WHERE key = 'shared-key'")
    assert sorted(r["principal"] for r in owners) == ["business-1", "business-2"]


LEAKS = ("select", "insert", "traceback", "psycopg", "vault", 'file "', "line ")


def test_an_unexpected_failure_shows_nothing_inside(api: Api, conn: Connection) -> None:
    """A database error the code does not expect: 500 INTERNAL with the fixed sentence, no SQL,
    no exception text, no trace, and nothing stored (a retry runs again)."""
    conn.execute("""
        CREATE FUNCTION leak_bait() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'SELECT secret FROM vault WHERE id = 42'; END $$;
        CREATE TRIGGER leak_bait BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION leak_bait();
    """)
    try:
        reply = api.call("POST", "/jobs", BUSINESS, job_body(), key="k-leak")
    finally:
        conn.execute("DROP TRIGGER leak_bait ON jobs; DROP FUNCTION leak_bait()")
    assert (reply.status, reply.code) == (500, "INTERNAL")
    assert reply.body["error"]["message"] == CATALOGUE[Code.INTERNAL].message
    text = json.dumps(reply.body).lower()
    assert not [leak for leak in LEAKS if leak in text], text
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone() == {"n": 0}
    retry = api.call("POST", "/jobs", BUSINESS, job_body(), key="k-leak")
    assert retry.status == 201
