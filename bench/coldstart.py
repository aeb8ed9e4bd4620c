"""Cold start: what a new Lambda environment pays before its first request, per function.

    make bench-coldstart            (or: python -m bench.coldstart [--runs 9])

For every function of the template, a fresh interpreter imports the handler from its Lambda
layout (the function's folder, then the layer's `dispatch` package, then the third-party
packages standing in for the layer's) and parses the settings, as the runtime's init does;
the median of several runs. The layer is copied as its build ships it (shared/Makefile): the
source without whatever `__pycache__` a test run left, then compiled by the build's own
`compile` target (same compileall flags, with this interpreter). The function is copied without
bytecode, as `sam build` packages it (it leaves out *.pyc): Lambda compiles its app.py at every
cold start. The floor, measured in the same run the same way: a bare Powertools HTTP resolver
with validation and one pydantic-typed route, plus psycopg, which is what any database-backed
API route must import (third-party packages keep their bytecode here, pip's; the layer ships
theirs too). Aim: every API function at most 1.2x the floor (AIM).

    python -m bench.coldstart --tracer-from DIR

measures instead what Powertools' Tracer would add to the floor, with aws-xray-sdk installed in
DIR (`pip install --target DIR aws-xray-sdk`; it is not a dependency of the project), as Lambda
runs it (the tracer on): the measurement behind "no X-Ray" (docs/architecture.md).
"""

import argparse
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from dispatch_local import REPO_ROOT
from dispatch_local.template import load_template

RESULTS = Path(__file__).parent / "results"
AIM = 1.2  # x the floor, for every API function
AS_BUILT = shutil.ignore_patterns("__pycache__", "*.pyc")  # what `sam build` leaves out
LAYER_BUILD = REPO_ROOT / "shared" / "Makefile"
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "AWS_DEFAULT_REGION": "us-east-1",
    "DATABASE_URL": "postgresql://dispatch_admin@proxy.example:5432/dispatch?sslmode=require",
    "PHOTO_BUCKET": "dispatch-photos-dev",
    "POWERTOOLS_SERVICE_NAME": "dispatch",
    # Without it the first run writes the functions' bytecode into the copies and every later
    # run imports that instead of compiling the source, as Lambda must (/var/task is read-only).
    "PYTHONDONTWRITEBYTECODE": "1",
}
# The init's processor time (user + system), not its wall time: on a shared machine the wall
# clock of the same import moved by up to 0.4x between runs (other processes' turns), while
# what an import costs is the processor's work, which Lambda's init does in its own slice.
TIMED = """
import sys, time
began = time.process_time()
sys.path[:0] = {path!r}
{body}
print(time.process_time() - began)
"""
FUNCTION = "import app\nfrom dispatch.config import settings\nsettings()"
FLOOR = """
from typing import Annotated
import psycopg
from pydantic import BaseModel
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

resolver = APIGatewayHttpResolver(enable_validation=True)

class Body(BaseModel):
    version: int | None = None

@resolver.post("/jobs/<job_id>/accept")
def accept(job_id: str, body: Body) -> dict:
    return {}
"""


def third_party() -> list[str]:
    return [p for p in site.getsitepackages() if p.endswith("site-packages")]


def once(path: list[str], body: str, cwd: Path) -> float:
    script = TIMED.format(path=path, body=body)
    # -S: no site processing (the editable install's hooks would add the repository).
    done = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=ENVIRONMENT,
        check=True,
        timeout=120,
    )
    return float(done.stdout.strip().splitlines()[-1])


def functions() -> dict[str, str]:
    """Logical id -> code folder, and whether an HTTP API event reaches it."""
    found = {}
    for logical_id, resource in load_template()["Resources"].items():
        if resource.get("Type") == "AWS::Serverless::Function":
            found[logical_id] = resource["Properties"]["CodeUri"]
    return found


def api_functions() -> set[str]:
    return {
        logical_id
        for logical_id, resource in load_template()["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
        and any(
            e.get("Type") == "HttpApi"
            for e in (resource["Properties"].get("Events") or {}).values()
        )
    }


def built_layer(layer: Path) -> Path:
    """The `dispatch` package in LAYER as the layer's build ships it: compiled by its target."""
    shutil.copytree(REPO_ROOT / "shared" / "dispatch", layer / "dispatch", ignore=AS_BUILT)
    subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(LAYER_BUILD),
            "compile",
            f"LAYER={layer}",
            f"PYTHON312={sys.executable}",
        ],
        check=True,
        timeout=120,
    )
    return layer


def measure(runs: int) -> dict[str, float]:
    """Median seconds per function and for the floor, interleaved run by run."""
    work = Path(tempfile.mkdtemp(prefix="coldstart-"))
    layer = built_layer(work / "opt" / "python")
    tasks = {}
    for logical_id, code_uri in functions().items():
        task = work / "task" / logical_id
        shutil.copytree(REPO_ROOT / code_uri, task, symlinks=False, ignore=AS_BUILT)
        tasks[logical_id] = task
    samples: dict[str, list[float]] = {name: [] for name in ["floor", *tasks]}
    for _ in range(runs):
        samples["floor"].append(once(third_party(), FLOOR, work))
        for logical_id, task in tasks.items():
            path = [str(task), str(layer), *third_party()]
            samples[logical_id].append(once(path, FUNCTION, task))
    shutil.rmtree(work, ignore_errors=True)
    return {name: statistics.median(values) for name, values in samples.items()}


def report(medians: dict[str, float]) -> str:
    floor = medians["floor"]
    api = api_functions()
    lines = [
        "| function | import + settings, median CPU ms | x floor | aim |",
        "| --- | ---: | ---: | --- |",
        f"| floor: Powertools resolver with validation + psycopg | {floor * 1000:.0f} | 1.00 | |",
    ]
    for name, seconds in sorted(medians.items(), key=lambda kv: kv[1]):
        if name == "floor":
            continue
        ratio = seconds / floor
        aim = ("met" if ratio <= AIM else "not met") if name in api else "reported"
        lines.append(f"| {name} | {seconds * 1000:.0f} | {ratio:.2f} | {aim} |")
    return "\n".join(lines)


TRACED = FLOOR + "\nfrom aws_lambda_powertools import Tracer\ntracer = Tracer(auto_patch=False)\n"


def tracer_cost(runs: int, packages: str) -> str:
    """The floor with and without Powertools' Tracer (enabled, as in Lambda), interleaved."""
    work = Path(tempfile.mkdtemp(prefix="coldstart-"))
    path = [packages, *third_party()]
    ENVIRONMENT["AWS_LAMBDA_FUNCTION_NAME"] = "AcceptJobFunction"  # Powertools: in Lambda
    samples: dict[str, list[float]] = {"floor": [], "traced": []}
    for _ in range(runs):
        samples["floor"].append(once(path, FLOOR, work))
        samples["traced"].append(once(path, TRACED, work))
    shutil.rmtree(work, ignore_errors=True)
    floor, traced = (statistics.median(samples[k]) for k in ("floor", "traced"))
    return "\n".join(
        [
            "| import | median ms | x floor |",
            "| --- | ---: | ---: |",
            f"| floor: Powertools resolver with validation + psycopg | {floor * 1000:.0f} | 1.00 |",
            f"| floor + Powertools Tracer (aws-xray-sdk) | {traced * 1000:.0f} | "
            f"{traced / floor:.2f} |",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.coldstart", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tracer-from", help="a folder with aws-xray-sdk: the Tracer's cost")
    args = parser.parse_args(argv)
    if args.tracer_from:
        print(tracer_cost(args.runs, args.tracer_from))
        return
    medians = measure(args.runs)
    text = report(medians)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "coldstart.md").write_text(text + "\n")
    (RESULTS / "coldstart.json").write_text(json.dumps(medians))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main(sys.argv[1:])
