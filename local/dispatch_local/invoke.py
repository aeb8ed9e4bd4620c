"""`dispatch invoke`, `dispatch generate-event` and `dispatch env-json`: the third way in.

`sam local invoke FUNCTION -e EVENT` runs one function's handler in a Lambda container with
the template's environment. Without Docker, `dispatch invoke` does the same in a process of
its own: the function's folder first on the path (`import app`, as the runtime does), the
layer's `dispatch` package, the environment the template gives that function, with the
services pointed at the running local stack (or embedded ones when none runs).
"""

import functools
import importlib
import json
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dispatch_local import samples, services
from dispatch_local.events import LambdaContext, http_api_event
from dispatch_local.template import (
    Function,
    Route,
    default_route,
    find,
    handler_of,
    load_template,
    routes,
)
from dispatch_local.tokens import as_api_gateway_claims

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
Who = tuple[str, str]  # (sub, role): the caller, as the JWT authorizer's claims name them


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def code(self) -> str | None:
        return self.body.get("error", {}).get("code") if isinstance(self.body, dict) else None


class Api:
    """The HTTP API in process: each call becomes the payload-2.0 event API Gateway would
    hand the route's function (claims as the JWT authorizer puts them), and runs its real
    handler. Used by the tests and the simulator."""

    def __init__(self) -> None:
        self.routes = routes()
        self.default = default_route()

    def call(
        self, method: str, path: str, who: Who | None = None, body: Any = None, **options: Any
    ) -> Reply:
        """The request's answer from its function's real handler (`options` as for `event`)."""
        route, event = self.event(method, path, who, body, **options)
        result = handler_of(route)(event, LambdaContext(function_name=route.function))
        text = result.get("body") or ""
        return Reply(
            status=result["statusCode"],
            headers=result.get("headers") or {},
            body=json.loads(text) if text else None,
        )

    def event(
        self,
        method: str,
        path: str,
        who: Who | None = None,
        body: Any = None,
        *,
        key: str | None = "auto",
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[Route, dict[str, Any]]:
        """The route and the event API Gateway would hand its function for this request."""
        found = find(self.routes, method, path.split("?")[0], self.default)
        if found is None:
            raise UnknownFunction(f"no route for {method} {path}")
        route, params = found
        all_headers = {"content-type": "application/json", **(headers or {})}
        if key == "auto":
            key = str(uuid.uuid4())
        if key is not None:
            all_headers["idempotency-key"] = key
        payload = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        claims = as_api_gateway_claims({"sub": who[0], "cognito:groups": [who[1]]}) if who else None
        event = http_api_event(
            route,
            params,
            method,
            path.split("?")[0],
            path.partition("?")[2],
            list(all_headers.items()),
            payload,
            claims,
        )
        return route, event


class UnknownFunction(LookupError):
    pass


def functions(template: dict[str, Any] | None = None) -> dict[str, Function]:
    """Every function of the template by logical id."""
    template = template or load_template()
    from dispatch_local import REPO_ROOT

    return {
        logical_id: Function(
            function=logical_id,
            code_uri=(REPO_ROOT / str(res["Properties"]["CodeUri"])).resolve(),
            handler=str(res["Properties"].get("Handler", "app.lambda_handler")),
        )
        for logical_id, res in template["Resources"].items()
        if res.get("Type") == "AWS::Serverless::Function"
    }


def find_function(name: str) -> Function:
    """By logical id (AcceptJobFunction) or by folder (accept_job)."""
    known = functions()
    for function in known.values():
        if name in (function.function, function.code_uri.name):
            return function
    choices = ", ".join(sorted(f"{f.function} ({f.code_uri.name})" for f in known.values()))
    raise UnknownFunction(f"no function {name!r} in template.yaml; there are: {choices}")


def template_environment(function: Function) -> dict[str, str]:
    """The variables the template sets for `function` (Globals, then its own), with values a
    local run can take: literals as written, parameter references as their defaults.
    Values only AWS can give (ARNs, endpoints) are left to the local services."""
    template = load_template()
    parameters = {
        name: str(spec["Default"])
        for name, spec in (template.get("Parameters") or {}).items()
        if "Default" in spec
    }
    declared = dict(template["Globals"]["Function"]["Environment"]["Variables"])
    own = template["Resources"][function.function]["Properties"].get("Environment") or {}
    declared.update(own.get("Variables") or {})
    resolved: dict[str, str] = {}
    for name, value in declared.items():
        if isinstance(value, str | int | float | bool):
            resolved[name] = str(value)
        elif isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in parameters:
            resolved[name] = parameters[value["Ref"]]
    return resolved


def environment_for(function: Function, service_values: dict[str, str]) -> dict[str, str]:
    """Template values, then the local services, then whatever the caller set explicitly.
    A function whose own environment names its DATABASE_URL signs in as the role that URL
    names in the template (the archivist: the retention duty), else as the owner (the
    migrator); every other one as the application role, as the services' DATABASE_URL does."""
    environment = {**template_environment(function), **service_values}
    environment["DATABASE_IAM_AUTH"] = "false"  # local services take no IAM tokens
    if signs_in_as_owner(function) and "DATABASE_OWNER_URL" in service_values:
        environment["DATABASE_URL"] = service_values["DATABASE_OWNER_URL"]
    if signs_in_as_archivist(function) and "DATABASE_OWNER_URL" in service_values:
        environment["DATABASE_URL"] = services.archivist_url(service_values["DATABASE_OWNER_URL"])
    for name in list(environment):
        if name in os.environ and name not in service_values:
            environment[name] = os.environ[name]
    # The push authorizer verifies the local stack's tokens with its signing key (never in the
    # template: in AWS the issuer's published keys verify).
    from dispatch_local import tokens

    environment["DISPATCH_JWT_SECRET"] = tokens.signing_key()
    return environment


@functools.cache
def _own_database_url(logical_id: str) -> str | None:
    """The DATABASE_URL the template gives the function itself (as JSON: it may be an
    intrinsic), if any. Read once per function: the environments ask on every invoke, and
    parsing the template each time made a burst of 500 accepts time out."""
    own = load_template()["Resources"][logical_id]["Properties"].get("Environment") or {}
    url = (own.get("Variables") or {}).get("DATABASE_URL")
    return None if url is None else json.dumps(url)


def signs_in_as_owner(function: Function) -> bool:
    url = _own_database_url(function.function)
    return url is not None and not signs_in_as_archivist(function)


def signs_in_as_archivist(function: Function) -> bool:
    from dispatch.roles import ARCHIVIST_ROLE

    return f"//{ARCHIVIST_ROLE}@" in (_own_database_url(function.function) or "")


def local_service_values() -> dict[str, str]:
    """The running local stack's services, or embedded ones started for this process."""
    return services.running() or services.start()


def timeout_of(function: Function) -> int:
    """The function's Timeout in the template (its own, else Globals'), as sam would give it."""
    template = load_template()
    own = template["Resources"][function.function]["Properties"].get("Timeout")
    return int(own or template["Globals"]["Function"].get("Timeout", 3))


def invoke(
    function: Function, event: Any, timeout_seconds: int | None = None, sample: bool = False
) -> Any:
    """Run the handler once in this process, as a fresh Lambda environment would; for a
    `sample` event (one of events/), first make what its sample world lacks."""
    os.environ.update(environment_for(function, local_service_values()))
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from dispatch.config import settings

    settings.cache_clear()  # read anew at the function's cold start, as in Lambda
    if sample:
        for made in samples.prepare(event):
            print(f"sample world: made {made}", file=sys.stderr, flush=True)
    module_name, handler_name = function.handler.rsplit(".", 1)
    sys.path.insert(0, str(function.code_uri))
    os.chdir(function.code_uri)
    handler = getattr(importlib.import_module(module_name), handler_name)
    context = LambdaContext(
        function_name=function.function, timeout_seconds=timeout_seconds or timeout_of(function)
    )
    return handler(event, context)


def generate_event(
    method: str,
    path: str,
    sub: str | None,
    role: str | None,
    body: str | None,
    key: str | None,
) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event for a route of the template, signed in as the JWT
    authorizer would hand it over (its claims), with an Idempotency-Key on state changes."""
    raw_path, _, query = path.partition("?")
    found = find(routes(), method.upper(), raw_path)
    if found is None:
        raise UnknownFunction(f"no route {method.upper()} {raw_path} in template.yaml")
    route, parameters = found
    headers = [("content-type", "application/json"), ("user-agent", "dispatch-generate-event")]
    if method.upper() in STATE_CHANGING:
        headers.append(("idempotency-key", key or str(uuid.uuid4())))
    claims = None
    if route.authorized and sub and role:
        claims = as_api_gateway_claims({"sub": sub, "cognito:groups": [role]})
    payload = (body or "").encode()
    return http_api_event(route, parameters, method, raw_path, query, headers, payload, claims)


def env_json(host_alias: str | None) -> dict[str, dict[str, str]]:
    """`sam local invoke --env-vars` / `sam local start-api --env-vars`: each function's
    variables, pointed at the running local stack's services (loopback addresses renamed to
    `host_alias`, for a container that reaches the host by that name)."""
    values = services.running()
    if values is None:
        raise RuntimeError("no local stack is running from this DISPATCH_HOME: start `make dev`")
    found: dict[str, dict[str, str]] = {}
    for function in functions().values():
        environment = environment_for(function, values)
        if host_alias:
            environment = {
                name: value.replace("127.0.0.1", host_alias).replace("localhost", host_alias)
                for name, value in environment.items()
            }
        found[function.function] = environment
    return found


def main_invoke(name: str, event_file: str | None, timeout_seconds: int | None) -> int:
    """The CLI's `invoke`: the response JSON on stdout, everything the function logs on
    stderr, exit status 1 when the handler failed: it raised (printed as sam prints
    errorMessage/errorType), answered 5xx, left records of its batch failed, or, a custom
    resource, answered CloudFormation FAILED or not at all."""
    function = find_function(name)
    source = sys.stdin if event_file in (None, "-") else open(event_file)  # noqa: SIM115
    with source:
        event = json.load(source)
    sample = event_file not in (None, "-") and is_sample(Path(event_file))
    answer_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)  # the function's prints and logs (Powertools writes to stdout) to stderr
    try:
        with CloudFormationStandIn(event) as cloudformation:
            result = invoke(function, event, timeout_seconds, sample)
        problem = failure(result) or cloudformation.failure()
    except Exception as error:
        import traceback

        traceback.print_exc()
        result = {"errorMessage": str(error), "errorType": type(error).__name__}
        problem = f"the handler raised {type(error).__name__}"
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    if problem:
        print(f"dispatch invoke: {function.function} failed: {problem}", file=sys.stderr)
    with os.fdopen(answer_fd, "w") as answer:
        answer.write(json.dumps(result) + "\n")
    return 1 if problem else 0


def is_sample(path: Path) -> bool:
    from dispatch_local import REPO_ROOT

    return path.resolve().parent == (REPO_ROOT / "events").resolve()


def failure(result: Any) -> str | None:
    """Why a handler's answer is a failure (None when it is not): a 5xx from an API function
    (a 4xx is the contract answering), or records a queue consumer could not handle."""
    if not isinstance(result, dict):
        return None
    status = result.get("statusCode")
    if isinstance(status, int) and status >= 500:
        return f"it answered {status}"
    if failed := result.get("batchItemFailures"):
        return f"{len(failed)} record(s) of its batch failed"
    return None


class CloudFormationStandIn:
    """For a custom resource's event: CloudFormation's side, which waits for the function's
    answer at the event's ResponseURL. A presigned S3 URL of AWS's cannot be reached from here,
    so the answer is taken at a local address instead (the event's ResponseURL is replaced
    with it), and a custom resource that answered FAILED, or nothing, has failed."""

    def __init__(self, event: Any) -> None:
        self.event = event
        self.custom_resource = (
            isinstance(event, dict) and "ResponseURL" in event and "RequestType" in event
        )
        self.answers: list[dict[str, Any]] = []

    def __enter__(self) -> "CloudFormationStandIn":
        if not self.custom_resource:
            return self
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        answers = self.answers

        class TakeAnswer(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                answers.append(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), TakeAnswer)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        port = self.server.server_address[1]
        self.event["ResponseURL"] = f"http://127.0.0.1:{port}/cloudformation-answer"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.custom_resource:
            self.server.shutdown()
            self.server.server_close()
            for answer in self.answers:
                print(
                    f"CloudFormation's answer (taken by dispatch invoke): {answer.get('Status')}"
                    f" {answer.get('Reason', '')}".rstrip(),
                    file=sys.stderr,
                )

    def failure(self) -> str | None:
        if not self.custom_resource:
            return None
        if not self.answers:
            return "the custom resource did not answer CloudFormation"
        if self.answers[0].get("Status") != "SUCCESS":
            return f"the custom resource answered {self.answers[0].get('Status')}"
        return None
