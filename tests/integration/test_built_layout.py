"""Every handler imports from the layout Lambda gives it: its own folder as /var/task and the
layer's `python/` folder on the path, nothing from the repository (no editable install, no
local stack). Third-party packages come from this environment, standing in for the layer's."""

import importlib.util
import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from bench.coldstart import built_layer  # the layer compiled by its build's own target
from dispatch_local import REPO_ROOT
from dispatch_local.template import load_template

FUNCTIONS = sorted(
    res["Properties"]["CodeUri"]
    for res in load_template()["Resources"].values()
    if res["Type"] == "AWS::Serverless::Function"
)


# What the template gives every function (Globals), with values of the right shape.
DEPLOYED_ENVIRONMENT = {
    "DATABASE_URL": "postgresql://dispatch_admin@proxy.example:5432/dispatch?sslmode=require",
    "PHOTO_BUCKET": "dispatch-photos-dev",
}


def import_in_lambda_layout(
    code_uri: str,
    tmp_path: Path,
    environment: dict[str, str],
    probe: str = "",
    layer: Path | None = None,
    flags: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """LAYER: a layer's python/ folder already laid out; a copy of shared/dispatch without it."""
    task = tmp_path / "var" / "task"
    shutil.copytree(REPO_ROOT / code_uri, task, symlinks=False)
    if layer is None:
        layer = tmp_path / "opt" / "python"
        shutil.copytree(REPO_ROOT / "shared" / "dispatch", layer / "dispatch")
    third_party = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    script = f"import sys; sys.path[:0] = {[str(task), str(layer), *third_party]!r}; import app; "
    # -S: no site processing, so the editable install's path hooks never load.
    return subprocess.run(
        [sys.executable, "-S", *flags, "-c", script + probe.format(layer=str(layer))],
        cwd=task,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", **environment},
    )


@pytest.mark.parametrize("code_uri", FUNCTIONS)
def test_handler_imports_from_the_lambda_layout(code_uri: str, tmp_path: Path) -> None:
    probe = (
        "assert callable(app.lambda_handler); "
        "assert not any(m.split('.')[0] in ('dispatch_local', 'tests') for m in sys.modules); "
        "assert sys.modules['dispatch'].__file__.startswith({layer!r})"
    )
    result = import_in_lambda_layout(code_uri, tmp_path, DEPLOYED_ENVIRONMENT, probe)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("code_uri", FUNCTIONS)
def test_a_bad_environment_fails_the_init_with_one_line_naming_it(
    code_uri: str, tmp_path: Path
) -> None:
    """Settings are parsed at cold start, so a deployed function missing a variable fails
    its init (Lambda reports it) instead of answering its first request with an error."""
    environment = {"PHOTO_BUCKET": "dispatch-photos-dev", "DISPATCH_LEASE_SECONDS": "soon"}
    result = import_in_lambda_layout(code_uri, tmp_path, environment)
    assert result.returncode != 0
    logged = [
        json.loads(line) for line in result.stderr.splitlines() if line.startswith('{"level"')
    ]
    assert len(logged) == 1, result.stderr
    assert logged[0]["level"] == "ERROR"
    assert "DATABASE_URL: Field required" in logged[0]["message"]
    assert "DISPATCH_LEASE_SECONDS" in logged[0]["message"]
    assert "SettingsError" in result.stderr.splitlines()[-1]


API_FUNCTIONS = sorted(
    res["Properties"]["CodeUri"]
    for res in load_template()["Resources"].values()
    if res["Type"] == "AWS::Serverless::Function"
    and any(e["Type"] == "HttpApi" for e in res["Properties"].get("Events", {}).values())
)


@pytest.mark.parametrize("code_uri", API_FUNCTIONS)
def test_an_api_function_imports_neither_boto3_nor_redis_at_cold_start(
    code_uri: str, tmp_path: Path
) -> None:
    """They are the heaviest imports (bench/coldstart.py), and only some paths use them: they
    are imported on first use. Before a SnapStart snapshot the hooks import boto3 where the
    function's routes call AWS (it imported dispatch.aws) and redis where they use positions
    (it imported the position store), and build every model, so that a restored environment
    has what it will use already."""
    probe = (
        "heavy = ('boto3', 'botocore.client', 'redis'); "
        "loaded = [m for m in heavy if m in sys.modules]; "
        "assert not loaded, loaded; "
        "positions = 'dispatch.workers.locations' in sys.modules; "
        "calls_aws = 'dispatch.aws' in sys.modules; "
        "import snapshot_restore_py as snapstart; "
        "hooks = snapstart.get_before_snapshot(); "
        "assert hooks, 'no SnapStart hook registered'; "
        "[hook(*args, **kwargs) for hook, args, kwargs in hooks]; "
        "assert ('boto3' in sys.modules) == ('botocore.client' in sys.modules) == calls_aws; "
        "assert ('redis' in sys.modules) == positions, positions; "
        # Models are built on first use (dispatch.models.Model); the snapshot has them built.
        "from dispatch.models import Model; "
        "todo, unbuilt = [Model], []; "
        "[todo.extend(m.__subclasses__()) or (m.__pydantic_complete__ or unbuilt.append(m)) "
        "for m in iter(lambda: todo.pop() if todo else None, None)]; "
        "assert not unbuilt, unbuilt"
    )
    result = import_in_lambda_layout(code_uri, tmp_path, DEPLOYED_ENVIRONMENT, probe)
    assert result.returncode == 0, result.stderr[-2000:]


# What an API function's cold start must not import because no route of it uses it (issue 36:
# "import what the route uses, nothing else"; bench/coldstart.py measures the cost). Each entry
# was read from the routes: the position store (Redis GEO) is read or written by the location
# report (workers), the applicants' distances (applications), the ops map's workers (ops), the
# favourites' freshness (rosters), and the two reads that carry the worker's position (nearby
# in job_queries, the offers' list in offers), and by no other route; the offer policy and the waves
# run in the wave consumer, the sweeper, retention, push and migrations in their own functions;
# pydantic-settings is no dependency of the layer. The idempotency store and the outbox relay
# only where a route keeps its answer under the Idempotency-Key (a KeyedResolver's): those are
# the routes that write events. The job request bodies and the job commands only where a route
# runs a job command (a read, an application, an offer's decline takes none of them); the job
# answers' models only where a route answers or reads a job (not the worker's own routes, nor
# the rosters, whose positions and skills come from dispatch.fields). Found by the cold-start
# benchmark: workers and rosters built the eighteen job models for one constant, ops imported
# the relay (and its queue client) to read the outbox lag. Settings groups (dispatch.config)
# follow their readers: the outbox's with the relay, the photos' with the job commands, the
# offers' with the decline (dispatch.offers.inbox), the console's with the console; the others
# are read by no route (each function validates what it imports, at init).
POSITION_STORE = "dispatch.workers.locations"
KEYED = {
    "functions/accept_job/",
    "functions/applications/",
    "functions/create_job/",
    "functions/offers/",
    "functions/transition/",
    "functions/workers/",
}
USES_POSITIONS = {
    "functions/workers/",
    "functions/applications/",
    "functions/ops/",
    "functions/rosters/",
    "functions/job_queries/",
    "functions/offers/",
}
RUNS_JOB_COMMANDS = {
    "functions/accept_job/",
    "functions/create_job/",
    "functions/transition/",
}
READS_JOBS = {
    *RUNS_JOB_COMMANDS,
    "functions/applications/",
    "functions/job_queries/",
    "functions/offers/",
    "functions/ops/",
}
NO_ROUTE_USES = (
    "pydantic_settings",
    "dispatch.offers.waves",
    "dispatch.offers.policy",
    "dispatch.offers.market",
    "dispatch.sweeper",
    "dispatch.retention",
    "dispatch.migrations",
    "dispatch.push",
    # Settings: each function validates only the groups its code reads (dispatch.config).
    "dispatch.config.offer_policy",
    "dispatch.config.sweeper",
    "dispatch.config.retention",
    "dispatch.config.migration",
    "dispatch.config.push",
)


@pytest.mark.parametrize("code_uri", API_FUNCTIONS)
def test_an_api_function_imports_only_what_its_routes_use(code_uri: str, tmp_path: Path) -> None:
    """Each part listed above only where a route uses it (and there it is imported: the lists
    stay the routes' own), nothing any route never uses."""
    unused = [*NO_ROUTE_USES, *(() if code_uri in USES_POSITIONS else (POSITION_STORE,))]
    used_where = {
        POSITION_STORE: code_uri in USES_POSITIONS,
        "dispatch.idempotency": code_uri in KEYED,
        "dispatch.outbox.relay": code_uri in KEYED,
        "dispatch.jobs.commands": code_uri in RUNS_JOB_COMMANDS,
        "dispatch.jobs.requests": code_uri in RUNS_JOB_COMMANDS,
        "dispatch.jobs.models": code_uri in READS_JOBS,
        "dispatch.config.outbox": code_uri in KEYED,
        "dispatch.config.photos": code_uri in RUNS_JOB_COMMANDS,
        "dispatch.config.offers": code_uri == "functions/offers/",
        "dispatch.config.console": code_uri == "functions/console/",
    }
    probe = (
        f"unused = {unused!r}; "
        "loaded = [m for m in unused if m in sys.modules]; "
        "assert not loaded, loaded; "
        # (module, whether a route uses it): listed when imported though unused, or the reverse
        f"used_where = {sorted(used_where.items())!r}; "
        "wrong = [(m, used) for m, used in used_where if (m in sys.modules) != used]; "
        "assert not wrong, wrong"
    )
    result = import_in_lambda_layout(code_uri, tmp_path, DEPLOYED_ENVIRONMENT, probe)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_lists_of_users_name_api_functions() -> None:
    assert set(API_FUNCTIONS) >= USES_POSITIONS | KEYED | READS_JOBS


# -- the layer's bytecode ----------------------------------------------------------------------

# The layer's build (template.yaml: BuildMethod makefile) is shared/Makefile's build-SharedLayer:
# pip for Lambda's Python and architecture, then the `compile` target. The pip step needs the
# network, so it is read here (make -n), not run; the compile step is run.
LAYER_BUILD = REPO_ROOT / "shared" / "Makefile"
SAM_ZIP_DATE = 315532800  # 1980-01-01: `sam package` dates every file it zips so


def build_commands(artifacts: Path) -> list[list[str]]:
    """What `sam build` has make run for the layer, each command split as the shell would."""
    dry = subprocess.run(
        [
            "make",
            "-n",
            "-s",
            "-C",
            str(LAYER_BUILD.parent),
            "build-SharedLayer",
            f"ARTIFACTS_DIR={artifacts}",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = dry.stdout.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.strip()]


def test_the_layer_is_built_for_the_runtime_and_architecture_the_template_names(
    tmp_path: Path,
) -> None:
    layer = load_template()["Resources"]["SharedLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert layer["Properties"]["ContentUri"] == "shared/"
    (runtime,) = layer["Properties"]["CompatibleRuntimes"]
    (architecture,) = layer["Properties"]["CompatibleArchitectures"]
    assert layer["Metadata"]["BuildArchitecture"] == architecture == "arm64"
    assert runtime == "python3.12"
    commands = build_commands(tmp_path)
    (pip,) = [c for c in commands if c[1:4] == ["-m", "pip", "install"]]
    option = {flag: pip[i + 1] for i, flag in enumerate(pip[:-1]) if flag.startswith("--")}
    assert option["--python-version"] == runtime.removeprefix("python")
    assert option["--implementation"] == "cp" and "--only-binary=:all:" in pip
    assert option["--target"] == str(tmp_path / "python")  # the layer's /opt/python
    assert pip[pip.index("-r") + 1] == "requirements.txt"
    platforms = [pip[i + 1] for i, flag in enumerate(pip) if flag == "--platform"]
    assert platforms and all(p.endswith("_aarch64") for p in platforms), platforms
    (copy,) = [c for c in commands if c[0] == "cp"]
    assert copy[-2:] == ["dispatch", str(tmp_path / "python" / "dispatch")]
    (compile_,) = [c for c in commands if c[1:3] == ["-m", "compileall"]]
    assert compile_[-1] == str(tmp_path / "python")  # the whole layer, third-party too
    assert compile_[compile_.index("--invalidation-mode") + 1] == "unchecked-hash"
    assert compile_[0] == pip[0]  # the interpreter checked to be 3.12


@pytest.fixture(scope="module")
def compiled_layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The layer as it ships, dated as `sam package` zips it (no source is newer or older
    than its bytecode says)."""
    layer = built_layer(tmp_path_factory.mktemp("opt") / "python")
    for path in layer.rglob("*"):
        os.utime(path, (SAM_ZIP_DATE, SAM_ZIP_DATE))
    return layer


def test_the_layers_bytecode_does_not_depend_on_where_it_is_built(
    tmp_path: Path, compiled_layer: Path
) -> None:
    """The same source gives the same layer, so a deploy of unchanged code publishes no new
    layer version (and no new version of every function)."""
    elsewhere = built_layer(tmp_path / "another" / "folder")
    built = sorted(compiled_layer.rglob("*.pyc"))
    assert [p.relative_to(compiled_layer) for p in built] == sorted(
        p.relative_to(elsewhere) for p in elsewhere.rglob("*.pyc")
    )
    for pyc in built:
        assert pyc.read_bytes() == (elsewhere / pyc.relative_to(compiled_layer)).read_bytes(), pyc


def test_every_module_of_the_layer_ships_unchecked_bytecode(compiled_layer: Path) -> None:
    sources = sorted((compiled_layer / "dispatch").rglob("*.py"))
    assert len(sources) > 50
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:8]
        assert header[:4] == importlib.util.MAGIC_NUMBER, source
        # PEP 552 flags: hash-based (1), source not checked (no 2)
        assert int.from_bytes(header[4:8], "little") == 0b01, source


@pytest.mark.parametrize("code_uri", FUNCTIONS)
def test_a_cold_start_compiles_none_of_the_layer(
    code_uri: str, tmp_path: Path, compiled_layer: Path
) -> None:
    """Every `dispatch` module a handler's init imports comes from the layer's .pyc (python -v
    names the code object's file) and none is compiled from its source, with no bytecode
    written (/opt is read-only in Lambda)."""
    probe = (
        "from dispatch.config import settings; settings(); "
        "import json; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'dispatch')))"
    )
    result = import_in_lambda_layout(
        code_uri,
        tmp_path,
        {**DEPLOYED_ENVIRONMENT, "PYTHONDONTWRITEBYTECODE": "1"},
        probe,
        layer=compiled_layer,
        flags=("-v",),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = json.loads(result.stdout.splitlines()[-1])
    root = re.escape(str(compiled_layer))
    from_bytecode = re.findall(rf"^# code object from '{root}/(.+\.pyc)'$", result.stderr, re.M)
    from_source = re.findall(rf"^# code object from ({root}/.+\.py)$", result.stderr, re.M)
    assert from_source == []
    assert len(from_bytecode) == len(imported) > 0, (from_bytecode, imported)
