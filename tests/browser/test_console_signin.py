"""Signing in to the console as in AWS: Cognito's hosted page with the authorization code and
PKCE, here a stand-in for Cognito's two endpoints on loopback that checks what Cognito checks
(the code it gave, the client, the redirect address, and that SHA-256 of the verifier is the
challenge it was shown). No token travels in an address; the page keeps only the ID token."""

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import expect

from dispatch_local import tokens
from dispatch_local.stack import free_port, start_stack, stop_stack
from tests.browser.conftest import WAIT, Visit

CLIENT = "console-client"


@dataclass
class Cognito:
    """The hosted sign-in page (it signs the user in at once) and the token endpoint."""

    address: str = ""
    console: str = ""
    challenges: dict[str, str] = field(default_factory=dict)  # code -> the challenge shown
    authorize_queries: list[dict[str, str]] = field(default_factory=list)
    token_forms: list[dict[str, str]] = field(default_factory=list)

    def redeem(self, form: dict[str, str]) -> dict[str, Any] | None:
        challenge = self.challenges.pop(form.get("code", ""), None)
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        if (
            challenge is None
            or form.get("grant_type") != "authorization_code"
            or form.get("client_id") != CLIENT
            or form.get("redirect_uri") != self.console
            or base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != challenge
        ):
            return None
        return {"id_token": tokens.issue("ops-signed-in", "ops"), "token_type": "Bearer"}


@pytest.fixture(scope="module")
def cognito() -> Iterator[Cognito]:
    stand_in = Cognito()

    class Endpoints(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # /oauth2/authorize: the user signs in, back with a code
            query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            stand_in.authorize_queries.append(query)
            code = secrets.token_urlsafe(16)
            stand_in.challenges[code] = query.get("code_challenge", "")
            back = {"code": code, "state": query.get("state", "")}
            self.send_response(302)
            self.send_header("Location", f"{query['redirect_uri']}?{urlencode(back)}")
            self.end_headers()

        def do_POST(self) -> None:  # /oauth2/token: the code and the verifier for the tokens
            length = int(self.headers["Content-Length"])
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            stand_in.token_forms.append(form)
            answer = stand_in.redeem(form)
            body = json.dumps(answer or {"error": "invalid_grant"}).encode()
            self.send_response(200 if answer else 400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Access-Control-Allow-Origin", "*")  # as Cognito's endpoint does
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoints)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stand_in.address = f"http://127.0.0.1:{server.server_port}"
    yield stand_in
    server.shutdown()


@pytest.fixture(scope="module")
def signin_stack(
    cognito: Cognito, stack_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A stack configured as the template configures one whose ConsoleUrl is known."""
    port = free_port()
    cognito.console = f"http://127.0.0.1:{port}/console"
    signin = f"{cognito.address}/oauth2/authorize?" + urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT,
            "scope": "openid",
            "redirect_uri": cognito.console,
        }
    )
    home: Path = tmp_path_factory.mktemp("signin-home")
    url, process = start_stack(stack_database_url, home, port, DISPATCH_CONSOLE_SIGNIN_URL=signin)
    yield url
    stop_stack(process)


def test_ops_sign_in_with_the_code_and_pkce(
    visit: Visit, signin_stack: str, cognito: Cognito
) -> None:
    page = visit.page
    addresses: list[str] = []
    page.on("framenavigated", lambda frame: addresses.append(frame.url))
    page.goto(f"{signin_stack}/console")
    expect(page.locator("#notice")).to_contain_text("needs an ops sign-in", timeout=WAIT)
    page.locator("#sign-in").click()
    expect(page.locator("#mode")).to_have_text("Live", timeout=10_000)
    page.wait_for_selector("#summary div", timeout=10_000)

    (asked,) = cognito.authorize_queries
    assert asked["response_type"] == "code" and asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43 and asked["state"]  # base64url of a SHA-256
    (traded,) = cognito.token_forms
    assert len(traded["code_verifier"]) >= 43  # RFC 7636: 43 to 128 characters
    assert traded["code_verifier"] not in json.dumps(cognito.authorize_queries)
    # No token in any address the page went through, and none left in it now.
    assert addresses and not any("token" in a for a in addresses), addresses
    assert page.url == f"{signin_stack}/console"
    stored = page.evaluate("sessionStorage.getItem('dispatch-token')")
    assert tokens.verify(f"Bearer {stored}")["sub"] == "ops-signed-in"
    assert page.evaluate("sessionStorage.getItem('dispatch-pkce')") is None
    visit.assert_clean()


def test_a_code_this_page_did_not_ask_for_is_not_traded(
    visit: Visit, signin_stack: str, cognito: Cognito
) -> None:
    """A link carrying someone else's code (login CSRF) signs nobody in: the state must be
    the one this page's own sign-in stored."""
    cognito.token_forms.clear()
    page = visit.page
    page.goto(f"{signin_stack}/console?code=planted&state=not-mine")
    expect(page.locator("#notice")).to_contain_text("needs an ops sign-in", timeout=WAIT)
    assert cognito.token_forms == []
    assert page.evaluate("sessionStorage.getItem('dispatch-token')") is None
    visit.assert_clean()
