"""Every `dispatch` subcommand explains itself: `--help` and `-h` exit 0 and describe every
option; a command that cannot do its work says why and exits non-zero."""

import argparse
from pathlib import Path

import pytest

from dispatch_local import cli


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (choices,) = [
        action.choices
        for action in cli.parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return dict(choices)


def test_there_are_subcommands_to_check() -> None:
    assert {"dev", "invoke", "simulate", "console", "token"} <= set(subcommands())


@pytest.mark.parametrize("command", sorted(subcommands()))
@pytest.mark.parametrize("asked", ["--help", "-h"])
def test_every_subcommand_helps_and_describes_each_option(
    command: str, asked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, asked])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: dispatch {command}")
    described = subcommands()[command]
    assert described.description, f"dispatch {command} has no description"
    for action in described._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"dispatch {command}: {action.dest} has no help text"
        assert (action.option_strings or [action.dest])[0] in shown


def test_a_bare_command_that_needs_arguments_shows_its_own_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["simulate"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith("usage: dispatch simulate")


def test_console_with_no_stack_running_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPATCH_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        cli.main(["console"])
    assert exited.value.code not in (0, None)
    assert "no local stack is running" in str(exited.value.code)
