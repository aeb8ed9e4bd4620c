"""The local API Gateway's own answers, over real HTTP: every request has an id of its own (in
the error body and the `apigw-requestid` header, as API Gateway gives one), and bytes that are
not HTTP at all get the contract's error body, not the server's plain text."""

import json
import socket
import uuid
from urllib.parse import urlsplit

import requests

from tests.e2e.client import Client


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
