"""`make help` lists every target with what it is for: each one in .PHONY has its `## ` line in
the Makefile (issue 36), and the list is read from those lines, so it cannot drift from them."""

import re
import subprocess

from dispatch_local import REPO_ROOT

MAKEFILE = REPO_ROOT / "Makefile"


def phony_targets() -> set[str]:
    text = MAKEFILE.read_text().replace("\\\n", " ")
    found = re.findall(r"^\.PHONY:(.*)$", text, flags=re.MULTILINE)
    assert found, "the Makefile declares its targets in .PHONY"
    return {name for line in found for name in line.split()}


def help_lines() -> dict[str, str]:
    reply = subprocess.run(
        ["make", "--no-print-directory", "-s", "-C", str(REPO_ROOT), "help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = [line.split(maxsplit=1) for line in reply.stdout.splitlines() if line.strip()]
    return {parts[0]: parts[1] if len(parts) > 1 else "" for parts in lines}


def test_every_phony_target_has_a_help_line() -> None:
    listed = help_lines()
    phony = phony_targets()
    assert "help" in phony and "test" in phony
    assert sorted(phony - listed.keys()) == [], "targets without a `## ` line above them"
    assert sorted(listed.keys() - phony) == [], "help lists targets that are not in .PHONY"
    assert [name for name, purpose in listed.items() if len(purpose) < 10] == []
