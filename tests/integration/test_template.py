"""template.yaml is the one list of routes: every route reaches an importable handler."""

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from dispatch_local import REPO_ROOT, settings_not_needed
from dispatch_local.template import (
    default_route,
    handler_of,
    load_module,
    load_template,
    routes,
)
from tests.support import Api

# The contract's routes that exist so far, each served by exactly one function.
SERVED = {
    "POST /jobs",
    "GET /jobs/{job_id}",
    "GET /jobs/{job_id}/events",
    "POST /jobs/{job_id}/accept",
    "PUT /workers/me",
    "GET /health",
    "POST /jobs/{job_id}/transitions",
    "POST /photos",
    "PUT /jobs/{job_id}/photos/{slot}",
}


def test_every_route_maps_to_an_importable_handler() -> None:
    found = routes()
    assert {r.route_key for r in found} >= SERVED
    keys = [r.route_key for r in found]
    assert len(keys) == len(set(keys)), "a route is served twice"
    with settings_not_needed():  # imported for what they declare: run alone, no database is set
        for route in found:
            assert callable(handler_of(route)), route


def test_each_handler_declares_exactly_its_template_routes() -> None:
    """The resolver's own routes and the template's events agree, function by function."""
    by_function: dict[Path, set[str]] = {}
    for route in routes():
        by_function.setdefault(route.code_uri, set()).add(route.route_key)
    for code_uri, keys in by_function.items():
        with settings_not_needed():
            app = load_module(code_uri, "app").app
        assert set(app._access) == keys, code_uri


def test_only_health_and_the_console_page_are_public() -> None:
    """The console's page holds no data: every call it makes needs an ops token."""
    public = {r.route_key for r in routes() if not r.authorized}
    assert public == {"GET /health", "GET /console", "GET /console/{asset}"}


def test_what_no_route_has_goes_to_the_default_route_and_gets_the_contracts_404(
    api: Api,
) -> None:
    """The $default route (any method, any path, no token) is the health function's, whose
    resolver answers what it has no route for with 404 NOT_FOUND in the error body: in AWS a
    request no route matches gets that, not API Gateway's own {"message":"Not Found"}."""
    found = default_route()
    assert found is not None
    assert (found.function, found.route_key, found.authorized) == (
        "HealthFunction",
        "$default",
        False,
    )
    for method, path in [
        ("TRACE", "/health"),
        ("CONNECT", "/health"),
        ("PROPFIND", "/jobs"),
        ("HEAD", "/health"),  # an HTTP API's GET route takes no HEAD
        ("PATCH", "/jobs/00000000-0000-7000-8000-000000000000"),
        ("GET", "/no/such/route"),
    ]:
        route, event = api.event(method, path, key=None)
        assert (route.function, event["routeKey"]) == ("HealthFunction", "$default")
        reply = api.call(method, path, key=None)
        assert (reply.status, reply.code) == (404, "NOT_FOUND"), (method, path, reply.body)
    assert api.call("GET", "/health", key=None).status == 200


def test_functions_live_where_the_layout_says() -> None:
    template = load_template()
    uris = {
        res["Properties"]["CodeUri"]
        for res in template["Resources"].values()
        if res["Type"] == "AWS::Serverless::Function"
    }
    for uri in uris:
        assert (REPO_ROOT / uri / "app.py").exists(), uri
    for required in (
        "functions/create_job/",
        "functions/accept_job/",
        "functions/transition/",
        "functions/lease_sweeper/",
    ):
        assert required in uris


def test_layer_requirements_follow_the_project_dependencies() -> None:
    """The Lambda layer installs what the package needs (boto3 comes with the runtime), each
    pinned to the version the tests ran with (constraints.txt, the lock)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = {Requirement(d).name for d in project["dependencies"] if not d.startswith("boto3")}
    lines = (REPO_ROOT / "shared" / "requirements.txt").read_text().splitlines()
    layer = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    assert {r.name for r in layer} == wanted
    locked = locked_versions()
    for requirement in layer:
        (pinned,) = requirement.specifier
        assert pinned.operator == "==", requirement
        assert pinned.version == locked[canonicalize_name(requirement.name)], requirement
        project_range = next(
            Requirement(d)
            for d in project["dependencies"]
            if Requirement(d).name == requirement.name
        )
        assert project_range.specifier.contains(pinned.version), (requirement, project_range)


def locked_versions() -> dict[str, str]:
    lines = (REPO_ROOT / "constraints.txt").read_text().splitlines()
    pins = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    return {canonicalize_name(r.name): next(iter(r.specifier)).version for r in pins}


def test_the_environment_is_the_locked_one() -> None:
    """What the suite runs on is what a fresh install gets: pydantic's behaviour changed
    under us once (an after-validator started running on model_construct)."""
    for name in ("pydantic", "pydantic-core", "aws-lambda-powertools", "psycopg", "redis"):
        assert version(name) == locked_versions()[canonicalize_name(name)], name


def test_handlers_import_nothing_from_the_local_stack() -> None:
    for path in list((REPO_ROOT / "functions").rglob("*.py")) + list(
        (REPO_ROOT / "shared").rglob("*.py")
    ):
        assert not re.search(r"^\s*(from|import) dispatch_local", path.read_text(), re.M), path


def test_the_sweeper_runs_every_minute() -> None:
    from dispatch_local.template import schedules

    assert [(s.function, s.every_seconds) for s in schedules()] == [
        ("LeaseSweeperFunction", 60),
        ("RetentionFunction", 3600),  # old history to the archive (docs/retention.md)
        ("OutboxRelayFunction", 60),
        ("PushSenderFunction", 60),  # closes the connections whose token expired
    ]
