"""Every handler imports from the layout Lambda gives it: its own folder as /var/task and the
layer's `python/` folder on the path, nothing from the repository (no editable install, no
local stack). Third-party packages come from this environment, standing in for the layer's."""

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from dispatch_local import REPO_ROOT
from dispatch_local.template import load_template

FUNCTIONS = sorted(
    res["Properties"]["CodeUri"]
    for res in load_template()["Resources"].values()
    if res["Type"] == "AWS::Serverless::Function"
)


@pytest.mark.parametrize("code_uri", FUNCTIONS)
def test_handler_imports_from_the_lambda_layout(code_uri: str, tmp_path: Path) -> None:
    task, layer = tmp_path / "var" / "task", tmp_path / "opt" / "python"
    shutil.copytree(REPO_ROOT / code_uri, task, symlinks=False)
    shutil.copytree(REPO_ROOT / "shared" / "dispatch", layer / "dispatch")
    third_party = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    probe = (
        f"import sys; sys.path[:0] = {[str(task), str(layer), *third_party]!r}; import app; "
        "assert callable(app.lambda_handler); "
        "assert not any(m.split('.')[0] in ('dispatch_local', 'tests') for m in sys.modules); "
        f"assert sys.modules['dispatch'].__file__.startswith({str(layer)!r})"
    )
    # -S: no site processing, so the editable install's path hooks never load.
    result = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        cwd=task,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
