"""The local API Gateway's own answers, over real HTTP: every request has an id of its own (in
the error body and the `apigw-requestid` header, as API Gateway gives one), and bytes that are
not HTTP at all get the contract's error body, not the server's plain text."""

import json
import socket
import uuid
from urllib.parse import urlsplit

import requests

from tests.e2e.client import Client
from tests.support import job_body


def error_of(reply: requests.Response, status: int, code: str) -> str:
    assert reply.status_code == status, reply.text
    assert reply.headers["Content-Type"].startswith("application/json")
    error = reply.json()["error"]
    assert error["code"] == code
    assert error["request_id"] == reply.headers["apigw-requestid"]
    uuid.UUID(error["request_id"])  # an id, not a word
    return str(error["request_id"])


def test_the_gateways_own_errors_each_carry_their_requests_id(stack: str) -> None:
    ids = [
        error_of(requests.get(f"{stack}/no/such/route", timeout=10), 404, "NOT_FOUND"),
        error_of(requests.get(f"{stack}/no/such/route", timeout=10), 404, "NOT_FOUND"),
        # A newline in a path (found by the fuzz on POST /jobs/{job_id}/decline).
        error_of(requests.post(f"{stack}/jobs/a%0Ab/decline", timeout=10), 401, "UNAUTHORIZED"),
        error_of(requests.get(f"{stack}/no%0Asuch", timeout=10), 404, "NOT_FOUND"),
        error_of(requests.get(f"{stack}/jobs/nearby?lat=1&lng=2", timeout=10), 401, "UNAUTHORIZED"),
        error_of(
            requests.post(f"{stack}/jobs", data=b"x" * (1024 * 1024 + 1), timeout=10),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ]
    assert len(set(ids)) == len(ids), ids


def test_a_functions_answer_names_the_id_the_gateway_gave_its_event(stack: str) -> None:
    worker = Client(stack, "worker-gateway-id", "worker")
    refused = worker.send("GET", "/jobs/not-a-job-id")
    assert error_of(refused, 400, "VALIDATION_FAILED")
    health = requests.get(f"{stack}/health", timeout=10)
    assert health.status_code == 200
    uuid.UUID(health.headers["apigw-requestid"])


def raw(stack: str, data: bytes) -> tuple[str, dict[str, str], bytes]:
    """Bytes sent as they are on a fresh connection; the status line, headers and body."""
    address = urlsplit(stack)
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        conn.sendall(data)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers, body


def test_a_garbage_request_line_gets_the_contracts_error_body(stack: str) -> None:
    for garbage in (b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"):
        status, headers, body = raw(stack, garbage)
        assert status.startswith("HTTP/1.1 400"), status
        assert headers["content-type"] == "application/json"
        assert int(headers["content-length"]) == len(body)
        error = json.loads(body)["error"]
        assert error["code"] == "VALIDATION_FAILED"
        assert error["request_id"] == headers["apigw-requestid"]
        assert error["details"] == [{"field": "request", "problem": "not a valid HTTP/1.1 request"}]


def test_a_path_is_handed_over_percent_decoded_as_api_gateway_does(stack: str) -> None:
    """A worker id that needs encoding in a path (found from outside): HTTP APIs decode the
    path before the function sees it, so blocking `w%C3%B6rker%20…` blocks the worker whose
    id is `wörker …`: they no longer see the business's job nearby and may not apply; a
    decoded slash or control character is no id at all."""
    suffix = uuid.uuid4().hex[:6]
    who = f"wörker blk {suffix}"
    owner = Client(stack, f"b-decode-{suffix}", "business")
    blocked = owner.send("PUT", f"/businesses/me/blocked/w%C3%B6rker%20blk%20{suffix}")
    assert (blocked.status_code, blocked.json()["worker_id"]) == (200, who), blocked.text
    listed = owner.send("GET", "/businesses/me/blocked", key=None).json()["blocked"]
    assert [entry["worker_id"] for entry in listed] == [who]
    skill = f"decode-{suffix}"  # no other job of the shared stack needs it: nearby is exact
    job = owner.send(
        "POST",
        "/jobs",
        {**job_body([skill], 12.9716, 77.5946), "assignment": "business_choice"},
    ).json()
    phone = Client(stack, who, "worker")
    assert phone.send("PUT", "/workers/me", {"skills": [skill]}).status_code == 200
    nearby = phone.send("GET", "/jobs/nearby?lat=12.9716&lng=77.5946", key=None).json()["jobs"]
    assert nearby == []
    other = Client(stack, f"w-decode-{suffix}", "worker")  # not blocked: sees it
    assert other.send("PUT", "/workers/me", {"skills": [skill]}).status_code == 200
    seen = other.send("GET", "/jobs/nearby?lat=12.9716&lng=77.5946", key=None).json()["jobs"]
    assert [found["id"] for found in seen] == [job["id"]]
    refused = phone.send("POST", f"/jobs/{job['id']}/applications", {})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "BLOCKED_BY_BUSINESS")
    for odd in ("a%2Fb", "a%00b", "a%C2%9Bb"):
        reply = owner.send("PUT", f"/businesses/me/favourites/{odd}")
        assert reply.status_code in (400, 404), (odd, reply.text)
    favourites = owner.send("GET", "/businesses/me/favourites", key=None).json()["favourites"]
    assert favourites == []
    # Routed on the decoded path, as API Gateway does: the route whose roles are checked is
    # the one that answers (an encoded letter once took a business past nearby's worker gate).
    sneaked = owner.send("GET", "/jobs/%6Eearby?lat=12.9716&lng=77.5946", key=None)
    assert (sneaked.status_code, sneaked.json()["error"]["code"]) == (403, "FORBIDDEN")


def test_a_method_or_route_no_route_has_gets_the_contracts_404_as_in_aws(stack: str) -> None:
    """The template's $default route (the health function) answers every method and path no
    route has, in AWS and here alike: 404 NOT_FOUND in the contract's body, never a plain-text
    405 whose `allow` lists methods that answer 404 (found from outside). HTTP APIs answer no
    HEAD for a GET route, and the local pages are GET alone, as the console's page in AWS."""
    seen = []
    for method, path in [
        ("TRACE", "/health"),
        ("PROPFIND", "/jobs"),
        ("TRACE", "/"),
        ("PATCH", "/jobs/00000000-0000-7000-8000-000000000000"),
        ("GET", "/no/such/route"),
        ("GET", "/health/"),
        ("POST", "/openapi.json"),
        ("DELETE", "/docs"),
        ("PUT", "/docs/assets/swagger-ui.css"),
        ("OPTIONS", "/asyncapi.json"),
        ("POST", "/health"),
    ]:
        reply = requests.request(method, f"{stack}{path}", timeout=10)
        assert "allow" not in reply.headers, (method, path)
        seen.append(error_of(reply, 404, "NOT_FOUND"))
    for path in ("/health", "/", "/openapi.json", "/docs", "/docs/assets/swagger-ui.css"):
        head = requests.head(f"{stack}{path}", timeout=10)
        assert head.status_code == 404, (path, head.status_code)
        assert head.headers["Content-Type"].startswith("application/json")
        assert "allow" not in head.headers
        seen.append(head.headers["apigw-requestid"])
        # The same path with GET still answers: HEAD is refused, not the path.
        assert requests.get(f"{stack}{path}", timeout=10).status_code == 200, path
    status, headers, body = raw(
        stack, b"CONNECT /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    assert status.startswith("HTTP/1.1 404"), status
    assert "allow" not in headers
    error = json.loads(body)["error"]
    assert (error["code"], error["request_id"]) == ("NOT_FOUND", headers["apigw-requestid"])
    assert len(set(seen)) == len(seen)
