"""Routes from template.yaml: each HttpApi event's method and path to its function's code.

The template is the one list of routes; the local stack and the tests read it from here.
"""

import copy
import importlib.util
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from dispatch_local import REPO_ROOT

TEMPLATE = REPO_ROOT / "template.yaml"


# libyaml's parser where PyYAML has it (its wheels do): the pure-Python one took most of a
# second over template.yaml on a loaded machine, and the tests read routes for every test.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """Reads CloudFormation short-form tags (!Ref, !Sub, ...) as plain values."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


_CfnLoader.add_multi_constructor("!", _any_tag)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as data: parsed once per version of the file, a copy of its own to each
    caller (one may change what it was given)."""
    stat = path.stat()
    return copy.deepcopy(_parsed(path, stat.st_mtime_ns, stat.st_size))


@cache
def _parsed(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    with path.open() as file:
        template: dict[str, Any] = yaml.load(file, Loader=_CfnLoader)
    return template


@dataclass(frozen=True)
class Function:
    function: str  # logical id
    code_uri: Path
    handler: str  # module.function


@dataclass(frozen=True)
class Route(Function):
    method: str
    path: str  # API Gateway form: /jobs/{job_id}
    authorized: bool  # False when the event says Auth: Authorizer: NONE

    @property
    def route_key(self) -> str:
        return DEFAULT_ROUTE if self.path == DEFAULT_ROUTE else f"{self.method} {self.path}"

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(
            "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path)) + "$"
        )

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method.upper() != self.method:
            return None
        found = self.pattern.match(path)
        return found.groupdict() if found else None


def _events(
    template: dict[str, Any] | None, types: tuple[str, ...]
) -> Iterator[tuple[Function, dict[str, Any]]]:
    """Each event of the given types, with the function it triggers."""
    template = template or load_template()
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties", {})
        function = Function(
            function=logical_id,
            code_uri=(REPO_ROOT / str(props["CodeUri"])).resolve(),
            handler=str(props.get("Handler", "app.lambda_handler")),
        )
        for event in (props.get("Events") or {}).values():
            if event.get("Type") in types:
                yield function, event.get("Properties", {})


# The route API Gateway hands every request no other route has (any method, any path).
DEFAULT_ROUTE = "$default"


def routes(template: dict[str, Any] | None = None) -> list[Route]:
    """The template's routes, each a method and a path; the $default route is not one of them
    (default_route)."""
    found = [r for r in _all_routes(template) if r.path != DEFAULT_ROUTE]
    # Literal segments before parameters, as API Gateway prefers the most specific route.
    return sorted(found, key=lambda r: (r.path.count("{"), r.path))


def default_route(template: dict[str, Any] | None = None) -> Route | None:
    """The function that answers what no route has, if the template names one."""
    return next((r for r in _all_routes(template) if r.path == DEFAULT_ROUTE), None)


def _all_routes(template: dict[str, Any] | None) -> list[Route]:
    found: list[Route] = []
    for function, event in _events(template, ("HttpApi",)):
        auth = (event.get("Auth") or {}).get("Authorizer")
        found.append(
            Route(
                **vars(function),
                method=str(event["Method"]).upper(),
                path=str(event["Path"]),
                authorized=auth != "NONE",
            )
        )
    return found


@dataclass(frozen=True)
class Schedule(Function):
    every_seconds: int


RATE = re.compile(r"^rate\((\d+) (second|minute|hour|day)s?\)$")
UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def schedules(template: dict[str, Any] | None = None) -> list[Schedule]:
    """Every Schedule / ScheduleV2 event with a rate() expression."""
    found: list[Schedule] = []
    for function, event in _events(template, ("Schedule", "ScheduleV2")):
        expression = str(event.get("ScheduleExpression", ""))
        rate = RATE.match(expression)
        if rate is None:
            raise ValueError(f"{function.function}: only rate() runs locally: {expression}")
        every = int(rate.group(1)) * UNIT_SECONDS[rate.group(2)]
        found.append(Schedule(**vars(function), every_seconds=every))
    return found


@dataclass(frozen=True)
class QueueConsumer(Function):
    queue: str  # logical id of the queue
    batch_size: int
    concurrency: int  # batches at once: the mapping's MaximumConcurrency


# Lambda's event source mapping polls with at least this many batches at once when no
# MaximumConcurrency is set (2 is the least the setting allows); the local stack does the same.
DEFAULT_CONCURRENCY = 2


def queue_consumers(template: dict[str, Any] | None = None) -> list[QueueConsumer]:
    """Every SQS event source: which function consumes which queue, in what batches."""
    found: list[QueueConsumer] = []
    for function, event in _events(template, ("SQS",)):
        queue = event["Queue"]  # {"GetAtt": "OutboxQueue.Arn"} once read
        logical_id = str(queue["GetAtt"]).split(".")[0] if isinstance(queue, dict) else str(queue)
        found.append(
            QueueConsumer(
                **vars(function),
                queue=logical_id,
                batch_size=int(event.get("BatchSize", 10)),
                concurrency=int(
                    (event.get("ScalingConfig") or {}).get("MaximumConcurrency")
                    or DEFAULT_CONCURRENCY
                ),
            )
        )
    return found


@dataclass(frozen=True)
class StreamConsumer(Function):
    stream: str  # logical id of the Kinesis stream
    batch_size: int
    window_seconds: float  # MaximumBatchingWindowInSeconds: how long a batch may gather
    max_age_seconds: float  # MaximumRecordAgeInSeconds: older records are skipped
    retries: int  # MaximumRetryAttempts: a failing batch is tried this many more times


def stream_consumers(template: dict[str, Any] | None = None) -> list[StreamConsumer]:
    """Every Kinesis event source: which function consumes which stream, in what batches."""
    found: list[StreamConsumer] = []
    for function, event in _events(template, ("Kinesis",)):
        stream = event["Stream"]  # {"GetAtt": "PositionStream.Arn"} once read
        found.append(
            StreamConsumer(
                **vars(function),
                stream=str(stream["GetAtt"]).split(".")[0],
                batch_size=int(event.get("BatchSize", 100)),
                window_seconds=float(event.get("MaximumBatchingWindowInSeconds", 0)),
                max_age_seconds=float(event.get("MaximumRecordAgeInSeconds", 604_800)),
                retries=int(event.get("MaximumRetryAttempts", 10_000)),
            )
        )
    return found


def find(
    all_routes: list[Route], method: str, path: str, default: Route | None = None
) -> tuple[Route, dict[str, str]] | None:
    """The route a request takes and its path parameters; else the $default route (`default`),
    as API Gateway hands it every method and path no route has."""
    for route in all_routes:
        params = route.match(method, path)
        if params is not None:
            return route, params
    return None if default is None else (default, {})


@cache
def load_module(code_uri: Path, module_name: str) -> ModuleType:
    """Import a function's handler module the way Lambda would, isolated by its folder."""
    unique = "fn_" + re.sub(r"\W", "_", f"{code_uri.name}_{module_name}")
    spec = importlib.util.spec_from_file_location(unique, code_uri / f"{module_name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no module {module_name} in {code_uri}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def handler_of(function: Function) -> Callable[[dict[str, Any], Any], Any]:
    module_name, function_name = function.handler.rsplit(".", 1)
    handler: Callable[[dict[str, Any], Any], Any] = getattr(
        load_module(function.code_uri, module_name), function_name
    )
    return handler


# -- the WebSocket API (push, issue 23) --------------------------------------------------------


@dataclass(frozen=True)
class StreamRoute:
    """A WebSocket route whose integration puts the message on a Kinesis stream (API Gateway's
    service integration, no Lambda): the model that holds the message first (JSON Schema),
    and the stream (its logical id). Its mapping template is read by the local gateway only
    as tests/integration/test_position_stream.py holds it: data the message, partition key
    `<roles>|<principalId>`."""

    model: dict[str, Any]
    stream: str
    request_template: str


@dataclass(frozen=True)
class WebSocketApi:
    """The template's WebSocket API as the local gateway serves it: each route key ($connect,
    $disconnect, $default) to the function its integration invokes, each route whose
    integration is a stream (`position`), and $connect's authorizer function."""

    routes: dict[str, Function]
    authorizer: Function | None
    streams: dict[str, StreamRoute] = field(default_factory=dict)


_FUNCTION_ARN = re.compile(r"\$\{(\w+)\.Arn\}")


def _function_named(template: dict[str, Any], logical_id: str) -> Function:
    props = template["Resources"][logical_id]["Properties"]
    return Function(
        function=logical_id,
        code_uri=(REPO_ROOT / str(props["CodeUri"])).resolve(),
        handler=str(props.get("Handler", "app.lambda_handler")),
    )


def _invoked_function(template: dict[str, Any], uri: Any) -> Function:
    """The function a `!Sub ...${Name.Arn}/invocations` URI invokes."""
    text = uri["Sub"] if isinstance(uri, dict) else str(uri)
    found = _FUNCTION_ARN.search(str(text))
    if found is None:
        raise ValueError(f"not a Lambda invocation URI: {text}")
    return _function_named(template, found.group(1))


def websocket_api(template: dict[str, Any] | None = None) -> WebSocketApi | None:
    template = template or load_template()
    resources = template.get("Resources", {})
    found: dict[str, Function] = {}
    streams: dict[str, StreamRoute] = {}
    authorizer: Function | None = None
    for resource in resources.values():
        if resource.get("Type") != "AWS::ApiGatewayV2::Route":
            continue
        props = resource["Properties"]
        target = props["Target"]
        integration_id = re.sub(
            r"^integrations/\$\{(\w+)\}$",
            r"\1",
            target["Sub"] if isinstance(target, dict) else target,
        )
        integration = resources[integration_id]["Properties"]
        if integration.get("IntegrationType") == "AWS":
            streams[str(props["RouteKey"])] = _stream_route(resources, props, integration)
            continue
        found[str(props["RouteKey"])] = _invoked_function(template, integration["IntegrationUri"])
        if props.get("AuthorizationType") == "CUSTOM":
            authorizer_id = props["AuthorizerId"]["Ref"]
            authorizer = _invoked_function(
                template, resources[authorizer_id]["Properties"]["AuthorizerUri"]
            )
    return WebSocketApi(found, authorizer, streams) if found else None


def _stream_route(
    resources: dict[str, Any], route: dict[str, Any], integration: dict[str, Any]
) -> StreamRoute:
    """A route into Kinesis (PutRecord): its model by name, its stream from the template."""
    uri = integration["IntegrationUri"]
    if "kinesis:action/PutRecord" not in str(uri["Sub"] if isinstance(uri, dict) else uri):
        raise ValueError(f"not a Kinesis PutRecord integration: {uri}")
    (model_name,) = route["RequestModels"].values()
    model = next(
        r["Properties"]["Schema"]
        for r in resources.values()
        if r.get("Type") == "AWS::ApiGatewayV2::Model" and r["Properties"]["Name"] == model_name
    )
    text = str(integration["RequestTemplates"]["$default"]["Sub"])
    stream = re.search(r"\$\{(\w+)\}", text)
    if stream is None:
        raise ValueError(f"no stream named in the mapping template: {text}")
    return StreamRoute(model=model, stream=stream.group(1), request_template=text)
